//! `#[tool(args)]` and `#[tool(schema = …)]`.

use llm_tools_core::serde_json::{json, Value};
use llm_tools_core::{tool, Tool, ToolContext};

/// Search arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct SearchArgs {
    /// What to look for
    pub query: String,
    /// At most this many hits
    pub limit: Option<u32>,
}

/// Searches the docs
#[tool(args)]
async fn search(args: SearchArgs, _ctx: &ToolContext) -> String {
    format!("{} {:?}", args.query, args.limit)
}

fn echo_schema() -> Value {
    json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
}

/// Echoes
#[tool(schema = echo_schema())]
async fn echo(args: Value) -> String {
    args["text"].to_string()
}

/// Takes nothing but declares a schema
#[tool(schema = json!({"type": "object", "properties": {}}))]
async fn nothing() {}

fn main() {
    assert_eq!(Search.spec().parameters()["required"], json!(["query"]));
    assert_eq!(Echo.spec().parameters(), &echo_schema());
    let _ = Nothing.spec();
}
