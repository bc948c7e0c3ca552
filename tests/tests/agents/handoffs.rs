//! Handoffs: a transfer tool per target, the switch for the rest of the turn and the chat, the
//! way back, and a chat restored on the agent it was handed to.
#![allow(clippy::unwrap_used)]

use llm_tools_core::agent::Agent;
use llm_tools_core::chat::{Chat, ToolOptions};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{Namespace, Role, ToolCall, tool};
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

/// Runs a query on the read-only replica
#[tool(needs_approval, name = "run_sql")]
async fn replica_sql(query: String) -> String {
    format!("replica ran {query}")
}

/// Runs a query on the primary database
#[tool(needs_approval, name = "run_sql")]
async fn primary_sql(query: String) -> String {
    format!("primary ran {query}")
}

#[tokio::test]
async fn an_approval_given_always_does_not_follow_a_handoff_to_another_agents_tool() {
    let model = ScriptedProvider::new()
        .then_call("run_sql", json!({"query": "select 1"}))
        .then_call("transfer_to_admin", json!({}))
        .then_call("run_sql", json!({"query": "drop table users"}))
        .then_text("Done.");
    let admin = Agent::new("admin", model.clone()).with_tools(PrimarySql);
    let triage = Agent::new("triage", model.clone())
        .with_tools(ReplicaSql)
        .with_handoffs([admin]);
    let mut chat = triage.chat().unwrap();
    assert!(chat.ask("Count, then clean up").await.unwrap().is_paused());
    let first = chat.pending_approvals()[0].id.clone();
    chat.approve_always(&first).unwrap();
    // The replica's query runs; triage hands over; the primary's `run_sql` is asked about.
    assert!(chat.complete().await.unwrap().is_paused());
    let waiting = chat.pending_approvals();
    assert_eq!(waiting.len(), 1);
    assert!(waiting[0].arguments.contains("drop table"), "{waiting:?}");
    let results: Vec<String> = chat
        .messages()
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.text())
        .collect();
    assert_eq!(results[0], "replica ran select 1");
    assert!(
        !results.iter().any(|r| r.contains("primary ran")),
        "{results:?}"
    );
}

const CRM: Namespace = Namespace::new("crm").description("Customer records");

/// Moves a customer's case to the admin queue of the CRM
#[tool(namespace = CRM)]
async fn transfer_to_admin() -> String {
    "case moved to the admin queue".to_owned()
}

/// A call named like a transfer that is another tool (here the CRM's, in its namespace)
/// hands nothing over, in the turn or when the chat is configured again (a worker's pick, a
/// reload): the chat stays triage's, and an approval given "always" for triage's `run_sql`
/// never reaches the primary database's tool of that name.
#[tokio::test]
async fn a_tool_named_like_a_transfer_hands_nothing_over_when_the_chat_is_configured_again() {
    let model = ScriptedProvider::new()
        .then_call("run_sql", json!({"query": "select 1"}))
        .then_tool_calls(vec![
            ToolCall::new("c2", "transfer_to_admin", "{}").with_namespace(Some("crm".into())),
        ])
        .then_text("Moved.")
        .then_call("run_sql", json!({"query": "drop table users"}))
        .then_text("Done.");
    let admin = Agent::new("admin", model.clone()).with_tools(PrimarySql);
    let triage = Agent::new("triage", model.clone())
        .with_tools((ReplicaSql, TransferToAdmin))
        .with_handoffs([admin]);
    let mut chat = triage.chat().unwrap();
    assert!(
        chat.ask("Count, then move the case")
            .await
            .unwrap()
            .is_paused()
    );
    let first = chat.pending_approvals()[0].id.clone();
    chat.approve_always(&first).unwrap();
    assert_eq!(
        chat.complete().await.unwrap().text().as_deref(),
        Some("Moved.")
    );
    assert_eq!(Agent::active_agent(&chat), None);

    // What a worker does with each chat it picks, or an application with a chat it loads.
    triage.configure(&mut chat).unwrap();
    assert_eq!(Agent::active_agent(&chat), None);
    assert_eq!(chat.messages()[0].role, Role::User);
    let answer = chat.ask("Clean up").await.unwrap();
    assert_eq!(answer.text().as_deref(), Some("Done."));
    let results: Vec<String> = chat
        .messages()
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.text())
        .collect();
    assert_eq!(results.last().unwrap(), "replica ran drop table users");
    assert!(
        !results.iter().any(|r| r.contains("primary ran")),
        "{results:?}"
    );
}

/// A handoff the chat's state does not record (its turn ended after the transfer's result
/// was kept and before the switch was) is read from the transcript when the chat is
/// configured again, and forgets the approvals given "always", as the transfer does when it
/// runs: the primary database's `run_sql` is asked about.
#[tokio::test]
async fn a_handoff_read_from_the_transcript_forgets_the_approvals_given_always() {
    let model = ScriptedProvider::new()
        .then_call("run_sql", json!({"query": "select 1"}))
        .then_call("transfer_to_admin", json!({}))
        .then_text("Handed over.")
        .then_call("run_sql", json!({"query": "drop table users"}))
        .then_text("Done.");
    let admin = Agent::new("admin", model.clone()).with_tools(PrimarySql);
    let triage = Agent::new("triage", model.clone())
        .with_tools(ReplicaSql)
        .with_handoffs([admin]);
    let mut chat = triage.chat().unwrap();
    assert!(chat.ask("Count, then hand over").await.unwrap().is_paused());
    let first = chat.pending_approvals()[0].id.clone();
    chat.approve_always(&first).unwrap();
    let approved = serde_json::to_value(chat.state()).unwrap()["decisions"].clone();
    assert_eq!(approved.as_array().map(Vec::len), Some(1), "{approved}");
    let handed_over = chat.complete().await.unwrap();
    assert_eq!(handed_over.text().as_deref(), Some("Handed over."));
    assert_eq!(Agent::active_agent(&chat).as_deref(), Some("admin"));

    // The chat as kept before the switch was: the transfer's result in the transcript, no
    // record of the handoff, and the approval given "always" for triage's `run_sql`.
    let mut state = serde_json::to_value(chat.state()).unwrap();
    state.as_object_mut().unwrap().remove("agent");
    state["decisions"] = approved;
    let mut reloaded =
        Chat::from_state(model.clone(), serde_json::from_value(state).unwrap()).unwrap();
    triage.configure(&mut reloaded).unwrap();
    assert_eq!(Agent::active_agent(&reloaded).as_deref(), Some("admin"));

    assert!(reloaded.ask("Clean up").await.unwrap().is_paused());
    let waiting = reloaded.pending_approvals();
    assert_eq!(waiting.len(), 1, "{waiting:?}");
    assert!(waiting[0].arguments.contains("drop table"), "{waiting:?}");
}

/// Files a ticket for the admins (an application's tool, named like a transfer)
#[tool(name = "transfer_to_admin")]
async fn ticket_for_admin() -> String {
    "ticket filed".to_owned()
}

/// An application's tool named like a transfer the answering agent does not offer hands
/// nothing over when the chat is configured again, though the agent it names is reachable
/// (through another agent's handoff).
#[tokio::test]
async fn an_application_tool_named_like_a_transfer_not_offered_hands_nothing_over() {
    let model = ScriptedProvider::new()
        .then_call("transfer_to_admin", json!({}))
        .then_text("Filed.");
    let admin = Agent::new("admin", model.clone()).with_tools(PrimarySql);
    let billing = Agent::new("billing", model.clone()).with_handoffs([admin]);
    let triage = Agent::new("triage", model.clone())
        .with_tools(TicketForAdmin)
        .with_handoffs([billing]);
    let mut chat = triage.chat().unwrap();
    let answer = chat.ask("File a ticket").await.unwrap();
    assert_eq!(answer.text().as_deref(), Some("Filed."));

    triage.configure(&mut chat).unwrap();
    let tools: Vec<&str> = chat.tools().iter().map(|t| t.spec().name()).collect();
    assert_eq!(tools, ["transfer_to_admin", "transfer_to_billing"]);
    let state = serde_json::to_value(chat.state()).unwrap();
    assert!(state.get("agent").is_none(), "{state}");
}

/// A state that records no handoff (written by an earlier version) whose first transfers
/// compaction summarised: the first transfer left is read as made by the agent that offers
/// it, not judged against the root's handoffs.
#[tokio::test]
async fn a_compacted_state_without_a_record_is_configured_as_its_last_transfer_says() {
    let model = ScriptedProvider::new()
        .then_call("transfer_to_billing", json!({}))
        .then_call("transfer_to_admin", json!({}))
        .then_text("Admin here.");
    let admin = Agent::new("admin", model.clone())
        .with_instructions("You are admin.")
        .with_tools(PrimarySql);
    let billing = Agent::new("billing", model.clone()).with_handoffs([admin]);
    let triage = Agent::new("triage", model.clone()).with_handoffs([billing]);
    let mut chat = triage.chat().unwrap();
    let answer = chat.ask("Escalate").await.unwrap();
    assert_eq!(answer.text().as_deref(), Some("Admin here."));

    let mut state = serde_json::to_value(chat.state()).unwrap();
    let object = state.as_object_mut().unwrap();
    object.remove("agent");
    // The first transfer (its call and its result) summarised away.
    let messages = object["messages"].as_array_mut().unwrap();
    let first_call = messages
        .iter()
        .position(|m| m["tool_calls"].is_array())
        .unwrap();
    messages.drain(first_call..first_call + 2);
    object.insert("compacted_away".into(), json!(2));
    let mut reloaded =
        Chat::from_state(model.clone(), serde_json::from_value(state).unwrap()).unwrap();
    triage.configure(&mut reloaded).unwrap();
    assert_eq!(Agent::active_agent(&reloaded).as_deref(), Some("admin"));
    assert_eq!(reloaded.messages()[0].text(), "You are admin.");
}

fn agents(model: &ScriptedProvider) -> (Agent, Agent, Agent) {
    let billing = Agent::new("billing", model.clone())
        .with_description("Invoices and payments")
        .with_instructions("You are billing.")
        .with_tools(Invoice)
        .with_tool_options(ToolOptions::default().with_rounds(5));
    let support = Agent::new("support", model.clone())
        .with_description("Accounts and passwords")
        .with_instructions("You are support.")
        .with_tools(ResetPassword);
    let triage = Agent::new("triage", model.clone())
        .with_instructions("You route customers.")
        .with_handoffs([billing.clone(), support.clone()]);
    (triage, billing, support)
}

/// The agent handed to brings its round budget for the rest of the turn: billing's 5
/// rounds (the transfer among them) hold from the next request on, not triage's 25.
#[tokio::test]
async fn a_handoff_brings_the_next_agents_round_budget_for_the_rest_of_the_turn() {
    let mut model = ScriptedProvider::new().then_call("transfer_to_billing", json!({}));
    for number in 0..8 {
        model = model.then_call("invoice", json!({ "number": number }));
    }
    let model = model.then_text("All paid.");
    let (triage, _, _) = agents(&model);
    let mut chat = triage.chat().unwrap();
    let err = chat.ask("Check every invoice").await.unwrap_err();
    assert!(
        matches!(err, llm_tools_core::Error::RoundsExceeded { rounds: 5 }),
        "{err}"
    );
    assert_eq!(model.request_count(), 5);
}

#[tokio::test]
async fn a_handoff_switches_the_chat_for_the_rest_of_the_turn_and_hands_back() {
    let model = ScriptedProvider::new()
        // Turn 1: triage hands to billing, billing uses its tool and answers.
        .then_call("transfer_to_billing", json!({}))
        .then_call("invoice", json!({"number": 7}))
        .then_text("Invoice 7 is paid.")
        // Turn 2: billing hands back to triage, which hands to support.
        .then_call("transfer_to_triage", json!({}))
        .then_call("transfer_to_support", json!({}))
        .then_call("reset_password", json!({"user": "ada"}))
        .then_text("Your password is reset.");
    let (triage, _, _) = agents(&model);
    let mut chat = triage.chat().unwrap();
    assert_eq!(chat.tools().len(), 2);

    let answer = chat.ask("Is invoice 7 paid?").await.unwrap();
    assert_eq!(answer.text().as_deref(), Some("Invoice 7 is paid."));
    assert_eq!(Agent::active_agent(&chat).as_deref(), Some("billing"));
    assert_eq!(chat.messages()[0].text(), "You are billing.");
    assert_eq!(chat.tool_options().rounds(), 5);
    let requests = model.requests();
    assert_eq!(
        requests[0].tools,
        ["transfer_to_billing", "transfer_to_support"]
    );
    // From the very next request of the same turn: billing's tools and the way back.
    assert_eq!(requests[1].tools, ["invoice", "transfer_to_triage"]);
    assert_eq!(requests[1].messages[0].text(), "You are billing.");
    // The transfer is in the transcript as a call and its result.
    let transfer = chat
        .messages()
        .iter()
        .find(|m| m.role == Role::Tool)
        .unwrap();
    assert_eq!(transfer.text(), "Transferred to billing.");

    let answer = chat.ask("Now I forgot my password").await.unwrap();
    assert_eq!(answer.text().as_deref(), Some("Your password is reset."));
    assert_eq!(Agent::active_agent(&chat).as_deref(), Some("support"));
    let requests = model.requests();
    assert_eq!(
        requests[4].tools,
        ["transfer_to_billing", "transfer_to_support"]
    );
    assert_eq!(requests[4].messages[0].text(), "You route customers.");
    assert_eq!(requests[5].tools, ["reset_password", "transfer_to_triage"]);
}

#[tokio::test]
async fn a_restored_chat_is_configured_as_the_agent_it_was_handed_to() {
    let model = ScriptedProvider::new()
        .then_call("transfer_to_support", json!({}))
        .then_text("Support here.");
    let (triage, _, _) = agents(&model);
    let mut chat = triage.chat().unwrap();
    let _ = chat.ask("Help").await.unwrap();
    let state = serde_json::to_string(chat.state()).unwrap();

    // Elsewhere: the same definitions, a chat from the saved state.
    let model = ScriptedProvider::new()
        .then_call("reset_password", json!({"user": "ada"}))
        .then_text("Reset.");
    let (triage, _, _) = agents(&model);
    let mut chat = Chat::from_state(model.clone(), serde_json::from_str(&state).unwrap()).unwrap();
    triage.configure(&mut chat).unwrap();
    assert_eq!(chat.messages()[0].text(), "You are support.");
    let names: Vec<&str> = chat
        .tools()
        .iter()
        .map(|t| t.spec().joined_name())
        .collect();
    assert_eq!(names, ["reset_password", "transfer_to_triage"]);
    let _ = chat.ask("Reset my password").await.unwrap();
    assert_eq!(
        model.requests()[0].tools,
        ["reset_password", "transfer_to_triage"]
    );
}

#[tokio::test]
async fn an_agent_configures_a_worker_chat() {
    let (triage, _, _) = agents(&ScriptedProvider::new());
    let mut chat = Chat::new(ScriptedProvider::new());
    triage.configure(&mut chat).unwrap();
    assert_eq!(chat.messages()[0].text(), "You route customers.");
    assert_eq!(chat.tools().len(), 2);
}

#[tokio::test]
async fn calls_left_waiting_by_a_handoff_are_closed_not_carried_to_the_next_agent() {
    // Triage asks for its `run_sql` (which needs approval) and hands over in one answer. The
    // admin agent has a `run_sql` of its own: an approval given after the handoff would run it.
    let model = ScriptedProvider::new()
        .then_calls([
            ("run_sql", json!({"query": "drop table users"})),
            ("transfer_to_admin", json!({})),
        ])
        .then_text("Handed over.");
    let admin = Agent::new("admin", model.clone()).with_tools(PrimarySql);
    let triage = Agent::new("triage", model.clone())
        .with_tools(ReplicaSql)
        .with_handoffs([admin]);
    let mut chat = triage.chat().unwrap();
    let outcome = chat.ask("Clean up").await.unwrap();
    assert_eq!(
        outcome.text().as_deref(),
        Some("Handed over."),
        "{outcome:?}"
    );
    assert!(chat.pending_approvals().is_empty());
    let results: Vec<(bool, String)> = chat
        .messages()
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| (m.is_error, m.text()))
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        results[0].0 && results[0].1.contains("handed to another agent"),
        "{results:?}"
    );
    assert_eq!(results[1], (false, "Transferred to admin.".to_owned()));
    assert!(
        !results.iter().any(|(_, r)| r.contains("ran drop")),
        "{results:?}"
    );
    // The next request was the admin's, with the transcript valid.
    assert_eq!(model.request_count(), 2);
}
