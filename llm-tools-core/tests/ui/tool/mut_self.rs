use llm_tools_core::tool;

pub struct Counter(u64);

#[tool]
impl Counter {
    /// Counts
    async fn execute(&mut self) -> u64 {
        self.0 += 1;
        self.0
    }
}

fn main() {}
