//! What durability costs on SQLite (a file in the temporary folder, WAL mode):
//!
//! - a call's claim and its finish, the two conditional writes every tool call of a durable chat
//!   makes, as the chat writes them (one transaction each);
//! - one round of the `chat_round` benchmark (20 tools, 50 messages, 3 calls) in a durable chat,
//!   next to the same round in memory: the run claim, the answer, the three claims, the three
//!   results and the release, each written as it happens.
//!
//! Wall-clock time (the writes are I/O).
//!
//! `cargo bench -p llm-tools-core --features sqlite --bench durable`
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod round_setup;

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use llm_tools_core::chat::{Chat, Step};
use llm_tools_core::store::{
    CallRecord, CallWrite, ChatRecord, Commit, RunClaim, SqliteStore, Store,
};
use llm_tools_core::testing::ScriptedProvider;
use round_setup::{all_tools, history, three_calls};

fn call(state: &str, token: u64, claimed_until: Option<u64>) -> CallRecord {
    let body = format!(r#"{{"id":"call_0","state":"{state}","attempt":{token},"token":{token}}}"#);
    CallRecord::new(
        43,
        0,
        "call_0".into(),
        state.into(),
        1,
        token,
        claimed_until,
        body,
    )
}

fn durable(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = std::env::temp_dir().join(format!("llm-tools-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = runtime
        .block_on(SqliteStore::open(dir.join("bench.db")))
        .unwrap();
    let mut chat_number = 0_u64;
    let mut next_id = move || {
        chat_number += 1;
        format!("bench-{chat_number}")
    };

    let mut group = c.benchmark_group("sqlite");
    group.throughput(Throughput::Elements(1));
    group.bench_function("call claim → finish", |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let id = next_id();
                store
                    .create_chat(&id, &ChatRecord::new("{}".into(), vec![], vec![], 0))
                    .await
                    .unwrap();
                let RunClaim::Granted { token: run, .. } = store
                    .claim_run(&id, "bench", 0, Duration::from_secs(3600))
                    .await
                    .unwrap()
                else {
                    panic!("not granted")
                };
                let insert = Commit::new(
                    run,
                    "{}".into(),
                    0,
                    vec![],
                    vec![CallWrite::new(call("ready", 0, None), None)],
                );
                store.commit(&id, &insert).await.unwrap();
                let start = Instant::now();
                for n in 0..iters {
                    let claim = Commit::new(
                        run,
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
                        run,
                        "{}".into(),
                        0,
                        vec![],
                        vec![CallWrite::new(call("finished", n + 1, None), Some(n + 1))],
                    );
                    store.commit(&id, &finish).await.unwrap();
                }
                start.elapsed()
            })
        });
    });
    group.finish();

    let tools = all_tools();
    let state = history();
    let model = ScriptedProvider::new()
        .then(three_calls())
        .cycle()
        .without_recording();
    let mut group = c.benchmark_group("round of 3 calls, 20 tools, 50 messages");
    group.bench_function("in memory", |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let mut chat = Chat::from_state(model.clone(), state.clone()).unwrap();
                    chat.with_tools(tools.clone()).unwrap();
                    let start = Instant::now();
                    assert_eq!(chat.step().await.unwrap(), Step::Continue);
                    total += start.elapsed();
                }
                total
            })
        });
    });
    group.bench_function("durable, SQLite", |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let mut chat = Chat::from_state(model.clone(), state.clone()).unwrap();
                    chat.store_in(store.clone(), next_id()).await.unwrap();
                    chat.with_tools(tools.clone()).unwrap();
                    let start = Instant::now();
                    assert_eq!(chat.step().await.unwrap(), Step::Continue);
                    total += start.elapsed();
                }
                total
            })
        });
    });
    group.finish();
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, durable);
criterion_main!(benches);
