use llm_tools_core::tool;

/// Renders
#[tool(name = "render", max_run_time = "1m", name = "draw")]
async fn render() -> String {
    String::new()
}

fn main() {}
