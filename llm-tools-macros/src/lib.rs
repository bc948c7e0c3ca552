//! Procedural macros of `llm-tools`. Use them through `llm_tools_core::{tool, toolset}`.

use proc_macro::TokenStream;

/// Turns an `async fn` or an `impl` block with `execute` into a tool.
#[proc_macro_attribute]
pub fn tool(_args: TokenStream, item: TokenStream) -> TokenStream {
    item
}

/// Declares several tools sharing `&self` state in one `impl` block.
#[proc_macro_attribute]
pub fn toolset(_args: TokenStream, item: TokenStream) -> TokenStream {
    item
}
