//! A paused sub-agent inside a durable parent: saved in one process, resumed in another.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use llm_tools_core::agent::{Agent, AgentPauses};
use llm_tools_core::chat::{Chat, Outcome};
use llm_tools_core::store::SqliteStore;
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{Role, tool};
use serde_json::json;

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
