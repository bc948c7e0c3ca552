//! Phase 1 of `#[toolset]`: its attribute arguments.

use darling::ast::NestedMeta;
use darling::{FromMeta, Result};
use proc_macro2::TokenStream;

use crate::tool::args::NamespaceArg;

/// `#[toolset(…)]`.
#[derive(Default, FromMeta)]
pub(crate) struct ToolsetArgs {
    /// The namespace every tool of the set inherits.
    pub(crate) namespace: Option<NamespaceArg>,
    /// Path to `llm_tools_core`.
    #[darling(rename = "crate")]
    pub(crate) krate: Option<syn::Path>,
}

impl ToolsetArgs {
    pub(crate) fn parse(tokens: TokenStream) -> Result<Self> {
        let items = NestedMeta::parse_meta_list(tokens)?;
        Self::from_list(&items)
    }
}
