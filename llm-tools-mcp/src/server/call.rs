//! Running a served tool: its panic caught ([`guarded`]), a working task carried on here
//! for a client that does not run it as an MCP task ([`carry_on`]), how many questions a
//! call may ask ([`MAX_QUESTIONS`]), and how many calls one client may have running at once
//! ([`InFlight`]).

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::FutureExt as _;
use llm_tools_core::{RawArgs, Task, TaskStatus, Tool, ToolContext, ToolOutcome};

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

/// How many calls each client has running: a client leaves the map with its last call, so the
/// map holds at most as many clients as calls run.
#[derive(Default)]
pub(super) struct InFlight(Arc<Mutex<HashMap<String, usize>>>);

/// One running call's place among its client's; given back when it drops (the call ended, or
/// was cancelled and its future dropped).
pub(super) struct Running {
    calls: Arc<Mutex<HashMap<String, usize>>>,
    owner: String,
}

fn lock(calls: &Mutex<HashMap<String, usize>>) -> MutexGuard<'_, HashMap<String, usize>> {
    calls
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl InFlight {
    /// A place for one more call of `owner`, unless it has `max` running already.
    pub(super) fn enter(&self, owner: &str, max: usize) -> Option<Running> {
        let mut calls = lock(&self.0);
        let running = calls.get(owner).copied().unwrap_or(0);
        if running >= max {
            return None;
        }
        calls.insert(owner.to_owned(), running + 1);
        Some(Running {
            calls: Arc::clone(&self.0),
            owner: owner.to_owned(),
        })
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let mut calls = lock(&self.calls);
        if let Some(running) = calls.get_mut(&self.owner) {
            *running = running.saturating_sub(1);
            if *running == 0 {
                calls.remove(&self.owner);
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

/// Polls a working task to its end within one request: sleeps its poll interval, resumes it,
/// again. The task being worked on is kept in `working` (cleared when the call ends here), so
/// that a caller that gives up on the call (its limit, the client's cancel) can stop its work.
/// A task that pauses for a user the client cannot ask ends the call with an error, and its
/// work is stopped.
pub(super) async fn carry_on(
    tool: &dyn Tool,
    mut outcome: ToolOutcome,
    args: RawArgs<'_>,
    ctx: ToolContext,
    working: &Mutex<Option<Task>>,
) -> ToolOutcome {
    let keep = |task: Option<Task>| {
        *working
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = task;
    };
    loop {
        let task = match outcome {
            ToolOutcome::Task(task) if task.status() == TaskStatus::Working => task,
            ToolOutcome::Task(task) => {
                keep(None);
                let message = format!(
                    "the tool paused waiting for the user ({}), which an MCP client cannot answer here",
                    task.status_message().unwrap_or("input required")
                );
                stop_work(tool, task, args, ctx).await;
                return ToolOutcome::error(message);
            }
            other => {
                keep(None);
                return other;
            }
        };
        if ctx.take_pending_question().is_some() {
            keep(None);
            return ToolOutcome::Task(task);
        }
        keep(Some(task.clone()));
        tokio::time::sleep(task.poll_interval().unwrap_or(Duration::from_secs(1))).await;
        outcome = guarded(tool.resume(task, args, ctx.clone())).await;
    }
}

/// Stops the work behind `task`, a call that ends unfinished: the tool's `cancel`, at most
/// [`STOP_WORK_LIMIT`] (a panic in it is caught and logged).
pub(super) async fn stop_work(tool: &dyn Tool, task: Task, args: RawArgs<'_>, ctx: ToolContext) {
    let cancelled = AssertUnwindSafe(tool.cancel(task, args, ctx)).catch_unwind();
    match tokio::time::timeout(STOP_WORK_LIMIT, cancelled).await {
        Ok(Ok(())) => {}
        Ok(Err(_)) => {
            tracing::error!(target: "llm_tools::mcp", tool = tool.spec().joined_name(), "a served tool panicked while cancelling");
        }
        Err(_) => {
            tracing::warn!(target: "llm_tools::mcp", tool = tool.spec().joined_name(), limit = ?STOP_WORK_LIMIT, "a served tool's cancel ran past its limit and was stopped");
        }
    }
}

/// How long a tool's `cancel` may take when a call ends unfinished: 10 seconds.
pub(super) const STOP_WORK_LIMIT: Duration = Duration::from_secs(10);

/// The tool's outcome, or an error result when it panicked.
pub(super) async fn guarded(future: llm_tools_core::BoxFuture<'_, ToolOutcome>) -> ToolOutcome {
    match AssertUnwindSafe(future).catch_unwind().await {
        Ok(outcome) => outcome,
        Err(_) => ToolOutcome::error("the tool panicked"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_gets_its_places_back_as_its_calls_end() {
        let in_flight = InFlight::default();
        let first = in_flight.enter("alice", 2).unwrap();
        let second = in_flight.enter("alice", 2).unwrap();
        assert!(in_flight.enter("alice", 2).is_none(), "a third of alice's");
        let other = in_flight.enter("bob", 2).unwrap();
        drop(first);
        let third = in_flight.enter("alice", 2).unwrap();
        drop((second, third, other));
        assert!(
            lock(&in_flight.0).is_empty(),
            "clients leave with their last call"
        );
        assert!(in_flight.enter("alice", 0).is_none());
        assert!(
            lock(&in_flight.0).is_empty(),
            "a refused client is not kept"
        );
    }
}
