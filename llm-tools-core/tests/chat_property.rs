//! The transcript stays valid whatever the model does: for random sequences of answers
//! (unknown tools, bad arguments, parallel calls, fatal errors, panics, pauses, questions,
//! approvals) and random decisions by the user, every tool call gets exactly one result, in call
//! order, before the next request.
#![allow(clippy::unwrap_used, clippy::panic)] // test helpers outside `#[test]` fns

mod common;

use std::sync::Once;

use common::{TestTool, assert_results_follow_calls};
use llm_tools_core::chat::{Chat, Concurrency, Outcome, ToolOptions};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{
    Error, Message, Role, Task, ToolCall, ToolContext, ToolError, ToolOutcome, ToolOutput,
};
use proptest::prelude::*;

const NAMES: [&str; 9] = [
    "ok", "soft", "fatal", "boom", "task", "asker", "gated", "seq", "nope",
];

#[derive(Clone, Copy, Debug)]
enum Args {
    Valid,
    Broken,
    NotObject,
    Empty,
}

#[derive(Clone, Debug)]
enum Answer {
    Text,
    Calls(Vec<(usize, Args)>),
}

fn tools() -> Vec<TestTool> {
    vec![
        TestTool::text("ok", "fine"),
        TestTool::new("soft", |_, _| async { ToolOutcome::error("try again") }),
        TestTool::new("fatal", |_, _| async {
            ToolOutcome::Error(ToolError::fatal("database is down"))
        }),
        TestTool::new("boom", |_, _| async { panic!("boom in a tool") }),
        TestTool::new("task", |_, _| async {
            ToolOutcome::Task(Task::working("running"))
        })
        .with_resume(|_, _, _| async { ToolOutcome::Output(ToolOutput::text("finished")) }),
        TestTool::new("asker", |_, ctx: ToolContext| async move {
            match ctx.ask("Sure?").await {
                Ok(a) => ToolOutcome::Output(ToolOutput::text(format!("{}", a.is_accepted()))),
                Err(e) => ToolOutcome::Error(e),
            }
        }),
        TestTool::text("gated", "approved work").needs_approval(),
        TestTool::text("seq", "in order").sequential(),
    ]
}

fn script(answers: &[Answer]) -> ScriptedProvider {
    let mut model = ScriptedProvider::new();
    for answer in answers {
        model = match answer {
            Answer::Text => model.then_text("an answer"),
            Answer::Calls(calls) => model.then_tool_calls(
                calls
                    .iter()
                    .map(|(tool, args)| {
                        let raw = match args {
                            Args::Valid => "{}",
                            Args::Broken => r#"{"a": "#,
                            Args::NotObject => "[1, 2]",
                            Args::Empty => "",
                        };
                        ToolCall::new("", NAMES[*tool], raw)
                    })
                    .collect(),
            ),
        };
    }
    model
}

/// Every request the model got, and the transcript, hold one result per call in call order;
/// no request was sent with a call left unanswered.
fn check(model: &ScriptedProvider, chat: &Chat) {
    for request in model.requests() {
        assert_results_follow_calls(&request.messages);
        let last = request.messages.last().unwrap();
        assert!(
            last.role == Role::User || last.role == Role::Tool,
            "a request must end with the user's message or a result: {last:?}"
        );
    }
    let messages = chat.messages();
    if chat.is_paused() {
        let start = messages.iter().rposition(Message::has_tool_calls).unwrap();
        assert_results_follow_calls(&messages[..start]);
        let calls = &messages[start].tool_calls;
        let results = &messages[start + 1..];
        assert!(results.len() < calls.len(), "a paused round misses results");
        for (call, result) in calls.iter().zip(results) {
            assert_eq!(result.tool_call_id.as_deref(), Some(call.id.as_str()));
        }
    } else {
        assert_results_follow_calls(messages);
    }
}

fn quiet_tool_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let quiet = info
                .payload()
                .downcast_ref::<&str>()
                .is_some_and(|m| m.contains("boom in a tool"));
            if !quiet {
                default(info);
            }
        }));
    });
}

fn answers() -> impl Strategy<Value = Vec<Answer>> {
    let args = prop_oneof![
        6 => Just(Args::Valid),
        1 => Just(Args::Broken),
        1 => Just(Args::NotObject),
        1 => Just(Args::Empty),
    ];
    let answer = prop_oneof![
        1 => Just(Answer::Text),
        3 => prop::collection::vec((0..NAMES.len(), args), 1..6).prop_map(Answer::Calls),
    ];
    prop::collection::vec(answer, 1..12)
}

fn options() -> impl Strategy<Value = ToolOptions> {
    (
        prop_oneof![
            Just(Concurrency::Sequential),
            (1usize..4).prop_map(Concurrency::parallel)
        ],
        prop_oneof![3 => Just(None), 1 => (1usize..4).prop_map(Some)],
        1usize..6,
    )
        .prop_map(|(concurrency, calls, rounds)| {
            ToolOptions::default()
                .with_concurrency(concurrency)
                .with_calls(calls)
                .with_rounds(rounds)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn every_call_gets_exactly_one_result_in_call_order_before_the_next_request(
        answers in answers(),
        options in options(),
        decisions in prop::collection::vec(0u8..4, 64),
    ) {
        quiet_tool_panics();
        let model = script(&answers);
        let mut chat = Chat::new(model.clone());
        chat.with_tools(tools()).unwrap();
        chat.with_tool_options(options).unwrap();
        let mut decisions = decisions.into_iter().cycle();

        common::runtime().block_on(async {
            let mut result = chat.ask("go").await;
            for _ in 0..40 {
                check(&model, &chat);
                result = match result {
                    Ok(Outcome::Paused(_)) => {
                        if decisions.next() == Some(0) {
                            chat.cancel().await.expect("cancelled");
                            check(&model, &chat);
                            chat.complete().await
                        } else {
                            let approvals: Vec<String> =
                                chat.pending_approvals().iter().map(|c| c.id.clone()).collect();
                            for id in approvals {
                                match decisions.next() {
                                    Some(1) => chat.deny(&id, "no").map(|_| ()).unwrap(),
                                    Some(2) => {} // left undecided this time
                                    _ => chat.approve(&id).map(|_| ()).unwrap(),
                                }
                            }
                            let questions: Vec<String> =
                                chat.pending_questions().iter().map(|q| q.call.id.clone()).collect();
                            for id in questions {
                                match decisions.next() {
                                    Some(1) => chat.decline(&id).map(|_| ()).unwrap(),
                                    _ => chat.answer(&id, serde_json::json!({})).map(|_| ()).unwrap(),
                                }
                            }
                            chat.complete().await
                        }
                    }
                    Ok(Outcome::Done(_)) => chat.ask("more").await,
                    Err(Error::ToolFailed { .. } | Error::RoundsExceeded { .. }) => chat.complete().await,
                    Err(Error::Provider(_)) => break, // the script is used up
                    Err(other) => panic!("unexpected error: {other:?}"),
                    Ok(other) => panic!("unexpected outcome: {other:?}"),
                };
            }
            check(&model, &chat);
        });
    }
}
