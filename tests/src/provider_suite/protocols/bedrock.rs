//! Bedrock Converse. Written from the Converse and ConverseStream references (`toolUse` blocks;
//! the stream's `messageStart`, `contentBlockStart`/`Delta`/`Stop`, `messageStop` and `metadata`
//! events in AWS event-stream frames; errors named by `x-amzn-errortype`), in the shape of
//! `tests/fixtures/recorded/bedrock-converse/`.

use std::sync::Arc;

use llm_tools_core::Provider;
use llm_tools_providers::bedrock::{AwsCredentials, Bedrock, BedrockConfig};
use llm_tools_providers::http::RetryPolicy;
use llm_tools_providers::record::RecordedResponse;
use llm_tools_providers::replay::ReplayServer;
use serde_json::{Value, json};

use super::{halves, no_preamble};
use crate::provider_suite::wire::{self, event_frame};
use crate::provider_suite::{Call, INPUT_TOKENS, OUTPUT_TOKENS, Protocol, TextArguments};

fn provider(server: &ReplayServer, retry: RetryPolicy) -> Arc<dyn Provider> {
    let config = BedrockConfig::new("us.amazon.nova-2-lite-v1:0")
        .with_region("eu-west-3")
        .with_credentials(AwsCredentials::new("AKIDTEST", "test-secret"))
        .with_base_url(server.url())
        .with_retry(retry);
    Arc::new(Bedrock::new(config).expect("the provider"))
}

fn usage() -> Value {
    json!({"inputTokens": INPUT_TOKENS, "outputTokens": OUTPUT_TOKENS,
           "totalTokens": INPUT_TOKENS + OUTPUT_TOKENS})
}

fn stop_reason(calls: &[Call<'_>]) -> &'static str {
    if calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    }
}

fn answer(text: &str, calls: &[Call<'_>]) -> RecordedResponse {
    let mut content = Vec::new();
    if !text.is_empty() {
        content.push(json!({"text": text}));
    }
    for (i, c) in calls.iter().enumerate() {
        content.push(json!({"toolUse": {"toolUseId": c.id, "name": c.joined(), "input": wire::placeholder(i)}}));
    }
    let body = json!({"output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop_reason(calls), "usage": usage(), "metrics": {"latencyMs": 420}});
    let arguments: Vec<&str> = calls.iter().map(|c| c.arguments).collect();
    RecordedResponse::json(200, wire::with_raw_arguments(&body, &arguments))
}

fn stream(text: &str, calls: &[Call<'_>]) -> Vec<Vec<u8>> {
    let frame = |name: &str, payload: Value| event_frame(name, &payload.to_string());
    let mut events = vec![frame("messageStart", json!({"role": "assistant"}))];
    let mut index = 0;
    if !text.is_empty() {
        let (a, b) = halves(text);
        for part in [a, b] {
            events.push(frame(
                "contentBlockDelta",
                json!({"contentBlockIndex": 0, "delta": {"text": part}}),
            ));
        }
        events.push(frame("contentBlockStop", json!({"contentBlockIndex": 0})));
        index += 1;
    }
    for c in calls {
        events.push(frame(
            "contentBlockStart",
            json!({"contentBlockIndex": index, "start": {"toolUse": {"toolUseId": c.id, "name": c.joined()}}}),
        ));
        let (a, b) = halves(c.arguments);
        for part in [a, b] {
            events.push(frame(
                "contentBlockDelta",
                json!({"contentBlockIndex": index, "delta": {"toolUse": {"input": part}}}),
            ));
        }
        events.push(frame(
            "contentBlockStop",
            json!({"contentBlockIndex": index}),
        ));
        index += 1;
    }
    events.push(frame(
        "messageStop",
        json!({"stopReason": stop_reason(calls)}),
    ));
    events.push(frame(
        "metadata",
        json!({"usage": usage(), "metrics": {"latencyMs": 420}}),
    ));
    events
}

/// A `throttlingException` frame of ConverseStream.
fn stream_error(message: &str) -> Vec<u8> {
    wire::exception_frame(
        "throttlingException",
        &json!({"message": message}).to_string(),
    )
}

fn error(status: u16, message: &str) -> RecordedResponse {
    let kind = match status {
        429 => "ThrottlingException",
        503 => "ServiceUnavailableException",
        400..=499 => "ValidationException",
        _ => "InternalServerException",
    };
    RecordedResponse::json(status, json!({"message": message}).to_string()).with_header(
        "x-amzn-errortype",
        &format!("{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/"),
    )
}

fn context_length() -> (RecordedResponse, String) {
    let r = wire::recorded_answer("recorded/bedrock-converse-errors", "context_length");
    let m = wire::message_at(&r, "/message");
    (r, m)
}

fn calls_sent(body: &Value) -> Vec<(String, String, Value)> {
    wire::blocks(body, "messages", "assistant", "content")
        .filter_map(|b| b.get("toolUse"))
        .map(|b| wire::call_sent(b, "toolUseId", "/name", "/input"))
        .collect()
}

fn errors_marked(body: &Value) -> Vec<bool> {
    wire::blocks(body, "messages", "user", "content")
        .filter_map(|b| b.get("toolResult"))
        .map(|r| r["status"] == "error")
        .collect()
}

fn results_sent(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|b| b.get("toolResult").cloned())
        .map(|r| {
            (
                r["toolUseId"].as_str().unwrap_or_default().to_owned(),
                wire::text_of(&r["content"]),
            )
        })
        .collect()
}

/// Bedrock Converse (`/model/{id}/converse` and `/converse-stream`).
pub static BEDROCK: Protocol = Protocol {
    name: "Bedrock Converse",
    provider,
    preamble: no_preamble,
    answer,
    stream,
    stream_content_type: "application/vnd.amazon.eventstream",
    error,
    context_length,
    results_sent,
    errors_marked: Some(errors_marked),
    calls_sent,
    text_arguments: TextArguments {
        whole: false,
        streamed: true,
    },
    stream_error: Some(stream_error),
    stream_error_retryable: Some(true),
    optional_tail: 1,
    recorded: &["bedrock-converse"],
    documented_fields: &[],
    known_failures: &[],
};
