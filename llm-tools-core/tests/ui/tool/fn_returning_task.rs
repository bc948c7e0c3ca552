use llm_tools_core::{tool, Task, ToolError};

/// Starts a long export
#[tool]
async fn export(table: String) -> Result<Task, ToolError> {
    Ok(Task::working(table))
}

fn main() {}
