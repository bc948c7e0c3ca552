//! Benchmarks of the OpenAI protocols: building a request with 50 tools and 100 messages,
//! reading an answer with 10 tool calls, and reassembling a stream. Times are the benchmark
//! thread's CPU time, so they hold on a machine busy with other work.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use std::hint::black_box;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use llm_tools_core::Request;
use llm_tools_providers::openai::{OpenAiChat, OpenAiConfig, OpenAiResponses};
use serde_json::json;
use support::{ThreadCpu, arriving, drain, history, network_chunks, tools, uncached};

fn build_requests(c: &mut Criterion<ThreadCpu>) {
    let tools = tools(50);
    let messages = history(100, "call_");
    let responses = OpenAiResponses::new(OpenAiConfig::openai("m").with_api_key("k")).unwrap();
    let chat = OpenAiChat::new(OpenAiConfig::openai("m").with_api_key("k")).unwrap();
    let mut g = c.benchmark_group("build_request_50_tools_100_messages");
    g.bench_function("responses", |b| {
        b.iter(|| {
            responses
                .request_body(black_box(&Request::new(&messages, &tools)), false)
                .unwrap()
        })
    });
    g.bench_function("chat_completions", |b| {
        b.iter(|| {
            chat.request_body(black_box(&Request::new(&messages, &tools)), false)
                .unwrap()
        })
    });
    // The same work with the definitions rebuilt every time (fresh specs, empty caches): what
    // the cache saves per request.
    g.bench_function("chat_completions_uncached_definitions", |b| {
        b.iter_batched(
            || uncached(&tools),
            |fresh| {
                chat.request_body(&Request::new(&messages, &fresh), false)
                    .unwrap()
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

fn parse_responses(c: &mut Criterion<ThreadCpu>) {
    let tools = tools(10);
    let calls: Vec<_> = (0..10)
        .map(|i| json!({"id": format!("call_{i:024}"), "type": "function",
                         "function": {"name": format!("tool_{i}"), "arguments": format!(r#"{{"query":"order {i}","limit":5}}"#)}}))
        .collect();
    let chat_body = json!({"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-5-nano",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null, "tool_calls": calls}}],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 200, "prompt_tokens_details": {"cached_tokens": 0}}})
    .to_string();
    let items: Vec<_> = (0..10)
        .map(|i| {
            json!({"id": format!("fc_{i:040}"), "type": "function_call", "status": "completed",
                         "call_id": format!("call_{i:024}"), "name": format!("tool_{i}"),
                         "arguments": format!(r#"{{"query":"order {i}","limit":5}}"#)})
        })
        .collect();
    let responses_body =
        json!({"id": "resp_1", "object": "response", "status": "completed", "model": "gpt-5-nano",
        "output": items, "usage": {"input_tokens": 1000, "output_tokens": 200}})
        .to_string();
    let chat = OpenAiChat::new(OpenAiConfig::openai("m").with_api_key("k")).unwrap();
    let responses = OpenAiResponses::new(OpenAiConfig::openai("m").with_api_key("k")).unwrap();
    let mut g = c.benchmark_group("parse_response_10_tool_calls");
    g.bench_function("chat_completions", |b| {
        b.iter(|| {
            chat.parse_response(black_box(chat_body.as_bytes()), &tools)
                .unwrap()
        })
    });
    g.bench_function("responses", |b| {
        b.iter(|| {
            responses
                .parse_response(black_box(responses_body.as_bytes()), &tools)
                .unwrap()
        })
    });
    g.finish();
}

/// A Chat Completions stream of `events` chunks: text deltas, then a tool call in fragments.
fn chat_stream(events: usize) -> String {
    let mut s = String::new();
    for i in 0..events {
        let chunk = if i % 2 == 0 {
            json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-5-nano",
                   "choices": [{"index": 0, "delta": {"content": format!("word{i} ")}, "finish_reason": null}], "obfuscation": "abcdef"})
        } else {
            json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-5-nano",
                   "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "\"ab\""}}]}, "finish_reason": null}]})
        };
        if i == 1 {
            s.push_str(&format!("data: {}\n\n", json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "gpt-5-nano",
                "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "tool_1", "arguments": ""}}]}, "finish_reason": null}]})));
        }
        s.push_str(&format!("data: {chunk}\n\n"));
    }
    s.push_str("data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n");
    s
}

/// A Responses stream: text deltas, then function-call argument deltas, then completion.
fn responses_stream(events: usize) -> String {
    let mut s = String::new();
    s.push_str("event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"output_index\":1,\"item\":{\"id\":\"fc_1\",\"type\":\"function_call\",\"call_id\":\"call_1\",\"name\":\"tool_1\",\"arguments\":\"\"}}\n\n");
    for i in 0..events {
        if i % 2 == 0 {
            s.push_str(&format!("event: response.output_text.delta\ndata: {}\n\n",
                json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0,
                       "delta": format!("word{i} "), "logprobs": [], "obfuscation": "abcdef", "sequence_number": i})));
        } else {
            s.push_str(&format!("event: response.function_call_arguments.delta\ndata: {}\n\n",
                json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 1,
                       "delta": "\"ab\"", "obfuscation": "abcdef", "sequence_number": i})));
        }
    }
    s.push_str("event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"status\":\"completed\",\"output\":[{\"id\":\"fc_1\",\"type\":\"function_call\",\"call_id\":\"call_1\",\"name\":\"tool_1\",\"arguments\":\"{}\"}]}}\n\n");
    s
}

fn reassemble(c: &mut Criterion<ThreadCpu>) {
    let tools = tools(2);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let chat = OpenAiChat::new(OpenAiConfig::openai("m").with_api_key("k")).unwrap();
    let responses = OpenAiResponses::new(OpenAiConfig::openai("m").with_api_key("k")).unwrap();
    let mut g = c.benchmark_group("stream_reassembly");
    for (name, body) in [
        ("chat_completions", chat_stream(20_000)),
        ("responses", responses_stream(20_000)),
    ] {
        let parts = network_chunks(&body);
        g.throughput(Throughput::Bytes(body.len() as u64));
        g.bench_function(name, |b| {
            b.iter(|| {
                let input = arriving(parts.clone());
                let events = if name == "responses" {
                    responses.stream_events(input, &tools)
                } else {
                    chat.stream_events(input, &tools)
                };
                drain(&rt, events)
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().with_measurement(ThreadCpu);
    targets = build_requests, parse_responses, reassemble
}
criterion_main!(benches);
