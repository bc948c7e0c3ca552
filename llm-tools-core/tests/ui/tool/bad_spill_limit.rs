use llm_tools_core::tool;

/// Dumps the logs
#[tool(spill_to_file = 0)]
async fn logs() -> String {
    String::new()
}

fn main() {}
