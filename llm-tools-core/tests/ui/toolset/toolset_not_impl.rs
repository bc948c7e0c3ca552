use llm_tools_core::toolset;

/// Not an impl block
#[toolset]
pub struct Crm;

fn main() {}
