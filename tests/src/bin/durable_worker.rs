//! A worker process for the crash test (`tests/tests/durable_crash.rs`): it drives every
//! unfinished chat of a SQLite file to its end, and its tool records each execution (chat,
//! call, attempt, process) in a side table of the same file before it does its work. The test
//! kills such workers with SIGKILL at random moments and starts new ones.
//!
//! The model is a deterministic stand-in (no real model runs here): to a user message it
//! answers with three calls of `work`, to their results with two more, and then with the text
//! `finished`.
//!
//! Usage: `durable_worker DB_PATH`

use std::sync::{Arc, Mutex};
use std::time::Duration;

use llm_tools_core::chat::Outcome;
use llm_tools_core::store::{DurableOptions, SqliteStore, Store};
use llm_tools_core::{
    BoxFuture, Chat, Message, Provider, ProviderError, Request, Response, Role, ToolCall,
    ToolContext, ToolError, tool,
};

/// Answers by the shape of the conversation, the same in every process.
struct CrashModel;

impl Provider for CrashModel {
    fn protocol(&self) -> &str {
        "crash-model"
    }

    fn model(&self) -> &str {
        "deterministic"
    }

    fn complete<'a>(
        &'a self,
        request: Request<'a>,
    ) -> BoxFuture<'a, Result<Response, ProviderError>> {
        let results = request
            .messages
            .iter()
            .filter(|m| m.role == Role::Tool)
            .count();
        let message = match results {
            0 => calls(0..3),
            3 => calls(3..5),
            _ => Message::assistant("finished"),
        };
        Box::pin(async move { Ok(Response::new(message)) })
    }
}

fn calls(range: std::ops::Range<u32>) -> Message {
    let calls = range
        .map(|n| ToolCall::new(format!("w{n}"), "work", format!("{{\"n\": {n}}}")))
        .collect();
    Message::assistant_with_calls("", calls)
}

/// One chat's tool: records the execution, then works for a few milliseconds.
struct Work {
    chat_id: String,
    log: Arc<Mutex<rusqlite::Connection>>,
}

#[tool(max_run_time = "1s")]
impl Work {
    /// Does a piece of work
    async fn execute(&self, n: u32, ctx: &ToolContext) -> Result<String, ToolError> {
        {
            let log = self
                .log
                .lock()
                .map_err(|_| ToolError::fatal("the log lock"))?;
            log.execute(
                "INSERT INTO executions (chat_id, call_id, attempt, pid) VALUES (?1, ?2, ?3, ?4)",
                rusqlite::params![
                    self.chat_id,
                    ctx.call_id(),
                    ctx.attempt(),
                    std::process::id()
                ],
            )
            .map_err(|e| ToolError::fatal(format!("recording the execution: {e}")))?;
        }
        tokio::time::sleep(Duration::from_millis(fastrand::u64(1..15))).await;
        Ok(format!("result {n}"))
    }
}

fn finished(chat: &Chat) -> bool {
    !chat.is_paused()
        && chat
            .messages()
            .last()
            .is_some_and(|m| m.role == Role::Assistant && m.tool_calls.is_empty())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: durable_worker DB_PATH")?;
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).await?);
    let sqlite = SqliteStore::open(&path).await?;
    let log = rusqlite::Connection::open(&path)?;
    log.busy_timeout(Duration::from_secs(10))?;
    let log = Arc::new(Mutex::new(log));
    let model: Arc<dyn Provider> = Arc::new(CrashModel);
    let mut ids = sqlite.chat_ids().await?;
    fastrand::seed(u64::from(std::process::id()));
    loop {
        fastrand::shuffle(&mut ids);
        let mut unfinished = 0;
        for id in &ids {
            let mut chat =
                Chat::load_shared(Arc::clone(&store), id.as_str(), Arc::clone(&model)).await?;
            if finished(&chat) {
                continue;
            }
            unfinished += 1;
            chat.with_durable_options(
                DurableOptions::default().with_run_lease(Duration::from_millis(500)),
            );
            chat.with_tools(Work {
                chat_id: id.clone(),
                log: Arc::clone(&log),
            })?;
            match chat.complete().await {
                Ok(Outcome::Done(_) | Outcome::Busy(_)) => {}
                Ok(other) => return Err(format!("chat {id} ended unexpectedly: {other:?}").into()),
                Err(e) => eprintln!("worker {}: chat {id}: {e}", std::process::id()),
            }
        }
        if unfinished == 0 {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
