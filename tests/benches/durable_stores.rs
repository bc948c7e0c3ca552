//! Durable chats on both stores, side by side: call claim → finish cycles per second with 1 to 4
//! concurrent writers, and chats per second answered end to end by 1 to 4 workers (a scripted
//! model asks for one tool call, then answers; every transition written). PostgreSQL runs on a
//! local server the bench starts itself (`llm_tools_tests::postgres`, fsync off as in the tests);
//! SQLite in a file in the temporary folder. Wall clock, a fixed amount of work per row.
//!
//! `cargo bench -p llm-tools-tests --bench durable_stores`
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use llm_tools_core::store::{
    CallRecord, CallWrite, ChatRecord, Commit, PostgresOptions, PostgresStore, RunClaim,
    SqliteStore, Store, Worker,
};
use llm_tools_core::{
    BoxFuture, Chat, Message, Provider, ProviderError, Request, Response, Role, ToolCall, tool,
};

const CYCLES_PER_WRITER: u64 = 2_000;
const CHATS: usize = 400;

fn call(state: &str, token: u64, claimed_until: Option<u64>) -> CallRecord {
    let body = format!(r#"{{"id":"call_0","state":"{state}","attempt":{token},"token":{token}}}"#);
    CallRecord::new(
        1,
        0,
        "call_0".into(),
        state.into(),
        1,
        token,
        claimed_until,
        body,
    )
}

/// `writers` tasks at once, each on its own chat, each doing `CYCLES_PER_WRITER` claim → finish
/// cycles; returns cycles per second.
async fn cycles(store: Arc<dyn Store>, run: usize, writers: usize) -> f64 {
    let mut chats = Vec::new();
    for w in 0..writers {
        let id = format!("cycles-{run}-{w}");
        store
            .create_chat(&id, &ChatRecord::new("{}".into(), vec![], vec![], 0))
            .await
            .unwrap();
        let RunClaim::Granted { token, .. } = store
            .claim_run(&id, "bench", 0, Duration::from_secs(3600))
            .await
            .unwrap()
        else {
            panic!("not granted")
        };
        let insert = Commit::new(
            token,
            "{}".into(),
            0,
            vec![],
            vec![CallWrite::new(call("ready", 0, None), None)],
        );
        store.commit(&id, &insert).await.unwrap();
        chats.push((id, token));
    }
    let start = Instant::now();
    let tasks: Vec<_> = chats
        .into_iter()
        .map(|(id, run_token)| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                for n in 0..CYCLES_PER_WRITER {
                    let claim = Commit::new(
                        run_token,
                        "{}".into(),
                        0,
                        vec![],
                        vec![CallWrite::new(
                            call("running", n + 1, Some(u64::MAX / 2)),
                            Some(n),
                        )],
                    );
                    store.commit(&id, &claim).await.unwrap();
                    let finish = Commit::new(
                        run_token,
                        "{}".into(),
                        0,
                        vec![],
                        vec![CallWrite::new(call("finished", n + 1, None), Some(n + 1))],
                    );
                    store.commit(&id, &finish).await.unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    (CYCLES_PER_WRITER as f64 * writers as f64) / start.elapsed().as_secs_f64()
}

/// Asks for `lookup` once, then answers.
struct OneCall;

impl Provider for OneCall {
    fn protocol(&self) -> &str {
        "bench"
    }
    fn model(&self) -> &str {
        "one-call"
    }
    fn complete<'a>(
        &'a self,
        request: Request<'a>,
    ) -> BoxFuture<'a, Result<Response, ProviderError>> {
        let answered = request.messages.iter().any(|m| m.role == Role::Tool);
        let message = if answered {
            Message::assistant("done")
        } else {
            Message::assistant_with_calls("", vec![ToolCall::new("c1", "lookup", r#"{"n":1}"#)])
        };
        Box::pin(async move { Ok(Response::new(message)) })
    }
}

/// Looks a number up
#[tool]
async fn lookup(n: u32) -> String {
    format!("found {n}")
}

/// `CHATS` chats enqueued, then answered by `workers` workers (concurrency 4 each); returns
/// chats per second.
async fn chats_through_workers(store: Arc<dyn Store>, run: usize, workers: usize) -> f64 {
    let ids: Vec<String> = (0..CHATS).map(|n| format!("w{run}-{n}")).collect();
    for id in &ids {
        let mut chat = Chat::create(Arc::clone(&store), id.as_str(), OneCall)
            .await
            .unwrap();
        chat.enqueue("go").await.unwrap();
    }
    let start = Instant::now();
    let done = Arc::new(tokio::sync::Notify::new());
    let handles: Vec<_> = (0..workers)
        .map(|_| {
            let worker = Worker::new(Arc::clone(&store), OneCall)
                .with_concurrency(4)
                .with_idle_poll(Duration::from_millis(5))
                .with_setup(|_, chat| {
                    chat.with_tools(Lookup)?;
                    Ok(())
                });
            let done = Arc::clone(&done);
            tokio::spawn(
                async move { worker.run_until(async move { done.notified().await }).await },
            )
        })
        .collect();
    let mut answered = 0;
    while answered < CHATS {
        tokio::time::sleep(Duration::from_millis(5)).await;
        answered = 0;
        for id in &ids {
            answered += usize::from(store.load_chat(id).await.unwrap().wake_at.is_none());
        }
    }
    let elapsed = start.elapsed();
    done.notify_waiters();
    let mut turns = 0;
    for handle in handles {
        done.notify_waiters();
        turns += handle.await.unwrap().done;
    }
    assert_eq!(turns, CHATS);
    CHATS as f64 / elapsed.as_secs_f64()
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = llm_tools_tests::postgres::PostgresServer::start().ok();
    let dir = tempfile::tempdir().unwrap();
    runtime.block_on(async {
        let mut stores: Vec<(&str, Arc<dyn Store>)> = vec![(
            "SQLite",
            Arc::new(
                SqliteStore::open(dir.path().join("bench.db"))
                    .await
                    .unwrap(),
            ),
        )];
        match &server {
            Some(server) => stores.push((
                "PostgreSQL",
                Arc::new(
                    PostgresStore::connect_with(
                        &server.url(),
                        PostgresOptions::default().with_schema("bench"),
                    )
                    .await
                    .unwrap(),
                ),
            )),
            None => println!("no PostgreSQL server could start here: its rows are left out"),
        }
        println!(
            "| store | writers / workers | claim → finish cycles/s | chats/s through workers |"
        );
        println!("|---|---:|---:|---:|");
        for (name, store) in &stores {
            for n in 1..=4 {
                let c = cycles(Arc::clone(store), n, n).await;
                let w = chats_through_workers(Arc::clone(store), n, n).await;
                println!("| {name} | {n} | {c:.0} | {w:.0} |");
            }
        }
    });
}
