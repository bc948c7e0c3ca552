//! Calls that clients run as MCP tasks (the 2026-07-28 tasks extension): `tasks/get` resumes
//! the tool's working [`Task`], `tasks/update` answers its question, `tasks/cancel` runs its
//! `cancel`.
//!
//! A task belongs to the client that created it (its authorization principal over HTTP, its
//! connection over stdio): any other client asking about it is told there is no such task.
//! Its id holds 128 random bits, so it cannot be guessed either. A finished task is kept for
//! the server's task TTL after it finished, an unfinished one for the TTL after the client last
//! asked about it; then it is removed (an unfinished one is cancelled first). A resume runs on
//! its own, at most the call's `max_run_time`, and no lock is held while it runs: a second
//! `tasks/get` sees the task working, and `tasks/cancel` stops the resume at once. A
//! `tasks/get` whose future is dropped (its client gone) leaves its resume to run to its end,
//! its outcome recorded for the next poll (a task that ends there unfinished has its work
//! stopped); the task stays the client's, cancelled at the TTL if no one asks again. The
//! tool's `cancel` runs on a task of its own too (`tasks/cancel`, a task past its TTL, a
//! resume that ends the task unfinished): a request dropped while it waits never cuts it short.
//!
//! A 2026-07-28 client without the extension has its tasks polled within its call; when a
//! resume asks its user a question, the task is kept here, parked, until the call's next round
//! (the client's answer) takes it back and resumes it. A parked task counts as the client's and
//! is cancelled at the TTL like any other.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::FutureExt as _;
use tokio::time::Instant;

use llm_tools_core::{Answer, Question, RawArgs, Task, TaskStatus, Tool, ToolContext, ToolOutcome};
use rmcp::ErrorData;
use rmcp::model::{
    CreateTaskResult, DetailedTask, ElicitResult, GetTaskResult, InputResponses, TaskPayload,
};

use super::call::{MAX_QUESTIONS, Panicked, Running, cancel_guarded, guarded};
use super::results::{completed, error_result, millis, result_of, rfc3339_now, wire_task};
use super::state::random_id;
use crate::elicitation::{answer_of, question_key, question_requests};

/// How long a task is kept after it finished, or, unfinished, after its client last asked
/// about it, unless [`ToolServer::with_task_ttl`](crate::ToolServer::with_task_ttl) says
/// otherwise: an hour.
pub const DEFAULT_TASK_TTL: Duration = Duration::from_secs(3_600);

/// How many tasks a server keeps at once (every client's, finished or not) unless
/// [`ToolServer::with_max_tasks`](crate::ToolServer::with_max_tasks) says otherwise; a call
/// that would be one more is refused.
pub const DEFAULT_MAX_TASKS: usize = 1_000;

/// How many of those tasks one client may have at once (its authorization principal, else its
/// session or connection) unless
/// [`ToolServer::with_max_tasks_per_client`](crate::ToolServer::with_max_tasks_per_client)
/// says otherwise: a quarter of the default total, so one client cannot take every place and
/// refuse the others. (Without authorization, every 2026-07-28 HTTP client is one client.)
pub const DEFAULT_MAX_TASKS_PER_CLIENT: usize = 250;

/// How many bytes the server's tasks keep at once, every client's: what their clients sent
/// (a call's arguments, the answers to its questions) while a task is unfinished, and a
/// finished task's result (as JSON) until its TTL ends, unless
/// [`ToolServer::with_max_task_bytes`](crate::ToolServer::with_max_task_bytes) says otherwise:
/// 256 MiB. A call whose arguments would pass it is refused (a tool error naming the limit,
/// nothing kept), as is an answer (`tasks/update`), and a result is replaced by an error result
/// naming the limit; a task gives its arguments' bytes back when it finishes and the rest when
/// it is cancelled or passes its TTL.
pub const DEFAULT_MAX_TASK_BYTES: usize = 256 * 1024 * 1024;

/// How many of those bytes one client's tasks keep at once (its authorization principal, else
/// its session or connection) unless
/// [`ToolServer::with_max_task_bytes_per_client`](crate::ToolServer::with_max_task_bytes_per_client)
/// says otherwise: 64 MiB, a quarter of the default total, so one client cannot take every
/// byte and refuse the others.
pub const DEFAULT_MAX_TASK_BYTES_PER_CLIENT: usize = 64 * 1024 * 1024;

/// The calls running as tasks, by task id, and the bytes they keep of what their clients
/// sent; shared by every session of a server.
#[derive(Default)]
pub(super) struct Tasks {
    /// (Shared with each task's TTL timer, which holds it weakly.)
    entries: Arc<Entries>,
    held: Arc<Held>,
}

/// The tasks by id.
type Entries = Mutex<HashMap<String, Arc<Entry>>>;

/// Locks the tasks by id.
fn lock_entries(entries: &Entries) -> MutexGuard<'_, HashMap<String, Arc<Entry>>> {
    entries
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// How long tasks are kept, and how many at once: the server's settings.
#[derive(Clone, Copy, Debug)]
pub(super) struct TaskLimits {
    /// How long a task is kept after it finished (or its client last asked about it).
    pub(super) ttl: Duration,
    /// How many tasks are kept at once.
    pub(super) max: usize,
    /// How many of them one client may have.
    pub(super) per_client: usize,
    /// How many bytes of what their clients sent the tasks keep at once.
    pub(super) max_bytes: usize,
    /// How many of those bytes one client's tasks keep.
    pub(super) per_client_bytes: usize,
}

impl Default for TaskLimits {
    fn default() -> Self {
        Self {
            ttl: DEFAULT_TASK_TTL,
            max: DEFAULT_MAX_TASKS,
            per_client: DEFAULT_MAX_TASKS_PER_CLIENT,
            max_bytes: DEFAULT_MAX_TASK_BYTES,
            per_client_bytes: DEFAULT_MAX_TASK_BYTES_PER_CLIENT,
        }
    }
}

impl Tasks {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<Entry>>> {
        lock_entries(&self.entries)
    }
}

/// The bytes of what their clients sent that tasks keep: by client (a client leaves the map
/// with its last byte), and in all.
#[derive(Default)]
struct Held(Mutex<HeldBytes>);

#[derive(Default)]
struct HeldBytes {
    by_client: HashMap<String, usize>,
    total: usize,
}

impl Held {
    fn lock(&self) -> MutexGuard<'_, HeldBytes> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Counts `bytes` more kept for `owner`, unless that passes its client's or the server's
    /// limit: then nothing is counted, and the limit passed (for the client).
    fn take(&self, limits: TaskLimits, owner: &str, bytes: usize) -> Result<(), String> {
        let mut held = self.lock();
        let theirs = held.by_client.get(owner).copied().unwrap_or(0);
        let per_client = limits.per_client_bytes;
        if theirs.saturating_add(bytes) > per_client {
            return Err(format!(
                "this client's tasks would keep more than {per_client} bytes of its arguments, \
                 answers and results, its limit (ToolServer::with_max_task_bytes_per_client)"
            ));
        }
        let max = limits.max_bytes;
        if held.total.saturating_add(bytes) > max {
            return Err(format!(
                "the server's tasks would keep more than {max} bytes of their clients' \
                 arguments, answers and results, its limit (ToolServer::with_max_task_bytes)"
            ));
        }
        if bytes > 0 {
            held.by_client.insert(owner.to_owned(), theirs + bytes);
            held.total += bytes;
        }
        Ok(())
    }

    /// Gives back `bytes` that `owner`'s tasks kept.
    fn give_back(&self, owner: &str, bytes: usize) {
        if bytes == 0 {
            return;
        }
        let mut held = self.lock();
        held.total = held.total.saturating_sub(bytes);
        if let Some(theirs) = held.by_client.get_mut(owner) {
            *theirs = theirs.saturating_sub(bytes);
            if *theirs == 0 {
                held.by_client.remove(owner);
            }
        }
    }
}

/// What an unfinished task keeps of what its client sent, counted in [`Held`]: given back
/// when the task finishes ([`Kept::clear`]) or is dropped.
struct Kept {
    held: Arc<Held>,
    owner: String,
    /// The bytes counted for it.
    bytes: usize,
    /// The call's arguments, as the client sent them.
    arguments: Arc<str>,
    /// The client's answers to the task's questions, in order (`tasks/update`).
    answers: Vec<Answer>,
}

impl Kept {
    /// Keeps `answer`, `bytes` long as the client sent it, unless that passes a limit.
    fn answer(&mut self, limits: TaskLimits, answer: Answer, bytes: usize) -> Result<(), String> {
        self.held.take(limits, &self.owner, bytes)?;
        self.bytes += bytes;
        self.answers.push(answer);
        Ok(())
    }

    /// Counts a finished task's result, `bytes` long as JSON, which it keeps until its TTL
    /// ends, unless that passes a limit.
    fn result(&mut self, limits: TaskLimits, bytes: usize) -> Result<(), String> {
        self.held.take(limits, &self.owner, bytes)?;
        self.bytes += bytes;
        Ok(())
    }

    /// Lets go of the arguments and answers (a finished task needs neither) and gives their
    /// bytes back.
    fn clear(&mut self) {
        self.arguments = Arc::from("");
        self.answers = Vec::new();
        self.held
            .give_back(&self.owner, std::mem::take(&mut self.bytes));
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        self.held.give_back(&self.owner, self.bytes);
    }
}

/// One task: what it runs, for whom, and where it stands.
struct Entry {
    id: String,
    /// The client that created it.
    owner: String,
    tool: Arc<dyn Tool>,
    /// The id of the call that created it, given to every resume.
    call_id: String,
    /// The longest one resume (or the tool's `cancel`) may run.
    limit: Duration,
    created: Instant,
    created_at: String,
    state: Mutex<EntryState>,
    /// The timer that removes the task once its TTL passes ([`Tasks::arm`]), stopped when the
    /// task goes.
    timer: Mutex<Option<tokio::task::AbortHandle>>,
}

impl Drop for Entry {
    fn drop(&mut self) {
        let timer = self
            .timer
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(timer) = timer.take() {
            timer.abort();
        }
    }
}

struct EntryState {
    phase: Phase,
    /// The arguments and answers, while the task is unfinished.
    kept: Kept,
    updated_at: String,
    /// When the client last asked about the task.
    touched: Instant,
    /// When the task finished.
    finished: Option<Instant>,
}

enum Phase {
    /// The tool's task, resumed at the next poll.
    Working(Task),
    /// A resume runs (on its own task, which `abort` stops).
    Resuming {
        task: Task,
        abort: tokio::task::AbortHandle,
    },
    /// The tool asked the user: the task waits for `tasks/update` to answer `question`.
    Asking { task: Task, question: Question },
    /// The tool asked the user while resuming the task for a client without the tasks
    /// extension: the call's next round takes the task ([`Tasks::take_parked`]) and resumes
    /// it with the answer.
    Parked(Task),
    /// Done: the payload every later poll gets.
    Finished(TaskPayload),
}

impl Entry {
    fn lock(&self) -> MutexGuard<'_, EntryState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A context for the tool's `resume` or `cancel`; named after the tool unless its `spec`
    /// panics (so that a tool whose spec panics still has its work stopped).
    fn context(&self, answers: Vec<Answer>) -> ToolContext {
        let builder = ToolContext::builder(self.call_id.clone());
        let named = std::panic::catch_unwind(AssertUnwindSafe(|| {
            let spec = self.tool.spec();
            (
                spec.name().to_owned(),
                spec.namespace().map(|n| n.name().to_owned()),
            )
        }));
        let builder = match named {
            Ok((name, namespace)) => builder.tool(name, namespace),
            Err(_) => builder,
        };
        builder.answers(answers).build()
    }

    /// When the task may be removed (`None` while a resume runs).
    fn expiry(state: &EntryState, ttl: Duration) -> Option<Instant> {
        match (&state.phase, state.finished) {
            (Phase::Resuming { .. }, _) => None,
            (_, Some(finished)) => finished.checked_add(ttl),
            (_, None) => state.touched.checked_add(ttl),
        }
    }

    /// Takes what a resume gave, unless the task was cancelled meanwhile. Returns the task
    /// whose work the tool must stop, with the call's arguments, when the task ends here
    /// unfinished: its check ran past the limit, it asked more questions than a call may, or
    /// it paused for a user the client cannot ask.
    fn settle(
        &self,
        limits: TaskLimits,
        outcome: Result<ToolOutcome, tokio::time::error::Elapsed>,
        ctx: &ToolContext,
    ) -> Option<(Task, Arc<str>)> {
        let mut state = self.lock();
        let Phase::Resuming { task, .. } = &state.phase else {
            return None;
        };
        let task = task.clone();
        let mut abandoned = None;
        let phase = match outcome {
            Err(_) => {
                abandoned = Some(task);
                Phase::Finished(completed(error_result(format!(
                    "the task's check ran longer than its limit of {:?} and was stopped",
                    self.limit
                ))))
            }
            // The tool asked the user: the task waits for the client's answer, unless it has
            // asked as many questions as a call may (each answer is kept for every resume).
            Ok(outcome) if let Some(question) = ctx.take_pending_question() => {
                if state.kept.answers.len() >= MAX_QUESTIONS {
                    abandoned = Some(match outcome {
                        ToolOutcome::Task(paused) => paused,
                        _ => task,
                    });
                    Phase::Finished(completed(error_result(format!(
                        "the tool asked more than {MAX_QUESTIONS} questions"
                    ))))
                } else {
                    Phase::Asking { task, question }
                }
            }
            Ok(ToolOutcome::Task(task)) if task.status() == TaskStatus::Working => {
                Phase::Working(task)
            }
            Ok(ToolOutcome::Task(paused)) => {
                let message = format!(
                    "the tool paused waiting for the user ({}), which an MCP client cannot answer here",
                    paused.status_message().unwrap_or("input required")
                );
                abandoned = Some(paused);
                Phase::Finished(completed(error_result(message)))
            }
            // (The only place the tool's spec is needed: a task whose work goes on is never
            // lost to a spec that panics.)
            Ok(other) => Phase::Finished(completed(result_of(
                other,
                self.tool.spec().joined_name(),
                &self.call_id,
            ))),
        };
        let arguments = Arc::clone(&state.kept.arguments);
        self.enter(&mut state, limits, phase);
        abandoned.map(|task| (task, arguments))
    }

    /// Moves the task to `phase`. A finished task lets go of what its client sent and keeps
    /// its result instead, counted (past the limits, an error result naming them in its place).
    fn enter(&self, state: &mut EntryState, limits: TaskLimits, mut phase: Phase) {
        let now = Instant::now();
        if let Phase::Finished(payload) = &phase {
            state.finished = Some(now);
            state.kept.clear();
            // The result is kept until the TTL ends: it counts as what the client sent did.
            let bytes = match payload {
                TaskPayload::Completed { result } => json_len(result),
                TaskPayload::Failed { error } => json_len(error),
                _ => 0,
            };
            if let Err(limit) = state.kept.result(limits, bytes) {
                tracing::warn!(target: "llm_tools::mcp", task = self.id.as_str(), bytes, "a task's result is not kept: past the limits on what tasks keep");
                phase = Phase::Finished(completed(error_result(format!(
                    "the task's result ({bytes} bytes) is not kept: {limit}"
                ))));
            }
        }
        state.phase = phase;
        state.updated_at = rfc3339_now();
        state.touched = now;
    }

    /// A resume that panicked outside the tool's own call (while its outcome was recorded, or
    /// its work stopped): a task still resuming finishes with the error result a panicking
    /// tool gets, so it is never left resuming (unanswered, and kept for ever). Returns the
    /// task it resumed, with the call's arguments, when it finished it here: what became of
    /// its work is unknown, so the tool must stop it.
    fn panicked(&self, limits: TaskLimits) -> Option<(Task, Arc<str>)> {
        let mut state = self.lock();
        let Phase::Resuming { task, .. } = &state.phase else {
            return None;
        };
        let task = task.clone();
        tracing::error!(target: "llm_tools::mcp", task = self.id.as_str(), "a task's resume panicked");
        let arguments = Arc::clone(&state.kept.arguments);
        let failed = Phase::Finished(completed(error_result("the tool panicked")));
        self.enter(&mut state, limits, failed);
        Some((task, arguments))
    }

    /// The task as `tasks/get` reports it.
    fn snapshot(&self, ttl: Duration) -> GetTaskResult {
        let state = self.lock();
        let mut wire = match &state.phase {
            Phase::Working(task)
            | Phase::Resuming { task, .. }
            | Phase::Asking { task, .. }
            | Phase::Parked(task) => wire_task(&self.id, &self.created_at, &state.updated_at, task),
            Phase::Finished(payload) => rmcp::model::Task::new(
                &self.id,
                payload.status(),
                self.created_at.clone(),
                state.updated_at.clone(),
            ),
        };
        // The TTL counts from creation on the wire: how long until the task may go.
        let since = state.finished.unwrap_or(state.touched);
        wire.ttl_ms = Some(millis(
            since
                .saturating_duration_since(self.created)
                .saturating_add(ttl),
        ));
        let payload = match &state.phase {
            Phase::Working(_) | Phase::Resuming { .. } | Phase::Parked(_) => TaskPayload::Working,
            Phase::Asking { question, .. } => TaskPayload::InputRequired {
                input_requests: question_requests(question, state.kept.answers.len()),
            },
            Phase::Finished(payload) => payload.clone(),
        };
        GetTaskResult::new(DetailedTask::new(wire, payload))
    }
}

/// Stops an unfinished task's work: the tool's `cancel` with the call's `arguments`, at most
/// `limit`.
async fn cancel_work(entry: &Entry, task: Task, arguments: Arc<str>) {
    let ctx = entry.context(Vec::new());
    let cancelled = cancel_guarded(entry.tool.as_ref(), task, RawArgs::new(&arguments), ctx);
    match tokio::time::timeout(entry.limit, cancelled).await {
        Ok(Ok(())) => {}
        Ok(Err(Panicked)) => {
            tracing::error!(target: "llm_tools::mcp", task = entry.id.as_str(), "a served tool panicked while cancelling");
        }
        Err(_) => {
            tracing::warn!(target: "llm_tools::mcp", task = entry.id.as_str(), limit = ?entry.limit, "a served tool's cancel ran past its limit and was stopped");
        }
    }
}

/// The error every request about a task its client may not see gets, whether the task
/// exists or not.
fn not_found(id: &str) -> ErrorData {
    // The client's id, shown as far as an id of this server's could be long.
    let id = crate::error::cut(id, MAX_SHOWN_TASK_ID);
    ErrorData::invalid_params(format!("no task `{id}` on this server"), None)
}

/// The most of a client's task id an error shows (this server's ids are 37 bytes).
const MAX_SHOWN_TASK_ID: usize = 64;

/// The keys of a client's answers, as an error shows them: the first 4, each cut to 16 bytes
/// (this server's keys are 3), and how many more.
fn shown_keys(responses: &InputResponses) -> String {
    const SHOWN: usize = 4;
    let mut shown: Vec<String> = responses
        .keys()
        .take(SHOWN)
        .map(|key| format!("`{}`", crate::error::cut(key, 16)))
        .collect();
    if responses.len() > SHOWN {
        shown.push(format!("{} more", responses.len() - SHOWN));
    }
    shown.join(", ")
}

impl Tasks {
    /// Removes the tasks past their TTL; an unfinished one is cancelled (on its own).
    fn sweep(&self, ttl: Duration) {
        sweep(&self.entries, ttl);
    }

    /// Starts the timer that removes `entry` once its TTL passes (see [`sweep`]), so that a
    /// task its client abandons is cancelled even when no other task operation runs. The
    /// timer holds the tasks and the task weakly: it keeps neither alive, and ends with the
    /// task. (Outside a runtime, none: the next task operation sweeps.)
    fn arm(&self, entry: &Arc<Entry>, ttl: Duration) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let entries = Arc::downgrade(&self.entries);
        let watched = Arc::downgrade(entry);
        let timer = runtime.spawn(async move {
            loop {
                let at = {
                    let Some(entry) = watched.upgrade() else {
                        return;
                    };
                    let state = entry.lock();
                    // While a resume runs the task does not expire: looked at again a TTL on.
                    Entry::expiry(&state, ttl).or_else(|| Instant::now().checked_add(ttl))
                };
                let Some(at) = at else {
                    return;
                };
                tokio::time::sleep_until(at).await;
                let Some(entries) = entries.upgrade() else {
                    return;
                };
                sweep(&entries, ttl);
                let kept = lock_entries(&entries)
                    .values()
                    .any(|kept| std::ptr::eq(Arc::as_ptr(kept), watched.as_ptr()));
                if !kept {
                    return;
                }
            }
        });
        *entry
            .timer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(timer.abort_handle());
    }
}

/// Removes the tasks past their TTL; an unfinished one is cancelled (on its own).
fn sweep(entries: &Entries, ttl: Duration) {
    let now = Instant::now();
    let expired: Vec<Arc<Entry>> = {
        let mut tasks = lock_entries(entries);
        let ids: Vec<String> = tasks
            .iter()
            .filter(|(_, entry)| Entry::expiry(&entry.lock(), ttl).is_some_and(|at| at <= now))
            .map(|(id, _)| id.clone())
            .collect();
        ids.iter().filter_map(|id| tasks.remove(id)).collect()
    };
    end(expired, "a task passed its TTL and was removed");
}

/// Ends tasks taken out of the tasks: an unfinished one's work is cancelled (on its own task,
/// outside a runtime not at all: the process is ending).
fn end(removed: Vec<Arc<Entry>>, why: &'static str) {
    let runtime = tokio::runtime::Handle::try_current().ok();
    for entry in removed {
        let unfinished = {
            let mut state = entry.lock();
            let task = match &state.phase {
                Phase::Working(task) | Phase::Asking { task, .. } | Phase::Parked(task) => {
                    Some(task.clone())
                }
                _ => None,
            };
            let arguments = Arc::clone(&state.kept.arguments);
            state.kept.clear();
            task.map(|task| (task, arguments))
        };
        tracing::debug!(target: "llm_tools::mcp", task = entry.id.as_str(), "{why}");
        if let (Some((task, arguments)), Some(runtime)) = (unfinished, &runtime) {
            runtime.spawn(async move { cancel_work(&entry, task, arguments).await });
        }
    }
}

impl Tasks {
    /// Ends every task of `owner`, a client that is gone for good (the connection it was
    /// ended): no request can reach its tasks again, so they are removed at once, and the
    /// work of an unfinished one is cancelled, as a task past its TTL is.
    pub(super) fn end_owner(&self, owner: &str) {
        let removed: Vec<Arc<Entry>> = {
            let mut tasks = lock_entries(&self.entries);
            let ids: Vec<String> = tasks
                .iter()
                .filter(|(_, entry)| entry.owner == owner)
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter().filter_map(|id| tasks.remove(id)).collect()
        };
        end(removed, "a task's connection ended; the task was removed");
    }

    /// Registers a call `owner` runs as a task; its id, or why not (for the client): past the
    /// limits on tasks, or on the bytes of arguments they keep, nothing is kept.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn start(
        &self,
        limits: TaskLimits,
        owner: &str,
        tool: Arc<dyn Tool>,
        arguments: &str,
        call_id: &str,
        limit: Duration,
        task: Task,
    ) -> Result<CreateTaskResult, String> {
        let entry = self.register(
            limits,
            owner,
            tool,
            arguments,
            call_id,
            limit,
            Phase::Working(task.clone()),
            "the call did not start",
        )?;
        let created = &entry.created_at;
        let mut wire = wire_task(&entry.id, created, created, &task);
        wire.ttl_ms = Some(millis(limits.ttl));
        Ok(CreateTaskResult::new(wire))
    }

    /// Keeps `task`, whose resume asked `owner`'s user a question, for a client without the
    /// tasks extension: the call's next round takes it back ([`Self::take_parked`]) and
    /// resumes it with the answer. It counts among the client's tasks and their bytes, and,
    /// never taken back, is cancelled once its TTL passes. Its id, or why not (for the client).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn park(
        &self,
        limits: TaskLimits,
        owner: &str,
        tool: Arc<dyn Tool>,
        arguments: &str,
        call_id: &str,
        limit: Duration,
        task: Task,
    ) -> Result<String, String> {
        let entry = self.register(
            limits,
            owner,
            tool,
            arguments,
            call_id,
            limit,
            Phase::Parked(task),
            "its task was stopped instead of waiting for the answer",
        )?;
        Ok(entry.id.clone())
    }

    /// The task `owner` parked as `id` ([`Self::park`]), no longer kept; `None` when there is
    /// none (cancelled, or past its TTL and cancelled).
    pub(super) fn take_parked(&self, ttl: Duration, owner: &str, id: &str) -> Option<Task> {
        self.sweep(ttl);
        let mut tasks = self.lock();
        let parked = match &tasks.get(id)?.lock().phase {
            Phase::Parked(task) => task.clone(),
            _ => return None,
        };
        if tasks.get(id)?.owner != owner {
            return None;
        }
        tasks.remove(id);
        Some(parked)
    }

    /// Registers a task of `owner` in `phase`, or says why not (see [`Self::start`]), ending
    /// with what became of the call (`refused`).
    #[allow(clippy::too_many_arguments)]
    fn register(
        &self,
        limits: TaskLimits,
        owner: &str,
        tool: Arc<dyn Tool>,
        arguments: &str,
        call_id: &str,
        limit: Duration,
        phase: Phase,
        refused: &str,
    ) -> Result<Arc<Entry>, String> {
        self.sweep(limits.ttl);
        let id = random_id("task")?;
        let now = rfc3339_now();
        let max = limits.max;
        let mut tasks = self.lock();
        if tasks.len() >= max {
            return Err(format!(
                "the server keeps {max} tasks already, its limit (ToolServer::with_max_tasks); \
                 {refused}: try again when tasks have finished"
            ));
        }
        let per_client = limits.per_client;
        // (At most `max` tasks to count.)
        if tasks.values().filter(|t| t.owner == owner).count() >= per_client {
            return Err(format!(
                "this client has {per_client} tasks already, its limit \
                 (ToolServer::with_max_tasks_per_client); {refused}: try again when its tasks \
                 have finished"
            ));
        }
        let bytes = arguments.len();
        if let Err(limit) = self.held.take(limits, owner, bytes) {
            return Err(format!(
                "{limit}; the call's {bytes} bytes of arguments are not kept and {refused}: \
                 try again when this client's tasks have finished"
            ));
        }
        let kept = Kept {
            held: Arc::clone(&self.held),
            owner: owner.to_owned(),
            bytes,
            arguments: Arc::from(arguments),
            answers: Vec::new(),
        };
        let entry = Arc::new(Entry {
            id: id.clone(),
            owner: owner.to_owned(),
            tool,
            call_id: call_id.to_owned(),
            limit,
            created: Instant::now(),
            created_at: now.clone(),
            state: Mutex::new(EntryState {
                phase,
                kept,
                updated_at: now,
                touched: Instant::now(),
                finished: None,
            }),
            timer: Mutex::new(None),
        });
        tasks.insert(id, Arc::clone(&entry));
        drop(tasks);
        self.arm(&entry, limits.ttl);
        Ok(entry)
    }

    /// The task `id`, if `owner` created it.
    fn task(&self, ttl: Duration, owner: &str, id: &str) -> Result<Arc<Entry>, ErrorData> {
        self.sweep(ttl);
        let entry = self.lock().get(id).cloned().ok_or_else(|| not_found(id))?;
        if entry.owner != owner {
            tracing::warn!(target: "llm_tools::mcp", "a client asked about another client's task");
            return Err(not_found(id));
        }
        entry.lock().touched = Instant::now();
        Ok(entry)
    }

    /// `tasks/get`: a working task is resumed once (the tool's `resume`, on its own task, at
    /// most the call's limit), and what it gives is the task's state: still working, asking,
    /// or finished with the call's result. While a resume runs, other polls see it working.
    /// A resume takes a place among its client's calls running (`running`); a client with none
    /// free gets its task as it stands, still working, and polls again.
    pub(super) async fn poll(
        &self,
        limits: TaskLimits,
        owner: &str,
        id: &str,
        running: impl FnOnce() -> Option<Running>,
    ) -> Result<GetTaskResult, ErrorData> {
        let entry = self.task(limits.ttl, owner, id)?;
        let resume = {
            let mut state = entry.lock();
            let place = match &state.phase {
                Phase::Working(_) => running(),
                _ => None,
            };
            match (&state.phase, place) {
                (Phase::Working(_), None) => {
                    tracing::debug!(target: "llm_tools::mcp", task = id, "a task was not resumed: its client has its maximum of calls running");
                    None
                }
                (Phase::Working(task), Some(place)) => {
                    let task = task.clone();
                    let ctx = entry.context(state.kept.answers.clone());
                    let arguments = Arc::clone(&state.kept.arguments);
                    let running = Arc::clone(&entry);
                    let resumed = task.clone();
                    let handle = tokio::spawn(async move {
                        // Held while the resume runs, whether or not its poll still waits.
                        let _place = place;
                        let resumed = AssertUnwindSafe(async {
                            let resume = guarded(|| {
                                running
                                    .tool
                                    .resume(resumed, RawArgs::new(&arguments), ctx.clone())
                            });
                            let outcome = tokio::time::timeout(running.limit, resume).await;
                            if let Some((task, arguments)) = running.settle(limits, outcome, &ctx) {
                                cancel_work(&running, task, arguments).await;
                            }
                        })
                        .catch_unwind()
                        .await;
                        if resumed.is_err()
                            && let Some((task, arguments)) = running.panicked(limits)
                        {
                            // (Guarded: the tool's cancel is, and so is the context's spec.)
                            cancel_work(&running, task, arguments).await;
                        }
                    });
                    state.phase = Phase::Resuming {
                        task,
                        abort: handle.abort_handle(),
                    };
                    Some(handle)
                }
                _ => None,
            }
        };
        if let Some(handle) = resume {
            // Cancelled (`tasks/cancel` aborts it) or done: the state says which.
            let _ = handle.await;
        }
        Ok(entry.snapshot(limits.ttl))
    }

    /// `tasks/update`: the client's answer to the question the task waits on, under that
    /// question's key (`q00`, `q01`, …); the next poll resumes the tool with it. Answers under
    /// other keys (a retried answer to an earlier question) are refused, as is an answer whose
    /// bytes would pass the limits on what tasks keep, and the task still waits. No answer at
    /// all declines.
    pub(super) async fn update(
        &self,
        limits: TaskLimits,
        owner: &str,
        id: &str,
        responses: &InputResponses,
    ) -> Result<(), ErrorData> {
        let entry = self.task(limits.ttl, owner, id)?;
        let mut state = entry.lock();
        let Phase::Asking { task, .. } = &state.phase else {
            return Err(ErrorData::invalid_params(
                format!("task `{id}` asks nothing"),
                None,
            ));
        };
        let task = task.clone();
        // Only the answer keyed to the question asked now answers it: a retried or late
        // answer to an earlier question (its key) must not answer one the user never saw.
        let key = question_key(state.kept.answers.len());
        let sent = responses.get(&key);
        if sent.is_none() && !responses.is_empty() {
            return Err(ErrorData::invalid_params(
                format!(
                    "task `{}` waits for the answer `{key}`; the answers sent ({}) are to other \
                     questions, and none was taken",
                    crate::error::cut(id, MAX_SHOWN_TASK_ID),
                    shown_keys(responses)
                ),
                None,
            ));
        }
        let answer = sent
            .and_then(|v| serde_json::from_value::<ElicitResult>(v.clone()).ok())
            .map_or_else(|| Answer::decline(None), |r| answer_of(&r));
        let bytes = sent.map_or(0, json_len);
        if let Err(limit) = state.kept.answer(limits, answer, bytes) {
            return Err(ErrorData::invalid_params(
                format!("{limit}; the answer's {bytes} bytes were not taken"),
                None,
            ));
        }
        state.phase = Phase::Working(task);
        state.updated_at = rfc3339_now();
        Ok(())
    }

    /// `tasks/cancel`: the task is cancelled at once (a resume running is stopped), then the
    /// tool's `cancel` stops the work, at most the call's limit, on a task of its own: a
    /// request dropped meanwhile (its client gone) does not cut it short.
    pub(super) async fn cancel(
        &self,
        limits: TaskLimits,
        owner: &str,
        id: &str,
    ) -> Result<(), ErrorData> {
        let entry = self.task(limits.ttl, owner, id)?;
        let unfinished = {
            let mut state = entry.lock();
            let task = match &state.phase {
                Phase::Working(task) | Phase::Asking { task, .. } | Phase::Parked(task) => {
                    Some(task.clone())
                }
                Phase::Resuming { task, abort } => {
                    abort.abort();
                    Some(task.clone())
                }
                Phase::Finished(_) => None,
            };
            let arguments = Arc::clone(&state.kept.arguments);
            if task.is_some() {
                state.phase = Phase::Finished(TaskPayload::Cancelled);
                state.finished = Some(Instant::now());
                state.updated_at = rfc3339_now();
                state.kept.clear();
            }
            task.map(|task| (task, arguments))
        };
        if let Some((task, arguments)) = unfinished {
            let stopping = tokio::spawn(async move { cancel_work(&entry, task, arguments).await });
            // (A panic in the tool's cancel is caught and logged within.)
            let _ = stopping.await;
        }
        Ok(())
    }
}

/// The length of `value` as JSON text, counted without writing it out.
fn json_len<T: serde::Serialize + ?Sized>(value: &T) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 = self.0.saturating_add(buf.len());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing to a counter cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

#[cfg(test)]
mod tests {
    use std::panic::AssertUnwindSafe;
    use std::sync::atomic::{AtomicU32, Ordering};

    use futures::FutureExt as _;
    use llm_tools_core::{ToolOutput, tool};
    use rmcp::model::TaskStatus as WireStatus;

    use super::super::call::tests::Brittle;
    use super::*;

    /// Finishes on its first check; counts cancellations.
    #[derive(Default)]
    pub(super) struct Quick {
        cancelled: AtomicU32,
    }

    #[tool]
    impl Quick {
        /// Runs quickly
        async fn execute(&self) -> Task {
            Task::working("running")
        }

        async fn resume(&self, _task: Task) -> ToolOutcome {
            ToolOutcome::Output(ToolOutput::text("done"))
        }

        async fn cancel(&self, _task: Task) {
            self.cancelled.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn start(
        tasks: &Tasks,
        limits: TaskLimits,
        owner: &str,
        tool: Arc<dyn Tool>,
    ) -> Result<String, String> {
        let started = tasks.start(
            limits,
            owner,
            tool,
            "{}",
            "call-1",
            Duration::from_secs(60),
            Task::working("running"),
        )?;
        Ok(started.task.task_id)
    }

    /// The default limits with a TTL of `secs` seconds.
    fn ttl(secs: u64) -> TaskLimits {
        TaskLimits {
            ttl: Duration::from_secs(secs),
            ..TaskLimits::default()
        }
    }

    /// A place for a resume, as a client with calls to spare has.
    fn free() -> Option<Running> {
        super::super::call::InFlight::default()
            .enter(
                "client",
                super::super::call::CallLimits {
                    per_client: 1,
                    total: 1,
                    ..super::super::call::CallLimits::default()
                },
                0,
            )
            .ok()
    }

    fn status(result: &GetTaskResult) -> WireStatus {
        result.task.task.status
    }

    #[tokio::test(start_paused = true)]
    async fn a_finished_task_is_removed_a_ttl_after_it_finished() {
        let (tasks, limits) = (Tasks::default(), ttl(60));
        let id = start(&tasks, limits, "alice", Arc::new(Quick::default())).unwrap();
        tokio::time::advance(Duration::from_secs(50)).await;
        let done = tasks.poll(limits, "alice", &id, free).await.unwrap();
        assert_eq!(status(&done), WireStatus::Completed);
        // 59 s after it finished it is still there; asking does not extend a finished task.
        tokio::time::advance(Duration::from_secs(59)).await;
        assert!(tasks.poll(limits, "alice", &id, free).await.is_ok());
        tokio::time::advance(Duration::from_secs(2)).await;
        let gone = tasks.poll(limits, "alice", &id, free).await.unwrap_err();
        assert!(gone.message.contains("no task"), "{gone:?}");
        assert!(tasks.lock().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn an_unfinished_task_nobody_asks_about_is_cancelled_after_the_ttl() {
        let (tasks, limits) = (Tasks::default(), ttl(60));
        let quick = Arc::new(Quick::default());
        let id = start(&tasks, limits, "alice", Arc::clone(&quick) as Arc<dyn Tool>).unwrap();
        tokio::time::advance(Duration::from_secs(61)).await;
        assert!(
            tasks.poll(limits, "alice", &id, free).await.is_err(),
            "removed"
        );
        // The removal cancels the work on a task of its own.
        for _ in 0..100 {
            if quick.cancelled.load(Ordering::Relaxed) == 1 {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert_eq!(quick.cancelled.load(Ordering::Relaxed), 1);
    }

    /// Asks one more question at each check, without end.
    struct Nosy;

    #[tool]
    impl Nosy {
        /// Asks and asks
        async fn execute(&self) -> Task {
            Task::working("asking")
        }

        async fn resume(
            &self,
            _task: Task,
            ctx: &ToolContext,
        ) -> Result<String, llm_tools_core::ToolError> {
            for i in 0.. {
                ctx.ask(Question::new(format!("question {i}"))).await?;
            }
            Ok("never".into())
        }
    }

    #[tokio::test]
    async fn a_task_asking_without_end_stops_at_the_question_limit() {
        let (tasks, limits) = (Tasks::default(), TaskLimits::default());
        let id = start(&tasks, limits, "alice", Arc::new(Nosy)).unwrap();
        let mut answered = 0;
        let last = loop {
            let polled = tasks.poll(limits, "alice", &id, free).await.unwrap();
            if status(&polled) != WireStatus::InputRequired {
                break polled;
            }
            assert!(answered <= MAX_QUESTIONS, "asked past the limit");
            let mut responses = InputResponses::new();
            responses.insert(
                question_key(answered),
                serde_json::json!({"action": "accept", "content": {}}),
            );
            tasks
                .update(limits, "alice", &id, &responses)
                .await
                .unwrap();
            answered += 1;
        };
        assert_eq!(answered, MAX_QUESTIONS);
        // It ends as the call's error result, as a call asking too much outside a task does.
        assert_eq!(status(&last), WireStatus::Completed, "{last:?}");
        let shown = format!("{last:?}");
        assert!(shown.contains("asked more than 16 questions"), "{shown}");
    }

    /// The key of the one question a task's poll asks.
    fn asked_key(polled: &GetTaskResult) -> String {
        let TaskPayload::InputRequired { input_requests } = &polled.task.payload else {
            panic!("asks nothing: {polled:?}");
        };
        let keys: Vec<&String> = input_requests.keys().collect();
        assert_eq!(keys.len(), 1, "{polled:?}");
        keys[0].clone()
    }

    /// A client's answer to an earlier question (a retried `tasks/update`, a late one) does
    /// not answer the question asked now: it is refused naming the key the task waits for,
    /// and the task still asks that question.
    #[tokio::test]
    async fn an_answer_keyed_to_an_earlier_question_is_refused_and_the_task_still_asks() {
        let (tasks, limits) = (Tasks::default(), TaskLimits::default());
        let id = start(&tasks, limits, "alice", Arc::new(Nosy)).unwrap();
        let answer = |key: &str| {
            let mut responses = InputResponses::new();
            responses.insert(
                key.to_owned(),
                serde_json::json!({"action": "accept", "content": {}}),
            );
            responses
        };
        let first = tasks.poll(limits, "alice", &id, free).await.unwrap();
        assert_eq!(asked_key(&first), "q00");
        tasks
            .update(limits, "alice", &id, &answer("q00"))
            .await
            .unwrap();
        let second = tasks.poll(limits, "alice", &id, free).await.unwrap();
        assert_eq!(asked_key(&second), "q01");
        let retried = tasks
            .update(limits, "alice", &id, &answer("q00"))
            .await
            .unwrap_err();
        assert!(
            retried.message.contains("waits for the answer `q01`")
                && retried.message.contains("`q00`")
                && retried.message.contains("none was taken"),
            "{retried:?}"
        );
        let still = tasks.poll(limits, "alice", &id, free).await.unwrap();
        assert_eq!(asked_key(&still), "q01", "the task still asks its question");
        // A client's many long keys are shown cut: 4 of them, 16 bytes each at most.
        let mut many = InputResponses::new();
        for n in 0..100 {
            many.insert(
                format!("{n:03}{}", "k".repeat(1 << 16)),
                serde_json::json!({}),
            );
        }
        let refused = tasks.update(limits, "alice", &id, &many).await.unwrap_err();
        assert!(
            refused.message.len() < 512 && refused.message.contains("96 more"),
            "{}",
            &refused.message[..refused.message.len().min(600)]
        );
        tasks
            .update(limits, "alice", &id, &answer("q01"))
            .await
            .unwrap();
        let third = tasks.poll(limits, "alice", &id, free).await.unwrap();
        assert_eq!(asked_key(&third), "q02", "the right key answered it");
    }

    #[tokio::test]
    async fn a_task_whose_client_has_no_call_place_free_stays_working_unresumed() {
        let (tasks, limits) = (Tasks::default(), TaskLimits::default());
        let id = start(&tasks, limits, "alice", Arc::new(Quick::default())).unwrap();
        let busy = tasks.poll(limits, "alice", &id, || None).await.unwrap();
        assert_eq!(status(&busy), WireStatus::Working);
        let done = tasks.poll(limits, "alice", &id, free).await.unwrap();
        assert_eq!(
            status(&done),
            WireStatus::Completed,
            "resumed once a place is free"
        );
    }

    #[tokio::test]
    async fn another_client_is_told_there_is_no_such_task() {
        let (tasks, limits) = (Tasks::default(), TaskLimits::default());
        let quick = Arc::new(Quick::default());
        let id = start(&tasks, limits, "alice", Arc::clone(&quick) as Arc<dyn Tool>).unwrap();
        let missing = tasks
            .poll(limits, "mallory", "task-0", free)
            .await
            .unwrap_err();
        let other = tasks.poll(limits, "mallory", &id, free).await.unwrap_err();
        assert_eq!(
            other.message.replace(&id, "ID"),
            missing.message.replace("task-0", "ID"),
            "the same answer as for a task that does not exist"
        );
        assert!(tasks.cancel(limits, "mallory", &id).await.is_err());
        assert!(
            tasks
                .update(limits, "mallory", &id, &InputResponses::new())
                .await
                .is_err()
        );
        assert_eq!(quick.cancelled.load(Ordering::Relaxed), 0);
        // Its own client still has it, untouched.
        let own = tasks.poll(limits, "alice", &id, free).await.unwrap();
        assert_eq!(status(&own), WireStatus::Completed);
    }

    #[tokio::test]
    async fn a_task_past_the_limit_is_refused_and_the_limit_named() {
        let tasks = Tasks::default();
        let limits = TaskLimits {
            max: 2,
            ..TaskLimits::default()
        };
        let quick: Arc<dyn Tool> = Arc::new(Quick::default());
        start(&tasks, limits, "alice", Arc::clone(&quick)).unwrap();
        start(&tasks, limits, "bob", Arc::clone(&quick)).unwrap();
        let refused = start(&tasks, limits, "alice", quick).unwrap_err();
        assert!(
            refused.contains("2 tasks") && refused.contains("with_max_tasks"),
            "{refused}"
        );
    }

    #[tokio::test]
    async fn a_client_past_its_own_limit_is_refused_and_the_others_still_start_tasks() {
        let tasks = Tasks::default();
        let limits = TaskLimits {
            max: 10,
            per_client: 2,
            ..TaskLimits::default()
        };
        let quick: Arc<dyn Tool> = Arc::new(Quick::default());
        start(&tasks, limits, "mallory", Arc::clone(&quick)).unwrap();
        start(&tasks, limits, "mallory", Arc::clone(&quick)).unwrap();
        let refused = start(&tasks, limits, "mallory", Arc::clone(&quick)).unwrap_err();
        assert!(
            refused.contains("2 tasks") && refused.contains("with_max_tasks_per_client"),
            "{refused}"
        );
        start(&tasks, limits, "alice", quick).unwrap();
    }

    /// Starts a task of `quick` for `owner` with arguments `bytes` long.
    fn start_of(
        tasks: &Tasks,
        limits: TaskLimits,
        owner: &str,
        quick: &Arc<dyn Tool>,
        bytes: usize,
    ) -> Result<String, String> {
        let arguments = format!(r#"{{"x":"{}"}}"#, "x".repeat(bytes - 8));
        let started = tasks.start(
            limits,
            owner,
            Arc::clone(quick),
            &arguments,
            "call-1",
            Duration::from_secs(60),
            Task::working("running"),
        )?;
        Ok(started.task.task_id)
    }

    fn held(tasks: &Tasks) -> (usize, usize) {
        let held = tasks.held.lock();
        (held.total, held.by_client.len())
    }

    #[tokio::test(start_paused = true)]
    async fn tasks_keep_at_most_their_bytes_and_give_them_back_when_done() {
        let tasks = Tasks::default();
        let limits = TaskLimits {
            ttl: Duration::from_secs(60),
            max_bytes: 3_000,
            per_client_bytes: 2_000,
            ..TaskLimits::default()
        };
        let quick: Arc<dyn Tool> = Arc::new(Quick::default());
        let first = start_of(&tasks, limits, "alice", &quick, 1_000).unwrap();
        let second = start_of(&tasks, limits, "alice", &quick, 1_000).unwrap();
        let refused = start_of(&tasks, limits, "alice", &quick, 10).unwrap_err();
        assert!(
            refused.contains("2000 bytes") && refused.contains("with_max_task_bytes_per_client"),
            "{refused}"
        );
        start_of(&tasks, limits, "bob", &quick, 1_000).unwrap();
        let refused = start_of(&tasks, limits, "carol", &quick, 10).unwrap_err();
        assert!(
            refused.contains("3000 bytes") && refused.contains("(ToolServer::with_max_task_bytes)"),
            "{refused}"
        );
        assert_eq!(tasks.lock().len(), 3, "nothing kept of the refused calls");
        assert_eq!(held(&tasks), (3_000, 2));
        // Finished: the arguments' bytes come back, and the result, kept until the TTL, counts
        // in their place. Cancelled: the bytes come back, though the task is still kept.
        let done = tasks.poll(limits, "alice", &first, free).await.unwrap();
        assert_eq!(status(&done), WireStatus::Completed);
        let result = held(&tasks).0 - 2_000;
        assert!((20..200).contains(&result), "the result's bytes: {result}");
        assert_eq!(held(&tasks), (2_000 + result, 2));
        tasks.cancel(limits, "alice", &second).await.unwrap();
        assert_eq!(held(&tasks), (1_000 + result, 2));
        assert!(start_of(&tasks, limits, "alice", &quick, 2_000).is_err());
        let third = start_of(&tasks, limits, "alice", &quick, 2_000 - result).unwrap();
        // Removed at the TTL: the rest comes back.
        tokio::time::advance(Duration::from_secs(61)).await;
        assert!(tasks.poll(limits, "alice", &third, free).await.is_err());
        assert_eq!(held(&tasks), (0, 0), "clients leave with their last byte");
    }

    #[tokio::test]
    async fn an_answer_past_the_bytes_a_client_keeps_is_refused_and_the_task_still_asks() {
        let tasks = Tasks::default();
        let limits = TaskLimits {
            per_client_bytes: 100,
            ..TaskLimits::default()
        };
        let id = start(&tasks, limits, "alice", Arc::new(Nosy)).unwrap();
        let asking = tasks.poll(limits, "alice", &id, free).await.unwrap();
        assert_eq!(status(&asking), WireStatus::InputRequired);
        let mut responses = InputResponses::new();
        responses.insert(
            "q00".into(),
            serde_json::json!({"action": "accept", "content": {"word": "y".repeat(200)}}),
        );
        let refused = tasks
            .update(limits, "alice", &id, &responses)
            .await
            .unwrap_err();
        assert!(
            refused.message.contains("with_max_task_bytes_per_client"),
            "{refused:?}"
        );
        let still = tasks.poll(limits, "alice", &id, free).await.unwrap();
        assert_eq!(status(&still), WireStatus::InputRequired);
        assert_eq!(held(&tasks), (2, 1), "the arguments alone");
        responses.insert(
            "q00".into(),
            serde_json::json!({"action": "accept", "content": {"word": "y"}}),
        );
        tasks
            .update(limits, "alice", &id, &responses)
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn a_resume_that_panics_before_its_future_finishes_the_task_with_an_error() {
        let (tasks, limits) = (Tasks::default(), TaskLimits::default());
        let brittle: Arc<dyn Tool> = Arc::new(Brittle::default());
        let id = start(&tasks, limits, "alice", brittle).unwrap();
        let polled = tasks.poll(limits, "alice", &id, free).await.unwrap();
        assert_eq!(status(&polled), WireStatus::Completed, "{polled:?}");
        let TaskPayload::Completed { result } = &polled.task.payload else {
            panic!("no result: {polled:?}");
        };
        assert_eq!(result["isError"], serde_json::json!(true), "{result:?}");
        assert_eq!(
            result["content"][0]["text"], "the tool panicked",
            "{result:?}"
        );
    }

    /// Its spec panics once it has been resumed; its resume returns `outcome`; counts
    /// cancellations.
    struct Faithless {
        spec: llm_tools_core::ToolSpec,
        resumed: std::sync::atomic::AtomicBool,
        outcome: fn() -> ToolOutcome,
        cancelled: AtomicU32,
    }

    impl Faithless {
        fn new(outcome: fn() -> ToolOutcome) -> Self {
            Self {
                spec: llm_tools_core::ToolSpec::new("faithless", "Panics in its spec"),
                resumed: std::sync::atomic::AtomicBool::new(false),
                outcome,
                cancelled: AtomicU32::new(0),
            }
        }
    }

    impl Tool for Faithless {
        fn spec(&self) -> &llm_tools_core::ToolSpec {
            assert!(
                !self.resumed.load(Ordering::SeqCst),
                "spec panicked after the resume"
            );
            &self.spec
        }

        fn call<'a>(
            &'a self,
            _args: RawArgs<'a>,
            _ctx: ToolContext,
        ) -> llm_tools_core::BoxFuture<'a, ToolOutcome> {
            Box::pin(async { ToolOutcome::Task(Task::working("running")) })
        }

        fn resume<'a>(
            &'a self,
            _task: Task,
            _args: RawArgs<'a>,
            _ctx: ToolContext,
        ) -> llm_tools_core::BoxFuture<'a, ToolOutcome> {
            self.resumed.store(true, Ordering::SeqCst);
            let outcome = (self.outcome)();
            Box::pin(async { outcome })
        }

        fn cancel<'a>(
            &'a self,
            _task: Task,
            _args: RawArgs<'a>,
            _ctx: ToolContext,
        ) -> llm_tools_core::BoxFuture<'a, ()> {
            self.cancelled.fetch_add(1, Ordering::SeqCst);
            Box::pin(async {})
        }
    }

    #[tokio::test]
    async fn a_task_still_working_is_kept_working_when_the_tool_s_spec_panics() {
        let (tasks, limits) = (Tasks::default(), ttl(60));
        let faithless = Arc::new(Faithless::new(|| {
            ToolOutcome::Task(Task::working("still running"))
        }));
        let id = start(
            &tasks,
            limits,
            "alice",
            Arc::clone(&faithless) as Arc<dyn Tool>,
        )
        .unwrap();
        let polled = tasks.poll(limits, "alice", &id, free).await.unwrap();
        assert_eq!(status(&polled), WireStatus::Working, "{polled:?}");
        assert_eq!(faithless.cancelled.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn a_task_a_panic_outside_the_tool_finishes_has_its_work_stopped() {
        let (tasks, limits) = (Tasks::default(), ttl(60));
        let faithless = Arc::new(Faithless::new(|| ToolOutcome::error("broken")));
        let id = start(
            &tasks,
            limits,
            "alice",
            Arc::clone(&faithless) as Arc<dyn Tool>,
        )
        .unwrap();
        let polled = tasks.poll(limits, "alice", &id, free).await.unwrap();
        assert_eq!(status(&polled), WireStatus::Completed, "{polled:?}");
        assert_eq!(
            faithless.cancelled.load(Ordering::SeqCst),
            1,
            "the task ended unfinished and its work was left running"
        );
    }

    #[tokio::test]
    async fn a_resume_that_panics_outside_the_tool_finishes_the_task_with_an_error() {
        let (tasks, limits) = (Tasks::default(), ttl(60));
        // Its resume's result cannot be recorded: the panic comes from none of the tool's
        // call, resume or cancel.
        let faithless: Arc<dyn Tool> = Arc::new(Faithless::new(|| {
            ToolOutcome::Output(ToolOutput::text("done"))
        }));
        let id = start(&tasks, limits, "alice", faithless).unwrap();
        let polled = tasks.poll(limits, "alice", &id, free).await.unwrap();
        assert_eq!(status(&polled), WireStatus::Completed, "{polled:?}");
        let TaskPayload::Completed { result } = &polled.task.payload else {
            panic!("no result: {polled:?}");
        };
        assert_eq!(result["isError"], serde_json::json!(true), "{result:?}");
        assert_eq!(
            result["content"][0]["text"], "the tool panicked",
            "{result:?}"
        );
        // Finished, it is kept for its TTL and no longer (a task resuming would be kept for
        // ever), its arguments given back.
        let entry = tasks.lock().get(&id).cloned().unwrap();
        assert!(Entry::expiry(&entry.lock(), limits.ttl).is_some());
        assert_eq!(held(&tasks).0, json_len(result), "only its result is kept");
    }

    /// A task whose `cancel` says when it starts, waits to be released, and says when it ends.
    #[derive(Default)]
    struct SlowCancel {
        cancelling: tokio::sync::Notify,
        release: tokio::sync::Notify,
        done: tokio::sync::Notify,
    }

    #[tool]
    impl SlowCancel {
        /// Cancels slowly
        async fn execute(&self) -> Task {
            Task::working("running")
        }

        async fn resume(&self, task: Task) -> ToolOutcome {
            ToolOutcome::Task(task)
        }

        async fn cancel(&self, _task: Task) {
            self.cancelling.notify_one();
            self.release.notified().await;
            self.done.notify_one();
        }
    }

    #[tokio::test]
    async fn a_cancel_request_dropped_while_the_tool_cancels_leaves_its_cancel_to_finish() {
        let (tasks, limits) = (Tasks::default(), ttl(60));
        let slow = Arc::new(SlowCancel::default());
        let id = start(&tasks, limits, "alice", Arc::clone(&slow) as Arc<dyn Tool>).unwrap();
        // The request's future is dropped (its client gone) once the tool's cancel has begun.
        tokio::select! {
            _ = tasks.cancel(limits, "alice", &id) => panic!("the cancel ended unreleased"),
            () = slow.cancelling.notified() => {}
        }
        slow.release.notify_one();
        tokio::time::timeout(Duration::from_secs(30), slow.done.notified())
            .await
            .expect("the tool's cancel was cut short with the request");
    }

    #[tokio::test]
    async fn a_task_whose_cancel_panics_before_its_future_is_still_cancelled() {
        let (tasks, limits) = (Tasks::default(), TaskLimits::default());
        let brittle: Arc<dyn Tool> = Arc::new(Brittle::default());
        let id = start(&tasks, limits, "alice", brittle).unwrap();
        let cancelled = AssertUnwindSafe(tasks.cancel(limits, "alice", &id))
            .catch_unwind()
            .await;
        assert!(
            matches!(cancelled, Ok(Ok(()))),
            "the panic reached the client's request"
        );
        let polled = tasks.poll(limits, "alice", &id, free).await.unwrap();
        assert_eq!(status(&polled), WireStatus::Cancelled);
    }

    #[tokio::test]
    async fn a_parked_task_is_taken_back_once_and_by_its_client_alone() {
        let (tasks, limits) = (Tasks::default(), TaskLimits::default());
        let quick = Arc::new(Quick::default());
        let id = tasks
            .park(
                limits,
                "alice",
                Arc::clone(&quick) as Arc<dyn Tool>,
                "{}",
                "call-1",
                Duration::from_secs(60),
                Task::working("exporting"),
            )
            .unwrap();
        assert_eq!(held(&tasks), (2, 1), "its arguments are kept");
        assert!(tasks.take_parked(limits.ttl, "mallory", &id).is_none());
        let task = tasks.take_parked(limits.ttl, "alice", &id).unwrap();
        assert_eq!(task.status_message(), Some("exporting"));
        assert!(
            tasks.take_parked(limits.ttl, "alice", &id).is_none(),
            "once"
        );
        assert_eq!(held(&tasks), (0, 0), "nothing kept once taken back");
        assert_eq!(quick.cancelled.load(Ordering::Relaxed), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_parked_task_never_taken_back_is_cancelled_after_the_ttl() {
        let (tasks, limits) = (Tasks::default(), ttl(60));
        let quick = Arc::new(Quick::default());
        let id = tasks
            .park(
                limits,
                "alice",
                Arc::clone(&quick) as Arc<dyn Tool>,
                "{}",
                "call-1",
                Duration::from_secs(60),
                Task::working("exporting"),
            )
            .unwrap();
        // Nothing else asks about tasks: the task's own timer removes it at its TTL.
        tokio::time::advance(Duration::from_secs(61)).await;
        // The removal cancels the work on a task of its own.
        for _ in 0..100 {
            if quick.cancelled.load(Ordering::Relaxed) == 1 {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert_eq!(quick.cancelled.load(Ordering::Relaxed), 1);
        assert!(tasks.lock().is_empty(), "removed");
        assert!(tasks.take_parked(limits.ttl, "alice", &id).is_none());
    }

    #[test]
    fn task_ids_are_128_random_bits() {
        let tasks = Tasks::default();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let _guard = rt.enter();
        let id = start(
            &tasks,
            TaskLimits::default(),
            "alice",
            Arc::new(Quick::default()),
        )
        .unwrap();
        let hex = id.strip_prefix("task-").unwrap();
        assert_eq!(hex.len(), 32);
        assert!(hex.chars().all(|c| c.is_ascii_hexdigit()));
    }
}
