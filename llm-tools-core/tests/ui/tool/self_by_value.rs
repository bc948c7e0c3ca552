use llm_tools_core::tool;

pub struct CustomerLookup;

#[tool]
impl CustomerLookup {
    /// Finds a customer
    async fn execute(self, email: String) -> String {
        email
    }
}

fn main() {}
