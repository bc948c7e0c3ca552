use llm_tools_core::tool;

pub struct Raw(String);

/// Echoes
#[tool(schema = llm_tools_core::serde_json::json!({"type": "object"}))]
async fn echo(args: Raw) -> String {
    args.0
}

fn main() {}
