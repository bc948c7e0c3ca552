//! Phase 1 of `#[toolset]`: its attribute arguments.

use darling::FromMeta;
use darling::error::Accumulator;
use proc_macro2::TokenStream;

use crate::tool::args::{NamespaceArg, parse_keys};

/// `#[toolset(…)]`.
#[derive(Default, FromMeta)]
pub(crate) struct ToolsetArgs {
    /// The namespace every tool of the set inherits.
    pub(crate) namespace: Option<NamespaceArg>,
    /// The description of a namespace given as a string.
    pub(crate) namespace_description: Option<syn::LitStr>,
    /// Path to `llm_tools_core`.
    #[darling(rename = "crate")]
    pub(crate) krate: Option<syn::Path>,
}

impl ToolsetArgs {
    pub(crate) fn parse(tokens: TokenStream, errors: &mut Accumulator) -> Self {
        parse_keys(
            tokens,
            "#[toolset]",
            &["namespace", "namespace_description", "crate"],
            errors,
        )
    }
}
