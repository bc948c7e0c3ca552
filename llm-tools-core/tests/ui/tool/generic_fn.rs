use llm_tools_core::tool;

/// Echoes
#[tool]
async fn echo<T: ToString>(value: String) -> String {
    value
}

fn main() {}
