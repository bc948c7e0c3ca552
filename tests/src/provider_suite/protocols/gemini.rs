//! Gemini (the Gemini API and Vertex AI, one wire format). Written from the `generateContent`
//! reference (`functionCall` parts with their `id`, `usageMetadata`, `streamGenerateContent?alt=sse`
//! chunks), in the shape of `tests/fixtures/recorded/gemini/`. The context-length refusal is the
//! one recorded from Vertex AI (`gemini-vertex-errors/`), which the Gemini API words the same:
//! the Gemini API recording of `gemini-errors/` is a per-minute token quota, a 429.

use std::sync::Arc;

use llm_tools_core::Provider;
use llm_tools_providers::gemini::{Gemini, GeminiConfig, GoogleCredentials};
use llm_tools_providers::http::RetryPolicy;
use llm_tools_providers::record::RecordedResponse;
use llm_tools_providers::replay::ReplayServer;
use serde_json::{Value, json};

use super::{halves, no_preamble};
use crate::provider_suite::wire::{self, sse_data};
use crate::provider_suite::{Call, INPUT_TOKENS, OUTPUT_TOKENS, Protocol, TextArguments};

fn provider(server: &ReplayServer, retry: RetryPolicy) -> Arc<dyn Provider> {
    let config = GeminiConfig::new("gemini-2.5-flash")
        .with_api_key("test-key")
        .with_base_url(format!("{}/v1beta", server.url()))
        .with_retry(retry);
    Arc::new(Gemini::new(config).expect("the provider"))
}

fn vertex_provider(server: &ReplayServer, retry: RetryPolicy) -> Arc<dyn Provider> {
    let url = server.url();
    let config = GeminiConfig::vertex("proj-1", "us-central1", "gemini-2.5-flash")
        .with_base_url(format!(
            "{url}/v1beta1/projects/proj-1/locations/us-central1/publishers/google"
        ))
        .with_token_uri(format!("{url}/token"))
        .with_google_credentials(GoogleCredentials::refresh_token(
            "client-1",
            "client-secret",
            "refresh-token",
        ))
        .with_retry(retry);
    Arc::new(Gemini::new(config).expect("the provider"))
}

/// Vertex AI's token exchange (the OAuth answer of `gemini-vertex/`'s recordings).
fn vertex_preamble() -> Vec<RecordedResponse> {
    vec![RecordedResponse::json(
        200,
        json!({"access_token": "ya29.test-token", "expires_in": 3599, "token_type": "Bearer"})
            .to_string(),
    )]
}

fn usage() -> Value {
    json!({"promptTokenCount": INPUT_TOKENS, "candidatesTokenCount": OUTPUT_TOKENS,
           "totalTokenCount": INPUT_TOKENS + OUTPUT_TOKENS})
}

/// One chunk (or a whole answer) with `parts`; the last carries the finish reason and usage.
fn chunk(parts: Vec<Value>, last: bool) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    let mut body =
        json!({"candidates": [], "modelVersion": "gemini-2.5-flash", "responseId": "r-1"});
    if last {
        candidate["finishReason"] = json!("STOP");
        body["usageMetadata"] = usage();
    }
    body["candidates"] = json!([candidate]);
    body
}

fn call_part(i: usize, c: &Call<'_>) -> Value {
    json!({"functionCall": {"id": c.id, "name": c.joined(), "args": wire::placeholder(i)}})
}

fn answer(text: &str, calls: &[Call<'_>]) -> RecordedResponse {
    let mut parts = Vec::new();
    if !text.is_empty() {
        parts.push(json!({"text": text}));
    }
    parts.extend(calls.iter().enumerate().map(|(i, c)| call_part(i, c)));
    let arguments: Vec<&str> = calls.iter().map(|c| c.arguments).collect();
    RecordedResponse::json(
        200,
        wire::with_raw_arguments(&chunk(parts, true), &arguments),
    )
}

fn stream(text: &str, calls: &[Call<'_>]) -> Vec<Vec<u8>> {
    let mut chunks: Vec<(Vec<Value>, Option<&str>)> = Vec::new();
    if !text.is_empty() {
        let (a, b) = halves(text);
        chunks.push((vec![json!({"text": a})], None));
        chunks.push((vec![json!({"text": b})], None));
    }
    for c in calls {
        chunks.push((vec![call_part(0, c)], Some(c.arguments)));
    }
    if chunks.is_empty() {
        chunks.push((vec![json!({"text": ""})], None));
    }
    let n = chunks.len();
    chunks
        .into_iter()
        .enumerate()
        .map(|(k, (parts, arguments))| {
            let body = chunk(parts, k + 1 == n);
            match arguments {
                // Each call is the only part of its chunk, so its placeholder is the first.
                Some(a) => {
                    format!("data: {}\n\n", wire::with_raw_arguments(&body, &[a])).into_bytes()
                }
                None => sse_data(&body),
            }
        })
        .collect()
}

/// The error a stream carries as a chunk of its own.
fn stream_error(message: &str) -> Vec<u8> {
    sse_data(&json!({"error": {"code": 503, "message": message, "status": "UNAVAILABLE"}}))
}

fn error(status: u16, message: &str) -> RecordedResponse {
    let name = match status {
        429 => "RESOURCE_EXHAUSTED",
        503 => "UNAVAILABLE",
        400..=499 => "INVALID_ARGUMENT",
        _ => "INTERNAL",
    };
    RecordedResponse::json(
        status,
        json!({"error": {"code": status, "message": message, "status": name}}).to_string(),
    )
}

fn context_length() -> (RecordedResponse, String) {
    let r = wire::recorded_answer("recorded/gemini-vertex-errors", "context_length");
    let m = wire::message_at(&r, "/error/message");
    (r, m)
}

fn calls_sent(body: &Value) -> Vec<(String, String, Value)> {
    wire::blocks(body, "contents", "model", "parts")
        .filter_map(|p| p.get("functionCall"))
        .map(|c| wire::call_sent(c, "id", "/name", "/args"))
        .collect()
}

/// An error result is the `error` of its `functionResponse.response`, a result its `output`.
fn errors_marked(body: &Value) -> Vec<bool> {
    wire::blocks(body, "contents", "user", "parts")
        .chain(wire::blocks(body, "contents", "function", "parts"))
        .filter_map(|p| p.get("functionResponse"))
        .map(|r| r["response"].get("error").is_some())
        .collect()
}

fn results_sent(body: &Value) -> Vec<(String, String)> {
    body["contents"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["parts"].as_array().cloned().unwrap_or_default())
        .filter_map(|p| p.get("functionResponse").cloned())
        .map(|r| {
            let id = r["id"].as_str().or(r["name"].as_str()).unwrap_or_default();
            let response = &r["response"];
            let text = ["content", "result", "output", "error"]
                .iter()
                .find_map(|k| response.get(*k))
                .map(wire::text_of)
                .unwrap_or_else(|| response.to_string());
            (id.to_owned(), text)
        })
        .collect()
}

/// `FunctionCall.id` ("the unique id of the function call", returned with the matching
/// `FunctionResponse.id`): the recorded models sent none.
const GEMINI_DOCUMENTED: &[&str] = &[
    "candidates[].content.parts[].functionCall.id",
    "<>.candidates[].content.parts[].functionCall.id",
];

const TEXT_ARGUMENTS: TextArguments = TextArguments {
    whole: false,
    streamed: false,
};

/// The Gemini API (`generativelanguage.googleapis.com`, an API key).
pub static GEMINI: Protocol = Protocol {
    name: "Gemini",
    provider,
    preamble: no_preamble,
    answer,
    stream,
    stream_content_type: "text/event-stream",
    error,
    context_length,
    results_sent,
    errors_marked: Some(errors_marked),
    calls_sent,
    text_arguments: TEXT_ARGUMENTS,
    stream_error: Some(stream_error),
    stream_error_retryable: Some(true),
    optional_tail: 0,
    recorded: &["gemini", "gemini-vertex"],
    documented_fields: GEMINI_DOCUMENTED,
    known_failures: &[],
};

/// Gemini on Vertex AI (OAuth from a refresh token, the publisher path).
pub static VERTEX: Protocol = Protocol {
    name: "Gemini on Vertex AI",
    provider: vertex_provider,
    preamble: vertex_preamble,
    answer,
    stream,
    stream_content_type: "text/event-stream",
    error,
    context_length,
    results_sent,
    errors_marked: Some(errors_marked),
    calls_sent,
    text_arguments: TEXT_ARGUMENTS,
    stream_error: Some(stream_error),
    stream_error_retryable: Some(true),
    optional_tail: 0,
    recorded: &["gemini", "gemini-vertex"],
    documented_fields: GEMINI_DOCUMENTED,
    known_failures: &[],
};
