//! Ollama's native API (`/api/chat`). Written from its documentation (`docs/api.md`,
//! `api/types.go`: `tool_calls` with object `arguments` and an `id`, NDJSON streams ending with
//! a `done` line carrying `prompt_eval_count` and `eval_count`): no recording of the native API
//! exists in `tests/fixtures/recorded/`. The context-length refusal is the documented one of
//! `tests/fixtures/documented/ollama_context_length.json`.

use std::sync::Arc;

use llm_tools_core::Provider;
use llm_tools_providers::http::RetryPolicy;
use llm_tools_providers::ollama::{Ollama, OllamaConfig};
use llm_tools_providers::record::RecordedResponse;
use llm_tools_providers::replay::ReplayServer;
use serde_json::{Value, json};

use super::{halves, no_preamble};
use crate::provider_suite::wire::{self, ndjson};
use crate::provider_suite::{Call, INPUT_TOKENS, OUTPUT_TOKENS, Protocol, TextArguments};

fn provider(server: &ReplayServer, retry: RetryPolicy) -> Arc<dyn Provider> {
    let config = OllamaConfig::new("qwen3")
        .with_base_url(server.url())
        .with_retry(retry);
    Arc::new(Ollama::new(config).expect("the provider"))
}

fn line(content: &str, calls: Vec<Value>, done: bool) -> Value {
    let mut message = json!({"role": "assistant", "content": content});
    if !calls.is_empty() {
        message["tool_calls"] = json!(calls);
    }
    let mut line = json!({"model": "qwen3", "created_at": "2026-11-01T10:00:00Z", "message": message, "done": done});
    if done {
        line["done_reason"] = json!("stop");
        line["prompt_eval_count"] = json!(INPUT_TOKENS);
        line["eval_count"] = json!(OUTPUT_TOKENS);
    }
    line
}

fn call(at: usize, index: usize, c: &Call<'_>) -> Value {
    json!({"id": c.id, "function": {"index": index, "name": c.joined(), "arguments": wire::placeholder(at)}})
}

fn answer(text: &str, calls: &[Call<'_>]) -> RecordedResponse {
    let out = calls
        .iter()
        .enumerate()
        .map(|(i, c)| call(i, i, c))
        .collect();
    let arguments: Vec<&str> = calls.iter().map(|c| c.arguments).collect();
    RecordedResponse::json(
        200,
        wire::with_raw_arguments(&line(text, out, true), &arguments),
    )
}

fn stream(text: &str, calls: &[Call<'_>]) -> Vec<Vec<u8>> {
    let mut lines = Vec::new();
    if !text.is_empty() {
        let (a, b) = halves(text);
        for part in [a, b] {
            lines.push(ndjson(&line(part, Vec::new(), false).to_string()));
        }
    }
    for (i, c) in calls.iter().enumerate() {
        let l = line("", vec![call(0, i, c)], false);
        lines.push(ndjson(&wire::with_raw_arguments(&l, &[c.arguments])));
    }
    lines.push(ndjson(&line("", Vec::new(), true).to_string()));
    lines
}

/// An `{"error": …}` line (the runner failed after the answer started).
fn stream_error(message: &str) -> Vec<u8> {
    ndjson(&json!({"error": message}).to_string())
}

fn error(status: u16, message: &str) -> RecordedResponse {
    RecordedResponse::json(status, json!({"error": message}).to_string())
}

fn context_length() -> (RecordedResponse, String) {
    let r = wire::recorded_answer("documented", "ollama_context_length");
    // Ollama's `error` is the runner's text, here llama.cpp's JSON error, whose message the
    // provider reads.
    let text = wire::message_at(&r, "/error");
    let m = serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|e| {
            e.pointer("/error/message")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or(text);
    (r, m)
}

/// Ollama's native chat API.
pub static OLLAMA: Protocol = Protocol {
    name: "Ollama native",
    provider,
    preamble: no_preamble,
    answer,
    stream,
    stream_content_type: "application/x-ndjson",
    error,
    context_length,
    // Ollama's native messages carry calls and results as Chat Completions' do.
    results_sent: super::openai::chat_results_sent,
    errors_marked: None,
    calls_sent: super::openai::chat_calls_sent,
    text_arguments: TextArguments {
        whole: false,
        streamed: false,
    },
    stream_error: Some(stream_error),
    stream_error_retryable: None,
    optional_tail: 0,
    recorded: &[],
    documented_fields: &[],
    known_failures: &[],
};
