use llm_tools_core::tool;

/// Echoes
#[tool(args, schema = llm_tools_core::serde_json::json!({"type": "object"}))]
async fn echo(value: llm_tools_core::serde_json::Value) -> String {
    value.to_string()
}

fn main() {}
