//! [`Worker`]: runs the durable chats that are due, in any number of processes on any number of
//! machines sharing one store.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::new_holder;
use crate::chat::outcome::Outcome;
use crate::store::{
    contract::{DueChat, DurableOptions, ParkReason, Release, Store},
    error::StoreError,
};
use crate::{chat::Chat, error::Error, future::BoxFuture, provider::Provider};

type ProviderFactory = dyn Fn(&str) -> Arc<dyn Provider> + Send + Sync;
type Setup = dyn Fn(&str, &mut Chat) -> Result<(), Error> + Send + Sync;

/// Runs the durable chats of a store that are due: a chat with a new user message
/// ([`Chat::enqueue`]), with an answered question or a decided approval, a working task whose
/// poll interval has passed, a call whose claim expired (its worker died). Each pick takes the
/// chat's run claim in the store (on PostgreSQL with `FOR UPDATE SKIP LOCKED`, so workers never
/// wait on each other's picks), rebuilds the chat with your tools, runs
/// [`complete`](Chat::complete), and gives the claim back.
///
/// Run one per process, as many processes as you like. Chats that wait on a person are not
/// due until the person acts.
///
/// Each pick is a turn, and a turn's budgets (its rounds, [`StopWhen::tokens`] and
/// [`StopWhen::cost`]) start again with it. To cap what a chat spends over all its turns
/// (a tool that keeps returning tasks keeps its chat due), set a chat budget in the setup:
/// [`StopWhen::chat_cost`] or [`StopWhen::chat_tokens`].
///
/// [`StopWhen::tokens`]: crate::chat::StopWhen::tokens
/// [`StopWhen::cost`]: crate::chat::StopWhen::cost
/// [`StopWhen::chat_cost`]: crate::chat::StopWhen::chat_cost
/// [`StopWhen::chat_tokens`]: crate::chat::StopWhen::chat_tokens
///
/// A failed turn is tried again after a delay that doubles with each failure in a row, and
/// after [`DurableOptions::with_max_attempts`] failures in a row the chat is parked; a turn
/// that used the round budget up, and a stored chat that does not decode, park it at once. A
/// worker never picks a parked chat: the application looks at it
/// ([`Store::parked_chats`], [`Store::chat_status`]) and releases it
/// ([`Store::release_parked`]). See [the store's docs](crate::store#failed-turns-and-parked-chats).
///
/// A turn that ends its worker (the process dies mid-turn: a tool that aborts it, memory run
/// out on the chat's data, a kill) never counts as a failed turn, since nothing is left to
/// count it; the next worker takes the chat over once the run lease ends. Those takeovers are
/// counted in the store, in the pick's own statement (and by the application's own claims, as
/// an `enqueue` after the crash): a chat whose claim was abandoned
/// [`DurableOptions::with_max_abandoned_claims`] times in a row
/// ([`DEFAULT_MAX_ABANDONED_CLAIMS`](crate::store::DEFAULT_MAX_ABANDONED_CLAIMS), 3) is parked
/// by the next pick instead of claimed again ([`ParkReason::ClaimsAbandoned`]), so a crash
/// loop spends a bounded amount. A claim of this worker's own whose lease ran out while its
/// turn still runs (renewals that lagged) is no abandoned one: the worker's holder
/// ([`holder`](Self::holder)) is new with each worker, so only another worker's claim counts.
/// The worker gives such a chat back as soon as it picks it, not due for one more run lease
/// (by when the lagging turn has stopped), so no worker picks it at each poll meanwhile.
///
/// ```
/// # #[cfg(feature = "sqlite")] {
/// use llm_tools_core::{tool, Chat};
/// use llm_tools_core::store::{SqliteStore, Worker};
/// use llm_tools_core::testing::ScriptedProvider;
///
/// /// Returns the current time
/// #[tool]
/// async fn current_time() -> String { "12:00".into() }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// # let dir = std::env::temp_dir().join(format!("llm-tools-worker-doc-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// let store = SqliteStore::open(dir.join("chats.db")).await?;
/// let model = ScriptedProvider::new().then_text("It is noon.");
///
/// // The web side stores the user's message and returns.
/// let mut chat = Chat::create(store.clone(), "c1", model.clone()).await?;
/// chat.enqueue("What time is it?").await?;
///
/// // A worker, in this process or another, answers it.
/// let worker = Worker::new(store.clone(), model.clone())
///     .with_setup(|_chat_id, chat| { chat.with_tools(CurrentTime)?; Ok(()) });
/// let report = worker.run_once().await?;
/// assert_eq!(report.done, 1);
///
/// let chat = Chat::load(store, "c1", model).await?;
/// assert_eq!(chat.messages().last().map(|m| m.text()).as_deref(), Some("It is noon."));
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// # }
/// ```
pub struct Worker {
    store: Arc<dyn Store>,
    provider: Arc<ProviderFactory>,
    setup: Arc<Setup>,
    concurrency: usize,
    idle_poll: Duration,
    options: DurableOptions,
    holder: Arc<str>,
    /// The chats this worker's turns are running: never picked again until their turn ends.
    running: Arc<Running>,
}

/// The ids of the chats a worker is running.
type Running = std::sync::Mutex<std::collections::HashSet<String>>;

/// What a worker did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkerReport {
    /// Chats picked and run.
    pub turns: usize,
    /// Turns that ended with the model's answer.
    pub done: usize,
    /// Turns that ended paused (tasks, questions, approvals).
    pub paused: usize,
    /// Turns that found a call still claimed by another process.
    pub busy: usize,
    /// Turns that failed (a provider error, a fatal tool error, a store error, a used-up round
    /// budget, a stored chat that does not decode): tried again after the backoff, or parked.
    pub failed: usize,
    /// Failed turns that parked their chat (counted in `failed` too): no worker picks it until
    /// it is released.
    pub parked: usize,
    /// Turns that carried out a cancel another process asked for
    /// ([`Store::request_cancel`]): the chat's calls were closed, and it rests.
    pub cancelled: usize,
    /// Turns a stop condition ended ([`StopWhen`](crate::chat::StopWhen)): the chat rests
    /// until someone carries it on.
    pub stopped: usize,
}

impl WorkerReport {
    fn add(&mut self, other: WorkerReport) {
        self.turns += other.turns;
        self.done += other.done;
        self.paused += other.paused;
        self.busy += other.busy;
        self.stopped += other.stopped;
        self.failed += other.failed;
        self.parked += other.parked;
        self.cancelled += other.cancelled;
    }

    /// A turn whose task ended without a report (it panicked, or was cancelled).
    fn failed() -> Self {
        Self {
            turns: 1,
            failed: 1,
            ..Self::default()
        }
    }

    fn of(result: &Result<Outcome, Error>, parked: bool) -> Self {
        let mut report = Self {
            turns: 1,
            parked: usize::from(parked),
            ..Self::default()
        };
        match result {
            Ok(Outcome::Done(_)) => report.done = 1,
            Ok(Outcome::Paused(_)) => report.paused = 1,
            Ok(Outcome::Stopped(_)) => report.stopped = 1,
            Ok(_) => report.busy = 1,
            Err(Error::Cancelled) => report.cancelled = 1,
            Err(_) => report.failed = 1,
        }
        report
    }
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("holder", &self.holder)
            .field("concurrency", &self.concurrency)
            .field("idle_poll", &self.idle_poll)
            .finish_non_exhaustive()
    }
}

impl Worker {
    /// A worker over `store` whose chats talk to `provider`, with no tools until
    /// [`with_setup`](Self::with_setup) adds them.
    pub fn new(store: impl Store, provider: impl Provider) -> Self {
        Self::new_shared(Arc::new(store), Arc::new(provider))
    }

    /// [`new`](Self::new) with a shared store and provider.
    pub fn new_shared(store: Arc<dyn Store>, provider: Arc<dyn Provider>) -> Self {
        Self {
            store,
            provider: Arc::new(move |_: &str| Arc::clone(&provider)),
            setup: Arc::new(|_: &str, _: &mut Chat| Ok(())),
            concurrency: 4,
            idle_poll: Duration::from_millis(250),
            options: DurableOptions::default(),
            holder: new_holder(),
            running: Arc::default(),
        }
    }

    /// Chooses the provider per chat (by its id), instead of one for all.
    #[must_use]
    pub fn with_provider_factory(
        mut self,
        factory: impl Fn(&str) -> Arc<dyn Provider> + Send + Sync + 'static,
    ) -> Self {
        self.provider = Arc::new(factory);
        self
    }

    /// Rebuilds each chat's code before it runs: tools, callbacks, the file store (what
    /// [`Chat::load`] leaves out). Called with the chat's id; an error fails that turn.
    #[must_use]
    pub fn with_setup(
        mut self,
        setup: impl Fn(&str, &mut Chat) -> Result<(), Error> + Send + Sync + 'static,
    ) -> Self {
        self.setup = Arc::new(setup);
        self
    }

    /// How many chats the worker runs at once (4 by default; at least 1).
    #[must_use]
    pub fn with_concurrency(mut self, concurrency: usize) -> Self {
        self.concurrency = concurrency.max(1);
        self
    }

    /// How long the worker waits before looking again when no chat is due (250 ms by default).
    #[must_use]
    pub fn with_idle_poll(mut self, poll: Duration) -> Self {
        self.idle_poll = poll;
        self
    }

    /// The run lease, the backoff of failed turns (retry delay, its cap, the attempts before a
    /// chat is parked), the abandoned claims before a chat is parked
    /// ([`DurableOptions::with_max_abandoned_claims`]) and the task poll of the chats it runs.
    ///
    /// ```
    /// # #[cfg(feature = "sqlite")] {
    /// use std::time::Duration;
    /// use llm_tools_core::store::{DurableOptions, SqliteStore, Worker};
    /// use llm_tools_core::testing::ScriptedProvider;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # let dir = std::env::temp_dir().join(format!("llm-tools-worker-options-doc-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// let store = SqliteStore::open(dir.join("chats.db")).await?;
    /// let worker = Worker::new(store, ScriptedProvider::new()).with_durable_options(
    ///     DurableOptions::default()
    ///         .with_run_lease(Duration::from_secs(10))
    ///         // A chat whose turn kills its worker twice in a row is parked.
    ///         .with_max_abandoned_claims(2),
    /// );
    /// assert_eq!(worker.run_once().await?.turns, 0);
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// # }
    /// ```
    #[must_use]
    pub fn with_durable_options(mut self, options: DurableOptions) -> Self {
        self.options = options;
        self
    }

    /// The holder name the worker's run claims carry. Each turn's call claims carry a holder
    /// id of their own, which starts with this name and `/`.
    pub fn holder(&self) -> &str {
        &self.holder
    }

    /// Picks the chats due now (up to the concurrency), runs them at once, and returns what
    /// happened. A store that cannot be reached is an error here; [`run_until`](Self::run_until)
    /// retries instead.
    pub async fn run_once(&self) -> Result<WorkerReport, Error> {
        self.boxed_run_once().await
    }

    /// [`run_once`](Self::run_once) as a boxed future: compiled once, here (see
    /// [`Shared::drive`]).
    #[inline(never)]
    fn boxed_run_once(&self) -> BoxFuture<'_, Result<WorkerReport, Error>> {
        Box::pin(self.run_once_now())
    }

    async fn run_once_now(&self) -> Result<WorkerReport, Error> {
        let (due, picked_at) = self.pick(self.concurrency).await?;
        let shared = self.shared();
        let mut running = tokio::task::JoinSet::new();
        for due in due {
            running.spawn(Arc::clone(&shared).drive(due, picked_at));
        }
        let mut report = WorkerReport::default();
        while let Some(done) = running.join_next().await {
            report.add(done.unwrap_or_else(|_| WorkerReport::failed()));
        }
        Ok(report)
    }

    /// Runs due chats until `shutdown` resolves, keeping up to the concurrency running (each
    /// turn is its own Tokio task, so picks never hold turns up). On shutdown it picks nothing
    /// more and lets the turns in progress finish (each is bounded by its calls'
    /// `max_run_time`). When the store cannot be reached it waits (doubling the wait up to
    /// 5 s) and tries again; nothing is lost meanwhile.
    pub async fn run_until(&self, shutdown: impl Future<Output = ()>) -> WorkerReport {
        let shared = self.shared();
        let mut shutdown = std::pin::pin!(shutdown);
        let mut stopping = false;
        let mut running = tokio::task::JoinSet::new();
        let mut report = WorkerReport::default();
        let mut backoff = self.idle_poll;
        loop {
            let mut idle = false;
            if !stopping && running.len() < self.concurrency {
                match self.pick(self.concurrency - running.len()).await {
                    Ok((due, picked_at)) => {
                        backoff = self.idle_poll;
                        idle = due.is_empty();
                        for due in due {
                            running.spawn(Arc::clone(&shared).drive(due, picked_at));
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, retry_in = ?backoff, "could not pick chats from the store");
                        idle = true;
                        backoff = (backoff * 2).min(Duration::from_secs(5));
                    }
                }
            }
            if stopping && running.is_empty() {
                return report;
            }
            let wait = if idle { backoff } else { Duration::ZERO };
            tokio::select! {
                biased;
                () = &mut shutdown, if !stopping => stopping = true,
                Some(done) = running.join_next(), if !running.is_empty() => {
                    report.add(done.unwrap_or_else(|_| WorkerReport::failed()));
                }
                () = tokio::time::sleep(wait), if running.len() < self.concurrency && !stopping => {}
            }
        }
    }

    /// What the turns share, owned, so each turn can be a task of its own.
    fn shared(&self) -> Arc<Shared> {
        Arc::new(Shared {
            store: Arc::clone(&self.store),
            provider: Arc::clone(&self.provider),
            setup: Arc::clone(&self.setup),
            options: self.options.clone(),
            holder: Arc::clone(&self.holder),
            running: Arc::clone(&self.running),
        })
    }

    /// Picks up to `limit` due chats, and when the picks were asked for (their leases run from
    /// then). A chat this worker is running already (its turn lost its claim in the store but
    /// has not ended yet) is given back at once, never run twice at the same time, and not due
    /// again for one run lease, by when that turn has stopped (a turn stops one lease after
    /// its last renewal got through); the others are marked running.
    ///
    /// Boxed, as [`Shared::drive`] is: `run_once` and `run_until` keep no code of their own.
    #[inline(never)]
    fn pick(&self, limit: usize) -> BoxFuture<'_, Result<(Vec<DueChat>, Instant), Error>> {
        Box::pin(self.pick_now(limit))
    }

    async fn pick_now(&self, limit: usize) -> Result<(Vec<DueChat>, Instant), Error> {
        let picked_at = Instant::now();
        let now_ms = self.store.now_ms();
        let picked = super::bounded::within_lease(
            &self.options,
            None,
            "a pick of due chats",
            self.store.claim_due_parking_abandoned(
                &self.holder,
                now_ms,
                self.options.run_lease(),
                limit,
                self.options.max_abandoned_claims(),
            ),
        )
        .await?;
        let mut due = Vec::with_capacity(picked.len());
        for chat in picked {
            let fresh = self
                .running
                .lock()
                .map(|mut running| running.insert(chat.chat_id.clone()))
                .unwrap_or(false);
            if fresh {
                due.push(chat);
                continue;
            }
            // Its turn lost the claim (its renewals did not get through) and stops within one
            // more lease: the chat is not due before then, for this worker or any other.
            let lease_ms = u64::try_from(self.options.run_lease().as_millis()).unwrap_or(u64::MAX);
            let until = now_ms.saturating_add(lease_ms);
            tracing::warn!(
                chat_id = chat.chat_id.as_str(),
                until,
                "picked a chat this worker is still running; gave it back until its turn must have stopped"
            );
            if let Err(e) = self
                .store
                .release_run(
                    &chat.chat_id,
                    chat.token,
                    &Release::CallClaimedElsewhere { until },
                )
                .await
            {
                tracing::warn!(chat_id = chat.chat_id.as_str(), error = %e, "could not give a picked chat back; it ends with its lease");
            }
        }
        Ok((due, picked_at))
    }
}

/// What a worker's turns share.
struct Shared {
    store: Arc<dyn Store>,
    provider: Arc<ProviderFactory>,
    setup: Arc<Setup>,
    options: DurableOptions,
    holder: Arc<str>,
    running: Arc<Running>,
}

/// Takes a chat off its worker's running set when its turn ends, however it ends.
struct RunningGuard<'a> {
    running: &'a Running,
    chat_id: &'a str,
}

impl Drop for RunningGuard<'_> {
    fn drop(&mut self) {
        if let Ok(mut running) = self.running.lock() {
            running.remove(self.chat_id);
        }
    }
}

impl Shared {
    /// One picked chat: rebuilt, completed, released. A turn that panics (in the setup, a
    /// provider, the loop) is a failed turn like any other: counted, tried again after the
    /// backoff, parked once the attempts are used up.
    ///
    /// Boxed, so the worker's turn is compiled once, here, and not in the crate that calls
    /// [`Worker::run_once`] or [`Worker::run_until`] (see `Chat::boxed_turn`).
    #[inline(never)]
    fn drive(
        self: Arc<Self>,
        due: DueChat,
        picked_at: Instant,
    ) -> BoxFuture<'static, WorkerReport> {
        Box::pin(self.drive_now(due, picked_at))
    }

    async fn drive_now(self: Arc<Self>, due: DueChat, picked_at: Instant) -> WorkerReport {
        let _running = RunningGuard {
            running: &self.running,
            chat_id: &due.chat_id,
        };
        let turn = std::panic::AssertUnwindSafe(Arc::clone(&self).turn(&due, picked_at));
        match futures::FutureExt::catch_unwind(turn).await {
            Ok(report) => report,
            Err(payload) => {
                let message = payload
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a non-string panic payload".to_owned());
                let error = format!("the turn panicked: {message}");
                tracing::error!(
                    chat_id = due.chat_id.as_str(),
                    error,
                    "a chat's turn panicked"
                );
                let released = super::release_failed(
                    &*self.store,
                    &due.chat_id,
                    due.token,
                    &self.options,
                    &error,
                    None,
                )
                .await;
                let mut report = WorkerReport::failed();
                report.parked = usize::from(matches!(released, Some(Release::Park { .. })));
                report
            }
        }
    }

    /// The turn of [`drive`](Self::drive), which catches its panics.
    async fn turn(self: Arc<Self>, due: &DueChat, picked_at: Instant) -> WorkerReport {
        let provider = (self.provider)(&due.chat_id);
        let loaded = super::bounded::within_lease(
            &self.options,
            Some(&due.chat_id),
            "the load of a picked chat",
            Chat::load_claimed(
                Arc::clone(&self.store),
                due,
                provider,
                &self.holder,
                self.options.clone(),
            ),
        )
        .await;
        let mut chat = match loaded {
            Ok(chat) => chat,
            Err(e) => {
                tracing::warn!(chat_id = due.chat_id.as_str(), error = %e, "could not load a due chat");
                // What the store holds does not read back: trying again reads the same.
                let undecodable = match &e {
                    Error::Store(s) => matches!(**s, StoreError::Decode { .. }),
                    Error::InvalidConfig(_) => true,
                    _ => false,
                };
                let released = super::release_failed(
                    &*self.store,
                    &due.chat_id,
                    due.token,
                    &self.options,
                    &e.to_string(),
                    undecodable.then_some(ParkReason::Undecodable),
                )
                .await;
                let parked = matches!(released, Some(Release::Park { .. }));
                return WorkerReport::of(&Err(e), parked);
            }
        };
        if let Err(e) = (self.setup)(&due.chat_id, &mut chat) {
            tracing::warn!(chat_id = due.chat_id.as_str(), error = %e, "the worker's setup failed");
            chat.hand_back(&e).await;
            return WorkerReport::of(&Err(e), chat.was_parked());
        }
        let result = chat.complete_claimed(picked_at).await;
        if let Err(e) = &result {
            tracing::warn!(chat_id = due.chat_id.as_str(), error = %e, "a chat's turn failed");
        }
        WorkerReport::of(&result, chat.was_parked())
    }
}
