use llm_tools_core::tool;

/// Finds a customer
#[tool(namespace = "crm.v2")]
async fn lookup(email: String) -> String {
    email
}

fn main() {}
