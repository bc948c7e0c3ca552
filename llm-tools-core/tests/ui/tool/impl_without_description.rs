use llm_tools_core::tool;

pub struct CustomerLookup;

#[tool]
impl CustomerLookup {
    async fn execute(&self, email: String) -> String {
        email
    }
}

fn main() {}
