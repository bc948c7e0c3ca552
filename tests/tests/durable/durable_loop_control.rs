//! Loop control in durable chats: a turn a stop condition ended rests in the store (no worker
//! picks it again) until the application carries it on, on a real SQLite file and a real
//! PostgreSQL server.

#![allow(clippy::expect_used)] // test helpers outside `#[test]` fns

use std::sync::Arc;

use llm_tools_core::chat::{Chat, StopReason, StopWhen};
use llm_tools_core::store::{PostgresOptions, PostgresStore, SqliteStore, Store, Worker};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::tool;
use llm_tools_tests::postgres::server_or_skip;
use serde_json::json;

/// Submits the order
#[tool]
async fn submit_order(id: u64) -> String {
    format!("order {id} submitted")
}

async fn a_stopped_turn_rests_until_carried_on(store: Arc<dyn Store>) {
    let model = ScriptedProvider::new()
        .then_call("submit_order", json!({"id": 7}))
        .then_text("Submitted.");
    let mut chat = Chat::create(Arc::clone(&store), "stops", model.clone())
        .await
        .expect("created");
    chat.enqueue("Order it").await.expect("enqueued");
    let worker = Worker::new(Arc::clone(&store), model.clone()).with_setup(|_, chat| {
        chat.with_tools(SubmitOrder)?
            .stop_when(StopWhen::tool_ran("submit_order"));
        Ok(())
    });
    let report = worker.run_once().await.expect("ran");
    assert_eq!((report.turns, report.stopped), (1, 1), "{report:?}");
    let record = store.load_chat("stops").await.expect("loads");
    assert_eq!(record.wake_at, None, "a stopped turn is not due");
    // No worker picks it again, so nothing more is spent.
    let again = worker.run_once().await.expect("ran");
    assert_eq!(again.turns, 0);
    assert_eq!(model.request_count(), 1);

    // The application carries it on: the reason was kept with the chat until then.
    let mut chat = Chat::load(Arc::clone(&store), "stops", model.clone())
        .await
        .expect("loads");
    assert_eq!(
        chat.stopped(),
        Some(&StopReason::ToolRan {
            tool: "submit_order".into()
        })
    );
    chat.with_tools(SubmitOrder).expect("tools");
    let outcome = chat.complete().await.expect("completes");
    assert_eq!(outcome.text().as_deref(), Some("Submitted."));
    assert_eq!(chat.stopped(), None);
}

#[tokio::test]
async fn a_stopped_turn_rests_in_a_sqlite_store() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store: Arc<dyn Store> = Arc::new(
        SqliteStore::open(dir.path().join("chats.db"))
            .await
            .expect("opens"),
    );
    a_stopped_turn_rests_until_carried_on(store).await;
}

#[tokio::test]
async fn a_stopped_turn_rests_in_a_postgres_store() {
    let Some(server) = server_or_skip("loop control") else {
        return;
    };
    let store: Arc<dyn Store> = Arc::new(
        PostgresStore::connect_with(
            &server.url(),
            PostgresOptions::default().with_schema("loop_control"),
        )
        .await
        .expect("connects"),
    );
    a_stopped_turn_rests_until_carried_on(store).await;
}

/// Reads a long report
#[tool]
async fn long_report() -> String {
    "x".repeat(5_000)
}

async fn a_compacted_history_is_what_the_store_holds(store: Arc<dyn Store>) {
    use llm_tools_core::chat::{Compaction, SUMMARY_PREFIX};
    let model = ScriptedProvider::new()
        .then_call("long_report", json!({}))
        .then_text("Read.")
        .then_text("Noted.");
    let summariser = ScriptedProvider::new().then_text("A long report was read.");
    let compaction = || {
        Compaction::at_characters(500)
            .keep_recent_messages(1)
            .with_summariser(summariser.clone())
    };
    let mut chat = Chat::create(Arc::clone(&store), "compacts", model.clone())
        .await
        .expect("created");
    chat.with_tools(LongReport)
        .expect("tools")
        .with_compaction(compaction());
    assert_eq!(
        chat.ask("Read it").await.expect("asks").text().as_deref(),
        Some("Read.")
    );
    assert_eq!(
        chat.ask("Thanks").await.expect("asks").text().as_deref(),
        Some("Noted.")
    );
    assert_eq!(summariser.request_count(), 1);
    let held = chat.messages().to_vec();
    drop(chat);

    let chat = Chat::load(Arc::clone(&store), "compacts", model)
        .await
        .expect("loads");
    assert_eq!(chat.messages(), held.as_slice());
    assert!(chat.messages()[0].text().starts_with(SUMMARY_PREFIX));
    assert!(chat.messages().iter().all(|m| m.text().len() < 2_000));
}

#[tokio::test]
async fn a_compacted_history_is_stored_in_sqlite() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store: Arc<dyn Store> = Arc::new(
        SqliteStore::open(dir.path().join("chats.db"))
            .await
            .expect("opens"),
    );
    a_compacted_history_is_what_the_store_holds(store).await;
}

#[tokio::test]
async fn a_compacted_history_is_stored_in_postgres() {
    let Some(server) = server_or_skip("loop control") else {
        return;
    };
    let store: Arc<dyn Store> = Arc::new(
        PostgresStore::connect_with(
            &server.url(),
            PostgresOptions::default().with_schema("compaction"),
        )
        .await
        .expect("connects"),
    );
    a_compacted_history_is_what_the_store_holds(store).await;
}
