use llm_tools_core::{tool, Namespace};

const CRM: Namespace = Namespace::new("crm");

/// Looks up a customer
#[tool(namespace = CRM, namespace_description = "Customer records")]
async fn lookup(email: String) -> String {
    email
}

fn main() {}
