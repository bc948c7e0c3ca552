//! Pausing, asking and approving: one mechanism over paused calls, and a chat's state saved
//! mid-pause and restored elsewhere.
#![allow(clippy::unwrap_used, clippy::panic)] // test helpers outside `#[test]` fns

mod common;

use std::sync::Arc;

use common::{TestTool, assert_results_follow_calls, result_of};
use llm_tools_core::chat::{Chat, ChatState, Outcome, PauseReason};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{
    Error, Question, Task, TaskStatus, ToolCall, ToolContext, ToolError, ToolOutcome, ToolOutput,
};
use serde_json::json;

/// Starts a job and pauses; `resume` finishes it on the second check.
fn sub_agent() -> TestTool {
    TestTool::new("run_sub_agent", |_, _| async {
        ToolOutcome::Task(
            Task::input_required("Waiting for approval").with_data("run_id", json!(42)),
        )
    })
    .with_resume(|task, args, _| async move {
        let checks = task.get("checks").and_then(|c| c.as_u64()).unwrap_or(0) + 1;
        if checks < 2 {
            let mut task = task.with_status(TaskStatus::Working, Some("Deploying".into()));
            task.data_mut().insert("checks".into(), json!(checks));
            ToolOutcome::Task(task)
        } else {
            ToolOutcome::Output(ToolOutput::text(format!(
                "run {} deployed {args}",
                task.get("run_id").unwrap()
            )))
        }
    })
}

/// Asks who approves, then does the work.
fn ask_team() -> TestTool {
    TestTool::new("ask_team", |_, ctx: ToolContext| async move {
        let question = Question::new("Which region?")
            .required_field("region", json!({"type": "string", "enum": ["eu", "us"]}));
        match ctx.ask(question).await {
            Ok(answer) if answer.is_accepted() => ToolOutcome::Output(ToolOutput::text(format!(
                "deploying to {}",
                answer.get_str("region").unwrap_or("?")
            ))),
            Ok(_) => ToolOutcome::Output(ToolOutput::text("Nobody answered")),
            Err(e) => ToolOutcome::Error(e),
        }
    })
}

fn paused(outcome: Outcome) -> llm_tools_core::chat::Pause {
    match outcome {
        Outcome::Paused(p) => p,
        other => panic!("expected a pause, got {other:?}"),
    }
}

#[tokio::test]
async fn a_task_pauses_the_call_and_each_complete_resumes_it_once() {
    let model = ScriptedProvider::new()
        .then_call("run_sub_agent", json!({"job": "pricing"}))
        .then_text("Deployed.");
    let tool = sub_agent().shared();
    let mut chat = Chat::new(model.clone());
    chat.with_tools(tool.clone()).unwrap();

    let pause = paused(chat.ask("Deploy the new pricing page").await.unwrap());
    assert!(chat.is_paused() && chat.awaiting_tasks());
    assert!(!chat.awaiting_input() && !chat.awaiting_approval());
    let (_, task) = pause.tasks().next().unwrap();
    assert_eq!(task.status_message(), Some("Waiting for approval"));
    assert!(task.is_input_required());
    let pending = chat.pending_tasks();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].task.get("run_id"), Some(&json!(42)));
    assert_eq!(pending[0].call.name, "run_sub_agent");
    assert_eq!(model.request_count(), 1, "no request while paused");
    assert_eq!(chat.messages().len(), 2, "no result yet");

    // First check: still working.
    let pause = paused(chat.complete().await.unwrap());
    assert_eq!(tool.resumes(), 1);
    let (_, task) = pause.tasks().next().unwrap();
    assert_eq!(task.status(), TaskStatus::Working);
    assert_eq!(task.get("run_id"), Some(&json!(42)), "data kept");

    // Second check: done; the model carries on.
    let Outcome::Done(answer) = chat.complete().await.unwrap() else {
        panic!()
    };
    assert_eq!(answer.text(), "Deployed.");
    assert_eq!(tool.calls(), 1);
    assert_eq!(tool.resumes(), 2);
    assert_eq!(
        chat.messages()[2].text(),
        r#"run 42 deployed {"job":"pricing"}"#
    );
    assert_results_follow_calls(chat.messages());
}

#[tokio::test]
async fn calls_of_the_same_round_that_need_no_pause_still_run_once() {
    let model = ScriptedProvider::new()
        .then_calls([("run_sub_agent", json!({})), ("quick", json!({}))])
        .then_text("ok");
    let quick = TestTool::text("quick", "done quickly").shared();
    let mut chat = Chat::new(model);
    chat.with_tools((sub_agent(), quick.clone())).unwrap();
    let _ = paused(chat.ask("go").await.unwrap());
    assert_eq!(quick.calls(), 1, "ran while the other call paused");
    let _ = paused(chat.complete().await.unwrap());
    let _ = chat.complete().await.unwrap();
    assert_eq!(quick.calls(), 1, "never ran twice");
    assert_eq!(result_of(chat.messages(), "call_2").text(), "done quickly");
    assert_results_follow_calls(chat.messages());
}

#[tokio::test]
async fn a_new_message_while_paused_is_a_pending_calls_error() {
    let model = ScriptedProvider::new().then_call("run_sub_agent", json!({}));
    let mut chat = Chat::new(model);
    chat.with_tools(sub_agent()).unwrap();
    let _ = paused(chat.ask("go").await.unwrap());
    let err = chat.ask("something else").await.unwrap_err();
    match &err {
        Error::PendingCalls { calls } => assert_eq!(calls, &["run_sub_agent"]),
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("`complete`"), "{err}");
}

#[tokio::test]
async fn cancel_cancels_the_tasks_and_closes_every_paused_call() {
    let model = ScriptedProvider::new()
        .then_calls([
            ("run_sub_agent", json!({})),
            ("ask_team", json!({})),
            ("dangerous", json!({})),
        ])
        .then_text("Understood, cancelled.");
    let tool = sub_agent().shared();
    let mut chat = Chat::new(model);
    chat.with_tools((
        tool.clone(),
        ask_team(),
        TestTool::text("dangerous", "boom").needs_approval(),
    ))
    .unwrap();
    let pause = paused(chat.ask("go").await.unwrap());
    assert_eq!(pause.calls().len(), 3);

    chat.cancel().await.expect("cancelled");
    assert!(!chat.is_paused());
    let cancelled = tool.cancelled.lock().unwrap().clone();
    assert_eq!(cancelled.len(), 1);
    assert_eq!(cancelled[0].get("run_id"), Some(&json!(42)));
    let m = chat.messages();
    assert_results_follow_calls(m);
    assert_eq!(m[2].text(), "This call was cancelled before it finished.");
    assert_eq!(m[4].text(), "This call was cancelled before it ran.");
    assert!(m[2..5].iter().all(|r| r.is_error));
    let _ = chat.complete().await.unwrap();
}

#[tokio::test]
async fn a_question_pauses_the_call_and_the_answer_runs_it_again_from_the_start() {
    let model = ScriptedProvider::new()
        .then_call("ask_team", json!({}))
        .then_text("Deploying to eu.");
    let tool = ask_team().shared();
    let mut chat = Chat::new(model.clone());
    chat.with_tools(tool.clone()).unwrap();

    let pause = paused(chat.ask("Deploy").await.unwrap());
    assert!(chat.awaiting_input());
    let (call, question) = pause.questions().next().unwrap();
    assert_eq!(question.message(), "Which region?");
    assert_eq!(question.required(), ["region"]);
    let call_id = call.id.clone();
    assert_eq!(chat.pending_questions()[0].question, question);
    assert_eq!(model.request_count(), 1);

    // A missing required field is refused; the question stays.
    let err = chat.answer(&call_id, json!({})).unwrap_err();
    assert!(matches!(err, Error::InvalidAnswer { .. }), "{err:?}");
    assert!(err.to_string().contains("region"));
    assert!(chat.awaiting_input());
    assert!(matches!(
        chat.answer("nope", json!({"region": "eu"})),
        Err(Error::NotWaiting { .. })
    ));

    chat.answer(&call_id, json!({"region": "eu"})).unwrap();
    assert!(!chat.awaiting_input());
    let Outcome::Done(answer) = chat.complete().await.unwrap() else {
        panic!()
    };
    assert_eq!(answer.text(), "Deploying to eu.");
    assert_eq!(tool.calls(), 2, "ran again from the start");
    assert_eq!(chat.messages()[2].text(), "deploying to eu");
}

#[tokio::test]
async fn a_declined_question_reaches_the_tool_as_a_declined_answer() {
    let model = ScriptedProvider::new()
        .then_call("ask_team", json!({}))
        .then_text("ok");
    let mut chat = Chat::new(model);
    chat.with_tools(ask_team()).unwrap();
    let _ = paused(chat.ask("Deploy").await.unwrap());
    let id = chat.pending_questions()[0].call.id.clone();
    chat.decline(&id).unwrap();
    let _ = chat.complete().await.unwrap();
    assert_eq!(chat.messages()[2].text(), "Nobody answered");
}

#[tokio::test]
async fn a_call_can_ask_several_questions_one_after_another() {
    let tool = TestTool::new("setup", |_, ctx: ToolContext| async move {
        let name = match ctx.ask("Project name?").await {
            Ok(a) => a.get_str("value").unwrap_or_default().to_owned(),
            Err(e) => return ToolOutcome::Error(e),
        };
        let region = match ctx.ask("Region?").await {
            Ok(a) => a.get_str("value").unwrap_or_default().to_owned(),
            Err(e) => return ToolOutcome::Error(e),
        };
        ToolOutcome::Output(ToolOutput::text(format!("{name} in {region}")))
    })
    .shared();
    let model = ScriptedProvider::new()
        .then_call("setup", json!({}))
        .then_text("ok");
    let mut chat = Chat::new(model);
    chat.with_tools(tool.clone()).unwrap();
    let _ = paused(chat.ask("go").await.unwrap());
    assert_eq!(
        chat.pending_questions()[0].question.message(),
        "Project name?"
    );
    chat.answer("call_1", json!({"value": "atlas"})).unwrap();
    let pause = paused(chat.complete().await.unwrap());
    assert_eq!(pause.questions().next().unwrap().1.message(), "Region?");
    chat.answer("call_1", json!({"value": "eu"})).unwrap();
    let _ = chat.complete().await.unwrap();
    assert_eq!(chat.messages()[2].text(), "atlas in eu");
    assert_eq!(tool.calls(), 3);
}

#[tokio::test]
async fn outside_a_chat_an_unanswered_question_is_an_input_required_error() {
    let tool = ask_team();
    let outcome = llm_tools_core::Tool::call(
        &tool,
        llm_tools_core::RawArgs::new("{}"),
        ToolContext::detached("c1"),
    )
    .await;
    let ToolOutcome::Error(e) = outcome else {
        panic!()
    };
    assert_eq!(e.question().map(Question::message), Some("Which region?"));
    assert!(!e.is_fatal() && !e.is_recoverable());
}

#[tokio::test]
async fn a_question_asked_while_resuming_a_task_resumes_the_task_again_once_answered() {
    let tool = TestTool::new("job", |_, _| async {
        ToolOutcome::Task(Task::working("running"))
    })
    .with_resume(|_task, _, ctx: ToolContext| async move {
        match ctx.ask("Publish the result?").await {
            Ok(a) if a.is_accepted() => ToolOutcome::Output(ToolOutput::text("published")),
            Ok(_) => ToolOutcome::Output(ToolOutput::text("kept private")),
            Err(e) => ToolOutcome::Error(e),
        }
    })
    .shared();
    let model = ScriptedProvider::new()
        .then_call("job", json!({}))
        .then_text("ok");
    let mut chat = Chat::new(model);
    chat.with_tools(tool.clone()).unwrap();
    let _ = paused(chat.ask("go").await.unwrap());
    let _ = paused(chat.complete().await.unwrap());
    assert!(chat.awaiting_input());
    chat.answer("call_1", json!({})).unwrap();
    let _ = chat.complete().await.unwrap();
    assert_eq!(chat.messages()[2].text(), "published");
    assert_eq!((tool.calls(), tool.resumes()), (1, 2));
}

#[tokio::test]
async fn a_call_needing_approval_pauses_before_it_runs_and_runs_once_approved() {
    let model = ScriptedProvider::new()
        .then_call("dangerous", json!({"target": "prod"}))
        .then_text("Done.");
    let tool = TestTool::echo("dangerous").needs_approval().shared();
    let mut chat = Chat::new(model.clone());
    chat.with_tools(tool.clone()).unwrap();

    let pause = paused(chat.ask("Do it").await.unwrap());
    assert!(matches!(pause.calls()[0].reason, PauseReason::Approval));
    assert!(chat.awaiting_approval());
    assert_eq!(tool.calls(), 0, "nothing ran");
    let pending: Vec<String> = chat
        .pending_approvals()
        .iter()
        .map(|c| c.id.clone())
        .collect();
    assert_eq!(pending, ["call_1"]);
    // complete without a decision stays parked, without a request.
    let _ = paused(chat.complete().await.unwrap());
    assert_eq!(model.request_count(), 1);

    chat.approve("call_1").unwrap();
    assert!(chat.pending_approvals().is_empty());
    assert!(matches!(
        chat.approve("call_1"),
        Err(Error::NotWaiting { .. })
    ));
    let Outcome::Done(answer) = chat.complete().await.unwrap() else {
        panic!()
    };
    assert_eq!(answer.text(), "Done.");
    assert_eq!(tool.calls(), 1);
    assert_eq!(chat.messages()[2].text(), r#"dangerous({"target":"prod"})"#);
}

#[tokio::test]
async fn a_denial_reaches_the_model_as_an_error_result_with_the_reason() {
    let model = ScriptedProvider::new()
        .then_call("dangerous", json!({}))
        .then_text("I won't.");
    let tool = TestTool::text("dangerous", "boom")
        .needs_approval()
        .shared();
    let mut chat = Chat::new(model);
    chat.with_tools(tool.clone()).unwrap();
    let _ = paused(chat.ask("Do it").await.unwrap());
    chat.deny("call_1", "not on a Friday").unwrap();
    let _ = chat.complete().await.unwrap();
    let result = &chat.messages()[2];
    assert!(result.is_error);
    assert_eq!(
        result.text(),
        "The user denied the `dangerous` tool call: not on a Friday"
    );
    assert_eq!(tool.calls(), 0);
}

#[tokio::test]
async fn a_per_call_rule_decides_which_calls_need_approval_and_ungated_calls_run_first() {
    let model = ScriptedProvider::new()
        .then_calls([
            ("transfer", json!({"amount": 5})),
            ("transfer", json!({"amount": 5000})),
        ])
        .then_text("ok");
    let tool = TestTool::echo("transfer")
        .with_approval(|call: &ToolCall| {
            let args: serde_json::Value = serde_json::from_str(&call.arguments).unwrap();
            args["amount"].as_u64().unwrap_or(0) > 100
        })
        .shared();
    let mut chat = Chat::new(model);
    chat.with_tools(tool.clone()).unwrap();
    let pause = paused(chat.ask("pay").await.unwrap());
    assert_eq!(tool.calls(), 1, "the small transfer ran");
    assert_eq!(
        pause.approvals().map(|c| c.id.as_str()).collect::<Vec<_>>(),
        ["call_2"]
    );
    chat.approve("call_2").unwrap();
    let _ = chat.complete().await.unwrap();
    assert_eq!(tool.calls(), 2);
    assert_results_follow_calls(chat.messages());
}

#[tokio::test]
async fn remembered_decisions_apply_to_later_calls_of_the_same_tool_by_namespace_and_name() {
    let model = ScriptedProvider::new()
        .then_tool_calls(vec![
            ToolCall::new("a1", "delete", "{}").with_namespace(Some("files".into())),
            ToolCall::new("a2", "delete", "{}").with_namespace(Some("files".into())),
        ])
        .then_text("ok")
        .then_tool_calls(vec![
            ToolCall::new("b1", "delete", "{}").with_namespace(Some("files".into())),
            ToolCall::new("b2", "delete", "{}").with_namespace(Some("mail".into())),
        ])
        .then_text("ok")
        .then_tool_calls(vec![
            ToolCall::new("c1", "delete", "{}").with_namespace(Some("mail".into())),
        ])
        .then_text("ok")
        .then_tool_calls(vec![
            ToolCall::new("d1", "delete", "{}").with_namespace(Some("mail".into())),
        ]);
    let files = TestTool::text("delete", "file deleted")
        .namespace("files")
        .needs_approval()
        .shared();
    let mail = TestTool::text("delete", "mail deleted")
        .namespace("mail")
        .needs_approval()
        .shared();
    let mut chat = Chat::new(model);
    chat.with_tools((files.clone(), mail.clone())).unwrap();

    let _ = paused(chat.ask("clean up").await.unwrap());
    chat.approve_always("a1").unwrap();
    assert!(
        !chat.awaiting_approval(),
        "the other call of the same tool is approved too"
    );
    let _ = chat.complete().await.unwrap();
    assert_eq!(files.calls(), 2);

    // Files stays approved; mail (same name, other namespace) still asks.
    let pause = paused(chat.ask("again").await.unwrap());
    assert_eq!(files.calls(), 3);
    assert_eq!(
        pause.approvals().map(|c| c.id.as_str()).collect::<Vec<_>>(),
        ["b2"]
    );
    chat.deny_always("b2", "never delete mail").unwrap();
    let _ = chat.complete().await.unwrap();

    // Mail is now denied without asking.
    let outcome = chat.ask("and mail").await.unwrap();
    assert!(!outcome.is_paused());
    assert_eq!(
        result_of(chat.messages(), "c1").text(),
        "The user denied the `mail_delete` tool call: never delete mail"
    );
    assert_eq!(mail.calls(), 0);

    // Forgotten decisions ask again.
    chat.forget_decisions();
    let pause = paused(chat.ask("mail once more").await.unwrap());
    assert_eq!(
        pause.approvals().map(|c| c.id.as_str()).collect::<Vec<_>>(),
        ["d1"]
    );
}

#[tokio::test]
async fn a_fatal_error_closes_the_paused_calls_of_its_round() {
    let model = ScriptedProvider::new()
        .then_calls([("run_sub_agent", json!({})), ("broken", json!({}))])
        .then_text("ok");
    let agent = sub_agent().shared();
    let mut chat = Chat::new(model);
    chat.with_tools((
        agent.clone(),
        TestTool::new("broken", |_, _| async {
            ToolOutcome::Error(ToolError::fatal("disk full"))
        }),
    ))
    .unwrap();
    let err = chat.ask("go").await.unwrap_err();
    assert!(matches!(err, Error::ToolFailed { .. }));
    assert!(!chat.is_paused());
    assert_eq!(
        agent.cancelled.lock().unwrap().len(),
        1,
        "its task was cancelled"
    );
    assert_results_follow_calls(chat.messages());
}

#[tokio::test]
async fn the_state_round_trips_through_json_mid_pause_and_carries_on_in_another_chat() {
    // One round pauses three ways: a task, a question and an approval; a fourth call finished.
    let first_model = ScriptedProvider::new().then_calls([
        ("run_sub_agent", json!({"job": "pricing"})),
        ("ask_team", json!({})),
        ("dangerous", json!({"x": 1})),
        ("quick", json!({})),
    ]);
    let tools = || {
        (
            sub_agent(),
            ask_team(),
            TestTool::echo("dangerous").needs_approval(),
            TestTool::text("quick", "quick result"),
        )
    };
    let mut chat = Chat::new(first_model);
    chat.with_tools(tools()).unwrap();
    chat.with_tool_options(llm_tools_core::chat::ToolOptions::default().with_rounds(7))
        .unwrap();
    chat.with_params(json!({"temperature": 0})).unwrap();
    let _ = paused(chat.ask("Ship it").await.unwrap());
    chat.approve("call_3").unwrap();
    let json = serde_json::to_string(chat.state()).unwrap();
    drop(chat);

    // Another process: the same tools, the provider carries on.
    let second_model = ScriptedProvider::new().then_text("Shipped.");
    let state: ChatState = serde_json::from_str(&json).unwrap();
    let mut chat = Chat::from_state(second_model.clone(), state).unwrap();
    chat.with_tools(tools()).unwrap();
    assert_eq!(chat.tool_options().rounds(), 7);
    assert!(chat.awaiting_tasks() && chat.awaiting_input() && !chat.awaiting_approval());
    assert_eq!(chat.pending_tasks()[0].task.get("run_id"), Some(&json!(42)));

    chat.answer("call_2", json!({"region": "us"})).unwrap();
    let _ = paused(chat.complete().await.unwrap()); // the task needs two checks
    let Outcome::Done(answer) = chat.complete().await.unwrap() else {
        panic!()
    };
    assert_eq!(answer.text(), "Shipped.");
    let m = chat.messages();
    assert_eq!(m[2].text(), r#"run 42 deployed {"job":"pricing"}"#);
    assert_eq!(m[3].text(), "deploying to us");
    assert_eq!(m[4].text(), r#"dangerous({"x":1})"#);
    assert_eq!(m[5].text(), "quick result");
    assert_results_follow_calls(m);
    let sent = &second_model.requests()[0];
    assert_eq!(sent.params.as_ref().unwrap()["temperature"], json!(0));
    assert_eq!(sent.messages.len(), 6);
}

#[test]
fn a_state_from_a_newer_version_or_that_does_not_hold_together_is_refused() {
    let mut json = serde_json::to_value(Chat::new(ScriptedProvider::new()).state()).unwrap();
    json["version"] = json!(99);
    let state: ChatState = serde_json::from_value(json).unwrap();
    let err = Chat::from_state(ScriptedProvider::new(), state).unwrap_err();
    assert!(err.to_string().contains("version 99"), "{err}");

    let broken =
        json!({"version": 1, "messages": [], "round": {"message": 3, "slots": [], "appended": 0}});
    let state: ChatState = serde_json::from_value(broken).unwrap();
    assert!(Chat::from_state(ScriptedProvider::new(), state).is_err());
}

#[tokio::test]
async fn completing_a_call_whose_tool_was_removed_is_an_error_that_keeps_it_pending() {
    let model = ScriptedProvider::new()
        .then_call("run_sub_agent", json!({}))
        .then_text("ok");
    let mut chat = Chat::new(model);
    chat.with_tools(sub_agent()).unwrap();
    let _ = paused(chat.ask("go").await.unwrap());
    let removed: Option<Arc<dyn llm_tools_core::Tool>> = chat.remove_tool("run_sub_agent");
    assert!(removed.is_some());
    let messages_before = chat.messages().len();

    let err = chat.complete().await.unwrap_err();
    match &err {
        Error::ToolNotRegistered { tool, .. } => assert_eq!(tool, "run_sub_agent"),
        other => panic!("expected ToolNotRegistered, got {other:?}"),
    }
    assert!(err.to_string().contains("with_tools"), "{err}");
    assert_eq!(chat.pending_tasks().len(), 1, "the call stays pending");
    assert_eq!(
        chat.messages().len(),
        messages_before,
        "nothing was answered"
    );

    // Registering the tool again lets the paused call finish.
    chat.with_tools(sub_agent()).unwrap();
    let _ = paused(chat.complete().await.unwrap());
    let _ = chat.complete().await.unwrap();
    assert!(chat.pending_tasks().is_empty());
    assert!(
        result_of(chat.messages(), "call_1")
            .text()
            .starts_with("run 42 deployed")
    );
    assert_results_follow_calls(chat.messages());
}

#[tokio::test]
async fn a_page_to_visit_is_a_question_answered_once_the_user_is_back() {
    let tool = TestTool::new("sign_in", |_, ctx: ToolContext| async move {
        match ctx
            .ask(Question::visit(
                "Sign in to continue",
                "https://example.com/login",
            ))
            .await
        {
            Ok(a) if a.is_accepted() => ToolOutcome::Output(ToolOutput::text("signed in")),
            Ok(_) => ToolOutcome::Output(ToolOutput::text("not signed in")),
            Err(e) => ToolOutcome::Error(e),
        }
    });
    let model = ScriptedProvider::new()
        .then_call("sign_in", json!({}))
        .then_text("ok");
    let mut chat = Chat::new(model);
    chat.with_tools(tool).unwrap();
    let pause = paused(chat.ask("go").await.unwrap());
    let (_, question) = pause.questions().next().unwrap();
    assert_eq!(question.url(), Some("https://example.com/login"));
    chat.answer("call_1", json!({})).unwrap();
    let _ = chat.complete().await.unwrap();
    assert_eq!(chat.messages()[2].text(), "signed in");
}

#[tokio::test]
async fn fields_an_answer_leaves_out_take_their_defaults() {
    use llm_tools_core::{Question, ToolContext, ToolError, tool};

    /// Scales the service
    #[tool]
    async fn scale(ctx: &ToolContext) -> Result<String, ToolError> {
        let question = Question::new("How?")
            .field("replicas", json!({"type": "integer", "default": 3}))
            .field("region", json!({"type": "string", "default": "eu"}));
        let answer = ctx.ask(question).await?;
        Ok(format!(
            "{} in {}",
            answer.get("replicas").cloned().unwrap_or_default(),
            answer.get_str("region").unwrap_or("nowhere")
        ))
    }

    let model = ScriptedProvider::new()
        .then_call("scale", json!({}))
        .then_text("Scaled.");
    let mut chat = Chat::new(model);
    chat.with_tools(Scale).unwrap();
    let _ = paused(chat.ask("Scale it").await.unwrap());
    let id = chat.pending_questions()[0].call.id.clone();
    chat.answer(&id, json!({"region": "us"})).unwrap();
    let _ = chat.complete().await.unwrap();
    assert_eq!(chat.messages()[2].text(), "3 in us");
}

/// What the export tool keeps while its job runs.
#[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
struct Export {
    job_id: u64,
    pages_done: u32,
}

/// Starts an export job with a typed state; `resume` reads it back, moves it on once, then
/// finishes.
fn export() -> TestTool {
    TestTool::new("export", |_, _| async {
        match Task::working("Exporting").with_state(&Export {
            job_id: 7,
            pages_done: 0,
        }) {
            Ok(task) => ToolOutcome::Task(task),
            Err(e) => ToolOutcome::Error(e.into()),
        }
    })
    .with_resume(|task, _, _| async move {
        let export: Export = match task.state() {
            Ok(export) => export,
            Err(e) => return ToolOutcome::Error(e.into()),
        };
        if export.pages_done == 0 {
            let next = Export {
                pages_done: 10,
                ..export
            };
            return match task.with_state(&next) {
                Ok(task) => ToolOutcome::Task(task),
                Err(e) => ToolOutcome::Error(e.into()),
            };
        }
        ToolOutcome::Output(ToolOutput::text(format!(
            "job {} exported {} pages",
            export.job_id, export.pages_done
        )))
    })
}

#[tokio::test]
async fn a_typed_task_state_survives_the_saved_state_and_is_read_as_its_type() {
    let mut chat = Chat::new(ScriptedProvider::new().then_call("export", json!({})));
    chat.with_tools(export()).unwrap();
    let _ = paused(chat.ask("Export the report").await.unwrap());
    let state: Export = chat.pending_tasks()[0].task.state().unwrap();
    assert_eq!(
        state,
        Export {
            job_id: 7,
            pages_done: 0
        }
    );
    let _ = paused(chat.complete().await.unwrap());
    let json = serde_json::to_string(chat.state()).unwrap();
    drop(chat);

    let model = ScriptedProvider::new().then_text("Exported.");
    let mut chat = Chat::from_state(model, serde_json::from_str(&json).unwrap()).unwrap();
    chat.with_tools(export()).unwrap();
    assert_eq!(
        chat.pending_tasks()[0].task.state::<Export>().unwrap(),
        Export {
            job_id: 7,
            pages_done: 10
        }
    );
    assert_eq!(chat.complete().await.unwrap().text().unwrap(), "Exported.");
    assert_eq!(chat.messages()[2].text(), "job 7 exported 10 pages");
}

#[tokio::test]
async fn a_stored_task_state_that_does_not_decode_fails_the_call_naming_the_tool_and_type() {
    let mut chat = Chat::new(ScriptedProvider::new().then_call("export", json!({})));
    chat.with_tools(export()).unwrap();
    let _ = paused(chat.ask("Export the report").await.unwrap());
    // The stored state as another version of the tool wrote it.
    let mut state = serde_json::to_value(chat.state()).unwrap();
    let text = state
        .to_string()
        .replace(r#""job_id":7"#, r#""job_id":"seven""#);
    assert_ne!(text, state.to_string(), "the state holds the task's job id");
    state = serde_json::from_str(&text).unwrap();
    let mut chat = Chat::from_state(
        ScriptedProvider::new(),
        serde_json::from_value(state).unwrap(),
    )
    .unwrap();
    chat.with_tools(export()).unwrap();
    let err = chat.complete().await.unwrap_err();
    let Error::ToolFailed {
        tool,
        call_id,
        source,
    } = &err
    else {
        panic!("expected a tool failure, got {err:?}")
    };
    assert_eq!(tool, "export");
    assert!(!call_id.is_empty());
    let message = source.to_string();
    assert!(
        message.contains("Export") && message.contains("\"seven\""),
        "{message}"
    );
    // The call is closed, the transcript stays valid.
    assert_results_follow_calls(chat.messages());
}

#[test]
fn a_task_without_state_or_with_an_unwritable_one_is_a_clear_error() {
    let err = Task::working("x").state::<Export>().unwrap_err();
    assert!(err.to_string().contains("no state"), "{err}");
    assert!(err.type_name().ends_with("Export"));
    let map: std::collections::HashMap<(u8, u8), u8> = [((1, 2), 3)].into();
    let err = Task::working("x").with_state(&map).unwrap_err();
    assert!(err.to_string().contains("written as JSON"), "{err}");
}

/// A background job whose check never comes back, and counts the cancels it gets.
#[derive(Default)]
struct Stuck {
    checking: tokio::sync::Notify,
    cancels: std::sync::atomic::AtomicUsize,
}

#[llm_tools_core::tool]
impl Stuck {
    /// Starts a background job
    async fn execute(&self) -> Task {
        Task::working("running")
    }

    async fn resume(&self, task: Task) -> ToolOutcome {
        let _ = task;
        self.checking.notify_one();
        std::future::pending().await
    }

    async fn cancel(&self, _task: Task) {
        self.cancels
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// A turn cancelled while a task's check runs: the task is cancelled through its tool, and
/// the call is closed with one result.
#[tokio::test]
async fn a_task_whose_check_a_cancel_cuts_short_is_cancelled_through_its_tool() {
    let stuck = Arc::new(Stuck::default());
    let model = ScriptedProvider::new()
        .then_call("stuck", json!({}))
        .then_text("unused");
    let mut chat = Chat::new(model);
    chat.with_tools(Arc::clone(&stuck)).unwrap();
    assert!(matches!(chat.ask("go").await.unwrap(), Outcome::Paused(_)));
    let cancel = chat.cancel_handle();
    let checking = {
        let stuck = Arc::clone(&stuck);
        async move {
            stuck.checking.notified().await;
            cancel.cancel();
        }
    };
    let (outcome, ()) = tokio::join!(chat.complete(), checking);
    assert!(matches!(outcome, Err(Error::Cancelled)), "{outcome:?}");
    assert_eq!(
        stuck.cancels.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "the task was cancelled through its tool"
    );
    let m = chat.messages();
    assert_results_follow_calls(m);
    assert!(m[2].is_error, "{}", m[2].text());
}

/// The same with an output schema that asks a wrong answer again: an answer asked again is
/// no answer the rounds in a row end at, so a model that answers wrongly between its task
/// calls still meets the round budget.
#[tokio::test]
async fn an_answer_asked_again_between_task_calls_ends_no_run_of_rounds() {
    use llm_tools_core::chat::ToolOptions;
    use llm_tools_core::structured::OutputSchema;
    let tool = TestTool::new("job", |_, _| async {
        ToolOutcome::Task(Task::working("running"))
    })
    .with_resume(|_, _, _| async { ToolOutcome::Output(ToolOutput::text("done")) })
    .shared();
    let mut model = ScriptedProvider::new().then_call("job", json!({}));
    for _ in 0..10 {
        model = model.then_text("not json").then_call("job", json!({}));
    }
    let mut chat = Chat::new(model.clone());
    chat.with_tools(tool.clone())
        .unwrap()
        .with_tool_options(ToolOptions::default().with_rounds(3))
        .unwrap()
        .with_output_schema(
            OutputSchema::new("answer", json!({"type": "object"}))
                .unwrap()
                .with_retries(1),
        );
    let _ = paused(chat.ask("go").await.unwrap());
    let _ = paused(chat.complete().await.unwrap());
    let _ = paused(chat.complete().await.unwrap());
    let err = chat.complete().await.unwrap_err();
    assert!(matches!(err, Error::RoundsExceeded { rounds: 3 }), "{err}");
}

#[tokio::test]
async fn a_model_that_keeps_calling_a_task_tool_uses_one_round_budget_across_turns() {
    use llm_tools_core::chat::ToolOptions;
    // Each call pauses on a task that is done when next resumed; the model calls again and
    // again. Nobody speaks between the turns: each `complete` only resumes the task.
    let tool = TestTool::new("job", |_, _| async {
        ToolOutcome::Task(Task::working("running"))
    })
    .with_resume(|_, _, _| async { ToolOutcome::Output(ToolOutput::text("done")) })
    .shared();
    let mut model = ScriptedProvider::new();
    for _ in 0..10 {
        model = model.then_call("job", json!({}));
    }
    let mut chat = Chat::new(model.clone());
    chat.with_tools(tool.clone())
        .unwrap()
        .with_tool_options(ToolOptions::default().with_rounds(3))
        .unwrap();
    let _ = paused(chat.ask("go").await.unwrap());
    let _ = paused(chat.complete().await.unwrap());
    let _ = paused(chat.complete().await.unwrap());
    let err = chat.complete().await.unwrap_err();
    assert!(matches!(err, Error::RoundsExceeded { rounds: 3 }), "{err}");
    assert_eq!(model.request_count(), 3);
    // Reported once: the application that goes on gets a fresh budget.
    let _ = paused(chat.complete().await.unwrap());
    assert_eq!(model.request_count(), 4);
}
