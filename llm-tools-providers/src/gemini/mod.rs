//! Google Gemini (`POST {base}/models/{model}:generateContent`, and
//! `:streamGenerateContent?alt=sse` when streaming).
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use llm_tools_core::{Message, Provider, Request};
//! use llm_tools_providers::gemini::{Gemini, GeminiConfig};
//!
//! let provider = Gemini::new(GeminiConfig::new("gemini-2.5-flash"))?; // GEMINI_API_KEY
//! let messages = [Message::user("Say hello")];
//! let response = provider.complete(Request::new(&messages, &[])).await?;
//! println!("{}", response.message.text());
//! # Ok(()) }
//! ```
//!
//! - **Tools** are `functionDeclarations` with the schema in `parametersJsonSchema`, or in the
//!   older `parameters` subset ([`SchemaField`]); each declaration is serialized once per field
//!   and reused by every request, and a schema Gemini would reject is an error before any
//!   request. A namespaced tool travels under its joined name and its calls are mapped back.
//!   Gemini has no tool search: the chat searches deferred tools itself and offers the ones it
//!   found, which go as ordinary declarations.
//! - **Tool choice** is `toolConfig.functionCallingConfig`: `AUTO`, `NONE`, `ANY`, and `ANY`
//!   with `allowedFunctionNames` to force one tool. Gemini has no parallel-calls switch.
//! - **Calls** come back whole, with their arguments as the JSON text Gemini sent (numbers such
//!   as `3.0` are left for the tool's decoder, which reads integral floats into integer
//!   parameters). A call without an id gets a generated one, which never goes back to Gemini:
//!   the responses of a round are paired with the calls by position, all in one content, in call
//!   order, each `response` an object (`{"output": …}` or `{"error": …}`). A call's
//!   `thoughtSignature` is kept on the call and sent back with it (Gemini 3 rejects a request
//!   without it); signatures on text and thought parts are kept in the message's provider data.
//! - **Errors**: `RESOURCE_EXHAUSTED` (429) is retried after the `RetryInfo.retryDelay` Gemini
//!   asks for, 5xx with backoff.
//! - **Vertex AI**: [`GeminiConfig::vertex`] speaks the same protocol to the `aiplatform`
//!   endpoint of a project and location, authorized with OAuth access tokens
//!   ([`GoogleCredentials`]: a token as it is, or one exchanged for a refresh token and cached
//!   until shortly before it expires; a token Vertex refuses is refreshed once).

mod canonical;
mod config;
mod errors;
mod request;
mod response;
mod stream;
mod vertex;

use llm_tools_core::{ProviderError, Request, Response};

pub use canonical::canonical_request;
pub use config::{GeminiConfig, GeminiOptions, SchemaField};
pub use errors::retry_delay_in_body;
pub use stream::GeminiAssembler;
pub use vertex::GoogleCredentials;

use crate::http::HttpClient;
use crate::protocol::{HttpProvider, NameMap, Protocol, ids};

/// The Gemini provider: [`GenerateContent`] in the crate's provider shell.
pub type Gemini = HttpProvider<GenerateContent>;

/// The `generateContent` protocol: what [`Gemini`] speaks.
#[derive(Debug, Clone)]
pub struct GenerateContent {
    config: GeminiConfig,
    generate: String,
    stream_generate: String,
}

impl Gemini {
    /// The request body this provider would send (for inspection and benchmarks); streaming
    /// and non-streaming requests have the same body.
    pub fn request_body(&self, request: &Request<'_>) -> Result<Vec<u8>, ProviderError> {
        self.wire().body(request, false)
    }
}

impl Protocol for GenerateContent {
    type Config = GeminiConfig;
    type Assembler = GeminiAssembler;
    const ID: &'static str = ids::GEMINI;

    fn open(config: GeminiConfig) -> Result<(Self, HttpClient), llm_tools_core::Error> {
        let mut settings = config.http.clone();
        if let Some(vertex) = &config.options.vertex {
            crate::config::checked_host_label("location", &vertex.location)?;
            let Some(credentials) = vertex.credentials.clone() else {
                return Err(llm_tools_core::ConfigError::MissingCredentials {
                    provider: config.name().to_owned(),
                    what: "Google credentials",
                    hint: "set GOOGLE_ACCESS_TOKEN, run `gcloud auth application-default login`, or call `with_google_credentials`".into(),
                }
                .into());
            };
            let client = settings.client.clone().unwrap_or_default();
            settings.signer = Some(vertex::GoogleOAuth::new(
                credentials,
                vertex.token_uri.clone(),
                client,
            ));
        }
        let http = config.client(settings)?;
        let protocol = Self {
            generate: format!("/models/{}:generateContent", config.model),
            stream_generate: format!("/models/{}:streamGenerateContent?alt=sse", config.model),
            config,
        };
        Ok((protocol, http))
    }

    fn config(&self) -> &GeminiConfig {
        &self.config
    }

    fn model(&self) -> &str {
        self.config.model()
    }

    fn output_limit(&self, tokens: u32) -> Option<serde_json::Map<String, serde_json::Value>> {
        Some(crate::protocol::output_limit_at(
            &["generationConfig", "maxOutputTokens"],
            tokens,
        ))
    }

    fn path(&self, stream: bool) -> &str {
        if stream {
            &self.stream_generate
        } else {
            &self.generate
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
        GeminiAssembler::new(name, names, request_id)
    }
}
