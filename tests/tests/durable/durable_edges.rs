//! The edges of durable chats on both stores (`llm_tools_tests::store_suite::EDGE_CASES`):
//! a turn whose run claim cannot be renewed stops and never runs a call twice at once, a
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
