use llm_tools_core::{tool, Namespace};

pub const RECORDS: Namespace =
    Namespace::new("customer_relationship_management_records_and_orders");

/// Finds a customer
#[tool(namespace = RECORDS)]
async fn customer_lookup(email: String) -> String {
    email
}

fn main() {}
