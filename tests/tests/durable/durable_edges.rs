//! The edges of durable chats on both stores (`llm_tools_tests::store_suite::EDGE_CASES`):
//! a turn whose run claim cannot be renewed stops and never runs a call twice at once (and
//! its worker, picking the chat again meanwhile, gives it back until the turn has stopped), a
//! `sequential` call stays a barrier after a takeover, nothing the application adds is
//! dropped silently, a call whose tool the chat does not have stays pending, a cancel from any
//! process, and file writes fenced by the run claim. PostgreSQL is the test tooling's own
//! server (`llm_tools_tests::postgres`).
#![allow(clippy::expect_used, clippy::panic)] // helpers outside `#[test]` fns

use std::sync::Arc;

use llm_tools_core::files::FileStore;
use llm_tools_core::store::{PostgresOptions, PostgresStore, SqliteStore, Store};
use llm_tools_tests::postgres::server_or_skip;
use llm_tools_tests::store_suite::{
    EDGE_CASES, a_stale_holders_file_writes_are_refused, run_cases,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_store_holds_at_the_edges() {
    let dirs = std::sync::Mutex::new(Vec::new());
    run_cases(EDGE_CASES, |_| async {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = SqliteStore::open(dir.path().join("chats.db"))
            .await
            .expect("opens");
        dirs.lock().expect("lock").push(dir);
        Arc::new(store) as Arc<dyn Store>
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_store_holds_at_the_edges() {
    let Some(server) = server_or_skip("the PostgreSQL edge cases") else {
        return;
    };
    let url = server.url();
    run_cases(EDGE_CASES, |number| {
        let url = url.clone();
        async move {
            let options = PostgresOptions::default().with_schema(format!("edges_{number}"));
            let store = PostgresStore::connect_with(&url, options)
                .await
                .expect("connects");
            Arc::new(store) as Arc<dyn Store>
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_file_writes_are_fenced_by_the_run_claim() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(dir.path().join("chats.db"))
        .await
        .expect("opens");
    let files = store.clone();
    a_stale_holders_file_writes_are_refused(Arc::new(store), move |chat_id| {
        Arc::new(files.file_store(chat_id)) as Arc<dyn FileStore>
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_file_writes_are_fenced_by_the_run_claim() {
    let Some(server) = server_or_skip("the PostgreSQL file fencing") else {
        return;
    };
    let options = PostgresOptions::default().with_schema("fenced_files");
    let store = PostgresStore::connect_with(&server.url(), options)
        .await
        .expect("connects");
    let files = store.clone();
    a_stale_holders_file_writes_are_refused(Arc::new(store), move |chat_id| {
        Arc::new(files.file_store(chat_id)) as Arc<dyn FileStore>
    })
    .await;
}

/// Two machines share a PostgreSQL store; one's clock runs 45 s ahead (more than the 30 s
/// lease). Claims and leases are read in the database server's time, so that machine sees the
/// other's live claim as held: it neither takes the chat over nor reads the claim as ending
/// later or sooner than it does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_machine_whose_clock_runs_ahead_sees_another_machines_claim_as_held() {
    use std::time::Duration;

    use llm_tools_core::chat::{Chat, Outcome};
    use llm_tools_core::store::RunClaim;
    use llm_tools_core::testing::ScriptedProvider;

    let Some(server) = server_or_skip("the store's clock") else {
        return;
    };
    let options = PostgresOptions::default().with_schema("clocks");
    let on_time = PostgresStore::connect_with(&server.url(), options.clone())
        .await
        .expect("connects");
    let ahead =
        PostgresStore::connect_with(&server.url(), options.with_clock_skew_for_testing(45_000))
            .await
            .expect("connects");
    let apart = on_time.now_ms().abs_diff(ahead.now_ms());
    assert!(apart < 1_000, "the two read clocks {apart} ms apart");

    let store: Arc<dyn Store> = Arc::new(on_time.clone());
    Chat::create(
        Arc::clone(&store),
        "clocked",
        ScriptedProvider::new().then_text("hi"),
    )
    .await
    .expect("created");
    let lease = Duration::from_secs(30);
    let granted = on_time
        .claim_run("clocked", "machine-a", on_time.now_ms(), lease)
        .await
        .expect("claims");
    assert!(matches!(granted, RunClaim::Granted { .. }), "{granted:?}");

    // The store itself, asked by the machine ahead.
    let taken = ahead
        .claim_run("clocked", "machine-b", ahead.now_ms(), lease)
        .await
        .expect("asks");
    assert!(matches!(taken, RunClaim::Busy { .. }), "{taken:?}");

    // A chat on the machine ahead: busy, for about the rest of the lease.
    let mut chat = Chat::load(
        Arc::new(ahead.clone()),
        "clocked",
        ScriptedProvider::new().then_text("taken over"),
    )
    .await
    .expect("loaded");
    match chat.complete().await.expect("an outcome") {
        Outcome::Busy(busy) => {
            let remaining = busy.remaining();
            assert!(
                remaining > Duration::from_secs(20) && remaining <= lease,
                "the claim reads as ending in {remaining:?}"
            );
        }
        other => panic!("the machine ahead took the chat over: {other:?}"),
    }
}
