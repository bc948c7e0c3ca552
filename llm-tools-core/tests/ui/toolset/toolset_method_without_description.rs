use llm_tools_core::{toolset, Namespace};

const CRM: Namespace = Namespace::new("crm").description("Customer records");

pub struct Crm;

#[toolset(namespace = CRM)]
impl Crm {
    /// Counts the customers
    #[tool]
    async fn count(&self) -> usize {
        0
    }

    #[tool]
    async fn purge(&self) -> usize {
        0
    }
}

fn main() {}
