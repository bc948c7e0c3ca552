//! Amazon Bedrock's Converse API (`POST {endpoint}/model/{modelId}/converse`, and
//! `/converse-stream` for ConverseStream), with the cargo feature `bedrock`.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use llm_tools_core::{Message, Provider, Request};
//! use llm_tools_providers::bedrock::{Bedrock, BedrockConfig};
//!
//! // AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (AWS_SESSION_TOKEN)
//! let provider = Bedrock::new(BedrockConfig::new("us.amazon.nova-2-lite-v1:0"))?;
//! let messages = [Message::user("Say hello")];
//! let response = provider.complete(Request::new(&messages, &[])).await?;
//! println!("{}", response.message.text());
//! # Ok(()) }
//! ```
//!
//! - **Auth**: every try of every request is signed with AWS Signature Version 4 (`aws-sigv4`,
//!   the AWS SDKs' signer) from the credentials of the AWS environment variables or
//!   [`BedrockConfig::with_credentials`]; a Bedrock API key (`AWS_BEARER_TOKEN_BEDROCK`,
//!   [`BedrockConfig::with_bedrock_api_key`]) goes as a bearer token instead. Profile files
//!   and instance roles are not read: resolve them with the AWS SDK and pass the credentials.
//! - **Models** are model ids, inference profiles (`us.…`) or ARNs; the id is percent-encoded
//!   in the path.
//! - **Tools** are `toolConfig.tools[].toolSpec` with the schema as it is in
//!   `inputSchema.json`, serialized once per tool and reused by every request; a namespaced
//!   tool travels under its joined name and its calls are mapped back. Converse has no tool
//!   search: the chat searches deferred tools itself and offers the ones it found.
//! - **Tool choice** is `toolChoice`: `auto` (the default, not sent), `any`, and `tool` to
//!   force one. Converse cannot forbid calls once the conversation has some (it needs the
//!   tools declared), so `ToolChoice::None` is refused then, and sends no tools before.
//! - **Results** are `toolResult` blocks with `status: "error"` for errors, images and
//!   documents (PDF, CSV, Word, Excel, HTML, Markdown) as bytes, text files inline; a round's
//!   results and the next question travel in one user turn, as Converse wants the roles to
//!   alternate.
//! - **Reasoning** blocks (`reasoningContent`, with their signature, or redacted) are kept in
//!   the message's provider data and sent back in their place.
//! - **Caching and options**: [`BedrockConfig::with_cache_points`] puts a `cachePoint` after
//!   the system prompt and after the tools; `additionalModelRequestFields`,
//!   `guardrailConfig` and the like go through `with_params`, a tool's own fields through its
//!   `bedrock` provider options.
//! - **Streams** are AWS event-stream messages ([`Framing::AwsEventStream`]); tool inputs are
//!   reassembled from their fragments, exceptions (`throttlingException`, …) are typed errors,
//!   retryable where AWS says so.
//! - **Errors** are read from `x-amzn-ErrorType` and the body's `message`: throttling (429) and
//!   unavailability (503) are retried, validation (400) and access denied (403) are not.
//!
//! [`Framing::AwsEventStream`]: crate::framing::Framing::AwsEventStream

mod canonical;
mod config;
mod errors;
mod request;
mod response;
mod signing;
mod stream;

use std::sync::Arc;

use llm_tools_core::{ProviderError, Request, Response};

pub use canonical::canonical_request;
pub use config::{AwsCredentials, BedrockConfig, BedrockOptions};
pub use stream::BedrockAssembler;

use crate::framing::Framing;
use crate::http::HttpClient;
use crate::protocol::{HttpProvider, NameMap, Protocol, ids};

/// The Bedrock provider: [`Converse`] in the crate's provider shell.
pub type Bedrock = HttpProvider<Converse>;

/// The Converse protocol: what [`Bedrock`] speaks.
#[derive(Debug, Clone)]
pub struct Converse {
    config: BedrockConfig,
    converse: String,
    converse_stream: String,
}

/// A model id as one path segment: everything but unreserved characters percent-encoded
/// (`:` in `…-v1:0`, `/` in an ARN), as the AWS SDKs send it.
fn path_segment(id: &str) -> String {
    let mut out = String::with_capacity(id.len() + 8);
    for b in id.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl Bedrock {
    /// The request body this provider would send (for inspection and benchmarks); Converse
    /// and ConverseStream have the same body.
    pub fn request_body(&self, request: &Request<'_>) -> Result<Vec<u8>, ProviderError> {
        self.wire().body(request, false)
    }
}

impl Protocol for Converse {
    type Config = BedrockConfig;
    type Assembler = BedrockAssembler;
    const ID: &'static str = ids::BEDROCK_CONVERSE;

    fn open(config: BedrockConfig) -> Result<(Self, HttpClient), llm_tools_core::Error> {
        crate::config::checked_host_label("region", &config.options.region)?;
        let mut settings = config.http.clone();
        match (&config.options.credentials, &settings.api_key) {
            (Some(credentials), _) => {
                settings.api_key = None;
                settings.signer = Some(Arc::new(signing::SigV4 {
                    credentials: credentials.clone(),
                    region: config.options.region.clone(),
                }));
            }
            (None, Some(_)) => {}
            (None, None) => {
                return Err(llm_tools_core::ConfigError::MissingCredentials {
                    provider: config.name().to_owned(),
                    what: "AWS credentials",
                    hint: "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_BEARER_TOKEN_BEDROCK), or call `with_credentials`".into(),
                }
                .into());
            }
        }
        let http = config.client(settings)?;
        let model = path_segment(config.model());
        let protocol = Self {
            converse: format!("/model/{model}/converse"),
            converse_stream: format!("/model/{model}/converse-stream"),
            config,
        };
        Ok((protocol, http))
    }

    fn config(&self) -> &BedrockConfig {
        &self.config
    }

    fn model(&self) -> &str {
        self.config.model()
    }

    fn output_limit(&self, tokens: u32) -> Option<serde_json::Map<String, serde_json::Value>> {
        Some(crate::protocol::output_limit_at(
            &["inferenceConfig", "maxTokens"],
            tokens,
        ))
    }

    fn framing(&self) -> Framing {
        Framing::AwsEventStream
    }

    fn path(&self, stream: bool) -> &str {
        if stream {
            &self.converse_stream
        } else {
            &self.converse
        }
    }

    fn body(&self, request: &Request<'_>, _stream: bool) -> Result<Vec<u8>, ProviderError> {
        request::body(&self.config, request)
    }

    fn parse(
        &self,
        name: &str,
        body: &[u8],
        names: &NameMap,
        request_id: Option<String>,
    ) -> Result<Response, ProviderError> {
        response::parse(name, body, names, request_id)
    }

    fn assembler(&self, name: &str, names: NameMap, request_id: Option<String>) -> Self::Assembler {
        BedrockAssembler::new(name, names, request_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_ids_and_arns_are_one_path_segment() {
        assert_eq!(
            path_segment("us.amazon.nova-2-lite-v1:0"),
            "us.amazon.nova-2-lite-v1%3A0"
        );
        assert_eq!(
            path_segment("arn:aws:bedrock:us-east-1:123:inference-profile/x"),
            "arn%3Aaws%3Abedrock%3Aus-east-1%3A123%3Ainference-profile%2Fx"
        );
    }

    #[test]
    fn no_credentials_is_a_clear_error_before_any_request() {
        let mut config = BedrockConfig::new("m").with_endpoint("http://127.0.0.1:9");
        config.options.credentials = None;
        config.http.api_key = None;
        let err = Bedrock::new(config).unwrap_err();
        assert!(err.to_string().contains("no AWS credentials"), "{err}");
    }
}
