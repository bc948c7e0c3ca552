//! Running a served tool: its panic caught ([`guarded`]), a working task carried on here
//! for a client that does not run it as an MCP task ([`carry_on`]), how many questions a
//! call may ask ([`MAX_QUESTIONS`]), and how many calls one client may have running at once
//! ([`InFlight`]).
//!
//! The task a call works on here is the call's own ([`Working`]) until the call hands it on
//! (to the MCP task machinery, to be parked for the call's next round, or to the resume that
//! goes on with it): a call that ends with it still working stops its work through the tool's
//! `cancel`, however it ends. Its result, its limit or its client's cancel (the request's
//! cancellation token) stop it in the call; a call whose future is dropped outright (no
//! cancel: a handler that gives up on it, the application dropping the request) stops it
//! from [`Working`]'s `Drop`, on a task of its own on the current tokio runtime. Every
//! `cancel` a call runs runs on a task of its own, awaited: a call dropped while it waits
//! never cuts the tool's `cancel` short.

use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::FutureExt as _;
use llm_tools_core::{Question, RawArgs, Task, TaskStatus, Tool, ToolContext, ToolOutcome};

/// How many questions one served call may ask its client before the server gives up on it,
/// in a call or as a task.
pub(super) const MAX_QUESTIONS: usize = 16;

/// How many calls one client may have running at once unless
/// [`ToolServer::with_max_calls_in_flight_per_client`](crate::ToolServer::with_max_calls_in_flight_per_client)
/// says otherwise: 16. A client is its authorization principal (every session of it
/// together), else its session or connection. A call counts from its request to its response, waiting for an
/// approval or an answer included, and a task's resume while it runs; one more call gets an
/// error result at once and its tool does not run, and the other clients' calls still run.
pub const DEFAULT_MAX_CALLS_IN_FLIGHT_PER_CLIENT: usize = 16;

/// How many calls the server runs at once, of all its clients together, unless
/// [`ToolServer::with_max_calls_in_flight`](crate::ToolServer::with_max_calls_in_flight) says
/// otherwise: 256. Counted as [`DEFAULT_MAX_CALLS_IN_FLIGHT_PER_CLIENT`] counts (a task's
/// resume while it runs included); one more call gets an error result at once and its tool
/// does not run. Without authorization every session is a client of its own, so this is what
/// bounds the work many sessions can start.
pub const DEFAULT_MAX_CALLS_IN_FLIGHT: usize = 256;

/// How many bytes of arguments one client's calls running at once may hold unless
/// [`ToolServer::with_max_argument_bytes_in_flight_per_client`](crate::ToolServer::with_max_argument_bytes_in_flight_per_client)
/// says otherwise: 16 MiB, counted as the length of each call's arguments as JSON text (the
/// call keeps a few copies of them until its response, so it holds some multiple of this).
/// Counted per client as [`DEFAULT_MAX_CALLS_IN_FLIGHT_PER_CLIENT`] counts calls, a call past
/// it gets an error result at once and its tool does not run: a server whose request bodies
/// may be larger (`HttpOptions::with_max_request_body_bytes`) refuses any call whose
/// arguments alone pass it.
pub const DEFAULT_MAX_ARGUMENT_BYTES_IN_FLIGHT_PER_CLIENT: usize = 16 << 20;

/// How many bytes of arguments the calls running at once may hold, of all clients together,
/// unless [`ToolServer::with_max_argument_bytes_in_flight`](crate::ToolServer::with_max_argument_bytes_in_flight)
/// says otherwise: 64 MiB. Without it, the server's 256 calls, each with a request's worth of
/// arguments waiting for an approval, could hold gigabytes.
pub const DEFAULT_MAX_ARGUMENT_BYTES_IN_FLIGHT: usize = 64 << 20;

/// The limits on the calls running at once: per client and for the server, in calls and in
/// bytes of arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct CallLimits {
    pub(super) per_client: usize,
    pub(super) total: usize,
    pub(super) per_client_bytes: usize,
    pub(super) total_bytes: usize,
}

impl Default for CallLimits {
    fn default() -> Self {
        Self {
            per_client: DEFAULT_MAX_CALLS_IN_FLIGHT_PER_CLIENT,
            total: DEFAULT_MAX_CALLS_IN_FLIGHT,
            per_client_bytes: DEFAULT_MAX_ARGUMENT_BYTES_IN_FLIGHT_PER_CLIENT,
            total_bytes: DEFAULT_MAX_ARGUMENT_BYTES_IN_FLIGHT,
        }
    }
}

/// How many calls each client has running, with the bytes of their arguments, and all of them
/// together: a client leaves the map with its last call, so the map holds at most as many
/// clients as calls run.
#[derive(Default)]
pub(super) struct InFlight(Arc<Mutex<Calls>>);

#[derive(Default)]
pub(super) struct Calls {
    /// Each client's calls and their bytes.
    by_client: HashMap<String, (usize, usize)>,
    total: usize,
    total_bytes: usize,
}

/// One running call's place among its client's and the server's; given back when it drops
/// (the call ended, or was cancelled and its future dropped).
pub(super) struct Running {
    calls: Arc<Mutex<Calls>>,
    owner: String,
    bytes: usize,
}

/// Why a call found no place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Full {
    /// Its client has `max` calls running.
    Client(usize),
    /// The server has `max` calls running, of all its clients.
    Server(usize),
    /// Its arguments would take its client's calls past `max` bytes.
    ClientBytes(usize),
    /// Its arguments would take the calls running past `max` bytes, of all clients.
    ServerBytes(usize),
}

impl Full {
    /// What the call is told.
    pub(super) fn message(self) -> String {
        match self {
            Self::Client(max) => too_many_in_flight(max),
            Self::Server(max) => format!(
                "the server has {max} calls running already, its limit \
                 (ToolServer::with_max_calls_in_flight); the call did not run: try again later"
            ),
            Self::ClientBytes(max) => format!(
                "this client's calls running hold arguments of {max} bytes at most \
                 (ToolServer::with_max_argument_bytes_in_flight_per_client), and this call's \
                 would pass it; the call did not run: try again when one has finished, or send \
                 less"
            ),
            Self::ServerBytes(max) => format!(
                "the calls running on the server hold arguments of {max} bytes at most \
                 (ToolServer::with_max_argument_bytes_in_flight), and this call's would pass it; \
                 the call did not run: try again later"
            ),
        }
    }
}

fn lock(calls: &Mutex<Calls>) -> MutexGuard<'_, Calls> {
    calls
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl InFlight {
    /// A place for one more call of `owner`, holding `bytes` of arguments, within `limits`:
    /// its client's calls and theirs, and the server's.
    pub(super) fn enter(
        &self,
        owner: &str,
        limits: CallLimits,
        bytes: usize,
    ) -> Result<Running, Full> {
        let mut calls = lock(&self.0);
        if calls.total >= limits.total {
            return Err(Full::Server(limits.total));
        }
        if calls.total_bytes.saturating_add(bytes) > limits.total_bytes {
            return Err(Full::ServerBytes(limits.total_bytes));
        }
        let (running, held) = calls.by_client.get(owner).copied().unwrap_or((0, 0));
        if running >= limits.per_client {
            return Err(Full::Client(limits.per_client));
        }
        if held.saturating_add(bytes) > limits.per_client_bytes {
            return Err(Full::ClientBytes(limits.per_client_bytes));
        }
        calls
            .by_client
            .insert(owner.to_owned(), (running + 1, held + bytes));
        calls.total += 1;
        calls.total_bytes += bytes;
        Ok(Running {
            calls: Arc::clone(&self.0),
            owner: owner.to_owned(),
            bytes,
        })
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let mut calls = lock(&self.calls);
        calls.total = calls.total.saturating_sub(1);
        calls.total_bytes = calls.total_bytes.saturating_sub(self.bytes);
        if let Some((running, held)) = calls.by_client.get_mut(&self.owner) {
            *running = running.saturating_sub(1);
            *held = held.saturating_sub(self.bytes);
            if *running == 0 {
                calls.by_client.remove(&self.owner);
            }
        }
    }
}

/// What a call past its client's limit of calls running at once is told.
pub(super) fn too_many_in_flight(max: usize) -> String {
    format!(
        "this client has {max} calls running already, its limit \
         (ToolServer::with_max_calls_in_flight_per_client); the call did not run: try again \
         when one has finished"
    )
}

/// What a call carried on here came to ([`carry_on`]).
#[derive(Debug)]
pub(super) enum Carried {
    /// The call's outcome: no question waits.
    Done(ToolOutcome),
    /// The tool asked its user `question` (whatever that run returned). `resumed`
    /// is the task whose resume asked: the call goes on by resuming it again with the answer
    /// (its work goes on meanwhile, and it is kept in `working`). `None`: the call itself
    /// asked, and runs again from the start with the answer; a task it returned all the same
    /// is kept in `working` for the caller to take out and stop.
    Asked {
        question: Box<Question>,
        resumed: Option<Task>,
    },
}

/// The task a call works on while it polls it here, owned by the call until it hands it on:
/// taken out ([`Working::take`]) for the MCP task machinery, a parked round or a resume, or
/// stopped ([`Working::stop`]). Still here when it drops (the call's future dropped outright,
/// with no cancel through the request's token), its work is stopped: the tool's `cancel`,
/// spawned on the current tokio runtime (never awaited in `Drop`; outside a runtime it is
/// logged and not run).
pub(super) struct Working {
    task: Mutex<Option<Task>>,
    tool: Arc<dyn Tool>,
    arguments: Arc<str>,
    /// The call's id, and the tool's name and namespace: the context of a `cancel` run once
    /// the call is gone.
    call_id: String,
    name: String,
    namespace: Option<String>,
}

impl Working {
    /// Nothing worked on yet, for a call of `tool` (whose spec names it `name` in `namespace`)
    /// with `arguments` as `call_id`.
    pub(super) fn new(
        tool: Arc<dyn Tool>,
        (name, namespace): (&str, Option<&str>),
        arguments: &str,
        call_id: &str,
    ) -> Self {
        Self {
            task: Mutex::new(None),
            tool,
            arguments: Arc::from(arguments),
            call_id: call_id.to_owned(),
            name: name.to_owned(),
            namespace: namespace.map(str::to_owned),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Option<Task>> {
        self.task
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Sets the task the call works on (see [`carry_on`]); `None`: it has none, or handed it on.
    pub(super) fn keep(&self, task: Option<Task>) {
        *self.lock() = task;
    }

    /// Takes the task the call works on out: the caller now owns it (hands it on, or stops it).
    pub(super) fn take(&self) -> Option<Task> {
        self.lock().take()
    }

    /// Stops the work behind `task` ([`stop_work`], with `ctx`) on a task of its own, and waits
    /// for it: a call dropped meanwhile leaves the tool's `cancel` to finish. (Outside a tokio
    /// runtime, here.)
    pub(super) async fn stop(&self, task: Task, ctx: ToolContext) {
        let stopping = self.stopping(task, ctx);
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                // (A panic in it is caught and logged within; a runtime shutting down ends it.)
                let _ = runtime.spawn(stopping).await;
            }
            Err(_) => stopping.await,
        }
    }

    /// The tool's `cancel` of `task`, as a future of its own.
    fn stopping(&self, task: Task, ctx: ToolContext) -> impl Future<Output = ()> + Send + 'static {
        let tool = Arc::clone(&self.tool);
        let arguments = Arc::clone(&self.arguments);
        async move { stop_work(tool.as_ref(), task, RawArgs::new(&arguments), ctx).await }
    }

    /// The context of a `cancel` run once the call is gone: its id and the tool's name.
    fn bare_context(&self) -> ToolContext {
        ToolContext::builder(self.call_id.clone())
            .tool(self.name.clone(), self.namespace.clone())
            .build()
    }
}

impl Drop for Working {
    fn drop(&mut self) {
        let task = self
            .task
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let Some(task) = task else {
            return;
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                tracing::debug!(target: "llm_tools::mcp", call = self.call_id.as_str(), "a call was dropped while its task worked: the tool's cancel stops it");
                let stopping = self.stopping(task, self.bare_context());
                drop(runtime.spawn(stopping));
            }
            Err(_) => {
                tracing::warn!(target: "llm_tools::mcp", call = self.call_id.as_str(), "a call was dropped outside a tokio runtime while its task worked: its work was not stopped");
            }
        }
    }
}

/// Polls a working task to its end within one request: sleeps its poll interval, resumes it,
/// again. `outcome` is what the run in `ctx` returned: the call's (`resumed` is `None`), or
/// the resume of `resumed`. Each resume runs in a new context from `resume_ctx`. The task
/// being worked on is kept in `working` (cleared when the call ends here), so that a caller
/// that gives up on the call (its limit, the client's cancel) can stop its work, and a call
/// dropped outright stops it all the same ([`Working`]'s `Drop`). A run that
/// asks its user ends the loop with the question ([`Carried::Asked`]), whatever it returned;
/// a task that pauses for a user the client cannot ask ends the call with an error, and its
/// work is stopped.
pub(super) async fn carry_on(
    tool: &dyn Tool,
    mut outcome: ToolOutcome,
    mut resumed: Option<Task>,
    mut ctx: ToolContext,
    resume_ctx: &(dyn Fn() -> ToolContext + Sync),
    args: RawArgs<'_>,
    working: &Working,
) -> Carried {
    loop {
        if let Some(question) = ctx.take_pending_question() {
            // A task the call itself returned as it asked is kept too, until its caller stops
            // it: a call given up on meanwhile (its limit, the client's cancel) stops it then.
            let started = match (&resumed, outcome) {
                (None, ToolOutcome::Task(started)) => Some(started),
                _ => None,
            };
            working.keep(resumed.clone().or(started));
            return Carried::Asked {
                question: Box::new(question),
                resumed,
            };
        }
        let task = match outcome {
            ToolOutcome::Task(task) if task.status() == TaskStatus::Working => task,
            ToolOutcome::Task(task) => {
                working.keep(None);
                let message = format!(
                    "the tool paused waiting for the user ({}), which an MCP client cannot answer here",
                    task.status_message().unwrap_or("input required")
                );
                working.stop(task, ctx).await;
                return Carried::Done(ToolOutcome::error(message));
            }
            other => {
                working.keep(None);
                return Carried::Done(other);
            }
        };
        working.keep(Some(task.clone()));
        tokio::time::sleep(task.poll_interval().unwrap_or(Duration::from_secs(1))).await;
        ctx = resume_ctx();
        outcome = guarded(|| tool.resume(task.clone(), args, ctx.clone())).await;
        resumed = Some(task);
    }
}

/// Stops the work behind `task`, a call that ends unfinished: the tool's `cancel`, at most
/// [`STOP_WORK_LIMIT`] (a panic in it, making its future or running it, is caught and logged).
pub(super) async fn stop_work(tool: &dyn Tool, task: Task, args: RawArgs<'_>, ctx: ToolContext) {
    match tokio::time::timeout(STOP_WORK_LIMIT, cancel_guarded(tool, task, args, ctx)).await {
        Ok(Ok(())) => {}
        Ok(Err(Panicked)) => {
            tracing::error!(target: "llm_tools::mcp", tool = tool.spec().joined_name(), "a served tool panicked while cancelling");
        }
        Err(_) => {
            tracing::warn!(target: "llm_tools::mcp", tool = tool.spec().joined_name(), limit = ?STOP_WORK_LIMIT, "a served tool's cancel ran past its limit and was stopped");
        }
    }
}

/// A tool panicked.
pub(super) struct Panicked;

/// The tool's `cancel` of `task`, run to its end, or [`Panicked`] when it panicked: while it
/// made its future, or while the future ran.
pub(super) async fn cancel_guarded(
    tool: &dyn Tool,
    task: Task,
    args: RawArgs<'_>,
    ctx: ToolContext,
) -> Result<(), Panicked> {
    let future = std::panic::catch_unwind(AssertUnwindSafe(|| tool.cancel(task, args, ctx)))
        .map_err(|_| Panicked)?;
    AssertUnwindSafe(future)
        .catch_unwind()
        .await
        .map_err(|_| Panicked)
}

/// How long a tool's `cancel` may take when a call ends unfinished: 10 seconds.
pub(super) const STOP_WORK_LIMIT: Duration = Duration::from_secs(10);

/// The outcome of the tool's future that `start` makes (its `call` or `resume`), or an error
/// result when the tool panicked: while it made the future, or while the future ran.
pub(super) async fn guarded<'a>(
    start: impl FnOnce() -> llm_tools_core::BoxFuture<'a, ToolOutcome>,
) -> ToolOutcome {
    let Ok(future) = std::panic::catch_unwind(AssertUnwindSafe(start)) else {
        return ToolOutcome::error("the tool panicked");
    };
    match AssertUnwindSafe(future).catch_unwind().await {
        Ok(outcome) => outcome,
        Err(_) => ToolOutcome::error("the tool panicked"),
    }
}

#[cfg(test)]
pub(super) mod tests {
    use llm_tools_core::{BoxFuture, ToolSpec, tool};

    use super::*;

    /// A hand-written tool whose `call`, `resume` and `cancel` panic before they return a
    /// future (the synchronous part of a tool, as `#[tool]` never writes it).
    pub(in crate::server) struct Brittle(ToolSpec);

    impl Default for Brittle {
        fn default() -> Self {
            Self(ToolSpec::new("brittle", "Panics before it starts"))
        }
    }

    impl Tool for Brittle {
        fn spec(&self) -> &ToolSpec {
            &self.0
        }

        fn call<'a>(&'a self, args: RawArgs<'a>, _ctx: ToolContext) -> BoxFuture<'a, ToolOutcome> {
            panic!("call panicked on {}", args.as_str())
        }

        fn resume<'a>(
            &'a self,
            _task: Task,
            args: RawArgs<'a>,
            _ctx: ToolContext,
        ) -> BoxFuture<'a, ToolOutcome> {
            panic!("resume panicked on {}", args.as_str())
        }

        fn cancel<'a>(
            &'a self,
            _task: Task,
            args: RawArgs<'a>,
            _ctx: ToolContext,
        ) -> BoxFuture<'a, ()> {
            panic!("cancel panicked on {}", args.as_str())
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_resume_panicking_before_its_future_ends_a_carried_on_call_with_an_error() {
        let working = Working::new(
            Arc::new(Brittle::default()),
            ("brittle", None),
            "{}",
            "call-1",
        );
        let task = Task::working("running").with_poll_interval(Duration::from_secs(1));
        let outcome = carry_on(
            &Brittle::default(),
            ToolOutcome::Task(task),
            None,
            ToolContext::detached("call-1"),
            &|| ToolContext::detached("call-1"),
            RawArgs::new("{}"),
            &working,
        )
        .await;
        let Carried::Done(ToolOutcome::Error(error)) = outcome else {
            panic!("not an error: {outcome:?}");
        };
        assert_eq!(error.to_string(), "the tool panicked");
        assert!(working.take().is_none(), "no task left working");
    }

    /// A tool whose call asks its user and returns a working task all the same.
    struct AsksAndWorks(ToolSpec);

    impl Tool for AsksAndWorks {
        fn spec(&self) -> &ToolSpec {
            &self.0
        }

        fn call<'a>(&'a self, _args: RawArgs<'a>, ctx: ToolContext) -> BoxFuture<'a, ToolOutcome> {
            Box::pin(async move {
                let _ = ctx.ask("Sure?").await;
                ToolOutcome::Task(Task::working("started"))
            })
        }
    }

    #[tokio::test]
    async fn a_task_a_call_returns_as_it_asks_stays_tracked_until_its_caller_stops_it() {
        let tool = Arc::new(AsksAndWorks(ToolSpec::new("asks", "Asks and works")));
        let working = Working::new(
            Arc::clone(&tool) as Arc<dyn Tool>,
            ("tool", None),
            "{}",
            "call-1",
        );
        let ctx = ToolContext::builder("call-1").answers(Vec::new()).build();
        let outcome = tool.call(RawArgs::new("{}"), ctx.clone()).await;
        let carried = carry_on(
            tool.as_ref(),
            outcome,
            None,
            ctx,
            &|| ToolContext::detached("call-1"),
            RawArgs::new("{}"),
            &working,
        )
        .await;
        assert!(
            matches!(carried, Carried::Asked { resumed: None, .. }),
            "{carried:?}"
        );
        let kept = working.take();
        assert_eq!(
            kept.as_ref().and_then(Task::status_message),
            Some("started"),
            "a call given up on before its caller stops the task would leave its work running"
        );
    }

    /// A task whose `cancel` counts its runs and says when it ran.
    #[derive(Default)]
    struct Counted {
        cancelled: std::sync::atomic::AtomicU32,
        ran: tokio::sync::Notify,
    }

    #[tool]
    impl Counted {
        /// Works until cancelled
        async fn execute(&self) -> Task {
            Task::working("running")
        }

        async fn resume(&self, task: Task) -> ToolOutcome {
            ToolOutcome::Task(task)
        }

        async fn cancel(&self, _task: Task) {
            self.cancelled
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.ran.notify_one();
        }
    }

    #[tokio::test]
    async fn a_call_dropped_with_its_task_working_stops_its_work() {
        let counted = Arc::new(Counted::default());
        let working = Working::new(
            Arc::clone(&counted) as Arc<dyn Tool>,
            ("counted", None),
            "{}",
            "call-1",
        );
        working.keep(Some(Task::working("running")));
        drop(working);
        tokio::time::timeout(Duration::from_secs(30), counted.ran.notified())
            .await
            .expect("the dropped call's task was never cancelled");
        assert_eq!(
            counted.cancelled.load(std::sync::atomic::Ordering::Relaxed),
            1
        );
    }

    #[tokio::test]
    async fn a_task_the_call_handed_on_is_not_stopped_when_the_call_drops() {
        let counted = Arc::new(Counted::default());
        let working = Working::new(
            Arc::clone(&counted) as Arc<dyn Tool>,
            ("counted", None),
            "{}",
            "call-1",
        );
        working.keep(Some(Task::working("running")));
        let handed_on = working.take();
        drop(working);
        // A cancel spawned by the drop would run at the first of these yields (one thread).
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        assert!(handed_on.is_some());
        assert_eq!(
            counted.cancelled.load(std::sync::atomic::Ordering::Relaxed),
            0
        );
    }

    #[test]
    fn a_call_dropped_outside_a_runtime_with_its_task_working_does_not_panic() {
        let working = Working::new(
            Arc::new(Counted::default()),
            ("counted", None),
            "{}",
            "call-1",
        );
        working.keep(Some(Task::working("running")));
        drop(working);
    }

    #[tokio::test]
    async fn stopping_work_survives_a_cancel_that_panics_before_its_future() {
        let stopped = AssertUnwindSafe(stop_work(
            &Brittle::default(),
            Task::working("running"),
            RawArgs::new("{}"),
            ToolContext::detached("call-1"),
        ))
        .catch_unwind()
        .await;
        assert!(stopped.is_ok(), "the panic reached the caller");
    }

    /// Limits of `per_client` and `total` calls, bytes without bound.
    fn calls(per_client: usize, total: usize) -> CallLimits {
        CallLimits {
            per_client,
            total,
            per_client_bytes: usize::MAX,
            total_bytes: usize::MAX,
        }
    }

    #[test]
    fn a_client_gets_its_places_back_as_its_calls_end() {
        const ANY: usize = usize::MAX;
        let in_flight = InFlight::default();
        let first = in_flight.enter("alice", calls(2, ANY), 0).unwrap();
        let second = in_flight.enter("alice", calls(2, ANY), 0).unwrap();
        assert_eq!(
            in_flight.enter("alice", calls(2, ANY), 0).err(),
            Some(Full::Client(2)),
            "a third of alice's"
        );
        let other = in_flight.enter("bob", calls(2, ANY), 0).unwrap();
        drop(first);
        let third = in_flight.enter("alice", calls(2, ANY), 0).unwrap();
        drop((second, third, other));
        assert!(
            lock(&in_flight.0).by_client.is_empty(),
            "clients leave with their last call"
        );
        assert_eq!(lock(&in_flight.0).total, 0);
        assert!(in_flight.enter("alice", calls(0, ANY), 0).is_err());
        assert!(
            lock(&in_flight.0).by_client.is_empty(),
            "a refused client is not kept"
        );
    }

    #[test]
    fn the_server_s_limit_counts_every_client_s_calls() {
        let in_flight = InFlight::default();
        let alice = in_flight.enter("alice", calls(16, 2), 0).unwrap();
        let bob = in_flight.enter("bob", calls(16, 2), 0).unwrap();
        let refused = in_flight.enter("carol", calls(16, 2), 0).err();
        assert_eq!(refused, Some(Full::Server(2)));
        assert!(
            refused
                .unwrap()
                .message()
                .contains("with_max_calls_in_flight")
        );
        assert!(!lock(&in_flight.0).by_client.contains_key("carol"));
        drop(alice);
        let carol = in_flight.enter("carol", calls(16, 2), 0).unwrap();
        drop((bob, carol));
        assert_eq!(lock(&in_flight.0).total, 0);
    }

    /// The bytes of arguments held count per client and for the server, and come back with
    /// each call's end.
    #[test]
    fn arguments_held_are_bounded_per_client_and_for_the_server() {
        let limits = CallLimits {
            per_client: 16,
            total: 256,
            per_client_bytes: 100,
            total_bytes: 150,
        };
        let in_flight = InFlight::default();
        let alice = in_flight.enter("alice", limits, 60).unwrap();
        assert_eq!(
            in_flight.enter("alice", limits, 41).err(),
            Some(Full::ClientBytes(100))
        );
        let small = in_flight.enter("alice", limits, 40).unwrap();
        assert_eq!(
            in_flight.enter("bob", limits, 51).err(),
            Some(Full::ServerBytes(150))
        );
        assert!(
            Full::ServerBytes(150)
                .message()
                .contains("with_max_argument_bytes_in_flight")
        );
        drop(alice);
        let bob = in_flight.enter("bob", limits, 100).unwrap();
        drop((small, bob));
        let calls = lock(&in_flight.0);
        assert_eq!((calls.total, calls.total_bytes), (0, 0));
        assert!(calls.by_client.is_empty());
    }
}
