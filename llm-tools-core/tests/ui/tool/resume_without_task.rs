use llm_tools_core::{tool, Task};

pub struct Render;

#[tool]
impl Render {
    /// Renders
    async fn execute(&self, scene: String) -> Task {
        Task::working(scene)
    }

    async fn resume(&self) -> String {
        String::new()
    }
}

fn main() {}
