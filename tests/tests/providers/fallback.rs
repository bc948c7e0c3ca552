//! `FallbackProvider` through two real protocols, each on its own loopback replay server: an
//! OpenAI primary failing (503 after its own retry, a recorded context-length refusal, a 400, a
//! stream cut before or after its first event) and an Anthropic secondary answering its recorded
//! traffic, through the real HTTP clients and the real chat loop (tool rounds included). What
//! falls back (5xx and the like after the primary's retries; context-length refusals only when
//! enabled; a stream only before its first event), what does not (a 400; a stream that already
//! showed text), which provider answered (the report, `Response::model`, the observer and the
//! `llm_tools::fallback` log event), and the last error with the earlier ones when all fail.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::io::Write;
use std::sync::{Arc, Mutex};

use llm_tools_core::chat::Chat;
use llm_tools_core::{Message, Provider, ProviderErrorKind, Request, Tool};
use llm_tools_providers::anthropic::{Anthropic, AnthropicConfig};
use llm_tools_providers::http::RetryPolicy;
use llm_tools_providers::openai::{OpenAiChat, OpenAiConfig, OpenAiResponses};
use llm_tools_providers::record::{Interaction, RecordedResponse, Recording};
use llm_tools_providers::replay::ReplayServer;
use llm_tools_providers::{FallbackInfo, FallbackProvider};
use llm_tools_tests::fixtures::{self, Weather};
use llm_tools_tests::serving::{self, RetryLog, on_server, provider_error, stream_turn};
use serde_json::{Value, json};

const BERLIN: &str = "What's the weather in Berlin? (52.5200, 13.4050)";

fn openai_exchange(response: RecordedResponse) -> Interaction {
    serving::exchange("https://api.openai.com/v1/chat/completions", response)
}

fn unavailable() -> RecordedResponse {
    RecordedResponse::json(
        503,
        json!({"error": {"message": "The server is overloaded or not ready yet.", "type": "server_error", "code": null}})
            .to_string(),
    )
}

/// An OpenAI Chat Completions primary on `server`, with `retries` of its own logged in `log`.
fn primary(server: &ReplayServer, retries: u32, log: &RetryLog) -> OpenAiChat {
    let config = OpenAiConfig::openai("gpt-5-nano").with_api_key("sk-test");
    OpenAiChat::new(on_server(config, server, retries, log)).unwrap()
}

/// An Anthropic secondary on `server`, without retries.
fn secondary(server: &ReplayServer) -> Anthropic {
    Anthropic::new(
        AnthropicConfig::new("claude-haiku-4-5")
            .with_api_key("sk-ant-test")
            .with_base_url(server.url())
            .with_retry(RetryPolicy::none()),
    )
    .unwrap()
}

fn anthropic_recording(name: &str) -> Recording {
    let path = fixtures::recorded_dir("anthropic-messages")
        .unwrap()
        .join(format!("{name}.json"));
    Recording::load(path).unwrap()
}

/// The recorded Anthropic tool round: a `weather` call, then the answer.
fn tool_round() -> Recording {
    anthropic_recording("chat_function_calling_anthropic_claude-haiku-4-5_can_use_tools")
}

/// The first streamed tool round (call, then answer) of the recorded streaming conversation.
fn streamed_tool_round() -> Recording {
    let mut recording = anthropic_recording(
        "chat_function_calling_anthropic_claude-haiku-4-5_can_use_tools_with_multi-turn_streaming_conversations",
    );
    recording.interactions.truncate(2);
    recording
}

/// The text of a recorded Anthropic answer (its text blocks).
fn answer_text(response: &RecordedResponse) -> String {
    let v: Value = serde_json::from_str(&response.body).unwrap();
    v["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| b["text"].as_str())
        .collect()
}

/// The text a recorded Anthropic stream carries (its `text_delta`s).
fn streamed_text(response: &RecordedResponse) -> String {
    response
        .body
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .filter(|v| v["delta"]["type"] == "text_delta")
        .filter_map(|v| v["delta"]["text"].as_str().map(str::to_owned))
        .collect()
}

fn fallback(primary: impl Provider, secondary: impl Provider) -> FallbackProvider {
    FallbackProvider::new([Arc::new(primary) as Arc<dyn Provider>, Arc::new(secondary)]).unwrap()
}

/// An observer that keeps every move to the next provider.
fn observed(provider: FallbackProvider) -> (FallbackProvider, Arc<Mutex<Vec<FallbackInfo>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let keep = Arc::clone(&seen);
    let provider = provider.with_on_fallback(move |info| keep.lock().unwrap().push(info.clone()));
    (provider, seen)
}

#[tokio::test]
async fn a_server_error_after_the_primarys_retries_falls_back_for_every_request_of_a_tool_round() {
    // Two requests (the question, then the tool's result), each tried twice by the primary.
    let primary_server =
        ReplayServer::with_interactions((0..4).map(|_| openai_exchange(unavailable())).collect())
            .await
            .unwrap();
    let retries = RetryLog::default();
    let recording = tool_round();
    let secondary_server = ReplayServer::start(recording.clone()).await.unwrap();
    let (provider, seen) = observed(fallback(
        primary(&primary_server, 1, &retries),
        secondary(&secondary_server),
    ));
    let provider = Arc::new(provider);
    let mut chat = Chat::new(Arc::clone(&provider));
    chat.with_tools(Weather).unwrap();

    let answer = chat.ask(BERLIN).await.unwrap();
    let expected = answer_text(&recording.interactions[1].response);
    assert!(!expected.is_empty());
    assert_eq!(answer.text().unwrap(), expected);
    // The primary's own retries ran before each fallback.
    assert_eq!(primary_server.received().len(), 4);
    let statuses: Vec<_> = retries.seen().iter().map(|(_, e)| e.status()).collect();
    assert_eq!(statuses, [Some(503), Some(503)]);
    // The secondary answered both requests, the second with the tool's result.
    let sent = secondary_server.received();
    assert_eq!(sent.len(), 2);
    assert!(sent[1].body.to_string().contains("tool_result"), "{sent:?}");

    let report = provider.last_report().unwrap();
    let answered = report.answered.clone().unwrap();
    assert_eq!(
        (
            answered.index,
            answered.protocol.as_str(),
            answered.model.as_str()
        ),
        (1, "anthropic", "claude-haiku-4-5")
    );
    assert!(report.fell_back());
    assert_eq!(report.failures.len(), 1);
    assert_eq!(report.failures[0].provider.protocol, "openai-chat");
    assert_eq!(report.failures[0].error.status(), Some(503));
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2, "one move per request");
    assert!(seen.iter().all(|i| i.failed.provider.index == 0
        && i.next.index == 1
        && i.next.protocol == "anthropic"));
    // What a chat names as its provider stays the primary's.
    assert_eq!(
        (provider.protocol(), provider.model()),
        ("openai-chat", "gpt-5-nano")
    );
}

#[tokio::test]
async fn a_context_length_refusal_falls_back_only_when_enabled() {
    let refusal_path = fixtures::recordings("openai-responses-errors")
        .into_iter()
        .find(|p| p.to_string_lossy().contains("context_length"))
        .unwrap();
    let refusal = Recording::load(&refusal_path).unwrap();
    let responses = |server: &ReplayServer| {
        let config = OpenAiConfig::openai("gpt-5-nano")
            .with_api_key("sk-test")
            .with_base_url(server.url())
            .with_retry(RetryPolicy::none());
        OpenAiResponses::new(config).unwrap()
    };
    let recording = tool_round();
    let messages = [Message::user(BERLIN)];
    let tools = [Arc::new(Weather) as Arc<dyn Tool>];

    // Off (the default): the caller gets the refusal, typed, and the secondary is not asked.
    let primary_server = ReplayServer::start(refusal.clone()).await.unwrap();
    let secondary_server = ReplayServer::start(recording.clone()).await.unwrap();
    let provider = fallback(responses(&primary_server), secondary(&secondary_server));
    let e = provider
        .complete(Request::new(&messages, &tools))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ProviderErrorKind::ContextLengthExceeded);
    assert_eq!(e.code(), Some("context_length_exceeded"));
    assert!(secondary_server.received().is_empty());
    assert!(provider.last_report().unwrap().answered.is_none());

    // On: the secondary answers, and the answer names the model that wrote it.
    let primary_server = ReplayServer::start(refusal).await.unwrap();
    let secondary_server = ReplayServer::start(recording.clone()).await.unwrap();
    let provider =
        fallback(responses(&primary_server), secondary(&secondary_server)).on_context_length(true);
    let response = provider
        .complete(Request::new(&messages, &tools))
        .await
        .unwrap();
    let recorded: Value = serde_json::from_str(&recording.interactions[0].response.body).unwrap();
    assert_eq!(response.model.as_deref(), recorded["model"].as_str());
    assert_eq!(response.message.tool_calls[0].name, "weather");
    let report = provider.last_report().unwrap();
    assert_eq!(report.answered.unwrap().protocol, "anthropic");
    assert_eq!(
        report.failures[0].error.kind(),
        ProviderErrorKind::ContextLengthExceeded
    );
}

#[tokio::test]
async fn a_bad_request_does_not_fall_back() {
    let primary_server = ReplayServer::with_interactions(vec![openai_exchange(
        RecordedResponse::json(
            400,
            json!({"error": {"message": "Invalid 'tools[0].name': string does not match pattern.", "type": "invalid_request_error", "param": "tools[0].name", "code": "invalid_value"}})
                .to_string(),
        ),
    )])
    .await
    .unwrap();
    let retries = RetryLog::default();
    let secondary_server = ReplayServer::start(tool_round()).await.unwrap();
    let (provider, seen) = observed(
        fallback(
            primary(&primary_server, 2, &retries),
            secondary(&secondary_server),
        )
        .on_context_length(true),
    );
    let mut chat = Chat::new(provider);
    let e = provider_error(chat.ask(BERLIN).await.unwrap_err());
    assert_eq!(e.status(), Some(400));
    assert_eq!(e.kind(), ProviderErrorKind::Http);
    assert_eq!(e.code(), Some("invalid_value"));
    assert!(retries.seen().is_empty());
    assert!(secondary_server.received().is_empty());
    assert!(seen.lock().unwrap().is_empty());
}

#[tokio::test]
async fn when_every_provider_fails_the_caller_gets_the_last_error_and_the_earlier_ones_are_kept() {
    let primary_server = ReplayServer::with_interactions(vec![openai_exchange(unavailable())])
        .await
        .unwrap();
    let secondary_server = ReplayServer::with_interactions(vec![serving::exchange(
        "https://api.anthropic.com/v1/messages",
        RecordedResponse::json(
            529,
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}, "request_id": "req_011"})
                .to_string(),
        )
        .with_header("request-id", "req_011"),
    )])
    .await
    .unwrap();
    let (provider, seen) = observed(fallback(
        primary(&primary_server, 0, &RetryLog::default()),
        secondary(&secondary_server),
    ));
    let provider = Arc::new(provider);
    let mut chat = Chat::new(Arc::clone(&provider));
    let e = provider_error(chat.ask("Hi").await.unwrap_err());
    // The last provider's error…
    assert_eq!(e.provider(), "anthropic");
    assert_eq!(e.status(), Some(529));
    assert_eq!(e.error_type(), Some("overloaded_error"));
    // …and every failure, in order.
    let report = provider.last_report().unwrap();
    assert!(report.answered.is_none());
    let failures: Vec<_> = report
        .failures
        .iter()
        .map(|f| {
            (
                f.provider.index,
                f.provider.protocol.as_str(),
                f.error.status(),
            )
        })
        .collect();
    assert_eq!(
        failures,
        [(0, "openai-chat", Some(503)), (1, "anthropic", Some(529))]
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].failed.error.status(), Some(503));
}

#[tokio::test]
async fn a_stream_falls_back_before_its_first_event_and_not_after() {
    // Cut before any event, for both requests of the round: the secondary streams the round.
    let cut = || openai_exchange(RecordedResponse::sse(": keep-alive\n\n"));
    let primary_server = ReplayServer::with_interactions(vec![cut(), cut()])
        .await
        .unwrap();
    let recording = streamed_tool_round();
    let secondary_server = ReplayServer::start(recording.clone()).await.unwrap();
    let provider = Arc::new(fallback(
        primary(&primary_server, 0, &RetryLog::default()),
        secondary(&secondary_server),
    ));
    let mut chat = Chat::new(Arc::clone(&provider));
    chat.with_tools(Weather).unwrap();
    let (text, _) = stream_turn(&mut chat, BERLIN).await.unwrap();
    let expected: String = recording
        .interactions
        .iter()
        .map(|i| streamed_text(&i.response))
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(text, expected);
    assert_eq!(secondary_server.received().len(), 2);
    assert_eq!(provider.last_report().unwrap().answered.unwrap().index, 1);

    // Cut after its first event reached the caller: the caller gets the error, no fallback.
    let partial = format!(
        "data: {}\n\n",
        json!({"id": "c1", "object": "chat.completion.chunk", "model": "gpt-5-nano",
               "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hal"}}]})
    );
    let primary_server =
        ReplayServer::with_interactions(vec![openai_exchange(RecordedResponse::sse(partial))])
            .await
            .unwrap();
    let secondary_server = ReplayServer::start(streamed_tool_round()).await.unwrap();
    let provider = fallback(
        primary(&primary_server, 0, &RetryLog::default()),
        secondary(&secondary_server),
    );
    let mut chat = Chat::new(provider);
    let e = provider_error(stream_turn(&mut chat, "Hi").await.unwrap_err());
    assert_eq!(e.kind(), ProviderErrorKind::Stream);
    assert!(e.is_retryable());
    assert!(secondary_server.received().is_empty());
}

/// A writer that keeps every log line written to it.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<u8>>>);

impl Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A test's full name for the child's `--exact` filter: `<module>::<test>`, this file being a
/// module of its area's test binary.
fn full_name(test: &str) -> String {
    match module_path!().split_once("::") {
        Some((_, module)) => format!("{module}::{test}"),
        None => test.to_owned(),
    }
}

/// The log is read in a process of its own: tracing's call-site interest and level hint are
/// global, and another test of this binary meeting the same call sites on another thread while
/// this one's scoped subscriber is set can leave them switched off for it.
#[test]
fn a_fallback_is_logged_naming_both_providers_and_the_error() {
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .arg(full_name(
            "child_logs_a_fallback_naming_both_providers_and_the_error",
        ))
        .args(["--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("1 passed"),
        "the child test did not run:\n{stdout}"
    );
}

/// Run by [`a_fallback_is_logged_naming_both_providers_and_the_error`] in a process of its own,
/// where its subscriber is the only one.
#[test]
#[ignore = "run in a process of its own by a_fallback_is_logged_naming_both_providers_and_the_error"]
fn child_logs_a_fallback_naming_both_providers_and_the_error() {
    let lines = Lines::default();
    let writer = lines.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_max_level(tracing::Level::INFO)
        .with_ansi(false)
        .finish();
    tracing::subscriber::set_global_default(subscriber).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let primary_server = ReplayServer::with_interactions(vec![openai_exchange(unavailable())])
            .await
            .unwrap();
        let recording = tool_round();
        let secondary_server = ReplayServer::start(recording).await.unwrap();
        let provider = fallback(
            primary(&primary_server, 0, &RetryLog::default()),
            secondary(&secondary_server),
        );
        let messages = [Message::user(BERLIN)];
        let tools = [Arc::new(Weather) as Arc<dyn Tool>];
        provider
            .complete(Request::new(&messages, &tools))
            .await
            .unwrap();
    });
    let log = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
    let line = log
        .lines()
        .find(|l| l.contains("falling back to the next provider"))
        .unwrap_or_else(|| panic!("no fallback event in:\n{log}"));
    for part in [
        "WARN",
        "llm_tools::fallback",
        "failed_provider=openai-chat",
        "failed_model=gpt-5-nano",
        "next_index=1",
        "next_provider=anthropic",
        "next_model=claude-haiku-4-5",
        "HTTP 503",
    ] {
        assert!(line.contains(part), "{part} not in: {line}");
    }
    assert!(
        log.lines()
            .any(|l| l.contains("a fallback provider answered") && l.contains("provider=anthropic")),
        "{log}"
    );
}
