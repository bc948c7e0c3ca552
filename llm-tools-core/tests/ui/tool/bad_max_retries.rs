use llm_tools_core::tool;

/// Looks an order up
#[tool(max_retries = 0)]
async fn find_order(id: u64) -> String {
    id.to_string()
}

/// Looks a customer up
#[tool(max_retries = "3")]
async fn find_customer(id: u64) -> String {
    id.to_string()
}

fn main() {}
