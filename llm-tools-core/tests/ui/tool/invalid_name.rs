use llm_tools_core::tool;

/// Gets the weather
#[tool(name = "get weather")]
async fn weather() -> String {
    "sunny".into()
}

fn main() {
    let _ = Weather::NAME;
}
