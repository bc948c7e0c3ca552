//! `crate = path` for code that reaches `llm_tools_core` under another name.

mod facade {
    pub use ::llm_tools_core::*;
}

use llm_tools_core::{Tool, tool};

/// Echoes
#[tool(crate = crate::facade)]
async fn echo(text: String) -> String {
    text
}

/// Shared state.
pub struct State;

#[llm_tools_core::toolset(crate = crate::facade)]
impl State {
    /// Reads
    #[tool]
    async fn read(&self) -> u8 {
        1
    }
}

fn main() {
    assert_eq!(Echo.spec().name(), "echo");
    assert_eq!(StateRead::NAME, "read");
}
