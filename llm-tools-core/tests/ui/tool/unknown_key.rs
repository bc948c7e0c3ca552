use llm_tools_core::tool;

/// Renders
#[tool(descripton = "Renders a scene")]
async fn render() -> String {
    String::new()
}

fn main() {
    let _ = Render;
}
