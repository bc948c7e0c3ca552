use llm_tools_core::tool;

/// Greets
#[tool]
async fn greet(name: &str) -> String {
    format!("hello {name}")
}

fn main() {}
