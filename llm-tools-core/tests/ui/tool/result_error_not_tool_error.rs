use llm_tools_core::tool;

/// Reads a note
#[tool]
async fn read_note(name: String) -> Result<String, String> {
    Err(format!("no note {name}"))
}

fn main() {}
