use llm_tools_core::tool;

/// Adds
#[tool(args)]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() {}
