use llm_tools_core::tool;

/// Not a tool
#[tool]
pub struct Weather;

fn main() {}
