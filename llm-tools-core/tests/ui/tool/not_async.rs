use llm_tools_core::tool;

/// Returns the time
#[tool]
fn current_time() -> String {
    "12:00".into()
}

fn main() {
    let _ = CurrentTime;
}
