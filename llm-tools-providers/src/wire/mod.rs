//! What every wire protocol shares beyond the HTTP layer and the [`protocol`](crate::protocol)
//! seam, by concern: writing bodies ([`body`]), structured output ([`output`]), tools and calls ([`tools`]), attachments
//! ([`attachments`]), and reading answers and errors ([`answers`]).

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
pub(crate) mod output;
pub(crate) mod provider_tools;
pub(crate) mod tools;

pub(crate) use answers::*;
pub(crate) use attachments::*;
pub(crate) use body::*;
pub(crate) use tools::*;

pub(crate) use crate::protocol::{Assembler, HttpProvider, NameMap, Protocol};
