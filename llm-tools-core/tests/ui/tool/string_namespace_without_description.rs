use llm_tools_core::tool;

/// Searches the knowledge base
#[tool(namespace = "kb")]
async fn search(query: String) -> String {
    query
}

/// Describes a namespace it does not have
#[tool(namespace_description = "The knowledge base")]
async fn lookup(query: String) -> String {
    query
}

fn main() {}
