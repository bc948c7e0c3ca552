use llm_tools_core::tool;

/// Echoes
#[tool(schema = r#"{"type": "object"}"#)]
async fn echo(value: llm_tools_core::serde_json::Value) -> String {
    value.to_string()
}

fn main() {}
