//! Loop control: retry budgets per tool, stop conditions and per-request preparation, with a
//! scripted model.

#![allow(clippy::unwrap_used, clippy::panic)] // test helpers outside `#[test]` fns

mod common;

use common::{TestTool, assert_results_follow_calls};
use llm_tools_core::chat::{Chat, RetriesExhausted, ToolOptions};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{Error, ToolError, ToolOutcome, ToolOutput, tool};
use serde_json::json;

/// Always fails with an error the model could act on.
fn flaky() -> TestTool {
    TestTool::new("flaky", |_, _| async {
        ToolOutcome::Error(ToolError::recoverable("the service is down"))
    })
}

/// Calls of one answer past the tool's limit of failures in a row do not run once the limit
/// is used up, whether they run one after another or a few at a time.
#[tokio::test]
async fn calls_of_one_answer_past_a_used_up_retry_budget_do_not_run() {
    use llm_tools_core::chat::Concurrency;
    for concurrency in [Concurrency::Sequential, Concurrency::parallel(2)] {
        let model = ScriptedProvider::new()
            .then_calls(std::iter::repeat_n(("flaky", json!({})), 6))
            .then_text("It is down.");
        let tool = flaky().shared();
        let mut chat = Chat::new(model);
        chat.with_tools(tool.clone()).unwrap();
        chat.with_tool_options(
            ToolOptions::default()
                .with_max_retries(Some(3))
                .with_concurrency(concurrency),
        )
        .unwrap();
        let outcome = chat.ask("Check the service").await.unwrap();
        assert_eq!(
            outcome.text().as_deref(),
            Some("It is down."),
            "{outcome:?}"
        );
        // Two at a time: the pair running when the third failure comes both ran.
        let most = if concurrency == Concurrency::Sequential {
            3
        } else {
            4
        };
        assert!(
            tool.calls() <= most,
            "{concurrency:?}: {} ran",
            tool.calls()
        );
        let results: Vec<String> = chat
            .messages()
            .iter()
            .filter(|m| m.role == llm_tools_core::Role::Tool)
            .map(|m| m.text())
            .collect();
        assert_eq!(results.len(), 6);
        assert!(
            results[5].contains("did not run"),
            "{concurrency:?}: {}",
            results[5]
        );
        assert_results_follow_calls(chat.messages());
    }
}

#[tokio::test]
async fn a_tool_failing_its_limit_in_a_row_is_unavailable_for_the_rest_of_the_turn() {
    let model = ScriptedProvider::new()
        .then_call("flaky", json!({}))
        .then_call("flaky", json!({}))
        .then_call("flaky", json!({}))
        .then_call("flaky", json!({}))
        .then_text("It is down.")
        // The next turn: the tool is offered again and runs.
        .then_call("flaky", json!({}))
        .then_text("Still down.");
    let tool = flaky().shared();
    let mut chat = Chat::new(model.clone());
    chat.with_tools((tool.clone(), TestTool::text("other", "ok")))
        .unwrap();
    chat.with_tool_options(ToolOptions::default().with_max_retries(Some(3)))
        .unwrap();
    assert_eq!(
        chat.ask("Check the service").await.unwrap().text().unwrap(),
        "It is down."
    );
    assert_eq!(tool.calls(), 3, "the fourth call does not run");
    let results: Vec<_> = chat
        .messages()
        .iter()
        .filter(|m| m.role == llm_tools_core::Role::Tool)
        .map(|m| m.text())
        .collect();
    assert_eq!(results[0], "the service is down");
    assert!(
        results[2].starts_with("the service is down")
            && results[2].contains("failed 3 time(s) in a row")
            && results[2].contains("unavailable for the rest of this turn"),
        "{}",
        results[2]
    );
    assert!(results[3].contains("did not run"), "{}", results[3]);
    let requests = model.requests();
    assert_eq!(requests[2].tools, ["flaky", "other"]);
    assert_eq!(requests[3].tools, ["other"], "left out once exhausted");
    assert_eq!(requests[4].tools, ["other"]);
    assert_results_follow_calls(chat.messages());

    assert_eq!(
        chat.ask("And now?").await.unwrap().text().unwrap(),
        "Still down."
    );
    assert_eq!(tool.calls(), 4, "a new turn starts the count again");
    assert_eq!(model.requests()[5].tools, ["flaky", "other"]);
}

#[tokio::test]
async fn a_result_in_between_starts_the_count_again() {
    let failures_left = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let left = failures_left.clone();
    // Fails four times, succeeds once, fails twice: never five (the default) in a row.
    let tool = TestTool::new("sometimes", move |_, _| {
        let n = left.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        async move {
            if n == 4 {
                ToolOutcome::Output(ToolOutput::text("ok"))
            } else {
                ToolOutcome::Error(ToolError::recoverable("try again"))
            }
        }
    })
    .shared();
    let model = (0..7)
        .fold(ScriptedProvider::new(), |m, _| {
            m.then_call("sometimes", json!({}))
        })
        .then_text("Done.");
    let mut chat = Chat::new(model.clone());
    chat.with_tools(tool.clone()).unwrap();
    assert_eq!(chat.ask("Go").await.unwrap().text().unwrap(), "Done.");
    assert_eq!(tool.calls(), 7);
    assert!(model.requests().iter().all(|r| r.tools == ["sometimes"]));
    assert!(
        chat.messages()
            .iter()
            .all(|m| !m.text().contains("unavailable"))
    );
}

#[tokio::test]
async fn stop_turn_ends_the_turn_with_a_typed_error_and_complete_goes_on() {
    let model = ScriptedProvider::new()
        .then_call("flaky", json!({}))
        .then_call("flaky", json!({}))
        .then_text("Gave up.");
    let tool = flaky().shared();
    let mut chat = Chat::new(model.clone());
    chat.with_tools(tool.clone()).unwrap();
    chat.with_tool_options(
        ToolOptions::default()
            .with_max_retries(Some(2))
            .with_on_retries_exhausted(RetriesExhausted::StopTurn),
    )
    .unwrap();
    let err = chat.ask("Go").await.unwrap_err();
    assert!(
        matches!(&err, Error::ToolRetriesExhausted { tool, failures: 2 } if tool == "flaky"),
        "{err:?}"
    );
    assert_eq!(tool.calls(), 2);
    assert_eq!(model.request_count(), 2);
    // Nothing is lost: the second failure is in the transcript, without the "unavailable"
    // notice (the turn stopped instead).
    let last = chat.messages().last().unwrap();
    assert_eq!(last.text(), "the service is down");
    assert_results_follow_calls(chat.messages());
    assert_eq!(chat.complete().await.unwrap().text().unwrap(), "Gave up.");
}

/// Wipes a table
#[tool(needs_approval)]
async fn wipe() -> String {
    "wiped".into()
}

/// A tool whose failures used its budget up in a round that paused (another call of the
/// answer waits for approval) stops the turn once the round settles, after the approval, as
/// a turn run in steps does: `complete` does not start the count again and forget the stop.
#[tokio::test]
async fn a_stop_decided_in_a_round_that_paused_stops_the_turn_that_settles_it() {
    let model = ScriptedProvider::new()
        .then_calls([("flaky", json!({})), ("wipe", json!({}))])
        .then_text("Gave up.");
    let mut chat = Chat::new(model.clone());
    chat.with_tools(flaky().shared()).unwrap();
    chat.with_tools(Wipe).unwrap();
    chat.with_tool_options(
        ToolOptions::default()
            .with_max_retries(Some(1))
            .with_on_retries_exhausted(RetriesExhausted::StopTurn),
    )
    .unwrap();
    assert!(chat.ask("Go").await.unwrap().is_paused());
    let id = chat.pending_approvals()[0].id.clone();
    chat.approve(&id).unwrap();
    let err = chat.complete().await.unwrap_err();
    assert!(
        matches!(&err, Error::ToolRetriesExhausted { tool, failures: 1 } if tool == "flaky"),
        "{err:?}"
    );
    assert_eq!(
        model.request_count(),
        1,
        "the turn stopped before asking again"
    );
    assert_eq!(chat.messages().last().unwrap().text(), "wiped");
    assert_results_follow_calls(chat.messages());
    assert_eq!(chat.complete().await.unwrap().text().unwrap(), "Gave up.");
}

/// A stop whose round was closed another way (the paused turn cancelled) goes with it: a
/// later turn whose round settles does not stop for a tool that never ran in it.
#[tokio::test]
async fn a_stop_of_a_round_closed_by_a_cancel_does_not_stop_a_later_turn() {
    let model = ScriptedProvider::new()
        .then_calls([("flaky", json!({})), ("wipe", json!({}))])
        .then_call("other", json!({}))
        .then_text("Fine.");
    let mut chat = Chat::new(model);
    chat.with_tools(flaky().shared()).unwrap();
    chat.with_tools(Wipe).unwrap();
    chat.with_tools(TestTool::new("other", |_, _| async {
        ToolOutcome::Output(ToolOutput::text("ok"))
    }))
    .unwrap();
    chat.with_tool_options(
        ToolOptions::default()
            .with_max_retries(Some(1))
            .with_on_retries_exhausted(RetriesExhausted::StopTurn),
    )
    .unwrap();
    assert!(chat.ask("Go").await.unwrap().is_paused());
    chat.cancel().await.unwrap();
    let outcome = chat.ask("Something else").await.unwrap();
    assert_eq!(outcome.text().as_deref(), Some("Fine."));
}

/// Looks an order up
#[tool(max_retries = 1)]
async fn find_order(id: u64) -> Result<String, ToolError> {
    Err(ToolError::recoverable(format!("no order {id}")))
}

#[tokio::test]
async fn a_tools_own_max_retries_wins_and_undecodable_arguments_count() {
    assert_eq!(FindOrder::tool_spec().max_retries(), Some(1));
    let model = ScriptedProvider::new()
        // Arguments that do not decode as the parameters: a failed call.
        .then_call("find_order", json!({"id": "seven"}))
        .then_call("find_order", json!({"id": 7}))
        .then_text("No luck.");
    let mut chat = Chat::new(model.clone());
    chat.with_tools(FindOrder).unwrap();
    assert_eq!(
        chat.ask("Find 7").await.unwrap().text().unwrap(),
        "No luck."
    );
    let first = chat.messages()[2].text();
    assert!(
        first.contains("unavailable for the rest of this turn"),
        "{first}"
    );
    assert!(chat.messages()[4].text().contains("did not run"));
    assert_eq!(model.requests()[1].tools, Vec::<String>::new());
}

#[tokio::test]
async fn arguments_that_are_not_json_count_and_no_limit_means_none() {
    let model = ScriptedProvider::new()
        .then_tool_calls(vec![llm_tools_core::ToolCall::new("c1", "flaky", "{oops")])
        .then_call("flaky", json!({}))
        .then_text("Done.");
    let tool = flaky().shared();
    let mut chat = Chat::new(model.clone());
    chat.with_tools(tool.clone()).unwrap();
    chat.with_tool_options(ToolOptions::default().with_max_retries(Some(2)))
        .unwrap();
    assert_eq!(chat.ask("Go").await.unwrap().text().unwrap(), "Done.");
    assert_eq!(tool.calls(), 1);
    assert!(
        chat.messages()[4]
            .text()
            .contains("failed 2 time(s) in a row")
    );

    let model = ScriptedProvider::new()
        .then_call("flaky", json!({}))
        .then_call("flaky", json!({}))
        .then_call("flaky", json!({}))
        .then_call("flaky", json!({}))
        .then_text("Done.");
    let tool = flaky().shared();
    let mut chat = Chat::new(model);
    chat.with_tools(tool.clone()).unwrap();
    chat.with_tool_options(ToolOptions::default().with_max_retries(None))
        .unwrap();
    assert_eq!(chat.ask("Go").await.unwrap().text().unwrap(), "Done.");
    assert_eq!(tool.calls(), 4);
}

#[test]
fn the_retry_settings_are_kept_in_the_saved_state() {
    let mut chat = Chat::new(ScriptedProvider::new());
    chat.with_tool_options(
        ToolOptions::default()
            .with_max_retries(Some(5))
            .with_on_retries_exhausted(RetriesExhausted::StopTurn),
    )
    .unwrap();
    let json = serde_json::to_string(chat.state()).unwrap();
    let chat = Chat::from_state(
        ScriptedProvider::new(),
        serde_json::from_str(&json).unwrap(),
    )
    .unwrap();
    assert_eq!(chat.tool_options().max_retries(), Some(5));
    assert_eq!(
        chat.tool_options().on_retries_exhausted(),
        RetriesExhausted::StopTurn
    );
    // A state saved before the setting existed gets the defaults.
    let options: ToolOptions = serde_json::from_str("{}").unwrap();
    assert_eq!(
        options.max_retries(),
        Some(llm_tools_core::chat::DEFAULT_MAX_RETRIES)
    );
}

// ----- stop conditions -----

use futures::StreamExt as _;
use llm_tools_core::chat::{ChatEvent, Outcome, Prices, StopReason, StopWhen};
use llm_tools_core::{Message, Response, Usage};

fn answer_with_usage(message: Message, input: u64, output: u64) -> Response {
    let mut message = message;
    message.usage = Some(Usage::new(input, output));
    Response::new(message)
}

/// An answer asking for `echo` (call `id`) that used `input` and `output` tokens.
fn echo_call_with_usage(id: &str, input: u64, output: u64) -> Response {
    let call = llm_tools_core::ToolCall::new(id, "echo", "{}");
    answer_with_usage(Message::assistant_with_calls("", vec![call]), input, output)
}

/// Asserts that `step` stopped the turn for `expected`.
fn assert_step_stopped(step: &llm_tools_core::chat::Step, expected: &StopReason) {
    assert!(
        matches!(step, llm_tools_core::chat::Step::Stopped(reason) if reason == expected),
        "{step:?}"
    );
}

/// A call of the named tool that never ran (its arguments not an object, or vetoed by a
/// hook) does not stop the turn; a call that ran, even with an error of its own, does.
#[tokio::test]
async fn a_named_tool_that_did_not_run_does_not_stop_the_turn() {
    use llm_tools_core::ToolCall;
    use llm_tools_core::chat::ToolCallAction;
    let model = ScriptedProvider::new()
        .then_tool_calls(vec![ToolCall::new("c1", "submit", "[1]")])
        .then_call("submit", json!({"veto": true}))
        .then_text("Not submitted.")
        .then_call("submit", json!({}))
        .then_text("Submitted.");
    let submit = TestTool::new("submit", |_, _| async {
        ToolOutcome::Error(ToolError::recoverable("the queue is full"))
    })
    .shared();
    let mut chat = Chat::new(model);
    chat.with_tools(submit.clone())
        .unwrap()
        .stop_when(StopWhen::tool_ran("submit"));
    chat.on_tool_call(|call| {
        if call.arguments.contains("veto") {
            ToolCallAction::Veto("not this one".into())
        } else {
            ToolCallAction::Run
        }
    });
    let outcome = chat.ask("Submit it").await.unwrap();
    assert_eq!(
        outcome.text().as_deref(),
        Some("Not submitted."),
        "{outcome:?}"
    );
    assert_eq!(submit.calls(), 0);
    let outcome = chat.ask("Again").await.unwrap();
    assert_eq!(
        outcome.stopped(),
        Some(&StopReason::ToolRan {
            tool: "submit".into()
        })
    );
    assert_eq!(submit.calls(), 1);
}

#[tokio::test]
async fn a_named_tool_that_ran_stops_the_turn_after_its_round_and_complete_goes_on() {
    let model = ScriptedProvider::new()
        .then_calls([("lookup", json!({})), ("submit", json!({}))])
        .then_text("Submitted.");
    let mut chat = Chat::new(model.clone());
    chat.with_tools((
        TestTool::text("lookup", "found"),
        TestTool::text("submit", "ok"),
    ))
    .unwrap()
    .stop_when(StopWhen::tool_ran("submit"));
    let outcome = chat.ask("Submit it").await.unwrap();
    assert_eq!(
        outcome.stopped(),
        Some(&StopReason::ToolRan {
            tool: "submit".into()
        })
    );
    assert!(outcome.text().is_none());
    assert_eq!(model.request_count(), 1, "no request after the stop");
    assert_eq!(chat.stopped(), outcome.stopped());
    assert_results_follow_calls(chat.messages());
    // Saved, the reason goes with the state until the next turn.
    let json = serde_json::to_string(chat.state()).unwrap();
    assert!(json.contains("tool_ran"), "{json}");
    assert_eq!(chat.complete().await.unwrap().text().unwrap(), "Submitted.");
    assert_eq!(chat.stopped(), None);
}

#[tokio::test]
async fn a_round_condition_sees_the_round_and_says_why() {
    let model = ScriptedProvider::new()
        .then_call("search", json!({"q": "a"}))
        .then_call("search", json!({"q": "b"}))
        .then_text("unreached");
    let mut chat = Chat::new(model.clone());
    chat.with_tools(TestTool::echo("search")).unwrap();
    chat.stop_when(StopWhen::round("two searches are enough", |round| {
        round.round >= 2 && round.results.iter().all(|r| !r.is_error)
    }));
    let outcome = chat.ask("Search").await.unwrap();
    assert_eq!(
        outcome.stopped(),
        Some(&StopReason::Condition {
            reason: "two searches are enough".into()
        })
    );
    assert_eq!(model.request_count(), 2);
}

#[tokio::test]
async fn budgets_of_tokens_requests_and_cost_stop_before_the_next_request() {
    let script = || {
        ScriptedProvider::new()
            .then_response(echo_call_with_usage("c1", 600, 100))
            .then_response(echo_call_with_usage("c2", 800, 100))
            .then_text("Done.")
    };
    for (condition, expected) in [
        (
            StopWhen::tokens(1_000),
            StopReason::Tokens {
                limit: 1_000,
                used: 1_600,
            },
        ),
        (
            StopWhen::requests(2),
            StopReason::Requests { limit: 2, used: 2 },
        ),
    ] {
        let model = script();
        let mut chat = Chat::new(model.clone());
        chat.with_tools(TestTool::echo("echo"))
            .unwrap()
            .stop_when(condition);
        let outcome = chat.ask("Go").await.unwrap();
        assert_eq!(outcome.stopped(), Some(&expected));
        assert_eq!(model.request_count(), 2);
    }
    // $2 / $10 per million: the first request costs 0.0022, both 0.0048.
    let model = script();
    let mut chat = Chat::new(model.clone());
    chat.with_tools(TestTool::echo("echo"))
        .unwrap()
        .stop_when(StopWhen::cost(0.004, Prices::per_million(2.0, 10.0)));
    let outcome = chat.ask("Go").await.unwrap();
    let Some(StopReason::Cost { limit, used }) = outcome.stopped() else {
        panic!("{outcome:?}")
    };
    assert!((*limit - 0.004).abs() < 1e-12 && (*used - 0.0048).abs() < 1e-9);
    assert_eq!(model.request_count(), 2);

    // A budget counts from the start of each turn.
    let model = ScriptedProvider::new().then_text("One.").then_text("Two.");
    let mut chat = Chat::new(model);
    chat.stop_when(StopWhen::requests(1));
    assert_eq!(chat.ask("a").await.unwrap().text().unwrap(), "One.");
    assert_eq!(chat.ask("b").await.unwrap().text().unwrap(), "Two.");
}

/// A model that keeps asking for more spends the chat's budget, not a turn's: each `ask` (or
/// a worker's `complete`) starts a turn's budgets again, the chat's go on counting.
#[tokio::test]
async fn a_chat_budget_holds_across_turns_where_a_turns_starts_again() {
    let turns = || {
        ScriptedProvider::new()
            .then_response(answer_with_usage(Message::assistant("One."), 600, 100))
            .then_response(answer_with_usage(Message::assistant("Two."), 600, 100))
            .then_response(answer_with_usage(Message::assistant("Three."), 600, 100))
    };
    // A turn's budget alone lets every turn through: each uses 700 tokens.
    let model = turns();
    let mut chat = Chat::new(model.clone());
    chat.stop_when(StopWhen::tokens(1_000));
    for ask in ["a", "b", "c"] {
        assert!(chat.ask(ask).await.unwrap().text().is_some());
    }
    assert_eq!(model.request_count(), 3);

    let model = turns();
    let mut chat = Chat::new(model.clone());
    chat.stop_when(StopWhen::tokens(1_000))
        .stop_when(StopWhen::chat_tokens(1_000));
    assert_eq!(chat.ask("a").await.unwrap().text().unwrap(), "One.");
    assert_eq!(chat.ask("b").await.unwrap().text().unwrap(), "Two.");
    let expected = StopReason::ChatTokens {
        limit: 1_000,
        used: 1_400,
    };
    let outcome = chat.ask("c").await.unwrap();
    assert_eq!(outcome.stopped(), Some(&expected));
    assert_eq!(chat.stopped(), Some(&expected));
    assert_eq!(model.request_count(), 2);
    // Carrying on spends nothing more either.
    assert_eq!(chat.complete().await.unwrap().stopped(), Some(&expected));
    assert_eq!(model.request_count(), 2);

    // $2 / $10 per million: each turn costs 0.0022.
    let model = turns();
    let mut chat = Chat::new(model.clone());
    chat.stop_when(StopWhen::chat_cost(0.004, Prices::per_million(2.0, 10.0)));
    assert!(chat.ask("a").await.unwrap().text().is_some());
    assert!(chat.ask("b").await.unwrap().text().is_some());
    let outcome = chat.ask("c").await.unwrap();
    let Some(StopReason::ChatCost { limit, used }) = outcome.stopped() else {
        panic!("{outcome:?}")
    };
    assert!((*limit - 0.004).abs() < 1e-12 && (*used - 0.0044).abs() < 1e-9);
    assert_eq!(model.request_count(), 2);
}

/// `step` checks the budgets before its request, as `ask` does.
#[tokio::test]
async fn a_budget_stops_a_step_before_its_request() {
    let model = ScriptedProvider::new()
        .then_response(echo_call_with_usage("c1", 600, 500))
        .then_text("Done.");
    let mut chat = Chat::new(model.clone());
    chat.with_tools(TestTool::echo("echo"))
        .unwrap()
        .stop_when(StopWhen::chat_tokens(1_000));
    chat.add_message(Message::user("Go")).unwrap();
    let first = chat.step().await.unwrap();
    assert!(
        matches!(first, llm_tools_core::chat::Step::Continue),
        "{first:?}"
    );
    let expected = StopReason::ChatTokens {
        limit: 1_000,
        used: 1_100,
    };
    let second = chat.step().await.unwrap();
    assert_step_stopped(&second, &expected);
    assert_eq!(chat.stopped(), Some(&expected));
    assert_eq!(model.request_count(), 1);
}

/// A turn driven by `step` starts at its first step: its budget counts neither the `ask`
/// before it nor what the chat used before, and a stop ends it, so the next step starts anew.
#[tokio::test]
async fn a_steps_turn_budget_counts_from_its_first_step() {
    let model = ScriptedProvider::new()
        .then_response(answer_with_usage(Message::assistant("Asked."), 600, 300))
        .then_response(echo_call_with_usage("c1", 600, 500))
        .then_text("Stepped.");
    let mut chat = Chat::new(model.clone());
    chat.with_tools(TestTool::echo("echo"))
        .unwrap()
        .stop_when(StopWhen::tokens(1_000));
    assert_eq!(chat.ask("a").await.unwrap().text().unwrap(), "Asked.");
    chat.add_message(Message::user("b")).unwrap();
    let first = chat.step().await.unwrap();
    assert!(
        matches!(first, llm_tools_core::chat::Step::Continue),
        "{first:?}"
    );
    let expected = StopReason::Tokens {
        limit: 1_000,
        used: 1_100,
    };
    let second = chat.step().await.unwrap();
    assert_step_stopped(&second, &expected);
    assert_eq!(model.request_count(), 2);
    // The stop ended the turn: the next step starts one, with its budget whole.
    let third = chat.step().await.unwrap();
    assert!(
        matches!(&third, llm_tools_core::chat::Step::Done(answer) if answer.text() == "Stepped."),
        "{third:?}"
    );
    assert_eq!(chat.stopped(), None);
}

/// A round condition ends a step-driven turn once its round settled, as it ends `ask`'s.
#[tokio::test]
async fn a_round_condition_stops_a_step_once_its_round_settled() {
    let model = ScriptedProvider::new()
        .then_call("submit", json!({}))
        .then_text("Submitted.");
    let mut chat = Chat::new(model.clone());
    chat.with_tools(TestTool::text("submit", "ok"))
        .unwrap()
        .stop_when(StopWhen::tool_ran("submit"));
    chat.add_message(Message::user("Submit it")).unwrap();
    let step = chat.step().await.unwrap();
    let expected = StopReason::ToolRan {
        tool: "submit".into(),
    };
    assert_step_stopped(&step, &expected);
    assert_eq!(chat.stopped(), Some(&expected));
    assert_eq!(chat.messages().last().unwrap().text(), "ok");
    // The next step starts a turn and carries on.
    let next = chat.step().await.unwrap();
    assert!(
        matches!(&next, llm_tools_core::chat::Step::Done(answer) if answer.text() == "Submitted."),
        "{next:?}"
    );
    assert_eq!(model.request_count(), 2);
}

#[tokio::test]
async fn a_streamed_turn_ends_with_a_stopped_event() {
    let model = ScriptedProvider::new().then_call("submit", json!({}));
    let mut chat = Chat::new(model);
    chat.with_tools(TestTool::text("submit", "ok"))
        .unwrap()
        .stop_when(StopWhen::tool_ran("submit"));
    let mut events = chat.ask_stream("Go");
    let mut last = None;
    while let Some(event) = events.next().await {
        last = Some(event.unwrap());
    }
    assert!(matches!(
        last,
        Some(ChatEvent::Stopped(StopReason::ToolRan { .. }))
    ));
}

#[tokio::test]
async fn an_answer_without_calls_is_never_stopped() {
    let mut chat = Chat::new(ScriptedProvider::new().then_text("Hi."));
    chat.stop_when(StopWhen::tool_ran("submit"));
    assert!(matches!(chat.ask("Hi").await.unwrap(), Outcome::Done(_)));
}

// ----- preparing each request -----

use llm_tools_core::ToolChoice;
use llm_tools_core::chat::RequestPlan;

#[tokio::test]
async fn a_prepare_hook_picks_tools_choice_params_and_messages_per_round() {
    let model = ScriptedProvider::new()
        .then_call("search", json!({"q": "a"}))
        .then_text("Done.");
    let mut chat = Chat::new(model.clone());
    chat.with_instructions("Be brief.")
        .with_tools((TestTool::echo("search"), TestTool::echo("send")))
        .unwrap();
    chat.with_prepare_request(|mut plan: RequestPlan| async move {
        if plan.round == 1 {
            plan.keep_tools(|name| name == "search");
            plan.choice = ToolChoice::Required;
        } else {
            plan.choice = ToolChoice::None;
            plan.set_param("temperature", json!(0));
            // A history processor: the second request sends the instructions and the last
            // two messages only.
            plan.keep_last_messages(2);
        }
        plan
    });
    assert_eq!(chat.ask("Find a").await.unwrap().text().unwrap(), "Done.");
    let sent = model.requests();
    assert_eq!(sent[0].tools, ["search"]);
    assert_eq!(sent[0].choice, ToolChoice::Required);
    assert_eq!(sent[1].tools, ["search", "send"]);
    assert_eq!(sent[1].choice, ToolChoice::None);
    assert_eq!(sent[1].params.as_ref().unwrap()["temperature"], json!(0));
    let roles: Vec<_> = sent[1].messages.iter().map(|m| m.role).collect();
    use llm_tools_core::Role;
    assert_eq!(roles, [Role::System, Role::Assistant, Role::Tool]);
    // The transcript keeps every message; the chat's own options are unchanged.
    assert_eq!(chat.messages().len(), 5);
    assert_eq!(chat.tool_options().choice(), &ToolChoice::Auto);
}

#[tokio::test]
async fn a_prepare_hook_can_send_a_request_to_another_provider() {
    let primary = ScriptedProvider::new().then_call("search", json!({}));
    let summariser = ScriptedProvider::new()
        .with_model("small")
        .then_text("Summary.");
    let mut chat = Chat::new(primary.clone());
    chat.with_tools(TestTool::echo("search")).unwrap();
    let other = summariser.clone();
    chat.with_prepare_request(move |mut plan: RequestPlan| {
        let other = other.clone();
        async move {
            if plan.round == 2 {
                plan.use_provider(other);
            }
            plan
        }
    });
    assert_eq!(chat.ask("Go").await.unwrap().text().unwrap(), "Summary.");
    assert_eq!(primary.request_count(), 1);
    assert_eq!(summariser.request_count(), 1);
}

#[tokio::test]
async fn a_prepare_hook_cannot_add_tools_or_choose_one_it_left_out() {
    let mut chat = Chat::new(ScriptedProvider::new().then_text("unreached"));
    chat.with_tools(TestTool::echo("search")).unwrap();
    chat.with_prepare_request(|mut plan: RequestPlan| async move {
        plan.tools.push("delete_everything".into());
        plan
    });
    let err = chat.ask("Go").await.unwrap_err();
    assert!(err.to_string().contains("delete_everything"), "{err}");

    let mut chat = Chat::new(ScriptedProvider::new().then_text("unreached"));
    chat.with_tools(TestTool::echo("search")).unwrap();
    chat.with_prepare_request(|mut plan: RequestPlan| async move {
        plan.tools.clear();
        plan.choice = ToolChoice::Tool("search".into());
        plan
    });
    let err = chat.ask("Go").await.unwrap_err();
    assert!(err.to_string().contains("does not offer"), "{err}");

    let mut chat = Chat::new(ScriptedProvider::new().then_text("unreached"));
    chat.with_prepare_request(|_: RequestPlan| async move { panic!("a bug in the hook") });
    let err = chat.ask("Go").await.unwrap_err();
    assert!(err.to_string().contains("panicked"), "{err}");
    // Nothing was sent, nothing lost: the question is in the transcript.
    assert_eq!(chat.messages().len(), 1);

    // A hook that panics before it returns its future is the same error.
    let mut chat = Chat::new(ScriptedProvider::new().then_text("unreached"));
    chat.with_prepare_request(|_: RequestPlan| -> std::future::Ready<RequestPlan> {
        panic!("a bug before the future")
    });
    let err = chat.ask("Go").await.unwrap_err();
    assert!(err.to_string().contains("panicked"), "{err}");
    assert_eq!(chat.messages().len(), 1);

    // A hook that never finishes ends at the hook timeout, nothing sent.
    let model = ScriptedProvider::new().then_text("unreached");
    let mut chat = Chat::new(model.clone());
    chat.with_hook_timeout(std::time::Duration::from_millis(50));
    chat.with_prepare_request(|plan: RequestPlan| async move {
        std::future::pending::<()>().await;
        plan
    });
    let err = chat.ask("Go").await.unwrap_err();
    assert!(err.to_string().contains("did not prepare"), "{err}");
    assert_eq!(model.request_count(), 0);
}

#[tokio::test]
async fn an_observer_that_panics_is_logged_and_the_transcript_stays_whole() {
    let model = ScriptedProvider::new()
        .then_call("search", json!({"query": "q"}))
        .then_text("Found.");
    let mut chat = Chat::new(model);
    chat.with_tools(TestTool::new("search", |_, _| async {
        ToolOutcome::Output(ToolOutput::text("hits"))
    }))
    .unwrap();
    chat.after_message(|m| {
        assert!(
            m.role != llm_tools_core::Role::Tool,
            "an observer's bug on a tool result"
        );
    });
    chat.on_tool_result(|_, _| panic!("another observer's bug"));
    chat.before_request(|_| panic!("and another"));
    let outcome = chat.ask("Go").await.unwrap();
    assert_eq!(outcome.text().as_deref(), Some("Found."));
    // user, the call, its result, the answer: every call has its result.
    assert_eq!(chat.messages().len(), 4);
    assert_eq!(chat.messages()[2].role, llm_tools_core::Role::Tool);
    assert_eq!(chat.messages()[2].text(), "hits");
}

// ----- compaction -----

use llm_tools_core::chat::{Compaction, SUMMARY_PREFIX};
use llm_tools_core::files::{FileStore, MemoryFileStore};

/// A long result: 5,000 characters.
fn report() -> TestTool {
    TestTool::new("report", |_, _| async {
        ToolOutcome::Output(ToolOutput::text("x".repeat(5_000)))
    })
}

/// A chat on `model` with `report`, compacting past 100 characters through `summariser`,
/// after a first turn that `model` answers with "Hello.".
async fn small_compacting_chat(model: &ScriptedProvider, summariser: &ScriptedProvider) -> Chat {
    let mut chat = Chat::new(model.clone());
    chat.with_tools(report()).unwrap().with_compaction(
        Compaction::at_characters(100)
            .keep_recent_messages(1)
            .with_summariser(summariser.clone()),
    );
    assert_eq!(chat.ask("Hi").await.unwrap().text().unwrap(), "Hello.");
    chat
}

/// A chat without instructions has its summary first once compacted: instructions given
/// afterwards (a handoff's, a worker's setup) go before it instead of over it.
#[tokio::test]
async fn instructions_given_after_compaction_keep_the_summary() {
    let model = ScriptedProvider::new().then_text("One.").then_text("Two.");
    let mut chat = Chat::new(model);
    let _ = chat.ask("First").await.unwrap();
    let _ = chat.ask("Second").await.unwrap();
    let compaction = Compaction::at_characters(0)
        .keep_recent_messages(1)
        .with_summariser(ScriptedProvider::new().then_text("Two questions."));
    assert!(chat.compact(Some(&compaction)).await.unwrap());
    assert!(chat.messages()[0].text().starts_with(SUMMARY_PREFIX));
    chat.with_instructions("Be brief.");
    assert_eq!(chat.messages()[0].text(), "Be brief.");
    assert_eq!(
        chat.messages()[1].text(),
        format!("{SUMMARY_PREFIX}Two questions.")
    );
    chat.with_instructions("Be kind.");
    assert_eq!(chat.messages()[0].text(), "Be kind.");
    assert!(chat.messages()[1].text().starts_with(SUMMARY_PREFIX));
}

/// A chat compacted again summarises its earlier summary with the turns after it: it keeps
/// one summary, however often it is compacted (summaries piling up would pass any budget in
/// the end, each compaction asking for another).
#[tokio::test]
async fn a_chat_compacted_again_keeps_one_summary() {
    let model = ScriptedProvider::new()
        .then_text("Hello.")
        .then_text("a".repeat(200))
        .then_text("b".repeat(200))
        .then_text("c".repeat(200));
    let summariser = ScriptedProvider::new()
        .then_text("S1")
        .then_text("S2")
        .then_text("S3");
    let mut chat = small_compacting_chat(&model, &summariser).await;
    for ask in ["Two", "Three", "Four"] {
        let _ = chat.ask(ask).await.unwrap();
    }
    let summaries: Vec<String> = chat
        .messages()
        .iter()
        .map(|m| m.text())
        .filter(|t| t.starts_with(SUMMARY_PREFIX))
        .collect();
    assert_eq!(summaries.len(), 1, "{summaries:?}");
    assert!(summariser.request_count() >= 2);
    let last = summariser.requests().last().unwrap().messages[1].text();
    assert!(
        last.contains(&format!("{SUMMARY_PREFIX}S")),
        "the earlier summary is summarised again: {last}"
    );
}

/// A summary longer than the cap is cut, and says so.
#[tokio::test]
async fn a_summary_past_its_cap_is_cut_and_says_so() {
    let model = ScriptedProvider::new()
        .then_text("One.")
        .then_text("Two.")
        .then_text("Three.");
    let mut chat = Chat::new(model);
    let _ = chat.ask("First").await.unwrap();
    let _ = chat.ask("Second").await.unwrap();
    let compaction = Compaction::at_characters(0)
        .keep_recent_messages(1)
        .with_summariser(ScriptedProvider::new().then_text("x".repeat(1_000_000)));
    assert!(chat.compact(Some(&compaction)).await.unwrap());
    let summary = chat.messages()[0].text();
    assert!(summary.starts_with(SUMMARY_PREFIX));
    assert!(
        summary.ends_with("… [the summary was cut at 16000 characters]"),
        "{}",
        &summary[summary.len() - 60..]
    );
    assert!(summary.len() < 16_200, "{}", summary.len());
    let short = Compaction::at_characters(0)
        .keep_recent_messages(1)
        .with_max_summary_chars(10)
        .with_summariser(ScriptedProvider::new().then_text("y".repeat(100)));
    assert_eq!(chat.ask("Third").await.unwrap().text().unwrap(), "Three.");
    assert!(chat.compact(Some(&short)).await.unwrap());
    assert_eq!(
        chat.messages()[0].text(),
        format!("{SUMMARY_PREFIX}yyyyyyyyyy… [the summary was cut at 10 characters]")
    );
}

#[tokio::test]
async fn a_summariser_that_answers_nothing_is_asked_once_a_turn_and_counts_as_a_request() {
    // Each request of the turn goes over the budget: a summariser answering nothing would be
    // asked before every one of them.
    let model = ScriptedProvider::new()
        .then_text("Hello.")
        .then_call("report", json!({"n": 1}))
        .then_call("report", json!({"n": 2}))
        .then_call("report", json!({"n": 3}))
        .then_text("Read.");
    let summariser = ScriptedProvider::new()
        .then_text("")
        .then_text("")
        .then_text("")
        .then_text("");
    let mut chat = small_compacting_chat(&model, &summariser).await;
    assert_eq!(
        chat.ask("Read three reports")
            .await
            .unwrap()
            .text()
            .unwrap(),
        "Read."
    );
    assert_eq!(summariser.request_count(), 1, "asked once in the turn");
    // The summary request counts against the turn's request budget: the turn's first
    // request, then a summary and the request it made room for, and the budget of three is
    // spent.
    let model = ScriptedProvider::new()
        .then_text("Hello.")
        .then_call("report", json!({"n": 1}))
        .then_call("report", json!({"n": 2}))
        .then_text("Read.");
    let summariser = ScriptedProvider::new().then_text("A summary.");
    let mut chat = small_compacting_chat(&model, &summariser).await;
    chat.stop_when(StopWhen::requests(3));
    let outcome = chat.ask("Read two reports").await.unwrap();
    assert!(
        matches!(outcome, Outcome::Stopped(StopReason::Requests { .. })),
        "{outcome:?}"
    );
    assert_eq!((model.request_count(), summariser.request_count()), (3, 1));
}

#[tokio::test]
async fn over_budget_older_results_are_kept_as_files_then_older_turns_summarised() {
    let model = ScriptedProvider::new()
        .then_call("report", json!({"n": 1}))
        .then_text("First report read.")
        .then_call("report", json!({"n": 2}))
        .then_text("Second report read.")
        .then_text("Final answer.");
    let summariser =
        ScriptedProvider::new().then_text("The user asked for two reports; both were read.");
    let store = MemoryFileStore::new();
    let mut chat = Chat::new(model.clone());
    chat.with_instructions("Be brief.")
        .with_tools(report())
        .unwrap()
        .with_file_store(store.clone())
        .with_compaction(
            Compaction::at_characters(4_000)
                .keep_recent_messages(1)
                .with_summariser(summariser.clone()),
        );
    // (The results stay under the spill limit, 10,000 characters by default.)
    assert_eq!(
        chat.ask("Read report 1").await.unwrap().text().unwrap(),
        "First report read."
    );
    assert_eq!(
        chat.ask("Read report 2").await.unwrap().text().unwrap(),
        "Second report read."
    );
    assert_eq!(
        chat.ask("Sum up").await.unwrap().text().unwrap(),
        "Final answer."
    );

    // The request that went out was under budget, and valid.
    let sent = model.requests().last().unwrap().messages.clone();
    let size: usize = sent.iter().map(|m| m.text().len()).sum();
    assert!(size < 4_000, "{size}");
    assert_results_follow_calls(&sent);
    // The older turns became one summary after the instructions.
    assert_eq!(sent[0].text(), "Be brief.");
    assert!(
        sent[1].text().starts_with(SUMMARY_PREFIX),
        "{}",
        sent[1].text()
    );
    assert!(sent[1].text().contains("two reports"));
    assert_eq!(summariser.request_count(), 1);
    // The transcript is the compacted one from now on, and the whole results are files.
    assert!(chat.messages()[1].text().starts_with(SUMMARY_PREFIX));
    let files = store.list().await.unwrap();
    assert_eq!(files.len(), 2, "{files:?}");
    assert!(files.iter().all(|f| f.starts_with("compacted/")));
    assert_eq!(store.load(&files[0]).await.unwrap().len(), 5_000);
    // The summariser saw the older turns as text.
    let asked = &summariser.requests()[0].messages;
    assert!(asked[1].text().contains("Read report 1"));
}

#[tokio::test]
async fn under_budget_nothing_changes_and_compact_can_be_asked_for() {
    let model = ScriptedProvider::new()
        .then_call("report", json!({}))
        .then_text("Read.")
        .then_text("Again.");
    let summariser = ScriptedProvider::new().then_text("A report was read.");
    let mut chat = Chat::new(model.clone());
    chat.with_tools(report())
        .unwrap()
        .with_compaction(Compaction::at_characters(1_000_000).with_summariser(summariser.clone()));
    assert_eq!(chat.ask("Read it").await.unwrap().text().unwrap(), "Read.");
    assert_eq!(chat.ask("Again").await.unwrap().text().unwrap(), "Again.");
    assert_eq!(summariser.request_count(), 0);
    assert_eq!(chat.messages().len(), 6);
    // With the chat's settings nothing can go: the twelve recent messages are the whole chat.
    assert!(!chat.compact(None).await.unwrap());
    // Compacting on demand, keeping less: the older turn goes.
    let now = Compaction::at_characters(0)
        .keep_recent_messages(2)
        .with_summariser(summariser.clone());
    assert!(chat.compact(Some(&now)).await.unwrap());
    assert_eq!(chat.messages().len(), 3);
    assert!(chat.messages()[0].text().starts_with(SUMMARY_PREFIX));
    assert_results_follow_calls(chat.messages());
}

static SENT_EMAILS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Sends an email
#[tool]
async fn send_email(to: String) -> String {
    SENT_EMAILS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    format!("sent to {to}")
}

/// Finds a customer's address, when searched for
#[tool(defer)]
async fn find_address(name: String) -> String {
    format!("{name} lives at 1 Main St")
}

/// A call of a tool the request did not offer does not run, whatever left it out: the
/// preparation hook, a `None` choice, or a deferred tool the chat's search has not found. The
/// model reads why.
#[tokio::test]
async fn a_call_of_a_tool_the_request_did_not_offer_is_refused() {
    use llm_tools_core::Role;
    use std::sync::atomic::Ordering;

    // The preparation hook offers only `search` in the first round.
    let model = ScriptedProvider::new()
        .then_call("send_email", json!({"to": "all@example.com"}))
        .then_text("Done.");
    let mut chat = Chat::new(model.clone());
    chat.with_tools((TestTool::echo("search"), SendEmail))
        .unwrap();
    chat.with_prepare_request(|mut plan: RequestPlan| async move {
        if plan.round == 1 {
            plan.keep_tools(|name| name == "search");
        }
        plan
    });
    let before = SENT_EMAILS.load(Ordering::SeqCst);
    assert_eq!(chat.ask("Go").await.unwrap().text().unwrap(), "Done.");
    assert_eq!(
        SENT_EMAILS.load(Ordering::SeqCst),
        before,
        "send_email did not run"
    );
    let refused = &chat.messages()[2];
    assert_eq!(refused.role, Role::Tool);
    assert!(refused.is_error);
    assert!(
        refused.text().contains("`send_email` is not available"),
        "{}",
        refused.text()
    );

    // A `None` choice offers no tool.
    let model = ScriptedProvider::new()
        .then_call("send_email", json!({"to": "all@example.com"}))
        .then_text("Done.");
    let mut chat = Chat::new(model);
    chat.with_tools(SendEmail).unwrap();
    chat.with_tool_options(ToolOptions::default().with_choice(ToolChoice::None))
        .unwrap();
    assert_eq!(chat.ask("Go").await.unwrap().text().unwrap(), "Done.");
    assert_eq!(
        SENT_EMAILS.load(Ordering::SeqCst),
        before,
        "send_email did not run"
    );
    assert!(chat.messages()[2].is_error);

    // A deferred tool is offered once the chat's search found it.
    let model = ScriptedProvider::new()
        .then_call("find_address", json!({"name": "Ada"}))
        .then_call("tool_search", json!({"query": "customer address"}))
        .then_call("find_address", json!({"name": "Ada"}))
        .then_text("Found.");
    let mut chat = Chat::new(model);
    chat.with_tools(FindAddress).unwrap();
    assert_eq!(
        chat.ask("Where is Ada?").await.unwrap().text().unwrap(),
        "Found."
    );
    let results = common::tool_result_texts(chat.messages());
    assert!(
        results[0].contains("Find it with the tool search first"),
        "{}",
        results[0]
    );
    assert_eq!(results[2], "Ada lives at 1 Main St");
}

/// A server that gives a call the same id in a later round: the later call gets an id of its
/// own, and compaction keeps each long result under a name of its own, not one over the other.
#[tokio::test]
async fn compacted_results_of_a_call_id_given_again_are_kept_apart() {
    use llm_tools_core::ToolCall;
    let again = || vec![ToolCall::new("call_1", "report", r#"{"n":1}"#)];
    let model = ScriptedProvider::new()
        .then_tool_calls(again())
        .then_text("First report read.")
        .then_tool_calls(again())
        .then_text("Second report read.")
        .then_text("Final answer.");
    let summariser = ScriptedProvider::new().then_text("Two reports were read.");
    let store = MemoryFileStore::new();
    let mut chat = Chat::new(model);
    chat.with_tools(report())
        .unwrap()
        .with_file_store(store.clone())
        .with_compaction(
            Compaction::at_characters(4_000)
                .keep_recent_messages(1)
                .with_summariser(summariser),
        );
    for ask in ["Read report 1", "Read report 1 again", "Sum up"] {
        assert!(chat.ask(ask).await.unwrap().text().is_some());
    }
    let files = store.list().await.unwrap();
    assert_eq!(
        files,
        // The second call has an id of its own (its answer's place, 5).
        [
            "compacted/report-call_1.txt",
            "compacted/report-call_5_0.txt"
        ]
    );
    for file in &files {
        assert_eq!(store.load(file).await.unwrap().len(), 5_000);
    }
}

/// Compacting the same history again leaves the results it shortened as they are: a note is
/// never kept as a file of its own, however long the name of the file it names (a long call
/// id with capitals gets a long name with a digest, and a note longer than what is shortened),
/// and a second pass changes nothing.
#[tokio::test]
async fn compacting_again_keeps_no_copy_of_a_shortened_result() {
    use llm_tools_core::ToolCall;
    let model = ScriptedProvider::new()
        .then_tool_calls(vec![ToolCall::new(
            "toolu_01A09q90qw90lq917835lq9Bx7Kp2Qm9Vt4Rw8Zc3Nd6Hf1Jg5Ls0Ye",
            "search_orders",
            "{}",
        )])
        .then_text("Read.")
        .then_text("Hello.");
    let store = MemoryFileStore::new();
    let mut chat = Chat::new(model);
    let search_orders = TestTool::new("search_orders", |_, _| async {
        ToolOutcome::Output(ToolOutput::text("x".repeat(5_000)))
    });
    chat.with_tools(search_orders)
        .unwrap()
        .with_file_store(store.clone());
    for ask in ["Read the report", "Hi"] {
        assert!(chat.ask(ask).await.unwrap().text().is_some());
    }
    // Shortening alone: the summariser gives nothing.
    let compaction = Compaction::at_characters(0)
        .keep_recent_messages(1)
        .with_summariser(ScriptedProvider::new().then_text("").cycle());
    assert!(chat.compact(Some(&compaction)).await.unwrap());
    let note = chat.messages()[2].text();
    assert!(note.contains("5000 characters in all"), "{note}");
    assert_eq!(store.list().await.unwrap().len(), 1);

    assert!(!chat.compact(Some(&compaction)).await.unwrap());
    assert_eq!(chat.messages()[2].text(), note);
    let files = store.list().await.unwrap();
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(store.load(&files[0]).await.unwrap().len(), 5_000);
}

static PAGES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Pages the team on call (only this test calls it)
#[tool]
async fn page_oncall(team: String) -> String {
    PAGES.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    format!("paged {team}")
}

/// What a request offered holds for its answer only: calls the application adds afterwards
/// run. The chat's own search, when a request does not offer it, is refused too.
#[tokio::test]
async fn what_a_request_offered_holds_for_its_answer_only() {
    use llm_tools_core::{Message, ToolCall};
    use std::sync::atomic::Ordering;

    let model = ScriptedProvider::new()
        .then_text("Nothing to do.")
        .then_text("Sent.");
    let mut chat = Chat::new(model);
    chat.with_tools((TestTool::echo("search"), PageOncall))
        .unwrap();
    chat.with_prepare_request(|mut plan: RequestPlan| async move {
        plan.keep_tools(|name| name == "search");
        plan
    });
    assert_eq!(
        chat.ask("Anything?").await.unwrap().text().unwrap(),
        "Nothing to do."
    );
    chat.add_message(Message::assistant_with_calls(
        "",
        vec![ToolCall::new("mine_1", "page_oncall", r#"{"team":"ops"}"#)],
    ))
    .unwrap();
    assert_eq!(chat.complete().await.unwrap().text().unwrap(), "Sent.");
    assert_eq!(
        PAGES.load(Ordering::SeqCst),
        1,
        "the call the application added ran"
    );

    // Under a `None` choice the chat's search is not offered either.
    let model = ScriptedProvider::new()
        .then_call("tool_search", json!({"query": "address"}))
        .then_text("Done.");
    let mut chat = Chat::new(model);
    chat.with_tools(FindAddress).unwrap();
    chat.with_tool_options(ToolOptions::default().with_choice(ToolChoice::None))
        .unwrap();
    assert_eq!(
        chat.ask("Where is Ada?").await.unwrap().text().unwrap(),
        "Done."
    );
    let result = &chat.messages()[2];
    assert!(result.is_error);
    assert!(
        result.text().contains("`tool_search` is not available"),
        "{}",
        result.text()
    );
}
