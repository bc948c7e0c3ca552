use llm_tools_core::toolset;

pub struct Crm;

#[toolset]
impl Crm {
    /// Finds a customer
    #[tool]
    async fn lookup(&self, email: String) -> String {
        email
    }

    /// Finds an order
    #[tool(name = "lookup")]
    async fn order_lookup(&self, id: u64) -> String {
        id.to_string()
    }
}

fn main() {
    // The set's items exist despite the error: no follow-up error here.
    let _ = Crm::tools(std::sync::Arc::new(Crm));
    let _ = CrmLookup::NAME;
}
