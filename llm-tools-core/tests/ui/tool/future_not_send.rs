use std::rc::Rc;

use llm_tools_core::tool;

async fn tick() {}

/// Counts
#[tool]
async fn count() -> u8 {
    let shared = Rc::new(1);
    tick().await;
    *shared
}

fn main() {}
