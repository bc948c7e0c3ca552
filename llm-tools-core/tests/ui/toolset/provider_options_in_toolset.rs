use llm_tools_core::toolset;

pub struct Crm;

#[toolset]
impl Crm {
    /// Finds a customer
    #[tool(provider_options(anthropic = { "name": "other" }))]
    async fn lookup(&self, email: String) -> String {
        email
    }

    /// Finds an order
    #[tool(provider_options(ollama = { "think": true }))]
    async fn order(&self, id: u64) -> String {
        id.to_string()
    }
}

fn main() {
    // The set's items exist despite the errors: no follow-up error here.
    let _ = Crm::tools(std::sync::Arc::new(Crm));
}
