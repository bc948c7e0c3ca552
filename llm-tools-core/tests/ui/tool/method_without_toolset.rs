use llm_tools_core::tool;

pub struct Crm;

impl Crm {
    /// Finds a customer
    #[tool]
    async fn lookup(&self, email: String) -> String {
        email
    }
}

fn main() {}
