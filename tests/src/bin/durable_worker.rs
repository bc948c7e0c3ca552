//! A worker process for the crash test (`tests/tests/durable_crash.rs`): a [`Worker`] that runs
//! the due chats of a SQLite file until every chat is finished, and whose tool records each execution (chat,
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

use llm_tools_core::store::{DurableOptions, SqliteStore, Worker};
use llm_tools_core::{
    BoxFuture, Message, Provider, ProviderError, Request, Response, Role, ToolCall, ToolContext,
    ToolError, tool,
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

/// Resolves when no chat is due, running or waiting: the work is done.
async fn all_finished(path: String) {
    let Ok(conn) = rusqlite::Connection::open(&path) else {
        return;
    };
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let open: Result<i64, _> = conn.query_row(
            "SELECT count(*) FROM llm_tools_chats WHERE wake_at IS NOT NULL OR run_until > ?1",
            [now],
            |row| row.get(0),
        );
        if open.is_ok_and(|n| n == 0) {
            return;
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: durable_worker DB_PATH")?;
    let store = SqliteStore::open(&path).await?;
    let log = rusqlite::Connection::open(&path)?;
    log.busy_timeout(Duration::from_secs(10))?;
    let log = Arc::new(Mutex::new(log));
    fastrand::seed(u64::from(std::process::id()));
    let worker = Worker::new(store, CrashModel)
        .with_concurrency(4)
        .with_idle_poll(Duration::from_millis(20))
        .with_durable_options(
            DurableOptions::default()
                .with_run_lease(Duration::from_millis(500))
                .with_retry_delay(Duration::from_millis(100)),
        )
        .with_setup(move |chat_id, chat| {
            chat.with_tools(Work {
                chat_id: chat_id.to_owned(),
                log: Arc::clone(&log),
            })?;
            Ok(())
        });
    let report = worker.run_until(all_finished(path)).await;
    eprintln!("worker {}: {report:?}", std::process::id());
    Ok(())
}
