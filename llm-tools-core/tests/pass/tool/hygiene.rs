//! Generated code names everything by absolute path: local items that shadow prelude and
//! `llm_tools_core` names change nothing, and strict lints stay quiet.
#![deny(warnings, missing_docs, unused_qualifications, unused_results)]
#![allow(dead_code, non_camel_case_types)]

use llm_tools_core::{tool, toolset, Namespace, ToolContext, ToolError};

// Shadow what generated code could wrongly rely on. (Not `Some`: schemars' derive names it
// bare for the default value of a `#[serde(default)]` field.)
struct Option;
struct None;
struct Result;
struct Ok;
struct Err;
struct Box;
struct Vec;
struct String;
struct Default;
struct Clone;
struct Copy;
struct Debug;
struct Send;
struct Sync;
struct Tool;
struct ToolSpec;
struct RawArgs;
struct ToolOutcome;
struct Arc;
struct OnceLock;
mod serde {}
mod schemars {}
mod llm_tools_core_fake {}

/// The CRM namespace.
pub const CRM: Namespace = Namespace::new("crm");

/// Gets current weather for a location
///
/// # Arguments
/// * `latitude` - Latitude in decimal degrees
#[tool(namespace = CRM, max_run_time = "90s", spill_to_file = 1_000)]
pub async fn weather(
    latitude: f64,
    #[arg(default)] days: u8,
    #[arg(default = 3)] hours: u8,
    units: std::option::Option<std::string::String>,
    ctx: &ToolContext,
) -> std::result::Result<std::string::String, ToolError> {
    std::result::Result::Ok(format!("{latitude} {days} {hours} {units:?} {}", ctx.call_id()))
}

/// Shared state.
pub struct State;

#[toolset(namespace = "state", namespace_description = "The shared state")]
impl State {
    /// Reads the state
    #[tool]
    pub async fn read(&self, key: std::string::String) -> std::string::String {
        key
    }
}

/// A tool type with `execute`.
pub struct LookupTool;

#[tool]
impl LookupTool {
    /// Looks up
    async fn execute(&self, id: u64) -> u64 {
        id
    }
}

fn main() {
    let _ = (Weather::JOINED_NAME, StateRead::NAME, LookupTool::NAME);
}
