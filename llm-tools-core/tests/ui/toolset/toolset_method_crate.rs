use llm_tools_core::toolset;

pub struct Crm;

#[toolset]
impl Crm {
    /// Finds a customer
    #[tool(crate = ::llm_tools_core)]
    async fn lookup(&self, email: String) -> String {
        email
    }
}

fn main() {}
