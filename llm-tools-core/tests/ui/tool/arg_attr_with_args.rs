use llm_tools_core::tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct SearchArgs {
    pub query: String,
}

/// Searches
#[tool(args)]
async fn search(#[arg(description = "The search")] args: SearchArgs) -> String {
    args.query
}

fn main() {}
