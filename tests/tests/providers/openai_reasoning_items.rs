//! Reasoning items sent back on Responses, per OpenAI's API reference: the `reasoning` input
//! item has `id` required and `encrypted_content` optional, and the `include` value
//! `reasoning.encrypted_content` is what lets reasoning items be used when `store` is false.
//!
//! - `store: false`: each item goes back with its `id` and its `encrypted_content` (replayed
//!   from the recorded xAI search turn, whose second request, sent that way, was accepted); an
//!   item without encrypted content names nothing stored, so it goes without its id when it
//!   carries reasoning text, and is left out otherwise.
//! - `store: true`: each item goes back with its `id` (the server resolves the stored item; no
//!   encrypted content is asked for), from the reference's answer format.
//!
//! All through the real HTTP client and a loopback replay server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::path::PathBuf;

use llm_tools_core::chat::Chat;
use llm_tools_core::{ProviderTool, WebSearch};
use llm_tools_providers::http::RetryPolicy;
use llm_tools_providers::openai::{OpenAiConfig, OpenAiResponses};
use llm_tools_providers::record::{Interaction, RecordedRequest, RecordedResponse, Recording};
use llm_tools_providers::replay::ReplayServer;
use llm_tools_tests::recorded_provider;
use serde_json::{Value, json};

fn reasoning_items(input: &Value) -> Vec<Value> {
    input
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "reasoning")
        .cloned()
        .collect()
}

fn last_user_text(body: &Value) -> String {
    let input = body["input"].as_array().unwrap();
    let user = input.iter().rev().find(|i| i["role"] == "user").unwrap();
    match &user["content"] {
        Value::String(s) => s.clone(),
        parts => parts[0]["text"].as_str().unwrap().to_owned(),
    }
}

#[tokio::test]
async fn without_store_reasoning_goes_back_with_its_id_and_encrypted_content() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
        "fixtures/recorded/provider-tools/chat_web_search_with_xai_grok-4_3_replays_search_turns_so_the_conversation_can_continue.json",
    );
    let recording = Recording::load(path).unwrap();
    let server = ReplayServer::start(recording.clone()).await.unwrap();
    let mut chat = Chat::new(recorded_provider::for_recording(&recording, &server).unwrap());
    chat.with_provider_tool(ProviderTool::WebSearch(WebSearch::default()));
    for turn in &recording.interactions {
        chat.ask(last_user_text(&turn.request.body)).await.unwrap();
    }
    let sent = &server.received()[1].body;
    assert_eq!(sent["store"], false);
    assert_eq!(sent["include"], json!(["reasoning.encrypted_content"]));
    let ours = reasoning_items(&sent["input"]);
    let recorded = reasoning_items(&recording.interactions[1].request.body["input"]);
    assert_eq!(ours.len(), 4);
    assert_eq!(ours.len(), recorded.len());
    for (ours, recorded) in ours.iter().zip(&recorded) {
        assert!(ours["id"].as_str().is_some_and(|id| !id.is_empty()));
        assert!(ours["encrypted_content"].is_string());
        for key in ["id", "encrypted_content", "summary"] {
            assert_eq!(ours[key], recorded[key], "{key}");
        }
    }
}

fn answer(output: Value) -> String {
    json!({"id": "resp_1", "object": "response", "status": "completed", "model": "gpt-5.4",
        "output": output, "usage": {"input_tokens": 10, "output_tokens": 5}})
    .to_string()
}

fn message(text: &str) -> Value {
    json!({"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}]})
}

/// Two turns against a loopback server answering `first` then a plain answer; the second
/// request's body.
async fn second_request(store: bool, first: Value) -> Value {
    let interactions = [answer(first), answer(json!([message("OK.")]))]
        .into_iter()
        .map(|body| {
            Interaction::new(
                RecordedRequest::post("https://api.openai.com/v1/responses", json!({})),
                RecordedResponse::json(200, body),
            )
        })
        .collect();
    let server = ReplayServer::with_interactions(interactions).await.unwrap();
    let provider = OpenAiResponses::new(
        OpenAiConfig::openai("gpt-5.4")
            .with_base_url(server.url())
            .with_api_key("k")
            .with_store(store)
            .with_retry(RetryPolicy::none()),
    )
    .unwrap();
    let mut chat = Chat::new(provider);
    chat.ask("Think, then answer.").await.unwrap();
    chat.ask("Say OK.").await.unwrap();
    server.received()[1].body.clone()
}

#[tokio::test]
async fn without_store_an_item_without_encrypted_content_loses_its_id_or_is_left_out() {
    let first = json!([
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA-1"},
        // Reasoning text without encrypted content (DeepSeek's form): its id names nothing.
        {"type": "reasoning", "id": "rs_2", "summary": [],
         "content": [{"type": "reasoning_text", "text": "Thinking."}]},
        // Neither: nothing to send but an id the server cannot resolve.
        {"type": "reasoning", "id": "rs_3", "summary": []},
        message("Answer.")
    ]);
    let sent = second_request(false, first).await;
    assert_eq!(sent["store"], false);
    assert_eq!(
        reasoning_items(&sent["input"]),
        vec![
            json!({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA-1"}),
            json!({"type": "reasoning", "summary": [],
                   "content": [{"type": "reasoning_text", "text": "Thinking."}]}),
        ]
    );
}

#[tokio::test]
async fn with_store_reasoning_goes_back_by_its_id() {
    // Stored: the answer has no encrypted content (none is asked for), only the item's id.
    let first = json!([
        {"type": "reasoning", "id": "rs_stored", "summary": [
            {"type": "summary_text", "text": "Planning the answer."}]},
        message("Answer.")
    ]);
    let sent = second_request(true, first).await;
    assert_eq!(sent["store"], true);
    assert!(sent.get("include").is_none(), "{sent}");
    assert_eq!(
        reasoning_items(&sent["input"]),
        vec![json!({"type": "reasoning", "id": "rs_stored", "summary": [
            {"type": "summary_text", "text": "Planning the answer."}]})]
    );
    // And in its place: after the user's question, before the answer's text.
    let input = sent["input"].as_array().unwrap();
    let at = input.iter().position(|i| i["type"] == "reasoning").unwrap();
    assert_eq!(input[at - 1]["role"], "user");
    assert_eq!(input[at + 1]["role"], "assistant");
}
