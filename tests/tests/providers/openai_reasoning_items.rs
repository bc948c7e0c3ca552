//! Reasoning items sent back on Responses. OpenAI's API reference has the `reasoning` input
//! item with `id` required and `encrypted_content` optional, and says the `include` value
//! `reasoning.encrypted_content` is what lets reasoning items be used statelessly (`store`
//! false); with an id and `store: false`, the server looks for a stored item and answers 404
//! "Item with id 'rs_…' not found. Items are not persisted when `store` is set to false".
//!
//! - `store: false`: each item goes back with its encrypted content and without its id, as the
//!   recorded OpenAI traffic here sends it (and as xAI accepts it); an item without encrypted
//!   content goes only where it carries reasoning text.
//! - `store: true`: each item goes back by its `id`, and the message and calls after it with
//!   their item ids, so the server finds the stored items in order.
//! - An answer of several `message` items (commentary between searches, then the final
//!   answer) goes back item by item, each message at its place with its own text, its
//!   `phase` (which OpenAI asks to be sent back on every assistant message) and, stored, its
//!   id: a reasoning item is always followed by the item that followed it.
//!
//! All through the real HTTP client and a loopback replay server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::path::PathBuf;

use llm_tools_core::chat::Chat;
use llm_tools_core::{Message, Part, ProviderData, ProviderTool, WebSearch};
use llm_tools_providers::http::RetryPolicy;
use llm_tools_providers::openai::{OpenAiConfig, OpenAiResponses};
use llm_tools_providers::record::{Interaction, RecordedRequest, RecordedResponse, Recording};
use llm_tools_providers::replay::ReplayServer;
use llm_tools_tests::{fixtures, recorded_provider};
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

/// The second request of a recording replayed through the chat loop with the recording's
/// tools.
async fn replayed_second_request(path: &str, tools: &[&str]) -> (Value, Value) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path);
    let recording = Recording::load(path).unwrap();
    let server = ReplayServer::start(recording.clone()).await.unwrap();
    let mut chat = Chat::new(recorded_provider::for_recording(&recording, &server).unwrap());
    let names: Vec<String> = tools.iter().map(|t| (*t).to_owned()).collect();
    chat.with_tools(fixtures::tools_named(&names)).unwrap();
    if tools.is_empty() {
        chat.with_provider_tool(ProviderTool::WebSearch(WebSearch::default()));
        for turn in &recording.interactions {
            let outcome = chat.ask(last_user_text(&turn.request.body)).await.unwrap();
            assert!(outcome.text().is_some());
        }
    } else {
        let outcome = chat
            .ask(last_user_text(&recording.interactions[0].request.body))
            .await
            .unwrap();
        assert!(outcome.text().is_some());
    }
    let sent = server.received()[1].body.clone();
    (sent, recording.interactions[1].request.body.clone())
}

#[tokio::test]
async fn without_store_reasoning_goes_back_as_the_recorded_openai_traffic_sends_it() {
    let (sent, recorded) = replayed_second_request(
        "fixtures/recorded/openai-responses/chat_function_calling_openai_gpt-5-nano_can_use_tools.json",
        &["weather"],
    )
    .await;
    assert_eq!(sent["store"], false);
    assert_eq!(sent["include"], json!(["reasoning.encrypted_content"]));
    let ours = reasoning_items(&sent["input"]);
    assert_eq!(ours.len(), 1);
    assert_eq!(ours, reasoning_items(&recorded["input"]));
    // The call goes without an item id, as recorded.
    let call = sent["input"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "function_call")
        .unwrap();
    assert!(call.get("id").is_none(), "{call}");
}

#[tokio::test]
async fn without_store_xai_reasoning_goes_back_with_its_encrypted_content_and_no_id() {
    let (sent, recorded) = replayed_second_request(
        "fixtures/recorded/provider-tools/chat_web_search_with_xai_grok-4_3_replays_search_turns_so_the_conversation_can_continue.json",
        &[],
    )
    .await;
    assert_eq!(sent["store"], false);
    let ours = reasoning_items(&sent["input"]);
    let recorded = reasoning_items(&recorded["input"]);
    assert_eq!(ours.len(), 4);
    assert_eq!(ours.len(), recorded.len());
    for (ours, recorded) in ours.iter().zip(&recorded) {
        assert!(ours.get("id").is_none(), "{ours}");
        assert!(ours["encrypted_content"].is_string());
        for key in ["encrypted_content", "summary"] {
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

/// Two turns against a loopback server answering `first` (whose text is `Answer.`) then a
/// plain answer; the second request's body.
async fn second_request(store: bool, first: Value) -> Value {
    let (messages, sent) = two_turns(store, first).await;
    assert_eq!(
        messages.last().map(Message::text).as_deref(),
        Some("Answer.")
    );
    sent
}

#[tokio::test]
async fn without_store_ids_stay_home_and_an_item_without_encrypted_content_needs_text() {
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
            json!({"type": "reasoning", "summary": [], "encrypted_content": "gAAAA-1"}),
            json!({"type": "reasoning", "summary": [],
                   "content": [{"type": "reasoning_text", "text": "Thinking."}]}),
        ]
    );
}

#[tokio::test]
async fn with_store_reasoning_and_the_items_after_it_go_back_by_their_ids() {
    // Stored: the answers have no encrypted content (none is asked for), only item ids.
    let first = json!([
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "id": "fc_1", "call_id": "call_1",
         "name": "best_language_to_learn", "arguments": "{}", "status": "completed"}
    ]);
    let second = json!([
        {"type": "reasoning", "id": "rs_2", "summary": [
            {"type": "summary_text", "text": "The tool said Ruby."}]},
        {"type": "message", "id": "msg_2", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": "Ruby.", "annotations": []}]}
    ]);
    let interactions = [
        answer(first),
        answer(second),
        answer(json!([message("OK.")])),
    ]
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
            .with_store(true)
            .with_retry(RetryPolicy::none()),
    )
    .unwrap();
    let mut chat = Chat::new(provider);
    chat.with_tools(fixtures::tools_named(
        &["best_language_to_learn".to_owned()],
    ))
    .unwrap();
    let answer = chat.ask("What should I learn?").await.unwrap();
    assert_eq!(answer.text().as_deref(), Some("Ruby."));
    let ok = chat.ask("Say OK.").await.unwrap();
    assert_eq!(ok.text().as_deref(), Some("OK."));

    let received = server.received();
    for r in &received {
        assert_eq!(r.body["store"], true);
        assert!(r.body.get("include").is_none(), "{}", r.body);
    }
    // The tool round: the reasoning by its id, then the call with its item id.
    let input = received[1].body["input"].as_array().unwrap();
    let kinds: Vec<&str> = input.iter().filter_map(|i| i["type"].as_str()).collect();
    assert_eq!(
        kinds,
        ["reasoning", "function_call", "function_call_output"]
    );
    assert_eq!(
        input[1],
        json!({"type": "reasoning", "id": "rs_1", "summary": []})
    );
    assert_eq!(input[2]["id"], "fc_1");
    assert_eq!(input[2]["call_id"], "call_1");
    // The next turn: both answers' items by their ids, the message as its stored item.
    let input = received[2].body["input"].as_array().unwrap();
    let items: Vec<(&str, &str)> = input
        .iter()
        .filter_map(|i| Some((i["type"].as_str()?, i["id"].as_str()?)))
        .collect();
    assert_eq!(
        items,
        [
            ("reasoning", "rs_1"),
            ("function_call", "fc_1"),
            ("reasoning", "rs_2"),
            ("message", "msg_2")
        ]
    );
    let stored = input.iter().find(|i| i["id"] == "msg_2").unwrap();
    assert_eq!(
        stored,
        &json!({"type": "message", "id": "msg_2", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": "Ruby."}]})
    );
}

/// Two turns against a loopback server answering `first` then a plain answer: the chat's
/// messages after the first turn and the second request's body.
async fn two_turns(store: bool, first: Value) -> (Vec<Message>, Value) {
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
    let first = chat.ask("Search, then answer.").await.unwrap();
    assert!(first.text().is_some(), "{first:?}");
    let after_first = chat.messages().to_vec();
    let ok = chat.ask("Say OK.").await.unwrap();
    assert_eq!(ok.text().as_deref(), Some("OK."));
    (after_first, server.received()[1].body.clone())
}

/// Commentary, a search, more reasoning and the final answer: the shape of the recorded
/// DeepSeek web-search answer (`chat_web_search_with_deepseek_…`), cut short.
fn searched_answer() -> Value {
    json!([
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA-1"},
        {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
         "phase": "commentary",
         "content": [{"type": "output_text", "text": "Let me check.", "annotations": []}]},
        {"type": "web_search_call", "id": "ws_1", "status": "completed",
         "action": {"type": "search", "query": "ruby"}},
        {"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "gAAAA-2"},
        {"type": "message", "id": "msg_2", "role": "assistant", "status": "completed",
         "phase": "final_answer",
         "content": [{"type": "output_text", "text": "Ruby 4.0.6.", "annotations": []}]}
    ])
}

/// The assistant items of a request's input, as (type, id, phase, text).
fn assistant_items(input: &Value) -> Vec<(String, String, String, String)> {
    let field = |i: &Value, k: &str| i[k].as_str().unwrap_or_default().to_owned();
    input
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["role"] != "user")
        .map(|i| {
            let text = i["content"]
                .as_array()
                .map(|parts| parts.iter().filter_map(|p| p["text"].as_str()).collect())
                .unwrap_or_default();
            let kind = if i["type"].is_null() {
                "message".to_owned()
            } else {
                field(i, "type")
            };
            (kind, field(i, "id"), field(i, "phase"), text)
        })
        .collect()
}

fn item(kind: &str, id: &str, phase: &str, text: &str) -> (String, String, String, String) {
    (
        kind.to_owned(),
        id.to_owned(),
        phase.to_owned(),
        text.to_owned(),
    )
}

#[tokio::test]
async fn several_messages_each_become_a_text_part_and_read_as_one_text() {
    let (messages, _) = two_turns(false, searched_answer()).await;
    let answer = messages.last().unwrap();
    // Joined as OpenAI's SDKs join `output_text`.
    assert_eq!(answer.text(), "Let me check.Ruby 4.0.6.");
    let texts: Vec<&str> = answer.content.iter().filter_map(Part::as_text).collect();
    assert_eq!(texts, ["Let me check.", "Ruby 4.0.6."]);
}

#[tokio::test]
async fn with_store_each_message_goes_back_at_its_place_by_its_id_with_its_phase() {
    let (_, sent) = two_turns(true, searched_answer()).await;
    assert_eq!(
        assistant_items(&sent["input"]),
        [
            item("reasoning", "rs_1", "", ""),
            item("message", "msg_1", "commentary", "Let me check."),
            item("web_search_call", "ws_1", "", ""),
            item("reasoning", "rs_2", "", ""),
            item("message", "msg_2", "final_answer", "Ruby 4.0.6."),
        ]
    );
    let input = sent["input"].as_array().unwrap();
    assert_eq!(
        input.iter().find(|i| i["id"] == "msg_2").unwrap(),
        &json!({"type": "message", "id": "msg_2", "role": "assistant", "status": "completed",
            "phase": "final_answer", "content": [{"type": "output_text", "text": "Ruby 4.0.6."}]})
    );
}

#[tokio::test]
async fn without_store_each_message_goes_back_at_its_place_with_its_phase_and_no_id() {
    let (_, sent) = two_turns(false, searched_answer()).await;
    assert_eq!(
        assistant_items(&sent["input"]),
        [
            item("reasoning", "", "", ""),
            item("message", "", "commentary", "Let me check."),
            item("web_search_call", "ws_1", "", ""),
            item("reasoning", "", "", ""),
            item("message", "", "final_answer", "Ruby 4.0.6."),
        ]
    );
}

#[tokio::test]
async fn a_message_item_without_text_holds_its_place_by_reference_when_stored() {
    let first = json!([
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA-1"},
        {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
         "content": []},
        {"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "gAAAA-2"},
        {"type": "message", "id": "msg_2", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": "Done.", "annotations": []}]}
    ]);
    // Stored, the item without text goes back by reference, so `rs_1` keeps the item that
    // followed it; unstored, it has nothing to send.
    let (_, sent) = two_turns(true, first.clone()).await;
    assert_eq!(
        assistant_items(&sent["input"]),
        [
            item("reasoning", "rs_1", "", ""),
            item("item_reference", "msg_1", "", ""),
            item("reasoning", "rs_2", "", ""),
            item("message", "msg_2", "", "Done."),
        ]
    );
    let (_, sent) = two_turns(false, first).await;
    assert_eq!(
        assistant_items(&sent["input"]),
        [
            item("reasoning", "", "", ""),
            item("reasoning", "", "", ""),
            item("message", "", "", "Done."),
        ]
    );
}

#[tokio::test]
async fn a_message_kept_with_its_text_in_one_part_sends_it_with_the_first_message_item() {
    // How an answer of several message items was kept before each had its own text part
    // (a durable chat's stored message, say): all the text in one part.
    let mut kept = Message::assistant("Let me check.Ruby 4.0.6.");
    kept.provider_data = Some(ProviderData::new(
        "openai-responses",
        json!({"output": [
            {"type": "reasoning", "summary": [], "encrypted_content": "gAAAA-1"},
            {"type": "message", "id": "msg_1"},
            {"type": "reasoning", "summary": [], "encrypted_content": "gAAAA-2"},
            {"type": "message", "id": "msg_2"}
        ]}),
    ));
    let server = ReplayServer::with_interactions(vec![Interaction::new(
        RecordedRequest::post("https://api.openai.com/v1/responses", json!({})),
        RecordedResponse::json(200, answer(json!([message("OK.")]))),
    )])
    .await
    .unwrap();
    let provider = OpenAiResponses::new(
        OpenAiConfig::openai("gpt-5.4")
            .with_base_url(server.url())
            .with_api_key("k")
            .with_retry(RetryPolicy::none()),
    )
    .unwrap();
    let mut chat = Chat::new(provider);
    chat.add_message(Message::user("Search, then answer."))
        .unwrap();
    chat.add_message(kept).unwrap();
    let ok = chat.ask("Say OK.").await.unwrap();
    assert_eq!(ok.text().as_deref(), Some("OK."));
    assert_eq!(
        assistant_items(&server.received()[0].body["input"]),
        [
            item("reasoning", "", "", ""),
            item("message", "", "", "Let me check.Ruby 4.0.6."),
            item("reasoning", "", "", ""),
        ]
    );
}
