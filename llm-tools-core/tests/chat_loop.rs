//! The conversation loop with a scripted model: tools, namespaces, options, errors, callbacks,
//! streaming, cancellation and tracing.

#![allow(clippy::unwrap_used, clippy::panic)] // test helpers outside `#[test]` fns

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{TestTool, assert_results_follow_calls, result_of};
use futures::StreamExt as _;
use llm_tools_core::chat::{
    CancelHandle, Chat, ChatEvent, Concurrency, DEFAULT_ROUNDS, Outcome, Step, ToolCallAction,
    ToolOptions, ToolResultAction,
};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{
    Attachment, ConfigError, Error, Message, ProviderError, ProviderErrorKind, Role, Source,
    StreamEvent, ToolCall, ToolChoice, ToolError, ToolOutcome, ToolOutput, Usage,
};
use serde_json::json;

fn weather() -> TestTool {
    TestTool::new("weather", |args, _| async move {
        #[derive(serde::Deserialize)]
        struct Args {
            latitude: f64,
            longitude: f64,
        }
        match llm_tools_core::RawArgs::new(&args).decode::<Args>(&["latitude", "longitude"]) {
            Ok(a) => ToolOutcome::Output(ToolOutput::text(format!(
                "15°C, wind 10 km/h at {}, {}",
                a.latitude, a.longitude
            ))),
            Err(e) => ToolOutcome::Error(e),
        }
    })
}

fn done(outcome: Outcome) -> Message {
    common::answered(outcome)
}

#[tokio::test]
async fn ask_runs_the_tool_and_returns_the_final_answer() {
    let model = ScriptedProvider::new()
        .then_call("weather", json!({"latitude": 52.52, "longitude": 13.4}))
        .then_text("It is 15°C in Berlin.");
    let tool = weather().shared();
    let mut chat = Chat::new(model.clone());
    chat.with_instructions("Be brief.")
        .with_tools(tool.clone())
        .unwrap();

    let answer = done(chat.ask("Weather in Berlin?").await.unwrap());

    assert_eq!(answer.text(), "It is 15°C in Berlin.");
    assert_eq!(tool.calls(), 1);
    let roles: Vec<Role> = chat.messages().iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::System,
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant
        ]
    );
    assert_eq!(
        chat.messages()[3].text(),
        "15°C, wind 10 km/h at 52.52, 13.4"
    );
    assert!(!chat.messages()[3].is_error);

    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].tools, ["weather"]);
    assert_eq!(requests[0].messages.len(), 2);
    assert_eq!(requests[1].messages, chat.messages()[..4]);
    assert_results_follow_calls(chat.messages());
}

#[tokio::test]
async fn a_second_ask_carries_the_whole_history() {
    let model = ScriptedProvider::new()
        .then_call("weather", json!({"latitude": 1, "longitude": 2}))
        .then_text("Warm.")
        .then_text("You asked about the weather.");
    let mut chat = Chat::new(model.clone());
    chat.with_tools(weather()).unwrap();
    let _ = chat.ask("Weather?").await.unwrap();
    let answer = done(chat.ask("What did I ask?").await.unwrap());
    assert_eq!(answer.text(), "You asked about the weather.");
    assert_eq!(model.requests()[2].messages.len(), 5);
}

#[test]
fn a_duplicate_joined_name_is_an_error_naming_both_tools_and_adds_nothing() {
    let mut chat = Chat::new(ScriptedProvider::new());
    chat.with_tools(TestTool::text("crm_lookup", "a")).unwrap();

    // `lookup` in namespace `crm` has the same joined name.
    let err = chat
        .with_tools((
            TestTool::text("other", "b"),
            TestTool::text("lookup", "c").namespace("crm"),
        ))
        .unwrap_err();
    match &err {
        Error::DuplicateTool {
            name,
            existing,
            new,
        } => {
            assert_eq!(name, "crm_lookup");
            assert!(
                existing.contains("TestTool") && new.contains("TestTool"),
                "{err}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("`crm_lookup`"));
    assert_eq!(
        chat.tools().len(),
        1,
        "nothing of the failed batch is added"
    );
    // Nor is its name taken: the tool before the refused one can be added alone.
    chat.with_tools(TestTool::text("other", "b")).unwrap();

    // Twice in the same batch.
    let err = chat
        .with_tools((TestTool::text("x", "1"), TestTool::text("x", "2")))
        .unwrap_err();
    assert!(matches!(err, Error::DuplicateTool { .. }));
    chat.with_tools(TestTool::text("x", "3")).unwrap();
    assert_eq!(chat.tools().len(), 3);
}

#[test]
fn tools_can_be_replaced_cleared_and_removed() {
    let mut chat = Chat::new(ScriptedProvider::new());
    chat.with_tools((TestTool::text("a", "1"), TestTool::text("b", "2")))
        .unwrap();
    chat.replace_tools(TestTool::text("c", "3")).unwrap();
    let names: Vec<&str> = chat
        .tools()
        .iter()
        .map(|t| t.spec().joined_name())
        .collect();
    assert_eq!(names, ["c"]);
    assert!(chat.remove_tool("c").is_some());
    assert!(chat.tool("c").is_none());
    chat.with_tools(TestTool::text("d", "4")).unwrap();
    chat.clear_tools();
    assert!(chat.tools().is_empty());
    // A name no provider accepts is refused.
    assert!(matches!(
        chat.with_tools(TestTool::text("bad name", "x")),
        Err(Error::InvalidConfig(ConfigError::InvalidToolName { name })) if name == "bad name"
    ));
}

#[tokio::test]
async fn tools_added_between_turns_are_offered_from_the_next_request() {
    let model = ScriptedProvider::new()
        .then_call("weather", json!({"latitude": 1, "longitude": 2}))
        .then_text("I have no weather tool.")
        .then_call("weather", json!({"latitude": 1, "longitude": 2}))
        .then_text("Now I do.");
    let mut chat = Chat::new(model.clone());
    let _ = chat.ask("Weather?").await.unwrap();
    assert!(chat.messages()[2].is_error);
    chat.with_tools(weather()).unwrap();
    let _ = chat.ask("And now?").await.unwrap();
    assert!(!chat.messages()[6].is_error);
    let requests = model.requests();
    assert!(requests[0].tools.is_empty());
    assert_eq!(requests[2].tools, ["weather"]);
}

#[tokio::test]
async fn calls_route_by_namespace_and_name_or_by_joined_name() {
    let model = ScriptedProvider::new()
        .then_tool_calls(vec![
            ToolCall::new("c1", "lookup", "{}").with_namespace(Some("crm".into())),
            ToolCall::new("c2", "billing_lookup", "{}"),
        ])
        .then_text("ok");
    let mut chat = Chat::new(model);
    chat.with_tools((
        TestTool::text("lookup", "from crm").namespace("crm"),
        TestTool::text("lookup", "from billing").namespace("billing"),
    ))
    .unwrap();
    let _ = chat.ask("Look up").await.unwrap();
    assert_eq!(result_of(chat.messages(), "c1").text(), "from crm");
    assert_eq!(result_of(chat.messages(), "c2").text(), "from billing");
}

#[tokio::test]
async fn an_unknown_tool_gets_up_to_three_similar_names_and_the_loop_goes_on() {
    let model = ScriptedProvider::new()
        .then_call("wether", json!({}))
        .then_text("Sorry.");
    let mut chat = Chat::new(model);
    chat.with_tools((
        TestTool::text("weather", "x"),
        TestTool::text("weather_forecast", "x"),
        TestTool::text("whether_report", "x"),
        TestTool::text("stock_price", "x"),
        TestTool::text("translate", "x"),
    ))
    .unwrap();
    let answer = done(chat.ask("Weather?").await.unwrap());
    assert_eq!(answer.text(), "Sorry.");
    let result = &chat.messages()[2];
    assert!(result.is_error);
    let text = result.text();
    assert!(text.starts_with("There is no tool `wether`."), "{text}");
    assert!(text.contains("`weather`"), "{text}");
    assert!(
        !text.contains("translate") && !text.contains("stock_price"),
        "{text}"
    );
    assert_eq!(
        text.matches('`').count(),
        8,
        "the unknown name and three suggestions: {text}"
    );
}

/// A name of megabytes (a hostile endpoint's) is compared by its first characters and shown
/// cut: the result says what to call, in a few hundred bytes.
#[tokio::test]
async fn an_unknown_tool_name_of_megabytes_is_answered_in_a_few_hundred_bytes() {
    let name = format!("weather{}", "x".repeat(4 << 20));
    let model = ScriptedProvider::new()
        .then_call(name.as_str(), json!({}))
        .then_text("Sorry.");
    let mut chat = Chat::new(model);
    chat.with_tools((
        TestTool::text("weather", "x"),
        TestTool::text("translate", "x"),
    ))
    .unwrap();
    let _ = done(chat.ask("Weather?").await.unwrap());
    let text = chat.messages()[2].text();
    assert!(text.len() < 500, "{} bytes", text.len());
    assert!(text.starts_with("There is no tool `weatherxxx"), "{text}");
    assert!(text.contains("…`") && text.contains("`weather`"), "{text}");
}

/// A call named with megabytes whose arguments are not an object, and one past the answer's
/// cap, are answered in a few hundred bytes each: the results quote the names cut, so the
/// model's megabytes never come back with every later request.
#[tokio::test]
async fn calls_named_with_megabytes_are_answered_in_a_few_hundred_bytes() {
    let model = ScriptedProvider::new()
        .then_tool_calls(vec![
            ToolCall::new("c1", format!("weather{}", "x".repeat(4 << 20)), "[1]"),
            ToolCall::new("c2", format!("weather{}", "y".repeat(4 << 20)), "{}"),
        ])
        .then_text("Sorry.");
    let mut chat = Chat::new(model);
    chat.with_tools(weather()).unwrap();
    chat.with_tool_options(ToolOptions::default().with_calls(Some(1)))
        .unwrap();
    let _ = done(chat.ask("Weather?").await.unwrap());
    let bad = result_of(chat.messages(), "c1");
    assert!(
        bad.text().contains("were not a JSON object"),
        "{}",
        bad.text()
    );
    assert!(bad.text().len() < 1_000, "{} bytes", bad.text().len());
    let capped = result_of(chat.messages(), "c2");
    assert!(
        capped.text().contains("at most 1 tool call"),
        "{}",
        capped.text()
    );
    assert!(capped.text().len() < 1_000, "{} bytes", capped.text().len());
}

/// A tool named with megabytes that used up its retries is told of by its name's start: the
/// notice at the end of the failed call and the refusal of the next one stay small.
#[tokio::test]
async fn a_tool_named_with_megabytes_past_its_retries_is_told_of_in_a_few_hundred_bytes() {
    let name = format!("weather{}", "x".repeat(4 << 20));
    let model = ScriptedProvider::new()
        .then_tool_calls(vec![ToolCall::new("c1", name.as_str(), "[1]")])
        .then_tool_calls(vec![ToolCall::new("c2", name.as_str(), "{}")])
        .then_text("Sorry.");
    let mut chat = Chat::new(model);
    chat.with_tools(weather()).unwrap();
    chat.with_tool_options(ToolOptions::default().with_max_retries(Some(1)))
        .unwrap();
    let _ = done(chat.ask("Weather?").await.unwrap());
    let failed = result_of(chat.messages(), "c1");
    assert!(
        failed.text().contains("unavailable for the rest"),
        "{}",
        failed.text()
    );
    assert!(failed.text().len() < 1_000, "{} bytes", failed.text().len());
    let refused = result_of(chat.messages(), "c2");
    assert!(
        refused.text().contains("failed too many times"),
        "{}",
        refused.text()
    );
    assert!(
        refused.text().len() < 1_000,
        "{} bytes",
        refused.text().len()
    );
}

/// Arguments holding more values than one document may (cheap as text, some 35 times their
/// size once parsed) reach no tool, whatever it would parse them into, and leave the history.
#[tokio::test]
async fn arguments_past_the_value_limit_never_run_nor_stay() {
    let values = "0,".repeat(llm_tools_core::json_values::MAX_JSON_VALUES);
    let model = ScriptedProvider::new()
        .then_tool_calls(vec![ToolCall::new(
            "c1",
            "echo",
            format!(r#"{{"rows":[{values}0]}}"#),
        )])
        .then_text("Fewer, then.");
    let tool = TestTool::echo("echo").shared();
    let mut chat = Chat::new(model.clone());
    chat.with_tools(tool.clone()).unwrap();
    let _ = chat.ask("Go").await.unwrap();
    assert_eq!(tool.calls(), 0, "the tool never ran");
    assert_eq!(chat.messages()[1].tool_calls[0].arguments, "{}");
    let c1 = result_of(chat.messages(), "c1");
    assert!(c1.is_error);
    assert!(c1.text().contains("JSON values"), "{}", c1.text());
}

#[tokio::test]
async fn invalid_json_arguments_never_stay_in_the_history() {
    let model = ScriptedProvider::new()
        .then_tool_calls(vec![
            ToolCall::new("c1", "weather", r#"{"latitude": 52.5, "longitude""#),
            ToolCall::new("c2", "weather", r#"["not", "an", "object"]"#),
            ToolCall::new("c3", "weather", ""),
        ])
        .then_text("Let me retry.");
    let tool = weather().shared();
    let mut chat = Chat::new(model.clone());
    chat.with_tools(tool.clone()).unwrap();
    let _ = chat.ask("Weather?").await.unwrap();

    let calls = &chat.messages()[1].tool_calls;
    assert!(calls.iter().all(|c| c.arguments == "{}"), "{calls:?}");
    let c1 = result_of(chat.messages(), "c1");
    assert!(c1.is_error);
    assert!(c1.text().contains("were not valid JSON"), "{}", c1.text());
    assert!(c1.text().contains(r#"{"latitude": 52.5, "longitude""#));
    assert!(
        result_of(chat.messages(), "c2")
            .text()
            .contains("not a JSON object")
    );
    // Empty arguments mean "no arguments": the tool runs and reports what is missing.
    let c3 = result_of(chat.messages(), "c3");
    assert!(
        c3.text().contains("missing field `latitude`"),
        "{}",
        c3.text()
    );
    assert_eq!(tool.calls(), 1, "only the call with empty arguments ran");
    // What the model got back next is valid for every provider.
    assert_results_follow_calls(&model.requests()[1].messages);
}

#[tokio::test]
async fn bad_arguments_and_recoverable_errors_go_to_the_model() {
    let model = ScriptedProvider::new()
        .then_calls([
            ("weather", json!({"latitude": "north", "longitude": 1})),
            ("lookup", json!({})),
        ])
        .then_text("done");
    let mut chat = Chat::new(model);
    chat.with_tools((
        weather(),
        TestTool::new("lookup", |_, _| async {
            ToolOutcome::Error(ToolError::recoverable("Location too short"))
        }),
    ))
    .unwrap();
    let answer = done(chat.ask("go").await.unwrap());
    assert_eq!(answer.text(), "done");
    let bad = &chat.messages()[2];
    assert!(bad.is_error);
    assert!(bad.text().contains("argument `latitude`"), "{}", bad.text());
    assert!(
        bad.text()
            .contains("accepted arguments: `latitude`, `longitude`")
    );
    assert_eq!(chat.messages()[3].text(), "Location too short");
    assert!(chat.messages()[3].is_error);
}

/// Three calls, the second failing fatally, with `concurrency`: the turn stops with the error,
/// the first result is kept, the third call never runs and its result says so
/// (`third_result`), and the chat carries on without running anything twice.
async fn a_fatal_error_case(concurrency: Concurrency, third_result: &str) {
    let model = ScriptedProvider::new()
        .then_calls([
            ("first", json!({})),
            ("broken", json!({})),
            ("third", json!({})),
        ])
        .then_text("after the failure");
    let first = TestTool::text("first", "one").shared();
    let third = TestTool::text("third", "three").shared();
    let broken = TestTool::new("broken", |_, _| async {
        ToolOutcome::Error(ToolError::fatal(std::io::Error::other("database is down")))
    });
    let mut chat = Chat::new(model.clone());
    chat.with_tools((first.clone(), broken, third.clone()))
        .unwrap();
    chat.with_tool_options(ToolOptions::default().with_concurrency(concurrency))
        .unwrap();

    let err = chat.ask("go").await.unwrap_err();
    match &err {
        Error::ToolFailed {
            tool,
            call_id,
            source,
        } => {
            assert_eq!(tool, "broken");
            assert_eq!(call_id, "call_2");
            assert_eq!(source.to_string(), "database is down");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(model.request_count(), 1, "the turn stopped");
    assert!(!chat.is_paused());
    let messages = chat.messages();
    assert_results_follow_calls(messages);
    assert_eq!(messages[2].text(), "one");
    assert!(messages[3].is_error && !messages[3].text().contains("database"));
    assert!(messages[4].is_error);
    assert!(
        messages[4].text().contains(third_result),
        "{}",
        messages[4].text()
    );
    assert_eq!(third.calls(), 0, "the call after the fatal error never ran");

    // The chat carries on; nothing runs twice.
    let answer = done(chat.complete().await.unwrap());
    assert_eq!(answer.text(), "after the failure");
    assert_eq!(first.calls(), 1);
    assert_eq!(third.calls(), 0);
}

#[tokio::test]
async fn a_fatal_error_stops_the_turn_keeps_finished_results_and_closes_the_rest() {
    a_fatal_error_case(Concurrency::Sequential, "did not run").await;
}

/// Calls running side by side: the ones that finish at once are taken in one by one, in call
/// order, so a fatal error stops the calls after it before any of them runs (started but never
/// run, they are told they did not run, as in sequence).
#[tokio::test]
async fn a_fatal_error_among_parallel_calls_stops_the_ones_after_it_before_they_run() {
    a_fatal_error_case(Concurrency::default(), "did not run").await;
}

/// A call that was waiting and has finished, here with a fatal error, is taken in before a call
/// started after it runs: the error stops that call before it runs.
#[tokio::test]
async fn a_waiting_call_that_failed_stops_a_call_started_after_it() {
    let model = ScriptedProvider::new()
        .then_calls([
            ("waits", json!({})),
            ("wakes", json!({})),
            ("third", json!({})),
        ])
        .then_text("after the failure");
    let gate = Arc::new(tokio::sync::Notify::new());
    let waits = {
        let gate = Arc::clone(&gate);
        TestTool::new("waits", move |_, _| {
            let gate = Arc::clone(&gate);
            async move {
                gate.notified().await;
                ToolOutcome::Error(ToolError::fatal(std::io::Error::other("database is down")))
            }
        })
    };
    let wakes = {
        let gate = Arc::clone(&gate);
        TestTool::new("wakes", move |_, _| {
            let gate = Arc::clone(&gate);
            async move {
                gate.notify_one();
                ToolOutcome::Output(ToolOutput::text("woke it"))
            }
        })
    };
    let third = TestTool::text("third", "three").shared();
    let mut chat = Chat::new(model.clone());
    chat.with_tools((waits, wakes, third.clone())).unwrap();
    chat.with_tool_options(
        ToolOptions::default().with_concurrency(Concurrency::Parallel { workers: 2 }),
    )
    .unwrap();

    let err = chat.ask("go").await.unwrap_err();
    assert!(
        matches!(&err, Error::ToolFailed { tool, .. } if tool == "waits"),
        "{err:?}"
    );
    assert_results_follow_calls(chat.messages());
    assert_eq!(
        third.calls(),
        0,
        "the call started after the failed one never ran"
    );
}

#[tokio::test]
async fn a_panic_in_a_tool_is_caught_and_treated_as_fatal() {
    let model = ScriptedProvider::new()
        .then_calls([("ok", json!({})), ("boom", json!({}))])
        .then_text("recovered");
    let mut chat = Chat::new(model);
    chat.with_tools((
        TestTool::text("ok", "fine"),
        TestTool::new("boom", |_, _| async { panic!("index out of bounds") }),
    ))
    .unwrap();
    let err = chat.ask("go").await.unwrap_err();
    let Error::ToolFailed { tool, source, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(tool, "boom");
    assert!(
        source.to_string().contains("index out of bounds"),
        "{source}"
    );
    assert_eq!(chat.messages()[2].text(), "fine");
    assert_results_follow_calls(chat.messages());
    assert!(chat.complete().await.is_ok());
}

struct DropFlag(Arc<AtomicUsize>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn a_call_past_its_max_run_time_is_cancelled_and_answered_with_a_timeout_error() {
    let dropped = Arc::new(AtomicUsize::new(0));
    let hang = |name: &'static str, dropped: Arc<AtomicUsize>| {
        TestTool::new(name, move |_, _| {
            let flag = DropFlag(dropped.clone());
            async move {
                let _flag = flag;
                std::future::pending::<()>().await;
                ToolOutcome::error("unreachable")
            }
        })
    };
    let model = ScriptedProvider::new()
        .then_calls([
            ("slow", json!({})),
            ("own_limit", json!({})),
            ("quick", json!({})),
        ])
        .then_text("ok");
    let mut chat = Chat::new(model);
    chat.with_tools((
        hang("slow", dropped.clone()),
        hang("own_limit", dropped.clone()).max_run_time(Duration::from_millis(30)),
        TestTool::text("quick", "fast"),
    ))
    .unwrap();
    chat.with_tool_options(ToolOptions::default().with_max_run_time(Duration::from_millis(50)))
        .unwrap();

    let answer = done(chat.ask("go").await.unwrap());
    assert_eq!(answer.text(), "ok");
    let m = chat.messages();
    assert!(m[2].is_error);
    assert_eq!(
        m[2].text(),
        "The call ran longer than its limit of 50ms and was cancelled."
    );
    assert_eq!(
        m[3].text(),
        "The call ran longer than its limit of 30ms and was cancelled."
    );
    assert_eq!(m[4].text(), "fast");
    assert_eq!(
        dropped.load(Ordering::SeqCst),
        2,
        "both timed-out calls were dropped"
    );
}

#[test]
fn the_default_max_run_time_is_ten_minutes_and_the_round_budget_allows_tool_use() {
    let options = ToolOptions::default();
    assert_eq!(options.max_run_time(), Duration::from_secs(600));
    const { assert!(DEFAULT_ROUNDS >= 10) };
    assert_eq!(options.rounds(), DEFAULT_ROUNDS);
}

#[tokio::test]
async fn parallel_calls_run_at_the_same_time_and_results_keep_call_order() {
    // Both calls wait on one barrier: it only opens if they run at the same time. The first
    // call then waits for the second to finish, so it finishes last.
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let second_done = Arc::new(tokio::sync::Notify::new());
    let (b1, b2) = (barrier.clone(), barrier);
    let (n1, n2) = (second_done.clone(), second_done);
    let first = TestTool::new("first", move |_, _| {
        let (b, n) = (b1.clone(), n1.clone());
        async move {
            let wait = n.notified();
            b.wait().await;
            wait.await;
            ToolOutcome::Output(ToolOutput::text("first"))
        }
    });
    let second = TestTool::new("second", move |_, _| {
        let (b, n) = (b2.clone(), n2.clone());
        async move {
            b.wait().await;
            n.notify_waiters();
            ToolOutcome::Output(ToolOutput::text("second"))
        }
    });
    let model = ScriptedProvider::new()
        .then_calls([("first", json!({})), ("second", json!({}))])
        .then_text("ok");
    let mut chat = Chat::new(model);
    chat.with_tools((first, second)).unwrap();
    chat.with_tool_options(ToolOptions::default().with_max_run_time(Duration::from_secs(5)))
        .unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let seen = order.clone();
    chat.on_tool_result(move |call, _| seen.lock().unwrap().push(call.name.clone()));

    let _ = chat.ask("go").await.unwrap();
    assert_eq!(chat.messages()[2].text(), "first");
    assert_eq!(chat.messages()[3].text(), "second");
    assert_eq!(*order.lock().unwrap(), ["first", "second"]);
}

/// A tool that records when it starts and ends, yielding in between so others can run.
fn logged(
    name: &'static str,
    log: Arc<Mutex<Vec<String>>>,
    live: Arc<AtomicUsize>,
    max: Arc<AtomicUsize>,
) -> TestTool {
    TestTool::new(name, move |_, _| {
        let (log, live, max) = (log.clone(), live.clone(), max.clone());
        async move {
            log.lock().unwrap().push(format!("start {name}"));
            let now = live.fetch_add(1, Ordering::SeqCst) + 1;
            max.fetch_max(now, Ordering::SeqCst);
            for _ in 0..3 {
                tokio::task::yield_now().await;
            }
            live.fetch_sub(1, Ordering::SeqCst);
            log.lock().unwrap().push(format!("end {name}"));
            ToolOutcome::Output(ToolOutput::text(name))
        }
    })
}

#[tokio::test]
async fn the_worker_cap_limits_how_many_calls_run_at_once() {
    let (log, live, max) = (
        Arc::default(),
        Arc::default(),
        Arc::new(AtomicUsize::new(0)),
    );
    let names = ["a", "b", "c", "d", "e"];
    let model = ScriptedProvider::new()
        .then_calls(names.iter().map(|n| (*n, json!({}))))
        .then_text("ok");
    let mut chat = Chat::new(model);
    for name in names {
        chat.with_tools(logged(
            name,
            Arc::clone(&log),
            Arc::clone(&live),
            Arc::clone(&max),
        ))
        .unwrap();
    }
    chat.with_tool_options(ToolOptions::default().with_concurrency(Concurrency::parallel(2)))
        .unwrap();
    let _ = chat.ask("go").await.unwrap();
    assert_eq!(max.load(Ordering::SeqCst), 2);
    let results: Vec<String> = chat.messages()[2..7].iter().map(Message::text).collect();
    assert_eq!(results, names);
}

#[tokio::test]
async fn a_sequential_tool_is_a_barrier_between_parallel_calls() {
    let (log, live, max) = (
        Arc::new(Mutex::new(Vec::new())),
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
    );
    let model = ScriptedProvider::new()
        .then_calls(["a", "b", "s", "c", "d"].map(|n| (n, json!({}))))
        .then_text("ok");
    let mut chat = Chat::new(model);
    for name in ["a", "b", "c", "d"] {
        chat.with_tools(logged(name, log.clone(), live.clone(), max.clone()))
            .unwrap();
    }
    chat.with_tools(logged("s", log.clone(), live.clone(), max.clone()).sequential())
        .unwrap();
    let _ = chat.ask("go").await.unwrap();
    let log = log.lock().unwrap().clone();
    let at = |e: &str| log.iter().position(|x| x == e).unwrap();
    assert!(at("start b") < at("end a"), "a and b overlap: {log:?}");
    assert!(
        at("end a") < at("start s") && at("end b") < at("start s"),
        "{log:?}"
    );
    assert!(
        at("end s") < at("start c") && at("end s") < at("start d"),
        "{log:?}"
    );
    assert!(at("start d") < at("end c"), "c and d overlap: {log:?}");
}

#[tokio::test]
async fn sequential_concurrency_runs_calls_one_at_a_time_in_call_order() {
    let (log, live, max) = (
        Arc::new(Mutex::new(Vec::new())),
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
    );
    let model = ScriptedProvider::new()
        .then_calls(["a", "b", "c"].map(|n| (n, json!({}))))
        .then_text("ok");
    let mut chat = Chat::new(model);
    for name in ["a", "b", "c"] {
        chat.with_tools(logged(name, log.clone(), live.clone(), max.clone()))
            .unwrap();
    }
    chat.with_tool_options(ToolOptions::default().with_concurrency(Concurrency::Sequential))
        .unwrap();
    let _ = chat.ask("go").await.unwrap();
    assert_eq!(max.load(Ordering::SeqCst), 1);
    assert_eq!(
        *log.lock().unwrap(),
        ["start a", "end a", "start b", "end b", "start c", "end c"]
    );
}

#[tokio::test]
async fn the_calls_cap_runs_the_first_n_and_tells_the_model_to_go_on_a_few_at_a_time() {
    let model = ScriptedProvider::new()
        .then_calls(["a", "b", "c"].map(|n| (n, json!({}))))
        .then_text("ok")
        .then_call("a", json!({}))
        .then_text("ok");
    let a = TestTool::text("a", "A").shared();
    let c = TestTool::text("c", "C").shared();
    let mut chat = Chat::new(model.clone());
    chat.with_tools((a.clone(), TestTool::text("b", "B"), c.clone()))
        .unwrap();
    chat.with_tool_options(ToolOptions::default().with_calls(Some(2)))
        .unwrap();
    let _ = chat.ask("go").await.unwrap();
    assert_eq!(chat.messages()[3].text(), "B");
    let capped = &chat.messages()[4];
    assert!(capped.is_error);
    assert!(
        capped.text().contains("at most 2 tool calls"),
        "{}",
        capped.text()
    );
    assert_eq!(c.calls(), 0, "capped calls never run");
    assert_eq!(model.requests()[0].parallel_tool_calls, None);

    chat.with_tool_options(ToolOptions::default().with_calls(Some(1)))
        .unwrap();
    let _ = chat.ask("again").await.unwrap();
    assert_eq!(model.requests()[2].parallel_tool_calls, Some(false));
}

/// An answer whose calls pass the cap by more than `MAX_CALLS_PAST_CAP` is refused whole as
/// malformed (each kept call and its error result would go with every later request): the
/// history is as it was, and the chat goes on. At the bound, the answer is kept. Without a
/// cap, every call runs.
#[tokio::test]
async fn an_answer_of_calls_far_past_the_cap_is_refused_and_nothing_of_it_kept() {
    use llm_tools_core::chat::{DEFAULT_MAX_CALLS, MAX_CALLS_PAST_CAP};
    let kept = DEFAULT_MAX_CALLS + MAX_CALLS_PAST_CAP;
    let model = ScriptedProvider::new()
        .then_calls(std::iter::repeat_n(("a", json!({})), kept + 1))
        .then_calls(std::iter::repeat_n(("a", json!({})), kept))
        .then_text("ok")
        .then_calls(std::iter::repeat_n(("a", json!({})), kept + 1))
        .then_text("all ran");
    let a = TestTool::text("a", "A").shared();
    let mut chat = Chat::new(model);
    chat.with_tools(a.clone()).unwrap();
    let error = chat.ask("go").await.unwrap_err();
    let Error::Provider(error) = &error else {
        panic!("{error}");
    };
    assert_eq!(error.kind(), ProviderErrorKind::Decode);
    assert!(
        error
            .message()
            .contains(&format!("asks for {} tool calls", kept + 1)),
        "{error}"
    );
    assert_eq!(chat.messages().len(), 1, "only the question");
    assert_eq!(a.calls(), 0);

    assert_eq!(
        chat.ask("again").await.unwrap().text().as_deref(),
        Some("ok")
    );
    assert_eq!(a.calls(), DEFAULT_MAX_CALLS);

    chat.with_tool_options(ToolOptions::default().with_calls(None))
        .unwrap();
    assert_eq!(
        chat.ask("all").await.unwrap().text().as_deref(),
        Some("all ran")
    );
    assert_eq!(a.calls(), DEFAULT_MAX_CALLS + kept + 1);
}

/// By default an answer's first `DEFAULT_MAX_CALLS` calls run: an answer of a thousand calls
/// runs 64 of them, the others told to go on a few at a time; `None` lifts the cap, and a
/// state written without the setting reads the default.
#[tokio::test]
async fn an_answer_of_a_thousand_calls_runs_the_default_cap_of_them() {
    use llm_tools_core::chat::DEFAULT_MAX_CALLS;
    let model = ScriptedProvider::new()
        .then_calls(std::iter::repeat_n(("a", json!({})), 1_000))
        .then_text("ok");
    let a = TestTool::text("a", "A").shared();
    let mut chat = Chat::new(model);
    chat.with_tools(a.clone()).unwrap();
    let _ = chat.ask("go").await.unwrap();
    assert_eq!(a.calls(), DEFAULT_MAX_CALLS);
    let capped = chat
        .messages()
        .iter()
        .filter(|m| m.is_error && m.text().contains("at most 64 tool calls"))
        .count();
    assert_eq!(capped, 1_000 - DEFAULT_MAX_CALLS);

    let options = ToolOptions::default().with_calls(None);
    let written = serde_json::to_value(&options).unwrap();
    let read: ToolOptions = serde_json::from_value(written).unwrap();
    assert_eq!(read.calls(), None, "no cap stays no cap");
    let read: ToolOptions = serde_json::from_value(json!({})).unwrap();
    assert_eq!(read.calls(), Some(DEFAULT_MAX_CALLS));
}

#[tokio::test]
async fn a_forced_choice_is_reset_after_the_round_it_forced() {
    let model = ScriptedProvider::new()
        .then_tool_calls(vec![
            ToolCall::new("c1", "lookup", "{}").with_namespace(Some("crm".into())),
        ])
        .then_text("found")
        .then_text("plain");
    let mut chat = Chat::new(model.clone());
    chat.with_tools(TestTool::text("lookup", "customer").namespace("crm"))
        .unwrap();
    chat.with_tool_options(ToolOptions::default().with_choice(ToolChoice::tool("crm_lookup")))
        .unwrap();
    let _ = chat.ask("find").await.unwrap();
    let _ = chat.ask("again").await.unwrap();
    let choices: Vec<ToolChoice> = model.requests().into_iter().map(|r| r.choice).collect();
    assert_eq!(
        choices,
        [
            ToolChoice::tool("crm_lookup"),
            ToolChoice::Auto,
            ToolChoice::Auto
        ]
    );
    assert_eq!(chat.tool_options().choice(), &ToolChoice::Auto);
}

#[test]
fn a_choice_naming_a_tool_the_chat_lacks_is_an_error() {
    let mut chat = Chat::new(ScriptedProvider::new());
    chat.with_tools(TestTool::text("weather", "x")).unwrap();
    let err = chat
        .with_tool_options(ToolOptions::default().with_choice(ToolChoice::tool("wether")))
        .unwrap_err();
    assert!(err.to_string().contains("`weather`"), "{err}");
    assert!(
        chat.with_tool_options(ToolOptions::default().with_rounds(0))
            .is_err()
    );
}

#[tokio::test]
async fn the_round_budget_stops_with_a_clear_error_and_the_chat_carries_on() {
    let mut model = ScriptedProvider::new();
    for _ in 0..3 {
        model = model.then_call("a", json!({}));
    }
    let model = model.then_text("finally");
    let mut chat = Chat::new(model.clone());
    chat.with_tools(TestTool::text("a", "A")).unwrap();
    chat.with_tool_options(ToolOptions::default().with_rounds(2))
        .unwrap();
    let err = chat.ask("loop").await.unwrap_err();
    assert!(
        matches!(err, Error::RoundsExceeded { rounds: 2 }),
        "{err:?}"
    );
    assert!(err.to_string().contains("call `complete` to go on"));
    assert_eq!(model.request_count(), 2);
    assert_results_follow_calls(chat.messages());
    let answer = done(chat.complete().await.unwrap());
    assert_eq!(answer.text(), "finally");
}

#[tokio::test]
async fn params_travel_with_every_request() {
    let model = ScriptedProvider::new().then_text("ok");
    let mut chat = Chat::new(model.clone());
    chat.with_params(json!({"temperature": 0.2})).unwrap();
    assert!(chat.with_params(json!([1])).is_err());
    let _ = chat.ask("hi").await.unwrap();
    assert_eq!(
        model.requests()[0].params.as_ref().unwrap()["temperature"],
        json!(0.2)
    );
}

#[tokio::test]
async fn usage_is_kept_per_message_and_summed_per_chat() {
    let usage = Usage::new;
    let mut first = Message::assistant_with_calls("", vec![ToolCall::new("c1", "a", "{}")]);
    first.usage = Some(usage(10, 2));
    let mut second = Message::assistant("done");
    second.usage = Some(usage(15, 3));
    let mut chat = Chat::new(ScriptedProvider::new().then(first).then(second));
    chat.with_tools(TestTool::text("a", "A")).unwrap();
    let _ = chat.ask("go").await.unwrap();
    assert_eq!(chat.usage(), usage(25, 5));
    assert_eq!(chat.messages()[1].usage, Some(usage(10, 2)));
}

#[tokio::test]
async fn callbacks_run_before_each_request_after_each_message_and_around_each_call() {
    let model = ScriptedProvider::new()
        .then_call("a", json!({"x": 1}))
        .then_text("done");
    let mut chat = Chat::new(model);
    chat.with_tools(TestTool::text("a", "A")).unwrap();
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let (l1, l2, l3, l4, l5) = (
        log.clone(),
        log.clone(),
        log.clone(),
        log.clone(),
        log.clone(),
    );
    chat.before_request(move |r| {
        l1.lock()
            .unwrap()
            .push(format!("request {}", r.messages.len()))
    })
    .after_message(move |m| l2.lock().unwrap().push(format!("message {:?}", m.role)))
    .on_tool_call(move |c| {
        l3.lock()
            .unwrap()
            .push(format!("call {} {}", c.name, c.arguments));
        ToolCallAction::Run
    })
    .on_tool_result(move |c, r| {
        l4.lock()
            .unwrap()
            .push(format!("result {} {}", c.name, r.text()))
    })
    .after_message(move |_| l5.lock().unwrap().push("second after_message".into()));
    let _ = chat.ask("go").await.unwrap();
    assert_eq!(
        *log.lock().unwrap(),
        [
            "message User",
            "second after_message",
            "request 1",
            "message Assistant",
            "second after_message",
            r#"call a {"x":1}"#,
            "result a A",
            "message Tool",
            "second after_message",
            "request 3",
            "message Assistant",
            "second after_message",
        ]
    );
}

#[tokio::test]
async fn a_tool_call_callback_can_veto_or_rewrite_a_call() {
    let model = ScriptedProvider::new()
        .then_tool_calls(vec![
            ToolCall::new("c1", "delete", "{}"),
            ToolCall::new("c2", "echo", r#"{"path":"/etc"}"#),
            ToolCall::new("c3", "echo", r#"{"path":"/bad"}"#),
        ])
        .then_text("ok");
    let delete = TestTool::text("delete", "deleted").shared();
    let mut chat = Chat::new(model);
    chat.with_tools((delete.clone(), TestTool::echo("echo")))
        .unwrap();
    chat.on_tool_call(|call| match (call.name.as_str(), call.arguments.as_str()) {
        ("delete", _) => ToolCallAction::Veto("Deleting is not allowed.".into()),
        (_, r#"{"path":"/bad"}"#) => ToolCallAction::Rewrite("not json".into()),
        _ => ToolCallAction::Rewrite(r#"{"path":"/tmp"}"#.into()),
    });
    let _ = chat.ask("go").await.unwrap();
    let m = chat.messages();
    assert_eq!(m[2].text(), "Deleting is not allowed.");
    assert!(m[2].is_error);
    assert_eq!(delete.calls(), 0);
    assert_eq!(m[3].text(), r#"echo({"path":"/tmp"})"#);
    assert_eq!(m[1].tool_calls[1].arguments, r#"{"path":"/tmp"}"#);
    assert!(m[4].is_error && m[4].text().contains("rewrote its arguments"));
    assert_eq!(m[1].tool_calls[2].arguments, r#"{"path":"/bad"}"#);
    assert_results_follow_calls(m);
}

#[tokio::test]
async fn step_sends_one_request_and_runs_its_round() {
    let model = ScriptedProvider::new()
        .then_call("a", json!({}))
        .then_text("done");
    let mut chat = Chat::new(model.clone());
    chat.with_tools(TestTool::text("a", "A")).unwrap();
    chat.add_message(Message::user("go")).unwrap();
    assert_eq!(chat.step().await.unwrap(), Step::Continue);
    assert_eq!(model.request_count(), 1);
    assert_eq!(chat.messages().len(), 3);
    let Step::Done(answer) = chat.step().await.unwrap() else {
        panic!()
    };
    assert_eq!(answer.text(), "done");
    assert_eq!(model.request_count(), 2);
    // Done stays done without another request.
    assert!(matches!(chat.step().await.unwrap(), Step::Done(_)));
    assert_eq!(model.request_count(), 2);
}

#[tokio::test]
async fn an_added_assistant_message_with_calls_runs_them_on_complete() {
    let model = ScriptedProvider::new().then_text("done");
    let mut chat = Chat::new(model);
    chat.with_tools(TestTool::text("a", "A")).unwrap();
    chat.add_message(Message::user("go")).unwrap();
    chat.add_message(Message::assistant_with_calls(
        "",
        vec![ToolCall::new("x", "a", "{}")],
    ))
    .unwrap();
    assert!(matches!(
        chat.add_message(Message::user("more")),
        Err(Error::PendingCalls { .. })
    ));
    assert!(matches!(
        chat.add_message(Message::tool_result("x", "fake", false)),
        Err(Error::PendingCalls { .. })
    ));
    let _ = chat.complete().await.unwrap();
    assert_eq!(chat.messages()[2].text(), "A");
    assert!(matches!(
        Chat::new(ScriptedProvider::new()).add_message(Message::tool_result("x", "fake", false)),
        Err(Error::InvalidConfig(ConfigError::ToolResultByHand))
    ));
}

#[tokio::test]
async fn empty_and_duplicate_call_ids_are_made_unique() {
    let model = ScriptedProvider::new()
        .then_response(llm_tools_core::Response::new(
            Message::assistant_with_calls(
                "",
                vec![
                    ToolCall::new("", "a", "{}"),
                    ToolCall::new("same", "a", "{}"),
                    ToolCall::new("same", "a", "{}"),
                ],
            ),
        ))
        .then_text("ok");
    let mut chat = Chat::new(model);
    chat.with_tools(TestTool::text("a", "A")).unwrap();
    let _ = chat.ask("go").await.unwrap();
    let ids: Vec<&str> = chat.messages()[1]
        .tool_calls
        .iter()
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(ids, ["call_1_0", "same", "call_1_2"]);
    assert_results_follow_calls(chat.messages());
}

#[tokio::test]
async fn results_with_attachments_keep_them() {
    let model = ScriptedProvider::new()
        .then_call("file", json!({}))
        .then_text("read it");
    let mut chat = Chat::new(model);
    chat.with_tools(TestTool::new("file", |_, _| async {
        ToolOutcome::Output(
            ToolOutput::text("Fetched the file.").with_attachment(
                Attachment::bytes("text/plain", b"Ruby is the best.".to_vec())
                    .with_filename("ruby.txt"),
            ),
        )
    }))
    .unwrap();
    let _ = chat.ask("go").await.unwrap();
    let result = &chat.messages()[2];
    assert_eq!(result.text(), "Fetched the file.");
    assert_eq!(result.content.len(), 2);
    assert_eq!(
        result.content[1].as_attachment().and_then(|a| a.filename()),
        Some("ruby.txt")
    );
}

#[tokio::test]
async fn a_provider_error_reaches_the_caller_and_the_chat_can_try_again() {
    let model = ScriptedProvider::new()
        .then_error(ProviderError::http("scripted", 503, "overloaded").with_retryable(true))
        .then_text("back");
    let mut chat = Chat::new(model);
    let err = chat.ask("hi").await.unwrap_err();
    let Error::Provider(e) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(e.status(), Some(503));
    assert!(e.is_retryable());
    assert_eq!(done(chat.complete().await.unwrap()).text(), "back");
    assert_eq!(chat.messages().len(), 2);
}

#[tokio::test]
async fn complete_without_any_message_is_a_clear_error() {
    let err = Chat::new(ScriptedProvider::new())
        .complete()
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no message to answer"), "{err}");
}

#[tokio::test]
async fn streaming_sends_deltas_runs_tools_and_ends_with_the_answer() {
    let model = ScriptedProvider::new()
        .then(Message::assistant_with_calls(
            "Let me check.",
            vec![ToolCall::new(
                "",
                "weather",
                r#"{"latitude":52.52,"longitude":13.4}"#,
            )],
        ))
        .then_text("It is 15°C.");
    let tool = weather().shared();
    let mut chat = Chat::new(model.clone());
    chat.with_tools(tool.clone()).unwrap();

    let events: Vec<ChatEvent> = chat
        .ask_stream("Weather?")
        .map(|e| e.unwrap())
        .collect()
        .await;

    let text: String = events.iter().filter_map(ChatEvent::text_delta).collect();
    assert_eq!(text, "Let me check.It is 15°C.");
    let fragments: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::Model(StreamEvent::ToolCallDelta { fragment, .. }) => {
                Some(fragment.as_str())
            }
            _ => None,
        })
        .collect();
    assert!(fragments.len() >= 2);
    assert_eq!(fragments.concat(), r#"{"latitude":52.52,"longitude":13.4}"#);
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| match e {
            ChatEvent::Model(StreamEvent::TextDelta(_)) => "text",
            ChatEvent::Model(StreamEvent::ToolCallStarted { .. }) => "started",
            ChatEvent::Model(StreamEvent::ToolCallDelta { .. }) => "delta",
            ChatEvent::Model(StreamEvent::ToolCallReady { .. }) => "ready",
            ChatEvent::Model(StreamEvent::Completed(_)) => "completed",
            ChatEvent::ToolResult { .. } => "result",
            ChatEvent::Done(_) => "done",
            _ => "other",
        })
        .collect();
    let pos = |k: &str| kinds.iter().position(|x| *x == k).unwrap();
    assert!(pos("started") < pos("delta") && pos("delta") < pos("ready"));
    assert!(pos("ready") < pos("completed") && pos("completed") < pos("result"));
    assert_eq!(kinds[kinds.len() - 2..], ["completed", "done"]);
    // Each request's whole answer, as the model gave it, before its tools run.
    let answers: Vec<_> = events.iter().filter_map(ChatEvent::completed).collect();
    assert_eq!(answers.len(), 2);
    assert_eq!(answers[0].message.text(), "Let me check.");
    assert_eq!(answers[0].message.tool_calls[0].name, "weather");
    assert_eq!(answers[1].message.text(), "It is 15°C.");
    assert!(answers[1].message.tool_calls.is_empty());
    let ChatEvent::ToolResult { call, result } = &events[pos("result")] else {
        panic!()
    };
    assert_eq!(call.name, "weather");
    assert!(result.text().starts_with("15°C"));
    let ChatEvent::Done(answer) = events.last().unwrap() else {
        panic!()
    };
    assert_eq!(answer.text(), "It is 15°C.");
    assert_eq!(tool.calls(), 1);
    assert_eq!(chat.messages().len(), 4);
    assert_results_follow_calls(chat.messages());
}

#[tokio::test]
async fn a_stream_error_ends_the_stream_with_it() {
    let model = ScriptedProvider::new().then_error(ProviderError::http("scripted", 401, "bad key"));
    let mut chat = Chat::new(model);
    let events: Vec<_> = chat.ask_stream("hi").collect().await;
    assert_eq!(events.len(), 1);
    assert!(matches!(&events[0], Err(Error::Provider(e)) if e.status() == Some(401)));
}

#[tokio::test]
async fn the_cancel_handle_stops_a_request_in_flight() {
    let model = ScriptedProvider::new().then_hang().then_text("later");
    let mut chat = Chat::new(model);
    let handle = chat.cancel_handle();
    let (result, ()) = tokio::join!(chat.ask("hi"), async move {
        tokio::task::yield_now().await;
        handle.cancel();
    });
    assert!(matches!(result, Err(Error::Cancelled)), "{result:?}");
    assert_eq!(chat.messages().len(), 1, "nothing was added");
    assert_eq!(done(chat.complete().await.unwrap()).text(), "later");
}

#[tokio::test]
async fn the_cancel_handle_stops_running_tools_and_closes_their_calls() {
    let started = Arc::new(tokio::sync::Notify::new());
    let signal = started.clone();
    let model = ScriptedProvider::new()
        .then_calls([("quick", json!({})), ("stuck", json!({}))])
        .then_text("after");
    let mut chat = Chat::new(model);
    chat.with_tools((
        TestTool::text("quick", "fast"),
        TestTool::new("stuck", move |_, _| {
            let signal = signal.clone();
            async move {
                signal.notify_one();
                std::future::pending::<()>().await;
                ToolOutcome::error("unreachable")
            }
        }),
    ))
    .unwrap();
    let handle = chat.cancel_handle();
    let (result, ()) = tokio::join!(chat.ask("go"), async move {
        started.notified().await;
        handle.cancel();
    });
    assert!(matches!(result, Err(Error::Cancelled)), "{result:?}");
    let m = chat.messages();
    assert_eq!(m[2].text(), "fast");
    assert_eq!(m[3].text(), "This call was cancelled before it finished.");
    assert_results_follow_calls(m);
    assert_eq!(done(chat.complete().await.unwrap()).text(), "after");
}

/// A chat whose model calls `quick` `calls` times in one answer, then answers "after"; its
/// result hook cancels the chat (through the returned handle) and answers with `action`.
fn cancelled_by_its_result_hook(calls: usize, action: ToolResultAction) -> (Chat, CancelHandle) {
    let model = ScriptedProvider::new()
        .then_calls((0..calls).map(|_| ("quick", json!({}))))
        .then_text("after");
    let mut chat = Chat::new(model);
    chat.with_tools(TestTool::text("quick", "fast")).unwrap();
    let handle = chat.cancel_handle();
    let canceller = handle.clone();
    chat.on_tool_result_async(move |_, _| {
        canceller.cancel();
        let action = action.clone();
        async move { action }
    });
    (chat, handle)
}

/// A cancellation that comes while a round's results are taken in (here from a result hook),
/// with no call left waiting (one call) or with calls not polled yet (two), stops the turn and
/// is used up by it: the next turn runs.
#[tokio::test]
async fn a_cancellation_between_a_rounds_calls_is_used_once() {
    for calls in [1, 2] {
        let (mut chat, handle) = cancelled_by_its_result_hook(calls, ToolResultAction::Keep);
        let result = chat.ask("go").await;
        assert!(
            matches!(result, Err(Error::Cancelled)),
            "{calls} calls: {result:?}"
        );
        assert!(
            !handle.is_cancelled(),
            "{calls} calls: the cancellation was left for the next turn"
        );
        assert_results_follow_calls(chat.messages());
        assert_eq!(done(chat.complete().await.unwrap()).text(), "after");
    }
}

/// A cancellation that comes while a turn runs is that turn's, even when the turn ends another
/// way before it sees it (here a result hook cancels and stops the turn): the next turn runs.
#[tokio::test]
async fn a_cancellation_during_a_turn_that_ends_otherwise_is_not_left_for_the_next() {
    let stop = ToolResultAction::Stop("enough".into());
    let (mut chat, handle) = cancelled_by_its_result_hook(1, stop);
    let outcome = chat.ask("go").await.unwrap();
    assert!(matches!(outcome, Outcome::Stopped(_)), "{outcome:?}");
    assert!(
        !handle.is_cancelled(),
        "the cancellation was left for the next turn"
    );
    assert_eq!(done(chat.complete().await.unwrap()).text(), "after");
}

/// The tool results of a chat hold at most `max_chat_attachment_bytes` of inline attachments: one
/// past it is left out of its result (a later round's too), whose text names it and the limit;
/// one given by URL always fits.
#[tokio::test]
async fn attachments_past_the_chats_room_for_them_are_left_out_and_named() {
    let plot = TestTool::new("plot", |_, _| async {
        ToolOutcome::Output(
            ToolOutput::text("plotted")
                .with_attachment(Attachment::bytes("image/png", vec![7; 600]))
                .with_attachment(Attachment::bytes("image/png", vec![8; 600]))
                .with_attachment(Attachment::url("image/png", "https://example.com/p.png")),
        )
    });
    let model = ScriptedProvider::new()
        .then_call("plot", json!({}))
        .then_call("plot", json!({}))
        .then_text("Two plots.");
    let mut chat = Chat::new(model);
    chat.with_tools(plot).unwrap();
    chat.with_tool_options(ToolOptions::default().with_max_chat_attachment_bytes(Some(1000)))
        .unwrap();
    assert_eq!(
        chat.ask("plot twice").await.unwrap().text().as_deref(),
        Some("Two plots.")
    );
    let results: Vec<&Message> = chat
        .messages()
        .iter()
        .filter(|m| m.role == Role::Tool)
        .collect();
    let inline = |m: &Message| {
        m.content
            .iter()
            .filter_map(|p| match p {
                llm_tools_core::Part::Attachment(a) => Some(match a.source() {
                    Source::Bytes(b) => format!("{} bytes of {}", b.len(), b[0]),
                    Source::Url(url) => url.clone(),
                    _ => unreachable!(),
                }),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    let note = "[An attachment of this result (image/png, 600 bytes) was left out: this chat \
                keeps at most 1000 bytes of attachments in its tool results, and it does not fit \
                in what is left.]";
    assert_eq!(
        inline(results[0]),
        ["600 bytes of 7", "https://example.com/p.png"]
    );
    assert_eq!(results[0].text(), format!("plotted\n{note}"));
    assert_eq!(inline(results[1]), ["https://example.com/p.png"]);
    assert_eq!(results[1].text(), format!("plotted\n{note}\n{note}"));
    assert_results_follow_calls(chat.messages());
}

#[tokio::test]
async fn progress_reports_reach_the_callbacks_and_the_stream_in_order() {
    let slow = TestTool::new("import", |_, ctx| async move {
        ctx.report_progress(1.0, Some(2.0), Some("first half"));
        ctx.report_progress(2.0, Some(2.0), None);
        ToolOutcome::Output(ToolOutput::text("imported"))
    });
    let model = ScriptedProvider::new()
        .then_call("import", json!({}))
        .then_text("Imported.")
        .cycle();
    let mut chat = Chat::new(model);
    chat.with_tools(slow).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    chat.on_tool_progress(move |p| {
        sink.lock()
            .unwrap()
            .push((p.tool.clone(), p.progress, p.total, p.message.clone()));
    });

    done(chat.ask("import").await.unwrap());
    assert_eq!(
        *seen.lock().unwrap(),
        [
            (
                "import".to_owned(),
                1.0,
                Some(2.0),
                Some("first half".to_owned())
            ),
            ("import".to_owned(), 2.0, Some(2.0), None),
        ]
    );

    let mut events = Vec::new();
    let mut stream = chat.ask_stream("again");
    while let Some(event) = stream.next().await {
        events.push(event.unwrap());
    }
    let progress: Vec<f64> = events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::ToolProgress(p) => Some(p.progress),
            _ => None,
        })
        .collect();
    assert_eq!(progress, [1.0, 2.0]);
    let first_progress = events
        .iter()
        .position(|e| matches!(e, ChatEvent::ToolProgress(_)))
        .unwrap();
    let result = events
        .iter()
        .position(|e| matches!(e, ChatEvent::ToolResult { .. }))
        .unwrap();
    assert!(first_progress < result, "progress comes before the result");
    assert_eq!(
        seen.lock().unwrap().len(),
        4,
        "callbacks run while streaming too"
    );
}

#[tokio::test]
async fn a_call_that_started_in_a_dropped_turn_and_is_closed_before_it_runs_again_was_stopped() {
    // Turn 1 runs both calls at once; each signals its start and never ends, and the turn is
    // dropped. Turn 2 runs them one at a time: `stall` fails fatally first, so `wait`, which
    // had started in turn 1, is closed before it runs again. It must not read "did not run".
    let (started_tx, mut started) = tokio::sync::mpsc::unbounded_channel::<&'static str>();
    let tool = |name: &'static str| {
        let started_tx = started_tx.clone();
        TestTool::new(name, move |_, ctx| {
            let started_tx = started_tx.clone();
            async move {
                if ctx.attempt() == 1 {
                    let _ = started_tx.send(name);
                    std::future::pending::<()>().await;
                }
                if name == "stall" {
                    ToolOutcome::Error(ToolError::fatal(std::io::Error::other("stalled")))
                } else {
                    ToolOutcome::Output(ToolOutput::text("waited"))
                }
            }
        })
    };
    let model = ScriptedProvider::new()
        .then_calls([("stall", json!({})), ("wait", json!({}))])
        .then_text("Done.");
    let mut chat = Chat::new(model);
    chat.with_tools((tool("stall"), tool("wait"))).unwrap();
    {
        let turn = chat.ask("Go");
        tokio::pin!(turn);
        let mut seen = Vec::new();
        while seen.len() < 2 {
            tokio::select! {
                outcome = &mut turn => panic!("the turn ended: {outcome:?}"),
                name = started.recv() => seen.push(name.unwrap()),
            }
        }
    }
    chat.with_tool_options(ToolOptions::default().with_concurrency(Concurrency::Sequential))
        .unwrap();
    let error = chat.complete().await.unwrap_err();
    assert!(matches!(error, Error::ToolFailed { .. }), "{error}");
    let wait_id = chat
        .messages()
        .iter()
        .find_map(|m| m.tool_calls.iter().find(|c| c.name == "wait"))
        .unwrap()
        .id
        .clone();
    let wait = result_of(chat.messages(), &wait_id);
    assert_eq!(wait.text(), "This call was cancelled before it finished.");
    assert!(wait.is_error);
    assert_results_follow_calls(chat.messages());
}
