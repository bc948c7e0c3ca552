use llm_tools_core::tool;

/// Echoes
#[tool]
async fn echo(value: impl Into<String>) -> String {
    value.into()
}

fn main() {}
