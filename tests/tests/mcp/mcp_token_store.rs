//! OAuth tokens kept in a durable chat store, encrypted at rest (`StoreTokenStore`): another
//! process with the same key reads them (no new login), the database never holds them in
//! clear, and another key, a changed entry or an entry copied under another name is refused.
//! Real SQLite files and a real PostgreSQL server.

#![allow(clippy::expect_used)] // test helpers outside `#[test]` fns

use std::sync::Arc;

use llm_tools_core::store::{PostgresOptions, PostgresStore, SqliteStore, Store};
use llm_tools_mcp::{StoreTokenStore, StoredTokens, TokenStore};
use llm_tools_tests::postgres::server_or_skip;

const KEY: [u8; 32] = [42; 32];

fn tokens() -> StoredTokens {
    StoredTokens::from_json(serde_json::json!({
        "client_id": "llm-tools",
        "token_response": {
            "access_token": "access-canary-5c1f",
            "token_type": "bearer",
            "refresh_token": "refresh-canary-9d2e"
        }
    }))
    .expect("tokens")
}

async fn tokens_survive_and_stay_sealed(first: Arc<dyn Store>, second: Arc<dyn Store>) {
    let writer = StoreTokenStore::new(Arc::clone(&first), &KEY);
    assert!(writer.load("github").await.expect("reads").is_none());
    writer.save("github", tokens()).await.expect("saves");

    // Another process: the same store, the same key, no login.
    let reader = StoreTokenStore::new(Arc::clone(&second), &KEY);
    let read = reader.load("github").await.expect("reads").expect("kept");
    assert_eq!(read.to_json(), tokens().to_json());

    // At rest: neither token in clear, and a fresh nonce each save.
    let sealed = second
        .load_secret("mcp-oauth/github")
        .await
        .expect("reads")
        .expect("kept");
    let text = String::from_utf8_lossy(&sealed);
    assert!(!text.contains("canary"), "tokens in clear: {text}");
    writer.save("github", tokens()).await.expect("saves again");
    let again = second
        .load_secret("mcp-oauth/github")
        .await
        .expect("reads")
        .expect("kept");
    assert_ne!(sealed, again);

    // Another key: refused, never used.
    let other = StoreTokenStore::new(Arc::clone(&second), &[1; 32]);
    let err = other.load("github").await.expect_err("another key");
    assert!(err.contains("do not open"), "{err}");
    // A changed entry: refused.
    let mut changed = again.clone();
    if let Some(last) = changed.last_mut() {
        *last ^= 1;
    }
    second
        .save_secret("mcp-oauth/github", &changed)
        .await
        .expect("writes");
    assert!(reader.load("github").await.is_err());
    // An entry copied under another server's name: refused.
    second
        .save_secret("mcp-oauth/linear", &again)
        .await
        .expect("writes");
    assert!(reader.load("linear").await.is_err());
    // Cleared: gone.
    reader.clear("github").await.expect("clears");
    assert!(writer.load("github").await.expect("reads").is_none());
    // Debug shows no key material.
    assert!(format!("{writer:?}").contains("<redacted>"));
}

#[tokio::test]
async fn tokens_in_a_sqlite_store() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("chats.db");
    let first: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).await.expect("opens"));
    let second: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).await.expect("opens"));
    tokens_survive_and_stay_sealed(first, second).await;
}

#[tokio::test]
async fn tokens_in_a_postgres_store() {
    let Some(server) = server_or_skip("token store") else {
        return;
    };
    let connect = || async {
        Arc::new(
            PostgresStore::connect_with(
                &server.url(),
                PostgresOptions::default().with_schema("tokens"),
            )
            .await
            .expect("connects"),
        ) as Arc<dyn Store>
    };
    let first = connect().await;
    let second = connect().await;
    tokens_survive_and_stay_sealed(first, second).await;
}
