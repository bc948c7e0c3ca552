use llm_tools_core::tool;

#[derive(serde::Deserialize)]
pub struct SearchArgs {
    pub query: String,
    pub limit: Option<u32>,
}

/// Searches the docs
#[tool(args)]
async fn search(args: SearchArgs) -> String {
    format!("{} {:?}", args.query, args.limit)
}

fn main() {}
