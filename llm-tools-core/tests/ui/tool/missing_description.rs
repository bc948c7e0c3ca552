use llm_tools_core::tool;

#[tool]
async fn lookup(email: String) -> String {
    email
}

// An explicit description, even empty, is the author's choice.
#[tool(description = "")]
async fn ping() -> String {
    "pong".into()
}

fn main() {}
