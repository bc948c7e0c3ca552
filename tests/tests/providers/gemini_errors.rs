//! The Gemini provider against failures served by the loopback replay server, through the real
//! chat loop: `RESOURCE_EXHAUSTED` retried after its `RetryInfo.retryDelay`, server errors
//! retried, a bad key not, malformed bodies, cut streams, garbage lines and error chunks as typed
//! errors, and arguments the tools cannot take sent back to the model as error responses while
//! the loop goes on.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::time::Duration;

use llm_tools_core::chat::{Chat, ChatEvent};
use llm_tools_core::{ProviderErrorKind, Role, StreamEvent};
use llm_tools_providers::gemini::{Gemini, GeminiConfig};
use llm_tools_providers::record::{Interaction, RecordedResponse};
use llm_tools_providers::replay::ReplayServer;
use llm_tools_tests::fixtures::Weather;
use llm_tools_tests::serving::{self, RetryLog, on_server, provider_error, stream_turn};
use serde_json::{Value, json};

fn exchange(response: RecordedResponse) -> Interaction {
    serving::exchange(
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent",
        response,
    )
}

fn chunk(parts: Value, finish: Option<&str>) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    if let Some(f) = finish {
        candidate["finishReason"] = json!(f);
    }
    json!({"candidates": [candidate], "modelVersion": "gemini-2.5-flash",
           "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 4, "totalTokenCount": 14}})
}

fn text_answer(text: &str) -> RecordedResponse {
    RecordedResponse::json(
        200,
        chunk(json!([{"text": text}]), Some("STOP")).to_string(),
    )
}

fn google_error(code: u16, status: &str, message: &str, details: Value) -> String {
    json!({"error": {"code": code, "message": message, "status": status, "details": details}})
        .to_string()
}

/// A provider on the server that logs every retry's delay and error.
fn provider(server: &ReplayServer, retries: u32) -> (Gemini, RetryLog) {
    let log = RetryLog::default();
    let config = GeminiConfig::new("gemini-2.5-flash").with_api_key("test-key");
    let provider = Gemini::new(on_server(config, server, retries, &log)).unwrap();
    (provider, log)
}

#[tokio::test]
async fn resource_exhausted_is_retried_after_its_retry_delay() {
    let details = json!([
        {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{"quotaMetric": "generate_content_free_tier_requests"}]},
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.250s"}
    ]);
    let server = ReplayServer::with_interactions(vec![
        exchange(RecordedResponse::json(
            429,
            google_error(
                429,
                "RESOURCE_EXHAUSTED",
                "You exceeded your current quota.",
                details,
            ),
        )),
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
    assert_eq!(retries[0].0, Duration::from_millis(250));
    assert_eq!(retries[0].1.status(), Some(429));
    assert_eq!(retries[0].1.error_type(), Some("RESOURCE_EXHAUSTED"));
}

#[tokio::test]
async fn server_errors_are_retried_with_backoff() {
    let server = ReplayServer::with_interactions(vec![
        exchange(RecordedResponse::json(
            503,
            google_error(503, "UNAVAILABLE", "The model is overloaded.", json!([])),
        )),
        exchange(RecordedResponse::json(
            500,
            google_error(
                500,
                "INTERNAL",
                "An internal error has occurred.",
                json!([]),
            ),
        )),
        exchange(text_answer("Back.")),
    ])
    .await
    .unwrap();
    let (provider, retries) = provider(&server, 3);
    let mut chat = Chat::new(provider);
    let answer = chat.ask("Hi").await.unwrap();
    assert_eq!(answer.text().as_deref(), Some("Back."));
    let retries = retries.seen();
    let statuses: Vec<_> = retries.iter().map(|(_, e)| e.status()).collect();
    assert_eq!(statuses, [Some(503), Some(500)]);
    assert!(retries.iter().all(|(d, _)| *d <= Duration::from_millis(4)));
}

#[tokio::test]
async fn a_bad_key_is_a_clear_error_and_not_retried() {
    let server = ReplayServer::with_interactions(vec![exchange(RecordedResponse::json(
        400,
        google_error(
            400,
            "INVALID_ARGUMENT",
            "API key not valid. Please pass a valid API key.",
            json!([{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}]),
        ),
    ))])
    .await
    .unwrap();
    let (provider, retries) = provider(&server, 3);
    let mut chat = Chat::new(provider);
    let e = provider_error(chat.ask("Hi").await.unwrap_err());
    assert_eq!(e.status(), Some(400));
    assert_eq!(e.error_type(), Some("INVALID_ARGUMENT"));
    assert!(!e.is_retryable());
    assert_eq!(
        e.to_string(),
        "gemini: HTTP 400 (INVALID_ARGUMENT, 400): API key not valid. Please pass a valid API key."
    );
    assert!(retries.seen().is_empty());
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn a_malformed_body_is_a_decode_error() {
    let server = ReplayServer::with_interactions(vec![exchange(RecordedResponse::json(
        200,
        "{\"candidates\": [{\"content\": ",
    ))])
    .await
    .unwrap();
    let (provider, _) = provider(&server, 0);
    let mut chat = Chat::new(provider);
    let e = provider_error(chat.ask("Hi").await.unwrap_err());
    assert_eq!(e.kind(), ProviderErrorKind::Decode);
    assert!(e.message().contains("{\"candidates\""), "{e}");
}

fn sse(chunks: &[Value]) -> String {
    chunks
        .iter()
        .map(|c| format!("data: {c}\r\n\r\n"))
        .collect()
}

#[tokio::test]
async fn a_stream_cut_mid_chunk_is_a_stream_error() {
    let mut body = sse(&[
        chunk(json!([{"text": "The weather"}]), None),
        chunk(json!([{"text": " in Berlin is"}]), Some("STOP")),
    ]);
    body.truncate(body.len() - 60);
    let server =
        ReplayServer::with_interactions(vec![exchange(RecordedResponse::sse(body).disconnected())])
            .await
            .unwrap();
    let (provider, _) = provider(&server, 0);
    let mut chat = Chat::new(provider);
    let e = provider_error(stream_turn(&mut chat, "Weather?").await.unwrap_err());
    assert_eq!(e.kind(), ProviderErrorKind::Stream);
    assert!(e.is_retryable());
    assert_eq!(chat.messages().len(), 1);
}

#[tokio::test]
async fn a_stream_without_a_finish_reason_is_a_stream_error() {
    let body = sse(&[chunk(json!([{"text": "Half"}]), None)]);
    let server = ReplayServer::with_interactions(vec![exchange(RecordedResponse::sse(body))])
        .await
        .unwrap();
    let (provider, _) = provider(&server, 0);
    let mut chat = Chat::new(provider);
    let e = provider_error(stream_turn(&mut chat, "Hi").await.unwrap_err());
    assert_eq!(e.kind(), ProviderErrorKind::Stream);
    assert!(e.message().contains("finish reason"), "{e}");
}

#[tokio::test]
async fn garbage_lines_in_a_stream_are_skipped() {
    let body = format!(
        ": ping\nnot an sse line\ndata: {{broken json\n\n{}",
        sse(&[
            chunk(json!([{"text": "Hello "}]), None),
            chunk(json!([{"text": "there."}]), Some("STOP")),
        ])
    );
    let server = ReplayServer::with_interactions(vec![exchange(RecordedResponse::sse(body))])
        .await
        .unwrap();
    let (provider, _) = provider(&server, 0);
    let mut chat = Chat::new(provider);
    let (text, events) = stream_turn(&mut chat, "Hi").await.unwrap();
    assert_eq!(text, "Hello there.");
    assert!(matches!(events.last(), Some(ChatEvent::Done(m)) if m.text() == "Hello there."));
}

#[tokio::test]
async fn an_error_chunk_mid_stream_is_a_typed_error() {
    let body = sse(&[
        chunk(json!([{"text": "Partial"}]), None),
        json!({"error": {"code": 503, "status": "UNAVAILABLE", "message": "The model is overloaded."}}),
    ]);
    let server = ReplayServer::with_interactions(vec![exchange(RecordedResponse::sse(body))])
        .await
        .unwrap();
    let (provider, _) = provider(&server, 0);
    let mut chat = Chat::new(provider);
    let e = provider_error(stream_turn(&mut chat, "Hi").await.unwrap_err());
    assert_eq!(e.kind(), ProviderErrorKind::Stream);
    assert_eq!(e.error_type(), Some("UNAVAILABLE"));
    assert_eq!(e.message(), "The model is overloaded.");
    assert!(e.is_retryable());
}

#[tokio::test]
async fn arguments_the_tool_cannot_take_go_back_as_an_error_response_and_the_loop_goes_on() {
    let call = chunk(
        json!([{"functionCall": {"name": "weather", "args": {"latitude": 52.52, "longitude": "13.40"}}}]),
        Some("STOP"),
    );
    let server = ReplayServer::with_interactions(vec![
        exchange(RecordedResponse::json(200, call.to_string())),
        exchange(text_answer("I could not get the weather.")),
    ])
    .await
    .unwrap();
    let (provider, _) = provider(&server, 0);
    let mut chat = Chat::new(provider);
    chat.with_tools(Weather).unwrap();
    let answer = chat.ask("Weather in Berlin?").await.unwrap();
    assert_eq!(
        answer.text().as_deref(),
        Some("I could not get the weather.")
    );
    let result = chat
        .messages()
        .iter()
        .find(|m| m.role == Role::Tool)
        .unwrap();
    assert!(result.is_error);
    let second = &server.received()[1].body;
    let response = &second["contents"][2]["parts"][0]["functionResponse"];
    assert_eq!(response["name"], "weather");
    let error = response["response"]["error"].as_str().unwrap();
    assert!(error.contains("latitude"), "{error}");
    assert!(response["response"].get("output").is_none());
}

#[tokio::test]
async fn a_streamed_call_runs_and_its_arguments_arrive_whole() {
    let server = ReplayServer::with_interactions(vec![
        exchange(RecordedResponse::sse(sse(&[chunk(
            json!([{"functionCall": {"name": "weather", "args": {"latitude": "52.52", "longitude": "13.40"}},
                    "thoughtSignature": "c2lnbmF0dXJl"}]),
            Some("STOP"),
        )]))),
        exchange(RecordedResponse::sse(sse(&[chunk(json!([{"text": "15°C."}]), Some("STOP"))]))),
    ])
    .await
    .unwrap();
    let (provider, _) = provider(&server, 0);
    let mut chat = Chat::new(provider);
    chat.with_tools(Weather).unwrap();
    let (text, events) = stream_turn(&mut chat, "Weather?").await.unwrap();
    assert_eq!(text, "15°C.");
    let fragments: Vec<&String> = events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::Model(StreamEvent::ToolCallDelta { fragment, .. }) => Some(fragment),
            _ => None,
        })
        .collect();
    assert_eq!(fragments.len(), 1);
    let args: Value = serde_json::from_str(fragments[0]).unwrap();
    assert_eq!(args, json!({"latitude": "52.52", "longitude": "13.40"}));
    let second = &server.received()[1];
    assert!(
        second.path.ends_with(":streamGenerateContent?alt=sse"),
        "{}",
        second.path
    );
    assert_eq!(
        second.body["contents"][1]["parts"][0]["thoughtSignature"],
        "c2lnbmF0dXJl"
    );
}
