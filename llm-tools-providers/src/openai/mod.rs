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
mod errors;
mod output;
mod responses;

use llm_tools_core::{ProviderError, Request, Response};

pub use canonical::canonical_request;
pub use chat::ChatAssembler;
pub use config::{OpenAiConfig, OpenAiOptions, Quirks};
pub use responses::ResponsesAssembler;

use crate::http::HttpClient;
use crate::protocol::{HttpProvider, NameMap, Protocol, StreamInBody, ids};
use crate::wire;

/// The Responses API provider (`POST {base}/responses`): [`ResponsesApi`] in the crate's
/// provider shell.
pub type OpenAiResponses = HttpProvider<ResponsesApi>;

/// The Chat Completions provider (`POST {base}/chat/completions`): [`ChatCompletions`] in the
/// crate's provider shell.
pub type OpenAiChat = HttpProvider<ChatCompletions>;

/// The Responses protocol: what [`OpenAiResponses`] speaks.
#[derive(Debug, Clone)]
pub struct ResponsesApi {
    config: OpenAiConfig,
}

/// The Chat Completions protocol: what [`OpenAiChat`] speaks.
#[derive(Debug, Clone)]
pub struct ChatCompletions {
    config: OpenAiConfig,
    kept: wire::kept::KeptDefinitions,
}

impl Protocol for ResponsesApi {
    type Config = OpenAiConfig;
    type Assembler = ResponsesAssembler;
    const ID: &'static str = ids::OPENAI_RESPONSES;

    fn open(config: OpenAiConfig) -> Result<(Self, HttpClient), llm_tools_core::Error> {
        let http = config.client(config.http.clone())?;
        Ok((Self { config }, http))
    }

    fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    fn model(&self) -> &str {
        self.config.model()
    }

    fn output_limit(&self, tokens: u32) -> Option<serde_json::Map<String, serde_json::Value>> {
        Some(crate::protocol::output_limit_at(
            &["max_output_tokens"],
            tokens,
        ))
    }

    fn native_tool_search(&self) -> bool {
        self.config.native_tool_search()
    }

    fn path(&self, _stream: bool) -> &str {
        "/responses"
    }

    fn body(&self, request: &Request<'_>, stream: bool) -> Result<Vec<u8>, ProviderError> {
        responses::body(&self.config, request, stream)
    }

    fn parse(
        &self,
        name: &str,
        body: &[u8],
        names: &NameMap,
        request_id: Option<String>,
    ) -> Result<Response, ProviderError> {
        responses::parse(name, body, names, request_id)
    }

    fn assembler(&self, name: &str, names: NameMap, request_id: Option<String>) -> Self::Assembler {
        ResponsesAssembler::new(name, names, request_id)
    }
}

impl Protocol for ChatCompletions {
    type Config = OpenAiConfig;
    type Assembler = ChatAssembler;
    const ID: &'static str = ids::OPENAI_CHAT;

    fn open(config: OpenAiConfig) -> Result<(Self, HttpClient), llm_tools_core::Error> {
        let http = config.client(config.http.clone())?;
        Ok((
            Self {
                config,
                kept: wire::kept::KeptDefinitions::default(),
            },
            http,
        ))
    }

    fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    fn model(&self) -> &str {
        self.config.model()
    }

    fn output_limit(&self, tokens: u32) -> Option<serde_json::Map<String, serde_json::Value>> {
        Some(crate::protocol::output_limit_at(
            &[self.config.quirks().max_tokens_field],
            tokens,
        ))
    }

    fn path(&self, _stream: bool) -> &str {
        "/chat/completions"
    }

    fn body(&self, request: &Request<'_>, stream: bool) -> Result<Vec<u8>, ProviderError> {
        chat::body(&self.config, &self.kept, request, stream)
    }

    fn parse(
        &self,
        name: &str,
        body: &[u8],
        names: &NameMap,
        request_id: Option<String>,
    ) -> Result<Response, ProviderError> {
        chat::parse(name, body, names, request_id)
    }

    fn assembler(&self, name: &str, names: NameMap, request_id: Option<String>) -> Self::Assembler {
        ChatAssembler::new(name, names, request_id)
    }
}

impl StreamInBody for ResponsesApi {}

impl StreamInBody for ChatCompletions {}
