//! The bad-input catalogue: every way a server or a model can send something wrong, served to
//! every protocol (Responses, Chat Completions, Anthropic, Gemini, Bedrock, Cohere, Ollama) by
//! the loopback replay server, through the real HTTP client and the real chat loop. Each case
//! ends in a typed error or the documented recovery, never a panic or a hang, with the history
//! valid; and the next `ask` on the same chat works.
//!
//! The cases (one test per case and protocol, named `<protocol>::<case>`):
//!
//! | case | what comes back | expected |
//! |---|---|---|
//! | `truncated_json_body` | a 200 whose JSON stops halfway | `Decode` error, history kept |
//! | `html_page_with_status_200` | an HTML error page as a 200 | `Decode` error |
//! | `non_utf8_body` | bytes that are not UTF-8 | `Decode` error |
//! | `rate_limit_with_retry_after_then_success` | 429 + `retry-after`, then the answer | waited out, answered |
//! | `server_errors_until_the_retries_give_up` | 5xx on every try | `Http` 503 after the retries |
//! | `unauthorized` | 401 | `Http` 401, not retried, key never shown |
//! | `stream_cut_mid_event` | a stream cut inside an event | `Stream` error, nothing appended |
//! | `garbage_in_a_stream` | noise between events | skipped (SSE) or a typed error (NDJSON, event-stream) |
//! | `no_choices` | an answer without choices / candidates / output | empty answer or `Decode`, per protocol |
//! | `invalid_json_arguments` | a call whose arguments are not JSON | error result, loop goes on |
//! | `arguments_5_mb_long` | a 5 MB argument of the wrong type | short error result, loop goes on |
//! | `arguments_nested_10000_deep` | arguments nested 10,000 deep | error result (`Decode` on Bedrock and Ollama, which read arguments as part of the body) |
//! | `unknown_tool` | a call to a tool the chat lacks | error result naming similar tools |
//! | `a_tool_that_panics` | the tool panics | `ToolFailed`, the call closed |
//! | `call_without_an_id` | a call with no id | an id is made up, the loop goes on |
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::sync::Arc;
use std::time::Duration;

use aws_smithy_eventstream::frame::write_message_to;
use aws_smithy_types::event_stream::{Header, HeaderValue, Message as EventMessage};
use base64::Engine as _;
use llm_tools_core::chat::Chat;
use llm_tools_core::{Error, Provider, ProviderError, ProviderErrorKind, Role, tool};
use llm_tools_providers::anthropic::{Anthropic, AnthropicConfig};
use llm_tools_providers::bedrock::{AwsCredentials, Bedrock, BedrockConfig};
use llm_tools_providers::cohere::{Cohere, CohereConfig};
use llm_tools_providers::gemini::{Gemini, GeminiConfig};
use llm_tools_providers::ollama::{Ollama, OllamaConfig};
use llm_tools_providers::openai::{OpenAiChat, OpenAiConfig, OpenAiResponses};
use llm_tools_providers::record::{Interaction, RecordedResponse};
use llm_tools_providers::replay::ReplayServer;
use llm_tools_tests::fixtures::Weather;
use llm_tools_tests::serving::{self, RetryLog, on_server, provider_error, stream_turn};
use serde_json::{Value, json};

/// A key no error, log or recording may show.
const KEY: &str = "canary-key-5c1d7e";

/// Explodes
#[tool]
async fn explode() -> String {
    panic!("the tool blew up")
}

/// How a protocol carries a call's arguments.
#[derive(Clone, Copy, PartialEq)]
enum Arguments {
    /// As a JSON string (`"arguments": "{…}"`): bad JSON is the call's problem.
    Text,
    /// As JSON inside the body (`"input": {…}`): bad JSON is a bad body.
    Object,
}

/// What noise between stream events does.
#[derive(Clone, Copy, PartialEq)]
enum Noise {
    /// Skipped, as the server-sent events specification says.
    Skipped,
    /// A typed error (a line that is not JSON, a frame that does not check).
    Refused,
}

/// What arguments nested 10,000 deep are.
#[derive(Clone, Copy, PartialEq)]
enum Deep {
    /// The call's error result: the protocol keeps arguments as text (or raw JSON) and the
    /// tool's decoder stops at serde_json's recursion limit.
    ErrorResult,
    /// A decode error: the protocol reads the arguments as part of the body.
    Decode,
}

/// What an answer with no choices is.
#[derive(Clone, Copy, PartialEq)]
enum NoChoices {
    /// An empty answer.
    Empty,
    /// A decode error.
    Decode,
}

/// One protocol: how to reach it and how it writes answers.
struct Protocol {
    provider: fn(&ReplayServer, u32, &RetryLog) -> Arc<dyn Provider>,
    /// A whole answer with this text.
    text: fn(&str) -> RecordedResponse,
    /// A whole answer with one call (`id` left out when `None`); `arguments` is JSON text,
    /// placed as a string or as raw JSON per [`Arguments`].
    call: fn(Option<&str>, &str, &str) -> RecordedResponse,
    /// A whole answer with no choices / candidates / output.
    no_choices: fn() -> RecordedResponse,
    /// A streamed answer with this text, as bytes in the protocol's framing.
    stream: fn(&str) -> Vec<u8>,
    /// Wraps stream bytes in a response of the protocol's content type.
    stream_response: fn(Vec<u8>) -> RecordedResponse,
    /// Noise that can stand between two events of a stream.
    noise: &'static [u8],
    /// Where to cut a stream body inside an event: a byte offset from the stream.
    cut_at: fn(&[u8]) -> usize,
    arguments: Arguments,
    deep_arguments: Deep,
    on_noise: Noise,
    on_no_choices: NoChoices,
}

fn exchange(response: RecordedResponse) -> Interaction {
    serving::exchange("https://provider.example/any", response)
}

fn bytes_response(status: u16, content_type: &str, bytes: &[u8]) -> RecordedResponse {
    let mut r = RecordedResponse::new(status, content_type, "");
    r.body_base64 = Some(base64::engine::general_purpose::STANDARD.encode(bytes));
    r
}

/// `template` (JSON with the string `"__ARGS__"` where the arguments go) with the arguments
/// put in as a string or as raw JSON.
fn with_arguments(template: &Value, arguments: &str, how: Arguments) -> RecordedResponse {
    let text = template.to_string();
    let replacement = match how {
        Arguments::Text => serde_json::to_string(arguments).unwrap(),
        Arguments::Object => arguments.to_owned(),
    };
    RecordedResponse::json(200, text.replacen("\"__ARGS__\"", &replacement, 1))
}

fn sse_data(chunks: &[Value]) -> Vec<u8> {
    chunks
        .iter()
        .map(|c| format!("data: {c}\n\n"))
        .collect::<String>()
        .into_bytes()
}

fn sse_named(events: &[(&str, Value)]) -> Vec<u8> {
    serving::sse_events(events).into_bytes()
}

fn sse_response(bytes: Vec<u8>) -> RecordedResponse {
    bytes_response(200, "text/event-stream", &bytes)
}

/// The middle of the second event of a server-sent-events body.
fn cut_in_second_event(body: &[u8]) -> usize {
    let first_end = body
        .windows(2)
        .position(|w| w == b"\n\n")
        .expect("two events");
    first_end + 2 + 12
}

const SSE_NOISE: &[u8] = b": a comment\nnot a field at all\nretry: soon\n\n\xff\xfe odd bytes\n\n";

// ----- OpenAI Chat Completions -----

fn chat_provider(server: &ReplayServer, retries: u32, log: &RetryLog) -> Arc<dyn Provider> {
    let config = OpenAiConfig::openai("gpt-5-nano").with_api_key(KEY);
    Arc::new(OpenAiChat::new(on_server(config, server, retries, log)).unwrap())
}

fn chat_text(text: &str) -> RecordedResponse {
    RecordedResponse::json(
        200,
        json!({"id": "c1", "object": "chat.completion", "model": "gpt-5-nano",
               "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
               "usage": {"prompt_tokens": 10, "completion_tokens": 5}})
        .to_string(),
    )
}

fn chat_call(id: Option<&str>, name: &str, arguments: &str) -> RecordedResponse {
    let mut call = json!({"type": "function", "function": {"name": name, "arguments": "__ARGS__"}});
    if let Some(id) = id {
        call["id"] = json!(id);
    }
    let template = json!({"id": "c0", "object": "chat.completion", "model": "gpt-5-nano",
        "choices": [{"index": 0, "finish_reason": "tool_calls",
                     "message": {"role": "assistant", "content": null, "tool_calls": [call]}}]});
    with_arguments(&template, arguments, Arguments::Text)
}

fn chat_no_choices() -> RecordedResponse {
    RecordedResponse::json(
        200,
        json!({"id": "c1", "object": "chat.completion", "model": "gpt-5-nano", "choices": []})
            .to_string(),
    )
}

fn chat_stream(text: &str) -> Vec<u8> {
    let (a, b) = text.split_at(text.len() / 2);
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "c1", "object": "chat.completion.chunk", "model": "gpt-5-nano",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut body = sse_data(&[
        chunk(json!({"role": "assistant", "content": a}), Value::Null),
        chunk(json!({"content": b}), Value::Null),
        chunk(json!({}), json!("stop")),
    ]);
    body.extend_from_slice(b"data: [DONE]\n\n");
    body
}

const CHAT_COMPLETIONS: Protocol = Protocol {
    provider: chat_provider,
    text: chat_text,
    call: chat_call,
    no_choices: chat_no_choices,
    stream: chat_stream,
    stream_response: sse_response,
    noise: SSE_NOISE,
    cut_at: cut_in_second_event,
    arguments: Arguments::Text,
    deep_arguments: Deep::ErrorResult,
    on_noise: Noise::Skipped,
    on_no_choices: NoChoices::Decode,
};

// ----- OpenAI Responses -----

fn responses_provider(server: &ReplayServer, retries: u32, log: &RetryLog) -> Arc<dyn Provider> {
    let config = OpenAiConfig::openai("gpt-5-nano").with_api_key(KEY);
    Arc::new(OpenAiResponses::new(on_server(config, server, retries, log)).unwrap())
}

fn responses_body(output: Value) -> Value {
    json!({"id": "resp_1", "object": "response", "status": "completed", "model": "gpt-5-nano",
           "output": output, "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}})
}

fn responses_message(text: &str) -> Value {
    json!({"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
           "content": [{"type": "output_text", "text": text, "annotations": []}]})
}

fn responses_text(text: &str) -> RecordedResponse {
    RecordedResponse::json(
        200,
        responses_body(json!([responses_message(text)])).to_string(),
    )
}

fn responses_call(id: Option<&str>, name: &str, arguments: &str) -> RecordedResponse {
    let mut call = json!({"type": "function_call", "id": "fc_1", "name": name,
                          "arguments": "__ARGS__", "status": "completed"});
    if let Some(id) = id {
        call["call_id"] = json!(id);
    }
    with_arguments(&responses_body(json!([call])), arguments, Arguments::Text)
}

fn responses_no_choices() -> RecordedResponse {
    RecordedResponse::json(200, responses_body(json!([])).to_string())
}

fn responses_stream(text: &str) -> Vec<u8> {
    let (a, b) = text.split_at(text.len() / 2);
    let delta = |d: &str| {
        json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
               "content_index": 0, "delta": d})
    };
    sse_named(&[
        (
            "response.created",
            json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}}),
        ),
        ("response.output_text.delta", delta(a)),
        ("response.output_text.delta", delta(b)),
        (
            "response.completed",
            json!({"type": "response.completed", "response": responses_body(json!([responses_message(text)]))}),
        ),
    ])
}

const RESPONSES: Protocol = Protocol {
    provider: responses_provider,
    text: responses_text,
    call: responses_call,
    no_choices: responses_no_choices,
    stream: responses_stream,
    stream_response: sse_response,
    noise: SSE_NOISE,
    cut_at: cut_in_second_event,
    arguments: Arguments::Text,
    deep_arguments: Deep::ErrorResult,
    on_noise: Noise::Skipped,
    on_no_choices: NoChoices::Empty,
};

// ----- Anthropic Messages -----

fn anthropic_provider(server: &ReplayServer, retries: u32, log: &RetryLog) -> Arc<dyn Provider> {
    let config = AnthropicConfig::new("claude-haiku-4-5").with_api_key(KEY);
    Arc::new(Anthropic::new(on_server(config, server, retries, log)).unwrap())
}

fn anthropic_body(content: Value, stop: &str) -> Value {
    json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
           "content": content, "stop_reason": stop, "usage": {"input_tokens": 10, "output_tokens": 5}})
}

fn anthropic_text(text: &str) -> RecordedResponse {
    RecordedResponse::json(
        200,
        anthropic_body(json!([{"type": "text", "text": text}]), "end_turn").to_string(),
    )
}

fn anthropic_call(id: Option<&str>, name: &str, arguments: &str) -> RecordedResponse {
    let mut call = json!({"type": "tool_use", "name": name, "input": "__ARGS__"});
    if let Some(id) = id {
        call["id"] = json!(id);
    }
    with_arguments(
        &anthropic_body(json!([call]), "tool_use"),
        arguments,
        Arguments::Object,
    )
}

fn anthropic_no_choices() -> RecordedResponse {
    RecordedResponse::json(200, anthropic_body(json!([]), "end_turn").to_string())
}

fn anthropic_stream(text: &str) -> Vec<u8> {
    let (a, b) = text.split_at(text.len() / 2);
    let delta = |d: &str| json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": d}});
    sse_named(&[
        (
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                "model": "claude-haiku-4-5", "content": [], "usage": {"input_tokens": 12, "output_tokens": 1}}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        ("content_block_delta", delta(a)),
        ("content_block_delta", delta(b)),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 7}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ])
}

const ANTHROPIC: Protocol = Protocol {
    provider: anthropic_provider,
    text: anthropic_text,
    call: anthropic_call,
    no_choices: anthropic_no_choices,
    stream: anthropic_stream,
    stream_response: sse_response,
    noise: SSE_NOISE,
    cut_at: cut_in_second_event,
    arguments: Arguments::Object,
    deep_arguments: Deep::ErrorResult,
    on_noise: Noise::Skipped,
    on_no_choices: NoChoices::Empty,
};

// ----- Gemini -----

fn gemini_provider(server: &ReplayServer, retries: u32, log: &RetryLog) -> Arc<dyn Provider> {
    let config = GeminiConfig::new("gemini-2.5-flash").with_api_key(KEY);
    Arc::new(Gemini::new(on_server(config, server, retries, log)).unwrap())
}

fn gemini_chunk(parts: Value, finish: Option<&str>) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    if let Some(f) = finish {
        candidate["finishReason"] = json!(f);
    }
    json!({"candidates": [candidate], "modelVersion": "gemini-2.5-flash",
           "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 4, "totalTokenCount": 14}})
}

fn gemini_text(text: &str) -> RecordedResponse {
    RecordedResponse::json(
        200,
        gemini_chunk(json!([{"text": text}]), Some("STOP")).to_string(),
    )
}

fn gemini_call(id: Option<&str>, name: &str, arguments: &str) -> RecordedResponse {
    let mut call = json!({"name": name, "args": "__ARGS__"});
    if let Some(id) = id {
        call["id"] = json!(id);
    }
    with_arguments(
        &gemini_chunk(json!([{"functionCall": call}]), Some("STOP")),
        arguments,
        Arguments::Object,
    )
}

fn gemini_no_choices() -> RecordedResponse {
    RecordedResponse::json(
        200,
        json!({"candidates": [], "modelVersion": "gemini-2.5-flash",
               "usageMetadata": {"promptTokenCount": 10, "totalTokenCount": 10}})
        .to_string(),
    )
}

fn gemini_stream(text: &str) -> Vec<u8> {
    let (a, b) = text.split_at(text.len() / 2);
    sse_data(&[
        gemini_chunk(json!([{"text": a}]), None),
        gemini_chunk(json!([{"text": b}]), Some("STOP")),
    ])
}

const GEMINI: Protocol = Protocol {
    provider: gemini_provider,
    text: gemini_text,
    call: gemini_call,
    no_choices: gemini_no_choices,
    stream: gemini_stream,
    stream_response: sse_response,
    noise: SSE_NOISE,
    cut_at: cut_in_second_event,
    arguments: Arguments::Object,
    deep_arguments: Deep::ErrorResult,
    on_noise: Noise::Skipped,
    on_no_choices: NoChoices::Decode,
};

// ----- Bedrock Converse -----

fn bedrock_provider(server: &ReplayServer, retries: u32, log: &RetryLog) -> Arc<dyn Provider> {
    let config = BedrockConfig::new("us.amazon.nova-2-lite-v1:0")
        .with_credentials(AwsCredentials::new("AKIDTEST", KEY));
    Arc::new(Bedrock::new(on_server(config, server, retries, log)).unwrap())
}

fn bedrock_body(content: Value, stop: &str) -> Value {
    json!({"output": {"message": {"role": "assistant", "content": content}},
           "stopReason": stop, "usage": {"inputTokens": 5, "outputTokens": 2, "totalTokens": 7}})
}

fn bedrock_text(text: &str) -> RecordedResponse {
    RecordedResponse::json(
        200,
        bedrock_body(json!([{"text": text}]), "end_turn").to_string(),
    )
}

fn bedrock_call(id: Option<&str>, name: &str, arguments: &str) -> RecordedResponse {
    let mut call = json!({"name": name, "input": "__ARGS__"});
    if let Some(id) = id {
        call["toolUseId"] = json!(id);
    }
    with_arguments(
        &bedrock_body(json!([{"toolUse": call}]), "tool_use"),
        arguments,
        Arguments::Object,
    )
}

fn bedrock_no_choices() -> RecordedResponse {
    RecordedResponse::json(
        200,
        json!({"stopReason": "end_turn", "usage": {"inputTokens": 5, "outputTokens": 0, "totalTokens": 5}})
            .to_string(),
    )
}

fn event(name: &str, payload: &Value) -> Vec<u8> {
    let m = EventMessage::new(payload.to_string().into_bytes())
        .add_header(Header::new(
            ":message-type",
            HeaderValue::String("event".to_owned().into()),
        ))
        .add_header(Header::new(
            ":event-type",
            HeaderValue::String(name.to_owned().into()),
        ))
        .add_header(Header::new(
            ":content-type",
            HeaderValue::String("application/json".to_owned().into()),
        ));
    let mut out = Vec::new();
    write_message_to(&m, &mut out).unwrap();
    out
}

fn bedrock_stream(text: &str) -> Vec<u8> {
    let (a, b) = text.split_at(text.len() / 2);
    let mut body = event("messageStart", &json!({"role": "assistant"}));
    for part in [a, b] {
        body.extend(event(
            "contentBlockDelta",
            &json!({"contentBlockIndex": 0, "delta": {"text": part}}),
        ));
    }
    body.extend(event("contentBlockStop", &json!({"contentBlockIndex": 0})));
    body.extend(event("messageStop", &json!({"stopReason": "end_turn"})));
    body.extend(event(
        "metadata",
        &json!({"usage": {"inputTokens": 3, "outputTokens": 1, "totalTokens": 4}}),
    ));
    body
}

fn event_stream_response(bytes: Vec<u8>) -> RecordedResponse {
    bytes_response(200, "application/vnd.amazon.eventstream", &bytes)
}

/// The middle of the second frame (a frame starts with its total length, big-endian).
fn cut_in_second_frame(body: &[u8]) -> usize {
    let first = u32::from_be_bytes([body[0], body[1], body[2], body[3]]) as usize;
    first + 20
}

const BEDROCK: Protocol = Protocol {
    provider: bedrock_provider,
    text: bedrock_text,
    call: bedrock_call,
    no_choices: bedrock_no_choices,
    stream: bedrock_stream,
    stream_response: event_stream_response,
    noise: b"\x00\x00\x00\x10garbage!garbage!",
    cut_at: cut_in_second_frame,
    arguments: Arguments::Object,
    deep_arguments: Deep::Decode,
    on_noise: Noise::Refused,
    on_no_choices: NoChoices::Decode,
};

// ----- Cohere v2 -----

fn cohere_provider(server: &ReplayServer, retries: u32, log: &RetryLog) -> Arc<dyn Provider> {
    let config = CohereConfig::new("command-a-03-2025").with_api_key(KEY);
    let config =
        on_server(config, server, retries, log).with_base_url(format!("{}/v2", server.url()));
    Arc::new(Cohere::new(config).unwrap())
}

fn cohere_body(message: Value, finish: &str) -> Value {
    json!({"id": "r1", "message": message, "finish_reason": finish,
           "usage": {"billed_units": {"input_tokens": 5, "output_tokens": 2},
                     "tokens": {"input_tokens": 5, "output_tokens": 2}}})
}

fn cohere_text(text: &str) -> RecordedResponse {
    RecordedResponse::json(
        200,
        cohere_body(
            json!({"role": "assistant", "content": [{"type": "text", "text": text}]}),
            "COMPLETE",
        )
        .to_string(),
    )
}

fn cohere_call(id: Option<&str>, name: &str, arguments: &str) -> RecordedResponse {
    let mut call = json!({"type": "function", "function": {"name": name, "arguments": "__ARGS__"}});
    if let Some(id) = id {
        call["id"] = json!(id);
    }
    with_arguments(
        &cohere_body(
            json!({"role": "assistant", "tool_plan": "I will call it.", "tool_calls": [call]}),
            "TOOL_CALL",
        ),
        arguments,
        Arguments::Text,
    )
}

fn cohere_no_choices() -> RecordedResponse {
    RecordedResponse::json(
        200,
        json!({"id": "r1", "finish_reason": "COMPLETE"}).to_string(),
    )
}

fn cohere_stream(text: &str) -> Vec<u8> {
    let (a, b) = text.split_at(text.len() / 2);
    let delta = |d: &str| json!({"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": d}}}});
    sse_named(&[
        (
            "message-start",
            json!({"type": "message-start", "id": "m1", "delta": {"message": {"role": "assistant"}}}),
        ),
        ("content-delta", delta(a)),
        ("content-delta", delta(b)),
        (
            "message-end",
            json!({"type": "message-end", "delta": {"finish_reason": "COMPLETE"}}),
        ),
    ])
}

const COHERE: Protocol = Protocol {
    provider: cohere_provider,
    text: cohere_text,
    call: cohere_call,
    no_choices: cohere_no_choices,
    stream: cohere_stream,
    stream_response: sse_response,
    noise: SSE_NOISE,
    cut_at: cut_in_second_event,
    arguments: Arguments::Text,
    deep_arguments: Deep::ErrorResult,
    on_noise: Noise::Skipped,
    on_no_choices: NoChoices::Decode,
};

// ----- Ollama's native API -----

fn ollama_provider(server: &ReplayServer, retries: u32, log: &RetryLog) -> Arc<dyn Provider> {
    let config = OllamaConfig::new("qwen3").with_api_key(KEY);
    Arc::new(Ollama::new(on_server(config, server, retries, log)).unwrap())
}

fn ollama_line(message: Value, done: bool) -> Value {
    let mut line = json!({"model": "qwen3", "created_at": "2026-11-01T10:00:00Z",
                          "message": message, "done": done});
    if done {
        line["done_reason"] = json!("stop");
        line["prompt_eval_count"] = json!(30);
        line["eval_count"] = json!(9);
    }
    line
}

fn ollama_text(text: &str) -> RecordedResponse {
    RecordedResponse::json(
        200,
        ollama_line(json!({"role": "assistant", "content": text}), true).to_string(),
    )
}

fn ollama_call(id: Option<&str>, name: &str, arguments: &str) -> RecordedResponse {
    let mut call = json!({"function": {"name": name, "arguments": "__ARGS__"}});
    if let Some(id) = id {
        call["id"] = json!(id);
    }
    with_arguments(
        &ollama_line(
            json!({"role": "assistant", "content": "", "tool_calls": [call]}),
            true,
        ),
        arguments,
        Arguments::Object,
    )
}

fn ollama_no_choices() -> RecordedResponse {
    RecordedResponse::json(
        200,
        json!({"model": "qwen3", "done": true, "done_reason": "stop"}).to_string(),
    )
}

fn ollama_stream(text: &str) -> Vec<u8> {
    let (a, b) = text.split_at(text.len() / 2);
    [
        ollama_line(json!({"role": "assistant", "content": a}), false),
        ollama_line(json!({"role": "assistant", "content": b}), false),
        ollama_line(json!({"role": "assistant", "content": ""}), true),
    ]
    .iter()
    .map(|l| format!("{l}\n"))
    .collect::<String>()
    .into_bytes()
}

fn ndjson_response(bytes: Vec<u8>) -> RecordedResponse {
    bytes_response(200, "application/x-ndjson", &bytes)
}

/// The middle of the second line.
fn cut_in_second_line(body: &[u8]) -> usize {
    body.iter().position(|b| *b == b'\n').expect("two lines") + 1 + 12
}

const OLLAMA: Protocol = Protocol {
    provider: ollama_provider,
    text: ollama_text,
    call: ollama_call,
    no_choices: ollama_no_choices,
    stream: ollama_stream,
    stream_response: ndjson_response,
    noise: b"this line is not JSON\n",
    cut_at: cut_in_second_line,
    arguments: Arguments::Object,
    deep_arguments: Deep::Decode,
    on_noise: Noise::Refused,
    on_no_choices: NoChoices::Decode,
};

// ----- the cases -----

/// A chat with the weather and exploding tools on `p`, served `responses` in order, then
/// one more answer, `"Still here."`, for the follow-up ask.
async fn chat_on(
    p: &Protocol,
    responses: Vec<RecordedResponse>,
    retries: u32,
) -> (ReplayServer, Chat, RetryLog) {
    let mut interactions: Vec<Interaction> = responses.into_iter().map(exchange).collect();
    interactions.push(exchange((p.text)("Still here.")));
    let server = ReplayServer::with_interactions(interactions).await.unwrap();
    let log = RetryLog::default();
    let mut chat = Chat::with_shared_provider((p.provider)(&server, retries, &log));
    chat.with_tools((Weather, Explode)).unwrap();
    (server, chat, log)
}

/// A bounded `ask` (a hang fails the test instead of hanging it).
async fn ask(chat: &mut Chat, text: &str) -> Result<llm_tools_core::chat::Outcome, Error> {
    tokio::time::timeout(Duration::from_secs(30), chat.ask(text))
        .await
        .expect("the ask finished within 30 s")
}

async fn ask_streamed(chat: &mut Chat, text: &str) -> Result<String, Error> {
    tokio::time::timeout(Duration::from_secs(30), stream_turn(chat, text))
        .await
        .expect("the streamed ask finished within 30 s")
        .map(|(text, _)| text)
}

/// The next ask on the same chat gets the server's last answer, and the history is a valid
/// conversation: it starts with the user, and every call has exactly one result.
async fn goes_on(chat: &mut Chat) {
    let outcome = ask(chat, "Are you there?").await.expect("the chat goes on");
    assert_eq!(outcome.text().as_deref(), Some("Still here."));
    history_is_valid(chat);
}

fn history_is_valid(chat: &Chat) {
    let messages = chat.messages();
    assert_eq!(messages[0].role, Role::User);
    let calls: Vec<&str> = messages
        .iter()
        .flat_map(|m| m.tool_calls.iter().map(|c| c.id.as_str()))
        .collect();
    let results: Vec<&str> = messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    assert_eq!(calls, results, "every call has one result, in order");
}

fn shown(e: &Error) -> String {
    format!("{e} {e:?}")
}

/// A provider error of `kind`, with the key nowhere in it, and nothing added to the history
/// but the question; returns the provider error for the case's own checks.
fn refused(e: Error, kind: ProviderErrorKind, chat: &Chat) -> ProviderError {
    assert!(!shown(&e).contains(KEY), "the key in: {}", shown(&e));
    let e = provider_error(e);
    assert_eq!(e.kind(), kind, "{e}");
    assert_eq!(
        chat.messages().len(),
        1,
        "only the question is in the history"
    );
    e
}

async fn truncated_json_body(p: &Protocol) {
    let whole = (p.text)("Hello there").body;
    let cut = RecordedResponse::json(200, &whole[..whole.len() / 2]);
    let (_server, mut chat, _) = chat_on(p, vec![cut], 0).await;
    let e = ask(&mut chat, "Hi").await.unwrap_err();
    refused(e, ProviderErrorKind::Decode, &chat);
    goes_on(&mut chat).await;
}

async fn html_page_with_status_200(p: &Protocol) {
    let page = RecordedResponse::new(
        200,
        "text/html",
        "<!DOCTYPE html><html><body><h1>502 Bad Gateway</h1></body></html>",
    );
    let (_server, mut chat, _) = chat_on(p, vec![page], 0).await;
    let e = ask(&mut chat, "Hi").await.unwrap_err();
    let message = refused(e, ProviderErrorKind::Decode, &chat).to_string();
    assert!(
        message.contains("<h1>502 Bad Gateway"),
        "the error quotes the body: {message}"
    );
    goes_on(&mut chat).await;
}

async fn non_utf8_body(p: &Protocol) {
    let mut bytes = (p.text)("Hello").body.into_bytes();
    let at = bytes.len() / 2;
    bytes.splice(at..at, [0xff, 0xfe, 0xc3]);
    let (_server, mut chat, _) =
        chat_on(p, vec![bytes_response(200, "application/json", &bytes)], 0).await;
    let e = ask(&mut chat, "Hi").await.unwrap_err();
    refused(e, ProviderErrorKind::Decode, &chat);
    goes_on(&mut chat).await;
}

async fn rate_limit_with_retry_after_then_success(p: &Protocol) {
    let limited = RecordedResponse::json(429, r#"{"error":{"message":"slow down"}}"#)
        .with_header("retry-after", "0.02");
    let (server, mut chat, log) = chat_on(p, vec![limited, (p.text)("Hello")], 2).await;
    let outcome = ask(&mut chat, "Hi").await.unwrap();
    assert_eq!(outcome.text().as_deref(), Some("Hello"));
    assert_eq!(log.delays(), [Duration::from_millis(20)]);
    assert_eq!(server.received().len(), 2);
    goes_on(&mut chat).await;
}

async fn server_errors_until_the_retries_give_up(p: &Protocol) {
    let failing = || RecordedResponse::json(503, r#"{"error":{"message":"unavailable"}}"#);
    let (server, mut chat, log) = chat_on(p, vec![failing(), failing(), failing()], 2).await;
    let e = ask(&mut chat, "Hi").await.unwrap_err();
    assert_eq!(
        refused(e, ProviderErrorKind::Http, &chat).status(),
        Some(503)
    );
    assert_eq!(log.delays().len(), 2, "two retries, then the error");
    assert_eq!(server.received().len(), 3);
    goes_on(&mut chat).await;
}

async fn unauthorized(p: &Protocol) {
    let denied = RecordedResponse::json(
        401,
        format!(r#"{{"error":{{"message":"Incorrect API key provided: {KEY}"}}}}"#),
    );
    let (server, mut chat, log) = chat_on(p, vec![denied], 2).await;
    let e = ask(&mut chat, "Hi").await.unwrap_err();
    let error = refused(e, ProviderErrorKind::Http, &chat);
    assert_eq!(error.status(), Some(401));
    assert!(!error.is_retryable());
    assert!(log.delays().is_empty(), "not retried");
    assert_eq!(server.received().len(), 1);
    goes_on(&mut chat).await;
}

async fn stream_cut_mid_event(p: &Protocol) {
    let mut body = (p.stream)("Hello there, friend");
    body.truncate((p.cut_at)(&body));
    let (_server, mut chat, _) =
        chat_on(p, vec![(p.stream_response)(body).disconnected()], 0).await;
    let e = ask_streamed(&mut chat, "Hi").await.unwrap_err();
    refused(e, ProviderErrorKind::Stream, &chat);
    goes_on(&mut chat).await;
}

async fn garbage_in_a_stream(p: &Protocol) {
    let body = (p.stream)("Hello there, friend");
    let at = (p.cut_at)(&body) - 12;
    let mut noisy = body[..at].to_vec();
    noisy.extend_from_slice(p.noise);
    noisy.extend_from_slice(&body[at..]);
    let (_server, mut chat, _) = chat_on(p, vec![(p.stream_response)(noisy)], 0).await;
    match (p.on_noise, ask_streamed(&mut chat, "Hi").await) {
        (Noise::Skipped, Ok(text)) => assert_eq!(text, "Hello there, friend"),
        (Noise::Refused, Err(e)) => {
            assert!(!shown(&e).contains(KEY));
            let e = provider_error(e);
            assert!(
                matches!(
                    e.kind(),
                    ProviderErrorKind::Stream | ProviderErrorKind::Decode
                ),
                "{e}"
            );
            assert_eq!(chat.messages().len(), 1);
        }
        (_, other) => panic!("noise in the stream gave {other:?}"),
    }
    goes_on(&mut chat).await;
}

async fn no_choices(p: &Protocol) {
    let (_server, mut chat, _) = chat_on(p, vec![(p.no_choices)()], 0).await;
    match (p.on_no_choices, ask(&mut chat, "Hi").await) {
        (NoChoices::Empty, Ok(outcome)) => {
            assert_eq!(outcome.text().as_deref(), Some(""));
            assert_eq!(chat.messages().len(), 2);
        }
        (NoChoices::Decode, Err(e)) => {
            refused(e, ProviderErrorKind::Decode, &chat);
        }
        (_, other) => panic!("an answer without choices gave {other:?}"),
    }
    goes_on(&mut chat).await;
}

/// The tool results of the chat's latest round, in order.
fn results(chat: &Chat) -> Vec<(String, bool)> {
    chat.messages()
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| (m.text(), m.is_error))
        .collect()
}

async fn invalid_json_arguments(p: &Protocol) {
    let call = (p.call)(
        Some("call_1"),
        "weather",
        r#"{"latitude": "52.5", "longitude": "#,
    );
    let (_server, mut chat, _) = chat_on(p, vec![call, (p.text)("Sorry.")], 0).await;
    match p.arguments {
        Arguments::Text => {
            let outcome = ask(&mut chat, "Weather?").await.unwrap();
            assert_eq!(outcome.text().as_deref(), Some("Sorry."));
            let results = results(&chat);
            assert!(results[0].1, "an error result");
            assert!(results[0].0.contains("not valid JSON"), "{}", results[0].0);
            goes_on(&mut chat).await;
        }
        Arguments::Object => {
            // The arguments are part of the body's JSON: the body is broken, not the call.
            let e = ask(&mut chat, "Weather?").await.unwrap_err();
            refused(e, ProviderErrorKind::Decode, &chat);
        }
    }
}

async fn arguments_5_mb_long(p: &Protocol) {
    let huge = "7".repeat(5 * 1024 * 1024);
    let arguments = json!({"latitude": ["not", "a", "string"], "longitude": huge}).to_string();
    let arguments = arguments.replace("[\"not\",\"a\",\"string\"]", &format!("[\"{huge}\"]"));
    let call = (p.call)(Some("call_1"), "weather", &arguments);
    let (_server, mut chat, _) = chat_on(p, vec![call, (p.text)("Sorry.")], 0).await;
    let outcome = ask(&mut chat, "Weather?").await.unwrap();
    assert_eq!(outcome.text().as_deref(), Some("Sorry."));
    let results = results(&chat);
    assert!(results[0].1, "an error result");
    assert!(
        results[0].0.contains("latitude"),
        "{}",
        &results[0].0[..200.min(results[0].0.len())]
    );
    assert!(
        results[0].0.len() < 2_000,
        "an error result of {} bytes",
        results[0].0.len()
    );
    goes_on(&mut chat).await;
}

async fn arguments_nested_10000_deep(p: &Protocol) {
    let deep = format!(
        r#"{{"latitude": "1", "longitude": {}"2"{}}}"#,
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let call = (p.call)(Some("call_1"), "weather", &deep);
    let (_server, mut chat, _) = chat_on(p, vec![call, (p.text)("Sorry.")], 0).await;
    match p.deep_arguments {
        Deep::ErrorResult => {
            let outcome = ask(&mut chat, "Weather?").await.unwrap();
            assert_eq!(outcome.text().as_deref(), Some("Sorry."));
            let results = results(&chat);
            assert!(results[0].1, "an error result");
            assert!(results[0].0.contains("recursion limit"), "{}", results[0].0);
        }
        Deep::Decode => {
            let e = ask(&mut chat, "Weather?").await.unwrap_err();
            let error = refused(e, ProviderErrorKind::Decode, &chat);
            assert!(error.message().contains("recursion limit"), "{error}");
            let outcome = ask(&mut chat, "Weather?").await.unwrap();
            assert_eq!(outcome.text().as_deref(), Some("Sorry."));
        }
    }
    goes_on(&mut chat).await;
}

async fn unknown_tool(p: &Protocol) {
    let call = (p.call)(
        Some("call_1"),
        "wether",
        r#"{"latitude": "1", "longitude": "2"}"#,
    );
    let (_server, mut chat, _) = chat_on(p, vec![call, (p.text)("Oops.")], 0).await;
    let outcome = ask(&mut chat, "Weather?").await.unwrap();
    assert_eq!(outcome.text().as_deref(), Some("Oops."));
    let results = results(&chat);
    assert!(results[0].1);
    assert!(
        results[0].0.contains("There is no tool `wether`") && results[0].0.contains("`weather`"),
        "{}",
        results[0].0
    );
    goes_on(&mut chat).await;
}

async fn a_tool_that_panics(p: &Protocol) {
    let call = (p.call)(Some("call_1"), "explode", "{}");
    let (_server, mut chat, _) = chat_on(p, vec![call], 0).await;
    match ask(&mut chat, "Explode").await {
        Err(Error::ToolFailed { tool, source, .. }) => {
            assert_eq!(tool, "explode");
            assert!(source.to_string().contains("the tool blew up"), "{source}");
        }
        other => panic!("a panicking tool gave {other:?}"),
    }
    history_is_valid(&chat);
    assert!(
        results(&chat)[0].1,
        "the call is closed with an error result"
    );
    goes_on(&mut chat).await;
}

async fn call_without_an_id(p: &Protocol) {
    let call = (p.call)(
        None,
        "weather",
        r#"{"latitude": "52.5", "longitude": "13.4"}"#,
    );
    let (_server, mut chat, _) = chat_on(p, vec![call, (p.text)("Mild.")], 0).await;
    let outcome = ask(&mut chat, "Weather?").await.unwrap();
    assert_eq!(outcome.text().as_deref(), Some("Mild."));
    let id = &chat.messages()[1].tool_calls[0].id;
    assert!(!id.is_empty(), "an id was made up");
    let results = results(&chat);
    assert!(!results[0].1, "{}", results[0].0);
    assert!(results[0].0.contains("15°C"), "{}", results[0].0);
    goes_on(&mut chat).await;
}

macro_rules! catalogue {
    ($($protocol:ident => $def:expr;)*) => {$(
        mod $protocol {
            use super::*;
            catalogue!(@cases $def;
                truncated_json_body, html_page_with_status_200, non_utf8_body,
                rate_limit_with_retry_after_then_success, server_errors_until_the_retries_give_up,
                unauthorized, stream_cut_mid_event, garbage_in_a_stream, no_choices,
                invalid_json_arguments, arguments_5_mb_long, arguments_nested_10000_deep,
                unknown_tool, a_tool_that_panics, call_without_an_id);
        }
    )*};
    (@cases $def:expr; $($case:ident),*) => {$(
        #[tokio::test]
        async fn $case() {
            super::$case(&$def).await;
        }
    )*};
}

catalogue! {
    chat_completions => CHAT_COMPLETIONS;
    responses => RESPONSES;
    anthropic => ANTHROPIC;
    gemini => GEMINI;
    bedrock => BEDROCK;
    cohere => COHERE;
    ollama => OLLAMA;
}
