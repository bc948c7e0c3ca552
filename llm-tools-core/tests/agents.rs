//! Agents with a scripted model: handoffs kept with the chat's state, through compaction and
//! reloads; a sub-agent's round budget across the turns that resume it.

#![allow(clippy::unwrap_used, clippy::panic)] // test helpers outside `#[test]` fns

use llm_tools_core::agent::Agent;
use llm_tools_core::chat::{Chat, ChatState, Compaction, DEFAULT_ROUNDS, Outcome, Step};
use llm_tools_core::structured::OutputSchema;
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{Message, Role, Task, ToolCall, ToolOutcome, ToolOutput, tool};
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

/// Starts a job that is done at its first check.
struct Job;

#[tool]
impl Job {
    /// Starts a job
    async fn execute(&self) -> Task {
        Task::working("running")
    }

    async fn resume(&self, _task: Task) -> ToolOutcome {
        ToolOutcome::Output(ToolOutput::text("job done"))
    }
}

/// A model that calls `job` `times` times, each answer after the previous job's result.
fn keeps_calling_job(times: usize) -> ScriptedProvider {
    (0..times).fold(ScriptedProvider::new(), |model, _| {
        model.then_call("job", json!({}))
    })
}

/// The text of the tool results in `messages`, errors marked.
fn results(messages: &[Message]) -> Vec<(bool, String)> {
    messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| (m.is_error, m.text()))
        .collect()
}

/// Asks `lead`'s chat `go`, then carries it on turn after turn while it is paused, each turn on
/// a chat restored from the last one's state saved as JSON (a worker of another process
/// resuming the task that finished): `complete` on odd turns, `step` on even ones. Nobody
/// speaks between the turns. Gives the chat and the turns taken, at most `max_turns`.
async fn resume_while_paused(lead: &Agent, max_turns: usize) -> (Chat, usize) {
    let mut chat = lead.chat().unwrap();
    let mut paused = chat.ask("go").await.unwrap().is_paused();
    let mut turns = 1;
    while paused && turns < max_turns {
        let json = serde_json::to_string(chat.state()).unwrap();
        chat = lead
            .chat_from_state(serde_json::from_str::<ChatState>(&json).unwrap())
            .unwrap();
        turns += 1;
        paused = if turns % 2 == 1 {
            match chat.complete().await.unwrap() {
                Outcome::Paused(_) => true,
                Outcome::Done(_) => false,
                other => panic!("turn {turns}: {other:?}"),
            }
        } else {
            match chat.step().await.unwrap() {
                Step::Paused(_) => true,
                Step::Continue => chat.complete().await.unwrap().is_paused(),
                Step::Done(_) => false,
                other => panic!("turn {turns}: {other:?}"),
            }
        };
    }
    (chat, turns)
}

/// A sub-agent whose model keeps calling a tool that pauses on a task pauses its parent each
/// time; the turns that resume the parent (nobody speaking between them) resume the
/// sub-agent, which keeps its rounds in a row in its state: all of them share its one round
/// budget, with default options, and the parent's model reads that it was used.
#[tokio::test]
async fn a_sub_agent_that_keeps_calling_a_task_tool_uses_one_round_budget_across_resumed_turns() {
    let inner = keeps_calling_job(4 * DEFAULT_ROUNDS);
    let runner = Agent::new("runner", inner.clone()).with_tools(Job);
    let lead_model = ScriptedProvider::new()
        .then_call("runner", json!({"input": "run the jobs"}))
        .then_text("The runner gave up.");
    let lead =
        Agent::new("lead", lead_model.clone()).with_tools(runner.as_tool("runner", "Runs jobs"));
    let (chat, turns) = resume_while_paused(&lead, 4 * DEFAULT_ROUNDS).await;
    assert!(!chat.is_paused(), "still paused after {turns} turns");
    assert_eq!(
        inner.request_count(),
        DEFAULT_ROUNDS,
        "the sub-agent's model was asked once per resumed turn, past its round budget"
    );
    // The sub-agent's first turn and one per round after it; the last finds the budget used.
    assert_eq!(turns, DEFAULT_ROUNDS + 1);
    assert_eq!(lead_model.request_count(), 2);
    let results = results(chat.messages());
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(results[0].0, "{results:?}");
    assert!(results[0].1.contains("round budget"), "{results:?}");
    assert_eq!(
        chat.messages().last().unwrap().text(),
        "The runner gave up."
    );
}

/// The same two levels down: the worker's rounds in a row are kept in its state, inside its
/// manager's, inside the lead's, whose one round waits on it throughout.
#[tokio::test]
async fn a_sub_agent_two_levels_down_keeps_its_round_budget_across_resumed_turns() {
    let inner = keeps_calling_job(4 * DEFAULT_ROUNDS);
    let worker = Agent::new("worker", inner.clone()).with_tools(Job);
    let manager_model = ScriptedProvider::new()
        .then_call("worker", json!({"input": "run the jobs"}))
        .then_text("The worker gave up.");
    let manager =
        Agent::new("manager", manager_model.clone()).with_tools(worker.as_tool("worker", "Works"));
    let lead_model = ScriptedProvider::new()
        .then_call("manager", json!({"input": "get the jobs run"}))
        .then_text("Nothing ran.");
    let lead =
        Agent::new("lead", lead_model.clone()).with_tools(manager.as_tool("manager", "Manages"));
    let (chat, turns) = resume_while_paused(&lead, 4 * DEFAULT_ROUNDS).await;
    assert!(!chat.is_paused(), "still paused after {turns} turns");
    assert_eq!(inner.request_count(), DEFAULT_ROUNDS);
    assert_eq!(manager_model.request_count(), 2);
    assert_eq!(lead_model.request_count(), 2);
    assert_eq!(
        results(chat.messages()),
        [(false, "The worker gave up.".to_owned())]
    );
}

/// A sub-agent whose answers do not fit its output schema, each asked again, calls the task
/// tool between them: the answers asked again end no run of rounds, and the retries each
/// resumed turn gives do not start the round budget again.
#[tokio::test]
async fn a_sub_agent_answering_wrongly_between_task_calls_keeps_its_round_budget() {
    let mut inner = ScriptedProvider::new().then_call("job", json!({}));
    for _ in 0..4 * DEFAULT_ROUNDS {
        inner = inner.then_text("not json").then_call("job", json!({}));
    }
    let runner = Agent::new("runner", inner.clone())
        .with_tools(Job)
        .with_output_schema(
            OutputSchema::new("report", json!({"type": "object"}))
                .unwrap()
                .with_retries(1),
        );
    let lead_model = ScriptedProvider::new()
        .then_call("runner", json!({"input": "run the jobs"}))
        .then_text("The runner gave up.");
    let lead =
        Agent::new("lead", lead_model.clone()).with_tools(runner.as_tool("runner", "Runs jobs"));
    let (chat, turns) = resume_while_paused(&lead, 4 * DEFAULT_ROUNDS).await;
    assert!(!chat.is_paused(), "still paused after {turns} turns");
    // Its first call, then a wrong answer and a call for each of the rounds after it.
    assert_eq!(inner.request_count(), 1 + 2 * (DEFAULT_ROUNDS - 1));
    let results = results(chat.messages());
    assert!(
        results.len() == 1 && results[0].0 && results[0].1.contains("round budget"),
        "{results:?}"
    );
}

/// A durable lead: each turn loads the chat from its store, as a worker does, and resumes
/// the sub-agent whose job finished; the sub-agent's round budget holds across them.
#[cfg(feature = "sqlite")]
#[tokio::test]
async fn a_durable_parent_s_sub_agent_keeps_its_round_budget_across_loads() {
    use llm_tools_core::store::SqliteStore;

    let store = SqliteStore::open(":memory:").await.unwrap();
    let inner = keeps_calling_job(4 * DEFAULT_ROUNDS);
    let runner = Agent::new("runner", inner.clone()).with_tools(Job);
    let lead_model = ScriptedProvider::new()
        .then_call("runner", json!({"input": "run the jobs"}))
        .then_text("The runner gave up.");
    let lead =
        Agent::new("lead", lead_model.clone()).with_tools(runner.as_tool("runner", "Runs jobs"));
    let mut chat = Chat::create(store.clone(), "chat-1", lead_model.clone())
        .await
        .unwrap();
    lead.configure(&mut chat).unwrap();
    let mut paused = chat.ask("go").await.unwrap().is_paused();
    drop(chat);
    let mut turns = 1;
    while paused && turns < 4 * DEFAULT_ROUNDS {
        let mut chat = Chat::load(store.clone(), "chat-1", lead_model.clone())
            .await
            .unwrap();
        lead.configure(&mut chat).unwrap();
        paused = chat.complete().await.unwrap().is_paused();
        turns += 1;
    }
    assert!(!paused, "still paused after {turns} turns");
    assert_eq!(inner.request_count(), DEFAULT_ROUNDS);
    assert_eq!(turns, DEFAULT_ROUNDS + 1);
    assert_eq!(lead_model.request_count(), 2);
}

/// A lead whose model calls the sub-agent again each time it gives up: each call has a
/// round budget of its own, but each costs the lead a round, and the lead's rounds in a row
/// are kept across the turns too, so the whole is bounded by the lead's budget times the
/// sub-agent's, then the application is told.
#[tokio::test]
async fn a_lead_calling_a_sub_agent_again_and_again_is_bounded_by_both_round_budgets() {
    use llm_tools_core::Error;
    use llm_tools_core::chat::ToolOptions;

    let inner = keeps_calling_job(100);
    let runner = Agent::new("runner", inner.clone())
        .with_tools(Job)
        .with_tool_options(ToolOptions::default().with_rounds(2));
    let lead_model = (0..100).fold(ScriptedProvider::new(), |model, _| {
        model.then_call("runner", json!({"input": "run the jobs"}))
    });
    let lead = Agent::new("lead", lead_model.clone())
        .with_tools(runner.as_tool("runner", "Runs jobs"))
        .with_tool_options(ToolOptions::default().with_rounds(3));
    let mut chat = lead.chat().unwrap();
    let mut outcome = chat.ask("go").await;
    let mut turns = 1;
    while matches!(outcome, Ok(Outcome::Paused(_))) && turns < 100 {
        let json = serde_json::to_string(chat.state()).unwrap();
        chat = lead
            .chat_from_state(serde_json::from_str::<ChatState>(&json).unwrap())
            .unwrap();
        outcome = chat.complete().await;
        turns += 1;
    }
    assert!(
        matches!(outcome, Err(Error::RoundsExceeded { rounds: 3 })),
        "{outcome:?} after {turns} turns"
    );
    assert_eq!(lead_model.request_count(), 3);
    assert_eq!(inner.request_count(), 3 * 2);
    assert_eq!(turns, 7);
}
