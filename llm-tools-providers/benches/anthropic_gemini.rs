//! Benchmarks of the Anthropic and Gemini protocols: building a request with 50 tools and 100
//! messages (with the tool definitions cached, as always, and rebuilt every time, to show what
//! the cache saves), reading an answer with 10 tool calls, and reassembling a stream (beside the
//! SSE parsing alone on the same bodies, for scale). Times are the benchmark thread's CPU time,
//! so they hold on a machine busy with other work.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use std::hint::black_box;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use llm_tools_core::Request;
use llm_tools_providers::anthropic::{Anthropic, AnthropicConfig};
use llm_tools_providers::gemini::{Gemini, GeminiConfig};
use serde_json::json;
use support::{ThreadCpu, arriving, drain, history, network_chunks, tools, uncached};

fn anthropic() -> Anthropic {
    Anthropic::new(AnthropicConfig::new("claude-haiku-4-5").with_api_key("k")).unwrap()
}

fn gemini() -> Gemini {
    Gemini::new(GeminiConfig::new("gemini-2.5-flash").with_api_key("k")).unwrap()
}

fn build_requests(c: &mut Criterion<ThreadCpu>) {
    let tools = tools(50);
    let messages = history(100, "toolu_");
    let (anthropic, gemini) = (anthropic(), gemini());
    let mut g = c.benchmark_group("build_request_50_tools_100_messages");
    g.bench_function("anthropic", |b| {
        b.iter(|| {
            anthropic
                .request_body(black_box(&Request::new(&messages, &tools)), false)
                .unwrap()
        })
    });
    g.bench_function("anthropic_uncached_definitions", |b| {
        b.iter_batched(
            || uncached(&tools),
            |fresh| {
                anthropic
                    .request_body(&Request::new(&messages, &fresh), false)
                    .unwrap()
            },
            BatchSize::SmallInput,
        )
    });
    g.bench_function("gemini", |b| {
        b.iter(|| {
            gemini
                .request_body(black_box(&Request::new(&messages, &tools)))
                .unwrap()
        })
    });
    g.bench_function("gemini_uncached_definitions", |b| {
        b.iter_batched(
            || uncached(&tools),
            |fresh| {
                gemini
                    .request_body(&Request::new(&messages, &fresh))
                    .unwrap()
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

fn parse_responses(c: &mut Criterion<ThreadCpu>) {
    let tools = tools(10);
    let blocks: Vec<_> = (0..10)
        .map(|i| {
            json!({"type": "tool_use", "id": format!("toolu_{i:024}"), "name": format!("tool_{i}"),
                        "input": {"query": format!("order {i}"), "limit": 5}})
        })
        .collect();
    let anthropic_body = json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
        "content": blocks, "stop_reason": "tool_use", "usage": {"input_tokens": 1000, "output_tokens": 200}})
    .to_string();
    let parts: Vec<_> = (0..10)
        .map(|i| json!({"functionCall": {"name": format!("tool_{i}"), "args": {"query": format!("order {i}"), "limit": 5}},
                        "thoughtSignature": "CiQBEU0yD1hCYiUoRFyerO7xltRNYWnI"}))
        .collect();
    let gemini_body = json!({"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 1000, "candidatesTokenCount": 200}, "modelVersion": "gemini-2.5-flash"})
    .to_string();
    let (anthropic, gemini) = (anthropic(), gemini());
    let mut g = c.benchmark_group("parse_response_10_tool_calls");
    g.bench_function("anthropic", |b| {
        b.iter(|| {
            anthropic
                .parse_response(black_box(anthropic_body.as_bytes()), &tools)
                .unwrap()
        })
    });
    g.bench_function("gemini", |b| {
        b.iter(|| {
            gemini
                .parse_response(black_box(gemini_body.as_bytes()), &tools)
                .unwrap()
        })
    });
    g.finish();
}

/// An Anthropic stream of `events` deltas: a text block, then a tool call's input fragments.
fn anthropic_stream(events: usize) -> String {
    let mut s = String::new();
    let mut event = |name: &str, data: serde_json::Value| {
        s.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    };
    event(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
            "model": "claude-haiku-4-5", "content": [], "usage": {"input_tokens": 633, "output_tokens": 1}}}),
    );
    event(
        "content_block_start",
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    );
    for i in 0..events / 2 {
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": format!("word{i} ")}}),
        );
    }
    event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    );
    event(
        "content_block_start",
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "tool_1", "input": {}}}),
    );
    event(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"query\": \""}}),
    );
    for _ in 0..events / 2 {
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "ab"}}),
        );
    }
    event(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "\"}"}}),
    );
    event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 1}),
    );
    event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 500}}),
    );
    event("message_stop", json!({"type": "message_stop"}));
    s
}

/// A Gemini stream of `chunks` chunks: text pieces, then a whole function call.
fn gemini_stream(chunks: usize) -> String {
    let mut s = String::new();
    for i in 0..chunks {
        let chunk = json!({"candidates": [{"content": {"role": "model", "parts": [{"text": format!("word{i} ")}]}, "index": 0}],
            "usageMetadata": {"promptTokenCount": 233, "candidatesTokenCount": i, "totalTokenCount": 233 + i},
            "modelVersion": "gemini-2.5-flash", "responseId": "VL-Fao-BIOTbvdIPyZ3HiAQ"});
        s.push_str(&format!("data: {chunk}\r\n\r\n"));
    }
    let last = json!({"candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"name": "tool_1", "args": {"query": "order 1", "limit": 5}}, "thoughtSignature": "CiQBEU0yD1hCYiUo"}]},
        "finishReason": "STOP", "index": 0}], "modelVersion": "gemini-2.5-flash"});
    s.push_str(&format!("data: {last}\r\n\r\n"));
    s
}

fn reassemble(c: &mut Criterion<ThreadCpu>) {
    let tools = tools(2);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let (anthropic, gemini) = (anthropic(), gemini());
    let mut g = c.benchmark_group("stream_reassembly");
    for (name, body) in [
        ("anthropic", anthropic_stream(20_000)),
        ("gemini", gemini_stream(10_000)),
    ] {
        let parts = network_chunks(&body);
        g.throughput(Throughput::Bytes(body.len() as u64));
        g.bench_function(name, |b| {
            b.iter(|| {
                let input = arriving(parts.clone());
                let events = if name == "anthropic" {
                    anthropic.stream_events(input, &tools)
                } else {
                    gemini.stream_events(input, &tools)
                };
                drain(&rt, events)
            })
        });
    }
    // The shared SSE layer alone on the same bodies: what the protocols' assemblers add to it.
    for (name, body) in [
        ("sse_parsing_only/anthropic", anthropic_stream(20_000)),
        ("sse_parsing_only/gemini", gemini_stream(10_000)),
    ] {
        let parts = network_chunks(&body);
        g.throughput(Throughput::Bytes(body.len() as u64));
        g.bench_function(name, |b| {
            b.iter(|| {
                let input = arriving(parts.clone());
                rt.block_on(async {
                    let mut events = Box::pin(llm_tools_providers::framing::frames(
                        llm_tools_providers::framing::Framing::Sse,
                        "x",
                        input,
                    ));
                    let mut n = 0;
                    while let Some(e) = events.next().await {
                        e.unwrap();
                        n += 1;
                    }
                    assert!(n > 100);
                })
            })
        });
    }
    g.finish();
}

/// A request writing back a round of 10,000 calls and their results (in reverse order): each
/// result is found by its call's id, in the round's length, not its square.
fn many_calls_round_back(c: &mut Criterion<ThreadCpu>) {
    let tools = tools(2);
    let messages = support::many_calls_round(10_000, "toolu_");
    let (anthropic, gemini) = (anthropic(), gemini());
    let mut g = c.benchmark_group("build_request_round_of_10000_calls");
    g.sample_size(20);
    g.bench_function("anthropic", |b| {
        b.iter(|| {
            anthropic
                .request_body(black_box(&Request::new(&messages, &tools)), false)
                .unwrap()
        })
    });
    g.bench_function("gemini", |b| {
        b.iter(|| {
            gemini
                .request_body(black_box(&Request::new(&messages, &tools)))
                .unwrap()
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().with_measurement(ThreadCpu);
    targets = build_requests, parse_responses, reassemble, many_calls_round_back
}
criterion_main!(benches);
