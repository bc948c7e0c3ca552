use llm_tools_core::tool;

/// Searches
#[tool]
async fn search(#[arg(descripton = "What to look for")] query: String) -> String {
    query
}

fn main() {}
