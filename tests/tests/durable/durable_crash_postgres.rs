//! The crash test on PostgreSQL: three worker processes (`durable_worker`) drive 1,000 durable
//! chats through twelve SIGKILLs at random moments, and one worker is stopped with SIGSTOP in
//! the middle of a tool run, for longer than its leases and until another worker has run that
//! call again, then continued: its late results must be refused by the fencing token, so every
//! transcript holds its call's last attempt (`llm_tools_tests::crash`). Seeded and bounded
//! (`LLM_TOOLS_CRASH_SEED` picks another seed).
#![allow(clippy::expect_used, clippy::print_stdout)] // helpers outside `#[test]` fns; the test prints its counts

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use llm_tools_core::store::{PostgresOptions, PostgresStore, Store};
use llm_tools_tests::crash::{self, Schedule};
use llm_tools_tests::postgres::server_or_skip;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_and_stopped_workers_lose_no_result_and_write_none_twice() {
    let Some(server) = server_or_skip("the PostgreSQL crash test") else {
        return;
    };
    let seed = std::env::var("LLM_TOOLS_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20261203_u64);
    fastrand::seed(seed);
    let url = server.url();
    let schema = "crash";
    let store: Arc<dyn Store> = Arc::new(
        PostgresStore::connect_with(&url, PostgresOptions::default().with_schema(schema))
            .await
            .expect("store"),
    );
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .expect("connects");
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
        .batch_execute(
            "CREATE TABLE crash.executions (id BIGSERIAL PRIMARY KEY, chat_id TEXT NOT NULL, call_id TEXT NOT NULL, attempt BIGINT NOT NULL, pid BIGINT NOT NULL)",
        )
        .await
        .expect("side table");
    let schedule = Schedule {
        chats: 1000,
        workers: 3,
        kills: 12,
        stop_for: Some(Duration::from_millis(2500)),
        deadline: Duration::from_secs(600),
    };
    crash::enqueue_chats(&store, schedule.chats).await;
    let start = |slow: bool| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_durable_worker"));
        if slow {
            command.env("DURABLE_WORKER_WORK_MS", "300");
        }
        command
            .args([url.as_str(), schema])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("the worker starts")
    };
    let counts = crash::run(store, schedule, start, async || {
        client
            .query(
                "SELECT chat_id, call_id, attempt, pid FROM crash.executions ORDER BY id",
                &[],
            )
            .await
            .expect("rows")
            .iter()
            .map(|r| {
                let attempt: i64 = r.get(2);
                let pid: i64 = r.get(3);
                (
                    r.get(0),
                    r.get(1),
                    u32::try_from(attempt).expect("attempt"),
                    u32::try_from(pid).expect("pid"),
                )
            })
            .collect()
    })
    .await;
    println!("crash test on PostgreSQL (seed {seed}): {counts:?}");
}
