//! Wire protocols for `llm-tools`, one module per protocol behind its own cargo feature
//! (`openai`, `anthropic`, `gemini`, `bedrock`, `cohere`, `ollama`), on a shared,
//! protocol-neutral layer. Every protocol's folder has the same shape: `config` (its
//! configuration and presets), `request` (the body it writes), `response` (a whole answer read)
//! and `stream` (a streamed answer reassembled from frames), plus `errors` where the vendor has
//! an error format of its own and `canonical` for comparing requests in tests (OpenAI's two
//! protocols are `openai::chat` and `openai::responses`, each of that shape, sharing
//! `openai::config`):
//!
//! - [`protocol`]: the seam a wire protocol implements, and [`HttpProvider`](protocol::HttpProvider),
//!   the one provider shell every protocol runs in (public, so a protocol can live outside);
//! - [`http`]: client settings, auth, request signing, timeouts, retries with backoff and
//!   jitter, typed errors, secrets kept out of every message;
//! - [`framing`]: how streams are cut into frames (server-sent events, newline-delimited JSON,
//!   AWS event-stream);
//! - [`config`]: what configures every provider (model, endpoint, key, headers, retries), which
//!   each protocol's configuration extends with its own options;
//! - [`record`] and `replay` (feature `replay`): recording a provider's traffic to a file, and serving it back from
//!   a loopback server with no network, for offline tests;
//! - [`schema`]: each provider's schema dialect, and the portability check;
//! - [`fallback`]: [`FallbackProvider`], which tries the next provider when one fails in a way
//!   another may not (after its own retries), and says which answered.
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "anthropic")]
pub mod anthropic;
#[cfg(feature = "bedrock")]
pub mod bedrock;
#[cfg(feature = "cohere")]
pub mod cohere;
#[cfg(feature = "_protocol")]
pub mod config;
pub mod fallback;
#[cfg(feature = "http")]
pub mod framing;
#[cfg(feature = "gemini")]
pub mod gemini;
#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "ollama")]
pub mod ollama;
#[cfg(feature = "openai")]
pub mod openai;
#[cfg(feature = "http")]
pub mod protocol;
#[cfg(feature = "http")]
pub mod record;
#[cfg(feature = "replay")]
pub mod replay;
pub mod schema;
#[cfg(feature = "_protocol")]
mod wire;

pub use fallback::{Candidate, Failure, FallbackInfo, FallbackProvider, FallbackReport};
