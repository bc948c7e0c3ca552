use llm_tools_core::tool;

fn is_risky(amount: u64) -> bool {
    amount > 100
}

/// Pays
#[tool(needs_approval = is_risky)]
async fn pay(amount: u64) -> String {
    amount.to_string()
}

fn main() {}
