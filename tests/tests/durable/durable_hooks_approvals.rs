//! Hooks and approvals in a durable chat on a real SQLite file: a hook's rewrite is written
//! with the call inside its claim before the tool runs, and an approval is bound to the
//! arguments approved across saves and loads (a rewrite after the approval asks again).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, OnceLock};

use llm_tools_core::chat::{Chat, ToolCallAction};
use llm_tools_core::store::{SqliteStore, Store};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{Message, tool};
use serde_json::{Value, json};

static STORE: OnceLock<Arc<dyn Store>> = OnceLock::new();

fn cents_of(arguments: &str) -> u64 {
    serde_json::from_str::<Value>(arguments).unwrap()["cents"]
        .as_u64()
        .unwrap()
}

/// Charges a card
#[tool(needs_approval)]
async fn charge_card(cents: u64) -> String {
    // What the store holds while the call runs: its claim, and the arguments it runs with.
    let record = STORE.get().unwrap().load_chat("hooks").await.unwrap();
    let stored: Message = serde_json::from_str(&record.messages[1]).unwrap();
    format!(
        "{} {} {cents}",
        record.calls[0].state,
        cents_of(&stored.tool_calls[0].arguments)
    )
}

/// The hook a later process sets: it caps every charge at 250 cents.
fn cap(chat: &mut Chat) {
    chat.on_tool_call_async(|call| async move {
        let cents = cents_of(&call.arguments).min(250);
        ToolCallAction::Rewrite(json!({ "cents": cents }).to_string())
    });
}

#[tokio::test]
async fn a_rewrite_is_stored_inside_the_claim_and_an_approval_binds_its_arguments() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store: Arc<dyn Store> = Arc::new(
        SqliteStore::open(dir.path().join("chats.db"))
            .await
            .expect("opens"),
    );
    STORE.set(Arc::clone(&store)).ok().expect("set once");
    let model = ScriptedProvider::new()
        .then_call("charge_card", json!({"cents": 1000}))
        .then_text("Charged.");

    // A person approves the model's 1000 cents.
    let mut chat = Chat::create(Arc::clone(&store), "hooks", model.clone())
        .await
        .expect("created");
    chat.with_tools(ChargeCard).expect("tools");
    assert!(chat.ask("Charge the card").await.expect("asks").is_paused());
    let id = chat.pending_approvals()[0].id.clone();
    chat.approve(&id).expect("approves");
    chat.save().await.expect("saved");
    let record = store.load_chat("hooks").await.expect("loads");
    assert!(
        record.calls[0]
            .body
            .contains(r#""approved":"{\"cents\":1000}""#),
        "{}",
        record.calls[0].body
    );
    drop(chat);

    // Another process carries on with a hook that rewrites the call: the approval was for
    // 1000 cents, so 250 needs approval again; nothing ran, and the store holds the rewrite.
    let mut chat = Chat::load(Arc::clone(&store), "hooks", model.clone())
        .await
        .expect("loads");
    chat.with_tools(ChargeCard).expect("tools");
    cap(&mut chat);
    assert!(chat.complete().await.expect("completes").is_paused());
    drop(chat);
    let record = store.load_chat("hooks").await.expect("loads");
    assert_eq!(record.calls[0].state, "awaiting_approval");
    assert_eq!(record.calls[0].attempt, 1, "the hook ran inside a claim");
    let stored: Message = serde_json::from_str(&record.messages[1]).expect("a message");
    assert_eq!(cents_of(&stored.tool_calls[0].arguments), 250);

    // A third process: the person sees and approves the 250 cents.
    let mut chat = Chat::load(Arc::clone(&store), "hooks", model.clone())
        .await
        .expect("loads");
    chat.with_tools(ChargeCard).expect("tools");
    assert_eq!(cents_of(&chat.pending_approvals()[0].arguments), 250);
    chat.approve(&id).expect("approves");
    chat.save().await.expect("saved");
    drop(chat);

    // A fourth: the hook's rewrite gives what was approved, so the call runs, and while it
    // runs the store holds its claim and the rewritten arguments.
    let mut chat = Chat::load(Arc::clone(&store), "hooks", model.clone())
        .await
        .expect("loads");
    chat.with_tools(ChargeCard).expect("tools");
    cap(&mut chat);
    let outcome = chat.complete().await.expect("completes");
    assert_eq!(outcome.text().as_deref(), Some("Charged."));
    assert_eq!(chat.messages()[2].text(), "running 250 250");
    assert_eq!(model.request_count(), 2);
}
