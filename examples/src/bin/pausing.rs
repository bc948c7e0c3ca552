//! Pausing a call: a tool returns a `Task` and the chat returns without waiting; each
//! `complete` resumes every task once. A tool that needs an approval pauses before it runs;
//! `approve`, `deny` or `approve_always` settle it. `cancel` gives up on everything paused.
//!
//! ```sh
//! cargo run -p llm-tools-examples --bin pausing
//! ```
#![allow(clippy::print_stdout)] // an example program talks to its user

use std::collections::HashMap;
use std::sync::Mutex;

use llm_tools_core::chat::{Chat, Outcome};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{Error, Task, TaskStatus, ToolError, ToolOutcome, ToolOutput, tool};
use llm_tools_examples::print_transcript;
use serde_json::json;

/// Stands in for a deployment system that takes a while: each check moves a run on.
#[derive(Default)]
struct Deployments {
    runs: Mutex<HashMap<u64, u32>>,
}

impl Deployments {
    fn start(&self) -> u64 {
        let mut runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        let id = runs.len() as u64 + 1;
        runs.insert(id, 0);
        id
    }

    fn check(&self, id: u64) -> Option<u32> {
        let mut runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        let checks = runs.get_mut(&id)?;
        *checks += 1;
        Some(*checks)
    }
}

/// Hands a job to the deployment system
struct RunDeployment {
    system: Deployments,
}

#[tool]
impl RunDeployment {
    /// Deploys a page
    ///
    /// # Arguments
    /// * `page` - The page to deploy
    async fn execute(&self, page: String) -> Task {
        let run = self.system.start();
        Task::input_required(format!("Waiting for someone to approve deploying {page}"))
            .with_data("run_id", json!(run))
    }

    /// Checks on the run: the result once it is done, or the task again to keep waiting.
    async fn resume(&self, task: Task, page: String) -> Result<ToolOutcome, ToolError> {
        let run = task.get("run_id").and_then(|v| v.as_u64()).unwrap_or(0);
        match self.system.check(run) {
            None => Err(ToolError::recoverable(format!("run {run} is gone"))),
            Some(1) => Ok(ToolOutcome::Task(
                task.with_status(TaskStatus::Working, Some("Deploying".into())),
            )),
            Some(_) => Ok(ToolOutcome::Output(ToolOutput::text(format!(
                "{page} is live (run {run})"
            )))),
        }
    }
}

/// Drops a database table
#[tool(needs_approval)]
async fn drop_table(table: String) -> String {
    format!("dropped {table}")
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    // LLM_TOOLS_DEBUG=1 or RUST_LOG prints the requests and the tool traffic to stderr.
    llm_tools_core::debug_log::init_from_env();
    let model = ScriptedProvider::new()
        .then_call("run_deployment", json!({"page": "pricing"}))
        .then_text("The pricing page is live.")
        .then_calls([
            ("drop_table", json!({"table": "sessions"})),
            ("drop_table", json!({"table": "users"})),
        ])
        .then_text("Dropped sessions; users was kept.")
        .then_call("run_deployment", json!({"page": "blog"}))
        .then_text("Understood, the blog deployment was cancelled.");
    let mut chat = Chat::new(model);
    chat.with_tools((
        RunDeployment {
            system: Deployments::default(),
        },
        DropTable,
    ))?;

    // A task: `ask` returns while the call waits.
    let outcome = chat.ask("Deploy the new pricing page").await?;
    if let Outcome::Paused(_) = &outcome {
        for pending in chat.pending_tasks() {
            println!(
                "paused: {} ({:?}, data {:?})",
                pending.task.status_message().unwrap_or_default(),
                pending.task.status(),
                pending.task.data()
            );
        }
    }
    // Later (a controller recording the approval, a cron job): each `complete` checks once.
    while chat.is_paused() {
        match chat.complete().await? {
            Outcome::Paused(pause) => {
                for (_, task) in pause.tasks() {
                    println!(
                        "still paused: {}",
                        task.status_message().unwrap_or_default()
                    );
                }
            }
            Outcome::Done(answer) => println!("done: {}", answer.text()),
            _ => break,
        }
    }

    // Approvals: gated calls pause before they run.
    let _ = chat.ask("Drop the sessions and users tables").await?;
    let pending: Vec<(String, String)> = chat
        .pending_approvals()
        .iter()
        .map(|c| (c.id.clone(), c.arguments.clone()))
        .collect();
    println!("\nwaiting for approval: {pending:?}");
    chat.approve(&pending[0].0)?;
    chat.deny(&pending[1].0, "users holds customer data")?;
    let outcome = chat.complete().await?;
    println!("done: {}", outcome.text().unwrap_or_default());

    // Cancelling: every paused call is closed (its task cancelled through the tool).
    let _ = chat.ask("Deploy the blog").await?;
    println!("\npaused: {}", chat.awaiting_tasks());
    chat.cancel().await?;
    let outcome = chat.complete().await?;
    println!("after cancel: {}\n", outcome.text().unwrap_or_default());

    print_transcript(chat.messages());
    Ok(())
}
