//! OpenAI's two protocols: [`OpenAiResponses`] (the Responses API, OpenAI's default, also xAI)
//! and [`OpenAiChat`] (Chat Completions, also every OpenAI-compatible endpoint: DeepSeek,
//! OpenRouter, Mistral, Azure, Ollama's `/v1`, vLLM, llama.cpp, LM Studio).
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use llm_tools_core::{Message, Provider, Request};
//! use llm_tools_providers::openai::{OpenAiConfig, OpenAiResponses};
//!
//! let provider = OpenAiResponses::new(OpenAiConfig::openai("gpt-5-nano"))?; // OPENAI_API_KEY
//! let messages = [Message::user("Say hello")];
//! let response = provider.complete(Request::new(&messages, &[])).await?;
//! println!("{}", response.message.text());
//! # Ok(()) }
//! ```
//!
//! Tool definitions are serialized once per tool and dialect (strict where the schema allows,
//! see [`crate::schema::openai`]) and reused by every request; tool calls are detected by their
//! presence, never by the finish reason; reasoning items and reasoning text the protocol needs
//! back are kept in the message's provider data and sent back only to the same protocol.

mod canonical;
mod chat;
mod config;
mod responses;
mod wire;

use llm_tools_core::{BoxFuture, EventStream, Provider, ProviderError, Request, Response};

pub use canonical::canonical_request;
pub use config::{OpenAiConfig, OpenAiOptions, Quirks};

use crate::http::HttpClient;
use wire::{NameMap, Protocol};

/// The Responses API (`POST {base}/responses`).
#[derive(Debug, Clone)]
pub struct OpenAiResponses {
    config: OpenAiConfig,
    http: HttpClient,
}

/// Chat Completions (`POST {base}/chat/completions`).
#[derive(Debug, Clone)]
pub struct OpenAiChat {
    config: OpenAiConfig,
    http: HttpClient,
}

impl OpenAiResponses {
    /// The provider for a configuration; a missing API key (where the endpoint needs one) or an
    /// invalid header is an [`Error::InvalidConfig`](llm_tools_core::Error::InvalidConfig) or a
    /// request error, before any request.
    pub fn new(config: OpenAiConfig) -> Result<Self, llm_tools_core::Error> {
        let http = config.client(config.http.clone())?;
        Ok(Self { config, http })
    }

    /// The configuration.
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    /// The request body this provider would send (for inspection and benchmarks).
    pub fn request_body(
        &self,
        request: &Request<'_>,
        stream: bool,
    ) -> Result<Vec<u8>, ProviderError> {
        self.body(request, stream)
    }

    inspection_methods!();
}

impl OpenAiChat {
    /// The provider for a configuration; a missing API key (where the endpoint needs one) or an
    /// invalid header is an error before any request.
    pub fn new(config: OpenAiConfig) -> Result<Self, llm_tools_core::Error> {
        let http = config.client(config.http.clone())?;
        Ok(Self { config, http })
    }

    /// The configuration.
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    /// The request body this provider would send (for inspection and benchmarks).
    pub fn request_body(
        &self,
        request: &Request<'_>,
        stream: bool,
    ) -> Result<Vec<u8>, ProviderError> {
        self.body(request, stream)
    }

    inspection_methods!();
}

impl Protocol for OpenAiResponses {
    type Assembler = responses::ResponsesAssembler;

    fn http(&self) -> &HttpClient {
        &self.http
    }

    fn path(&self, _stream: bool) -> &str {
        "/responses"
    }

    fn body(&self, request: &Request<'_>, stream: bool) -> Result<Vec<u8>, ProviderError> {
        responses::body(&self.config, request, stream)
    }

    fn parse(
        &self,
        body: &[u8],
        names: &NameMap,
        request_id: Option<String>,
    ) -> Result<Response, ProviderError> {
        responses::parse(self.http.name(), body, names, request_id)
    }

    fn assembler(&self, names: NameMap, request_id: Option<String>) -> Self::Assembler {
        responses::ResponsesAssembler::new(self.http.name(), names, request_id)
    }
}

impl Protocol for OpenAiChat {
    type Assembler = chat::ChatAssembler;

    fn http(&self) -> &HttpClient {
        &self.http
    }

    fn path(&self, _stream: bool) -> &str {
        "/chat/completions"
    }

    fn body(&self, request: &Request<'_>, stream: bool) -> Result<Vec<u8>, ProviderError> {
        chat::body(&self.config, request, stream)
    }

    fn parse(
        &self,
        body: &[u8],
        names: &NameMap,
        request_id: Option<String>,
    ) -> Result<Response, ProviderError> {
        chat::parse(self.http.name(), body, names, request_id)
    }

    fn assembler(&self, names: NameMap, request_id: Option<String>) -> Self::Assembler {
        chat::ChatAssembler::new(self.http.name(), names, request_id)
    }
}

impl Provider for OpenAiResponses {
    fn protocol(&self) -> &str {
        responses::PROTOCOL
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

impl Provider for OpenAiChat {
    fn protocol(&self) -> &str {
        chat::PROTOCOL
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
