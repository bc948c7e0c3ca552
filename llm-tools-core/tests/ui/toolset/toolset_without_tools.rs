use llm_tools_core::toolset;

pub struct Crm;

#[toolset]
impl Crm {
    /// Finds a customer: but not marked `#[tool]`
    async fn lookup(&self, email: String) -> String {
        email
    }
}

fn main() {}
