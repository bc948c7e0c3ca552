//! The mock Chat Completions server: answers `POST /v1/chat/completions` at once from pre-built
//! JSON (or SSE frames when the request streams). While a request holds fewer than 10 assistant
//! tool-call rounds the answer asks for 3 tool calls; after 10 rounds it is the final text.
//!
//! Every request is checked against the scenario (model, the 20 tool definitions, every message
//! and tool result, nothing else in the body); one that does not follow it gets an HTTP 400 and
//! is counted as invalid. `GET /stats` returns the counters, `POST /reset` zeroes them.
//!
//! ```sh
//! e2e-mock [--addr 127.0.0.1:0]   # prints its base URL on the first line of stdout
//! ```
#![allow(clippy::print_stdout)] // the base URL is the program's output

use std::convert::Infallible;
use std::io::Write as _;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use e2e_bench::scenario::{self, Call};
use e2e_bench::stats::MockStats;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

type Body = BoxBody<Bytes, Infallible>;

const CREATED: u64 = 1_767_225_600;

struct Mock {
    stats: Mutex<MockStats>,
    tools: Value,
    rounds: Vec<Vec<Call>>,
    /// Answer `k` is for a request holding `k` rounds (the last one is the final answer).
    answers: Vec<Bytes>,
    streams: Vec<Vec<Bytes>>,
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("e2e-mock: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut addr = "127.0.0.1:0".to_owned();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--addr" => addr = args.next().ok_or("`--addr` needs a value")?,
            other => return Err(format!("unknown argument `{other}`").into()),
        }
    }
    let mock = Arc::new(Mock::new());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&addr).await?;
        let local = listener.local_addr()?;
        println!("http://{local}");
        std::io::stdout().flush()?;
        loop {
            let (stream, _) = listener.accept().await?;
            stream.set_nodelay(true)?;
            let mock = Arc::clone(&mock);
            tokio::spawn(async move {
                let service = service_fn(move |req| {
                    let mock = Arc::clone(&mock);
                    async move { Ok::<_, Infallible>(mock.handle(req).await) }
                });
                // A client closing its connection ends this task; nothing to report.
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    })
}

impl Mock {
    fn new() -> Self {
        let rounds: Vec<Vec<Call>> = (0..scenario::ROUNDS).map(scenario::calls).collect();
        let mut answers = Vec::new();
        let mut streams = Vec::new();
        for calls in &rounds {
            answers.push(tool_call_answer(calls));
            streams.push(tool_call_stream(calls));
        }
        answers.push(final_answer());
        streams.push(final_stream());
        Self {
            stats: Mutex::new(MockStats::default()),
            tools: scenario::tool_definitions(),
            rounds,
            answers,
            streams,
        }
    }

    fn stats(&self) -> std::sync::MutexGuard<'_, MockStats> {
        self.stats
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    async fn handle(&self, req: Request<Incoming>) -> Response<Body> {
        match (req.method(), req.uri().path()) {
            (&Method::POST, "/v1/chat/completions") => {}
            (&Method::GET, "/stats") => {
                let body = serde_json::to_vec(&*self.stats()).unwrap_or_default();
                return respond(StatusCode::OK, "application/json", full(body));
            }
            (&Method::POST, "/reset") => {
                *self.stats() = MockStats::default();
                return respond(StatusCode::OK, "application/json", full(b"{}".to_vec()));
            }
            _ => return respond(StatusCode::NOT_FOUND, "text/plain", full(b"no".to_vec())),
        }
        let body = match req.into_body().collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(e) => return self.reject(0, format!("cannot read the request body: {e}")),
        };
        let checked = self.check(&body);
        let (rounds, stream, tools) = match checked {
            Ok(found) => found,
            Err(e) => return self.reject(body.len(), e),
        };
        {
            let mut stats = self.stats();
            stats.requests += 1;
            stats.request_bytes += body.len() as u64;
            stats.streamed += u64::from(stream);
            stats.tools_min = if stats.requests == 1 {
                tools
            } else {
                stats.tools_min.min(tools)
            };
            stats.tools_max = stats.tools_max.max(tools);
            stats.final_answers += u64::from(rounds == scenario::ROUNDS);
        }
        if stream {
            let frames = self.streams[rounds].clone();
            let body = StreamBody::new(futures::stream::iter(
                frames
                    .into_iter()
                    .map(|f| Ok::<_, Infallible>(Frame::data(f))),
            ));
            respond(StatusCode::OK, "text/event-stream", body.boxed())
        } else {
            respond(
                StatusCode::OK,
                "application/json",
                Full::new(self.answers[rounds].clone()).boxed(),
            )
        }
    }

    fn reject(&self, bytes: usize, error: String) -> Response<Body> {
        {
            let mut stats = self.stats();
            stats.requests += 1;
            stats.request_bytes += bytes as u64;
            stats.invalid += 1;
            stats.first_error.get_or_insert_with(|| error.clone());
        }
        let body = json!({"error": {"message": error, "type": "invalid_request_error", "param": null, "code": null}});
        respond(
            StatusCode::BAD_REQUEST,
            "application/json",
            full(body.to_string().into_bytes()),
        )
    }

    /// Checks a request against the scenario; returns the rounds it holds, whether it streams
    /// and how many tools it declares.
    fn check(&self, body: &[u8]) -> Result<(usize, bool, u64), String> {
        let v: Value =
            serde_json::from_slice(body).map_err(|e| format!("the body is not JSON: {e}"))?;
        let obj = v.as_object().ok_or("the body is not a JSON object")?;
        for key in obj.keys() {
            if !matches!(
                key.as_str(),
                "model" | "messages" | "tools" | "stream" | "stream_options"
            ) {
                return Err(format!("unexpected field `{key}`"));
            }
        }
        if obj.get("model").and_then(Value::as_str) != Some(scenario::MODEL) {
            return Err("wrong or missing `model`".into());
        }
        let stream = obj
            .get("stream")
            .and_then(Value::as_bool)
            .ok_or("`stream` is missing")?;
        let stream_options = obj.get("stream_options");
        if stream && stream_options != Some(&json!({"include_usage": true})) {
            return Err("a streamed request must ask for usage".into());
        }
        if !stream && stream_options.is_some() {
            return Err("`stream_options` without streaming".into());
        }
        let tools = obj.get("tools").ok_or("`tools` is missing")?;
        let declared = tools.as_array().map_or(0, Vec::len) as u64;
        if *tools != self.tools {
            let sent = tools.as_array().map(Vec::as_slice).unwrap_or_default();
            let expected = self.tools.as_array().map(Vec::as_slice).unwrap_or_default();
            let first = sent.iter().zip(expected).position(|(a, b)| a != b);
            return Err(match first {
                Some(i) => format!(
                    "the tool definitions differ from the scenario's: tool {i} is {}, expected {}",
                    sent[i], expected[i]
                ),
                None => format!(
                    "the tool definitions differ from the scenario's: {} tools, expected {}",
                    sent.len(),
                    expected.len()
                ),
            });
        }
        let messages = obj
            .get("messages")
            .and_then(Value::as_array)
            .ok_or("`messages` is missing")?;
        let first = messages.first().ok_or("no messages")?;
        if first.get("role").and_then(Value::as_str) != Some("user")
            || first.get("content").and_then(Value::as_str) != Some(scenario::PROMPT)
        {
            return Err(format!(
                "the first message is not the user's: {}",
                snippet(&first.to_string())
            ));
        }
        let rounds = (messages.len() - 1) / (1 + scenario::CALLS_PER_ROUND);
        if rounds > scenario::ROUNDS
            || messages.len() != 1 + rounds * (1 + scenario::CALLS_PER_ROUND)
        {
            return Err(format!(
                "{} messages do not make whole rounds",
                messages.len()
            ));
        }
        for (k, calls) in self.rounds.iter().take(rounds).enumerate() {
            let at = 1 + k * (1 + scenario::CALLS_PER_ROUND);
            check_round(k, &messages[at..at + 1 + calls.len()], calls)?;
        }
        Ok((rounds, stream, declared))
    }
}

fn check_round(k: usize, messages: &[Value], calls: &[Call]) -> Result<(), String> {
    let assistant = &messages[0];
    let bad = |what: &str, m: &Value| format!("round {k}: {what}: {}", snippet(&m.to_string()));
    if assistant.get("role").and_then(Value::as_str) != Some("assistant") {
        return Err(bad("not an assistant message", assistant));
    }
    match assistant.get("content") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if s.is_empty() => {}
        Some(_) => return Err(bad("the assistant message has content", assistant)),
    }
    let sent = assistant
        .get("tool_calls")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("no tool calls", assistant))?;
    if sent.len() != calls.len() {
        return Err(bad("wrong number of tool calls", assistant));
    }
    for (j, (call, expected)) in sent.iter().zip(calls).enumerate() {
        let function = call.get("function");
        let ok = call.get("id").and_then(Value::as_str) == Some(expected.id.as_str())
            && call.get("type").and_then(Value::as_str) == Some("function")
            && function.and_then(|f| f.get("name")).and_then(Value::as_str) == Some(expected.name)
            && function
                .and_then(|f| f.get("arguments"))
                .and_then(Value::as_str)
                == Some(expected.arguments.as_str());
        if !ok {
            return Err(bad(
                &format!("tool call {j} is not the one the model made"),
                call,
            ));
        }
        let result = &messages[1 + j];
        let ok = result.get("role").and_then(Value::as_str) == Some("tool")
            && result.get("tool_call_id").and_then(Value::as_str) == Some(expected.id.as_str())
            && result.get("content").and_then(Value::as_str) == Some(expected.result.as_str());
        if !ok || result.as_object().map_or(0, serde_json::Map::len) != 3 {
            return Err(bad(
                &format!("the result of tool call {j} is wrong"),
                result,
            ));
        }
    }
    Ok(())
}

fn snippet(text: &str) -> String {
    text.chars().take(300).collect()
}

fn full(body: Vec<u8>) -> Body {
    Full::new(Bytes::from(body)).boxed()
}

fn respond(status: StatusCode, content_type: &'static str, body: Body) -> Response<Body> {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        "x-request-id",
        HeaderValue::from_static("req_0123456789abcdef0123456789abcdef"),
    );
    response
}

fn usage() -> Value {
    json!({
        "prompt_tokens": 1843,
        "completion_tokens": 96,
        "total_tokens": 1939,
        "prompt_tokens_details": {"cached_tokens": 1536, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
    })
}

fn completion(message: Value, finish_reason: &str) -> Bytes {
    let body = json!({
        "id": "chatcmpl-BbEnCh0123456789abcdefXYZ",
        "object": "chat.completion",
        "created": CREATED,
        "model": scenario::MODEL,
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish_reason}],
        "usage": usage(),
        "service_tier": "default",
        "system_fingerprint": "fp_0123456789"
    });
    Bytes::from(body.to_string())
}

fn tool_call_answer(calls: &[Call]) -> Bytes {
    let tool_calls: Vec<Value> = calls
        .iter()
        .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
        .collect();
    completion(
        json!({"role": "assistant", "content": null, "tool_calls": tool_calls, "refusal": null, "annotations": []}),
        "tool_calls",
    )
}

fn final_answer() -> Bytes {
    completion(
        json!({"role": "assistant", "content": scenario::FINAL_ANSWER, "refusal": null, "annotations": []}),
        "stop",
    )
}

/// One SSE frame carrying a chunk with one choice.
fn chunk(delta: Value, finish_reason: Option<&str>) -> Bytes {
    frame(&json!({
        "id": "chatcmpl-BbEnCh0123456789abcdefXYZ",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": scenario::MODEL,
        "service_tier": "default",
        "system_fingerprint": "fp_0123456789",
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
        "usage": null
    }))
}

fn frame(data: &Value) -> Bytes {
    Bytes::from(format!("data: {data}\n\n"))
}

/// The last frames of every stream: the usage chunk (asked with `include_usage`) and `[DONE]`.
fn stream_end(frames: &mut Vec<Bytes>) {
    frames.push(frame(&json!({
        "id": "chatcmpl-BbEnCh0123456789abcdefXYZ",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": scenario::MODEL,
        "service_tier": "default",
        "system_fingerprint": "fp_0123456789",
        "choices": [],
        "usage": usage()
    })));
    frames.push(Bytes::from_static(b"data: [DONE]\n\n"));
}

/// Splits text the way a tokenizer streams it: runs of letters and digits, runs of the rest.
fn tokens(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut last: Option<bool> = None;
    for (i, c) in text.char_indices() {
        let word = c.is_alphanumeric();
        if last.is_some_and(|l| l != word) {
            out.push(&text[start..i]);
            start = i;
        }
        last = Some(word);
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

fn tool_call_stream(calls: &[Call]) -> Vec<Bytes> {
    let mut frames = vec![chunk(
        json!({"role": "assistant", "content": null, "refusal": null}),
        None,
    )];
    for (index, call) in calls.iter().enumerate() {
        frames.push(chunk(
            json!({"tool_calls": [{"index": index, "id": call.id, "type": "function", "function": {"name": call.name, "arguments": ""}}]}),
            None,
        ));
        for fragment in tokens(&call.arguments) {
            frames.push(chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}),
                None,
            ));
        }
    }
    frames.push(chunk(json!({}), Some("tool_calls")));
    stream_end(&mut frames);
    frames
}

fn final_stream() -> Vec<Bytes> {
    let mut frames = vec![chunk(
        json!({"role": "assistant", "content": "", "refusal": null}),
        None,
    )];
    let text = scenario::FINAL_ANSWER;
    let mut start = 0;
    for (i, _) in text.match_indices(' ') {
        frames.push(chunk(json!({"content": &text[start..i]}), None));
        start = i;
    }
    frames.push(chunk(json!({"content": &text[start..]}), None));
    frames.push(chunk(json!({}), Some("stop")));
    stream_end(&mut frames);
    frames
}
