//! Anthropic web search citations go back with the text they cite. Anthropic requires each
//! web search citation's `encrypted_index` back in later turns, and its multi-turn example sends
//! the assistant's content back unchanged; here the recorded search turn
//! (`tests/fixtures/recorded/provider-tools/chat_web_search_with_anthropic_…_replays_search_turns…`)
//! is replayed from the loopback server through the real HTTP client and the chat loop, whole
//! and as the event stream of the same answer, and the second request must carry the first
//! answer's blocks (search blocks and cited text blocks) exactly as the provider sent them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::path::PathBuf;

use futures::StreamExt as _;
use llm_tools_core::chat::{Chat, ChatEvent, ChatState};
use llm_tools_core::{Message, ProviderTool, WebSearch};
use llm_tools_providers::record::{RecordedResponse, Recording};
use llm_tools_providers::replay::ReplayServer;
use llm_tools_tests::recorded_provider;
use serde_json::{Value, json};

fn recording() -> Recording {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
        "fixtures/recorded/provider-tools/chat_web_search_with_anthropic_claude-haiku-4-5_replays_search_turns_so_the_conversation_can_continue.json",
    );
    Recording::load(path).unwrap()
}

/// The recorded first answer's content blocks.
fn recorded_blocks(recording: &Recording) -> Vec<Value> {
    let answer: Value = serde_json::from_str(&recording.interactions[0].response.body).unwrap();
    answer["content"].as_array().unwrap().clone()
}

/// The citations of the recorded text blocks, in order.
fn recorded_citations(blocks: &[Value]) -> Vec<Value> {
    blocks
        .iter()
        .filter(|b| b["type"] == "text")
        .flat_map(|b| b["citations"].as_array().cloned().unwrap_or_default())
        .collect()
}

fn event(data: Value) -> String {
    format!(
        "event: {}\ndata: {data}\n\n",
        data["type"].as_str().unwrap()
    )
}

/// A whole Messages answer as the event stream Anthropic sends for it: text blocks start empty
/// and get their citations as `citations_delta` events and their text as `text_delta`s,
/// `server_tool_use` inputs come as `input_json_delta` fragments, result blocks whole.
fn as_stream(answer: &Value) -> String {
    let mut start = answer.clone();
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    let mut out = event(json!({"type": "message_start", "message": start}));
    for (index, block) in answer["content"].as_array().unwrap().iter().enumerate() {
        match block["type"].as_str().unwrap() {
            "text" => {
                out += &event(json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "text", "text": ""}}));
                for citation in block["citations"].as_array().into_iter().flatten() {
                    out += &event(json!({"type": "content_block_delta", "index": index,
                        "delta": {"type": "citations_delta", "citation": citation}}));
                }
                let text = block["text"].as_str().unwrap();
                let half = text
                    .char_indices()
                    .nth(text.chars().count() / 2)
                    .map_or(0, |(i, _)| i);
                for piece in [&text[..half], &text[half..]] {
                    out += &event(json!({"type": "content_block_delta", "index": index,
                        "delta": {"type": "text_delta", "text": piece}}));
                }
            }
            "server_tool_use" => {
                let mut opened = block.clone();
                opened["input"] = json!({});
                out += &event(json!({"type": "content_block_start", "index": index,
                    "content_block": opened}));
                out += &event(json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": block["input"].to_string()}}));
            }
            _ => {
                out += &event(json!({"type": "content_block_start", "index": index,
                    "content_block": block}));
            }
        }
        out += &event(json!({"type": "content_block_stop", "index": index}));
    }
    out += &event(json!({"type": "message_delta",
        "delta": {"stop_reason": answer["stop_reason"], "stop_sequence": null},
        "usage": answer["usage"]}));
    out + &event(json!({"type": "message_stop"}))
}

/// Replays the two turns (the first streamed or not) and returns the first answer and the
/// second request's body.
async fn two_turns(streamed: bool) -> (Message, Value, Recording) {
    let mut recording = recording();
    let original = recording.clone();
    if streamed {
        let answer: Value = serde_json::from_str(&recording.interactions[0].response.body).unwrap();
        recording.interactions[0].response = RecordedResponse::sse(as_stream(&answer));
    }
    let server = ReplayServer::start(recording.clone()).await.unwrap();
    let mut chat = Chat::new(recorded_provider::for_recording(&recording, &server).unwrap());
    chat.with_provider_tool(ProviderTool::WebSearch(WebSearch::default()));
    let ask = |i: usize| {
        let body = &recording.interactions[i].request.body;
        let messages = body["messages"].as_array().unwrap();
        messages.last().unwrap()["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let first = if streamed {
        let mut stream = chat.ask_stream(ask(0));
        let mut done = None;
        while let Some(e) = stream.next().await {
            if let ChatEvent::Done(m) = e.unwrap() {
                done = Some(m);
            }
        }
        done.expect("the stream ends with the answer")
    } else {
        chat.ask(ask(0)).await.unwrap().into_message().unwrap()
    };
    // The chat is saved and loaded between the turns: the citations survive it.
    let saved = serde_json::to_string(chat.state()).unwrap();
    let state: ChatState = serde_json::from_str(&saved).unwrap();
    let mut chat = Chat::from_state(
        recorded_provider::for_recording(&recording, &server).unwrap(),
        state,
    )
    .unwrap();
    let second = chat.ask(ask(1)).await.unwrap();
    assert_eq!(second.text().as_deref(), Some("OK."));
    let received = server.received();
    assert_eq!(received.len(), 2);
    assert_eq!(received[0].body["stream"], streamed);
    (first, received[1].body.clone(), original)
}

fn check(first: &Message, second_request: &Value, recording: &Recording) {
    let blocks = recorded_blocks(recording);
    let cited = recorded_citations(&blocks);
    assert_eq!(cited.len(), 2, "the recording cites two passages");

    // Typed, for users: every citation with its URL, title, passage and encrypted index.
    assert_eq!(first.citations.len(), cited.len());
    for (typed, raw) in first.citations.iter().zip(&cited) {
        assert_eq!(typed.url.as_deref(), raw["url"].as_str());
        assert_eq!(typed.title.as_deref(), raw["title"].as_str());
        assert_eq!(typed.cited_text.as_deref(), raw["cited_text"].as_str());
        assert_eq!(
            typed.encrypted_index.as_deref(),
            raw["encrypted_index"].as_str()
        );
        assert!(typed.encrypted_index.is_some());
    }

    // Sent back: the assistant turn is the answer's content as the provider sent it.
    let sent = &second_request["messages"][1];
    assert_eq!(sent["role"], "assistant");
    assert_eq!(sent["content"], Value::Array(blocks.clone()));
    // And it is what the recorded client sent (and Anthropic accepted) on the second request.
    let recorded_second = &recording.interactions[1].request.body["messages"][1]["content"];
    assert_eq!(&sent["content"], recorded_second);
    let sent_citations = recorded_citations(sent["content"].as_array().unwrap());
    assert_eq!(sent_citations, cited);
}

#[tokio::test]
async fn web_search_citations_of_a_whole_answer_go_back_unchanged() {
    let (first, second_request, recording) = two_turns(false).await;
    check(&first, &second_request, &recording);
}

#[tokio::test]
async fn web_search_citations_of_a_streamed_answer_go_back_unchanged() {
    let (first, second_request, recording) = two_turns(true).await;
    check(&first, &second_request, &recording);
}
