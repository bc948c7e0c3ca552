//! Loop control in durable chats: a turn a stop condition ended rests in the store (no worker
//! picks it again) until the application carries it on (`complete`, or a message it enqueues),
//! on a real SQLite file and a real PostgreSQL server.

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
        .then_text("Submitted.")
        .then_call("submit_order", json!({"id": 8}))
        .then_text("Submitted again.");
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

    // Stopped again by a worker's turn, then carried on by a message the application enqueues
    // (from another process): the chat is due for it, and a worker answers it.
    chat.enqueue("Order another").await.expect("enqueued");
    let report = worker.run_once().await.expect("ran");
    assert_eq!((report.turns, report.stopped), (1, 1), "{report:?}");
    assert_eq!(store.load_chat("stops").await.expect("loads").wake_at, None);
    let mut chat = Chat::load(Arc::clone(&store), "stops", model.clone())
        .await
        .expect("loads");
    chat.enqueue("Go on").await.expect("enqueued");
    assert_eq!(chat.stopped(), None, "the application spoke");
    assert!(
        store
            .load_chat("stops")
            .await
            .expect("loads")
            .wake_at
            .is_some(),
        "due for the message"
    );
    let report = worker.run_once().await.expect("ran");
    assert_eq!((report.turns, report.done), (1, 1), "{report:?}");
    let chat = Chat::load(Arc::clone(&store), "stops", model.clone())
        .await
        .expect("loads");
    assert_eq!(
        chat.messages().last().map(|m| m.text()).as_deref(),
        Some("Submitted again.")
    );
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
    // The id of the call summarised away is remembered (no later call is given it).
    let retired = |chat: &Chat| {
        serde_json::to_value(chat.state()).expect("state")["retired_call_ids"].clone()
    };
    let kept = retired(&chat);
    assert_eq!(kept.as_array().map(Vec::len), Some(1), "{kept}");
    drop(chat);

    let chat = Chat::load(Arc::clone(&store), "compacts", model)
        .await
        .expect("loads");
    assert_eq!(chat.messages(), held.as_slice());
    assert!(chat.messages()[0].text().starts_with(SUMMARY_PREFIX));
    assert!(chat.messages().iter().all(|m| m.text().len() < 2_000));
    assert_eq!(retired(&chat), kept, "the store keeps the ids");
}

#[tokio::test]
async fn a_history_compacted_between_turns_is_stored() {
    use llm_tools_core::chat::{Compaction, SUMMARY_PREFIX};
    let dir = tempfile::tempdir().expect("temp dir");
    let store: Arc<dyn Store> = Arc::new(
        SqliteStore::open(dir.path().join("chats.db"))
            .await
            .expect("opens"),
    );
    let model = ScriptedProvider::new()
        .then_call("long_report", json!({}))
        .then_text("Read.")
        .then_text("Noted.");
    let summariser = ScriptedProvider::new().then_text("A long report was read.");
    let mut chat = Chat::create(Arc::clone(&store), "compacted", model.clone())
        .await
        .expect("created");
    chat.with_tools(LongReport).expect("tools");
    let _ = chat.ask("Read it").await.expect("asks");
    let _ = chat.ask("Thanks").await.expect("asks");
    let compaction = Compaction::at_characters(500)
        .keep_recent_messages(1)
        .with_summariser(summariser);
    assert!(chat.compact(Some(&compaction)).await.expect("compacted"));
    let held = chat.messages().to_vec();
    drop(chat);

    let chat = Chat::load(Arc::clone(&store), "compacted", model)
        .await
        .expect("loads");
    assert_eq!(chat.messages(), held.as_slice());
    assert!(chat.messages()[0].text().starts_with(SUMMARY_PREFIX));
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

/// Turns that each run a tool while compaction keeps the history short: each round is stored
/// at the place of the message that made it, which compaction moves back, so later rounds land
/// where earlier ones were stored (the first turn's two rounds at messages 2 and 4, the third
/// turn's round at 4 again). Every turn is answered, and the chat loads.
async fn rounds_after_compaction_land_where_older_rounds_were(store: Arc<dyn Store>) {
    use llm_tools_core::chat::Compaction;
    let mut model = ScriptedProvider::new().then_call("long_report", json!({}));
    let mut summariser = ScriptedProvider::new();
    for turn in 0..6 {
        model = model
            .then_call("long_report", json!({}))
            .then_text(format!("Read {turn}."));
        summariser = summariser.then_text(format!("Summary {turn}."));
    }
    let mut chat = Chat::create(Arc::clone(&store), "rounds", model.clone())
        .await
        .expect("created");
    chat.with_instructions("Be brief.")
        .with_tools(LongReport)
        .expect("tools")
        .with_compaction(
            Compaction::at_characters(500)
                .keep_recent_messages(1)
                .with_summariser(summariser),
        );
    for turn in 0..6 {
        let outcome = chat.ask(format!("Read it ({turn})")).await;
        assert_eq!(
            outcome.expect("answered").text(),
            Some(format!("Read {turn}.")),
            "turn {turn}"
        );
    }
    let held = chat.messages().to_vec();
    drop(chat);
    let chat = Chat::load(Arc::clone(&store), "rounds", model)
        .await
        .expect("loads");
    assert_eq!(chat.messages(), held.as_slice());
}

#[tokio::test]
async fn rounds_after_compaction_are_stored_in_sqlite() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store: Arc<dyn Store> = Arc::new(
        SqliteStore::open(dir.path().join("chats.db"))
            .await
            .expect("opens"),
    );
    rounds_after_compaction_land_where_older_rounds_were(store).await;
}

#[tokio::test]
async fn rounds_after_compaction_are_stored_in_postgres() {
    let Some(server) = server_or_skip("loop control") else {
        return;
    };
    let store: Arc<dyn Store> = Arc::new(
        PostgresStore::connect_with(
            &server.url(),
            PostgresOptions::default().with_schema("compacted_rounds"),
        )
        .await
        .expect("connects"),
    );
    rounds_after_compaction_land_where_older_rounds_were(store).await;
}

/// The saves a [`NotingFiles`] saw: `(name, Some(token))` through the fenced store,
/// `(name, None)` otherwise.
type Saves = Arc<std::sync::Mutex<Vec<(String, Option<u64>)>>>;

/// A file store that notes which saves went through the store fenced by a run claim (with the
/// claim's token) and which did not, around a real SQLite file store.
struct NotingFiles {
    inner: Arc<dyn llm_tools_core::files::FileStore>,
    saves: Saves,
    token: Option<u64>,
}

impl llm_tools_core::files::FileStore for NotingFiles {
    fn save<'a>(
        &'a self,
        name: &'a str,
        bytes: Vec<u8>,
    ) -> llm_tools_core::BoxFuture<'a, std::io::Result<String>> {
        self.saves
            .lock()
            .expect("lock")
            .push((name.to_owned(), self.token));
        self.inner.save(name, bytes)
    }

    fn load<'a>(
        &'a self,
        name: &'a str,
    ) -> llm_tools_core::BoxFuture<'a, std::io::Result<Vec<u8>>> {
        self.inner.load(name)
    }

    fn list(&self) -> llm_tools_core::BoxFuture<'_, std::io::Result<Vec<String>>> {
        self.inner.list()
    }

    fn fenced(
        &self,
        chat_id: &str,
        run_token: u64,
    ) -> Option<Arc<dyn llm_tools_core::files::FileStore>> {
        Some(Arc::new(NotingFiles {
            inner: self.inner.fenced(chat_id, run_token)?,
            saves: Arc::clone(&self.saves),
            token: Some(run_token),
        }))
    }
}

#[tokio::test]
async fn a_result_compacted_during_a_durable_turn_is_kept_through_the_run_claims_fence() {
    use llm_tools_core::chat::Compaction;
    let dir = tempfile::tempdir().expect("temp dir");
    let sqlite = SqliteStore::open(dir.path().join("chats.db"))
        .await
        .expect("opens");
    let store: Arc<dyn Store> = Arc::new(sqlite.clone());
    let saves = Arc::new(std::sync::Mutex::new(Vec::new()));
    let files = Arc::new(NotingFiles {
        inner: Arc::new(sqlite.file_store("fenced-compaction")),
        saves: Arc::clone(&saves),
        token: None,
    });
    let model = ScriptedProvider::new()
        .then_call("long_report", json!({}))
        .then_text("Read.")
        .then_text("Noted.");
    let summariser = ScriptedProvider::new().then_text("A long report was read.");
    let mut chat = Chat::create(Arc::clone(&store), "fenced-compaction", model)
        .await
        .expect("created");
    chat.with_tools(LongReport)
        .expect("tools")
        .with_shared_file_store(files.clone())
        .with_compaction(
            Compaction::at_characters(500)
                .keep_recent_messages(1)
                .with_summariser(summariser),
        );
    let _ = chat.ask("Read it").await.expect("asks");
    let _ = chat.ask("Thanks").await.expect("asks");
    let saves = saves.lock().expect("lock").clone();
    let kept: Vec<_> = saves
        .iter()
        .filter(|(name, _)| name.starts_with("compacted"))
        .collect();
    assert_eq!(kept.len(), 1, "the long result was kept once: {saves:?}");
    assert!(
        saves.iter().all(|(_, token)| token.is_some()),
        "a save of the turn went around the run claim's fence: {saves:?}"
    );
    // The kept file is there, whole.
    let (name, _) = kept[0];
    let bytes = llm_tools_core::files::FileStore::load(files.as_ref(), name)
        .await
        .expect("kept");
    assert_eq!(bytes.len(), 5_000);
}

/// Says the time
#[tool]
async fn clock() -> String {
    "noon".into()
}

/// Two turns of calls, the history compacted to `kept` recent messages, then a third turn of
/// calls: its round is stored, whatever place compaction moved it to (an earlier round's place
/// among them, whose calls are still stored).
async fn a_round_after_compaction_is_stored(
    store: Arc<dyn Store>,
    chat_id: &str,
    kept: usize,
) -> usize {
    use llm_tools_core::chat::Compaction;
    let model = ScriptedProvider::new()
        .then_call("clock", json!({}))
        .then_call("clock", json!({}))
        .then_text("First.")
        .then_calls([("clock", json!({})), ("clock", json!({}))])
        .then_text("Second.")
        .then_call("clock", json!({}))
        .then_text("Third.");
    let mut chat = Chat::create(Arc::clone(&store), chat_id, model.clone())
        .await
        .expect("created");
    chat.with_tools(Clock).expect("tools");
    let _ = chat.ask("u1").await.expect("turn 1");
    let _ = chat.ask("u2").await.expect("turn 2");
    let compaction = Compaction::at_characters(0)
        .keep_recent_messages(kept)
        .with_summariser(ScriptedProvider::new().then_text("Two turns of clocks."));
    let compacted = chat.compact(Some(&compaction)).await.expect("compacted");
    let length = chat.messages().len();
    let third = chat.ask("u3").await;
    assert_eq!(
        third.expect("turn 3 is stored").text().as_deref(),
        Some("Third."),
        "kept {kept}"
    );
    let held = chat.messages().to_vec();
    drop(chat);
    let chat = Chat::load(Arc::clone(&store), chat_id, model)
        .await
        .expect("loads");
    assert_eq!(chat.messages(), held.as_slice(), "kept {kept}");
    // The history's length after compaction, or 0 when nothing was compacted.
    if compacted { length } else { 0 }
}

/// Runs the case for every number of recent messages kept: among them, the one that moves
/// the third turn's round to the second turn's place (7, after a history of 6).
async fn rounds_after_compaction_are_stored(store: Arc<dyn Store>) {
    let mut lengths = Vec::new();
    for kept in 1..=8 {
        lengths.push(
            a_round_after_compaction_is_stored(Arc::clone(&store), &format!("kept-{kept}"), kept)
                .await,
        );
    }
    assert!(lengths.contains(&6), "{lengths:?}");
}

#[tokio::test]
async fn a_round_after_compaction_is_stored_in_sqlite() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store: Arc<dyn Store> = Arc::new(
        SqliteStore::open(dir.path().join("chats.db"))
            .await
            .expect("opens"),
    );
    rounds_after_compaction_are_stored(store).await;
}

#[tokio::test]
async fn a_round_after_compaction_is_stored_in_postgres() {
    let Some(server) = server_or_skip("rounds after compaction") else {
        return;
    };
    let store: Arc<dyn Store> = Arc::new(
        PostgresStore::connect_with(
            &server.url(),
            PostgresOptions::default().with_schema("rounds_after_compaction"),
        )
        .await
        .expect("connects"),
    );
    rounds_after_compaction_are_stored(store).await;
}
