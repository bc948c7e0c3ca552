use llm_tools_core::{tool, Task};
use serde::Deserialize;

#[derive(Deserialize, schemars::JsonSchema)]
pub struct Job {
    pub scene: String,
}

pub struct Render;

#[tool(args)]
impl Render {
    /// Renders a scene
    async fn execute(&self, job: Job) -> Task {
        Task::working(job.scene)
    }

    async fn resume(&self, _task: Task, job: Job, again: Job) -> String {
        format!("{} {}", job.scene, again.scene)
    }
}

fn main() {}
