//! Context-window refusals of every protocol, served by the loopback replay server from recorded
//! error answers (`tests/fixtures/recorded/*-errors/*context_length*`, real traffic; Ollama's
//! native API from `tests/fixtures/documented/ollama_context_length.json`, written from the
//! answer its maintainers show) through the real HTTP client and chat loop, whole and streamed:
//! each is `ProviderErrorKind::ContextLengthExceeded` with the status, error type, code, message
//! and request id the server sent, and is not retried. A 429 quota on input tokens per minute
//! (Gemini, recorded) stays a retryable rate limit.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::path::{Path, PathBuf};

use llm_tools_core::chat::Chat;
use llm_tools_core::{ProviderError, ProviderErrorKind};
use llm_tools_providers::anthropic::{Anthropic, AnthropicConfig};
use llm_tools_providers::bedrock::{AwsCredentials, Bedrock, BedrockConfig};
use llm_tools_providers::cohere::{Cohere, CohereConfig};
use llm_tools_providers::gemini::{Gemini, GeminiConfig, GoogleCredentials};
use llm_tools_providers::http::RetryPolicy;
use llm_tools_providers::ollama::{Ollama, OllamaConfig};
use llm_tools_providers::openai::{OpenAiChat, OpenAiConfig, OpenAiResponses};
use llm_tools_providers::record::Recording;
use llm_tools_providers::replay::ReplayServer;
use llm_tools_tests::fixtures;
use llm_tools_tests::serving::{RetryLog, on_server, provider_error, stream_turn};

/// What a refusal must keep of what the server said.
struct Expected {
    status: u16,
    error_type: Option<&'static str>,
    code: Option<&'static str>,
    message: &'static str,
    request_id: Option<&'static str>,
}

/// The one recording of `folder` whose name mentions the context length and `provider`.
fn recording(folder: &str, provider: &str) -> PathBuf {
    let found: Vec<_> = fixtures::recordings(folder)
        .into_iter()
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.contains("context_length") && name.contains(provider)
        })
        .collect();
    assert_eq!(found.len(), 1, "{folder}/{provider}: {found:?}");
    found.into_iter().next().unwrap()
}

fn documented(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/documented")
        .join(name)
}

/// Which protocol a recording is served to.
#[derive(Clone, Copy, Debug)]
enum Protocol {
    Chat,
    Responses,
    Anthropic,
    Vertex,
    Bedrock,
    Cohere,
    Ollama,
}

/// The chat of a provider of `protocol` on `server`, with `retries` logged in `log`.
fn chat(protocol: Protocol, server: &ReplayServer, retries: u32, log: &RetryLog) -> Chat {
    match protocol {
        Protocol::Chat => Chat::new(
            OpenAiChat::new(on_server(
                OpenAiConfig::deepseek("deepseek-chat").with_api_key("sk-test"),
                server,
                retries,
                log,
            ))
            .unwrap(),
        ),
        Protocol::Responses => Chat::new(
            OpenAiResponses::new(on_server(
                OpenAiConfig::openai("gpt-5-nano").with_api_key("sk-test"),
                server,
                retries,
                log,
            ))
            .unwrap(),
        ),
        Protocol::Anthropic => Chat::new(
            Anthropic::new(on_server(
                AnthropicConfig::new("claude-haiku-4-5").with_api_key("sk-ant-test"),
                server,
                retries,
                log,
            ))
            .unwrap(),
        ),
        Protocol::Vertex => {
            let config = GeminiConfig::vertex("proj-1", "us-central1", "gemini-2.5-flash")
                .with_token_uri(format!("{}/token", server.url()))
                .with_google_credentials(GoogleCredentials::refresh_token(
                    "client-1",
                    "secret-1",
                    "1//refresh-1",
                ));
            let config = on_server(config, server, retries, log).with_base_url(format!(
                "{}/v1beta1/projects/proj-1/locations/us-central1/publishers/google",
                server.url()
            ));
            Chat::new(Gemini::new(config).unwrap())
        }
        Protocol::Bedrock => Chat::new(
            Bedrock::new(on_server(
                BedrockConfig::new("us.amazon.nova-2-lite-v1:0")
                    .with_credentials(AwsCredentials::new("AKIDTEST", "secret-key")),
                server,
                retries,
                log,
            ))
            .unwrap(),
        ),
        Protocol::Cohere => Chat::new(
            Cohere::new(on_server(
                CohereConfig::new("command-a-03-2025").with_api_key("co-test"),
                server,
                retries,
                log,
            ))
            .unwrap(),
        ),
        Protocol::Ollama => Chat::new(
            Ollama::new(on_server(
                OllamaConfig::new("qwen2.5:0.5b"),
                server,
                retries,
                log,
            ))
            .unwrap(),
        ),
    }
}

/// The error a chat of `protocol` gets from the recording at `path`, whole or streamed, after
/// checking nothing was retried and every recorded exchange was served.
async fn refusal(protocol: Protocol, path: &Path, streamed: bool) -> ProviderError {
    let recording = Recording::load(path).unwrap();
    let exchanges = recording.interactions.len();
    let server = ReplayServer::start(recording).await.unwrap();
    let log = RetryLog::default();
    let mut chat = chat(protocol, &server, 2, &log);
    let error = if streamed {
        provider_error(stream_turn(&mut chat, "Hi").await.unwrap_err())
    } else {
        provider_error(chat.ask("Hi").await.unwrap_err())
    };
    assert!(log.seen().is_empty(), "{protocol:?} retried: {error}");
    assert_eq!(server.received().len(), exchanges, "{protocol:?}");
    error
}

fn check(protocol: Protocol, error: &ProviderError, expected: &Expected) {
    assert_eq!(
        error.kind(),
        ProviderErrorKind::ContextLengthExceeded,
        "{protocol:?}: {error}"
    );
    assert_eq!(error.status(), Some(expected.status), "{protocol:?}");
    assert_eq!(error.error_type(), expected.error_type, "{protocol:?}");
    assert_eq!(error.code(), expected.code, "{protocol:?}");
    assert_eq!(error.message(), expected.message, "{protocol:?}");
    assert_eq!(error.request_id(), expected.request_id, "{protocol:?}");
    assert!(!error.is_retryable(), "{protocol:?}");
}

#[tokio::test]
async fn every_protocols_context_window_refusal_is_typed_whole_and_streamed() {
    let cases = [
        (
            Protocol::Responses,
            recording("openai-responses-errors", "openai"),
            Expected {
                status: 400,
                error_type: Some("invalid_request_error"),
                code: Some("context_length_exceeded"),
                message: "Your input exceeds the context window of this model. Please adjust your input and try again.",
                request_id: Some("<X_REQUEST_ID>"),
            },
        ),
        (
            Protocol::Chat,
            recording("openai-chat-errors", "deepseek"),
            Expected {
                status: 400,
                error_type: Some("invalid_request_error"),
                code: Some("invalid_request_error"),
                message: "This model's maximum context length is 1048565 tokens. However, you requested 1250025 tokens (1250025 in the messages, 0 in the completion). Please reduce the length of the messages or completion.",
                request_id: None,
            },
        ),
        (
            Protocol::Chat,
            recording("openai-chat-errors", "openrouter"),
            Expected {
                status: 400,
                error_type: None,
                code: Some("400"),
                message: "This endpoint's maximum context length is 200000 tokens. However, you requested about 2500021 tokens (2500021 of text input). Please reduce the length of either one, or use the context-compression plugin to compress your prompt automatically.",
                request_id: None,
            },
        ),
        (
            Protocol::Chat,
            recording("openai-chat-errors", "perplexity"),
            Expected {
                status: 400,
                error_type: Some("too_many_prompt_tokens"),
                code: Some("400"),
                message: "The total length of all messages is too long.",
                request_id: None,
            },
        ),
        (
            Protocol::Chat,
            recording("openai-chat-errors", "ollama_cloud"),
            Expected {
                status: 400,
                error_type: Some("invalid_request_error"),
                code: None,
                message: "prompt too long; exceeded max context length by 1119046 tokens (ref: 96164522-08b2-4cbf-886e-e5a38961a688)",
                request_id: Some("<X_REQUEST_ID>"),
            },
        ),
        (
            Protocol::Anthropic,
            recording("anthropic-messages-errors", "anthropic"),
            Expected {
                status: 400,
                error_type: Some("invalid_request_error"),
                code: None,
                message: "prompt is too long: 3333404 tokens > 200000 maximum",
                request_id: Some("<REQUEST_ID>"),
            },
        ),
        (
            Protocol::Vertex,
            recording("gemini-vertex-errors", "vertexai"),
            Expected {
                status: 400,
                error_type: Some("INVALID_ARGUMENT"),
                code: Some("400"),
                message: "The input token count (1250074) exceeds the maximum number of tokens allowed (1048576).",
                request_id: None,
            },
        ),
        (
            Protocol::Bedrock,
            recording("bedrock-converse-errors", "bedrock"),
            Expected {
                status: 400,
                error_type: None,
                code: None,
                message: "The model returned the following errors: Input Tokens Exceeded: Number of input tokens exceeds maximum length. Please update the input to try again.",
                request_id: None,
            },
        ),
        (
            Protocol::Cohere,
            recording("cohere-v2-errors", "cohere"),
            Expected {
                status: 400,
                error_type: Some("TOO_MANY_TOKENS"),
                code: None,
                message: "too many tokens: size limit exceeded by 25836 tokens. Try using shorter or fewer inputs. The limit for this model is 288000 tokens.",
                request_id: None,
            },
        ),
        (
            Protocol::Ollama,
            documented("ollama_context_length.json"),
            Expected {
                status: 400,
                error_type: Some("exceed_context_size_error"),
                code: Some("400"),
                message: "request (351 tokens) exceeds the available context size (256 tokens), try increasing it",
                request_id: None,
            },
        ),
    ];
    for (protocol, path, expected) in &cases {
        for streamed in [false, true] {
            let error = refusal(*protocol, path, streamed).await;
            check(*protocol, &error, expected);
        }
    }
}

#[tokio::test]
async fn a_quota_on_input_tokens_per_minute_stays_a_rate_limit() {
    let path = recording("gemini-errors", "gemini");
    let server = ReplayServer::from_file(&path).await.unwrap();
    let config = GeminiConfig::new("gemini-2.5-flash")
        .with_api_key("test-key")
        .with_base_url(server.url())
        .with_retry(RetryPolicy::none());
    let mut chat = Chat::new(Gemini::new(config).unwrap());
    let error = provider_error(chat.ask("Hi").await.unwrap_err());
    assert_eq!(error.kind(), ProviderErrorKind::Http);
    assert_eq!(error.status(), Some(429));
    assert_eq!(error.error_type(), Some("RESOURCE_EXHAUSTED"));
    assert!(error.is_retryable());
}
