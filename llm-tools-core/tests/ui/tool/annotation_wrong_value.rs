use llm_tools_core::tool;

/// Reads the weather
#[tool(annotations(read_only = "yes", idempotent))]
async fn weather() -> String {
    String::new()
}

/// Tells the time
#[tool(annotations(readonly))]
async fn time() -> String {
    String::new()
}

fn main() {
    let _ = (Weather, Time);
}
