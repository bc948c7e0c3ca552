//! A provider-hosted MCP server's token ([`with_mcp_token`] on OpenAI Responses, Anthropic
//! and Gemini) travels in the request body, so a provider's error may quote it back. Each of
//! those protocols is served three errors that do (a 400 echoing the tool definition, an
//! answer whose `error` object does, a stream's `error` event) on the loopback replay server,
//! with a recorder attached; the token shows in no error and no recording.
//!
//! [`with_mcp_token`]: llm_tools_providers::config::ProviderConfig::with_mcp_token

use llm_tools_core::chat::Chat;
use llm_tools_core::{Provider, ProviderTool, RemoteMcp};
use llm_tools_providers::anthropic::{Anthropic, AnthropicConfig};
use llm_tools_providers::config::ProviderConfig;
use llm_tools_providers::gemini::{Gemini, GeminiConfig};
use llm_tools_providers::http::RetryPolicy;
use llm_tools_providers::openai::{OpenAiConfig, OpenAiResponses};
use llm_tools_providers::record::{RecordedResponse, Recorder};
use llm_tools_providers::replay::ReplayServer;
use llm_tools_tests::serving;
use serde_json::json;

const CANARY: &str = "mcp-canary-77e1-do-not-print";

/// `config` on the replay server at `base`, with the canary as the MCP server `wiki`'s token,
/// another API key and no retries.
fn token_config<O>(config: ProviderConfig<O>, base: &str) -> ProviderConfig<O> {
    config
        .with_base_url(base)
        .with_api_key("sk-another-secret")
        .with_mcp_token("wiki", CANARY)
        .with_retry(RetryPolicy::none())
}

fn assert_clean(what: &str, text: &str) {
    assert!(
        !text.contains(CANARY),
        "the token appears in {what}:\n{text}"
    );
}

#[tokio::test]
async fn a_remote_mcp_token_quoted_back_in_an_error_appears_nowhere() {
    let echo = format!("invalid tool {{\"authorization\":\"{CANARY}\"}}");
    let cases: Vec<(&str, &str, &str, String, String)> = vec![
        (
            "openai-responses",
            "https://api.openai.com/v1/responses",
            "https://api.openai.com/v1/responses",
            json!({"id": "resp_1", "status": "failed",
                "error": {"code": CANARY, "message": echo}})
            .to_string(),
            serving::sse_events(&[(
                "error",
                json!({"type": "error", "code": CANARY, "message": echo}),
            )]),
        ),
        (
            "anthropic",
            "https://api.anthropic.com/v1/messages",
            "https://api.anthropic.com/v1/messages",
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": echo}})
                .to_string(),
            serving::sse_events(&[(
                "error",
                json!({"type": "error",
                    "error": {"type": "invalid_request_error", "message": echo}}),
            )]),
        ),
        (
            "gemini",
            "https://generativelanguage.googleapis.com/v1beta/models/m:generateContent",
            "https://generativelanguage.googleapis.com/v1beta/models/m:streamGenerateContent?alt=sse",
            json!({"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": echo}})
                .to_string(),
            format!(
                "data: {}\n\n",
                json!({"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": echo}})
            ),
        ),
    ];
    let recorder = Recorder::new();
    for (name, url, stream_url, answer_error, stream_error) in cases {
        let refusal = json!({"error": {"message": echo, "type": "invalid_request_error",
            "code": CANARY}})
        .to_string();
        let server = ReplayServer::with_interactions(vec![
            serving::exchange(url, RecordedResponse::json(400, refusal)),
            serving::exchange(url, RecordedResponse::json(200, answer_error)),
            serving::exchange(stream_url, RecordedResponse::sse(stream_error)),
        ])
        .await
        .unwrap();
        let base = server.url();
        let provider: Box<dyn Provider> = match name {
            "openai-responses" => Box::new(
                OpenAiResponses::new(
                    token_config(OpenAiConfig::openai("m"), &base).with_recorder(recorder.clone()),
                )
                .unwrap(),
            ),
            "anthropic" => Box::new(
                Anthropic::new(
                    token_config(AnthropicConfig::new("m").with_mcp_connector(), &base)
                        .with_recorder(recorder.clone()),
                )
                .unwrap(),
            ),
            _ => Box::new(
                Gemini::new(
                    token_config(GeminiConfig::new("m"), &base).with_recorder(recorder.clone()),
                )
                .unwrap(),
            ),
        };
        let mut chat = Chat::new(provider);
        chat.with_provider_tool(ProviderTool::RemoteMcp(RemoteMcp::new(
            "wiki",
            "https://mcp.example/mcp",
        )));
        let mut errors = Vec::new();
        for _ in 0..2 {
            errors.push(chat.ask("Hi").await.unwrap_err());
        }
        {
            use futures::StreamExt;
            let mut events = chat.ask_stream("Hi");
            while let Some(event) = events.next().await {
                if let Err(e) = event {
                    errors.push(e);
                }
            }
        }
        assert_eq!(errors.len(), 3, "{name}: {errors:?}");
        for err in &errors {
            let shown = format!("{err} {err:?}");
            assert_clean(&format!("an error of {name}"), &shown);
            // the server's words are kept, the token replaced
            assert!(shown.contains("invalid tool"), "{name}: {shown}");
            assert!(shown.contains("<redacted>"), "{name}: {shown}");
        }
        // the token was sent, in the body, to the provider it was meant for
        let sent = server.received();
        assert_eq!(sent.len(), 3, "{name}");
        assert!(
            sent.iter().all(|r| r.body.to_string().contains(CANARY)),
            "{name}: the token was not sent"
        );
    }
    let recording = serde_json::to_string(&recorder.recording("all", "all", "mcp")).unwrap();
    assert_clean("the recordings", &recording);
    assert!(recording.contains("invalid tool"), "{recording}");
}

#[tokio::test]
async fn a_context_length_refusal_stays_one_when_tokens_are_redacted() {
    use llm_tools_core::ProviderErrorKind;
    let server = ReplayServer::with_interactions(vec![serving::exchange(
        "https://api.anthropic.com/v1/messages",
        RecordedResponse::json(
            400,
            json!({"type": "error", "error": {"type": "invalid_request_error",
                "message": format!("prompt is too long: 210000 tokens > 200000 maximum ({CANARY})")}})
            .to_string(),
        ),
    )])
    .await
    .unwrap();
    let provider = Anthropic::new(token_config(
        AnthropicConfig::new("m").with_mcp_connector(),
        &server.url(),
    ))
    .unwrap();
    let messages = [llm_tools_core::Message::user("Hi")];
    let error = provider
        .complete(llm_tools_core::Request::new(&messages, &[]))
        .await
        .unwrap_err();
    assert_clean("a context-length refusal", &format!("{error} {error:?}"));
    assert_eq!(
        error.kind(),
        ProviderErrorKind::ContextLengthExceeded,
        "{error}"
    );
    assert_eq!(error.status(), Some(400));
}
