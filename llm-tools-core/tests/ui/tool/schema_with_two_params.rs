use llm_tools_core::tool;
use serde_json::Value;

/// Sends a form
#[tool(schema = serde_json::json!({"type": "object", "properties": {"name": {"type": "string"}}}))]
async fn send(form: Value, extra: Value) -> String {
    format!("{form} {extra}")
}

fn main() {}
