use llm_tools_core::{tool, Task};

pub struct Render;

#[tool]
impl Render {
    /// Renders frames
    async fn execute(&self, frames: u32) -> Task {
        Task::working(frames.to_string())
    }

    async fn resume(&self, _task: Task, frames: u64) -> String {
        frames.to_string()
    }
}

fn main() {}
