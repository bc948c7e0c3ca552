//! Anthropic Messages (`POST {base}/messages`).
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use llm_tools_core::{Message, Provider, Request};
//! use llm_tools_providers::anthropic::{Anthropic, AnthropicConfig};
//!
//! let provider = Anthropic::new(AnthropicConfig::new("claude-haiku-4-5"))?; // ANTHROPIC_API_KEY
//! let messages = [Message::user("Say hello")];
//! let response = provider.complete(Request::new(&messages, &[])).await?;
//! println!("{}", response.message.text());
//! # Ok(()) }
//! ```
//!
//! - **Tools** travel as `input_schema` (strict where [`AnthropicConfig::with_strict`] asks and
//!   the schema allows, see [`crate::schema::anthropic`]), each definition serialized once per
//!   dialect and reused by every request. A namespaced tool travels under its joined name
//!   (`crm_customer_lookup`) and its calls are mapped back to the namespace; it can be forced
//!   by that name.
//! - **Deferred tools** (`ToolSpec::defer`) are sent with `"defer_loading": true` and the
//!   server-side tool search entry ([`ToolSearch`]); the model finds them through it, and the
//!   search blocks of its answer go back in later requests, which is how Anthropic keeps the
//!   tools it found loaded. A forced tool is always sent loaded.
//! - **The `computer` namespace** is Anthropic's computer-use toolset
//!   (`computer_toolset_20260801`): a tool named after a member (`screenshot`, `left_click`, …)
//!   in that namespace is sent as that member of one toolset entry (members without a tool are
//!   switched off), its calls carry `toolset_name` and its results go back with it. A member
//!   cannot be forced (asking is an error suggesting `ToolChoice::Required`), and the model
//!   sends Anthropic's input for it, not the tool's schema. **The `browser` namespace** is
//!   Anthropic's browser-use toolset, whose results need a `browser_state` block the
//!   documentation does not define well enough to build: a tool there is a clear error.
//! - **Tool choice** is `auto` / `any` / `tool` / `none`, with `disable_parallel_tool_use` for
//!   the parallel switch; the results of one round go back in one user message as
//!   `tool_result` blocks with `is_error`, images and PDFs as blocks, text files inlined.
//! - **Thinking** and server-tool blocks are kept in the message's provider data and sent back
//!   unchanged, in their place.
//! - **Paused turns**: an answer that stops with `pause_turn` (a long server-tool loop) is
//!   continued by sending it back as it is, and the segments come back as one message
//!   ([`AnthropicConfig::with_pause_turn_continuations`], default
//!   [`DEFAULT_PAUSE_TURN_CONTINUATIONS`]).
//! - **Errors**: 429 and 529 "overloaded" are retried like 5xx, honouring `retry-after`; an
//!   `error` event in a stream ends it with a typed error.

mod canonical;
mod config;
mod errors;
mod pause;
mod request;
mod response;
mod stream;

use llm_tools_core::{BoxFuture, EventStream, ProviderError, Request, Response};

pub use canonical::canonical_request;
pub use config::{
    AnthropicConfig, AnthropicOptions, DEFAULT_MAX_TOKENS, DEFAULT_PAUSE_TURN_CONTINUATIONS,
    DEFAULT_VERSION, MCP_CONNECTOR_BETA, ToolSearch, WEB_FETCH_BETA,
};
pub use stream::AnthropicAssembler;

use crate::http::HttpClient;
use crate::protocol::{HttpProvider, NameMap, Protocol, StreamInBody, ids};

/// The Anthropic provider: [`MessagesApi`] in the crate's provider shell.
pub type Anthropic = HttpProvider<MessagesApi>;

/// The Messages protocol: what [`Anthropic`] speaks.
#[derive(Debug, Clone)]
pub struct MessagesApi {
    config: AnthropicConfig,
}

impl Protocol for MessagesApi {
    type Config = AnthropicConfig;
    type Assembler = AnthropicAssembler;
    const ID: &'static str = ids::ANTHROPIC;

    fn open(config: AnthropicConfig) -> Result<(Self, HttpClient), llm_tools_core::Error> {
        let http = config.client(config.http_settings())?;
        Ok((Self { config }, http))
    }

    fn config(&self) -> &AnthropicConfig {
        &self.config
    }

    fn model(&self) -> &str {
        self.config.model()
    }

    fn output_limit(&self, tokens: u32) -> Option<serde_json::Map<String, serde_json::Value>> {
        Some(crate::protocol::output_limit_at(&["max_tokens"], tokens))
    }

    fn native_tool_search(&self) -> bool {
        true
    }

    fn answer_tool(&self, request: &Request<'_>) -> Option<&'static str> {
        request::answers_through_tool(&self.config, request).then_some(request::ANSWER_TOOL)
    }

    fn path(&self, _stream: bool) -> &str {
        "/messages"
    }

    fn body(&self, request: &Request<'_>, stream: bool) -> Result<Vec<u8>, ProviderError> {
        request::body(&self.config, request, stream)
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
        AnthropicAssembler::new(name, names, request_id)
    }

    fn complete<'a>(
        provider: &'a Anthropic,
        request: Request<'a>,
    ) -> BoxFuture<'a, Result<Response, ProviderError>> {
        let limit = provider.config().options.pause_turn_continuations;
        Box::pin(pause::complete(provider, request, limit))
    }

    fn stream<'a>(
        provider: &'a Anthropic,
        request: Request<'a>,
    ) -> BoxFuture<'a, Result<EventStream<'a>, ProviderError>> {
        let limit = provider.config().options.pause_turn_continuations;
        Box::pin(pause::stream(provider, request, limit))
    }
}

impl StreamInBody for MessagesApi {}
