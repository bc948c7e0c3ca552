//! The tools the MCP serving tests serve: one of each kind of result (text, a JSON object, an
//! image, progress, a question, a task resumed until done, an error).

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use llm_tools_core::{
    Attachment, Question, Task, ToolContext, ToolError, ToolOutcome, ToolOutput, tool,
};
use serde::Serialize;
use serde_json::json;

/// Adds two integers
#[tool]
pub async fn add(a: i64, b: i64) -> String {
    (a + b).to_string()
}

/// A forecast.
#[derive(Serialize)]
pub struct Report {
    city: String,
    temperature: f64,
}

/// Gets the forecast for a city
#[tool]
pub async fn forecast(city: String) -> Report {
    Report {
        city,
        temperature: 21.5,
    }
}

/// Draws a chart
#[tool]
pub async fn chart() -> ToolOutput {
    ToolOutput::text("a chart")
        .with_attachment(Attachment::bytes("image/png", vec![0x89, b'P', b'N', b'G']))
}

/// Imports rows, reporting progress
#[tool]
pub async fn import(rows: u32, ctx: &ToolContext) -> String {
    for row in 1..=rows {
        ctx.report_progress(f64::from(row), Some(f64::from(rows)), Some("importing"));
    }
    format!("imported {rows} rows")
}

/// Signs the user up after asking their name
#[tool]
pub async fn signup(ctx: &ToolContext) -> Result<String, ToolError> {
    let question =
        Question::new("What is your name?").required_field("name", json!({"type": "string"}));
    let answer = ctx.ask(question).await?;
    Ok(match answer.get_str("name") {
        Some(name) => format!("Welcome, {name}!"),
        None => "Signup cancelled.".to_owned(),
    })
}

/// Always fails
#[tool]
pub async fn broken() -> Result<String, ToolError> {
    Err(ToolError::recoverable("the service is down"))
}

/// Builds something that takes a few checks
pub struct Build {
    checks: AtomicU32,
}

impl Default for Build {
    fn default() -> Self {
        Self {
            checks: AtomicU32::new(0),
        }
    }
}

#[tool]
impl Build {
    /// Starts a build
    ///
    /// # Arguments
    /// * `target` - What to build
    async fn execute(&self, target: String) -> Task {
        Task::working(format!("building {target}")).with_poll_interval(Duration::from_millis(5))
    }

    /// Checks the build: done on the third check.
    async fn resume(&self, task: Task, target: String) -> ToolOutcome {
        if self.checks.fetch_add(1, Ordering::Relaxed) < 2 {
            ToolOutcome::Task(task)
        } else {
            ToolOutcome::Output(ToolOutput::text(format!("built {target}")))
        }
    }
}

/// The server of these tools.
pub fn server() -> Result<llm_tools_mcp::ToolServer, llm_tools_core::Error> {
    let tools = (
        Add,
        Forecast,
        Chart,
        Import,
        Signup,
        Broken,
        Build::default(),
    );
    llm_tools_mcp::ToolServer::new("served")
        .with_instructions("Tools served by llm-tools")
        .with_tools(tools)
}
