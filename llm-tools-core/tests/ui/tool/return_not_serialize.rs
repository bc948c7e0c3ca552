use std::rc::Rc;

use llm_tools_core::tool;

/// Counts
#[tool]
async fn count() -> Rc<u8> {
    Rc::new(1)
}

fn main() {}
