use llm_tools_core::{tool, ToolContext};

/// Looks something up
#[tool]
async fn lookup(ctx: &ToolContext, query: String, again: &ToolContext) -> String {
    format!("{} {query} {}", ctx.call_id(), again.call_id())
}

fn main() {}
