use llm_tools_core::tool;

pub struct CustomerLookup;

#[tool]
impl CustomerLookup {
    /// Finds a customer
    async fn run(&self, email: String) -> String {
        email
    }
}

fn main() {}
