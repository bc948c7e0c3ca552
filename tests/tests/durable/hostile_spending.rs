//! Spending without end, on both stores: a failing chat is tried a bounded number of times with
//! a doubling delay and then parked; a model that asks for tools every round is parked at the
//! round budget, never run again with a fresh one; a chat its tasks keep going turn after turn
//! stops at its chat budget; a chat whose turn ends its worker every time is parked after a
//! bounded number of abandoned claims, and its count starts again after a turn that ends; a
//! stored row that does not decode (written
//! here with the database's own SQL) is parked while the other chats run; databases of the
//! schema before parking existed migrate with their chats intact. The shared cases are
//! `llm_tools_tests::store_suite::SPENDING_CASES`; PostgreSQL is the test tooling's own server
//! (`llm_tools_tests::postgres`).
#![allow(clippy::expect_used, clippy::panic)] // helpers outside `#[test]` fns

use std::sync::Arc;
use std::time::Duration;

use llm_tools_core::store::{
    DurableOptions, ParkReason, PostgresOptions, PostgresStore, SCHEMA_VERSION, SqliteStore, Store,
    Worker,
};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{Chat, ProviderError};
use llm_tools_tests::postgres::server_or_skip;
use llm_tools_tests::store_suite::{SPENDING_CASES, run_cases};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_store_bounds_what_failing_chats_spend() {
    let dirs = std::sync::Mutex::new(Vec::new());
    run_cases(SPENDING_CASES, |_| async {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = SqliteStore::open(dir.path().join("chats.db"))
            .await
            .expect("opens");
        dirs.lock().expect("lock").push(dir);
        Arc::new(store) as Arc<dyn Store>
    })
    .await;
}

/// Two chats with a question each: `broken` and `fine`.
async fn two_asking_chats(store: &Arc<dyn Store>, model: &ScriptedProvider) {
    for id in ["broken", "fine"] {
        let mut chat = Chat::create(Arc::clone(store), id, model.clone())
            .await
            .expect("created");
        chat.enqueue(format!("Hi from {id}"))
            .await
            .expect("enqueued");
    }
}

/// After `broken`'s first message was overwritten with text that is no JSON: a worker parks
/// it, answers `fine`, and leaves the row as it was.
async fn the_broken_chat_is_parked_and_the_fine_one_answered(
    store: &Arc<dyn Store>,
    model: &ScriptedProvider,
) {
    let worker = Worker::new(Arc::clone(store), model.clone())
        .with_durable_options(DurableOptions::default().with_retry_delay(Duration::ZERO));
    let mut parked = 0;
    let mut done = 0;
    for _ in 0..4 {
        let report = worker.run_once().await.expect("the store answers");
        parked += report.parked;
        done += report.done;
    }
    assert_eq!((parked, done), (1, 1));
    assert_eq!(
        model.request_count(),
        1,
        "only the fine chat asked the model"
    );
    let status = store.chat_status("broken").await.expect("status");
    assert_eq!(status.parked, Some(ParkReason::Undecodable));
    let error = status.last_error.expect("kept");
    assert!(error.contains("message 0"), "{error}");
    assert_eq!(
        store.load_chat("broken").await.expect("stored").messages,
        ["not json at all"],
        "the row is kept as it was, for the application to look at"
    );
    let fine = Chat::load(Arc::clone(store), "fine", model.clone())
        .await
        .expect("loaded");
    assert_eq!(fine.messages()[1].text(), "Hello.");
}

#[tokio::test]
async fn a_message_row_corrupted_with_sql_parks_its_chat_on_sqlite() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("chats.db");
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).await.expect("opens"));
    let model = ScriptedProvider::new().then_text("Hello.").cycle();
    two_asking_chats(&store, &model).await;
    let conn = rusqlite::Connection::open(&path).expect("sqlite");
    conn.execute(
        "UPDATE llm_tools_messages SET body = 'not json at all' WHERE chat_id = 'broken'",
        [],
    )
    .expect("corrupted");
    drop(conn);
    the_broken_chat_is_parked_and_the_fine_one_answered(&store, &model).await;
}

/// Takes a database of this version back to schema version 2 (before parking): the columns
/// and indexes versions 3, 4 and 10 added, version 7's table of secrets and version 8's
/// trigger are dropped.
const SQLITE_BACK_TO_VERSION_2: &str = "
ALTER TABLE llm_tools_chats DROP COLUMN abandoned_claims;
DROP TRIGGER llm_tools_calls_retire_rounds;
DROP TABLE llm_tools_secrets;
ALTER TABLE llm_tools_chats DROP COLUMN cancel_requested;
DROP INDEX llm_tools_chats_parked;
DROP INDEX llm_tools_chats_due;
ALTER TABLE llm_tools_chats DROP COLUMN failures;
ALTER TABLE llm_tools_chats DROP COLUMN last_error;
ALTER TABLE llm_tools_chats DROP COLUMN parked;
ALTER TABLE llm_tools_chats DROP COLUMN parked_at;
CREATE INDEX llm_tools_chats_due ON llm_tools_chats (wake_at) WHERE wake_at IS NOT NULL;
UPDATE llm_tools_schema SET version = 2;
";

#[tokio::test]
async fn a_version_2_sqlite_database_migrates_and_its_chats_run_and_park() {
    assert_eq!(
        SCHEMA_VERSION, 11,
        "the script above takes version 11 back to 2 (SQLite's versions 9 and 11 changed no table)"
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("chats.db");
    let model = ScriptedProvider::new()
        .then_text("Hello.")
        .then_error(ProviderError::http("scripted", 500, "down"));
    {
        let store = SqliteStore::open(&path).await.expect("opens");
        for id in ["answered", "waiting"] {
            let mut chat = Chat::create(store.clone(), id, model.clone())
                .await
                .expect("created");
            chat.enqueue(format!("Hi from {id}"))
                .await
                .expect("enqueued");
        }
    }
    let conn = rusqlite::Connection::open(&path).expect("sqlite");
    conn.execute_batch(SQLITE_BACK_TO_VERSION_2)
        .expect("back to version 2");
    let columns: i64 = conn
        .query_row(
            "SELECT count(*) FROM pragma_table_info('llm_tools_chats') WHERE name = 'parked'",
            [],
            |r| r.get(0),
        )
        .expect("read");
    assert_eq!(columns, 0, "a version 2 table");
    drop(conn);

    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).await.expect("migrates"));
    old_chats_run_and_park_after_the_migration(&store, &model).await;
    let conn = rusqlite::Connection::open(&path).expect("sqlite");
    let version: i64 = conn
        .query_row("SELECT version FROM llm_tools_schema", [], |r| r.get(0))
        .expect("read");
    assert_eq!(u32::try_from(version).expect("positive"), SCHEMA_VERSION);
}

/// Chats `answered` and `waiting` (each with a question) stored before the migration: both
/// healthy; the first is answered, the second fails once with one attempt allowed and parks.
async fn old_chats_run_and_park_after_the_migration(
    store: &Arc<dyn Store>,
    model: &ScriptedProvider,
) {
    for id in ["answered", "waiting"] {
        let status = store.chat_status(id).await.expect("status");
        assert_eq!(
            (
                status.parked,
                status.failures,
                status.last_error,
                status.abandoned_claims
            ),
            (None, 0, None, 0),
            "{id}"
        );
        assert!(status.wake_at.is_some(), "{id} is still due");
    }
    let worker = Worker::new(Arc::clone(store), model.clone())
        .with_concurrency(1)
        .with_durable_options(DurableOptions::default().with_max_attempts(1));
    let first = worker.run_once().await.expect("ran");
    let second = worker.run_once().await.expect("ran");
    assert_eq!(
        (first.done + second.done, first.parked + second.parked),
        (1, 1)
    );
    let parked = store.parked_chats(None, 10).await.expect("listed");
    assert_eq!(parked.len(), 1);
    assert_eq!(parked[0].parked, Some(ParkReason::AttemptsExhausted));
}

fn options(schema: &str) -> PostgresOptions {
    PostgresOptions::default().with_schema(schema)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_store_bounds_what_failing_chats_spend() {
    let Some(server) = server_or_skip("the PostgreSQL spending cases") else {
        return;
    };
    let url = server.url();
    run_cases(SPENDING_CASES, |number| {
        let url = url.clone();
        async move {
            let store = PostgresStore::connect_with(&url, options(&format!("spending_{number}")))
                .await
                .expect("connects");
            Arc::new(store) as Arc<dyn Store>
        }
    })
    .await;

    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .expect("connects");
    let connection = tokio::spawn(async move {
        let _ = connection.await;
    });

    // A message row overwritten with SQL.
    let store: Arc<dyn Store> = Arc::new(
        PostgresStore::connect_with(&url, options("corrupted"))
            .await
            .expect("connects"),
    );
    let model = ScriptedProvider::new().then_text("Hello.").cycle();
    two_asking_chats(&store, &model).await;
    client
        .execute(
            "UPDATE corrupted.llm_tools_messages SET body = 'not json at all' WHERE chat_id = 'broken'",
            &[],
        )
        .await
        .expect("corrupted");
    the_broken_chat_is_parked_and_the_fine_one_answered(&store, &model).await;

    // A schema of version 2, migrated on connect.
    let model = ScriptedProvider::new()
        .then_text("Hello.")
        .then_error(ProviderError::http("scripted", 500, "down"));
    {
        let store = PostgresStore::connect_with(&url, options("old"))
            .await
            .expect("connects");
        for id in ["answered", "waiting"] {
            let mut chat = Chat::create(store.clone(), id, model.clone())
                .await
                .expect("created");
            chat.enqueue(format!("Hi from {id}"))
                .await
                .expect("enqueued");
        }
    }
    client
        .batch_execute(
            "DROP INDEX old.llm_tools_chats_parked;
             DROP INDEX old.llm_tools_chats_due;
             ALTER TABLE old.llm_tools_chats DROP COLUMN failures, DROP COLUMN last_error,
                 DROP COLUMN parked, DROP COLUMN parked_at, DROP COLUMN cancel_requested,
                 DROP COLUMN abandoned_claims;
             CREATE INDEX llm_tools_chats_due ON old.llm_tools_chats (wake_at)
                 WHERE wake_at IS NOT NULL;
             DROP FUNCTION old.llm_tools_check(BOOLEAN, TEXT);
             DROP FUNCTION old.llm_tools_commit;
             DROP TRIGGER llm_tools_calls_retire_rounds ON old.llm_tools_calls;
             DROP FUNCTION old.llm_tools_retire_rounds;
             DROP TABLE old.llm_tools_secrets;
             UPDATE old.llm_tools_schema SET version = 2;",
        )
        .await
        .expect("back to version 2");
    let store: Arc<dyn Store> = Arc::new(
        PostgresStore::connect_with(&url, options("old"))
            .await
            .expect("migrates"),
    );
    old_chats_run_and_park_after_the_migration(&store, &model).await;
    let version: i32 = client
        .query_one("SELECT version FROM old.llm_tools_schema", &[])
        .await
        .expect("read")
        .get(0);
    assert_eq!(u32::try_from(version).expect("positive"), SCHEMA_VERSION);
    drop(client);
    connection.abort();
}
