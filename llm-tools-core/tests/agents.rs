//! Agents with a scripted model: handoffs kept with the chat's state, through compaction and
//! reloads.

#![allow(clippy::unwrap_used)]

use llm_tools_core::agent::Agent;
use llm_tools_core::chat::{Chat, ChatState, Compaction};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{Role, ToolCall, tool};
use serde_json::json;

/// Looks up an invoice
#[tool]
async fn invoice(number: u32) -> String {
    format!("invoice {number}: paid")
}

/// Resets a password
#[tool]
async fn reset_password(user: String) -> String {
    format!("password of {user} reset")
}

/// Triage, handing off to billing and support, each agent on the model given.
fn agents(
    triage: &ScriptedProvider,
    billing: &ScriptedProvider,
    support: &ScriptedProvider,
) -> Agent {
    let billing = Agent::new("billing", billing.clone())
        .with_instructions("You are billing.")
        .with_tools(Invoice);
    let support = Agent::new("support", support.clone())
        .with_instructions("You are support.")
        .with_tools(ResetPassword);
    Agent::new("triage", triage.clone())
        .with_instructions("You route customers.")
        .with_handoffs([billing, support])
}

fn tool_names(chat: &Chat) -> Vec<String> {
    chat.tools()
        .iter()
        .map(|t| t.spec().joined_name().to_owned())
        .collect()
}

/// Summarises every turn before the last into "S".
fn compaction() -> Compaction {
    Compaction::at_characters(0)
        .keep_recent_messages(2)
        .with_summariser(ScriptedProvider::new().then_text("S"))
}

/// Whether the transcript still holds a call of `name`.
fn has_call(chat: &Chat, name: &str) -> bool {
    chat.messages()
        .iter()
        .any(|m| m.tool_calls.iter().any(|c| c.name == name))
}

#[tokio::test]
async fn a_handoff_summarised_by_compaction_keeps_the_chat_on_the_agent_it_was_handed_to() {
    let triage_model = ScriptedProvider::new().then_call("transfer_to_billing", json!({}));
    let billing_model = ScriptedProvider::new()
        .then_text("Billing here.")
        .then_text("Invoice 7 is paid.");
    let triage = agents(&triage_model, &billing_model, &ScriptedProvider::new());
    let mut chat = triage.chat().unwrap();
    let answer = chat.ask("My invoice").await.unwrap();
    assert_eq!(answer.text().as_deref(), Some("Billing here."));
    assert_eq!(Agent::active_agent(&chat).as_deref(), Some("billing"));
    let answer = chat.ask("Is invoice 7 paid?").await.unwrap();
    assert_eq!(answer.text().as_deref(), Some("Invoice 7 is paid."));

    // The transfer is summarised away.
    assert!(chat.compact(Some(&compaction())).await.unwrap());
    assert!(
        !has_call(&chat, "transfer_to_billing"),
        "{:?}",
        chat.messages()
    );
    assert!(
        chat.messages()
            .iter()
            .any(|m| m.role == Role::System && m.text().ends_with('S'))
    );

    assert_eq!(Agent::active_agent(&chat).as_deref(), Some("billing"));
    // Restored from its state (saved as JSON, as a store keeps it), the chat is billing's.
    let json = serde_json::to_string(chat.state()).unwrap();
    for state in [
        chat.state().clone(),
        serde_json::from_str::<ChatState>(&json).unwrap(),
    ] {
        let next = ScriptedProvider::new().then_text("Anything else?");
        let triage = agents(&ScriptedProvider::new(), &next, &ScriptedProvider::new());
        let mut restored = triage.chat_from_state(state).unwrap();
        assert_eq!(Agent::active_agent(&restored).as_deref(), Some("billing"));
        assert_eq!(restored.messages()[0].text(), "You are billing.");
        assert_eq!(tool_names(&restored), ["invoice", "transfer_to_triage"]);
        // On billing's model too.
        let answer = restored.ask("Thanks").await.unwrap();
        assert_eq!(answer.text().as_deref(), Some("Anything else?"));
        assert_eq!(next.request_count(), 1);
    }
}

#[tokio::test]
async fn two_transfers_in_one_answer_give_the_same_way_back_in_memory_and_after_a_reload() {
    let triage_model = ScriptedProvider::new().then_calls([
        ("transfer_to_billing", json!({})),
        ("transfer_to_support", json!({})),
    ]);
    let support_model = ScriptedProvider::new().then_text("Support here.");
    let triage = agents(&triage_model, &ScriptedProvider::new(), &support_model);
    let mut chat = triage.chat().unwrap();
    let answer = chat.ask("Help").await.unwrap();
    assert_eq!(answer.text().as_deref(), Some("Support here."));
    // Both transfers were triage's: the way back is to triage.
    let in_memory = tool_names(&chat);
    assert_eq!(in_memory, ["reset_password", "transfer_to_triage"]);
    assert_eq!(support_model.requests()[0].tools, in_memory);

    let reloaded = triage.chat_from_state(chat.state().clone()).unwrap();
    assert_eq!(tool_names(&reloaded), in_memory);

    // A state that does not record the agent (written before it did) is read from its
    // transcript, to the same agent and the same way back.
    let mut json = serde_json::to_value(chat.state()).unwrap();
    assert!(json.as_object_mut().unwrap().remove("agent").is_some());
    let older: ChatState = serde_json::from_value(json).unwrap();
    let reloaded = triage.chat_from_state(older).unwrap();
    assert_eq!(Agent::active_agent(&reloaded).as_deref(), Some("support"));
    assert_eq!(tool_names(&reloaded), in_memory);
}

/// A durable chat's transcript is written with the round, the agent it was handed to with the
/// commit after it: a state saved in between records the agent before the transfer.
#[tokio::test]
async fn a_transfer_in_the_transcript_newer_than_the_recorded_agent_wins() {
    let triage_model = ScriptedProvider::new()
        .then_tool_calls(vec![ToolCall::new("t1", "transfer_to_billing", "{}")])
        .then_tool_calls(vec![ToolCall::new("t3", "transfer_to_support", "{}")]);
    let billing_model = ScriptedProvider::new()
        .then_text("Billing here.")
        .then_tool_calls(vec![ToolCall::new("t2", "transfer_to_triage", "{}")]);
    let support_model = ScriptedProvider::new().then_text("Support here.");
    let triage = agents(&triage_model, &billing_model, &support_model);
    let mut chat = triage.chat().unwrap();
    let answer = chat.ask("My invoice").await.unwrap();
    assert_eq!(answer.text().as_deref(), Some("Billing here."));
    let on_billing = serde_json::to_value(chat.state()).unwrap()["agent"].clone();
    assert!(on_billing.is_object(), "{on_billing}");
    let answer = chat.ask("Now my password").await.unwrap();
    assert_eq!(answer.text().as_deref(), Some("Support here."));
    let in_memory = tool_names(&chat);
    assert_eq!(in_memory, ["reset_password", "transfer_to_triage"]);

    let mut json = serde_json::to_value(chat.state()).unwrap();
    json["agent"] = on_billing;
    let behind: ChatState = serde_json::from_value(json).unwrap();
    let reloaded = triage.chat_from_state(behind).unwrap();
    assert_eq!(Agent::active_agent(&reloaded).as_deref(), Some("support"));
    assert_eq!(reloaded.messages()[0].text(), "You are support.");
    assert_eq!(tool_names(&reloaded), in_memory);
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn a_durable_chat_handed_over_loads_on_that_agent_after_compaction() {
    use llm_tools_core::store::SqliteStore;

    let store = SqliteStore::open(":memory:").await.unwrap();
    let triage_model = ScriptedProvider::new().then_call("transfer_to_billing", json!({}));
    let billing_model = ScriptedProvider::new()
        .then_text("Billing here.")
        .then_text("Invoice 7 is paid.");
    let triage = agents(&triage_model, &billing_model, &ScriptedProvider::new());
    let mut chat = Chat::create(store.clone(), "chat-1", triage_model.clone())
        .await
        .unwrap();
    triage.configure(&mut chat).unwrap();
    let answer = chat.ask("My invoice").await.unwrap();
    assert_eq!(answer.text().as_deref(), Some("Billing here."));
    let answer = chat.ask("Is invoice 7 paid?").await.unwrap();
    assert_eq!(answer.text().as_deref(), Some("Invoice 7 is paid."));
    assert!(chat.compact(Some(&compaction())).await.unwrap());
    assert!(!has_call(&chat, "transfer_to_billing"));
    drop(chat);

    // A worker's setup on the loaded chat.
    let next = ScriptedProvider::new().then_text("Anything else?");
    let triage = agents(&ScriptedProvider::new(), &next, &ScriptedProvider::new());
    let mut loaded = Chat::load(store, "chat-1", ScriptedProvider::new())
        .await
        .unwrap();
    triage.configure(&mut loaded).unwrap();
    assert_eq!(Agent::active_agent(&loaded).as_deref(), Some("billing"));
    assert_eq!(loaded.messages()[0].text(), "You are billing.");
    assert_eq!(tool_names(&loaded), ["invoice", "transfer_to_triage"]);
    let answer = loaded.ask("Thanks").await.unwrap();
    assert_eq!(answer.text().as_deref(), Some("Anything else?"));
    assert_eq!(next.request_count(), 1);
}
