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

mod canonical;
mod config;
mod request;
mod response;

use llm_tools_core::{BoxFuture, EventStream, Provider, ProviderError, Request, Response};

pub use canonical::canonical_request;
pub use config::{GeminiConfig, GeminiOptions, SchemaField};

use crate::http::HttpClient;
use crate::wire::{self, NameMap, Protocol};

/// The Gemini protocol.
#[derive(Debug, Clone)]
pub struct Gemini {
    config: GeminiConfig,
    http: HttpClient,
    generate: String,
    stream_generate: String,
}

impl Gemini {
    /// The provider for a configuration; a missing API key or an invalid header is an error
    /// before any request.
    pub fn new(config: GeminiConfig) -> Result<Self, llm_tools_core::Error> {
        let http = config.client(config.http.clone())?;
        Ok(Self {
            generate: format!("/models/{}:generateContent", config.model),
            stream_generate: format!("/models/{}:streamGenerateContent?alt=sse", config.model),
            config,
            http,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &GeminiConfig {
        &self.config
    }

    /// The request body this provider would send (for inspection and benchmarks); streaming
    /// and non-streaming requests have the same body.
    pub fn request_body(&self, request: &Request<'_>) -> Result<Vec<u8>, ProviderError> {
        self.body(request, false)
    }

    inspection_methods!();
}

impl Protocol for Gemini {
    type Assembler = response::GeminiAssembler;

    fn http(&self) -> &HttpClient {
        &self.http
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
        body: &[u8],
        names: &NameMap,
        request_id: Option<String>,
    ) -> Result<Response, ProviderError> {
        response::parse(self.http.name(), body, names, request_id)
    }

    fn assembler(&self, names: NameMap, request_id: Option<String>) -> Self::Assembler {
        response::GeminiAssembler::new(self.http.name(), names, request_id)
    }
}

impl Provider for Gemini {
    fn protocol(&self) -> &str {
        request::PROTOCOL
    }

    fn model(&self) -> &str {
        self.config.model()
    }

    fn complete<'a>(
        &'a self,
        request: Request<'a>,
    ) -> BoxFuture<'a, Result<Response, ProviderError>> {
        Box::pin(wire::complete(self, request))
    }

    fn stream<'a>(
        &'a self,
        request: Request<'a>,
    ) -> BoxFuture<'a, Result<EventStream<'a>, ProviderError>> {
        Box::pin(wire::stream(self, request))
    }
}
