//! Hooks that stop or rewrite (`on_tool_call`, `on_tool_call_async`, `on_tool_result_async`)
//! and approvals bound to the arguments approved (`approve_with`, `approve_always_*`, the
//! approval resolver), with a scripted model.

#![allow(clippy::unwrap_used, clippy::panic)] // test helpers outside `#[test]` fns

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use llm_tools_core::chat::{
    Chat, ChatState, Decision, Outcome, StopReason, ToolCallAction, ToolResultAction,
};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{Error, Message, Role, tool};
use serde_json::{Value, json};

static CHARGES: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Charges a card
#[tool(needs_approval)]
async fn charge(customer: String, cents: u64) -> String {
    CHARGES.lock().unwrap().push(format!("{customer}:{cents}"));
    format!("charged {customer} {cents}")
}

/// Echoes its text
#[tool]
async fn echo(text: String) -> String {
    format!("echo {text}")
}

fn args(call_arguments: &str) -> Value {
    serde_json::from_str(call_arguments).unwrap()
}

/// Every tool call of the transcript has exactly one result, right after its message.
fn results_follow_calls(messages: &[Message]) {
    let mut i = 0;
    while i < messages.len() {
        let calls = &messages[i].tool_calls;
        for (k, call) in calls.iter().enumerate() {
            let result = &messages[i + 1 + k];
            assert_eq!(result.role, Role::Tool);
            assert_eq!(result.tool_call_id.as_deref(), Some(call.id.as_str()));
        }
        i += 1 + calls.len();
    }
}

#[tokio::test]
async fn sync_and_async_call_hooks_run_in_one_chain_in_registration_order() {
    let model = ScriptedProvider::new()
        .then_call("echo", json!({"text": "a"}))
        .then_text("Done.");
    let mut chat = Chat::new(model.clone());
    chat.with_tools(Echo).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    chat.on_tool_call(|_| ToolCallAction::Rewrite(json!({"text": "b"}).to_string()));
    let sink = Arc::clone(&seen);
    chat.on_tool_call_async(move |call| {
        let sink = Arc::clone(&sink);
        async move {
            sink.lock()
                .unwrap()
                .push(args(&call.arguments)["text"].clone());
            ToolCallAction::Rewrite(json!({"text": "c"}).to_string())
        }
    });
    let _ = chat.ask("Echo").await.unwrap();
    assert_eq!(*seen.lock().unwrap(), [json!("b")]);
    assert_eq!(chat.messages()[2].text(), "echo c");
    // the transcript, and so the next request, keeps the rewritten arguments
    assert_eq!(
        args(&chat.messages()[1].tool_calls[0].arguments),
        json!({"text": "c"})
    );
}

#[tokio::test]
async fn a_call_hook_vetoes_with_a_reason_the_model_reads() {
    let model = ScriptedProvider::new()
        .then_call("echo", json!({"text": "secret"}))
        .then_text("Ok.");
    let mut chat = Chat::new(model.clone());
    chat.with_tools(Echo).unwrap();
    chat.on_tool_call_async(|_| async { ToolCallAction::Veto("Not today.".into()) });
    let _ = chat.ask("Echo").await.unwrap();
    assert!(chat.messages()[2].is_error);
    assert_eq!(chat.messages()[2].text(), "Not today.");
    // the model read it in the next request
    let sent = model.requests();
    assert!(sent[1].messages.iter().any(|m| m.text() == "Not today."));
}

/// Counts its runs
#[tool]
async fn counted(text: String) -> String {
    COUNTED_RUNS.fetch_add(1, Ordering::SeqCst);
    text
}

static COUNTED_RUNS: AtomicUsize = AtomicUsize::new(0);

/// Two calls at a time: as each of the first two finishes, the next is taken, so `three` is
/// taken (its hook let it run) before the hook of `stop` stops the turn, and never runs. It is
/// told it did not run, not that it was cancelled while running.
#[tokio::test]
async fn a_call_taken_before_a_later_hook_stops_the_turn_is_told_it_did_not_run() {
    let model = ScriptedProvider::new().then_calls([
        ("counted", json!({"text": "one"})),
        ("counted", json!({"text": "two"})),
        ("counted", json!({"text": "three"})),
        ("counted", json!({"text": "stop"})),
    ]);
    let mut chat = Chat::new(model);
    chat.with_tools(Counted).unwrap();
    chat.with_tool_options(
        llm_tools_core::chat::ToolOptions::default()
            .with_concurrency(llm_tools_core::chat::Concurrency::Parallel { workers: 2 }),
    )
    .unwrap();
    chat.on_tool_call(|call| {
        if call.arguments.contains("stop") {
            ToolCallAction::Stop("the operator pulled the brake".into())
        } else {
            ToolCallAction::Run
        }
    });
    let outcome = chat.ask("Count").await.unwrap();
    assert!(
        matches!(outcome, Outcome::Stopped(StopReason::Hook { .. })),
        "{outcome:?}"
    );
    assert_eq!(COUNTED_RUNS.load(Ordering::SeqCst), 2);
    let m = chat.messages();
    assert_eq!((m[2].text(), m[3].text()), ("one".into(), "two".into()));
    assert!(m[4].is_error);
    assert_eq!(m[4].text(), "This call did not run: the turn was stopped.");
    assert_eq!(m[5].text(), "the operator pulled the brake");
    results_follow_calls(m);
}

#[tokio::test]
async fn a_call_hook_stops_the_turn_and_the_chat_carries_on_later() {
    let model = ScriptedProvider::new()
        .then_calls([
            ("echo", json!({"text": "one"})),
            ("echo", json!({"text": "stop"})),
            ("echo", json!({"text": "three"})),
        ])
        .then_text("Carried on.");
    let mut chat = Chat::new(model.clone());
    chat.with_tools(Echo).unwrap();
    chat.with_tool_options(
        llm_tools_core::chat::ToolOptions::default()
            .with_concurrency(llm_tools_core::chat::Concurrency::Sequential),
    )
    .unwrap();
    chat.on_tool_call_async(|call| async move {
        if call.arguments.contains("stop") {
            ToolCallAction::Stop("the operator pulled the brake".into())
        } else {
            ToolCallAction::Run
        }
    });
    let outcome = chat.ask("Echo three times").await.unwrap();
    let Outcome::Stopped(StopReason::Hook {
        tool,
        call_id,
        reason,
    }) = outcome
    else {
        panic!("expected a hook stop, got {outcome:?}");
    };
    assert_eq!(tool, "echo");
    assert_eq!(call_id, chat.messages()[1].tool_calls[1].id);
    assert_eq!(reason, "the operator pulled the brake");
    assert_eq!(chat.messages()[2].text(), "echo one");
    assert_eq!(chat.messages()[3].text(), "the operator pulled the brake");
    assert!(chat.messages()[4].is_error, "the third call did not run");
    assert!(chat.messages()[4].text().contains("stopped"));
    results_follow_calls(chat.messages());
    assert!(!chat.is_paused());
    assert_eq!(model.request_count(), 1, "no request after the stop");
    assert!(chat.stopped().is_some());
    let answer = chat.complete().await.unwrap();
    assert_eq!(answer.text().as_deref(), Some("Carried on."));
}

#[tokio::test]
async fn a_panicking_or_hanging_call_hook_vetoes_its_call_and_the_chat_goes_on() {
    let model = ScriptedProvider::new()
        .then_calls([
            ("echo", json!({"text": "panic"})),
            ("echo", json!({"text": "hang"})),
        ])
        .then_text("Ok.");
    let mut chat = Chat::new(model);
    chat.with_tools(Echo).unwrap();
    chat.with_hook_timeout(Duration::from_millis(50));
    chat.on_tool_call_async(|call| async move {
        if call.arguments.contains("panic") {
            panic!("a bug in the hook");
        }
        futures::future::pending::<ToolCallAction>().await
    });
    let outcome = chat.ask("Go").await.unwrap();
    assert_eq!(outcome.text().as_deref(), Some("Ok."));
    assert!(chat.messages()[2].is_error);
    assert!(
        chat.messages()[2].text().contains("panicked"),
        "{}",
        chat.messages()[2].text()
    );
    assert!(chat.messages()[3].is_error);
    assert!(
        chat.messages()[3]
            .text()
            .contains("did not decide within 50ms")
    );
}

#[tokio::test]
async fn a_sync_hook_that_panics_vetoes_too() {
    let model = ScriptedProvider::new()
        .then_call("echo", json!({"text": "x"}))
        .then_text("Ok.");
    let mut chat = Chat::new(model);
    chat.with_tools(Echo).unwrap();
    chat.on_tool_call(|_| panic!("a bug"));
    let _ = chat.ask("Go").await.unwrap();
    assert!(chat.messages()[2].is_error);
    assert!(chat.messages()[2].text().contains("panicked"));
}

#[tokio::test]
async fn a_result_hook_rewrites_what_the_model_and_the_observers_see() {
    let model = ScriptedProvider::new()
        .then_call("echo", json!({"text": "token=abc"}))
        .then_text("Ok.");
    let mut chat = Chat::new(model.clone());
    chat.with_tools(Echo).unwrap();
    let observed = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&observed);
    chat.on_tool_result(move |_, result| sink.lock().unwrap().push(result.text()));
    chat.on_tool_result_async(|_, result| async move {
        let text = result.text().replace("abc", "***");
        ToolResultAction::Rewrite(Message::tool_result("ignored-id", text, false))
    });
    let _ = chat.ask("Go").await.unwrap();
    assert_eq!(chat.messages()[2].text(), "echo token=***");
    assert_eq!(
        chat.messages()[2].tool_call_id.as_deref(),
        Some(chat.messages()[1].tool_calls[0].id.as_str()),
        "a rewrite answers the call it came from"
    );
    assert_eq!(*observed.lock().unwrap(), ["echo token=***"]);
    assert!(
        !model.requests()[1]
            .messages
            .iter()
            .any(|m| m.text().contains("abc"))
    );
}

/// What a result hook puts in a result fits in the chat's room for attachments as a tool's own
/// output does: the attachment it replaces no longer counts, one past the room is left out
/// and named.
#[tokio::test]
async fn attachments_a_result_hook_adds_fit_in_the_chats_room_for_them() {
    use llm_tools_core::{Attachment, Part, Source};
    let model = ScriptedProvider::new()
        .then_call("echo", json!({"text": "plot"}))
        .then_text("Ok.");
    let mut chat = Chat::new(model.clone());
    chat.with_tools(Echo).unwrap();
    chat.with_tool_options(
        llm_tools_core::chat::ToolOptions::default().with_max_chat_attachment_bytes(Some(1000)),
    )
    .unwrap();
    chat.on_tool_result_async(|_, result| async move {
        let mut parts = result.content.clone();
        parts.push(Part::Attachment(Attachment::bytes(
            "image/png",
            vec![9; 900],
        )));
        parts.push(Part::Attachment(Attachment::bytes(
            "image/png",
            vec![8; 300],
        )));
        ToolResultAction::Rewrite(Message::tool_result_parts("any", parts, false))
    });
    let _ = chat.ask("Go").await.unwrap();
    let result = &chat.messages()[2];
    let inline: Vec<(usize, u8)> = result
        .content
        .iter()
        .filter_map(|p| match p {
            Part::Attachment(a) => match a.source() {
                Source::Bytes(b) => Some((b.len(), b[0])),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(inline, [(900, 9)], "the second one does not fit");
    assert_eq!(
        result.text(),
        "echo plot\n[An attachment of this result (image/png, 300 bytes) was left out: this \
         chat keeps at most 1000 bytes of attachments in its tool results, and it does not fit \
         in what is left.]"
    );
    let sent = &model.requests()[1].messages[2];
    assert_eq!(
        sent, result,
        "the model sees the result as the transcript keeps it"
    );
}

#[tokio::test]
async fn a_result_hook_stops_the_turn_after_a_result() {
    let model = ScriptedProvider::new()
        .then_calls([
            ("echo", json!({"text": "enough"})),
            ("echo", json!({"text": "more"})),
        ])
        .then_text("Ok.");
    let mut chat = Chat::new(model.clone());
    chat.with_tools(Echo).unwrap();
    chat.with_tool_options(
        llm_tools_core::chat::ToolOptions::default()
            .with_concurrency(llm_tools_core::chat::Concurrency::Sequential),
    )
    .unwrap();
    chat.on_tool_result_async(|_, result| async move {
        if result.text().contains("enough") {
            ToolResultAction::Stop("we have what we need".into())
        } else {
            ToolResultAction::Keep
        }
    });
    let outcome = chat.ask("Go").await.unwrap();
    assert!(
        matches!(&outcome, Outcome::Stopped(StopReason::Hook { reason, .. }) if reason == "we have what we need"),
        "{outcome:?}"
    );
    assert_eq!(chat.messages()[2].text(), "echo enough");
    assert!(chat.messages()[3].is_error);
    results_follow_calls(chat.messages());
    assert_eq!(model.request_count(), 1);
}

#[tokio::test]
async fn a_failing_result_hook_withholds_the_result_and_stops() {
    let model = ScriptedProvider::new()
        .then_call("echo", json!({"text": "pii"}))
        .then_text("Ok.");
    let mut chat = Chat::new(model.clone());
    chat.with_tools(Echo).unwrap();
    chat.on_tool_result_async(|_, _| async { panic!("redaction crashed") });
    let outcome = chat.ask("Go").await.unwrap();
    assert!(
        matches!(outcome, Outcome::Stopped(StopReason::Hook { .. })),
        "{outcome:?}"
    );
    assert!(chat.messages()[2].is_error);
    assert!(
        !chat.messages()[2].text().contains("echo pii"),
        "never lets the result through"
    );
}

#[tokio::test]
async fn no_hooks_change_nothing() {
    let model = ScriptedProvider::new()
        .then_call("echo", json!({"text": "a"}))
        .then_text("Done.");
    let mut chat = Chat::new(model);
    chat.with_tools(Echo).unwrap();
    assert_eq!(
        chat.ask("Go").await.unwrap().text().as_deref(),
        Some("Done.")
    );
    assert_eq!(chat.messages()[2].text(), "echo a");
}

// ----- approvals -----

#[tokio::test]
async fn an_approval_covers_the_arguments_approved_and_a_rewrite_asks_again() {
    let model = ScriptedProvider::new()
        .then_call("charge", json!({"customer": "ann", "cents": 100}))
        .then_text("Charged.");
    let mut chat = Chat::new(model);
    chat.with_tools(Charge).unwrap();
    assert!(chat.ask("Charge Ann").await.unwrap().is_paused());
    let id = chat.pending_approvals()[0].id.clone();
    chat.approve(&id).unwrap();
    // a hook registered after the approval raises the amount
    let rewrites = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&rewrites);
    chat.on_tool_call_async(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
        async { ToolCallAction::Rewrite(json!({"customer": "ann", "cents": 100000}).to_string()) }
    });
    let outcome = chat.complete().await.unwrap();
    assert!(
        outcome.is_paused(),
        "the rewritten call needs approval again: {outcome:?}"
    );
    let pending = chat.pending_approvals();
    assert_eq!(pending.len(), 1);
    assert_eq!(
        args(&pending[0].arguments)["cents"],
        100000,
        "the person sees what would run"
    );
    assert!(
        !CHARGES
            .lock()
            .unwrap()
            .iter()
            .any(|c| c.starts_with("ann:"))
    );
    // approved as rewritten: the hook's rewrite gives the same arguments, so it runs
    chat.approve(&id).unwrap();
    let outcome = chat.complete().await.unwrap();
    assert_eq!(outcome.text().as_deref(), Some("Charged."));
    assert_eq!(chat.messages()[2].text(), "charged ann 100000");
    assert_eq!(rewrites.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn approve_with_edited_arguments_validates_them_against_the_schema() {
    let model = ScriptedProvider::new()
        .then_call("charge", json!({"customer": "bo", "cents": 5000}))
        .then_text("Charged.");
    let mut chat = Chat::new(model);
    chat.with_tools(Charge).unwrap();
    let _ = chat.ask("Charge Bo").await.unwrap();
    let id = chat.pending_approvals()[0].id.clone();
    for bad in [
        json!({"customer": "bo", "cents": "5"}),
        json!({"customer": "bo"}),
        json!(["bo", 5]),
    ] {
        let err = chat.approve_with(&id, bad.clone()).unwrap_err();
        assert!(matches!(err, Error::InvalidAnswer { .. }), "{bad}: {err}");
        assert!(
            err.to_string().contains("still waits for approval"),
            "{err}"
        );
        assert_eq!(
            chat.pending_approvals().len(),
            1,
            "the call is still pending"
        );
    }
    let err = chat
        .approve_with(&id, json!({"customer": "bo", "cents": -1}))
        .unwrap_err();
    assert!(err.to_string().contains("`cents`"), "{err}");
    chat.approve_with(&id, json!({"customer": "bo", "cents": 50}))
        .unwrap();
    let _ = chat.complete().await.unwrap();
    assert_eq!(chat.messages()[2].text(), "charged bo 50");
    assert_eq!(
        args(&chat.messages()[1].tool_calls[0].arguments)["cents"],
        50
    );
}

#[tokio::test]
async fn approve_always_matching_covers_only_matching_arguments_and_is_stored() {
    let model = ScriptedProvider::new()
        .then_call("charge", json!({"customer": "cy", "cents": 1}))
        .then_text("One.")
        .then_calls([
            ("charge", json!({"customer": "cy", "cents": 2})),
            ("charge", json!({"customer": "di", "cents": 3})),
        ])
        .then_text("Two.");
    let mut chat = Chat::new(model.clone());
    chat.with_tools(Charge).unwrap();
    let _ = chat.ask("Charge Cy").await.unwrap();
    let id = chat.pending_approvals()[0].id.clone();
    chat.approve_always_matching(&id, json!({"customer": "cy"}))
        .unwrap();
    let _ = chat.complete().await.unwrap();
    // across a save and load: the rule is in the state
    let state: ChatState =
        serde_json::from_str(&serde_json::to_string(chat.state()).unwrap()).unwrap();
    let mut chat = Chat::from_state(model, state).unwrap();
    chat.with_tools(Charge).unwrap();
    assert!(chat.ask("Charge Cy and Di").await.unwrap().is_paused());
    assert_eq!(chat.messages()[6].text(), "charged cy 2");
    let pending = chat.pending_approvals();
    assert_eq!(pending.len(), 1);
    assert_eq!(args(&pending[0].arguments)["customer"], "di");
}

/// Moves money to an account
///
/// # Arguments
/// * `account` - The account number
#[tool(needs_approval)]
async fn transfer(account: u128) -> String {
    format!("sent to {account}")
}

/// Integers past `u64` read as floats when compared, and `100000000000000000001` as the float
/// of `100000000000000000000`, while the tool reads each exactly: a rule remembered for one
/// such account does not cover a call for the next, which waits for a person.
#[tokio::test]
async fn a_rule_for_an_account_past_u64_does_not_cover_its_neighbour() {
    let call = |id: &str, account: &str| {
        llm_tools_core::ToolCall::new(id, "transfer", format!(r#"{{"account": {account}}}"#))
    };
    let model = ScriptedProvider::new()
        .then_tool_calls(vec![call("call_1", "100000000000000000000")])
        .then_text("One.")
        .then_tool_calls(vec![call("call_2", "100000000000000000001")])
        .then_text("Two.");
    let mut chat = Chat::new(model);
    chat.with_tools(Transfer).unwrap();
    let _ = chat.ask("Pay").await.unwrap();
    let pending = &chat.pending_approvals()[0];
    let (id, account) = (
        pending.id.clone(),
        args(&pending.arguments)["account"].clone(),
    );
    chat.approve_always_matching(&id, json!({ "account": account }))
        .unwrap();
    let _ = chat.complete().await.unwrap();
    assert_eq!(chat.messages()[2].text(), "sent to 100000000000000000000");
    let outcome = chat.ask("Pay again").await.unwrap();
    assert!(outcome.is_paused(), "the neighbour's call ran unapproved");
    assert_eq!(chat.pending_approvals().len(), 1);
}

/// An `approve_always_if` that fails (the call waits for nothing) changes nothing: the
/// predicate registered under its name before still decides the rules of that name.
#[tokio::test]
async fn a_failed_approve_always_if_keeps_the_predicate_registered_before() {
    let model = ScriptedProvider::new()
        .then_call("charge", json!({"customer": "fi", "cents": 10}))
        .then_text("One.")
        .then_call("charge", json!({"customer": "fi", "cents": 5_000}))
        .then_text("Two.");
    let small = |args: &Value| args["cents"].as_u64().is_some_and(|c| c < 100);
    let mut chat = Chat::new(model);
    chat.with_tools(Charge).unwrap();
    let _ = chat.ask("Charge").await.unwrap();
    let id = chat.pending_approvals()[0].id.clone();
    chat.approve_always_if(&id, "small", small).unwrap();
    let _ = chat.complete().await.unwrap();
    let refused = chat.approve_always_if("no-such-call", "small", |_: &Value| true);
    assert!(refused.is_err());
    assert!(
        chat.ask("Again").await.unwrap().is_paused(),
        "the rule still asks about 5,000 cents"
    );
}

#[tokio::test]
async fn approve_always_if_fails_closed_where_its_predicate_is_not_registered() {
    let model = ScriptedProvider::new()
        .then_call("charge", json!({"customer": "ed", "cents": 10}))
        .then_text("One.")
        .then_call("charge", json!({"customer": "ed", "cents": 20}))
        .then_text("Two.")
        .then_call("charge", json!({"customer": "ed", "cents": 30}))
        .then_text("Three.");
    let small = |args: &Value| args["cents"].as_u64().is_some_and(|c| c < 100);
    let mut chat = Chat::new(model.clone());
    chat.with_tools(Charge).unwrap();
    let _ = chat.ask("Charge").await.unwrap();
    let id = chat.pending_approvals()[0].id.clone();
    chat.approve_always_if(&id, "small", small).unwrap();
    let _ = chat.complete().await.unwrap();
    assert_eq!(
        chat.ask("Again").await.unwrap().text().as_deref(),
        Some("Two.")
    );
    // another process: the rule comes back without its closure, and covers nothing
    let state = chat.state().clone();
    let mut chat = Chat::from_state(model.clone(), state.clone()).unwrap();
    chat.with_tools(Charge).unwrap();
    assert!(chat.ask("Third").await.unwrap().is_paused());
    // registered again under its name, it covers the call
    let mut chat = Chat::from_state(model, state).unwrap();
    chat.with_tools(Charge).unwrap();
    chat.with_approval_predicate("small", small);
    assert_eq!(
        chat.ask("Third").await.unwrap().text().as_deref(),
        Some("Three.")
    );
}

#[tokio::test]
async fn approve_always_covers_the_tool_by_name_whatever_its_arguments() {
    let model = ScriptedProvider::new()
        .then_calls([
            ("charge", json!({"customer": "fa", "cents": 1})),
            ("charge", json!({"customer": "go", "cents": 2})),
        ])
        .then_text("Done.");
    let mut chat = Chat::new(model);
    chat.with_tools(Charge).unwrap();
    let _ = chat.ask("Charge both").await.unwrap();
    let id = chat.pending_approvals()[0].id.clone();
    chat.approve_always(&id).unwrap();
    assert!(
        chat.pending_approvals().is_empty(),
        "the round's other call is covered"
    );
    assert_eq!(
        chat.complete().await.unwrap().text().as_deref(),
        Some("Done.")
    );
}

#[tokio::test]
async fn the_resolver_approves_denies_or_asks_a_person() {
    let model = ScriptedProvider::new()
        .then_calls([
            ("charge", json!({"customer": "ok", "cents": 1})),
            ("charge", json!({"customer": "no", "cents": 2})),
            ("charge", json!({"customer": "ask", "cents": 3})),
        ])
        .then_text("Done.");
    let mut chat = Chat::new(model);
    chat.with_tools(Charge).unwrap();
    chat.with_approval_resolver(|call| async move {
        match args(&call.arguments)["customer"].as_str() {
            Some("ok") => Decision::Approve,
            Some("no") => Decision::Deny("blocked by policy 7".into()),
            _ => Decision::Ask,
        }
    });
    assert!(chat.ask("Charge all").await.unwrap().is_paused());
    assert_eq!(chat.messages()[2].text(), "charged ok 1");
    assert!(chat.messages()[3].is_error);
    assert!(chat.messages()[3].text().contains("blocked by policy 7"));
    let pending = chat.pending_approvals();
    assert_eq!(pending.len(), 1);
    let id = pending[0].id.clone();
    chat.approve(&id).unwrap();
    assert_eq!(
        chat.complete().await.unwrap().text().as_deref(),
        Some("Done.")
    );
}

#[tokio::test]
async fn a_failing_resolver_leaves_the_call_to_a_person() {
    let model = ScriptedProvider::new()
        .then_calls([
            ("charge", json!({"customer": "panic", "cents": 1})),
            ("charge", json!({"customer": "hang", "cents": 2})),
        ])
        .then_text("Done.");
    let mut chat = Chat::new(model);
    chat.with_tools(Charge).unwrap();
    chat.with_hook_timeout(Duration::from_millis(50));
    chat.with_approval_resolver(|call| async move {
        if call.arguments.contains("panic") {
            panic!("policy engine bug");
        }
        futures::future::pending::<Decision>().await
    });
    assert!(chat.ask("Charge").await.unwrap().is_paused());
    assert_eq!(chat.pending_approvals().len(), 2);
}

#[tokio::test]
async fn the_resolver_decides_again_when_a_hook_rewrites_an_approved_call() {
    let model = ScriptedProvider::new()
        .then_call("charge", json!({"customer": "hi", "cents": 10}))
        .then_text("Done.");
    let mut chat = Chat::new(model);
    chat.with_tools(Charge).unwrap();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&asked);
    chat.with_approval_resolver(move |call| {
        let cents = args(&call.arguments)["cents"].as_u64().unwrap();
        log.lock().unwrap().push(cents);
        async move {
            if cents <= 20 {
                Decision::Approve
            } else {
                Decision::Deny("too much".into())
            }
        }
    });
    chat.on_tool_call(|_| {
        ToolCallAction::Rewrite(json!({"customer": "hi", "cents": 500}).to_string())
    });
    let _ = chat.ask("Charge").await.unwrap();
    assert_eq!(*asked.lock().unwrap(), [10, 500]);
    assert!(chat.messages()[2].is_error);
    assert!(chat.messages()[2].text().contains("too much"));
}

#[tokio::test]
async fn a_hook_stop_ends_a_step_and_is_kept_in_the_state() {
    let model = ScriptedProvider::new()
        .then_call("echo", json!({"text": "stop"}))
        .then_text("Later.");
    let mut chat = Chat::new(model);
    chat.with_tools(Echo).unwrap();
    chat.on_tool_call(|_| ToolCallAction::Stop("halt".into()));
    chat.add_message(Message::user("Go")).unwrap();
    let step = chat.step().await.unwrap();
    assert!(
        matches!(&step, llm_tools_core::chat::Step::Stopped(StopReason::Hook { reason, .. }) if reason == "halt"),
        "{step:?}"
    );
    let state: ChatState =
        serde_json::from_str(&serde_json::to_string(chat.state()).unwrap()).unwrap();
    let chat = Chat::from_state(ScriptedProvider::new(), state).unwrap();
    assert!(matches!(chat.stopped(), Some(StopReason::Hook { .. })));
}

/// A vetoed call makes room for the next: with one worker (sequential), a veto of the first
/// call of a round still runs the second, and the turn goes on to the answer instead of
/// pausing with nothing pending.
#[tokio::test]
async fn a_vetoed_call_makes_room_for_the_next_one() {
    for concurrency in [
        llm_tools_core::chat::Concurrency::Sequential,
        llm_tools_core::chat::Concurrency::parallel(2),
    ] {
        let model = ScriptedProvider::new()
            .then_calls([
                ("echo", json!({"text": "no"})),
                ("echo", json!({"text": "no"})),
                ("echo", json!({"text": "yes"})),
            ])
            .then_text("Done.");
        let mut chat = Chat::new(model.clone());
        chat.with_tools(Echo).unwrap();
        chat.with_tool_options(
            llm_tools_core::chat::ToolOptions::default().with_concurrency(concurrency),
        )
        .unwrap();
        chat.on_tool_call(|call| {
            if call.arguments.contains("no") {
                ToolCallAction::Veto("Not this one.".into())
            } else {
                ToolCallAction::Run
            }
        });
        let outcome = chat.ask("Echo").await.unwrap();
        assert_eq!(outcome.text().as_deref(), Some("Done."), "{concurrency:?}");
        assert_eq!(chat.messages()[2].text(), "Not this one.");
        assert_eq!(chat.messages()[3].text(), "Not this one.");
        assert_eq!(chat.messages()[4].text(), "echo yes");
        results_follow_calls(chat.messages());
        assert!(!chat.is_paused());
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct RefundAmount {
    cents: u64,
}

fn large_refund(refund: &RefundAmount) -> bool {
    refund.cents > 1_000
}

static REFUNDS: Mutex<Vec<u64>> = Mutex::new(Vec::new());

/// Refunds a customer; large refunds need approval
#[tool(needs_approval = large_refund)]
async fn refund(customer: String, cents: u64) -> String {
    REFUNDS.lock().unwrap().push(cents);
    format!("refunded {customer} {cents}")
}

#[tokio::test]
async fn a_rewrite_into_arguments_the_tools_rule_gates_waits_for_approval() {
    let model = ScriptedProvider::new()
        .then_call("refund", json!({"customer": "bo", "cents": 500}))
        .then_text("Refunded.");
    let mut chat = Chat::new(model);
    chat.with_tools(Refund).unwrap();
    // the model's arguments need no approval; the hook's do
    chat.on_tool_call(|_| {
        ToolCallAction::Rewrite(json!({"customer": "bo", "cents": 900_000}).to_string())
    });
    let outcome = chat.ask("Refund Bo").await.unwrap();
    assert!(
        outcome.is_paused(),
        "the rewritten call waits for approval: {outcome:?}"
    );
    let pending = chat.pending_approvals();
    assert_eq!(pending.len(), 1);
    assert_eq!(args(&pending[0].arguments)["cents"], 900_000);
    assert!(!REFUNDS.lock().unwrap().contains(&900_000), "nothing ran");
    // the decision stays with the chat's state
    let state = chat.state().clone();
    let mut restored =
        Chat::from_state(ScriptedProvider::new().then_text("Refunded."), state).unwrap();
    restored.with_tools(Refund).unwrap();
    assert_eq!(restored.pending_approvals().len(), 1);
    let id = restored.pending_approvals()[0].id.clone();
    restored.deny(&id, "too large").unwrap();
    let _ = restored.complete().await.unwrap();
    assert!(!REFUNDS.lock().unwrap().contains(&900_000));
    assert!(restored.messages()[2].is_error);
}

/// A model that gives a new call the id of a call decided before: the new call gets an id of
/// its own, so a decision addressed to the old id (a late click) never reaches it.
#[tokio::test]
async fn a_later_call_given_a_decided_calls_id_gets_an_id_of_its_own() {
    use llm_tools_core::ToolCall;
    let model = ScriptedProvider::new()
        .then_tool_calls(vec![ToolCall::new(
            "x",
            "charge",
            r#"{"customer":"alice","cents":100}"#,
        )])
        .then_tool_calls(vec![ToolCall::new(
            "x",
            "charge",
            r#"{"customer":"mallory","cents":100000}"#,
        )])
        .then_text("Done.");
    let mut chat = Chat::new(model);
    chat.with_tools(Charge).unwrap();
    assert!(chat.ask("Charge Alice").await.unwrap().is_paused());
    chat.deny("x", "not now").unwrap();
    assert!(chat.complete().await.unwrap().is_paused());
    let pending = chat.pending_approvals();
    assert_eq!(pending.len(), 1);
    assert_ne!(pending[0].id, "x");
    assert!(pending[0].arguments.contains("mallory"));
    let late = chat.approve("x").unwrap_err();
    assert!(matches!(late, Error::NotWaiting { .. }), "{late}");
    assert_eq!(chat.pending_approvals().len(), 1, "still waiting");
}

/// The same, once compaction has summarised the decided call away: its id is remembered, so
/// a late decision addressed to it still reaches no later call the model gives that id.
#[tokio::test]
async fn a_call_given_the_id_of_a_call_compacted_away_gets_an_id_of_its_own() {
    use llm_tools_core::ToolCall;
    use llm_tools_core::chat::Compaction;
    let model = ScriptedProvider::new()
        .then_tool_calls(vec![ToolCall::new(
            "x",
            "charge",
            r#"{"customer":"alice","cents":100}"#,
        )])
        .then_text("Not charged.")
        .then_tool_calls(vec![ToolCall::new(
            "x",
            "charge",
            r#"{"customer":"mallory","cents":100000}"#,
        )])
        .then_text("Done.");
    let summariser = ScriptedProvider::new().then_text("Alice's charge was denied.");
    let mut chat = Chat::new(model);
    chat.with_tools(Charge).unwrap().with_compaction(
        Compaction::at_characters(10)
            .keep_recent_messages(1)
            .with_summariser(summariser),
    );
    assert!(chat.ask("Charge Alice").await.unwrap().is_paused());
    chat.deny("x", "not now").unwrap();
    assert_eq!(
        chat.complete().await.unwrap().text().as_deref(),
        Some("Not charged.")
    );
    assert!(chat.ask("Charge Mallory").await.unwrap().is_paused());
    assert!(
        chat.messages()
            .iter()
            .all(|m| m.tool_calls.iter().all(|c| !c.arguments.contains("alice"))),
        "the first call was summarised away"
    );
    let pending = chat.pending_approvals();
    assert_eq!(pending.len(), 1);
    assert_ne!(pending[0].id, "x");
    assert!(pending[0].arguments.contains("mallory"));
    let late = chat.approve("x").unwrap_err();
    assert!(matches!(late, Error::NotWaiting { .. }), "{late}");
    // The chat's state keeps the id: a chat restored from it gives the id out no more.
    let restored: ChatState =
        serde_json::from_value(serde_json::to_value(chat.state()).unwrap()).unwrap();
    assert!(
        serde_json::to_string(&restored)
            .unwrap()
            .contains(r#""retired_call_ids":["x"]"#)
    );
}

/// `deny_always` covers every later call of the tool, those its own rule lets through
/// included: the model cannot split a denied refund into amounts under the threshold.
#[tokio::test]
async fn deny_always_covers_calls_the_tools_own_rule_lets_through() {
    let model = ScriptedProvider::new()
        .then_call("refund", json!({"customer": "cy", "cents": 5_001}))
        .then_text("Not refunded.")
        .then_calls([
            ("refund", json!({"customer": "cy", "cents": 999})),
            ("refund", json!({"customer": "cy", "cents": 998})),
        ])
        .then_text("Done.");
    let mut chat = Chat::new(model);
    chat.with_tools(Refund).unwrap();
    assert!(chat.ask("Refund Cy").await.unwrap().is_paused());
    let id = chat.pending_approvals()[0].id.clone();
    chat.deny_always(&id, "no refunds for Cy").unwrap();
    let _ = chat.complete().await.unwrap();
    let outcome = chat.ask("Then refund less").await.unwrap();
    assert_eq!(outcome.text().as_deref(), Some("Done."));
    let refunds = REFUNDS.lock().unwrap().clone();
    for cents in [5_001, 999, 998] {
        assert!(
            !refunds.contains(&cents),
            "{cents} was refunded: {refunds:?}"
        );
    }
    let results: Vec<&Message> = chat
        .messages()
        .iter()
        .filter(|m| m.role == Role::Tool)
        .collect();
    assert_eq!(results.len(), 3);
    assert!(
        results
            .iter()
            .all(|m| m.is_error && m.text().contains("no refunds for Cy"))
    );
    results_follow_calls(chat.messages());
}

/// A state written where the call's tool was not registered (or did not need approval): a
/// call of `charge` whose entry is ready and not marked as needing approval, and its id. The
/// tool registered now needs it.
async fn unmarked_charge(customer: &str, cents: u64) -> (ChatState, String) {
    let model = ScriptedProvider::new()
        .then_call("charge", json!({"customer": customer, "cents": cents}))
        .then_text("Charged.");
    let mut chat = Chat::new(model);
    chat.with_tools(Charge).unwrap();
    assert!(chat.ask("Charge").await.unwrap().is_paused());
    let mut state = serde_json::to_value(chat.state()).unwrap();
    let entry = &mut state["round"]["calls"][0];
    let id = entry["id"].as_str().unwrap().to_owned();
    *entry = json!({"id": id, "state": {"state": "ready"}});
    (serde_json::from_value(state).unwrap(), id)
}

#[tokio::test]
async fn a_ready_call_whose_entry_says_no_approval_is_asked_about_if_its_tool_needs_it() {
    let (state, id) = unmarked_charge("cy", 700).await;

    let mut later = Chat::from_state(ScriptedProvider::new().then_text("Charged."), state).unwrap();
    later.with_tools(Charge).unwrap();
    let outcome = later.complete().await.unwrap();
    assert!(outcome.is_paused(), "the call waits: {outcome:?}");
    assert_eq!(later.pending_approvals().len(), 1);
    assert!(!CHARGES.lock().unwrap().iter().any(|c| c.starts_with("cy:")));
    later.approve(&id).unwrap();
    let outcome = later.complete().await.unwrap();
    assert_eq!(outcome.text().as_deref(), Some("Charged."));
    assert!(CHARGES.lock().unwrap().contains(&"cy:700".to_owned()));
}

#[tokio::test]
async fn the_resolver_decides_a_call_that_needs_approval_only_now() {
    let (state, _) = unmarked_charge("di", 300).await;

    let mut later = Chat::from_state(ScriptedProvider::new().then_text("Charged."), state).unwrap();
    later.with_tools(Charge).unwrap();
    let asked = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&asked);
    later.with_approval_resolver(move |_| {
        count.fetch_add(1, Ordering::SeqCst);
        async { Decision::Approve }
    });
    let outcome = later.complete().await.unwrap();
    assert_eq!(outcome.text().as_deref(), Some("Charged."), "{outcome:?}");
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    assert!(CHARGES.lock().unwrap().contains(&"di:300".to_owned()));
}

#[tokio::test]
async fn each_approval_starts_the_models_rounds_in_a_row_afresh() {
    use llm_tools_core::chat::ToolOptions;
    // A budget of one round: the model asks for a charge each time, a person approves each.
    let model = ScriptedProvider::new()
        .then_call("charge", json!({"customer": "ed", "cents": 1}))
        .then_call("charge", json!({"customer": "ed", "cents": 2}))
        .then_text("Charged twice.");
    let mut chat = Chat::new(model);
    chat.with_tools(Charge)
        .unwrap()
        .with_tool_options(ToolOptions::default().with_rounds(1))
        .unwrap();
    assert!(chat.ask("Charge Ed twice").await.unwrap().is_paused());
    for _ in 0..2 {
        let id = chat.pending_approvals()[0].id.clone();
        chat.approve(&id).unwrap();
        let outcome = chat.complete().await.unwrap();
        if let Some(text) = outcome.text() {
            assert_eq!(text, "Charged twice.");
            return;
        }
        assert!(outcome.is_paused(), "{outcome:?}");
    }
    panic!("the chat did not finish");
}

/// Takes 400 ms of the runtime's clock, within a limit of 500 ms
#[tool(max_run_time = "500ms")]
async fn slow_job() -> String {
    tokio::time::sleep(Duration::from_millis(400)).await;
    "done".into()
}

/// A run's limit counts from its claim, as the claim's lease does: a hook that took 300 ms
/// leaves the tool 200 ms, and the run ends by the lease (before, the limit counted from the
/// tool's start, so the run outlived its lease by what the hooks took, and another turn could
/// take the call and run it again while it ran).
#[tokio::test(start_paused = true)]
async fn a_run_ends_by_its_claims_lease_whatever_the_hooks_took() {
    let model = ScriptedProvider::new()
        .then_call("slow_job", json!({}))
        .then_text("It took too long.");
    let mut chat = Chat::new(model);
    chat.with_tools(SlowJob).unwrap();
    chat.on_tool_call_async(|_| async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        ToolCallAction::Run
    });
    let outcome = chat.ask("Run the job").await.unwrap();
    assert!(matches!(outcome, Outcome::Done(_)), "{outcome:?}");
    let result = &chat.messages()[2];
    assert!(result.is_error, "{result:?}");
    assert!(result.text().contains("500ms"), "{}", result.text());
}
