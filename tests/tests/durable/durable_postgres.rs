//! Durable chats on a real PostgreSQL server (Debian's package, started by
//! `llm_tools_tests::postgres` on a loopback port, installed first when missing): the store
//! suite every store passes, and PostgreSQL's own bad input: connection strings with a wrong
//! password or none, an unreachable server, a newer schema, foreign tables, and the server
//! going away while a worker runs.
#![allow(clippy::expect_used, clippy::panic)] // helpers outside `#[test]` fns

use std::sync::Arc;
use std::time::Duration;

use llm_tools_core::Chat;
use llm_tools_core::store::{
    PostgresOptions, PostgresStore, SCHEMA_VERSION, Store, StoreError, Worker,
};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_tests::postgres::{PASSWORD, server_or_skip};

fn options(schema: &str) -> PostgresOptions {
    PostgresOptions::default().with_schema(schema)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_store_passes_the_store_suite_and_handles_bad_input() {
    let Some(server) = server_or_skip("the PostgreSQL store suite") else {
        return;
    };
    let url = server.url();

    llm_tools_tests::store_suite::run_all(|number| {
        let url = url.clone();
        async move {
            let store = PostgresStore::connect_with(&url, options(&format!("suite_{number}")))
                .await
                .expect("connects");
            Arc::new(store) as Arc<dyn Store>
        }
    })
    .await;

    // Tables in another schema with another prefix do not see each other.
    let a = PostgresStore::connect_with(&url, options("apart").with_table_prefix("a_"))
        .await
        .expect("a");
    let b = PostgresStore::connect_with(&url, options("apart").with_table_prefix("b_"))
        .await
        .expect("b");
    Chat::create(a.clone(), "same-id", ScriptedProvider::new())
        .await
        .expect("created in a");
    Chat::create(b.clone(), "same-id", ScriptedProvider::new())
        .await
        .expect("created in b, apart");
    assert_eq!(a.chat_ids().await.expect("ids"), ["same-id"]);

    // Migrations run once however many connect; an explicit migrate is a no-op after.
    a.migrate().await.expect("migrated again");

    // Bad connection strings: clear causes, never the password.
    let wrong = url.replace(PASSWORD, "not-the-password-7f3a");
    let err = PostgresStore::connect(&wrong)
        .await
        .expect_err("wrong password");
    let text = format!("{err} {err:?}");
    assert!(text.contains("password authentication failed"), "{text}");
    assert!(!text.contains("not-the-password-7f3a"), "{text}");
    let none = url.replace(&format!(":{PASSWORD}"), "");
    let err = PostgresStore::connect(&none)
        .await
        .expect_err("no password");
    assert!(err.to_string().contains("password"), "{err}");
    let unreachable = format!("postgres://llm_tools:{PASSWORD}@127.0.0.1:1/postgres");
    let err = PostgresStore::connect(&unreachable)
        .await
        .expect_err("unreachable");
    let text = format!("{err} {err:?}");
    assert!(text.contains("127.0.0.1:1"), "{text}");
    assert!(!text.contains(PASSWORD), "{text}");
    // A password holding an unescaped `@`: what follows it would read as the host.
    let unescaped = "postgres://llm_tools:x@canary-7d1e-pg@127.0.0.1:1/postgres";
    let err = PostgresStore::connect(unescaped)
        .await
        .expect_err("unescaped @");
    let text = format!("{err} {err:?}");
    assert!(text.contains("%40"), "the fix is named: {text}");
    assert!(!text.contains("canary-7d1e-pg"), "{text}");

    // A newer schema, and tables of our names we did not make.
    let (client, connection) = tokio_postgres_connect(&url).await;
    client
        .batch_execute(&format!(
            "UPDATE \"apart\".a_schema SET version = {}",
            SCHEMA_VERSION + 7
        ))
        .await
        .expect("bumped");
    let err = PostgresStore::connect_with(&url, options("apart").with_table_prefix("a_"))
        .await
        .expect_err("newer");
    assert!(matches!(err, StoreError::NewerSchema { .. }), "{err:?}");
    client
        .batch_execute("CREATE SCHEMA foreign_schema; CREATE TABLE foreign_schema.llm_tools_chats (x int); INSERT INTO foreign_schema.llm_tools_chats VALUES (7)")
        .await
        .expect("foreign table");
    let err = PostgresStore::connect_with(&url, options("foreign_schema"))
        .await
        .expect_err("foreign");
    assert!(matches!(err, StoreError::Foreign { .. }), "{err:?}");
    let kept: i32 = client
        .query_one("SELECT x FROM foreign_schema.llm_tools_chats", &[])
        .await
        .expect("kept")
        .get(0);
    assert_eq!(kept, 7);
    drop(client);
    connection.abort();

    // The server goes away while a worker runs, and comes back: the worker carries on.
    let store = PostgresStore::connect_with(&url, options("outage"))
        .await
        .expect("connects");
    let model = ScriptedProvider::new()
        .then_text("first")
        .then_text("second");
    let mut chat = Chat::create(store.clone(), "o1", model.clone())
        .await
        .expect("created");
    chat.enqueue("one").await.expect("enqueued");
    let worker =
        Worker::new(store.clone(), model.clone()).with_idle_poll(Duration::from_millis(20));
    assert_eq!(worker.run_once().await.expect("ran").done, 1);
    server.stop().expect("stopped");
    let err = worker.run_once().await.expect_err("the server is gone");
    assert!(matches!(err, llm_tools_core::Error::Store(_)), "{err}");
    server.start_again().expect("started again");
    let mut chat = Chat::load(store.clone(), "o1", model.clone())
        .await
        .expect("loaded after the outage");
    chat.enqueue("two").await.expect("enqueued");
    let all_done = {
        let store = store.clone();
        async move {
            while store
                .load_chat("o1")
                .await
                .ok()
                .and_then(|r| r.wake_at)
                .is_some()
            {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    let report = tokio::time::timeout(Duration::from_secs(30), worker.run_until(all_done))
        .await
        .expect("bounded");
    assert_eq!(report.done, 1);
    let chat = Chat::load(store, "o1", model).await.expect("loaded");
    let texts: Vec<String> = chat.messages().iter().map(|m| m.text()).collect();
    assert_eq!(texts, ["one", "first", "two", "second"]);
}

/// A plain client for the test's own SQL.
async fn tokio_postgres_connect(
    url: &str,
) -> (tokio_postgres::Client, tokio::task::JoinHandle<()>) {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("connects");
    let task = tokio::spawn(async move {
        let _ = connection.await;
    });
    (client, task)
}
