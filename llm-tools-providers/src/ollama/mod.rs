//! Ollama's native API (`POST {base}/api/chat`), with the cargo feature `ollama`; for its
//! OpenAI-compatible `/v1` endpoint use `OpenAiConfig::ollama` instead.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use llm_tools_core::{Message, Provider, Request};
//! use llm_tools_providers::ollama::{Ollama, OllamaConfig};
//!
//! let provider = Ollama::new(OllamaConfig::new("qwen3").with_think(true))?; // OLLAMA_HOST
//! let messages = [Message::user("Say hello")];
//! let response = provider.complete(Request::new(&messages, &[])).await?;
//! println!("{}", response.message.text());
//! # Ok(()) }
//! ```
//!
//! - **Tools** are `{"type":"function","function":{…}}` entries whose schema is in the form
//!   Ollama's decoder keeps ([`crate::schema::ollama`]: `$ref`s inlined, dropped constraints in
//!   the description), serialized once per tool. Ollama has no tool choice: `Auto` sends the
//!   tools, `None` sends none, and forcing a tool is refused with a clear error. No tool
//!   search: the chat searches deferred tools itself.
//! - **Calls** come whole, their arguments an object (or JSON text from some models); the
//!   server's `call_…` id is kept, and one is generated for older servers that send none.
//!   Results go back as `tool` messages with `tool_name` and `tool_call_id`.
//! - **Streams** are newline-delimited JSON ([`Framing::Ndjson`]):
//!   text and thinking as they come, each call as its line arrives; a line that is not JSON is
//!   a decode error, an `{"error": …}` line the server's error, a stream without its
//!   `done: true` line cut short.
//! - **Thinking** (`with_think`, `with_think_level`) comes back as reasoning, is kept in the
//!   message's provider data and sent back as `thinking`; `keep_alive` and the model's `options`
//!   come from the configuration, anything else through `with_params`.
//!
//! No recording of Ollama's native API exists here: its tests follow the documented format
//! (`docs/api.md`, `api/types.go`), served by the loopback replay server.

mod config;
mod errors;
mod request;
mod response;
mod stream;

use llm_tools_core::{ProviderError, Request, Response};

pub use config::{OllamaConfig, OllamaOptions};
pub use stream::OllamaAssembler;

use crate::framing::Framing;
use crate::http::HttpClient;
use crate::protocol::{HttpProvider, NameMap, Protocol, StreamInBody, ids};
use crate::wire;

/// The Ollama provider: [`OllamaChat`] in the crate's provider shell.
pub type Ollama = HttpProvider<OllamaChat>;

/// The `/api/chat` protocol: what [`Ollama`] speaks.
#[derive(Debug, Clone)]
pub struct OllamaChat {
    config: OllamaConfig,
    kept: wire::kept::KeptDefinitions,
}

impl Protocol for OllamaChat {
    type Config = OllamaConfig;
    type Assembler = OllamaAssembler;
    const ID: &'static str = ids::OLLAMA;

    fn open(config: OllamaConfig) -> Result<(Self, HttpClient), llm_tools_core::Error> {
        let http = config.client(config.http.clone())?;
        Ok((
            Self {
                config,
                kept: wire::kept::KeptDefinitions::default(),
            },
            http,
        ))
    }

    fn config(&self) -> &OllamaConfig {
        &self.config
    }

    fn model(&self) -> &str {
        self.config.model()
    }

    fn output_limit(&self, tokens: u32) -> Option<serde_json::Map<String, serde_json::Value>> {
        Some(crate::protocol::output_limit_at(
            &["options", "num_predict"],
            tokens,
        ))
    }

    fn framing(&self) -> Framing {
        Framing::Ndjson
    }

    fn path(&self, _stream: bool) -> &str {
        "/api/chat"
    }

    fn body(&self, request: &Request<'_>, stream: bool) -> Result<Vec<u8>, ProviderError> {
        request::body(&self.config, &self.kept, request, stream)
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
        OllamaAssembler::new(name, names, request_id)
    }
}

impl StreamInBody for OllamaChat {}
