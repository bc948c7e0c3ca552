use llm_tools_core::tool;

/// Moves
#[tool(args)]
async fn move_to(point: (f64, f64)) -> String {
    format!("{point:?}")
}

/// Maybe greets
#[tool(args)]
async fn greet(name: Option<String>) -> String {
    name.unwrap_or_default()
}

fn main() {}
