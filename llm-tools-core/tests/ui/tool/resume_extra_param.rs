use llm_tools_core::{tool, Task};

pub struct Render;

#[tool]
impl Render {
    /// Renders a scene
    async fn execute(&self, scene: String) -> Task {
        Task::working(scene)
    }

    async fn resume(&self, task: Task, scene: String, quality: u8) -> String {
        format!("{scene} {quality} {}", task.status_message().unwrap_or(""))
    }
}

fn main() {}
