//! Sub-agents as tools: answers, pauses going up and answers coming down, streaming, usage,
//! bounds and errors.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::StreamExt as _;
use llm_tools_core::agent::{Agent, AgentPauses};
use llm_tools_core::chat::{
    ChatEvent, DEFAULT_MAX_REQUESTS_PER_TURN, Outcome, PauseReason, StopReason, StopWhen,
    ToolOptions,
};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{
    Error, Message, Question, Role, StreamEvent, Task, Tool, ToolCall, ToolContext, ToolError,
    ToolOutcome, ToolOutput, Usage, tool,
};
use serde_json::json;

/// Deletes a file
#[tool(needs_approval)]
async fn delete_file(path: String) -> String {
    format!("deleted {path}")
}

/// Deploys to the region the user picks
#[tool]
async fn deploy(ctx: &ToolContext) -> Result<String, ToolError> {
    let question = Question::new("Which region?")
        .required_field("region", json!({"type": "string", "enum": ["eu", "us"]}));
    let answer = ctx.ask(question).await?;
    Ok(format!(
        "deployed to {}",
        answer.get_str("region").unwrap_or("nowhere")
    ))
}

fn tool_results(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(Message::text)
        .collect()
}

#[tokio::test]
async fn a_sub_agent_answers_and_its_answer_is_the_tool_result() {
    let inner = ScriptedProvider::new().then_text("Ruby dates from 1995.");
    let researcher = Agent::new("researcher", inner.clone())
        .with_instructions("Research the topic; answer in one paragraph.");
    let outer = ScriptedProvider::new()
        .then_call("researcher", json!({"input": "When was Ruby made?"}))
        .then_text("1995.");
    let lead = Agent::new("lead", outer.clone())
        .with_tools(researcher.as_tool("researcher", "Researches a topic"));
    let mut chat = lead.chat().unwrap();
    let answer = chat.ask("When was Ruby made?").await.unwrap();
    assert_eq!(answer.text().as_deref(), Some("1995."));
    assert_eq!(tool_results(chat.messages()), ["Ruby dates from 1995."]);
    // The sub-agent got its instructions and the model's input, nothing of the parent's chat.
    let sent = &inner.requests()[0].messages;
    assert_eq!(
        sent[0].text(),
        "Research the topic; answer in one paragraph."
    );
    assert_eq!(sent[1].text(), "When was Ruby made?");
    assert_eq!(sent.len(), 2);
    assert_eq!(outer.requests()[0].tools, ["researcher"]);
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Verdict {
    #[allow(dead_code)]
    spam: bool,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Mail {
    /// The mail's subject
    #[allow(dead_code)]
    subject: String,
}

#[tokio::test]
async fn a_structured_sub_agent_takes_typed_arguments_and_returns_json() {
    let inner = ScriptedProvider::new().then_text(r#"{ "spam": true }"#);
    let classifier = Agent::new("classifier", inner.clone())
        .with_output::<Verdict>()
        .unwrap();
    let tool = classifier.as_tool_with::<Mail>("classify", "Tells spam from mail");
    assert_eq!(tool.spec().parameters()["required"], json!(["subject"]));
    assert_eq!(
        tool.spec().output_schema().unwrap()["properties"]["spam"]["type"],
        "boolean"
    );
    let outer = ScriptedProvider::new()
        .then_call("classify", json!({"subject": "You won!"}))
        .then_call("classify", json!({"title": "wrong"}))
        .then_text("Spam.");
    let mut chat = Agent::new("lead", outer).with_tools(tool).chat().unwrap();
    let _ = chat.ask("Is it spam?").await.unwrap();
    let results = tool_results(chat.messages());
    assert_eq!(results[0], r#"{"spam":true}"#);
    assert!(results[1].contains("invalid arguments"), "{}", results[1]);
    assert_eq!(
        inner.requests()[0].messages[0].text(),
        r#"{"subject":"You won!"}"#
    );
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Brief {
    /// How many pages
    #[allow(dead_code)]
    pages: u32,
}

/// A typed sub-agent's arguments of the wrong type get the error every tool's do: the
/// argument named, the accepted ones listed, the model's value quoted cut (a 5 MB value
/// would otherwise come back, and be sent again with every later request).
#[tokio::test]
async fn a_typed_sub_agents_argument_error_quotes_the_models_value_cut() {
    let inner = ScriptedProvider::new();
    let writer = Agent::new("writer", inner.clone());
    let tool = writer.as_tool_with::<Brief>("write", "Writes a brief");
    let outer = ScriptedProvider::new()
        .then_call("write", json!({"pages": "x".repeat(5_000_000)}))
        .then_text("Could not.");
    let mut chat = Agent::new("lead", outer).with_tools(tool).chat().unwrap();
    let _ = chat.ask("Write it").await.unwrap();
    let results = tool_results(chat.messages());
    assert!(results[0].len() < 1_000, "{} bytes", results[0].len());
    assert!(
        results[0].contains("argument `pages`"),
        "the argument named: {}",
        results[0]
    );
    assert!(
        results[0].contains("accepted arguments: `pages`"),
        "{}",
        results[0]
    );
    assert_eq!(inner.request_count(), 0, "the sub-agent did not run");
}

#[tokio::test]
async fn an_approval_inside_a_sub_agent_is_approved_through_the_parent() {
    let janitor = Agent::new(
        "janitor",
        ScriptedProvider::new()
            .then_calls([
                ("delete_file", json!({"path": "/tmp/a.log"})),
                ("delete_file", json!({"path": "/etc/passwd"})),
            ])
            .then_text("Deleted a.log; passwd was refused."),
    )
    .with_tools(DeleteFile);
    let mut chat = Agent::new(
        "lead",
        ScriptedProvider::new()
            .then_call("janitor", json!({"input": "Clean up"}))
            .then_text("Cleaned."),
    )
    .with_tools(janitor.as_tool("janitor", "Cleans up"))
    .chat()
    .unwrap();

    assert!(chat.ask("Clean up").await.unwrap().is_paused());
    // The parent's own call waits on a task that says what the sub-agent waits on.
    let task = chat.pending_tasks()[0].task.clone();
    assert!(task.is_input_required());
    assert!(
        task.status_message()
            .unwrap()
            .contains("janitor › delete_file (an approval)")
    );
    let pauses = chat.paused_calls();
    assert_eq!(pauses.len(), 2);
    assert_eq!(pauses[0].path_string(), "janitor › delete_file");
    assert_eq!(pauses[0].depth(), 1);
    assert!(matches!(pauses[0].reason, PauseReason::Approval));
    assert_eq!(pauses[1].call.arguments, r#"{"path":"/etc/passwd"}"#);
    // A wrong kind of settlement is refused, and nothing changes.
    assert!(matches!(
        chat.answer_at(&pauses[0].id, json!({})),
        Err(Error::NotWaiting { .. })
    ));
    chat.approve_at(&pauses[0].id).unwrap();
    assert_eq!(
        chat.paused_calls().len(),
        1,
        "the approved call is no longer listed"
    );
    assert!(chat.pending_tasks()[0].task.is_input_required());
    chat.deny_at(&pauses[1].id, "never touch /etc").unwrap();
    assert!(
        !chat.pending_tasks()[0].task.is_input_required(),
        "nothing below waits on a person"
    );

    let answer = chat.complete().await.unwrap();
    assert_eq!(answer.text().as_deref(), Some("Cleaned."));
    assert_eq!(
        tool_results(chat.messages()),
        ["Deleted a.log; passwd was refused."]
    );
}

#[tokio::test]
async fn a_call_id_holding_the_path_separator_cannot_take_a_sub_agent_calls_approval() {
    // The model names its own call `p/x` beside the sub-agent call `p`, whose own call is `x`:
    // approving the harmless call must not approve the sub-agent's.
    let janitor = Agent::new(
        "janitor",
        ScriptedProvider::new()
            .then_tool_calls(vec![ToolCall::new(
                "x",
                "delete_file",
                r#"{"path":"/important"}"#,
            )])
            .then_text("Done."),
    )
    .with_tools(DeleteFile);
    let mut chat = Agent::new(
        "lead",
        ScriptedProvider::new()
            .then_tool_calls(vec![
                ToolCall::new("p", "janitor", r#"{"input":"Clean up"}"#),
                ToolCall::new("p/x", "delete_file", r#"{"path":"/tmp/junk"}"#),
            ])
            .then_text("Cleaned."),
    )
    .with_tools((janitor.as_tool("janitor", "Cleans up"), DeleteFile))
    .chat()
    .unwrap();
    assert!(chat.ask("Clean up").await.unwrap().is_paused());
    let pauses = chat.paused_calls();
    assert_eq!(pauses.len(), 2, "{pauses:?}");
    let ids: Vec<String> = pauses.iter().map(|p| p.id.clone()).collect();
    assert_ne!(ids[0], ids[1], "each pause has an id of its own");
    let harmless = pauses
        .iter()
        .find(|p| p.call.arguments.contains("/tmp/junk"))
        .unwrap();
    assert!(!harmless.id.contains("p/x"), "{}", harmless.id);
    chat.approve_at(&harmless.id).unwrap();
    // Only the harmless call is settled: the sub-agent's still waits.
    let left = chat.paused_calls();
    assert_eq!(left.len(), 1);
    assert!(left[0].call.arguments.contains("/important"), "{left:?}");
}

#[tokio::test]
async fn a_sub_agent_question_is_answered_through_the_parent() {
    let inner = ScriptedProvider::new()
        .then_call("deploy", json!({}))
        .then_text("Deployed to eu.");
    let deployer = Agent::new("deployer", inner.clone()).with_tools(Deploy);
    let mut chat = Agent::new(
        "lead",
        ScriptedProvider::new()
            .then_call("deployer", json!({"input": "Deploy the site"}))
            .then_text("Done."),
    )
    .with_tools(deployer.as_tool("deployer", "Deploys"))
    .chat()
    .unwrap();

    let outcome = chat.ask("Deploy").await.unwrap();
    assert!(outcome.is_paused());
    let pause = &chat.paused_calls()[0];
    assert_eq!(pause.path, ["deployer", "deploy"]);
    let PauseReason::Question(question) = &pause.reason else {
        panic!("expected a question, got {:?}", pause.reason);
    };
    assert_eq!(question.message(), "Which region?");
    // The sub-agent's question's required field is checked at the top.
    assert!(matches!(
        chat.answer_at(&pause.id, json!({})),
        Err(Error::InvalidAnswer { .. })
    ));
    chat.answer_at(&pause.id, json!({"region": "eu"})).unwrap();
    let answer = chat.complete().await.unwrap();
    assert_eq!(answer.text().as_deref(), Some("Done."));
    assert_eq!(tool_results(chat.messages()), ["Deployed to eu."]);
    // The sub-agent resumed where it stopped: its model was asked once more, with the result.
    let requests = inner.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(tool_results(&requests[1].messages), ["deployed to eu"]);
}

#[tokio::test]
async fn pauses_and_answers_cross_two_levels_of_sub_agents() {
    let worker = Agent::new(
        "worker",
        ScriptedProvider::new()
            .then_call("delete_file", json!({"path": "x"}))
            .then_text("worker: deleted x"),
    )
    .with_tools(DeleteFile);
    let manager = Agent::new(
        "manager",
        ScriptedProvider::new()
            .then_call("worker", json!({"input": "delete x"}))
            .then_text("manager: worker deleted x"),
    )
    .with_tools(worker.as_tool("worker", "Does the work"));
    let mut chat = Agent::new(
        "lead",
        ScriptedProvider::new()
            .then_call("manager", json!({"input": "get x deleted"}))
            .then_text("x is gone."),
    )
    .with_tools(manager.as_tool("manager", "Manages"))
    .chat()
    .unwrap();
    assert!(chat.ask("Delete x").await.unwrap().is_paused());
    let pauses = chat.paused_calls();
    assert_eq!(pauses.len(), 1);
    assert_eq!(pauses[0].path_string(), "manager › worker › delete_file");
    assert_eq!(pauses[0].id.split('/').count(), 3);
    chat.approve_at(&pauses[0].id).unwrap();
    assert!(chat.paused_calls().is_empty());
    assert_eq!(
        chat.complete().await.unwrap().text().as_deref(),
        Some("x is gone.")
    );
    assert_eq!(tool_results(chat.messages()), ["manager: worker deleted x"]);
}

#[tokio::test]
async fn the_parent_stream_carries_the_sub_agent_events_with_their_paths() {
    let researcher = Agent::new(
        "researcher",
        ScriptedProvider::new()
            .then_call("delete_file", json!({"path": "notes"}))
            .then_text("Found it."),
    )
    .with_tools(DeleteFile);
    let mut chat = Agent::new(
        "lead",
        ScriptedProvider::new()
            .then_call("researcher", json!({"input": "look"}))
            .then_text("It was found."),
    )
    .with_tools(researcher.as_tool("researcher", "Researches"))
    .chat()
    .unwrap();

    let mut nested = Vec::new();
    let mut last = None;
    {
        let mut events = chat.ask_stream("Look it up");
        while let Some(event) = events.next().await {
            match event.unwrap().into_innermost() {
                (path, event) if !path.is_empty() => nested.push((path, event)),
                (_, own) => last = Some(own),
            }
        }
    }
    assert!(matches!(last, Some(ChatEvent::Paused(_))));
    assert!(nested.iter().all(|(path, _)| path == &["researcher"]));
    assert!(nested.iter().any(
        |(_, e)| matches!(e.model(), Some(StreamEvent::ToolCallStarted { name, .. }) if name == "delete_file")
    ));
    assert!(matches!(nested.last(), Some((_, ChatEvent::Paused(_)))));

    let id = chat.paused_calls()[0].id.clone();
    chat.approve_at(&id).unwrap();
    let mut text = String::new();
    let mut results = Vec::new();
    {
        let mut events = chat.complete_stream();
        while let Some(event) = events.next().await {
            if let ChatEvent::Agent { path, event } = event.unwrap() {
                match *event {
                    ChatEvent::ToolResult { result, .. } => results.push((path, result.text())),
                    ChatEvent::Model(StreamEvent::TextDelta(delta)) => text.push_str(&delta),
                    _ => {}
                }
            }
        }
    }
    assert_eq!(
        results,
        [(vec!["researcher".to_owned()], "deleted notes".to_owned())]
    );
    assert_eq!(text, "Found it.");
}

fn answer_with_usage(text: &str, usage: Usage) -> Message {
    let mut message = Message::assistant(text);
    message.usage = Some(usage);
    message
}

#[tokio::test]
async fn sub_agent_usage_rolls_up_into_the_parent() {
    let mut call =
        Message::assistant_with_calls("", vec![ToolCall::new("c1", "helper", r#"{"input":"hi"}"#)]);
    call.usage = Some(Usage::new(100, 10));
    let helper = Agent::new(
        "helper",
        ScriptedProvider::new().then(answer_with_usage("hello", Usage::new(7, 3))),
    );
    let mut chat = Agent::new(
        "lead",
        ScriptedProvider::new()
            .then(call)
            .then(answer_with_usage("done", Usage::new(200, 20))),
    )
    .with_tools(helper.as_tool("helper", "Helps"))
    .chat()
    .unwrap();
    let _ = chat.ask("go").await.unwrap();
    assert_eq!(chat.usage().input_tokens, 307);
    assert_eq!(chat.usage().output_tokens, 33);
}

/// Waits for ever
#[tool]
async fn stall() -> String {
    std::future::pending::<()>().await;
    String::new()
}

#[tokio::test]
async fn a_sub_agent_cut_off_by_its_time_limit_still_counts_what_it_spent() {
    let mut call =
        Message::assistant_with_calls("", vec![ToolCall::new("c1", "helper", r#"{"input":"hi"}"#)]);
    call.usage = Some(Usage::new(100, 10));
    // The helper's model asks for a tool that never returns: the helper's call runs out of time
    // after its one request.
    let mut stalling = Message::assistant_with_calls("", vec![ToolCall::new("s1", "stall", "{}")]);
    stalling.usage = Some(Usage::new(7, 3));
    let helper = Agent::new("helper", ScriptedProvider::new().then(stalling)).with_tools(Stall);
    let mut chat = Agent::new(
        "lead",
        ScriptedProvider::new()
            .then(call)
            .then(answer_with_usage("done", Usage::new(200, 20))),
    )
    .with_tools(
        helper
            .as_tool("helper", "Helps")
            .with_max_run_time(std::time::Duration::from_millis(200)),
    )
    .chat()
    .unwrap();
    let _ = chat.ask("go").await.unwrap();
    assert!(
        chat.messages()[2].is_error,
        "the helper's call timed out: {:?}",
        chat.messages()[2]
    );
    assert_eq!(chat.usage().input_tokens, 307);
    assert_eq!(chat.usage().output_tokens, 33);
}

/// Does nothing
#[tool]
async fn noop() -> String {
    "ok".into()
}

#[tokio::test]
async fn the_sub_agents_of_one_answer_stop_at_the_parents_request_budget_as_they_spend() {
    // Five sub-agent calls in one answer, each sub-agent calling a tool round after round.
    let mut busy = ScriptedProvider::new();
    for _ in 0..200 {
        busy = busy.then_call("noop", json!({}));
    }
    let worker = Agent::new("worker", busy.clone()).with_tools(Noop);
    let top = ScriptedProvider::new()
        .then_calls((0..5).map(|_| ("worker", json!({"input": "work"}))))
        .then_text("done");
    let mut chat = Agent::new("lead", top.clone())
        .with_tools(worker.as_tool("worker", "Works"))
        .chat()
        .unwrap();
    chat.stop_when(StopWhen::requests(6));
    let outcome = chat.ask("go").await.unwrap();
    assert!(
        matches!(outcome, Outcome::Stopped(StopReason::Requests { .. })),
        "{outcome:?}"
    );
    // The sub-agents' requests count as the turn's, as they are sent: without that, each of
    // the five would send its 25 rounds before the budget was looked at.
    let sent = top.requests().len() + busy.requests().len();
    assert!(sent <= 6, "{sent} requests");
}

/// How many sub-agent calls each answer of [`fanning_out`]'s top model makes.
const FAN_OUT: usize = 8;

/// How many tool rounds each worker of [`fanning_out`] takes before it answers: within its
/// round budget, so every worker's call succeeds.
const WORKER_ROUNDS: usize = 20;

/// The models of [`fanning_out`]: the lead's, and each worker chat's, to count what was sent.
struct Models {
    top: ScriptedProvider,
    workers: Arc<std::sync::Mutex<Vec<ScriptedProvider>>>,
}

impl Models {
    fn sent(&self) -> usize {
        self.top.request_count()
            + self
                .workers
                .lock()
                .unwrap()
                .iter()
                .map(ScriptedProvider::request_count)
                .sum::<usize>()
    }
}

/// A lead whose model fans out to [`FAN_OUT`] workers in every answer, for ever, and workers
/// that each call a tool for [`WORKER_ROUNDS`] rounds and then answer (the most a sub-agent
/// can spend without failing, which would make the tool unavailable after a few failures).
/// Every answer uses one input token, so the lead's usage counts every request.
fn fanning_out() -> (Models, Agent) {
    let mut working = Message::assistant_with_calls("", vec![ToolCall::new("n1", "noop", "{}")]);
    working.usage = Some(Usage::new(1, 0));
    let workers = Arc::new(std::sync::Mutex::new(Vec::new()));
    let made = Arc::clone(&workers);
    let worker = Agent::with_provider_factory("worker", move || {
        let mut model = ScriptedProvider::new();
        for _ in 0..WORKER_ROUNDS {
            model = model.then(working.clone());
        }
        let model = model.then(answer_with_usage("worked", Usage::new(1, 0)));
        made.lock().unwrap().push(model.clone());
        Arc::new(model) as Arc<dyn llm_tools_core::Provider>
    })
    .with_tools(Noop);
    let calls = (1..=FAN_OUT)
        .map(|n| ToolCall::new(format!("w{n}"), "worker", r#"{"input":"work"}"#))
        .collect();
    let mut fanning = Message::assistant_with_calls("", calls);
    fanning.usage = Some(Usage::new(1, 0));
    let top = ScriptedProvider::new().then(fanning).cycle();
    let lead = Agent::new("lead", top.clone()).with_tools(worker.as_tool("worker", "Works"));
    (Models { top, workers }, lead)
}

#[tokio::test]
async fn a_parent_fanning_out_to_sub_agents_stops_at_the_default_request_budget() {
    let (models, lead) = fanning_out();
    let mut chat = lead.chat().unwrap();
    let outcome = chat.ask("go").await.unwrap();
    let sent = models.sent();
    let Outcome::Stopped(StopReason::Requests { limit, used }) = outcome else {
        panic!("the turn goes on past {DEFAULT_MAX_REQUESTS_PER_TURN} requests: {outcome:?}");
    };
    assert_eq!(limit, DEFAULT_MAX_REQUESTS_PER_TURN);
    // The sub-agents' requests count as the turn's, as they are sent: each worker running when
    // the budget was reached sends one request at most past it.
    assert_eq!(used, sent, "every request sent counts in the lead's turn");
    assert!(
        (DEFAULT_MAX_REQUESTS_PER_TURN..=DEFAULT_MAX_REQUESTS_PER_TURN + FAN_OUT).contains(&sent),
        "{sent} requests"
    );
    assert_eq!(chat.usage().input_tokens, u64::try_from(sent).unwrap());
    assert_eq!(
        chat.stopped(),
        Some(&StopReason::Requests { limit, used }),
        "kept until the next turn"
    );
    // Nothing is lost: the last round's calls all have their results (the workers cut off by
    // the budget say so), and the history ends with them.
    let last_round = chat
        .messages()
        .iter()
        .rposition(|m| m.role == Role::Assistant)
        .unwrap();
    let results = &chat.messages()[last_round + 1..];
    assert_eq!(results.len(), FAN_OUT);
    assert!(results.iter().all(|m| m.role == Role::Tool));
    assert!(
        results
            .iter()
            .any(|m| m.text().contains("stopped before answering")),
        "{:?}",
        tool_results(results)
    );

    // The application carries on: a fresh budget.
    let again = chat.complete().await.unwrap();
    let more = models.sent() - sent;
    assert!(
        matches!(again, Outcome::Stopped(StopReason::Requests { limit, used })
            if limit == DEFAULT_MAX_REQUESTS_PER_TURN && used == more),
        "{again:?} after {more} more requests"
    );
}

#[tokio::test]
async fn a_parent_with_the_request_budget_lifted_goes_past_it() {
    // Three rounds of the lead, each running eight workers through their 21 requests: 507
    // requests, past the default budget. With it, the turn stops at the budget…
    let (_, lead) = fanning_out();
    let bounded = lead.with_tool_options(ToolOptions::default().with_rounds(3));
    let outcome = bounded.chat().unwrap().ask("go").await.unwrap();
    assert!(
        matches!(outcome, Outcome::Stopped(StopReason::Requests { limit, .. }) if limit == DEFAULT_MAX_REQUESTS_PER_TURN),
        "{outcome:?}"
    );

    // …lifted, only the round budget ends it.
    let (models, lead) = fanning_out();
    let lifted = lead.with_tool_options(
        ToolOptions::default()
            .with_rounds(3)
            .with_max_requests_per_turn(None),
    );
    let mut chat = lifted.chat().unwrap();
    match chat.ask("go").await {
        Err(Error::RoundsExceeded { rounds: 3 }) => {}
        other => panic!("expected the round budget, got {other:?}"),
    }
    let sent = models.sent();
    assert_eq!(sent, 3 + 3 * FAN_OUT * (WORKER_ROUNDS + 1));
    assert!(sent > DEFAULT_MAX_REQUESTS_PER_TURN);
    assert_eq!(chat.usage().input_tokens, u64::try_from(sent).unwrap());
}

#[tokio::test]
async fn a_chat_s_own_request_budget_replaces_the_default_and_its_token_budget_leaves_it() {
    // A lower budget of the chat's own wins…
    let (models, lead) = fanning_out();
    let mut chat = lead.chat().unwrap();
    chat.stop_when(StopWhen::requests(40));
    let outcome = chat.ask("go").await.unwrap();
    assert!(
        matches!(
            outcome,
            Outcome::Stopped(StopReason::Requests { limit: 40, .. })
        ),
        "{outcome:?}"
    );
    let sent = models.sent();
    assert!((40..=40 + FAN_OUT).contains(&sent), "{sent} requests");

    // …and a token budget the turn does not reach leaves the default request budget in force.
    let (_, lead) = fanning_out();
    let mut chat = lead.chat().unwrap();
    chat.stop_when(StopWhen::tokens(1_000_000));
    let outcome = chat.ask("go").await.unwrap();
    assert!(
        matches!(outcome, Outcome::Stopped(StopReason::Requests { limit, .. }) if limit == DEFAULT_MAX_REQUESTS_PER_TURN),
        "{outcome:?}"
    );
}

/// How many sub-agent calls each answer of [`fanning_out_two_levels`] makes, at both levels.
const WIDE: usize = 4;

/// The models of [`fanning_out_two_levels`], to count what was sent at each level.
struct TwoLevels {
    top: ScriptedProvider,
    middle: ScriptedProvider,
    leaves: ScriptedProvider,
}

impl TwoLevels {
    fn sent(&self) -> usize {
        self.top.request_count() + self.middle.request_count() + self.leaves.request_count()
    }
}

/// A lead whose model fans out to [`WIDE`] managers in every answer, for ever; each manager's
/// model fans out to [`WIDE`] workers in every answer, for ever; each worker's model never
/// answers, so every worker request is in flight until its call is cut off by its time limit
/// (its request sent, never answered). Every manager's round runs its workers' requests at
/// once, and the managers run at once.
fn fanning_out_two_levels() -> (TwoLevels, Agent) {
    let fan_out = |tool: &str| {
        let calls = (1..=WIDE)
            .map(|n| ToolCall::new(format!("{tool}{n}"), tool, r#"{"input":"work"}"#))
            .collect();
        ScriptedProvider::new()
            .then(Message::assistant_with_calls("", calls))
            .cycle()
    };
    let leaves = ScriptedProvider::new().then_hang().cycle();
    let worker = Agent::new("worker", leaves.clone());
    let middle = fan_out("worker");
    // The workers' calls, all cut off, do not make their tool unavailable.
    let manager = Agent::new("manager", middle.clone())
        .with_tools(
            worker
                .as_tool("worker", "Works")
                .with_max_run_time(std::time::Duration::from_millis(1)),
        )
        .with_tool_options(ToolOptions::default().with_max_retries(None));
    let top = fan_out("manager");
    let lead = Agent::new("lead", top.clone()).with_tools(manager.as_tool("manager", "Manages"));
    (
        TwoLevels {
            top,
            middle,
            leaves,
        },
        lead,
    )
}

/// Runs a turn of `chat` (a lead of [`fanning_out_two_levels`]) to its request budget `limit`
/// and checks that it sent no request past it and counted every one it sent, those of the
/// workers cut off mid-flight included.
async fn stops_at_the_budget_with_every_request_counted(
    chat: &mut llm_tools_core::chat::Chat,
    models: &TwoLevels,
    limit: usize,
) {
    let outcome = chat.ask("go").await.unwrap();
    let sent = models.sent();
    let used = match outcome.stopped() {
        Some(&StopReason::Requests {
            limit: reached,
            used,
        }) if reached == limit => used,
        _ => 0,
    };
    assert!(
        used > 0,
        "the turn did not stop at its request budget: {outcome:?}"
    );
    // Requests count as they are sent, each taken from the budgets of every chat above before
    // it goes: the workers' requests in flight count already, so no manager or worker sends
    // one past the budget, however many send at once.
    assert!(sent <= limit, "{sent} requests sent, the budget {limit}");
    // Every request sent counts in the lead's turn, those of workers cut off waiting for their
    // answer (their time limit) included.
    assert_eq!(used, sent, "the lead's turn counts every request sent");
    assert_eq!(used, limit, "the budget is used whole");
    assert!(models.leaves.request_count() > WIDE, "the workers sent");
}

#[tokio::test]
async fn a_two_level_fan_out_sends_no_request_past_the_default_budget_and_counts_each_as_sent() {
    let (models, lead) = fanning_out_two_levels();
    let mut chat = lead.chat().unwrap();
    stops_at_the_budget_with_every_request_counted(
        &mut chat,
        &models,
        DEFAULT_MAX_REQUESTS_PER_TURN,
    )
    .await;
}

#[tokio::test]
async fn a_two_level_fan_out_sends_no_request_past_the_chat_s_own_request_budget() {
    let (models, lead) = fanning_out_two_levels();
    let mut chat = lead.chat().unwrap();
    // Reached in the first answers of the managers: the lead's request, then each manager's
    // and its workers', 21 in all if nothing stopped them.
    chat.stop_when(StopWhen::requests(10));
    stops_at_the_budget_with_every_request_counted(&mut chat, &models, 10).await;
}

/// Runs a job that is done at its first check
struct QuickJob;

#[tool]
impl QuickJob {
    /// Runs a quick job
    async fn execute(&self) -> Task {
        Task::working("running")
    }

    async fn resume(&self, _task: Task) -> ToolOutcome {
        ToolOutcome::Output(ToolOutput::text("job done"))
    }
}

#[tokio::test]
async fn a_paused_sub_agent_resumed_past_the_chats_budget_sends_nothing() {
    let mut start = Message::assistant_with_calls(
        "",
        vec![ToolCall::new("c1", "helper", r#"{"input":"run the job"}"#)],
    );
    start.usage = Some(Usage::new(90, 10));
    let mut job = Message::assistant_with_calls("", vec![ToolCall::new("j1", "quick_job", "{}")]);
    job.usage = Some(Usage::new(40, 10));
    let inner = ScriptedProvider::new()
        .then(job)
        .then_text("the job is done");
    let helper = Agent::new("helper", inner.clone()).with_tools(QuickJob);
    let mut chat = Agent::new(
        "lead",
        ScriptedProvider::new().then(start).then_text("done"),
    )
    .with_tools(helper.as_tool("helper", "Helps"))
    .chat()
    .unwrap();
    chat.stop_when(StopWhen::chat_tokens(120));
    // 100 tokens, then the sub-agent's 50: it pauses on its job, and the chat with it.
    assert!(chat.ask("go").await.unwrap().is_paused());
    assert_eq!(inner.requests().len(), 1);
    // The job is done, but the chat's budget is spent: the sub-agent asks its model nothing.
    let outcome = chat.complete().await.unwrap();
    assert!(
        matches!(outcome, Outcome::Stopped(StopReason::ChatTokens { .. })),
        "{outcome:?}"
    );
    assert_eq!(
        inner.requests().len(),
        1,
        "the resumed sub-agent sent a request"
    );
}

#[tokio::test]
async fn the_depth_limit_stops_a_sub_agent_that_calls_itself_too_deep() {
    // A "recursive" agent: each level calls the next one down, by the same tool name.
    let runs = Arc::new(AtomicUsize::new(0));
    fn level(n: usize, below: Option<Agent>, runs: Arc<AtomicUsize>) -> Agent {
        let model = ScriptedProvider::new()
            .then_call("dig", json!({"input": "deeper"}))
            .then_text(format!("level {n} done"));
        let counted = move || -> Arc<dyn llm_tools_core::Provider> {
            runs.fetch_add(1, Ordering::SeqCst);
            Arc::new(model.clone())
        };
        let agent = Agent::with_provider_factory(format!("level{n}"), counted).with_max_depth(2);
        match below {
            Some(below) => agent.with_tools(below.as_tool("dig", "Digs deeper")),
            None => agent,
        }
    }
    let l3 = level(3, None, Arc::clone(&runs));
    let l2 = level(2, Some(l3), Arc::clone(&runs));
    let l1 = level(1, Some(l2), Arc::clone(&runs));
    let top = level(0, Some(l1), Arc::clone(&runs));
    let mut chat = top.chat().unwrap();
    let answer = chat.ask("dig").await.unwrap();
    assert_eq!(answer.text().as_deref(), Some("level 0 done"));
    // The top chat, level 1 (depth 1) and level 2 (depth 2) ran; level 3 was refused.
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    assert_eq!(tool_results(chat.messages()), ["level 1 done"]);
}

#[tokio::test]
async fn a_fatal_sub_agent_error_is_the_parent_call_fatal_error_and_its_round_budget_the_model_s() {
    let broken = Agent::new(
        "broken",
        ScriptedProvider::new().then_error(llm_tools_core::ProviderError::new(
            "scripted",
            llm_tools_core::ProviderErrorKind::Request,
            "bad key",
        )),
    );
    let mut chat = Agent::new(
        "lead",
        ScriptedProvider::new().then_call("broken", json!({"input": "x"})),
    )
    .with_tools(broken.as_tool("broken", "Breaks"))
    .chat()
    .unwrap();
    match chat.ask("go").await {
        Err(Error::ToolFailed { tool, source, .. }) => {
            assert_eq!(tool, "broken");
            assert!(
                source.to_string().contains("sub-agent `broken` failed"),
                "{source}"
            );
        }
        other => panic!("expected a fatal tool error, got {other:?}"),
    }

    let looping = Agent::new(
        "looping",
        ScriptedProvider::new().then_call("tick", json!({})).cycle(),
    )
    .with_tools(Tick)
    .with_tool_options(ToolOptions::default().with_rounds(2));
    let mut chat = Agent::new(
        "lead",
        ScriptedProvider::new()
            .then_call("looping", json!({"input": "x"}))
            .then_text("It could not finish."),
    )
    .with_tools(looping.as_tool("looping", "Loops"))
    .chat()
    .unwrap();
    let outcome = chat.ask("go").await.unwrap();
    assert_eq!(outcome.text().as_deref(), Some("It could not finish."));
    let results = tool_results(chat.messages());
    assert!(results[0].contains("round budget"), "{}", results[0]);
    assert!(chat.messages()[2].is_error);
}

/// Ticks
#[tool]
async fn tick() -> &'static str {
    "tick"
}

/// Starts a long job
struct LongJob {
    cancelled: Arc<AtomicUsize>,
}

#[tool]
impl LongJob {
    /// Starts a long job
    async fn execute(&self) -> Task {
        Task::working("running")
    }

    async fn resume(&self, _task: Task) -> ToolOutcome {
        ToolOutcome::Output(ToolOutput::text("job finished"))
    }

    async fn cancel(&self, _task: Task) {
        self.cancelled.fetch_add(1, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn tasks_of_a_sub_agent_resume_through_the_parent_and_cancel_goes_down() {
    let cancelled = Arc::new(AtomicUsize::new(0));
    let runner = Agent::new(
        "runner",
        ScriptedProvider::new()
            .then_call("long_job", json!({}))
            .then_text("the job finished")
            .then_call("long_job", json!({})),
    )
    .with_tools(LongJob {
        cancelled: Arc::clone(&cancelled),
    });
    let mut chat = Agent::new(
        "lead",
        ScriptedProvider::new()
            .then_call("runner", json!({"input": "run it"}))
            .then_text("Finished.")
            .then_call("runner", json!({"input": "again"})),
    )
    .with_tools(runner.as_tool("runner", "Runs jobs"))
    .chat()
    .unwrap();
    assert!(chat.ask("Run").await.unwrap().is_paused());
    let pauses = chat.paused_calls();
    assert_eq!(pauses[0].path_string(), "runner › long_job");
    assert!(matches!(pauses[0].reason, PauseReason::Task(_)));
    // The sub-agent waits on a working task: so does the parent's call.
    assert!(!chat.pending_tasks()[0].task.is_input_required());
    assert_eq!(
        chat.complete().await.unwrap().text().as_deref(),
        Some("Finished.")
    );

    assert!(chat.ask("Run again").await.unwrap().is_paused());
    chat.cancel().await.expect("cancelled");
    assert_eq!(
        cancelled.load(Ordering::SeqCst),
        1,
        "the sub-agent's task was cancelled"
    );
    assert!(!chat.is_paused());
}

#[test]
fn a_sub_agent_tool_spec_passes_the_portability_check() {
    let agent = Agent::new("researcher", ScriptedProvider::new())
        .with_output::<Verdict>()
        .unwrap();
    let text = agent.as_tool("researcher", "Researches a topic");
    let typed = agent.as_tool_with::<Mail>("classify", "Classifies a mail");
    llm_tools_providers::schema::check_spec_portability(
        &[text.spec(), typed.spec()],
        llm_tools_providers::schema::Dialect::ALL,
    )
    .assert_portable();
}
