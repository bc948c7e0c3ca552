use llm_tools_core::{tool, ToolError};

/// Gets the time
#[tool(struct_name = time::Tool)]
async fn current_time() -> String {
    "12:00".into()
}

pub struct Lookup;

/// Looks a customer up
#[tool(struct_name = LookupTool)]
impl Lookup {
    async fn execute(&self, email: String) -> Result<String, ToolError> {
        Ok(email)
    }
}

fn main() {}
