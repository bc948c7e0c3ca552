//! Secrets kept by the stores (an MCP server's OAuth tokens, encrypted by the caller): saved,
//! replaced, read from another connection, cleared, and bounded, on a real SQLite file and a
//! real PostgreSQL server.

#![allow(clippy::expect_used)] // test helpers outside `#[test]` fns

use std::sync::Arc;

use llm_tools_core::store::{
    MAX_SECRET_BYTES, MAX_SECRET_KEY_BYTES, PostgresOptions, PostgresStore, SqliteStore, Store,
};
use llm_tools_tests::postgres::server_or_skip;

async fn secrets_are_kept_apart_and_bounded(first: Arc<dyn Store>, second: Arc<dyn Store>) {
    assert_eq!(first.load_secret("mcp/github").await.expect("reads"), None);
    first
        .save_secret("mcp/github", b"sealed-1")
        .await
        .expect("saves");
    first
        .save_secret("mcp/github", b"sealed-2")
        .await
        .expect("replaces");
    first
        .save_secret("mcp/linear", b"other")
        .await
        .expect("saves");
    // Another connection (another process, in a deployment) reads what was saved.
    assert_eq!(
        second.load_secret("mcp/github").await.expect("reads"),
        Some(b"sealed-2".to_vec())
    );
    second.clear_secret("mcp/github").await.expect("clears");
    assert_eq!(first.load_secret("mcp/github").await.expect("reads"), None);
    assert_eq!(
        first.load_secret("mcp/linear").await.expect("reads"),
        Some(b"other".to_vec())
    );
    // Past the bounds: a clear error, nothing written.
    let big = vec![7u8; MAX_SECRET_BYTES + 1];
    let err = first
        .save_secret("mcp/big", &big)
        .await
        .expect_err("refused");
    assert!(err.to_string().contains("at most"), "{err}");
    assert_eq!(first.load_secret("mcp/big").await.expect("reads"), None);
    let long_key = "k".repeat(MAX_SECRET_KEY_BYTES + 1);
    assert!(first.save_secret(&long_key, b"x").await.is_err());
    assert!(first.save_secret("", b"x").await.is_err());
    // Secrets are not chats.
    assert!(first.load_chat("mcp/linear").await.is_err());
}

#[tokio::test]
async fn sqlite_keeps_secrets() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("chats.db");
    let first: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).await.expect("opens"));
    let second: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).await.expect("opens"));
    secrets_are_kept_apart_and_bounded(Arc::clone(&first), second).await;

    // A value written around the store, past the bound: refused unread.
    let conn = rusqlite::Connection::open(&path).expect("sqlite");
    conn.execute(
        "INSERT INTO llm_tools_secrets (key, value) VALUES ('mcp/huge', zeroblob(?1))",
        [i64::try_from(MAX_SECRET_BYTES + 1).expect("fits")],
    )
    .expect("written around the store");
    let err = first.load_secret("mcp/huge").await.expect_err("refused");
    assert!(err.to_string().contains("not read"), "{err}");
}

#[tokio::test]
async fn postgres_keeps_secrets() {
    let Some(server) = server_or_skip("secrets") else {
        return;
    };
    let connect = || async {
        Arc::new(
            PostgresStore::connect_with(
                &server.url(),
                PostgresOptions::default().with_schema("secrets"),
            )
            .await
            .expect("connects"),
        ) as Arc<dyn Store>
    };
    let first = connect().await;
    let second = connect().await;
    secrets_are_kept_apart_and_bounded(Arc::clone(&first), second).await;

    // A value written around the store, past the bound: refused unread.
    let (client, connection) = tokio_postgres::connect(&server.url(), tokio_postgres::NoTls)
        .await
        .expect("admin");
    let task = tokio::spawn(connection);
    client
        .execute(
            "INSERT INTO secrets.llm_tools_secrets (key, value) VALUES ('mcp/huge', $1)",
            &[&vec![0u8; MAX_SECRET_BYTES + 1]],
        )
        .await
        .expect("written around the store");
    let err = first.load_secret("mcp/huge").await.expect_err("refused");
    assert!(err.to_string().contains("not read"), "{err}");
    task.abort();
}
