use llm_tools_core::tool;

/// Pages through results
#[tool]
async fn page(#[arg(default = "first")] page: u32) -> u32 {
    page
}

fn main() {}
