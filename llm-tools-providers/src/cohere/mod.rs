//! Cohere's v2 chat API (`POST {base}/chat`), with the cargo feature `cohere`.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use llm_tools_core::{Message, Provider, Request};
//! use llm_tools_providers::cohere::{Cohere, CohereConfig};
//!
//! let provider = Cohere::new(CohereConfig::new("command-a-03-2025"))?; // COHERE_API_KEY
//! let messages = [Message::user("Say hello")];
//! let response = provider.complete(Request::new(&messages, &[])).await?;
//! println!("{}", response.message.text());
//! # Ok(()) }
//! ```
//!
//! - **Tools** are `{"type":"function","function":{…}}` entries with the schema as it is,
//!   serialized once per tool (`strict_tools` with [`CohereConfig::with_strict_tools`]); a
//!   namespaced tool travels under its joined name and its calls are mapped back. No tool
//!   search: the chat searches deferred tools itself.
//! - **Tool choice** is `tool_choice`: `REQUIRED`, `NONE`, or absent for auto. Cohere cannot
//!   force one tool by name, so forcing one offers that tool alone with `REQUIRED`.
//! - **The tool plan** Cohere writes before its calls streams as reasoning, is kept in the
//!   message's provider data and sent back with the calls, as Cohere asks.
//! - **Results** go back as `tool` messages whose content is a document (an error's text
//!   says so), which the model cites: citations (`citations`, `citation-start`) are kept in the
//!   message's provider data, in order.
//! - **Streams** are server-sent events (`content-delta`, `tool-plan-delta`,
//!   `tool-call-start`/`-delta`/`-end`, `citation-start`, `message-end`); a stream without its
//!   `message-end` is cut short.
//! - **Errors** are `{"message", "error_type"}` with the HTTP status; 429 and 5xx are retried.

mod canonical;
mod config;
mod errors;
mod request;
mod response;
mod stream;

use llm_tools_core::{ProviderError, Request, Response};

pub use canonical::canonical_request;
pub use config::{CohereConfig, CohereOptions};
pub use stream::CohereAssembler;

use crate::http::HttpClient;
use crate::protocol::{HttpProvider, NameMap, Protocol, StreamInBody, ids};
use crate::wire;

/// The Cohere provider: [`CohereChat`] in the crate's provider shell.
pub type Cohere = HttpProvider<CohereChat>;

/// The v2 chat protocol: what [`Cohere`] speaks.
#[derive(Debug, Clone)]
pub struct CohereChat {
    config: CohereConfig,
    kept: wire::kept::KeptDefinitions,
}

impl Protocol for CohereChat {
    type Config = CohereConfig;
    type Assembler = CohereAssembler;
    const ID: &'static str = ids::COHERE;

    fn open(config: CohereConfig) -> Result<(Self, HttpClient), llm_tools_core::Error> {
        let http = config.client(config.http.clone())?;
        Ok((
            Self {
                config,
                kept: wire::kept::KeptDefinitions::default(),
            },
            http,
        ))
    }

    fn config(&self) -> &CohereConfig {
        &self.config
    }

    fn model(&self) -> &str {
        self.config.model()
    }

    fn output_limit(&self, tokens: u32) -> Option<serde_json::Map<String, serde_json::Value>> {
        Some(crate::protocol::output_limit_at(&["max_tokens"], tokens))
    }

    fn path(&self, _stream: bool) -> &str {
        "/chat"
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
        CohereAssembler::new(name, names, request_id)
    }
}

impl StreamInBody for CohereChat {}
