//! Running a served tool: its panic caught ([`guarded`]), a working task carried on here
//! for a client that does not run it as an MCP task ([`carry_on`]), and how many questions a
//! call may ask ([`MAX_QUESTIONS`]).

use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures::FutureExt as _;
use llm_tools_core::{RawArgs, TaskStatus, Tool, ToolContext, ToolOutcome};

/// How many questions one served call may ask its client before the server gives up on it,
/// in a call or as a task.
pub(super) const MAX_QUESTIONS: usize = 16;

/// Carries a call on from its first outcome: resumes a working task after its poll interval
/// until it finishes (for a client without the tasks extension); catches a panic.
pub(super) async fn carry_on(
    tool: &dyn Tool,
    mut outcome: ToolOutcome,
    args: RawArgs<'_>,
    ctx: ToolContext,
) -> ToolOutcome {
    loop {
        let task = match outcome {
            ToolOutcome::Task(task) if task.status() == TaskStatus::Working => task,
            ToolOutcome::Task(task) => {
                return ToolOutcome::error(format!(
                    "the tool paused waiting for the user ({}), which an MCP client cannot answer here",
                    task.status_message().unwrap_or("input required")
                ));
            }
            other => return other,
        };
        if ctx.take_pending_question().is_some() {
            return ToolOutcome::Task(task);
        }
        tokio::time::sleep(task.poll_interval().unwrap_or(Duration::from_secs(1))).await;
        outcome = guarded(tool.resume(task, args, ctx.clone())).await;
    }
}

/// The tool's outcome, or an error result when it panicked.
pub(super) async fn guarded(future: llm_tools_core::BoxFuture<'_, ToolOutcome>) -> ToolOutcome {
    match AssertUnwindSafe(future).catch_unwind().await {
        Ok(outcome) => outcome,
        Err(_) => ToolOutcome::error("the tool panicked"),
    }
}
