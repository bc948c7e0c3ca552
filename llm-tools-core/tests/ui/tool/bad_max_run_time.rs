use llm_tools_core::tool;

/// Renders
#[tool(max_run_time = "10 minutes")]
async fn render() -> String {
    String::new()
}

fn main() {}
