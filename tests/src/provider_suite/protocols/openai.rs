//! OpenAI Chat Completions and Responses. Written from the API reference's formats, in the shape
//! of `tests/fixtures/recorded/openai-chat/` and `openai-responses/`; Chat Completions streams
//! end with the usage chunk (`stream_options.include_usage`) and `[DONE]`.

use std::sync::Arc;

use llm_tools_core::Provider;
use llm_tools_providers::http::RetryPolicy;
use llm_tools_providers::openai::{OpenAiChat, OpenAiConfig, OpenAiResponses};
use llm_tools_providers::record::RecordedResponse;
use llm_tools_providers::replay::ReplayServer;
use serde_json::{Value, json};

use super::{halves, no_preamble};
use crate::provider_suite::wire::{self, sse_data, sse_named};
use crate::provider_suite::{Call, INPUT_TOKENS, OUTPUT_TOKENS, Protocol, TextArguments};

/// An OpenAI error body (`{"error": {"message", "type", "code"}}`).
fn error(status: u16, message: &str) -> RecordedResponse {
    let (kind, code) = match status {
        429 => ("requests", json!("rate_limit_exceeded")),
        400..=499 => ("invalid_request_error", Value::Null),
        _ => ("server_error", Value::Null),
    };
    RecordedResponse::json(
        status,
        json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
            .to_string(),
    )
}

/// Chat Completions: the error as a chunk of its own (`data: {"error": …}`).
fn chat_stream_error(message: &str) -> Vec<u8> {
    sse_data(
        &json!({"error": {"message": message, "type": "server_error", "param": null, "code": null}}),
    )
}

/// Responses: the `error` event.
fn responses_stream_error(message: &str) -> Vec<u8> {
    sse_named(
        "error",
        &json!({"type": "error", "code": "server_error", "message": message, "param": null, "sequence_number": 3}),
    )
}

// ----- Chat Completions -----

fn chat_provider(server: &ReplayServer, retry: RetryPolicy) -> Arc<dyn Provider> {
    let config = OpenAiConfig::openai("gpt-5-nano")
        .with_api_key("sk-test")
        .with_base_url(server.url())
        .with_retry(retry);
    Arc::new(OpenAiChat::new(config).expect("the provider"))
}

fn chat_usage() -> Value {
    json!({"prompt_tokens": INPUT_TOKENS, "completion_tokens": OUTPUT_TOKENS,
           "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS})
}

fn chat_answer(text: &str, calls: &[Call<'_>]) -> RecordedResponse {
    let mut message = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
    if !calls.is_empty() {
        message["tool_calls"] = calls
            .iter()
            .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.joined(), "arguments": c.arguments}}))
            .collect();
    }
    let finish = if calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    RecordedResponse::json(
        200,
        json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1_764_000_000, "model": "gpt-5-nano",
               "choices": [{"index": 0, "message": message, "finish_reason": finish}],
               "usage": chat_usage()})
        .to_string(),
    )
}

fn chat_chunk(delta: Value, finish: Value) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1_764_000_000,
           "model": "gpt-5-nano", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

fn chat_stream(text: &str, calls: &[Call<'_>]) -> Vec<Vec<u8>> {
    let mut events = vec![sse_data(&chat_chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    ))];
    if !text.is_empty() {
        let (a, b) = halves(text);
        for part in [a, b] {
            events.push(sse_data(&chat_chunk(json!({"content": part}), Value::Null)));
        }
    }
    for (i, c) in calls.iter().enumerate() {
        events.push(sse_data(&chat_chunk(
            json!({"tool_calls": [{"index": i, "id": c.id, "type": "function",
                                    "function": {"name": c.joined(), "arguments": ""}}]}),
            Value::Null,
        )));
        let (a, b) = halves(c.arguments);
        for part in [a, b] {
            events.push(sse_data(&chat_chunk(
                json!({"tool_calls": [{"index": i, "function": {"arguments": part}}]}),
                Value::Null,
            )));
        }
    }
    let finish = if calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    events.push(sse_data(&chat_chunk(json!({}), json!(finish))));
    events.push(sse_data(
        &json!({"id": "chatcmpl-1", "object": "chat.completion.chunk",
        "created": 1_764_000_000, "model": "gpt-5-nano", "choices": [], "usage": chat_usage()}),
    ));
    events.push(b"data: [DONE]\n\n".to_vec());
    events
}

fn chat_context_length() -> (RecordedResponse, String) {
    let r = wire::recorded_answer("recorded/openai-chat-errors", "deepseek");
    let m = wire::message_at(&r, "/error/message");
    (r, m)
}

/// The calls of the assistant messages sent (Chat Completions' `tool_calls`; Ollama's too).
pub(super) fn chat_calls_sent(body: &Value) -> Vec<(String, String, Value)> {
    wire::blocks(body, "messages", "assistant", "tool_calls")
        .map(|c| wire::call_sent(c, "id", "/function/name", "/function/arguments"))
        .collect()
}

/// The tool results sent (`role: tool` messages; Ollama's too).
pub(super) fn chat_results_sent(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap_or_default().to_owned(),
                wire::text_of(&m["content"]),
            )
        })
        .collect()
}

/// OpenAI Chat Completions (`/chat/completions`), as OpenAI serves it.
pub static CHAT_COMPLETIONS: Protocol = Protocol {
    name: "OpenAI Chat Completions",
    provider: chat_provider,
    preamble: no_preamble,
    answer: chat_answer,
    stream: chat_stream,
    stream_content_type: "text/event-stream",
    error,
    context_length: chat_context_length,
    results_sent: chat_results_sent,
    errors_marked: None,
    calls_sent: chat_calls_sent,
    text_arguments: TextArguments {
        whole: true,
        streamed: true,
    },
    stream_error: Some(chat_stream_error),
    stream_error_retryable: Some(true),
    optional_tail: 2,
    recorded: &["openai-chat"],
    documented_fields: &[],
    known_failures: &[],
};

// ----- Responses -----

fn responses_provider(server: &ReplayServer, retry: RetryPolicy) -> Arc<dyn Provider> {
    let config = OpenAiConfig::openai("gpt-5-nano")
        .with_api_key("sk-test")
        .with_base_url(server.url())
        .with_retry(retry);
    Arc::new(OpenAiResponses::new(config).expect("the provider"))
}

fn responses_message(text: &str) -> Value {
    json!({"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
           "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]})
}

fn responses_call(i: usize, c: &Call<'_>, arguments: &str, status: &str) -> Value {
    let mut item = json!({"type": "function_call", "id": format!("fc_{i}"), "call_id": c.id,
                          "name": c.name, "arguments": arguments, "status": status});
    if let Some(ns) = c.namespace {
        item["namespace"] = json!(ns);
    }
    item
}

fn responses_output(text: &str, calls: &[Call<'_>]) -> Vec<Value> {
    let mut output = Vec::new();
    if !text.is_empty() {
        output.push(responses_message(text));
    }
    for (i, c) in calls.iter().enumerate() {
        output.push(responses_call(i, c, c.arguments, "completed"));
    }
    output
}

fn responses_body(output: Vec<Value>, status: &str) -> Value {
    json!({"id": "resp_1", "object": "response", "created_at": 1_764_000_000, "status": status,
           "model": "gpt-5-nano", "output": output,
           "usage": {"input_tokens": INPUT_TOKENS, "input_tokens_details": {"cached_tokens": 0},
                     "output_tokens": OUTPUT_TOKENS, "output_tokens_details": {"reasoning_tokens": 0},
                     "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS}})
}

fn responses_answer(text: &str, calls: &[Call<'_>]) -> RecordedResponse {
    RecordedResponse::json(
        200,
        responses_body(responses_output(text, calls), "completed").to_string(),
    )
}

fn responses_stream(text: &str, calls: &[Call<'_>]) -> Vec<Vec<u8>> {
    let mut seq = 0;
    let mut event = |name: &str, mut data: Value| {
        data["type"] = json!(name);
        data["sequence_number"] = json!(seq);
        seq += 1;
        sse_named(name, &data)
    };
    let mut events = vec![event(
        "response.created",
        json!({"response": {"id": "resp_1", "object": "response", "status": "in_progress", "model": "gpt-5-nano", "output": []}}),
    )];
    let mut index = 0;
    if !text.is_empty() {
        events.push(event(
            "response.output_item.added",
            json!({"output_index": 0, "item": {"type": "message", "id": "msg_1", "status": "in_progress", "role": "assistant", "content": []}}),
        ));
        let (a, b) = halves(text);
        for part in [a, b] {
            events.push(event(
                "response.output_text.delta",
                json!({"item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": part}),
            ));
        }
        events.push(event(
            "response.output_item.done",
            json!({"output_index": 0, "item": responses_message(text)}),
        ));
        index += 1;
    }
    for (i, c) in calls.iter().enumerate() {
        let at = index + i;
        events.push(event(
            "response.output_item.added",
            json!({"output_index": at, "item": responses_call(i, c, "", "in_progress")}),
        ));
        let (a, b) = halves(c.arguments);
        for part in [a, b] {
            events.push(event(
                "response.function_call_arguments.delta",
                json!({"item_id": format!("fc_{i}"), "output_index": at, "delta": part}),
            ));
        }
        events.push(event(
            "response.function_call_arguments.done",
            json!({"item_id": format!("fc_{i}"), "output_index": at, "arguments": c.arguments}),
        ));
        events.push(event(
            "response.output_item.done",
            json!({"output_index": at, "item": responses_call(i, c, c.arguments, "completed")}),
        ));
    }
    events.push(event(
        "response.completed",
        json!({"response": responses_body(responses_output(text, calls), "completed")}),
    ));
    events
}

fn responses_context_length() -> (RecordedResponse, String) {
    let r = wire::recorded_answer("recorded/openai-responses-errors", "context_length");
    let m = wire::message_at(&r, "/error/message");
    (r, m)
}

fn responses_calls_sent(body: &Value) -> Vec<(String, String, Value)> {
    body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["type"] == "function_call")
        .map(|c| {
            let (id, name, arguments) = wire::call_sent(c, "call_id", "/name", "/arguments");
            match c["namespace"].as_str() {
                Some(ns) => (id, format!("{ns}_{name}"), arguments),
                None => (id, name, arguments),
            }
        })
        .collect()
}

fn responses_results_sent(body: &Value) -> Vec<(String, String)> {
    body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["type"] == "function_call_output")
        .map(|m| {
            (
                m["call_id"].as_str().unwrap_or_default().to_owned(),
                wire::text_of(&m["output"]),
            )
        })
        .collect()
}

/// The OpenAI Responses API (`/responses`).
pub static RESPONSES: Protocol = Protocol {
    name: "OpenAI Responses",
    provider: responses_provider,
    preamble: no_preamble,
    answer: responses_answer,
    stream: responses_stream,
    stream_content_type: "text/event-stream",
    error,
    context_length: responses_context_length,
    results_sent: responses_results_sent,
    errors_marked: None,
    calls_sent: responses_calls_sent,
    text_arguments: TextArguments {
        whole: true,
        streamed: true,
    },
    stream_error: Some(responses_stream_error),
    stream_error_retryable: Some(true),
    optional_tail: 0,
    recorded: &["openai-responses"],
    // A call to a tool of a `namespace` group names its namespace; no recording has one.
    documented_fields: &[
        "output[].namespace",
        "<response.output_item.added>.item.namespace",
        "<response.output_item.done>.item.namespace",
    ],
    known_failures: &[],
};
