//! A worker process for the crash test (`tests/tests/durable/durable_crash.rs`): a [`Worker`] that runs
//! the due chats of a SQLite file until every chat is finished, and whose tool records each execution (chat,
//! call, attempt, process) in a side table of the same file before it does its work. The test
//! kills such workers with SIGKILL at random moments and starts new ones.
//!
//! The model is a deterministic stand-in (no real model runs here): to a user message it
//! answers with three calls of `work`, to their results with two more, and then with the text
//! `finished`.
//!
//! Usage: `durable_worker DB_PATH` (SQLite), or `durable_worker postgres://… SCHEMA`. Each
//! call works for 1–15 ms, or `DURABLE_WORKER_WORK_MS` if set.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use llm_tools_core::store::{
    DurableOptions, PostgresOptions, PostgresStore, SqliteStore, Store, Worker,
};
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

/// Where executions are recorded: a side table beside the chats.
enum Log {
    Sqlite(Mutex<rusqlite::Connection>),
    Postgres(tokio_postgres::Client, String),
}

impl Log {
    async fn record(&self, chat_id: &str, call_id: &str, attempt: u32) -> Result<(), String> {
        let pid = std::process::id();
        match self {
            Log::Sqlite(conn) => {
                let conn = conn.lock().map_err(|_| "the log lock".to_owned())?;
                conn.execute(
                    "INSERT INTO executions (chat_id, call_id, attempt, pid) VALUES (?1, ?2, ?3, ?4)",
                    rusqlite::params![chat_id, call_id, attempt, pid],
                )
                .map(|_| ())
                .map_err(|e| e.to_string())
            }
            Log::Postgres(client, schema) => client
                .execute(
                    &format!("INSERT INTO \"{schema}\".executions (chat_id, call_id, attempt, pid) VALUES ($1, $2, $3, $4)"),
                    &[&chat_id, &call_id, &i64::from(attempt), &i64::from(pid)],
                )
                .await
                .map(|_| ())
                .map_err(|e| e.to_string()),
        }
    }

    /// How many chats are due, running or waiting.
    async fn open_chats(&self, now: i64) -> Result<i64, String> {
        match self {
            Log::Sqlite(conn) => {
                let conn = conn.lock().map_err(|_| "the log lock".to_owned())?;
                conn.query_row(
                    "SELECT count(*) FROM llm_tools_chats WHERE wake_at IS NOT NULL OR run_until > ?1",
                    [now],
                    |row| row.get(0),
                )
                .map_err(|e| e.to_string())
            }
            Log::Postgres(client, schema) => client
                .query_one(
                    &format!("SELECT count(*) FROM \"{schema}\".llm_tools_chats WHERE wake_at IS NOT NULL OR run_until > $1"),
                    &[&now],
                )
                .await
                .map(|row| row.get(0))
                .map_err(|e| e.to_string()),
        }
    }
}

/// One chat's tool: records the execution, then works for a few milliseconds.
struct Work {
    chat_id: String,
    log: Arc<Log>,
}

#[tool(max_run_time = "1s")]
impl Work {
    /// Does a piece of work
    async fn execute(&self, n: u32, ctx: &ToolContext) -> Result<String, ToolError> {
        self.log
            .record(&self.chat_id, ctx.call_id(), ctx.attempt())
            .await
            .map_err(|e| ToolError::fatal(format!("recording the execution: {e}")))?;
        let work = std::env::var("DURABLE_WORKER_WORK_MS")
            .ok()
            .and_then(|ms| ms.parse().ok())
            .unwrap_or_else(|| fastrand::u64(1..15));
        tokio::time::sleep(Duration::from_millis(work)).await;
        Ok(format!("result {n} (attempt {})", ctx.attempt()))
    }
}

/// Resolves when no chat is due, running or waiting: the work is done. Claims are read in the
/// store's clock.
async fn all_finished(log: Arc<Log>, store: Arc<dyn Store>) {
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = i64::try_from(store.now_ms()).unwrap_or(i64::MAX);
        if log.open_chats(now).await.is_ok_and(|n| n == 0) {
            return;
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let target = std::env::args()
        .nth(1)
        .ok_or("usage: durable_worker DB_PATH | durable_worker postgres://… SCHEMA")?;
    let (store, log): (Arc<dyn Store>, Log) = if target.starts_with("postgres") {
        let schema = std::env::args().nth(2).ok_or("the schema")?;
        let store = PostgresStore::connect_with(
            &target,
            PostgresOptions::default().with_schema(schema.as_str()),
        )
        .await?;
        let (client, connection) = tokio_postgres::connect(&target, tokio_postgres::NoTls).await?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        (Arc::new(store), Log::Postgres(client, schema))
    } else {
        let store = SqliteStore::open(&target).await?;
        let conn = rusqlite::Connection::open(&target)?;
        conn.busy_timeout(Duration::from_secs(10))?;
        (Arc::new(store), Log::Sqlite(Mutex::new(conn)))
    };
    let log = Arc::new(log);
    fastrand::seed(u64::from(std::process::id()));
    let worker = Worker::new(Arc::clone(&store), CrashModel)
        .with_concurrency(4)
        .with_idle_poll(Duration::from_millis(20))
        .with_durable_options(
            // A lease no stall of a loaded machine outlasts: a worker that is starved past its
            // lease loses it and another worker rightly runs its call again, but the crash test
            // counts reruns only where a worker was killed or stopped. The schedule kills
            // workers on purpose and expects every chat finished: a chat its kills hit several
            // times in a row is never parked for its abandoned claims.
            DurableOptions::default()
                .with_run_lease(Duration::from_millis(1500))
                .with_retry_delay(Duration::from_millis(100))
                .with_max_abandoned_claims(u32::MAX),
        )
        .with_setup({
            let log = Arc::clone(&log);
            move |chat_id, chat| {
                chat.with_tools(Work {
                    chat_id: chat_id.to_owned(),
                    log: Arc::clone(&log),
                })?;
                Ok(())
            }
        });
    let report = worker.run_until(all_finished(log, store)).await;
    eprintln!("worker {}: {report:?}", std::process::id());
    Ok(())
}
