//! The cases about the edges of durable chats: turns whose run claim cannot be renewed, two
//! turns of one worker, what the application adds to a chat that fell behind its store, calls
//! whose tools a chat does not have, cancelling from another process, and files written under
//! a run claim.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use llm_tools_core::chat::Outcome;
use llm_tools_core::store::{
    ChatRecord, ChatStatus, Commit, DEFAULT_MAX_ATTEMPTS, DueChat, DurableOptions, Release,
    RunClaim, Store, StoreError, Worker,
};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{
    BoxFuture, Chat, Error, Message, ProviderData, Role, Task, ToolOutcome, ToolOutput, tool,
};
use serde_json::json;
use tokio::sync::mpsc;

use super::chats::{Renewals, StalledHeartbeat};

/// What the tools of these cases report, in the order it happens.
#[derive(Debug, PartialEq, Eq)]
enum Event {
    /// A worker set a picked chat up.
    Setup,
    /// `hold` started its run with this attempt number.
    Started(u32),
    /// `hold`'s run with this attempt number ended (finished or dropped).
    Ended(u32),
}

/// Reports a run's end when dropped, however the run ends.
struct EndOfRun(mpsc::UnboundedSender<Event>, u32);

impl Drop for EndOfRun {
    fn drop(&mut self) {
        let _ = self.0.send(Event::Ended(self.1));
    }
}

/// A `sequential` tool that holds its run until the test drops it, with a claim that outlives
/// every case.
struct Hold {
    events: mpsc::UnboundedSender<Event>,
    runs: Arc<AtomicUsize>,
}

#[tool(sequential, max_run_time = "600s")]
impl Hold {
    /// Holds a lock for a while
    async fn execute(&self, ctx: &llm_tools_core::ToolContext) -> String {
        self.runs.fetch_add(1, Ordering::SeqCst);
        let _end = EndOfRun(self.events.clone(), ctx.attempt());
        let _ = self.events.send(Event::Started(ctx.attempt()));
        std::future::pending::<()>().await;
        "held".into()
    }
}

/// Counts its runs.
struct Count(Arc<AtomicUsize>);

#[tool]
impl Count {
    /// Counts
    async fn execute(&self) -> String {
        self.0.fetch_add(1, Ordering::SeqCst);
        "counted".into()
    }
}

/// The tools of a case, sharing its counters.
#[derive(Clone)]
struct Tools {
    events: mpsc::UnboundedSender<Event>,
    holds: Arc<AtomicUsize>,
    counts: Arc<AtomicUsize>,
}

impl Tools {
    fn new() -> (Self, mpsc::UnboundedReceiver<Event>) {
        let (events, received) = mpsc::unbounded_channel();
        let tools = Self {
            events,
            holds: Arc::default(),
            counts: Arc::default(),
        };
        (tools, received)
    }

    fn add_to(&self, chat: &mut Chat) {
        chat.with_tools((
            Hold {
                events: self.events.clone(),
                runs: Arc::clone(&self.holds),
            },
            Count(Arc::clone(&self.counts)),
        ))
        .expect("tools register");
    }
}

/// A model that calls `hold` (sequential) and then `count` in one answer.
fn hold_then_count() -> ScriptedProvider {
    ScriptedProvider::new()
        .then_calls([("hold", json!({})), ("count", json!({}))])
        .then_text("done")
}

const SHORT_LEASE: Duration = Duration::from_millis(300);

/// Waits for the next event, failing the case rather than hanging when none comes.
async fn next(events: &mut mpsc::UnboundedReceiver<Event>) -> Event {
    tokio::time::timeout(Duration::from_secs(60), events.recv())
        .await
        .expect("an event within a minute")
        .expect("the tools are alive")
}

/// A case of the suite.
pub(super) async fn a_worker_whose_renewals_hang_never_runs_a_call_twice_at_once(
    store: Arc<dyn Store>,
) {
    let model = hold_then_count();
    let mut chat = Chat::create(Arc::clone(&store), "hung", model.clone())
        .await
        .expect("created");
    chat.enqueue("Work").await.expect("enqueued");

    let (tools, mut events) = Tools::new();
    let setup_tools = tools.clone();
    let hung: Arc<dyn Store> = Arc::new(StalledHeartbeat(Arc::clone(&store), Renewals::Hung));
    let worker = Worker::new_shared(hung, Arc::new(model.clone()))
        .with_setup(move |_, chat| {
            let _ = setup_tools.events.send(Event::Setup);
            setup_tools.add_to(chat);
            Ok(())
        })
        .with_durable_options(DurableOptions::default().with_run_lease(SHORT_LEASE))
        .with_concurrency(2)
        .with_idle_poll(Duration::from_millis(10));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(async move {
        worker
            .run_until(async {
                let _ = stopped.await;
            })
            .await
    });

    // The first run starts; its turn cannot renew its run claim. Whatever the worker does
    // meanwhile, the first run ends before any other starts.
    loop {
        match next(&mut events).await {
            Event::Setup => {}
            Event::Started(1) => break,
            other => panic!("before the first run: {other:?}"),
        }
    }
    loop {
        match next(&mut events).await {
            Event::Setup => {}
            Event::Ended(1) => break,
            other => panic!("while the first run was alive: {other:?}"),
        }
    }
    let _ = stop.send(());
    let report = running.await.expect("the worker ends");
    assert!(report.turns >= 1, "{report:?}");
    assert_eq!(tools.holds.load(Ordering::SeqCst), 1);
    assert_eq!(
        tools.counts.load(Ordering::SeqCst),
        0,
        "`count` started behind the sequential `hold` while `hold`'s claim was live"
    );

    // The stored call is still claimed (by the lost turn, until its `max_run_time`): another
    // chat finds it busy and starts nothing.
    let mut other = Chat::load(Arc::clone(&store), "hung", model)
        .await
        .expect("loaded");
    tools.add_to(&mut other);
    let outcome = other.complete().await.expect("an outcome");
    let Outcome::Busy(busy) = outcome else {
        panic!("not busy: {outcome:?}");
    };
    assert_eq!(busy.call_id(), Some(first_call_id(&other).as_str()));
    assert_eq!(tools.holds.load(Ordering::SeqCst), 1);
    assert_eq!(tools.counts.load(Ordering::SeqCst), 0);
}

/// A store that reports every release of a run claim ([`Store::release_run`]), with the chat's
/// id, never answers what `hangs` names (as a database server that stopped while its
/// connection stays up), and passes everything else to `store`.
struct ReportsReleases {
    store: Arc<dyn Store>,
    releases: mpsc::UnboundedSender<(String, Release)>,
    hangs: Hangs,
}

/// What a [`ReportsReleases`] never answers.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Hangs {
    Nothing,
    /// Commits (and a commit that releases the claim).
    Commits,
    /// Picks of due chats.
    Picks,
}

impl Store for ReportsReleases {
    fn now_ms(&self) -> u64 {
        self.store.now_ms()
    }
    fn create_chat<'a>(
        &'a self,
        id: &'a str,
        record: &'a ChatRecord,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.store.create_chat(id, record)
    }
    fn load_chat<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<ChatRecord, StoreError>> {
        self.store.load_chat(id)
    }
    fn claim_run<'a>(
        &'a self,
        id: &'a str,
        holder: &'a str,
        now_ms: u64,
        lease: Duration,
    ) -> BoxFuture<'a, Result<RunClaim, StoreError>> {
        self.store.claim_run(id, holder, now_ms, lease)
    }
    fn renew_run<'a>(
        &'a self,
        id: &'a str,
        token: u64,
        now_ms: u64,
        lease: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.store.renew_run(id, token, now_ms, lease)
    }
    fn release_run<'a>(
        &'a self,
        id: &'a str,
        token: u64,
        release: &'a Release,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let _ = self.releases.send((id.to_owned(), release.clone()));
        self.store.release_run(id, token, release)
    }
    fn claim_due<'a>(
        &'a self,
        holder: &'a str,
        now_ms: u64,
        lease: Duration,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<DueChat>, StoreError>> {
        if self.hangs == Hangs::Picks {
            return Box::pin(std::future::pending());
        }
        self.store.claim_due(holder, now_ms, lease, limit)
    }
    fn commit<'a>(&'a self, id: &'a str, c: &'a Commit) -> BoxFuture<'a, Result<u64, StoreError>> {
        if self.hangs == Hangs::Commits {
            return Box::pin(std::future::pending());
        }
        self.store.commit(id, c)
    }
    fn commit_and_release<'a>(
        &'a self,
        id: &'a str,
        c: &'a Commit,
        release: &'a Release,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        if self.hangs == Hangs::Commits {
            return Box::pin(std::future::pending());
        }
        self.store.commit_and_release(id, c, release)
    }
    fn chat_status<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<ChatStatus, StoreError>> {
        self.store.chat_status(id)
    }
    fn parked_chats<'a>(
        &'a self,
        after: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<ChatStatus>, StoreError>> {
        self.store.parked_chats(after, limit)
    }
    fn release_parked<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.store.release_parked(id)
    }
    fn request_cancel<'a>(
        &'a self,
        id: &'a str,
        now_ms: u64,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.store.request_cancel(id, now_ms)
    }
    fn cancel_requested<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<u64>, StoreError>> {
        self.store.cancel_requested(id)
    }
}

/// A case of the suite: a worker that picks a chat its own turn still runs (the turn waits on
/// its model, and its run claim lapsed: its renewals hang) gives it back not due before that
/// turn must have stopped, one run lease on, so neither it nor another worker picks the chat
/// at each poll meanwhile. Then the chat runs as usual.
pub(super) async fn a_worker_gives_back_a_chat_its_turn_still_runs_until_that_turn_has_stopped(
    store: Arc<dyn Store>,
) {
    // Long enough that the checks below run well within one lease of the give-back.
    const LEASE: Duration = Duration::from_secs(2);
    let mut chat = Chat::create(Arc::clone(&store), "given-back", ScriptedProvider::new())
        .await
        .expect("created");
    chat.enqueue("Work").await.expect("enqueued");

    let (sent, mut releases) = mpsc::unbounded_channel();
    let hung: Arc<dyn Store> = Arc::new(ReportsReleases {
        store: Arc::new(StalledHeartbeat(Arc::clone(&store), Renewals::Hung)),
        releases: sent,
        hangs: Hangs::Nothing,
    });
    let worker = Worker::new_shared(hung, Arc::new(HangsFirst::default()))
        .with_durable_options(DurableOptions::default().with_run_lease(LEASE))
        .with_concurrency(2)
        .with_idle_poll(Duration::from_millis(10));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(async move {
        worker
            .run_until(async {
                let _ = stopped.await;
            })
            .await
    });

    // Once the turn's claim lapses, the worker picks the chat again and gives it back at
    // once, before its turn stops: not due before one more lease.
    let (chat_id, release) = tokio::time::timeout(Duration::from_secs(60), releases.recv())
        .await
        .expect("a release within a minute")
        .expect("the store is alive");
    let given_back_at = store.now_ms();
    assert_eq!(chat_id, "given-back");
    let Release::CallClaimedElsewhere { until } = release else {
        panic!("given back due at once: {release:?}");
    };
    let lease_ms = u64::try_from(LEASE.as_millis()).expect("small");
    assert!(
        until <= given_back_at + lease_ms && until + lease_ms / 2 >= given_back_at + lease_ms,
        "due again one lease after the pick: {until} against {given_back_at}"
    );

    // Meanwhile another worker finds nothing due, and this one picks it no more.
    let other = Worker::new_shared(
        Arc::clone(&store),
        Arc::new(ScriptedProvider::new().then_text("answer")),
    );
    let report = other.run_once().await.expect("picked");
    assert_eq!(report.turns, 0, "{report:?}");
    assert!(
        store.now_ms() < until,
        "the checks ran within the lease, as this case needs"
    );
    assert!(
        releases.try_recv().is_err(),
        "the worker did not pick the chat again"
    );

    // The lagging turn stops (its renewals never got through); after the lease the chat runs.
    let _ = stop.send(());
    running.await.expect("the worker ends");
    while store.now_ms() <= until {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let report = other.run_once().await.expect("picked");
    assert_eq!((report.turns, report.done), (1, 1), "{report:?}");
    assert_eq!(stored_texts(&store, "given-back").await, ["Work", "answer"]);
}

/// A case of the suite: a store that stops answering (a database server stopped while its
/// connection stays up) holds neither a turn's last commit nor a worker's pick past the run
/// lease: each fails with an error saying the store did not answer, and the chat is read again
/// before its next turn.
pub(super) async fn a_store_that_stops_answering_holds_no_turn_or_pick_past_the_lease(
    store: Arc<dyn Store>,
) {
    let lease = Duration::from_millis(300);
    let (sent, _releases) = mpsc::unbounded_channel();
    let silent: Arc<dyn Store> = Arc::new(ReportsReleases {
        store: Arc::clone(&store),
        releases: sent.clone(),
        hangs: Hangs::Commits,
    });
    let model = ScriptedProvider::new()
        .then_text("Hello.")
        .then_text("Hello again.");
    let mut chat = Chat::create_shared(silent, "silent", Arc::new(model.clone()))
        .await
        .expect("created");
    chat.with_durable_options(DurableOptions::default().with_run_lease(lease));
    let asked = tokio::time::timeout(Duration::from_secs(60), chat.ask("Hi"))
        .await
        .expect("the turn ends though the store does not answer its commit");
    let Err(Error::Store(error)) = &asked else {
        panic!("not a store error: {asked:?}");
    };
    assert!(
        error.to_string().contains("did not answer a commit"),
        "{error}"
    );

    let picking: Arc<dyn Store> = Arc::new(ReportsReleases {
        store: Arc::clone(&store),
        releases: sent,
        hangs: Hangs::Picks,
    });
    let worker = Worker::new_shared(picking, Arc::new(model))
        .with_durable_options(DurableOptions::default().with_run_lease(lease));
    let picked = tokio::time::timeout(Duration::from_secs(60), worker.run_once())
        .await
        .expect("the pick ends though the store does not answer");
    let Err(Error::Store(error)) = &picked else {
        panic!("not a store error: {picked:?}");
    };
    assert!(
        error.to_string().contains("did not answer a pick"),
        "{error}"
    );
}

/// The id of the first call of the chat's last answer with calls.
fn first_call_id(chat: &Chat) -> String {
    chat.messages()
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant && !m.tool_calls.is_empty())
        .map(|m| m.tool_calls[0].id.clone())
        .expect("an answer with calls")
}

/// A case of the suite.
pub(super) async fn a_turn_that_cannot_renew_stops_and_a_sequential_call_stays_a_barrier(
    store: Arc<dyn Store>,
) {
    let model = hold_then_count();
    let (tools, mut events) = Tools::new();
    let hung: Arc<dyn Store> = Arc::new(StalledHeartbeat(Arc::clone(&store), Renewals::Hung));
    let mut stalled = Chat::create_shared(hung, "barrier", Arc::new(model.clone()))
        .await
        .expect("created");
    stalled.with_durable_options(DurableOptions::default().with_run_lease(SHORT_LEASE));
    tools.add_to(&mut stalled);
    let mut taker = Chat::load(Arc::clone(&store), "barrier", model.clone())
        .await
        .expect("loaded");
    tools.add_to(&mut taker);

    let asking = tokio::spawn(async move { stalled.ask("Work").await });
    assert_eq!(next(&mut events).await, Event::Started(1));

    // Another chat takes the run claim over once its lease ends: `hold` is still claimed, and
    // `count`, behind it, does not start.
    let busy = loop {
        match taker.complete().await.expect("an outcome") {
            Outcome::Busy(busy) if busy.call_id().is_some() => break busy,
            Outcome::Busy(busy) => {
                tokio::time::sleep(busy.remaining().min(Duration::from_millis(50))).await;
            }
            other => panic!("the takeover ran the round: {other:?}"),
        }
    };
    assert_eq!(busy.call_id(), Some(first_call_id(&taker).as_str()));
    assert_eq!(
        tools.counts.load(Ordering::SeqCst),
        0,
        "`count` started behind the sequential `hold` while `hold`'s claim was live"
    );

    // The stalled turn stopped on its own, with a stale error, and its run was dropped.
    let refused = tokio::time::timeout(Duration::from_secs(60), asking)
        .await
        .expect("the stalled turn ends")
        .expect("joined")
        .expect_err("its claim is lost");
    let Error::Store(store_error) = &refused else {
        panic!("not a store error: {refused}");
    };
    assert!(store_error.is_stale(), "{store_error}");
    assert_eq!(next(&mut events).await, Event::Ended(1));
    assert_eq!(tools.holds.load(Ordering::SeqCst), 1);
}

/// Answers "answer" to every request but the first, which never returns (a model that hangs).
#[derive(Default)]
struct HangsFirst(AtomicUsize);

impl llm_tools_core::Provider for HangsFirst {
    fn protocol(&self) -> &str {
        "hangs-first"
    }
    fn model(&self) -> &str {
        "hangs-first"
    }
    fn complete<'a>(
        &'a self,
        _: llm_tools_core::Request<'a>,
    ) -> BoxFuture<'a, Result<llm_tools_core::Response, llm_tools_core::ProviderError>> {
        let first = self.0.fetch_add(1, Ordering::SeqCst) == 0;
        Box::pin(async move {
            if first {
                std::future::pending::<()>().await;
            }
            Ok(llm_tools_core::Response::new(Message::assistant("answer")))
        })
    }
}

/// The texts of a chat's stored messages.
async fn stored_texts(store: &Arc<dyn Store>, chat_id: &str) -> Vec<String> {
    Chat::load(Arc::clone(store), chat_id, ScriptedProvider::new())
        .await
        .expect("loaded")
        .messages()
        .iter()
        .map(|m| m.text())
        .collect()
}

/// A case of the suite.
pub(super) async fn a_message_enqueued_to_a_chat_behind_its_store_is_stored(store: Arc<dyn Store>) {
    let hung: Arc<dyn Store> = Arc::new(StalledHeartbeat(Arc::clone(&store), Renewals::Hung));
    let mut chat = Chat::create_shared(hung, "behind", Arc::new(HangsFirst::default()))
        .await
        .expect("created");
    chat.with_durable_options(DurableOptions::default().with_run_lease(SHORT_LEASE));

    // The turn loses its run claim (its renewal never answers) and stops: the chat in memory
    // is behind the store from then on.
    let lost = chat.ask("one").await.expect_err("the claim is lost");
    assert!(matches!(&lost, Error::Store(e) if e.is_stale()), "{lost}");

    // The next message is added to what the store holds and written, never dropped.
    chat.enqueue("two").await.expect("stored");
    assert_eq!(stored_texts(&store, "behind").await, ["two"]);
}

/// A case of the suite.
pub(super) async fn an_edit_in_place_on_a_chat_behind_its_store_is_refused_never_dropped(
    store: Arc<dyn Store>,
) {
    let hung: Arc<dyn Store> = Arc::new(StalledHeartbeat(Arc::clone(&store), Renewals::Hung));
    let mut chat = Chat::create_shared(hung, "edited", Arc::new(HangsFirst::default()))
        .await
        .expect("created");
    chat.with_durable_options(DurableOptions::default().with_run_lease(SHORT_LEASE));
    chat.with_instructions("Old rules.");
    chat.save().await.expect("stored");
    let lost = chat.ask("one").await.expect_err("the claim is lost");
    assert!(matches!(&lost, Error::Store(e) if e.is_stale()), "{lost}");

    // The instructions change in place: as many messages as before, the same meta.
    chat.with_instructions("New rules.");
    let refused = chat.save().await.expect_err("not stored, and said so");
    assert!(
        matches!(&refused, Error::Store(e) if e.is_stale()),
        "{refused}"
    );
    assert_eq!(stored_texts(&store, "edited").await[0], "Old rules.");

    // The chat was read again: the same edit now lands.
    chat.with_instructions("New rules.");
    chat.save().await.expect("stored");
    assert_eq!(stored_texts(&store, "edited").await[0], "New rules.");
}

/// Drops a database table
#[tool(needs_approval)]
async fn drop_table(table: String) -> String {
    format!("dropped {table}")
}

/// A case of the suite.
pub(super) async fn a_decision_on_a_chat_behind_its_store_is_refused_never_dropped(
    store: Arc<dyn Store>,
) {
    let model = ScriptedProvider::new()
        .then_calls([("hold", json!({})), ("drop_table", json!({"table": "t"}))])
        .then_text("done");
    let (tools, mut events) = Tools::new();
    let hung: Arc<dyn Store> = Arc::new(StalledHeartbeat(Arc::clone(&store), Renewals::Hung));
    let mut chat = Chat::create_shared(hung, "decided", Arc::new(model.clone()))
        .await
        .expect("created");
    chat.with_durable_options(DurableOptions::default().with_run_lease(SHORT_LEASE));
    tools.add_to(&mut chat);
    chat.with_tools(DropTable).expect("tool");

    // `hold` runs, `drop_table` waits for an approval; the turn loses its claim and stops.
    let lost = chat.ask("Work").await.expect_err("the claim is lost");
    assert!(matches!(&lost, Error::Store(e) if e.is_stale()), "{lost}");
    assert_eq!(next(&mut events).await, Event::Started(1));
    let id = chat.pending_approvals()[0].id.clone();

    // Approved on the chat that fell behind: the save says it was not stored.
    chat.approve(&id).expect("approved in memory");
    let refused = chat.save().await.expect_err("not stored, and said so");
    assert!(
        matches!(&refused, Error::Store(e) if e.is_stale()),
        "{refused}"
    );
    let stored = Chat::load(Arc::clone(&store), "decided", model.clone())
        .await
        .expect("loaded");
    assert_eq!(stored.pending_approvals().len(), 1, "still waiting");

    // The chat was read again: the same decision now lands.
    chat.approve(&id).expect("approved again");
    chat.save().await.expect("stored");
    let stored = Chat::load(Arc::clone(&store), "decided", model)
        .await
        .expect("loaded");
    assert!(stored.pending_approvals().is_empty());
}

/// A case of the suite.
pub(super) async fn a_decision_on_a_chat_another_process_holds_is_an_error_never_dropped(
    store: Arc<dyn Store>,
) {
    let model = ScriptedProvider::new()
        .then_call("drop_table", json!({"table": "t"}))
        .then_text("done");
    let mut asker = Chat::create(Arc::clone(&store), "held-decision", model.clone())
        .await
        .expect("created");
    asker.with_tools(DropTable).expect("tool");
    assert!(asker.ask("Drop t").await.expect("paused").is_paused());
    let id = asker.pending_approvals()[0].id.clone();

    // Another process holds the chat's run claim.
    let claimed = store
        .claim_run(
            "held-decision",
            "other",
            store.now_ms(),
            Duration::from_secs(600),
        )
        .await
        .expect("claimed");
    assert!(matches!(claimed, RunClaim::Granted { .. }), "{claimed:?}");

    // Nothing changed here: `complete` is `Busy`, nothing ran.
    let mut chat = Chat::load(Arc::clone(&store), "held-decision", model.clone())
        .await
        .expect("loaded");
    chat.with_tools(DropTable).expect("tool");
    assert!(chat.complete().await.expect("busy").is_busy());

    // An approval made here, then `complete`: an error, never `Busy` with the approval
    // unstored; the handle keeps it, and the store still waits for one.
    chat.approve(&id).expect("approved");
    let refused = chat.complete().await.expect_err("not stored");
    assert!(
        refused.to_string().contains("another process holds"),
        "{refused}"
    );
    let stored = Chat::load(Arc::clone(&store), "held-decision", model)
        .await
        .expect("loaded");
    assert_eq!(stored.pending_approvals().len(), 1, "the store still waits");
    assert!(chat.pending_approvals().is_empty(), "the handle keeps it");
}

/// A case of the suite.
pub(super) async fn an_applications_mistakes_count_toward_no_parking(store: Arc<dyn Store>) {
    let model = ScriptedProvider::new()
        .then_call("drop_table", json!({"table": "t"}))
        .then_text("dropped");
    let mut chat = Chat::create(Arc::clone(&store), "mistaken", model.clone())
        .await
        .expect("created");
    chat.with_tools(DropTable).expect("tool");
    assert!(chat.ask("Drop t").await.expect("paused").is_paused());

    // More times than a chat's failed turns park it: a message while the call waits, and
    // `complete` on a handle loaded without the tool of an approved call.
    for _ in 0..DEFAULT_MAX_ATTEMPTS + 1 {
        let refused = chat.ask("Hurry up").await.expect_err("calls wait");
        assert!(matches!(refused, Error::PendingCalls { .. }), "{refused}");
    }
    let id = chat.pending_approvals()[0].id.clone();
    chat.approve(&id).expect("approved");
    chat.save().await.expect("saved");
    let mut bare = Chat::load(Arc::clone(&store), "mistaken", model.clone())
        .await
        .expect("loaded");
    for _ in 0..DEFAULT_MAX_ATTEMPTS + 1 {
        let refused = bare.complete().await.expect_err("no such tool here");
        assert!(
            matches!(refused, Error::ToolNotRegistered { .. }),
            "{refused}"
        );
    }
    let status = store.chat_status("mistaken").await.expect("status");
    assert_eq!(status.parked, None, "{status:?}");
    assert_eq!(status.failures, 0, "{status:?}");

    // A worker with the tool runs the approved call.
    let worker = Worker::new_shared(Arc::clone(&store), Arc::new(model)).with_setup(|_, chat| {
        chat.with_tools(DropTable)?;
        Ok(())
    });
    // The chat is due once a person decided (`save` made it so) or a message came.
    let report = worker.run_once().await.expect("ran");
    assert_eq!(report.done, 1, "{report:?}");
}

/// A case of the suite.
pub(super) async fn a_decision_a_cancel_request_overrides_is_an_error_never_silent(
    store: Arc<dyn Store>,
) {
    let model = ScriptedProvider::new()
        .then_call("drop_table", json!({"table": "t"}))
        .then_text("done");
    let mut asker = Chat::create(Arc::clone(&store), "cancel-decided", model.clone())
        .await
        .expect("created");
    asker.with_tools(DropTable).expect("tool");
    assert!(asker.ask("Drop t").await.expect("paused").is_paused());
    let id = asker.pending_approvals()[0].id.clone();

    // Someone asked to cancel the chat's calls (a holder that ended before it saw the request
    // leaves it in the store); here, an approval is made, then saved.
    store
        .request_cancel("cancel-decided", store.now_ms())
        .await
        .expect("requested");
    let mut chat = Chat::load(Arc::clone(&store), "cancel-decided", model)
        .await
        .expect("loaded");
    chat.with_tools(DropTable).expect("tool");
    chat.approve(&id).expect("approved");
    let refused = chat
        .save()
        .await
        .expect_err("the approval did not take effect");
    assert!(refused.to_string().contains("asked to cancel"), "{refused}");
    // The cancel was carried out and written: the call closed, the request cleared.
    cancelled_and_cleared(&store, "cancel-decided").await;

    // `cancel` itself on such a handle did what it was asked: no error.
    let model = ScriptedProvider::new()
        .then_call("drop_table", json!({"table": "u"}))
        .then_text("done");
    let mut asker = Chat::create(Arc::clone(&store), "cancel-twice", model.clone())
        .await
        .expect("created");
    asker.with_tools(DropTable).expect("tool");
    assert!(asker.ask("Drop u").await.expect("paused").is_paused());
    let id = asker.pending_approvals()[0].id.clone();
    store
        .request_cancel("cancel-twice", store.now_ms())
        .await
        .expect("requested");
    let mut chat = Chat::load(Arc::clone(&store), "cancel-twice", model)
        .await
        .expect("loaded");
    chat.with_tools(DropTable).expect("tool");
    chat.approve(&id).expect("approved");
    chat.cancel().await.expect("cancelled");
    cancelled_and_cleared(&store, "cancel-twice").await;
}

/// A case of the suite.
pub(super) async fn a_call_whose_tool_the_chat_lacks_stays_pending(store: Arc<dyn Store>) {
    let model = ScriptedProvider::new()
        .then_call("drop_table", json!({"table": "t"}))
        .then_text("done");
    let mut asker = Chat::create(Arc::clone(&store), "toolless", model.clone())
        .await
        .expect("created");
    asker.with_tools(DropTable).expect("tool");
    assert!(asker.ask("Drop t").await.expect("paused").is_paused());
    let id = asker.pending_approvals()[0].id.clone();

    // Loaded without its tools: approving is an error naming the tool; the call still waits.
    let mut bare = Chat::load(Arc::clone(&store), "toolless", model.clone())
        .await
        .expect("loaded");
    let refused = bare.approve(&id).expect_err("no such tool here");
    assert!(
        matches!(&refused, Error::ToolNotRegistered { tool, call_id } if tool == "drop_table" && *call_id == id),
        "{refused}"
    );
    assert_eq!(bare.pending_approvals().len(), 1);

    // Approved where the tool is; completed where it is not: an error, the call still ready.
    asker.approve(&id).expect("approved");
    asker.save().await.expect("saved");
    let mut bare = Chat::load(Arc::clone(&store), "toolless", model.clone())
        .await
        .expect("loaded");
    let refused = bare.complete().await.expect_err("no such tool here");
    assert!(
        matches!(&refused, Error::ToolNotRegistered { tool, .. } if tool == "drop_table"),
        "{refused}"
    );
    let texts = stored_texts(&store, "toolless").await;
    assert_eq!(texts.len(), 2, "no result was written: {texts:?}");

    // With the tool, the approval is carried out.
    let mut ready = Chat::load(Arc::clone(&store), "toolless", model)
        .await
        .expect("loaded");
    ready.with_tools(DropTable).expect("tool");
    let outcome = ready.complete().await.expect("done");
    assert_eq!(outcome.text().as_deref(), Some("done"));
    assert_eq!(ready.messages()[2].text(), "dropped t");
}

/// A background job: a task that stays working, and counts its cancels.
struct Job(Arc<AtomicUsize>);

#[tool]
impl Job {
    /// Starts a background job
    async fn execute(&self) -> Task {
        Task::working("running")
    }

    async fn resume(&self, task: Task) -> ToolOutcome {
        let _ = task;
        ToolOutcome::Output(ToolOutput::text("job done"))
    }

    async fn cancel(&self, _task: Task) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Whether the chat's stored calls all have results, and no cancel request waits.
async fn cancelled_and_cleared(store: &Arc<dyn Store>, chat_id: &str) {
    let stored = Chat::load(Arc::clone(store), chat_id, ScriptedProvider::new())
        .await
        .expect("loaded");
    assert!(!stored.is_paused(), "calls still wait");
    let last = stored.messages().last().expect("messages");
    assert_eq!(last.role, Role::Tool);
    assert!(last.is_error, "{}", last.text());
    assert_eq!(
        store.cancel_requested(chat_id).await.expect("read"),
        None,
        "the request was carried out and cleared"
    );
}

/// A case of the suite.
pub(super) async fn a_cancel_without_a_paused_tasks_tool_is_refused(store: Arc<dyn Store>) {
    let model = ScriptedProvider::new()
        .then_call("job", json!({}))
        .then_text("not asked");
    let cancels = Arc::new(AtomicUsize::new(0));
    let mut asker = Chat::create(Arc::clone(&store), "taskless", model.clone())
        .await
        .expect("created");
    asker.with_tools(Job(Arc::clone(&cancels))).expect("tool");
    assert!(asker.ask("Work").await.expect("paused").is_paused());

    // Loaded without the job's tool (a "Cancel" button's handler): the task could not be
    // cancelled through it, so the cancel is refused, naming the tool, and nothing is closed.
    let mut bare = Chat::load(Arc::clone(&store), "taskless", model.clone())
        .await
        .expect("loaded");
    let refused = bare.cancel().await.expect_err("no such tool here");
    assert!(
        matches!(&refused, Error::ToolNotRegistered { tool, .. } if tool == "job"),
        "{refused}"
    );
    assert_eq!(cancels.load(Ordering::SeqCst), 0);
    // Nor does a cancel another process asked for close it from a handle without the tool.
    store
        .request_cancel("taskless", store.now_ms())
        .await
        .expect("requested");
    let mut bare = Chat::load(Arc::clone(&store), "taskless", model.clone())
        .await
        .expect("loaded");
    assert!(bare.cancel().await.is_err(), "no such tool here");
    assert_eq!(cancels.load(Ordering::SeqCst), 0);
    let stored = Chat::load(Arc::clone(&store), "taskless", model.clone())
        .await
        .expect("loaded");
    assert!(stored.is_paused(), "the task still waits");

    // With the tool, the task is cancelled through it and its call closed.
    let mut ready = Chat::load(Arc::clone(&store), "taskless", model)
        .await
        .expect("loaded");
    ready.with_tools(Job(Arc::clone(&cancels))).expect("tool");
    ready.cancel().await.expect("cancelled");
    assert_eq!(cancels.load(Ordering::SeqCst), 1);
    cancelled_and_cleared(&store, "taskless").await;
}

/// A case of the suite: a chat whose calls the application cancels itself (`cancel` on a
/// paused chat nobody holds, or a turn cancelled through its handle) rests, as one cancelled
/// from another process does: no worker carries the model on from the cancelled results
/// until someone acts.
pub(super) async fn a_cancel_made_here_leaves_the_chat_at_rest(store: Arc<dyn Store>) {
    let model = ScriptedProvider::new()
        .then_call("drop_table", json!({"table": "users"}))
        .then_call("drop_table", json!({"table": "users"}))
        .then_text("Not dropped.");
    let mut chat = Chat::create(Arc::clone(&store), "rests", model.clone())
        .await
        .expect("created");
    chat.with_tools(DropTable).expect("tool");
    assert!(chat.ask("Drop it").await.expect("asked").is_paused());
    chat.cancel().await.expect("cancelled");
    let record = store.load_chat("rests").await.expect("loads");
    assert_eq!(record.wake_at, None, "the cancelled chat is not due");
    let worker = Worker::new(Arc::clone(&store), model.clone()).with_setup(|_, chat| {
        chat.with_tools(DropTable)?;
        Ok(())
    });
    let report = worker.run_once().await.expect("ran");
    assert_eq!(report.turns, 0, "{report:?}");
    assert_eq!(model.request_count(), 1, "the model was not asked again");

    // The application acts: the chat carries on.
    let mut chat = Chat::load(Arc::clone(&store), "rests", model.clone())
        .await
        .expect("loads");
    chat.with_tools(DropTable).expect("tool");
    chat.enqueue("Never mind").await.expect("enqueued");
    let report = worker.run_once().await.expect("ran");
    assert_eq!(report.turns, 1, "{report:?}");
    assert_eq!(model.request_count(), 2);

    // A turn cancelled through its handle while a call runs rests the same way.
    let model = ScriptedProvider::new()
        .then_call("hold", json!({}))
        .then_text("not asked");
    let (tools, mut events) = Tools::new();
    let mut chat = Chat::create(Arc::clone(&store), "rests-too", model.clone())
        .await
        .expect("created");
    tools.add_to(&mut chat);
    let handle = chat.cancel_handle();
    let asking = tokio::spawn(async move { chat.ask("Hold it").await });
    assert_eq!(next(&mut events).await, Event::Started(1));
    handle.cancel();
    let ended = tokio::time::timeout(Duration::from_secs(60), asking)
        .await
        .expect("the turn ends")
        .expect("joined");
    assert!(matches!(ended, Err(Error::Cancelled)), "{ended:?}");
    let record = store.load_chat("rests-too").await.expect("loads");
    assert_eq!(record.wake_at, None, "the cancelled turn's chat is not due");
    let worker = Worker::new(Arc::clone(&store), model.clone()).with_setup(move |_, chat| {
        tools.add_to(chat);
        Ok(())
    });
    let report = worker.run_once().await.expect("ran");
    assert_eq!(report.turns, 0, "{report:?}");
    assert_eq!(model.request_count(), 1, "the model was not asked again");
}

/// A case of the suite.
pub(super) async fn a_cancel_from_another_process_reaches_the_holder_and_a_worker(
    store: Arc<dyn Store>,
) {
    // A holder mid-turn: a task paused, a sequential call running.
    let model = ScriptedProvider::new()
        .then_calls([("job", json!({})), ("hold", json!({}))])
        .then_text("not asked");
    let (tools, mut events) = Tools::new();
    let job_cancels = Arc::new(AtomicUsize::new(0));
    let mut holder = Chat::create(Arc::clone(&store), "held", model.clone())
        .await
        .expect("created");
    holder.with_durable_options(DurableOptions::default().with_run_lease(SHORT_LEASE));
    tools.add_to(&mut holder);
    holder
        .with_tools(Job(Arc::clone(&job_cancels)))
        .expect("tool");
    let asking = tokio::spawn(async move { holder.ask("Work").await });
    assert_eq!(next(&mut events).await, Event::Started(1));

    // Another process's handle cannot take the chat: it records the request.
    let mut other = Chat::load(Arc::clone(&store), "held", model.clone())
        .await
        .expect("loaded");
    other.cancel().await.expect("cancelled");
    assert!(
        store
            .cancel_requested("held")
            .await
            .expect("read")
            .is_some(),
        "the request is stored"
    );

    // The holder sees it at its next heartbeat: the running call is dropped and closed, the
    // paused task cancelled through its tool.
    let ended = tokio::time::timeout(Duration::from_secs(60), asking)
        .await
        .expect("the turn ends")
        .expect("joined");
    assert!(matches!(ended, Err(Error::Cancelled)), "{ended:?}");
    assert_eq!(next(&mut events).await, Event::Ended(1));
    assert_eq!(job_cancels.load(Ordering::SeqCst), 1);
    cancelled_and_cleared(&store, "held").await;

    // A chat no one runs: its holder let go before it saw the request; a worker carries it
    // out, without asking the model.
    let model = ScriptedProvider::new()
        .then_call("job", json!({}))
        .then_text("not asked");
    let mut paused = Chat::create(Arc::clone(&store), "idle", model.clone())
        .await
        .expect("created");
    paused
        .with_tools(Job(Arc::clone(&job_cancels)))
        .expect("tool");
    assert!(paused.ask("Work").await.expect("paused").is_paused());
    let RunClaim::Granted { token, .. } = store
        .claim_run("idle", "elsewhere", store.now_ms(), Duration::from_secs(60))
        .await
        .expect("claimed")
    else {
        panic!("not granted");
    };
    let mut other = Chat::load(Arc::clone(&store), "idle", model.clone())
        .await
        .expect("loaded");
    other.cancel().await.expect("cancelled");
    store
        .release_run("idle", token, &Release::Unchanged)
        .await
        .expect("released");

    let cancels = Arc::clone(&job_cancels);
    let worker =
        Worker::new_shared(Arc::clone(&store), Arc::new(model)).with_setup(move |_, chat| {
            chat.with_tools(Job(Arc::clone(&cancels)))?;
            Ok(())
        });
    let report = worker.run_once().await.expect("ran");
    assert_eq!((report.turns, report.cancelled), (1, 1), "{report:?}");
    assert_eq!(job_cancels.load(Ordering::SeqCst), 2);
    cancelled_and_cleared(&store, "idle").await;
    // Cancelled, the chat rests: nothing is due.
    assert_eq!(worker.run_once().await.expect("ran").turns, 0);
}

/// A case of the suite.
pub(super) async fn a_dropped_turn_gives_its_run_claim_up(store: Arc<dyn Store>) {
    // The default lease (30 s) outlives the case: only giving the claim up frees the chat.
    let model = ScriptedProvider::new()
        .then_call("hold", json!({}))
        .then_text("not asked");
    let (tools, mut events) = Tools::new();
    let mut chat = Chat::create(Arc::clone(&store), "dropped", model)
        .await
        .expect("created");
    tools.add_to(&mut chat);
    // The turn is dropped mid-call, as a timeout or a closed request drops it.
    tokio::select! {
        outcome = chat.ask("Work") => panic!("the turn ended: {outcome:?}"),
        event = next(&mut events) => assert_eq!(event, Event::Started(1)),
    }
    assert_eq!(next(&mut events).await, Event::Ended(1));
    // The next turn of the same chat value gets the chat at once and starts the call again,
    // never `Busy` until the lease ends; it is dropped the same way.
    tokio::select! {
        outcome = chat.complete() => panic!("the next turn ended: {outcome:?}"),
        event = next(&mut events) => assert_eq!(event, Event::Started(2)),
    }
    assert_eq!(next(&mut events).await, Event::Ended(2));
    // Another process gets it well within the lease.
    let waited = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match store
                .claim_run(
                    "dropped",
                    "elsewhere",
                    store.now_ms(),
                    Duration::from_secs(60),
                )
                .await
                .expect("claims")
            {
                RunClaim::Granted { .. } => break,
                _ => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    })
    .await;
    assert!(waited.is_ok(), "the dropped turn's claim was kept");
}

/// Saves `notes.md` once let go, and keeps what the save said.
struct Scribe {
    started: Arc<tokio::sync::Notify>,
    go: Arc<tokio::sync::Notify>,
    saved: Arc<std::sync::Mutex<Option<std::io::Result<String>>>>,
}

#[tool(max_run_time = "600s")]
impl Scribe {
    /// Writes the notes
    async fn execute(&self, ctx: &llm_tools_core::ToolContext) -> String {
        self.started.notify_one();
        self.go.notified().await;
        let files = ctx.files().expect("a file store");
        let saved = files.save("notes.md", b"old holder".to_vec()).await;
        *self.saved.lock().expect("lock") = Some(saved);
        "written".into()
    }
}

/// Whether `error` is a store's refusal of a stale write.
fn is_stale_io(error: &std::io::Error) -> bool {
    error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<StoreError>())
        .is_some_and(StoreError::is_stale)
}

/// The case about files, on a store and its file store (`files` gives a chat's file store):
/// a save under a stale run claim is refused, and the new holder's file is intact; a turn
/// that lost its claim cannot overwrite what was saved after the takeover.
pub async fn a_stale_holders_file_writes_are_refused(
    store: Arc<dyn Store>,
    files: impl Fn(&str) -> Arc<dyn llm_tools_core::files::FileStore>,
) {
    // The store's fence: two holders in turn, the first one's save comes late.
    Chat::create(Arc::clone(&store), "fenced", ScriptedProvider::new())
        .await
        .expect("created");
    let chat_files = files("fenced");
    let claim = |holder: &'static str| {
        let store = Arc::clone(&store);
        async move {
            match store
                .claim_run("fenced", holder, store.now_ms(), Duration::from_secs(60))
                .await
                .expect("claims")
            {
                RunClaim::Granted { token, .. } => token,
                other => panic!("not granted: {other:?}"),
            }
        }
    };
    let old = claim("old").await;
    let old_files = chat_files.fenced("fenced", old).expect("fences");
    store
        .release_run("fenced", old, &Release::Unchanged)
        .await
        .expect("released");
    let new = claim("new").await;
    let new_files = chat_files.fenced("fenced", new).expect("fences");
    new_files
        .save("notes.md", b"new holder".to_vec())
        .await
        .expect("the holder saves");
    let refused = old_files
        .save("notes.md", b"old holder".to_vec())
        .await
        .expect_err("a stale save is refused");
    assert!(is_stale_io(&refused), "{refused}");
    assert_eq!(
        chat_files.load("notes.md").await.expect("read"),
        b"new holder"
    );
    // A save under a claim its holder gave up (a tool's task that outlived its turn), with no
    // one holding the chat since: refused too.
    store
        .release_run("fenced", new, &Release::Unchanged)
        .await
        .expect("released");
    let refused = new_files
        .save("notes.md", b"after the release".to_vec())
        .await
        .expect_err("a save under a claim given up is refused");
    assert!(is_stale_io(&refused), "{refused}");
    assert!(refused.to_string().contains("given up"), "{refused}");
    assert_eq!(
        chat_files.load("notes.md").await.expect("read"),
        b"new holder"
    );
    // A save fenced by the claim of a chat this database does not hold (its files kept in
    // another store than the chat, or the chat removed) has no claim to guard it: refused.
    let unguarded = chat_files.fenced("held-elsewhere", 1).expect("fences");
    let refused = unguarded
        .save("notes.md", b"unguarded".to_vec())
        .await
        .expect_err("a save no claim guards is refused");
    assert!(is_stale_io(&refused), "{refused}");
    assert!(
        refused
            .to_string()
            .contains("not in this file store's database"),
        "{refused}"
    );
    assert_eq!(
        chat_files.load("notes.md").await.expect("read"),
        b"new holder"
    );

    // A turn that lost its claim: its tool saves after the takeover, through the chat.
    let model = ScriptedProvider::new()
        .then_call("scribe", json!({}))
        .then_text("done");
    let started = Arc::new(tokio::sync::Notify::new());
    let go = Arc::new(tokio::sync::Notify::new());
    let saved = Arc::new(std::sync::Mutex::new(None));
    let stalled: Arc<dyn Store> = Arc::new(StalledHeartbeat(Arc::clone(&store), Renewals::Skipped));
    let mut writer = Chat::create_shared(stalled, "scribe", Arc::new(model.clone()))
        .await
        .expect("created");
    writer.with_durable_options(DurableOptions::default().with_run_lease(SHORT_LEASE));
    writer.with_shared_file_store(files("scribe"));
    writer
        .with_tools(Scribe {
            started: Arc::clone(&started),
            go: Arc::clone(&go),
            saved: Arc::clone(&saved),
        })
        .expect("tool");
    let writing = tokio::spawn(async move { writer.ask("Write the notes").await });
    started.notified().await;

    // Another chat takes the run claim once its lease ends (the call is still claimed), and
    // the application saves the new holder's notes.
    let mut taker = Chat::load(Arc::clone(&store), "scribe", model)
        .await
        .expect("loaded");
    loop {
        match taker.complete().await.expect("an outcome") {
            Outcome::Busy(busy) if busy.call_id().is_some() => break,
            Outcome::Busy(busy) => {
                tokio::time::sleep(busy.remaining().min(Duration::from_millis(50))).await;
            }
            other => panic!("the takeover ran the call: {other:?}"),
        }
    }
    files("scribe")
        .save("notes.md", b"new holder".to_vec())
        .await
        .expect("saved");
    go.notify_one();
    let _ = tokio::time::timeout(Duration::from_secs(60), writing)
        .await
        .expect("the stalled turn ends");
    let saved = saved.lock().expect("lock").take().expect("the tool saved");
    let refused = saved.expect_err("the stale turn's save is refused");
    assert!(is_stale_io(&refused), "{refused}");
    assert_eq!(
        files("scribe").load("notes.md").await.expect("read"),
        b"new holder"
    );
}

/// A commit that gave the run claim up landed, but its reply was lost: the holder, thinking
/// the turn failed, releases it for a retry. That release finds no claim to give up and
/// changes nothing: no failure counted, no wake time set (a chat a stop left resting stays
/// resting), no error recorded.
pub(super) async fn a_release_after_a_commit_that_gave_the_claim_up_changes_nothing(
    store: Arc<dyn Store>,
) {
    Chat::create(Arc::clone(&store), "released", ScriptedProvider::new())
        .await
        .expect("created");
    let record = store.load_chat("released").await.expect("loads");
    let token = match store
        .claim_run(
            "released",
            "holder",
            store.now_ms(),
            Duration::from_secs(60),
        )
        .await
        .expect("claims")
    {
        RunClaim::Granted { token, .. } => token,
        other => panic!("not granted: {other:?}"),
    };
    let commit = Commit::new(
        token,
        record.meta.clone(),
        record.messages.len(),
        Vec::new(),
        Vec::new(),
    );
    store
        .commit_and_release("released", &commit, &Release::Succeeded)
        .await
        .expect("committed and released");
    let before = store.chat_status("released").await.expect("status");
    for release in [
        Release::Retry {
            error: "the reply was lost".into(),
            retry_at: store.now_ms(),
        },
        Release::Park {
            error: "the reply was lost".into(),
            reason: llm_tools_core::store::ParkReason::AttemptsExhausted,
        },
    ] {
        store
            .release_run("released", token, &release)
            .await
            .expect("a release that finds nothing to give up is no error");
    }
    let after = store.chat_status("released").await.expect("status");
    assert_eq!(after.failures, 0);
    assert_eq!(after.last_error, None);
    assert_eq!(after.parked, None);
    assert_eq!(after.wake_at, before.wake_at);
}

/// A cancel asked while a turn runs, which the turn ends before seeing (before its next
/// heartbeat): the turn's last commit leaves the chat due, so a worker carries the cancel out,
/// as for a chat nobody held; a message enqueued afterwards is answered.
pub(super) async fn a_cancel_the_holder_never_saw_is_carried_out_and_later_work_answered(
    store: Arc<dyn Store>,
) {
    let model = ScriptedProvider::new().then_text("Next answered.");
    Chat::create(Arc::clone(&store), "late-cancel", model.clone())
        .await
        .expect("created");
    let record = store.load_chat("late-cancel").await.expect("loads");
    let token = match store
        .claim_run(
            "late-cancel",
            "holder",
            store.now_ms(),
            Duration::from_secs(60),
        )
        .await
        .expect("claims")
    {
        RunClaim::Granted { token, .. } => token,
        other => panic!("not granted: {other:?}"),
    };
    // Another process asks to cancel while the turn runs; the turn ends without seeing it.
    store
        .request_cancel("late-cancel", store.now_ms())
        .await
        .expect("requested");
    let last = Commit::new(
        token,
        record.meta.clone(),
        record.messages.len(),
        Vec::new(),
        Vec::new(),
    );
    store
        .commit_and_release("late-cancel", &last, &Release::Succeeded)
        .await
        .expect("committed");
    let status = store.chat_status("late-cancel").await.expect("status");
    assert!(
        status.wake_at.is_some_and(|at| at <= store.now_ms()),
        "the cancel waits for a worker: {status:?}"
    );
    let worker = Worker::new(Arc::clone(&store), model.clone());
    let _ = worker.run_once().await.expect("ran");
    assert_eq!(
        store
            .chat_status("late-cancel")
            .await
            .expect("status")
            .wake_at,
        None,
        "carried out, the chat rests"
    );

    // The cancel carried out on loading, by the value that enqueues: the message is due.
    store
        .request_cancel("late-cancel", store.now_ms())
        .await
        .expect("requested");
    let mut chat = Chat::load(Arc::clone(&store), "late-cancel", model.clone())
        .await
        .expect("loads");
    chat.enqueue("Next").await.expect("enqueued");
    let report = worker.run_once().await.expect("ran");
    assert_eq!(report.turns, 1, "{report:?}");
    let chat = Chat::load(Arc::clone(&store), "late-cancel", model)
        .await
        .expect("loads");
    assert_eq!(
        chat.messages().last().map(|m| m.text()).as_deref(),
        Some("Next answered.")
    );
}

/// JSON nested `levels` deep: `[[…[1]…]]`.
fn nested(levels: usize) -> serde_json::Value {
    (0..levels).fold(json!(1), |inner, _| json!([inner]))
}

/// A case of the suite: an answer holding JSON as deeply nested as a provider's answer may
/// be read (125 levels, within `serde_json`'s 128) is kept with its message, saved, and read
/// back whole by a fresh chat (the message's own structures put it past 128 levels in the
/// stored record); a record nested past the bound a stored chat is read with is refused by
/// name, not read.
pub(super) async fn an_answer_nested_as_deep_as_json_is_read_is_loaded_again(
    store: Arc<dyn Store>,
) {
    let data = |levels| json!({ "content": [{ "type": "block", "value": nested(levels) }] });
    let answer = |levels| {
        let mut message = Message::assistant("Checked.");
        message.provider_data = Some(ProviderData::new("anthropic", data(levels)));
        message
    };
    let model = ScriptedProvider::new().then(answer(125));
    let mut chat = Chat::create(Arc::clone(&store), "deep", model)
        .await
        .expect("created");
    let outcome = chat.ask("Check").await.expect("asked");
    assert_eq!(outcome.text().as_deref(), Some("Checked."));
    drop(chat);
    let chat = Chat::load(Arc::clone(&store), "deep", ScriptedProvider::new())
        .await
        .expect("a saved chat loads again");
    let kept = chat.messages().last().expect("the answer");
    assert_eq!(
        kept.provider_data.as_ref().map(|p| &p.data),
        Some(&data(125)),
        "the provider's data comes back as it was kept"
    );
    drop(chat);

    let model = ScriptedProvider::new().then(answer(300));
    let mut chat = Chat::create(Arc::clone(&store), "deeper", model)
        .await
        .expect("created");
    let outcome = chat.ask("Check").await.expect("asked");
    assert_eq!(outcome.text().as_deref(), Some("Checked."));
    drop(chat);
    let refused = Chat::load(store, "deeper", ScriptedProvider::new())
        .await
        .expect_err("a record past the bound is refused");
    let text = refused.to_string();
    assert!(
        text.contains("nests 30") && text.contains("more than the 160"),
        "{text}"
    );
}
