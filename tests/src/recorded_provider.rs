//! The real provider a recording was made with, pointed at the loopback replay server that
//! serves it: the protocol and vendor from the recording's header, the model from its first
//! model request, test credentials, no retries.

use llm_tools_core::Provider;
use llm_tools_providers::anthropic::{Anthropic, AnthropicConfig};
use llm_tools_providers::bedrock::{AwsCredentials, Bedrock, BedrockConfig};
use llm_tools_providers::cohere::{Cohere, CohereConfig};
use llm_tools_providers::gemini::{Gemini, GeminiConfig, GoogleCredentials};
use llm_tools_providers::http::RetryPolicy;
use llm_tools_providers::openai::{OpenAiChat, OpenAiConfig, OpenAiResponses};
use llm_tools_providers::record::{Interaction, Recording};
use llm_tools_providers::replay::ReplayServer;

/// The interactions that are model turns (not Vertex AI's OAuth token exchange).
pub fn model_interactions(recording: &Recording) -> Vec<&Interaction> {
    recording
        .interactions
        .iter()
        .filter(|i| !i.request.url.contains("oauth2"))
        .collect()
}

/// The provider for `recording`, talking to `server`.
///
/// # Errors
///
/// When the recording's protocol has no provider here, or the provider refuses its settings.
pub fn for_recording(
    recording: &Recording,
    server: &ReplayServer,
) -> Result<Box<dyn Provider>, String> {
    let first = model_interactions(recording)
        .first()
        .map(|i| &i.request)
        .ok_or("the recording has no model request")?;
    let model = first.body["model"].as_str().unwrap_or_default();
    let url = server.url();
    let retry = RetryPolicy::none();
    let error = |e: llm_tools_core::Error| e.to_string();
    let provider: Box<dyn Provider> =
        match (recording.protocol.as_str(), recording.provider.as_str()) {
            ("openai-responses", vendor) => {
                let config = match vendor {
                    "xai" => OpenAiConfig::xai(model),
                    "deepseek" => OpenAiConfig::deepseek(model),
                    _ => OpenAiConfig::openai(model),
                };
                Box::new(
                    OpenAiResponses::new(
                        config
                            .with_base_url(url)
                            .with_api_key("test-key")
                            .with_retry(retry),
                    )
                    .map_err(error)?,
                )
            }
            ("openai-chat", vendor) => {
                // Some recordings name the model's maker; the URL names the endpoint.
                let vendor = if first.url.contains("openrouter.ai") {
                    "openrouter"
                } else {
                    vendor
                };
                let config = match vendor {
                    "azure" => OpenAiConfig::azure_foundry(url, model),
                    "mistral" => OpenAiConfig::mistral(model).with_base_url(url),
                    "deepseek" => OpenAiConfig::deepseek(model).with_base_url(url),
                    "openrouter" => OpenAiConfig::openrouter(model).with_base_url(url),
                    _ => OpenAiConfig::openai(model).with_base_url(url),
                };
                Box::new(
                    OpenAiChat::new(config.with_api_key("test-key").with_retry(retry))
                        .map_err(error)?,
                )
            }
            ("anthropic-messages", _) => Box::new(
                Anthropic::new(
                    AnthropicConfig::new(model)
                        .with_base_url(format!("{url}/v1"))
                        .with_api_key("test-key")
                        .with_retry(retry),
                )
                .map_err(error)?,
            ),
            ("cohere-v2", _) => Box::new(
                Cohere::new(
                    CohereConfig::new(model)
                        .with_base_url(format!("{url}/v2"))
                        .with_api_key("test-key")
                        .with_retry(retry),
                )
                .map_err(error)?,
            ),
            ("bedrock-converse", _) => {
                let id = first
                    .url
                    .split("/model/")
                    .nth(1)
                    .ok_or("a Bedrock URL without a model")?
                    .trim_end_matches("/converse-stream")
                    .trim_end_matches("/converse");
                Box::new(
                    Bedrock::new(
                        BedrockConfig::new(id)
                            .with_region("eu-west-3")
                            .with_endpoint(url)
                            .with_credentials(AwsCredentials::new("AKIDTEST", "test-secret"))
                            .with_retry(retry),
                    )
                    .map_err(error)?,
                )
            }
            ("gemini", vendor) => {
                let model = first
                    .url
                    .split("/models/")
                    .nth(1)
                    .and_then(|m| m.split(':').next())
                    .ok_or("a Gemini URL without a model")?;
                let config = if vendor == "vertexai" {
                    GeminiConfig::vertex("proj-1", "us-central1", model)
                        .with_base_url(format!(
                            "{url}/v1beta1/projects/proj-1/locations/us-central1/publishers/google"
                        ))
                        .with_token_uri(format!("{url}/token"))
                        .with_google_credentials(GoogleCredentials::refresh_token(
                            "client-1",
                            "client-secret",
                            "refresh-token",
                        ))
                } else {
                    GeminiConfig::new(model)
                        .with_base_url(format!("{url}/v1beta"))
                        .with_api_key("test-key")
                };
                Box::new(Gemini::new(config.with_retry(retry)).map_err(error)?)
            }
            (other, _) => return Err(format!("no provider for the protocol `{other}`")),
        };
    Ok(provider)
}
