//! `Provider::output_limit`: the params that hold one answer to so many output tokens land in
//! each protocol's own field of the request body, over the limit the configuration sets, and a
//! fallback chain names a limit only when every provider in it names the same.
#![cfg(all(
    feature = "openai",
    feature = "anthropic",
    feature = "gemini",
    feature = "bedrock",
    feature = "cohere",
    feature = "ollama"
))]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::sync::Arc;

use llm_tools_core::{Message, Provider, Request};
use llm_tools_providers::FallbackProvider;
use llm_tools_providers::anthropic::{Anthropic, AnthropicConfig};
use llm_tools_providers::bedrock::{AwsCredentials, Bedrock, BedrockConfig};
use llm_tools_providers::cohere::{Cohere, CohereConfig};
use llm_tools_providers::gemini::{Gemini, GeminiConfig};
use llm_tools_providers::ollama::{Ollama, OllamaConfig};
use llm_tools_providers::openai::{OpenAiChat, OpenAiConfig, OpenAiResponses};
use serde_json::Value;

const TOKENS: u32 = 77;

/// The body `provider` writes for one message with its own output limit of [`TOKENS`] as the
/// request's params.
fn body_with_limit<P: Provider>(provider: &P, write: impl Fn(&Request<'_>) -> Vec<u8>) -> Value {
    let messages = [Message::user("hi")];
    let params = provider
        .output_limit(TOKENS)
        .unwrap_or_else(|| panic!("{} names no output limit", provider.protocol()));
    let request = Request::new(&messages, &[]).with_params(Some(&params));
    serde_json::from_slice(&write(&request)).unwrap()
}

fn anthropic() -> Anthropic {
    Anthropic::new(
        AnthropicConfig::new("claude-haiku-4-5")
            .with_api_key("k")
            .with_max_tokens(4096),
    )
    .unwrap()
}

fn gemini() -> Gemini {
    Gemini::new(GeminiConfig::new("gemini-2.5-flash").with_api_key("k")).unwrap()
}

#[test]
fn each_protocol_writes_the_limit_in_its_own_field() {
    let a = anthropic();
    let body = body_with_limit(&a, |r| a.request_body(r, false).unwrap());
    // The configuration's 4096 gives way to the request's limit.
    assert_eq!(body["max_tokens"], TOKENS);

    let responses = OpenAiResponses::new(OpenAiConfig::openai("m").with_api_key("k")).unwrap();
    let body = body_with_limit(&responses, |r| responses.request_body(r, false).unwrap());
    assert_eq!(body["max_output_tokens"], TOKENS);

    let chat = OpenAiChat::new(OpenAiConfig::openai("m").with_api_key("k")).unwrap();
    let body = body_with_limit(&chat, |r| chat.request_body(r, false).unwrap());
    assert_eq!(body["max_completion_tokens"], TOKENS);
    assert!(body.get("max_tokens").is_none(), "{body}");

    let g = gemini();
    let body = body_with_limit(&g, |r| g.request_body(r).unwrap());
    assert_eq!(body["generationConfig"]["maxOutputTokens"], TOKENS);

    let bedrock = Bedrock::new(
        BedrockConfig::new("us.amazon.nova-2-lite-v1:0")
            .with_credentials(AwsCredentials::new("AKIDTEST", "secret"))
            .with_max_tokens(2048),
    )
    .unwrap();
    let body = body_with_limit(&bedrock, |r| bedrock.request_body(r).unwrap());
    // Over the configuration's 2048.
    assert_eq!(body["inferenceConfig"]["maxTokens"], TOKENS);

    let cohere = Cohere::new(CohereConfig::new("command-a-03-2025").with_api_key("k")).unwrap();
    let body = body_with_limit(&cohere, |r| cohere.request_body(r, false).unwrap());
    assert_eq!(body["max_tokens"], TOKENS);

    let ollama = Ollama::new(OllamaConfig::new("qwen3")).unwrap();
    let body = body_with_limit(&ollama, |r| ollama.request_body(r, false).unwrap());
    assert_eq!(body["options"]["num_predict"], TOKENS);
}

/// The compatible endpoints that know only `max_tokens` get it; OpenAI, Azure OpenAI and xAI
/// get `max_completion_tokens`.
#[test]
fn compatible_endpoints_get_the_field_they_know() {
    let field = |config: OpenAiConfig| {
        let chat = OpenAiChat::new(config.with_api_key("k")).unwrap();
        let params = chat.output_limit(TOKENS).unwrap();
        let keys: Vec<&str> = params.keys().map(String::as_str).collect();
        keys.concat()
    };
    assert_eq!(field(OpenAiConfig::openai("m")), "max_completion_tokens");
    assert_eq!(
        field(OpenAiConfig::azure("https://r.openai.azure.com", "d")),
        "max_completion_tokens"
    );
    assert_eq!(field(OpenAiConfig::xai("m")), "max_completion_tokens");
    for config in [
        OpenAiConfig::deepseek("m"),
        OpenAiConfig::openrouter("m"),
        OpenAiConfig::mistral("m"),
        OpenAiConfig::azure_foundry("https://r.services.ai.azure.com", "m"),
        OpenAiConfig::ollama("m"),
        OpenAiConfig::compatible("http://127.0.0.1:1/v1", "m"),
    ] {
        assert_eq!(field(config), "max_tokens");
    }
}

#[test]
fn a_fallback_chain_names_a_limit_only_when_its_providers_agree() {
    let same = FallbackProvider::new([
        Arc::new(anthropic()) as Arc<dyn Provider>,
        Arc::new(anthropic()),
    ])
    .unwrap();
    let params = same.output_limit(TOKENS).unwrap();
    assert_eq!(params["max_tokens"], TOKENS);
    let mixed = FallbackProvider::new([
        Arc::new(anthropic()) as Arc<dyn Provider>,
        Arc::new(gemini()),
    ])
    .unwrap();
    assert!(mixed.output_limit(TOKENS).is_none());
}
