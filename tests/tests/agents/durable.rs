//! A paused sub-agent inside a durable parent: saved in one process, resumed in another.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use llm_tools_core::agent::{Agent, AgentPauses};
use llm_tools_core::chat::{Chat, Outcome};
use llm_tools_core::store::{DurableOptions, SqliteStore};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{Role, tool};
use serde_json::json;
use tokio::sync::Notify;

/// Deletes a file
#[tool(needs_approval)]
async fn delete_file(path: String) -> String {
    format!("deleted {path}")
}

/// The agents as every process declares them, on the models given.
fn lead(lead_model: ScriptedProvider, janitor_model: ScriptedProvider) -> Agent {
    let janitor = Agent::new("janitor", janitor_model)
        .with_instructions("Clean up carefully.")
        .with_tools(DeleteFile);
    Agent::new("lead", lead_model)
        .with_instructions("Delegate cleaning.")
        .with_tools(janitor.as_tool("janitor", "Cleans up"))
}

const ENV_DB: &str = "LLM_TOOLS_AGENTS_TEST_DB";

/// The second process: loads the chat, approves the sub-agent's call, finishes. Run by
/// `a_paused_sub_agent_resumes_in_a_fresh_process` in a child process; does nothing alone.
#[tokio::test]
async fn resume_phase() {
    let Ok(db) = std::env::var(ENV_DB) else {
        return;
    };
    let store = SqliteStore::open(&db).await.expect("the store opens");
    let janitor_model = ScriptedProvider::new().then_text("Deleted old.log.");
    let lead_model = ScriptedProvider::new().then_text("All clean.");
    let agent = lead(lead_model.clone(), janitor_model.clone());
    let mut chat = Chat::load(store, "chat-1", lead_model.clone())
        .await
        .expect("loads");
    agent.configure(&mut chat).expect("configured");
    let pauses = chat.paused_calls();
    assert_eq!(pauses.len(), 1);
    assert_eq!(pauses[0].path_string(), "janitor › delete_file");
    chat.approve_at(&pauses[0].id).expect("approved");
    match chat.complete().await.expect("completes") {
        Outcome::Done(answer) => assert_eq!(answer.text(), "All clean."),
        other => panic!("expected an answer, got {other:?}"),
    }
    // The sub-agent carried on from its stored state: its model saw its earlier messages and
    // the approved call's result.
    let sent = &janitor_model.requests()[0].messages;
    assert_eq!(sent[0].text(), "Clean up carefully.");
    assert_eq!(sent[1].text(), "Clean up /tmp");
    assert_eq!(
        sent.last().map(|m| m.text()).as_deref(),
        Some("deleted /tmp/old.log")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_sub_agent_resumes_in_a_fresh_process() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("chats.db");
    {
        let store = SqliteStore::open(&db).await.expect("the store opens");
        let janitor_model =
            ScriptedProvider::new().then_call("delete_file", json!({"path": "/tmp/old.log"}));
        let lead_model =
            ScriptedProvider::new().then_call("janitor", json!({"input": "Clean up /tmp"}));
        let agent = lead(lead_model.clone(), janitor_model);
        let mut chat = Chat::create(store, "chat-1", lead_model)
            .await
            .expect("created");
        agent.configure(&mut chat).expect("configured");
        assert!(chat.ask("Clean up /tmp").await.expect("asks").is_paused());
        assert_eq!(
            chat.paused_calls()[0].path_string(),
            "janitor › delete_file"
        );
    }
    // Another process, this test binary again, runs `resume_phase` on the same file.
    let status = std::process::Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "durable::resume_phase",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ENV_DB, &db)
        .status()
        .expect("the child runs");
    assert!(status.success(), "the resuming process failed: {status}");

    // Back here: the store has the finished chat, with the sub-agent's answer once.
    let store = SqliteStore::open(&db).await.expect("the store opens");
    let chat = Chat::load(store, "chat-1", ScriptedProvider::new())
        .await
        .expect("loads");
    assert!(!chat.is_paused());
    let results: Vec<String> = chat
        .messages()
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.text())
        .collect();
    assert_eq!(results, ["Deleted old.log."]);
    assert_eq!(
        chat.messages().last().map(|m| m.text()).as_deref(),
        Some("All clean.")
    );
}

/// Fetches a page: its first run never ends (its worker is killed meanwhile).
struct Fetch {
    runs: Arc<AtomicUsize>,
    started: Arc<Notify>,
}

#[tool]
impl Fetch {
    /// Fetches a page
    async fn execute(&self, url: String) -> String {
        if self.runs.fetch_add(1, Ordering::SeqCst) == 0 {
            self.started.notify_one();
            std::future::pending::<()>().await;
        }
        format!("fetched {url}")
    }
}

/// The agents as each worker declares them; `lead_model` plays the lead's answers from where
/// the chat stands.
fn fetching_lead(
    runs: &Arc<AtomicUsize>,
    started: &Arc<Notify>,
    lead_model: ScriptedProvider,
) -> (Agent, ScriptedProvider) {
    let reader_model = ScriptedProvider::new()
        .then_call("fetch", json!({"url": "https://example.com"}))
        .then_text("The page says hello.");
    let reader = Agent::new("reader", reader_model).with_tools(Fetch {
        runs: Arc::clone(runs),
        started: Arc::clone(started),
    });
    let lead = Agent::new("lead", lead_model.clone()).with_tools(
        reader
            .as_tool("reader", "Reads pages")
            .with_max_run_time(Duration::from_millis(800)),
    );
    (lead, lead_model)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_worker_s_sub_agent_runs_again_and_its_answer_is_written_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(dir.path().join("chats.db"))
        .await
        .expect("the store opens");
    let runs = Arc::new(AtomicUsize::new(0));
    let started = Arc::new(Notify::new());

    // The first worker: its sub-agent's tool hangs, and the worker is killed (its task
    // aborted: nothing of it runs again, nothing is released).
    let (lead, model) = fetching_lead(
        &runs,
        &started,
        ScriptedProvider::new().then_call("reader", json!({"input": "Read example.com"})),
    );
    let mut chat = Chat::create(store.clone(), "killed", model)
        .await
        .expect("created");
    lead.configure(&mut chat).expect("configured");
    chat.with_durable_options(DurableOptions::default().with_run_lease(Duration::from_millis(200)));
    let killed = tokio::spawn(async move { chat.ask("What does example.com say?").await });
    started.notified().await;
    killed.abort();
    let _ = killed.await;

    // Another worker picks the chat up once the claims expire: the parent's call runs again,
    // and with it the sub-agent, from the start.
    let (lead, model) = fetching_lead(
        &runs,
        &Arc::new(Notify::new()),
        ScriptedProvider::new().then_text("It says hello."),
    );
    let mut taker = Chat::load(store.clone(), "killed", model)
        .await
        .expect("loads");
    lead.configure(&mut taker).expect("configured");
    let outcome = loop {
        match taker.complete().await.expect("an outcome") {
            Outcome::Busy(busy) => {
                tokio::time::sleep(busy.remaining().min(Duration::from_millis(100))).await;
            }
            other => break other,
        }
    };
    assert_eq!(outcome.text().as_deref(), Some("It says hello."));
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "the killed run and the one that finished"
    );

    // The store holds one result for the call: the finished sub-agent's answer.
    let stored = Chat::load(store, "killed", ScriptedProvider::new())
        .await
        .expect("loads");
    let results: Vec<String> = stored
        .messages()
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.text())
        .collect();
    assert_eq!(results, ["The page says hello."]);
}
