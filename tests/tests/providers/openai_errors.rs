//! Failures served by the loopback replay server, through the real providers and the real chat
//! loop: rate limits, server errors, bad keys, malformed bodies, cut and noisy streams, and
//! tool calls whose arguments are not JSON.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::time::Duration;

use llm_tools_core::{Chat, ProviderErrorKind, Role};
use llm_tools_providers::openai::{OpenAiChat, OpenAiConfig, OpenAiResponses};
use llm_tools_providers::record::{Interaction, RecordedResponse};
use llm_tools_providers::replay::ReplayServer;
use llm_tools_tests::fixtures::Weather;
use llm_tools_tests::serving::{
    self, RetryLog, on_server, provider_error, started_calls, stream_turn,
};
use serde_json::json;

fn exchange(response: RecordedResponse) -> Interaction {
    serving::exchange("https://api.openai.com/v1/chat/completions", response)
}

fn answer(text: &str) -> RecordedResponse {
    RecordedResponse::json(
        200,
        json!({"id": "c1", "object": "chat.completion", "model": "gpt-5-nano",
               "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
               "usage": {"prompt_tokens": 10, "completion_tokens": 5}})
        .to_string(),
    )
}

fn weather_call(arguments: &str) -> RecordedResponse {
    RecordedResponse::json(
        200,
        json!({"id": "c0", "object": "chat.completion", "model": "gpt-5-nano",
               "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
                 "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": arguments}}]}}]})
        .to_string(),
    )
}

struct Setup {
    server: ReplayServer,
    chat: Chat,
    retries: RetryLog,
}

async fn setup(interactions: Vec<Interaction>) -> Setup {
    let server = ReplayServer::with_interactions(interactions).await.unwrap();
    let retries = RetryLog::default();
    let config = OpenAiConfig::openai("gpt-5-nano").with_api_key("test-key");
    let config = on_server(config, &server, 2, &retries);
    let mut chat = Chat::new(OpenAiChat::new(config).unwrap());
    chat.with_tools(Weather).unwrap();
    Setup {
        server,
        chat,
        retries,
    }
}

#[tokio::test]
async fn rate_limit_with_retry_after_then_success() {
    let mut s = setup(vec![
        exchange(
            RecordedResponse::json(429, r#"{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}"#)
                .with_header("retry-after", "0.005"),
        ),
        exchange(answer("Hello")),
    ])
    .await;
    let outcome = s.chat.ask("Hi").await.unwrap();
    assert_eq!(outcome.text().as_deref(), Some("Hello"));
    assert_eq!(s.server.received().len(), 2);
    assert_eq!(s.retries.delays(), vec![Duration::from_millis(5)]);
}

#[tokio::test]
async fn server_error_twice_then_success() {
    let mut s = setup(vec![
        exchange(RecordedResponse::json(
            500,
            r#"{"error":{"message":"The server had an error"}}"#,
        )),
        exchange(RecordedResponse::json(502, "<html>Bad gateway</html>")),
        exchange(answer("Back")),
    ])
    .await;
    let outcome = s.chat.ask("Hi").await.unwrap();
    assert_eq!(outcome.text().as_deref(), Some("Back"));
    assert_eq!(s.server.received().len(), 3);
    assert_eq!(s.retries.delays().len(), 2);
}

/// A server's error object holding a megabyte of message is cut to 8 KiB in the error and in
/// what each retry reports, after the key is redacted: no part of the key is left at the cut.
#[tokio::test]
async fn a_megabyte_error_message_is_cut_after_its_secrets_are_redacted() {
    let message = format!("{}test-key{}", "x".repeat(8_185), "y".repeat(1 << 20));
    let body = json!({"error": {"message": message, "code": "z".repeat(100_000)}}).to_string();
    let mut s = setup(vec![
        exchange(RecordedResponse::json(500, body.clone())),
        exchange(RecordedResponse::json(500, body.clone())),
        exchange(RecordedResponse::json(500, body)),
    ])
    .await;
    let e = provider_error(s.chat.ask("Hi").await.unwrap_err());
    let mut errors: Vec<_> = s.retries.seen().into_iter().map(|(_, e)| e).collect();
    assert_eq!(errors.len(), 2);
    errors.push(e);
    for e in errors {
        assert_eq!(e.status(), Some(500));
        assert!(e.message().len() <= 8 * 1024 + 40, "{}", e.message().len());
        assert!(e.message().starts_with("xxx") && e.message().ends_with(" bytes cut]"));
        assert!(!e.message().contains("test-k"), "{}", &e.message()[8_000..]);
        assert!(e.code().unwrap().len() <= 8 * 1024 + 40);
    }
    assert_eq!(s.chat.messages().len(), 1);
}

/// A server's error message carrying terminal escapes (a hyperlink to a `file:` URL behind
/// harmless words) shows them escaped, in the error and in what each retry reports: a terminal
/// showing the error or the log acts on none of them.
#[tokio::test]
async fn an_error_messages_terminal_escapes_show_escaped() {
    let message = "overloaded \u{1b}]8;;file:///etc/passwd\u{1b}\\retry\u{1b}]8;;\u{1b}\\ \u{9b}2J";
    let body = json!({"error": {"message": message, "type": "\u{1b}[31mred"}}).to_string();
    let mut s = setup(vec![
        exchange(RecordedResponse::json(500, body.clone())),
        exchange(RecordedResponse::json(500, body.clone())),
        exchange(RecordedResponse::json(500, body)),
    ])
    .await;
    let e = provider_error(s.chat.ask("Hi").await.unwrap_err());
    let mut errors: Vec<_> = s.retries.seen().into_iter().map(|(_, e)| e).collect();
    errors.push(e);
    for e in errors {
        let shown = e.to_string();
        assert!(
            !shown.contains('\u{1b}') && !shown.contains('\u{9b}'),
            "{shown:?}"
        );
        assert!(
            e.message()
                .starts_with("overloaded \\u{1b}]8;;file:///etc/passwd"),
            "{:?}",
            e.message()
        );
        assert_eq!(e.error_type(), Some("\\u{1b}[31mred"));
    }
}

#[tokio::test]
async fn unauthorized_is_a_clear_error_without_retry() {
    let mut s = setup(vec![exchange(
        RecordedResponse::json(401, r#"{"error":{"message":"Incorrect API key provided: test-key.","type":"invalid_request_error","code":"invalid_api_key"}}"#)
            .with_header("x-request-id", "req_401"),
    )])
    .await;
    let e = provider_error(s.chat.ask("Hi").await.unwrap_err());
    assert_eq!(e.status(), Some(401));
    assert_eq!(e.code(), Some("invalid_api_key"));
    assert_eq!(e.request_id(), Some("req_401"));
    assert!(e.to_string().contains("Incorrect API key provided"), "{e}");
    assert_eq!(s.server.received().len(), 1);
    assert!(s.retries.delays().is_empty());
    // Nothing is lost: the question is still in the history.
    assert_eq!(
        s.chat.messages().first().map(|m| m.text()),
        Some("Hi".into())
    );
}

#[tokio::test]
async fn malformed_json_body_is_a_decode_error() {
    let mut s = setup(vec![exchange(RecordedResponse::json(
        200,
        r#"{"id":"c1","choices":[{"index":0,"message":{"role":"assist"#,
    ))])
    .await;
    let e = provider_error(s.chat.ask("Hi").await.unwrap_err());
    assert_eq!(e.kind(), ProviderErrorKind::Decode);
    assert!(e.message().contains("not the expected JSON"), "{e}");
}

#[tokio::test]
async fn invalid_tool_arguments_go_back_as_an_error_result_and_the_loop_continues() {
    let mut s = setup(vec![
        exchange(weather_call(r#"{"latitude": "52.52", "longitude": "13.4"#)),
        exchange(answer("Sorry, let me try again later.")),
    ])
    .await;
    let outcome = s.chat.ask("Weather in Berlin?").await.unwrap();
    assert_eq!(
        outcome.text().as_deref(),
        Some("Sorry, let me try again later.")
    );
    let second = &s.server.received()[1].body;
    let tool_message = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("the call got a result");
    assert_eq!(tool_message["tool_call_id"], "call_1");
    let content = tool_message["content"].as_str().unwrap();
    assert!(content.contains("not valid JSON"), "{content}");
    let result = s
        .chat
        .messages()
        .iter()
        .find(|m| m.role == Role::Tool)
        .unwrap();
    assert!(result.is_error);
}

fn chunk(delta: serde_json::Value, finish: Option<&str>) -> String {
    format!(
        "data: {}\n\n",
        json!({"id": "s", "object": "chat.completion.chunk", "model": "gpt-5-nano",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    )
}

#[tokio::test]
async fn garbage_lines_in_a_stream_are_skipped() {
    let first = [
        ": keep-alive\n\n".to_owned(),
        "this line is not sse\n".to_owned(),
        chunk(json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_9", "type": "function", "function": {"name": "weather", "arguments": ""}}]}), None),
        "event\n\ndata: {not json}\n\n".to_owned(),
        chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"latitude\":\"1\","}}]}), None),
        chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"longitude\":\"2\"}"}}]}), Some("tool_calls")),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let second = [
        chunk(json!({"content": "Mild."}), None),
        chunk(json!({}), Some("stop")),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let mut s = setup(vec![
        exchange(RecordedResponse::sse(first)),
        exchange(RecordedResponse::sse(second)),
    ])
    .await;
    let (text, events) = stream_turn(&mut s.chat, "Weather?").await.unwrap();
    assert_eq!(text, "Mild.");
    assert_eq!(started_calls(&events), ["weather"]);
    let result = s
        .chat
        .messages()
        .iter()
        .find(|m| m.role == Role::Tool)
        .unwrap();
    assert_eq!(
        result.text(),
        "Current weather at 1, 2: 15°C, Wind: 10 km/h"
    );
}

#[tokio::test]
async fn a_stream_cut_mid_event_is_a_stream_error() {
    let body = [
        chunk(json!({"role": "assistant", "content": "Partial"}), None),
        "data: {\"id\":\"s\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" ans".to_owned(),
    ]
    .concat();
    // Once with the connection dropped, once with the body simply ending mid-event.
    for response in [
        RecordedResponse::sse(body.clone()).disconnected(),
        RecordedResponse::sse(body.clone()),
    ] {
        let mut s = setup(vec![exchange(response)]).await;
        let e = provider_error(stream_turn(&mut s.chat, "Hi").await.unwrap_err());
        assert_eq!(e.kind(), ProviderErrorKind::Stream, "{e}");
    }
}

#[tokio::test]
async fn responses_stream_cut_before_completion_is_a_stream_error() {
    let body = "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\",\"status\":\"in_progress\",\"output\":[]}}\n\n\
                event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Hel";
    let server = ReplayServer::with_interactions(vec![exchange(RecordedResponse::sse(body))])
        .await
        .unwrap();
    let config = on_server(
        OpenAiConfig::openai("gpt-5-nano").with_api_key("k"),
        &server,
        0,
        &RetryLog::default(),
    );
    let mut chat = Chat::new(OpenAiResponses::new(config).unwrap());
    let e = provider_error(stream_turn(&mut chat, "Hi").await.unwrap_err());
    assert_eq!(e.kind(), ProviderErrorKind::Stream);
    assert!(e.message().contains("response.completed"), "{e}");
}
