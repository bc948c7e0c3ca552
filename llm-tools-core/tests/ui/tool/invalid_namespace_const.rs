use llm_tools_core::{tool, Namespace};

const CRM: Namespace = Namespace::new("crm v2").description("Customer records");

/// Finds a customer
#[tool(namespace = CRM)]
async fn customer_lookup(email: String) -> String {
    email
}

fn main() {}
