use llm_tools_core::tool;

pub struct Cache<T>(T);

#[tool]
impl<T: Send + Sync + 'static> Cache<T> {
    /// Reads the cache
    async fn execute(&self) -> String {
        String::new()
    }
}

fn main() {}
