use llm_tools_core::tool;

/// Gets the time
#[tool]
#[tool(name = "time")]
async fn current_time() -> String {
    "12:00".into()
}

fn main() {}
