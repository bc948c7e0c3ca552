//! The crash test on SQLite: three worker processes (`durable_worker`) drive 200 durable chats
//! in one SQLite file through twelve SIGKILLs at random moments (`llm_tools_tests::crash`).
//! Seeded and bounded in count and time (`LLM_TOOLS_CRASH_SEED` picks another seed).
#![allow(clippy::expect_used, clippy::print_stdout)] // helpers outside `#[test]` fns; the test prints its counts

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use llm_tools_core::store::{SqliteStore, Store};
use llm_tools_tests::crash::{self, Schedule};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_workers_lose_no_result_and_write_none_twice() {
    let seed = std::env::var("LLM_TOOLS_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20261203_u64);
    fastrand::seed(seed);
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("crash.db");
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&db).await.expect("store"));
    let log = rusqlite::Connection::open(&db).expect("sqlite");
    log.execute_batch(
        "CREATE TABLE executions (chat_id TEXT NOT NULL, call_id TEXT NOT NULL, attempt INTEGER NOT NULL, pid INTEGER NOT NULL)",
    )
    .expect("side table");
    let schedule = Schedule {
        chats: 200,
        workers: 3,
        kills: 12,
        stop_for: None,
        deadline: Duration::from_secs(240),
    };
    crash::enqueue_chats(&store, schedule.chats).await;
    let start = |_slow: bool| {
        Command::new(env!("CARGO_BIN_EXE_durable_worker"))
            .arg(&db)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("the worker starts")
    };
    let counts = crash::run(store, schedule, start, async || {
        let mut statement = log
            .prepare("SELECT chat_id, call_id, attempt, pid FROM executions ORDER BY rowid")
            .expect("query");
        statement
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .expect("rows")
            .collect::<Result<Vec<_>, _>>()
            .expect("read")
    })
    .await;
    println!("crash test on SQLite (seed {seed}): {counts:?}");
}
