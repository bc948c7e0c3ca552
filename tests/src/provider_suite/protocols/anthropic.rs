//! Anthropic Messages. Written from the Messages API reference (streaming: `message_start`,
//! content blocks with `text_delta` and `input_json_delta`, `message_delta`, `message_stop`), in
//! the shape of `tests/fixtures/recorded/anthropic-messages/`.

use std::sync::Arc;

use llm_tools_core::Provider;
use llm_tools_providers::anthropic::{Anthropic, AnthropicConfig};
use llm_tools_providers::http::RetryPolicy;
use llm_tools_providers::record::RecordedResponse;
use llm_tools_providers::replay::ReplayServer;
use serde_json::{Value, json};

use super::{halves, no_preamble};
use crate::provider_suite::wire::{self, sse_named};
use crate::provider_suite::{Call, INPUT_TOKENS, OUTPUT_TOKENS, Protocol, TextArguments};

fn provider(server: &ReplayServer, retry: RetryPolicy) -> Arc<dyn Provider> {
    let config = AnthropicConfig::new("claude-haiku-4-5")
        .with_api_key("sk-ant-test")
        .with_base_url(server.url())
        .with_retry(retry);
    Arc::new(Anthropic::new(config).expect("the provider"))
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
        content.push(json!({"type": "text", "text": text}));
    }
    for (i, c) in calls.iter().enumerate() {
        content.push(json!({"type": "tool_use", "id": c.id, "name": c.joined(), "input": wire::placeholder(i)}));
    }
    let body = json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
        "content": content, "stop_reason": stop_reason(calls), "stop_sequence": null,
        "usage": {"input_tokens": INPUT_TOKENS, "output_tokens": OUTPUT_TOKENS}});
    let arguments: Vec<&str> = calls.iter().map(|c| c.arguments).collect();
    RecordedResponse::json(200, wire::with_raw_arguments(&body, &arguments))
}

fn stream(text: &str, calls: &[Call<'_>]) -> Vec<Vec<u8>> {
    let event = |name: &str, mut data: Value| {
        data["type"] = json!(name);
        sse_named(name, &data)
    };
    let mut events = vec![event(
        "message_start",
        json!({"message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": INPUT_TOKENS, "output_tokens": 1}}}),
    )];
    let mut index = 0;
    if !text.is_empty() {
        events.push(event(
            "content_block_start",
            json!({"index": 0, "content_block": {"type": "text", "text": ""}}),
        ));
        let (a, b) = halves(text);
        for part in [a, b] {
            events.push(event(
                "content_block_delta",
                json!({"index": 0, "delta": {"type": "text_delta", "text": part}}),
            ));
        }
        events.push(event("content_block_stop", json!({"index": 0})));
        index += 1;
    }
    for c in calls {
        events.push(event(
            "content_block_start",
            json!({"index": index, "content_block": {"type": "tool_use", "id": c.id, "name": c.joined(), "input": {}}}),
        ));
        let (a, b) = halves(c.arguments);
        for part in [a, b] {
            events.push(event(
                "content_block_delta",
                json!({"index": index, "delta": {"type": "input_json_delta", "partial_json": part}}),
            ));
        }
        events.push(event("content_block_stop", json!({"index": index})));
        index += 1;
    }
    events.push(event(
        "message_delta",
        json!({"delta": {"stop_reason": stop_reason(calls), "stop_sequence": null},
               "usage": {"output_tokens": OUTPUT_TOKENS}}),
    ));
    events.push(event("message_stop", json!({})));
    events
}

fn stream_error(message: &str) -> Vec<u8> {
    sse_named(
        "error",
        &json!({"type": "error", "error": {"type": "overloaded_error", "message": message}}),
    )
}

fn error(status: u16, message: &str) -> RecordedResponse {
    let kind = match status {
        429 => "rate_limit_error",
        529 => "overloaded_error",
        400..=499 => "invalid_request_error",
        _ => "api_error",
    };
    RecordedResponse::json(
        status,
        json!({"type": "error", "error": {"type": kind, "message": message}}).to_string(),
    )
}

fn context_length() -> (RecordedResponse, String) {
    let r = wire::recorded_answer("recorded/anthropic-messages-errors", "context_length");
    let m = wire::message_at(&r, "/error/message");
    (r, m)
}

fn calls_sent(body: &Value) -> Vec<(String, String, Value)> {
    wire::blocks(body, "messages", "assistant", "content")
        .filter(|b| b["type"] == "tool_use")
        .map(|b| wire::call_sent(b, "id", "/name", "/input"))
        .collect()
}

fn errors_marked(body: &Value) -> Vec<bool> {
    wire::blocks(body, "messages", "user", "content")
        .filter(|b| b["type"] == "tool_result")
        .map(|b| b["is_error"] == true)
        .collect()
}

fn results_sent(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            (
                b["tool_use_id"].as_str().unwrap_or_default().to_owned(),
                wire::text_of(&b["content"]),
            )
        })
        .collect()
}

/// Anthropic Messages (`/v1/messages`).
pub static ANTHROPIC: Protocol = Protocol {
    name: "Anthropic Messages",
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
    text_arguments: TextArguments {
        whole: false,
        streamed: true,
    },
    stream_error: Some(stream_error),
    stream_error_retryable: Some(true),
    optional_tail: 0,
    recorded: &["anthropic-messages"],
    documented_fields: &[],
    known_failures: &[],
};
