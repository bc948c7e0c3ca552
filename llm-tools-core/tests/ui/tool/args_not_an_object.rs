use llm_tools_core::tool;

/// Echoes
#[tool(args)]
async fn echo(text: String) -> String {
    text
}

/// Sums
#[tool(args)]
async fn sum(values: Vec<f64>) -> f64 {
    values.iter().sum()
}

fn main() {}
