//! Stream reassembly of the protocols the other benchmarks leave out: Bedrock's
//! `ConverseStream` (AWS event-stream framing), Cohere's v2 chat (server-sent events) and
//! Ollama's native API (newline-delimited JSON). Each stream is text deltas, then a tool call's
//! arguments in fragments, as in the OpenAI, Anthropic and Gemini benchmarks, so every protocol
//! has a figure in MB/s. Times are the benchmark thread's CPU time, so they hold on a machine
//! busy with other work.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

#[allow(dead_code)] // the request-building helpers serve the other benchmarks
mod support;

use aws_smithy_eventstream::frame::write_message_to;
use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use llm_tools_providers::bedrock::{AwsCredentials, Bedrock, BedrockConfig};
use llm_tools_providers::cohere::{Cohere, CohereConfig};
use llm_tools_providers::ollama::{Ollama, OllamaConfig};
use serde_json::{Value, json};
use support::{ThreadCpu, arriving, byte_chunks, drain, tools};

/// One event-stream message of type `event` carrying `payload`.
fn event_message(event: &str, payload: &Value) -> Vec<u8> {
    let m = Message::new(payload.to_string().into_bytes())
        .add_header(Header::new(
            ":message-type",
            HeaderValue::String("event".to_owned().into()),
        ))
        .add_header(Header::new(
            ":event-type",
            HeaderValue::String(event.to_owned().into()),
        ))
        .add_header(Header::new(
            ":content-type",
            HeaderValue::String("application/json".to_owned().into()),
        ));
    let mut out = Vec::new();
    write_message_to(&m, &mut out).unwrap();
    out
}

/// A Bedrock `ConverseStream` of `events` deltas: a text block, then a tool call's input.
fn bedrock_stream(events: usize) -> Vec<u8> {
    let mut body = event_message("messageStart", &json!({"role": "assistant"}));
    for i in 0..events / 2 {
        body.extend(event_message(
            "contentBlockDelta",
            &json!({"contentBlockIndex": 0, "delta": {"text": format!("word{i} ")}, "p": "abcdefghij"}),
        ));
    }
    body.extend(event_message(
        "contentBlockStop",
        &json!({"contentBlockIndex": 0}),
    ));
    body.extend(event_message(
        "contentBlockStart",
        &json!({"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "tooluse_1", "name": "tool_1"}}}),
    ));
    for _ in 0..events / 2 {
        body.extend(event_message(
            "contentBlockDelta",
            &json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "\"ab\""}}, "p": "abcdefghij"}),
        ));
    }
    body.extend(event_message(
        "contentBlockStop",
        &json!({"contentBlockIndex": 1}),
    ));
    body.extend(event_message(
        "messageStop",
        &json!({"stopReason": "tool_use"}),
    ));
    body.extend(event_message(
        "metadata",
        &json!({"usage": {"inputTokens": 633, "outputTokens": 500, "totalTokens": 1133}, "metrics": {"latencyMs": 900}}),
    ));
    body
}

/// A Cohere v2 stream of `events` deltas: text, then a tool call's arguments in fragments.
fn cohere_stream(events: usize) -> Vec<u8> {
    let mut s = String::new();
    let mut event = |name: &str, data: Value| {
        s.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    };
    event(
        "message-start",
        json!({"type": "message-start", "id": "m1", "delta": {"message": {"role": "assistant"}}}),
    );
    for i in 0..events / 2 {
        event(
            "content-delta",
            json!({"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": format!("word{i} ")}}}}),
        );
    }
    event(
        "tool-call-start",
        json!({"type": "tool-call-start", "index": 0, "delta": {"message": {"tool_calls": {"id": "call_1", "type": "function", "function": {"name": "tool_1", "arguments": ""}}}}}),
    );
    for _ in 0..events / 2 {
        event(
            "tool-call-delta",
            json!({"type": "tool-call-delta", "index": 0, "delta": {"message": {"tool_calls": {"function": {"arguments": "\"ab\""}}}}}),
        );
    }
    event(
        "tool-call-end",
        json!({"type": "tool-call-end", "index": 0}),
    );
    event(
        "message-end",
        json!({"type": "message-end", "delta": {"finish_reason": "TOOL_CALL", "usage": {
            "billed_units": {"input_tokens": 633, "output_tokens": 500}, "tokens": {"input_tokens": 633, "output_tokens": 500}}}}),
    );
    s.into_bytes()
}

/// An Ollama stream of `lines` text lines, then a line with a whole tool call, then the end.
fn ollama_stream(lines: usize) -> Vec<u8> {
    let mut s = String::new();
    for i in 0..lines {
        let line = json!({"model": "qwen3", "created_at": "2026-11-01T10:00:00.000000Z",
            "message": {"role": "assistant", "content": format!("word{i} ")}, "done": false});
        s.push_str(&format!("{line}\n"));
    }
    let call = json!({"model": "qwen3", "created_at": "2026-11-01T10:00:01.000000Z",
        "message": {"role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": "tool_1", "arguments": {"query": "order 1", "limit": 5}}}]}, "done": false});
    s.push_str(&format!("{call}\n"));
    let done = json!({"model": "qwen3", "created_at": "2026-11-01T10:00:01.000000Z",
        "message": {"role": "assistant", "content": ""}, "done": true, "done_reason": "stop",
        "prompt_eval_count": 633, "eval_count": 500});
    s.push_str(&format!("{done}\n"));
    s.into_bytes()
}

fn reassemble(c: &mut Criterion<ThreadCpu>) {
    let tools = tools(2);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let bedrock = Bedrock::new(
        BedrockConfig::new("us.amazon.nova-2-lite-v1:0")
            .with_credentials(AwsCredentials::new("AKIDBENCH", "secret")),
    )
    .unwrap();
    let cohere = Cohere::new(CohereConfig::new("command-a-03-2025").with_api_key("k")).unwrap();
    let ollama = Ollama::new(OllamaConfig::new("qwen3")).unwrap();
    let mut g = c.benchmark_group("stream_reassembly");
    for (name, body) in [
        ("bedrock", bedrock_stream(20_000)),
        ("cohere", cohere_stream(20_000)),
        ("ollama", ollama_stream(20_000)),
    ] {
        let parts = byte_chunks(&body);
        g.throughput(Throughput::Bytes(body.len() as u64));
        g.bench_function(name, |b| {
            b.iter(|| {
                let input = arriving(parts.clone());
                let events = match name {
                    "bedrock" => bedrock.stream_events(input, &tools),
                    "cohere" => cohere.stream_events(input, &tools),
                    _ => ollama.stream_events(input, &tools),
                };
                drain(&rt, events)
            })
        });
    }
    g.finish();
}

/// A request writing back a round of 10,000 calls and their results (in reverse order): each
/// result's tool name is found by its call's id, in the round's length, not its square.
fn many_calls_round_back(c: &mut Criterion<ThreadCpu>) {
    let tools = tools(2);
    let messages = support::many_calls_round(10_000, "call_");
    let ollama = Ollama::new(OllamaConfig::new("qwen3")).unwrap();
    let mut g = c.benchmark_group("build_request_round_of_10000_calls");
    g.sample_size(20);
    g.bench_function("ollama", |b| {
        b.iter(|| {
            ollama
                .request_body(
                    std::hint::black_box(&llm_tools_core::Request::new(&messages, &tools)),
                    false,
                )
                .unwrap()
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().with_measurement(ThreadCpu);
    targets = reassemble, many_calls_round_back
}
criterion_main!(benches);
