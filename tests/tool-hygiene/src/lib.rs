//! Tools declared the way a user crate does, with `llm-tools-core` as the only dependency: no
//! `serde`, no `schemars` in this crate's `Cargo.toml`, and lints that reject any warning,
//! undocumented public item or `unwrap` in the generated code. Building this crate is the test;
//! the unit tests below check the tools work.
#![deny(
    warnings,
    missing_docs,
    unused_qualifications,
    unused_results,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::all,
    clippy::pedantic
)]

use std::sync::Mutex;

use llm_tools_core::serde_json::{Value, json};
use llm_tools_core::{Namespace, Task, ToolContext, ToolError, tool, toolset};

/// Customer records.
pub const CRM: Namespace = Namespace::new("crm").description("Customer records");

/// Gets current weather for a location
///
/// # Arguments
/// * `latitude` - Latitude in decimal degrees
/// * `longitude` - Longitude in decimal degrees
/// * `units` - `metric` or `imperial`
///
/// # Errors
///
/// A recoverable error for a latitude out of range.
#[tool(max_run_time = "30s")]
pub async fn weather(
    latitude: f64,
    longitude: f64,
    units: Option<String>,
    #[arg(default = 3)] days: u8,
) -> Result<String, ToolError> {
    if !(-90.0..=90.0).contains(&latitude) {
        return Err(ToolError::recoverable("latitude must be within -90..=90"));
    }
    Ok(format!("{latitude},{longitude} {units:?} {days}"))
}

/// Counts words
#[tool(namespace = CRM, needs_approval, sequential)]
pub async fn word_count(text: String, #[arg(default)] stop_words: Vec<String>) -> usize {
    text.split_whitespace()
        .filter(|w| !stop_words.iter().any(|s| s == w))
        .count()
}

/// Echoes its raw arguments
#[tool(schema = json!({"type": "object", "properties": {"text": {"type": "string"}}}))]
pub async fn echo(arguments: Value, ctx: &ToolContext) -> String {
    format!("{arguments} {}", ctx.call_id())
}

/// Renders a video, pausing the call until the render is done.
pub struct RenderTool {
    done: Mutex<Vec<String>>,
}

impl RenderTool {
    /// A renderer with nothing rendered yet.
    #[must_use]
    pub fn new() -> Self {
        Self {
            done: Mutex::new(Vec::new()),
        }
    }
}

impl Default for RenderTool {
    fn default() -> Self {
        Self::new()
    }
}

#[tool(
    namespace = "media",
    namespace_description = "Media files",
    spill_to_file = false
)]
impl RenderTool {
    /// Renders a scene
    async fn execute(&self, scene: String) -> Task {
        Task::working(format!("rendering {scene}"))
    }

    async fn resume(&self, task: Task, scene: String) -> Result<Task, ToolError> {
        let done = self
            .done
            .lock()
            .map_err(|_| ToolError::recoverable("the renderer failed"))?;
        if done.contains(&scene) {
            Err(ToolError::recoverable(format!("{scene} is ready")))
        } else {
            Ok(task)
        }
    }
}

/// Shared notes.
#[derive(Default)]
pub struct Notes {
    notes: Mutex<Vec<String>>,
}

#[toolset(namespace = CRM)]
impl Notes {
    /// Adds a note
    ///
    /// # Errors
    ///
    /// A recoverable error when the notes are unavailable.
    #[tool]
    pub async fn add_note(&self, text: String) -> Result<usize, ToolError> {
        let mut notes = self
            .notes
            .lock()
            .map_err(|_| ToolError::recoverable("notes are unavailable"))?;
        notes.push(text);
        Ok(notes.len())
    }

    /// Lists the notes
    #[tool(namespace = none)]
    pub async fn list_notes(&self) -> Vec<String> {
        self.notes.lock().map(|n| n.clone()).unwrap_or_default()
    }
}

/// Where to ship, an argument type of this crate's own, derived through the re-exports.
#[derive(Debug, llm_tools_core::serde::Deserialize, llm_tools_core::schemars::JsonSchema)]
#[serde(crate = "llm_tools_core::serde")]
#[schemars(crate = "llm_tools_core::schemars")]
pub struct Address {
    /// The city.
    pub city: String,
    /// The postcode, if known.
    pub postcode: Option<String>,
}

/// Ships an order
///
/// # Arguments
/// * `order` - The order number
/// * `to` - Where it goes
#[tool]
pub async fn ship(order: u64, to: Address) -> String {
    format!("order {order} goes to {}", to.city)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use llm_tools_core::{IntoTools, RawArgs, Tool, ToolContext, ToolOutcome};

    use super::*;

    fn call(tool: &dyn Tool, args: &str) -> String {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        match rt.block_on(tool.call(RawArgs::new(args), ToolContext::detached("c1"))) {
            ToolOutcome::Output(o) => o.into_text(),
            ToolOutcome::Error(e) => format!("error: {e}"),
            ToolOutcome::Task(t) => format!("task: {}", t.status_message().unwrap_or("")),
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn tools_work_without_serde_in_the_user_crate() {
        assert_eq!(
            call(&Weather, r#"{"latitude":1,"longitude":2}"#),
            "1,2 None 3"
        );
        assert!(call(&Weather, r#"{"latitude":100,"longitude":2}"#).starts_with("error: latitude"));
        assert_eq!(WordCount::JOINED_NAME, "crm_word_count");
        assert_eq!(call(&WordCount, r#"{"text":"a b c"}"#), "3");
        assert_eq!(call(&Echo, r#"{"text":"x"}"#), r#"{"text":"x"} c1"#);
        assert_eq!(RenderTool::JOINED_NAME, "media_render");
        assert_eq!(
            call(&RenderTool::new(), r#"{"scene":"s"}"#),
            "task: rendering s"
        );
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        Notes::default().into_tools(&mut tools);
        assert_eq!(call(&*tools[0], r#"{"text":"n"}"#), "1");
        assert_eq!(call(&*tools[1], "{}"), r#"["n"]"#);
        assert_eq!(tools[1].spec().joined_name(), "list_notes");
    }

    #[test]
    fn argument_types_derive_through_the_re_exports() {
        assert_eq!(
            call(&Ship, r#"{"order":7,"to":{"city":"Lyon"}}"#),
            "order 7 goes to Lyon"
        );
        let to = &Ship::tool_spec().parameters()["properties"]["to"];
        assert_eq!(to["properties"]["city"]["description"], "The city.");
    }
}
