//! Calls that clients run as MCP tasks (the 2026-07-28 tasks extension): `tasks/get` resumes
//! the tool's working [`Task`], `tasks/update` answers its question, `tasks/cancel` runs its
//! `cancel`.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt as _;
use llm_tools_core::{Answer, Question, RawArgs, Task, TaskStatus, ToolContext, ToolOutcome};
use rmcp::ErrorData;
use rmcp::model::{
    CreateTaskResult, DetailedTask, ElicitResult, GetTaskResult, InputRequests, InputResponses,
    TaskPayload,
};

use super::wire::{
    answer_of, completed, error_result, question_requests, result_of, rfc3339_now, wire_task,
};
use super::{ToolServer, guarded};

/// The calls running as tasks, by task id.
pub(super) type Tasks =
    Arc<std::sync::Mutex<std::collections::HashMap<String, Arc<tokio::sync::Mutex<ServedTask>>>>>;

/// A call a client runs as a task: the tool, its arguments, where it stands.
pub(super) struct ServedTask {
    tool: usize,
    arguments: String,
    created_at: String,
    updated_at: String,
    state: TaskState,
    /// The client's answers to the task's questions, in order (`tasks/update`).
    answers: Vec<Answer>,
}

enum TaskState {
    /// The tool's task, resumed when the client polls.
    Working(Task),
    /// The tool asked the user: the task waits for `tasks/update` to answer `question`.
    Asking { task: Task, question: Question },
    /// Done: the payload every later poll gets.
    Finished(TaskPayload),
}

impl ToolServer {
    /// Registers a call the client runs as a task, and its seed state.
    pub(super) fn start_task(&self, tool: usize, arguments: &str, task: Task) -> CreateTaskResult {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let id = format!("task-{}-{n}", std::process::id());
        let now = rfc3339_now();
        let wire = wire_task(&id, &now, &now, &task);
        let served = ServedTask {
            tool,
            arguments: arguments.to_owned(),
            created_at: now.clone(),
            updated_at: now,
            state: TaskState::Working(task),
            answers: Vec::new(),
        };
        self.inner
            .tasks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(id, Arc::new(tokio::sync::Mutex::new(served)));
        CreateTaskResult::new(wire)
    }

    fn task(&self, id: &str) -> Result<Arc<tokio::sync::Mutex<ServedTask>>, ErrorData> {
        self.inner
            .tasks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(id)
            .cloned()
            .ok_or_else(|| {
                ErrorData::invalid_params(format!("no task `{id}` on this server"), None)
            })
    }

    /// `tasks/get`: a working task is resumed once (the tool's `resume`), and what it gives
    /// is the task's state: still working, or finished with the call's result.
    pub(super) async fn poll(&self, id: &str) -> Result<GetTaskResult, ErrorData> {
        let entry = self.task(id)?;
        let mut served = entry.lock().await;
        if let TaskState::Working(task) = &served.state {
            let task = task.clone();
            let tool = Arc::clone(&self.inner.tools[served.tool]);
            let spec = tool.spec();
            let ctx = ToolContext::builder(id.to_owned())
                .tool(spec.name(), spec.namespace().map(|n| n.name().to_owned()))
                .answers(served.answers.clone())
                .build();
            let outcome =
                guarded(tool.resume(task.clone(), RawArgs::new(&served.arguments), ctx.clone()))
                    .await;
            served.updated_at = rfc3339_now();
            served.state = match outcome {
                // The tool asked the user: the task waits for the client's answer.
                _ if let Some(question) = ctx.take_pending_question() => {
                    TaskState::Asking { task, question }
                }
                ToolOutcome::Task(task) if task.status() == TaskStatus::Working => {
                    TaskState::Working(task)
                }
                ToolOutcome::Task(task) => TaskState::Finished(completed(error_result(format!(
                    "the tool paused waiting for the user ({}), which an MCP client cannot answer here",
                    task.status_message().unwrap_or("input required")
                )))),
                other => TaskState::Finished(completed(result_of(other, spec.joined_name(), id))),
            };
        }
        let (task, payload) = match &served.state {
            TaskState::Working(task) => (
                wire_task(id, &served.created_at, &served.updated_at, task),
                TaskPayload::Working,
            ),
            TaskState::Asking { task, question } => (
                wire_task(id, &served.created_at, &served.updated_at, task),
                TaskPayload::InputRequired {
                    input_requests: task_input_requests(question, served.answers.len()),
                },
            ),
            TaskState::Finished(payload) => (
                rmcp::model::Task::new(
                    id,
                    payload.status(),
                    served.created_at.clone(),
                    served.updated_at.clone(),
                ),
                payload.clone(),
            ),
        };
        Ok(GetTaskResult::new(DetailedTask::new(task, payload)))
    }

    /// `tasks/update`: the client's answer to the question the task waits on; the next poll
    /// resumes the tool with it.
    pub(super) async fn update(
        &self,
        id: &str,
        responses: &InputResponses,
    ) -> Result<(), ErrorData> {
        let entry = self.task(id)?;
        let mut served = entry.lock().await;
        let TaskState::Asking { task, .. } = &served.state else {
            return Err(ErrorData::invalid_params(
                format!("task `{id}` asks nothing"),
                None,
            ));
        };
        let task = task.clone();
        let answer = responses
            .values()
            .next()
            .and_then(|v| serde_json::from_value::<ElicitResult>(v.clone()).ok())
            .map_or_else(|| Answer::decline(None), |r| answer_of(&r));
        served.answers.push(answer);
        served.state = TaskState::Working(task);
        served.updated_at = rfc3339_now();
        Ok(())
    }

    /// `tasks/cancel`: the tool's `cancel` stops the work; the task is cancelled.
    pub(super) async fn cancel(&self, id: &str) -> Result<(), ErrorData> {
        let entry = self.task(id)?;
        let mut served = entry.lock().await;
        if let TaskState::Working(task) | TaskState::Asking { task, .. } = &served.state {
            let tool = Arc::clone(&self.inner.tools[served.tool]);
            let ctx = ToolContext::builder(id.to_owned()).build();
            let cancelled = tool.cancel(task.clone(), RawArgs::new(&served.arguments), ctx);
            if AssertUnwindSafe(cancelled).catch_unwind().await.is_err() {
                tracing::error!(target: "llm_tools::mcp", task = id, "a served tool panicked while cancelling");
            }
            served.updated_at = rfc3339_now();
            served.state = TaskState::Finished(TaskPayload::Cancelled);
        }
        Ok(())
    }
}

/// The input requests of a task that asks `question` (its `index`th).
fn task_input_requests(question: &Question, index: usize) -> InputRequests {
    question_requests(question, index)
}
