use llm_tools_core::tool;

/// Finds a customer
#[tool(namespace = 3)]
async fn lookup(email: String) -> String {
    email
}

fn main() {}
