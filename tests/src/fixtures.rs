//! The recorded traffic of `tests/fixtures/recorded` and the tools it was recorded with.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use llm_tools_core::{Attachment, Tool, ToolError, tool};
use llm_tools_providers::record::Recording;
use serde_json::Value;

/// Gets current weather for a location
///
/// # Arguments
/// * `latitude` - Latitude (e.g., 52.5200)
/// * `longitude` - Longitude (e.g., 13.4050)
#[tool]
pub async fn weather(latitude: String, longitude: String) -> String {
    format!("Current weather at {latitude}, {longitude}: 15°C, Wind: 10 km/h")
}

/// Gets the best language to learn
#[tool]
pub async fn best_language_to_learn() -> &'static str {
    "Ruby"
}

/// A die that rolls 1, 2, 3, … in order, as the recording's die did: each conversation gets
/// its own.
#[derive(Default)]
pub struct DiceRollTool {
    rolls: AtomicU32,
}

#[tool]
impl DiceRollTool {
    /// Rolls a single six-sided die and returns the result
    async fn execute(&self) -> Value {
        let roll = self.rolls.fetch_add(1, Ordering::SeqCst) + 1;
        serde_json::json!({ "roll": roll })
    }
}

/// Gets current weather
#[tool]
pub async fn broken() -> Result<String, ToolError> {
    Err(ToolError::fatal("This tool is broken"))
}

/// Fetches the requested file
#[tool]
pub async fn file_fetch() -> (String, Vec<Attachment>) {
    (
        "Fetched the file.".into(),
        vec![
            Attachment::bytes("text/plain", b"Ruby is the best.".to_vec())
                .with_filename("ruby.txt"),
        ],
    )
}

/// A task's status: `pending` or `done`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum Status {
    Pending,
    Done,
}

/// Uses params DSL any_of support
///
/// # Arguments
/// * `task` - Task description
/// * `status` - Optional task status
#[tool]
pub async fn any_of_params(task: String, status: Option<Status>) -> String {
    let status = match status {
        Some(Status::Pending) => "pending",
        Some(Status::Done) => "done",
        None => "none",
    };
    format!("Task \"{task}\" status {status}")
}

/// Uses params DSL array support
///
/// # Arguments
/// * `tags` - List of tags to combine
#[tool]
pub async fn array_params(tags: Vec<String>) -> String {
    tags.join(", ")
}

/// Returns a processed string result
///
/// # Arguments
/// * `query` - Query to process
#[tool]
pub async fn content_returning(query: String) -> String {
    format!("Processed: {query}")
}

/// A time window.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Window {
    /// ISO start
    pub start: String,
    /// ISO end
    pub end: String,
}

/// Uses params DSL object support
///
/// # Arguments
/// * `window` - Time window to schedule
#[tool]
pub async fn object_params(window: Window) -> String {
    format!("Scheduled from {} to {}", window.start, window.end)
}

/// Every tool of the recordings.
pub fn all_tools() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(Weather),
        Arc::new(BestLanguageToLearn),
        Arc::new(DiceRollTool::default()),
        Arc::new(Broken),
        Arc::new(FileFetch),
        Arc::new(AnyOfParams),
        Arc::new(ArrayParams),
        Arc::new(ContentReturning),
        Arc::new(ObjectParams),
    ]
}

/// The tools with these names, in this order (a name no tool has is left out).
pub fn tools_named(names: &[String]) -> Vec<Arc<dyn Tool>> {
    let all = all_tools();
    names
        .iter()
        .filter_map(|n| all.iter().find(|t| t.spec().joined_name() == n).cloned())
        .collect()
}

/// The folder of recordings for one protocol (`openai-chat`, …), in `tests/fixtures/recorded`.
pub fn recorded_dir(protocol: &str) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/recorded")
        .join(protocol);
    dir.is_dir().then_some(dir)
}

/// Every recording file of one protocol, sorted by name.
pub fn recordings(protocol: &str) -> Vec<PathBuf> {
    let Some(dir) = recorded_dir(protocol) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
}

/// The text of a recorded answer (a JSON body or an SSE stream, either protocol), read without
/// the providers crate, to check what a provider made of it.
pub fn recorded_answer_text(recording: &Recording, index: usize) -> String {
    let Some(interaction) = recording.interactions.get(index) else {
        return String::new();
    };
    let body = interaction.response.body.trim();
    let mut text = String::new();
    if body.starts_with('{') {
        if let Ok(v) = serde_json::from_str::<Value>(body) {
            collect_text(&v, &mut text);
        }
        return text;
    }
    let mut done_text: Option<String> = None;
    for line in body.lines() {
        let Some(data) = line.strip_prefix("data:") else {
            continue;
        };
        let Ok(v) = serde_json::from_str::<Value>(data.trim()) else {
            continue;
        };
        match v.get("type").and_then(Value::as_str) {
            Some("response.output_text.delta") => {
                text.push_str(v["delta"].as_str().unwrap_or_default());
            }
            Some("response.output_text.done") => {
                let mut t = done_text.take().unwrap_or_default();
                t.push_str(v["text"].as_str().unwrap_or_default());
                done_text = Some(t);
            }
            Some(_) => {}
            None => {
                for choice in v["choices"].as_array().into_iter().flatten() {
                    if let Some(t) = choice["delta"]["content"].as_str() {
                        text.push_str(t);
                    }
                }
            }
        }
    }
    done_text.unwrap_or(text)
}

/// The tool calls (joined name, parsed arguments) of a recorded answer that is not streamed.
pub fn recorded_tool_calls(recording: &Recording, index: usize) -> Vec<(String, Value)> {
    let Some(interaction) = recording.interactions.get(index) else {
        return Vec::new();
    };
    let Ok(v) = serde_json::from_str::<Value>(interaction.response.body.trim()) else {
        return Vec::new();
    };
    let parse = |a: &Value| match a {
        Value::String(s) => serde_json::from_str(s).unwrap_or(Value::Null),
        other => other.clone(),
    };
    let mut out = Vec::new();
    if let Some(choices) = v.get("choices").and_then(Value::as_array) {
        for c in choices
            .first()
            .and_then(|c| c["message"]["tool_calls"].as_array())
            .into_iter()
            .flatten()
        {
            let name = c["function"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            out.push((name, parse(&c["function"]["arguments"])));
        }
    }
    for item in v
        .get("output")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if item["type"] == "function_call" {
            let name = item["name"].as_str().unwrap_or_default();
            let name = match item.get("namespace").and_then(Value::as_str) {
                Some(ns) => format!("{ns}_{name}"),
                None => name.to_owned(),
            };
            out.push((name, parse(&item["arguments"])));
        }
    }
    out
}

fn collect_text(v: &Value, out: &mut String) {
    if let Some(choices) = v.get("choices").and_then(Value::as_array) {
        if let Some(t) = choices
            .first()
            .and_then(|c| c["message"]["content"].as_str())
        {
            out.push_str(t);
        }
        return;
    }
    for item in v
        .get("output")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if item["type"] == "message" {
            for part in item["content"].as_array().into_iter().flatten() {
                if part["type"] == "output_text" {
                    out.push_str(part["text"].as_str().unwrap_or_default());
                }
            }
        }
    }
}
