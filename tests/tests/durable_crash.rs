//! The crash test: worker processes (`durable_worker`) drive 200 durable chats in one SQLite
//! file while the test kills them with SIGKILL at random moments and starts new ones. At the end
//! every chat is finished, every call has exactly one result in its transcript, and a call ran
//! more than once only where the worker running it was killed. Seeded and bounded in count and
//! time (`LLM_TOOLS_CRASH_SEED` picks another seed).
#![allow(clippy::expect_used, clippy::print_stdout)] // a helper outside `#[test]` fns; the test prints its counts

use std::collections::{BTreeMap, HashSet};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use llm_tools_core::store::SqliteStore;
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{Chat, Message, Role};

const CHATS: usize = 200;
const WORKERS: usize = 3;
const KILLS: usize = 12;
const CALLS_PER_CHAT: usize = 5;
const DEADLINE: Duration = Duration::from_secs(240);

fn start_worker(db: &std::path::Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_durable_worker"))
        .arg(db)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the worker starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_workers_lose_no_result_and_write_none_twice() {
    let seed = std::env::var("LLM_TOOLS_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20261203_u64);
    fastrand::seed(seed);
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("crash.db");
    let store = SqliteStore::open(&db).await.expect("store");
    let log = rusqlite::Connection::open(&db).expect("sqlite");
    log.execute_batch(
        "CREATE TABLE executions (chat_id TEXT NOT NULL, call_id TEXT NOT NULL, attempt INTEGER NOT NULL, pid INTEGER NOT NULL)",
    )
    .expect("side table");
    for n in 0..CHATS {
        let mut chat = Chat::create(
            store.clone(),
            format!("chat-{n:03}"),
            ScriptedProvider::new(),
        )
        .await
        .expect("created");
        chat.enqueue("go").await.expect("enqueued");
    }

    let started = Instant::now();
    let mut workers: Vec<Child> = (0..WORKERS).map(|_| start_worker(&db)).collect();
    let mut killed = HashSet::new();
    while killed.len() < KILLS && started.elapsed() < DEADLINE {
        tokio::time::sleep(Duration::from_millis(fastrand::u64(30..250))).await;
        let victim = fastrand::usize(..workers.len());
        if workers[victim].try_wait().expect("status").is_some() {
            break; // the work is done
        }
        killed.insert(workers[victim].id());
        workers[victim].kill().expect("SIGKILL");
        workers[victim].wait().expect("reaped");
        workers[victim] = start_worker(&db);
    }
    for worker in &mut workers {
        loop {
            if let Some(status) = worker.try_wait().expect("status") {
                assert!(status.success(), "a worker failed: {status}");
                break;
            }
            assert!(
                started.elapsed() < DEADLINE,
                "the workers did not finish in time"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    // Every chat finished, each call with exactly one result, in call order.
    let mut results = 0;
    for n in 0..CHATS {
        let id = format!("chat-{n:03}");
        let chat = Chat::load(store.clone(), id.as_str(), ScriptedProvider::new())
            .await
            .expect("loaded");
        assert!(!chat.is_paused(), "{id} is paused");
        assert_eq!(
            chat.messages().last().map(Message::text).as_deref(),
            Some("finished"),
            "{id}"
        );
        let calls: Vec<&str> = chat
            .messages()
            .iter()
            .flat_map(|m| m.tool_calls.iter().map(|c| c.id.as_str()))
            .collect();
        assert_eq!(calls.len(), CALLS_PER_CHAT, "{id}");
        for call in &calls {
            let found: Vec<&Message> = chat
                .messages()
                .iter()
                .filter(|m| m.role == Role::Tool && m.tool_call_id.as_deref() == Some(call))
                .collect();
            assert_eq!(
                found.len(),
                1,
                "{id}: call {call} has {} results",
                found.len()
            );
            assert!(!found[0].is_error, "{id}: call {call}: {}", found[0].text());
            results += 1;
        }
    }

    // A call ran again only where the process running it was killed.
    let mut runs: BTreeMap<(String, String), Vec<(u32, u32)>> = BTreeMap::new();
    let mut statement = log
        .prepare("SELECT chat_id, call_id, attempt, pid FROM executions ORDER BY rowid")
        .expect("query");
    let rows = statement
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .expect("rows");
    let mut executions = 0;
    for row in rows {
        let (chat, call, attempt, pid): (String, String, u32, u32) = row.expect("row");
        runs.entry((chat, call)).or_default().push((attempt, pid));
        executions += 1;
    }
    assert_eq!(runs.len(), CHATS * CALLS_PER_CHAT, "every call ran");
    let mut again = 0;
    for ((chat, call), attempts) in &runs {
        let numbers: Vec<u32> = attempts.iter().map(|&(a, _)| a).collect();
        assert!(
            numbers.windows(2).all(|w| w[0] < w[1]),
            "{chat}/{call}: attempts {numbers:?}"
        );
        for &(attempt, pid) in &attempts[..attempts.len() - 1] {
            assert!(
                killed.contains(&pid),
                "{chat}/{call}: attempt {attempt} ran in {pid}, which was not killed, and ran again"
            );
            again += 1;
        }
    }
    println!(
        "crash test (seed {seed}): {CHATS} chats, {results} results, {executions} executions, \
         {again} re-executions after {} kills, {:.1} s",
        killed.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(!killed.is_empty(), "no worker was killed");
}
