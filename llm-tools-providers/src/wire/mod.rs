//! What the wire protocols share beyond the HTTP layer and the [`protocol`](crate::protocol)
//! seam, by concern: writing bodies ([`body`]), structured output ([`output`]), tools and calls
//! ([`tools`]), the last tool list written, kept ([`kept`]), the blocks a stream has open
//! ([`open_blocks`]), provider tools
//! ([`provider_tools`]), attachments ([`attachments`]), reading answers and errors
//! ([`answers`]), and comparing bodies in tests ([`canonical`]).
//!
//! No code here is one provider's: what one protocol (or one vendor's two) writes its own way,
//! its structured-output field, its provider tools, its tool-call ids, lives in that
//! protocol's folder (`openai/`, `anthropic/`, …), which calls the helpers here.

// Each protocol uses some of these helpers: with only some protocols' features on, the others'
// go unused.
#![cfg_attr(
    not(all(
        feature = "openai",
        feature = "anthropic",
        feature = "gemini",
        feature = "bedrock",
        feature = "cohere",
        feature = "ollama"
    )),
    allow(dead_code)
)]

pub(crate) mod answers;
pub(crate) mod attachments;
pub(crate) mod body;
pub(crate) mod canonical;
pub(crate) mod kept;
pub(crate) mod open_blocks;
pub(crate) mod output;
pub(crate) mod provider_tools;
#[cfg(test)]
pub(crate) mod test_events;
pub(crate) mod tools;

pub(crate) use answers::*;
pub(crate) use attachments::*;
pub(crate) use body::*;
pub(crate) use tools::*;

/// The most of a block or part an error quotes when it cannot be read (a block may be
/// megabytes: a search result, an image).
pub(crate) const SHOWN_BLOCK_BYTES: usize = 1024;
