//! The Anthropic provider against failures served by the loopback replay server, through the
//! real chat loop: rate limits and overload retried after the delay asked for, server errors
//! retried, auth errors not, malformed bodies, cut streams, garbage lines and error events as
//! typed errors, and tool-call inputs the tools cannot take sent back to the model as error
//! results while the loop goes on.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::time::Duration;

use llm_tools_core::chat::{Chat, ChatEvent};
use llm_tools_core::{ProviderErrorKind, Role};
use llm_tools_providers::anthropic::{Anthropic, AnthropicConfig};
use llm_tools_providers::record::{Interaction, RecordedResponse};
use llm_tools_providers::replay::ReplayServer;
use llm_tools_tests::fixtures::{BestLanguageToLearn, Weather};
use llm_tools_tests::serving::{
    self, RetryLog, on_server, provider_error, sse_events as sse, stream_turn,
};
use serde_json::{Value, json};

fn exchange(response: RecordedResponse) -> Interaction {
    serving::exchange("https://api.anthropic.com/v1/messages", response)
}

fn text_answer(text: &str) -> RecordedResponse {
    RecordedResponse::json(
        200,
        json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 10, "output_tokens": 5}})
        .to_string(),
    )
}

fn error_body(kind: &str, message: &str) -> String {
    json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_011"})
        .to_string()
}

/// A provider on the server that logs every retry's delay and error.
fn provider(server: &ReplayServer, retries: u32) -> (Anthropic, RetryLog) {
    let log = RetryLog::default();
    let config = AnthropicConfig::new("claude-haiku-4-5").with_api_key("sk-ant-test");
    let provider = Anthropic::new(on_server(config, server, retries, &log)).unwrap();
    (provider, log)
}

#[tokio::test]
async fn a_rate_limit_is_waited_out_for_its_retry_after_then_the_chat_goes_on() {
    let server = ReplayServer::with_interactions(vec![
        exchange(
            RecordedResponse::json(
                429,
                error_body(
                    "rate_limit_error",
                    "Number of requests has exceeded your rate limit",
                ),
            )
            .with_header("retry-after", "1")
            .with_header("request-id", "req_011"),
        ),
        exchange(text_answer("Hello!")),
    ])
    .await
    .unwrap();
    let (provider, retries) = provider(&server, 2);
    let mut chat = Chat::new(provider);
    let answer = chat.ask("Hi").await.unwrap();
    assert_eq!(answer.text().as_deref(), Some("Hello!"));
    let retries = retries.seen();
    assert_eq!(retries.len(), 1);
    assert_eq!(retries[0].0, Duration::from_secs(1));
    assert_eq!(retries[0].1.status(), Some(429));
    assert_eq!(retries[0].1.error_type(), Some("rate_limit_error"));
    assert_eq!(server.received().len(), 2);
}

#[tokio::test]
async fn overloaded_529_is_retried_like_a_rate_limit() {
    let server = ReplayServer::with_interactions(vec![
        exchange(RecordedResponse::json(
            529,
            error_body("overloaded_error", "Overloaded"),
        )),
        exchange(RecordedResponse::json(
            529,
            error_body("overloaded_error", "Overloaded"),
        )),
        exchange(text_answer("Finally.")),
    ])
    .await
    .unwrap();
    let (provider, retries) = provider(&server, 3);
    let mut chat = Chat::new(provider);
    let answer = chat.ask("Hi").await.unwrap();
    assert_eq!(answer.text().as_deref(), Some("Finally."));
    let retries = retries.seen();
    assert_eq!(retries.len(), 2);
    assert!(retries.iter().all(|(_, e)| e.status() == Some(529)
        && e.error_type() == Some("overloaded_error")
        && e.is_retryable()));
}

#[tokio::test]
async fn server_errors_are_retried_and_the_last_one_is_returned_when_retries_run_out() {
    let server = ReplayServer::with_interactions(vec![
        exchange(RecordedResponse::json(
            500,
            error_body("api_error", "Internal server error"),
        )),
        exchange(RecordedResponse::json(503, "")),
        exchange(text_answer("unused")),
    ])
    .await
    .unwrap();
    let (provider, retries) = provider(&server, 1);
    let mut chat = Chat::new(provider);
    let e = provider_error(chat.ask("Hi").await.unwrap_err());
    assert_eq!(e.status(), Some(503));
    assert_eq!(retries.seen().len(), 1);
    assert_eq!(server.received().len(), 2);
}

#[tokio::test]
async fn an_auth_error_is_clear_and_not_retried() {
    let server = ReplayServer::with_interactions(vec![exchange(
        RecordedResponse::json(401, error_body("authentication_error", "invalid x-api-key"))
            .with_header("request-id", "req_011"),
    )])
    .await
    .unwrap();
    let (provider, retries) = provider(&server, 3);
    let mut chat = Chat::new(provider);
    let e = provider_error(chat.ask("Hi").await.unwrap_err());
    assert_eq!(e.status(), Some(401));
    assert_eq!(e.error_type(), Some("authentication_error"));
    assert_eq!(e.request_id(), Some("req_011"));
    assert!(!e.is_retryable());
    assert_eq!(
        e.to_string(),
        "anthropic: HTTP 401 (authentication_error): invalid x-api-key [request id req_011]"
    );
    assert!(retries.seen().is_empty());
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn a_malformed_body_is_a_decode_error_quoting_it() {
    let server = ReplayServer::with_interactions(vec![exchange(RecordedResponse::json(
        200,
        "{\"content\": [tru",
    ))])
    .await
    .unwrap();
    let (provider, _) = provider(&server, 0);
    let mut chat = Chat::new(provider);
    let e = provider_error(chat.ask("Hi").await.unwrap_err());
    assert_eq!(e.kind(), ProviderErrorKind::Decode);
    assert!(e.message().contains("{\"content\": [tru"), "{e}");
    // Nothing was added to the transcript but the question.
    assert_eq!(chat.messages().len(), 1);
}

fn message_start() -> (&'static str, Value) {
    (
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
            "model": "claude-haiku-4-5", "content": [], "usage": {"input_tokens": 12, "output_tokens": 1}}}),
    )
}

fn text_stream(text: &str) -> Vec<(&'static str, Value)> {
    vec![
        message_start(),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 7}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ]
}

fn tool_stream(id: &str, name: &str, fragments: &[&str]) -> Vec<(&'static str, Value)> {
    let mut events = vec![
        message_start(),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
        ),
    ];
    for f in fragments {
        events.push((
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": f}}),
        ));
    }
    events.extend([
        ("content_block_stop", json!({"type": "content_block_stop", "index": 0})),
        ("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 30}})),
        ("message_stop", json!({"type": "message_stop"})),
    ]);
    events
}

#[tokio::test]
async fn a_stream_cut_mid_event_is_a_stream_error() {
    let mut body = sse(&tool_stream(
        "toolu_1",
        "weather",
        &["{\"latitude\": \"52.52\""],
    ));
    body.truncate(body.find("event: content_block_stop").unwrap() - 10);
    let server =
        ReplayServer::with_interactions(vec![exchange(RecordedResponse::sse(body).disconnected())])
            .await
            .unwrap();
    let (provider, _) = provider(&server, 0);
    let mut chat = Chat::new(provider);
    chat.with_tools(Weather).unwrap();
    let e = provider_error(stream_turn(&mut chat, "Weather?").await.unwrap_err());
    assert_eq!(e.kind(), ProviderErrorKind::Stream);
    assert!(e.is_retryable());
    // The cut answer was not added: the transcript holds only the question.
    assert_eq!(chat.messages().len(), 1);
}

#[tokio::test]
async fn a_stream_that_ends_without_message_stop_is_a_stream_error() {
    let mut events = text_stream("Half an answer");
    events.pop();
    let server =
        ReplayServer::with_interactions(vec![exchange(RecordedResponse::sse(sse(&events)))])
            .await
            .unwrap();
    let (provider, _) = provider(&server, 0);
    let mut chat = Chat::new(provider);
    let e = provider_error(stream_turn(&mut chat, "Hi").await.unwrap_err());
    assert_eq!(e.kind(), ProviderErrorKind::Stream);
    assert!(e.message().contains("message_stop"), "{e}");
}

#[tokio::test]
async fn garbage_lines_in_a_stream_are_skipped() {
    let clean = sse(&text_stream("Hello through the noise."));
    let noisy = clean.replace(
        "event: content_block_delta",
        ": keep-alive\nthis is not an SSE line\ndata: {not json}\n\nevent: ping\ndata: {\"type\": \"ping\"}\n\nevent: content_block_delta",
    );
    let server = ReplayServer::with_interactions(vec![exchange(RecordedResponse::sse(noisy))])
        .await
        .unwrap();
    let (provider, _) = provider(&server, 0);
    let mut chat = Chat::new(provider);
    let (text, events) = stream_turn(&mut chat, "Hi").await.unwrap();
    assert_eq!(text, "Hello through the noise.");
    assert!(matches!(events.last(), Some(ChatEvent::Done(m)) if m.text() == text));
}

#[tokio::test]
async fn an_error_event_mid_stream_is_a_typed_retryable_error() {
    let mut events = text_stream("Partial");
    events.truncate(3);
    events.push((
        "error",
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    ));
    let server =
        ReplayServer::with_interactions(vec![exchange(RecordedResponse::sse(sse(&events)))])
            .await
            .unwrap();
    let (provider, _) = provider(&server, 0);
    let mut chat = Chat::new(provider);
    let e = provider_error(stream_turn(&mut chat, "Hi").await.unwrap_err());
    assert_eq!(e.kind(), ProviderErrorKind::Stream);
    assert_eq!(e.error_type(), Some("overloaded_error"));
    assert_eq!(e.message(), "Overloaded");
    assert!(e.is_retryable());
}

#[tokio::test]
async fn malformed_streamed_input_goes_back_as_an_error_result_and_the_loop_goes_on() {
    let server = ReplayServer::with_interactions(vec![
        exchange(RecordedResponse::sse(sse(&tool_stream(
            "toolu_bad",
            "weather",
            &["{\"latitude\": \"52.52\", ", "\"longitude\": "],
        )))),
        exchange(RecordedResponse::sse(sse(&text_stream(
            "Sorry, let me answer without the tool.",
        )))),
    ])
    .await
    .unwrap();
    let (provider, _) = provider(&server, 0);
    let mut chat = Chat::new(provider);
    chat.with_tools(Weather).unwrap();
    let (text, _) = stream_turn(&mut chat, "Weather in Berlin?").await.unwrap();
    assert_eq!(text, "Sorry, let me answer without the tool.");
    let result = chat
        .messages()
        .iter()
        .find(|m| m.role == Role::Tool)
        .unwrap();
    assert!(result.is_error);
    let second = &server.received()[1].body;
    let tool_use = &second["messages"][1]["content"][0];
    assert_eq!(tool_use["type"], "tool_use");
    assert_eq!(
        tool_use["input"],
        json!({}),
        "the broken input is not sent back"
    );
    let tool_result = &second["messages"][2]["content"][0];
    assert_eq!(tool_result["tool_use_id"], "toolu_bad");
    assert_eq!(tool_result["is_error"], true);
}

#[tokio::test]
async fn input_of_the_wrong_type_goes_back_as_an_error_result_naming_the_argument() {
    let call = RecordedResponse::json(
        200,
        json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"latitude": 52.52, "longitude": "13.40"}}],
            "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 5}})
        .to_string(),
    );
    let server =
        ReplayServer::with_interactions(vec![exchange(call), exchange(text_answer("Done."))])
            .await
            .unwrap();
    let (provider, _) = provider(&server, 0);
    let mut chat = Chat::new(provider);
    chat.with_tools(Weather).unwrap();
    let answer = chat.ask("Weather?").await.unwrap();
    assert_eq!(answer.text().as_deref(), Some("Done."));
    let second = &server.received()[1].body;
    let tool_result = &second["messages"][2]["content"][0];
    assert_eq!(tool_result["is_error"], true);
    let text = tool_result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("latitude"), "{text}");
}

#[tokio::test]
async fn a_streamed_call_without_any_input_delta_runs_with_empty_arguments() {
    let server = ReplayServer::with_interactions(vec![
        exchange(RecordedResponse::sse(sse(&tool_stream(
            "toolu_2",
            "best_language_to_learn",
            &[],
        )))),
        exchange(RecordedResponse::sse(sse(&text_stream("Ruby.")))),
    ])
    .await
    .unwrap();
    let (provider, _) = provider(&server, 0);
    let mut chat = Chat::new(provider);
    chat.with_tools(BestLanguageToLearn).unwrap();
    let (text, events) = stream_turn(&mut chat, "Best language?").await.unwrap();
    assert_eq!(text, "Ruby.");
    let result = events
        .iter()
        .find_map(|e| match e {
            ChatEvent::ToolResult { call, result } => Some((call.clone(), result.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(result.0.arguments, "{}");
    assert!(!result.1.is_error);
    assert_eq!(result.1.text(), "Ruby");
}
