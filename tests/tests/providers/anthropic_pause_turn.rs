//! Turns the Anthropic server paused (`stop_reason: "pause_turn"`, in a long server-tool loop)
//! are continued: the paused answer goes back as it is, the model carries on, and the segments
//! become one assistant message, streamed or not, up to the configured number of continuations.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use llm_tools_core::chat::{Chat, ChatEvent};
use llm_tools_core::{Message, Role};
use llm_tools_providers::anthropic::{Anthropic, AnthropicConfig};
use llm_tools_providers::record::RecordedResponse;
use llm_tools_providers::replay::ReplayServer;
use llm_tools_tests::fixtures::Weather;
use llm_tools_tests::serving::{exchange, sse_events, started_calls, stream_turn};
use serde_json::{Value, json};

/// Where Messages requests go.
const MESSAGES: &str = "https://api.anthropic.com/v1/messages";

/// The blocks of the paused segment: text, then a web search the server ran.
fn paused_blocks() -> Value {
    json!([
        {"type": "text", "text": "Let me search."},
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "Berlin weather"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
            {"type": "web_search_result", "url": "https://weather.example/berlin", "title": "Berlin", "encrypted_content": "EqgfCioIARgB"}
        ]}
    ])
}

/// The blocks of the segment that carries on: text, then a call of a client tool.
fn continued_blocks() -> Value {
    json!([
        {"type": "text", "text": " Found it; checking the station."},
        {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"latitude": "52.52", "longitude": "13.40"}}
    ])
}

fn message(content: &Value, stop_reason: &str, input: u64, output: u64) -> RecordedResponse {
    RecordedResponse::json(
        200,
        json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
            "content": content, "stop_reason": stop_reason,
            "usage": {"input_tokens": input, "output_tokens": output}})
        .to_string(),
    )
}

/// The same answer as a stream of events.
fn streamed(content: &Value, stop_reason: &str, input: u64, output: u64) -> RecordedResponse {
    let mut events = vec![(
        "message_start",
        json!({"type": "message_start", "message": {"model": "claude-sonnet-4-6",
            "usage": {"input_tokens": input, "output_tokens": 1}}}),
    )];
    for (index, block) in content.as_array().unwrap().iter().enumerate() {
        let mut start = block.clone();
        let mut deltas = Vec::new();
        match block["type"].as_str().unwrap() {
            "text" => {
                start["text"] = json!("");
                deltas.push(json!({"type": "text_delta", "text": block["text"]}));
            }
            "tool_use" | "server_tool_use" => {
                start["input"] = json!({});
                let input = block["input"].to_string();
                let (a, b) = input.split_at(input.len() / 2);
                deltas.push(json!({"type": "input_json_delta", "partial_json": a}));
                deltas.push(json!({"type": "input_json_delta", "partial_json": b}));
            }
            _ => {}
        }
        events.push((
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        for delta in deltas {
            events.push((
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ));
        }
        events.push((
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
    }
    events.push((
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason}, "usage": {"output_tokens": output}}),
    ));
    events.push(("message_stop", json!({"type": "message_stop"})));
    RecordedResponse::sse(sse_events(&events))
}

fn final_text() -> Value {
    json!([{"type": "text", "text": "It is 15°C in Berlin."}])
}

async fn chat_on(server: &ReplayServer, continuations: Option<u32>) -> Chat {
    let mut config = AnthropicConfig::new("claude-sonnet-4-6")
        .with_api_key("k")
        .with_base_url(server.url());
    if let Some(n) = continuations {
        config = config.with_pause_turn_continuations(n);
    }
    let mut chat = Chat::new(Anthropic::new(config).unwrap());
    chat.with_tools(Weather).unwrap();
    chat
}

/// Every block of both segments, in order.
fn all_blocks() -> Value {
    let mut blocks = paused_blocks().as_array().unwrap().clone();
    blocks.extend(continued_blocks().as_array().unwrap().iter().cloned());
    Value::Array(blocks)
}

/// What the requests carried: the continuation sends the paused answer as the last message, as
/// it came; the request after the tool round sends the merged answer, every block in order.
fn check_requests(server: &ReplayServer) {
    let received = server.received();
    assert_eq!(received.len(), 3);
    let continuation = &received[1].body["messages"];
    assert_eq!(continuation.as_array().unwrap().len(), 2);
    assert_eq!(
        continuation[1],
        json!({"role": "assistant", "content": paused_blocks()})
    );
    let after_tools = &received[2].body["messages"];
    assert_eq!(after_tools[1]["content"], all_blocks());
    assert_eq!(after_tools[2]["content"][0]["type"], "tool_result");
    assert_eq!(after_tools[2]["content"][0]["tool_use_id"], "toolu_1");
}

/// The one assistant message of the merged turn.
fn merged_turn(chat: &Chat) -> &Message {
    let assistants: Vec<&Message> = chat
        .messages()
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .collect();
    assert_eq!(assistants.len(), 2, "the merged turn and the final answer");
    assistants[0]
}

#[tokio::test]
async fn a_paused_turn_is_continued_and_merged_into_one_message() {
    let server = ReplayServer::with_interactions(vec![
        exchange(MESSAGES, message(&paused_blocks(), "pause_turn", 100, 30)),
        exchange(MESSAGES, message(&continued_blocks(), "tool_use", 150, 20)),
        exchange(MESSAGES, message(&final_text(), "end_turn", 200, 10)),
    ])
    .await
    .unwrap();
    let mut chat = chat_on(&server, None).await;
    let outcome = chat.ask("Weather in Berlin?").await.unwrap();
    assert_eq!(outcome.text().as_deref(), Some("It is 15°C in Berlin."));

    let turn = merged_turn(&chat);
    assert_eq!(
        turn.text(),
        "Let me search. Found it; checking the station."
    );
    assert_eq!(turn.tool_calls.len(), 1);
    assert_eq!(turn.tool_calls[0].name, "weather");
    let usage = turn.usage.unwrap();
    assert_eq!((usage.input_tokens, usage.output_tokens), (250, 50));
    check_requests(&server);
}

#[tokio::test]
async fn a_streamed_paused_turn_streams_every_segment_and_runs_the_tools() {
    let server = ReplayServer::with_interactions(vec![
        exchange(MESSAGES, streamed(&paused_blocks(), "pause_turn", 100, 30)),
        exchange(MESSAGES, streamed(&continued_blocks(), "tool_use", 150, 20)),
        exchange(MESSAGES, streamed(&final_text(), "end_turn", 200, 10)),
    ])
    .await
    .unwrap();
    let mut chat = chat_on(&server, None).await;
    let (text, events) = stream_turn(&mut chat, "Weather in Berlin?").await.unwrap();
    assert_eq!(
        text,
        "Let me search. Found it; checking the station.It is 15°C in Berlin."
    );
    assert_eq!(started_calls(&events), ["weather"]);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, ChatEvent::ToolResult { .. })),
        "the tool ran: {events:?}"
    );

    let turn = merged_turn(&chat);
    assert_eq!(turn.tool_calls[0].id, "toolu_1");
    assert_eq!(
        turn.tool_calls[0].arguments,
        r#"{"latitude":"52.52","longitude":"13.40"}"#
    );
    let usage = turn.usage.unwrap();
    assert_eq!((usage.input_tokens, usage.output_tokens), (250, 50));
    check_requests(&server);
    assert!(server.received().iter().all(|r| r.body["stream"] == true));
}

#[tokio::test]
async fn continuations_stop_at_the_configured_number() {
    for (continuations, requests) in [(0, 1), (2, 3)] {
        let paused = || exchange(MESSAGES, message(&paused_blocks(), "pause_turn", 10, 5));
        let server = ReplayServer::with_interactions(vec![paused(), paused(), paused(), paused()])
            .await
            .unwrap();
        let mut chat = chat_on(&server, Some(continuations)).await;
        let outcome = chat.ask("Weather in Berlin?").await.unwrap();
        assert_eq!(server.received().len(), requests, "{continuations}");
        // The paused answer comes back as it stands: every segment's text, no calls.
        assert_eq!(
            outcome.text().unwrap(),
            "Let me search.".repeat(requests),
            "{continuations}"
        );
    }
}

#[tokio::test]
async fn a_paused_turn_whose_merged_answer_outgrows_one_answer_ends_with_the_limit() {
    use llm_tools_providers::http::HttpLimit;

    // Each segment fits in the limit on its own (about 3 KB of text in 4 KB); two together
    // do not.
    let long = json!([{"type": "text", "text": "x".repeat(3_000)}]);
    for stream in [false, true] {
        let segment = || {
            if stream {
                exchange(MESSAGES, streamed(&long, "pause_turn", 10, 5))
            } else {
                exchange(MESSAGES, message(&long, "pause_turn", 10, 5))
            }
        };
        let server =
            ReplayServer::with_interactions(vec![segment(), segment(), segment(), segment()])
                .await
                .unwrap();
        let config = AnthropicConfig::new("claude-sonnet-4-6")
            .with_api_key("k")
            .with_base_url(server.url())
            .with_max_body_bytes(4_000)
            .with_max_stream_bytes(4_000);
        let mut chat = Chat::new(Anthropic::new(config).unwrap());
        let error = if stream {
            use futures::StreamExt as _;
            let mut events = chat.ask_stream("Write a lot");
            let mut failed = None;
            while let Some(event) = events.next().await {
                if let Err(e) = event {
                    failed = Some(e);
                }
            }
            failed.expect("the stream fails")
        } else {
            chat.ask("Write a lot").await.unwrap_err()
        };
        let error = llm_tools_tests::serving::provider_error(error);
        let limit = if stream {
            HttpLimit::StreamBytes
        } else {
            HttpLimit::BodyBytes
        };
        assert_eq!(error.code(), Some(limit.code()), "{stream}: {error}");
        assert!(error.message().contains("paused the turn"), "{error}");
        // Not continued past the second segment.
        assert_eq!(server.received().len(), 2, "{stream}");
        // The chat is left as it was before the turn's answer.
        assert!(
            chat.messages().iter().all(|m| m.role != Role::Assistant),
            "{stream}"
        );
    }
}

/// A timeout or stream deadline of `Duration::MAX` is the HTTP client's "no deadline": a paused
/// turn is continued under it, streamed or not, instead of failing to count the deadline.
#[tokio::test]
async fn a_paused_turn_is_continued_under_a_deadline_too_far_to_count() {
    use std::time::Duration;

    for stream in [false, true] {
        let reply = |content: &Value, stop: &str| {
            if stream {
                exchange(MESSAGES, streamed(content, stop, 10, 5))
            } else {
                exchange(MESSAGES, message(content, stop, 10, 5))
            }
        };
        let server = ReplayServer::with_interactions(vec![
            reply(&paused_blocks(), "pause_turn"),
            reply(&final_text(), "end_turn"),
        ])
        .await
        .unwrap();
        let config = AnthropicConfig::new("claude-sonnet-4-6")
            .with_api_key("k")
            .with_base_url(server.url())
            .with_timeout(Duration::MAX)
            .with_stream_deadline(Duration::MAX);
        let mut chat = Chat::new(Anthropic::new(config).unwrap());
        let text = if stream {
            stream_turn(&mut chat, "Weather in Berlin?")
                .await
                .unwrap()
                .0
        } else {
            chat.ask("Weather in Berlin?")
                .await
                .unwrap()
                .text()
                .unwrap()
        };
        assert_eq!(text, "Let me search.It is 15°C in Berlin.", "{stream}");
        assert_eq!(server.received().len(), 2, "{stream}");
    }
}
