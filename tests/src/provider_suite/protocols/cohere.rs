//! Cohere v2 chat. Written from the v2 Chat reference (`tool_calls` with string `arguments`, the
//! stream's `message-start`, `content-start`/`-delta`/`-end`, `tool-call-start`/`-delta`/`-end`
//! and `message-end` events), in the shape of `tests/fixtures/recorded/cohere-v2/`.

use std::sync::Arc;

use llm_tools_core::Provider;
use llm_tools_providers::cohere::{Cohere, CohereConfig};
use llm_tools_providers::http::RetryPolicy;
use llm_tools_providers::record::RecordedResponse;
use llm_tools_providers::replay::ReplayServer;
use serde_json::{Value, json};

use super::{halves, no_preamble};
use crate::provider_suite::wire::{self, sse_named};
use crate::provider_suite::{Call, INPUT_TOKENS, OUTPUT_TOKENS, Protocol, TextArguments};

fn provider(server: &ReplayServer, retry: RetryPolicy) -> Arc<dyn Provider> {
    let config = CohereConfig::new("command-a-03-2025")
        .with_api_key("co-test")
        .with_base_url(format!("{}/v2", server.url()))
        .with_retry(retry);
    Arc::new(Cohere::new(config).expect("the provider"))
}

fn usage() -> Value {
    let tokens = json!({"input_tokens": INPUT_TOKENS, "output_tokens": OUTPUT_TOKENS});
    json!({"billed_units": tokens, "tokens": tokens})
}

fn finish(calls: &[Call<'_>]) -> &'static str {
    if calls.is_empty() {
        "COMPLETE"
    } else {
        "TOOL_CALL"
    }
}

fn answer(text: &str, calls: &[Call<'_>]) -> RecordedResponse {
    let mut message = json!({"role": "assistant"});
    if !text.is_empty() {
        message["content"] = json!([{"type": "text", "text": text}]);
    }
    if !calls.is_empty() {
        message["tool_plan"] = json!("I will call the tools.");
        message["tool_calls"] = calls
            .iter()
            .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.joined(), "arguments": c.arguments}}))
            .collect();
    }
    RecordedResponse::json(
        200,
        json!({"id": "r-1", "message": message, "finish_reason": finish(calls), "usage": usage()})
            .to_string(),
    )
}

fn stream(text: &str, calls: &[Call<'_>]) -> Vec<Vec<u8>> {
    let event = |name: &str, mut data: Value| {
        data["type"] = json!(name);
        sse_named(name, &data)
    };
    let mut events = vec![event(
        "message-start",
        json!({"id": "r-1", "delta": {"message": {"role": "assistant", "content": [], "tool_plan": "", "tool_calls": [], "citations": []}}}),
    )];
    if !text.is_empty() {
        events.push(event(
            "content-start",
            json!({"index": 0, "delta": {"message": {"content": {"type": "text", "text": ""}}}}),
        ));
        let (a, b) = halves(text);
        for part in [a, b] {
            events.push(event(
                "content-delta",
                json!({"index": 0, "delta": {"message": {"content": {"text": part}}}}),
            ));
        }
        events.push(event("content-end", json!({"index": 0})));
    }
    if !calls.is_empty() {
        events.push(event(
            "tool-plan-delta",
            json!({"delta": {"message": {"tool_plan": "I will call the tools."}}}),
        ));
    }
    for (i, c) in calls.iter().enumerate() {
        events.push(event(
            "tool-call-start",
            json!({"index": i, "delta": {"message": {"tool_calls": {"id": c.id, "type": "function",
                "function": {"name": c.joined(), "arguments": ""}}}}}),
        ));
        let (a, b) = halves(c.arguments);
        for part in [a, b] {
            events.push(event(
                "tool-call-delta",
                json!({"index": i, "delta": {"message": {"tool_calls": {"function": {"arguments": part}}}}}),
            ));
        }
        events.push(event("tool-call-end", json!({"index": i})));
    }
    events.push(event(
        "message-end",
        json!({"delta": {"finish_reason": finish(calls), "usage": usage()}}),
    ));
    events
}

fn error(status: u16, message: &str) -> RecordedResponse {
    RecordedResponse::json(
        status,
        json!({"id": "2d4609a6-d1f9-4cf4-8d09-af865409bdc2", "message": message}).to_string(),
    )
}

fn context_length() -> (RecordedResponse, String) {
    let r = wire::recorded_answer("recorded/cohere-v2-errors", "context_length");
    let m = wire::message_at(&r, "/message");
    (r, m)
}

fn calls_sent(body: &Value) -> Vec<(String, String, Value)> {
    wire::blocks(body, "messages", "assistant", "tool_calls")
        .map(|c| wire::call_sent(c, "id", "/function/name", "/function/arguments"))
        .collect()
}

/// v2 tool messages have no error flag: the provider starts an error result's text with
/// `Error: `.
fn errors_marked(body: &Value) -> Vec<bool> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| wire::text_of(&m["content"]).starts_with("Error: "))
        .collect()
}

fn results_sent(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            // v2 tool messages have no error flag: the provider marks an error result in its
            // text.
            let text = wire::text_of(&m["content"]);
            let text = text
                .strip_prefix("Error: ")
                .map(str::to_owned)
                .unwrap_or(text);
            (
                m["tool_call_id"].as_str().unwrap_or_default().to_owned(),
                text,
            )
        })
        .collect()
}

/// Cohere's v2 chat (`/v2/chat`).
pub static COHERE: Protocol = Protocol {
    name: "Cohere v2",
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
        whole: true,
        streamed: true,
    },
    stream_error: None,
    stream_error_retryable: None,
    optional_tail: 0,
    recorded: &["cohere-v2"],
    documented_fields: &[],
    known_failures: &[],
};
