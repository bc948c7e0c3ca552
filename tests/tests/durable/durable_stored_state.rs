//! A stored chat whose state this library cannot use (written by a newer version, or a round
//! that points past its messages) fails to load with an error that names the chat.
#![allow(clippy::expect_used)] // helpers outside `#[test]` fns

use llm_tools_core::store::SqliteStore;
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{Chat, ConfigError, Error};

async fn load_after(meta_change: &str, chat_id: &str) -> Error {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("chats.db");
    let store = SqliteStore::open(&path).await.expect("opens");
    Chat::create(store.clone(), chat_id, ScriptedProvider::new())
        .await
        .expect("created");
    let conn = rusqlite::Connection::open(&path).expect("the file");
    conn.execute(
        &format!("UPDATE llm_tools_chats SET meta = {meta_change} WHERE id = ?1"),
        [chat_id],
    )
    .expect("changed");
    Chat::load(store, chat_id, ScriptedProvider::new())
        .await
        .expect_err("the state cannot be used")
}

#[tokio::test]
async fn a_newer_or_inconsistent_stored_state_names_its_chat() {
    let err = load_after("json_set(meta, '$.version', 99)", "chat-from-the-future").await;
    assert!(err.to_string().contains("chat-from-the-future"), "{err}");
    assert!(
        matches!(
            &err,
            Error::InvalidConfig(ConfigError::StoredChat { chat_id, source })
                if chat_id == "chat-from-the-future"
                    && matches!(**source, ConfigError::NewerState { found: 99, .. })
        ),
        "{err:?}"
    );

    let err = load_after(
        "json_set(meta, '$.round', json('{\"message\": 40, \"appended\": 0}'))",
        "chat-with-a-stray-round",
    )
    .await;
    assert!(err.to_string().contains("chat-with-a-stray-round"), "{err}");
    assert!(
        matches!(
            &err,
            Error::InvalidConfig(ConfigError::StoredChat { source, .. })
                if matches!(**source, ConfigError::InconsistentState { .. })
        ),
        "{err:?}"
    );
}
