//! `#[tool]` argument decoding fed arbitrary text as the model's arguments: a tool with string,
//! float, integer, `Option`, nested struct, enum and `Vec` parameters. No panic; arguments that
//! decode are the ones serde decodes alone, and any that do not are a recoverable error whose
//! message names what was wrong.
#![no_main]

use libfuzzer_sys::fuzz_target;
use llm_tools_core::{RawArgs, Tool, ToolContext, ToolOutcome, tool};
use serde::Deserialize;

/// A point on the map.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct Place {
    /// Latitude.
    pub lat: f64,
    /// Longitude.
    pub lon: f64,
    /// Alternative names.
    pub aliases: Vec<String>,
}

/// How far to look.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Range {
    /// Only here.
    Here,
    /// Up to a number of kilometres.
    Within {
        /// Kilometres.
        km: u32,
    },
}

/// Finds things near a place
#[tool]
async fn find(
    query: String,
    radius: f64,
    limit: u8,
    offset: Option<i64>,
    place: Place,
    range: Range,
    tags: Vec<String>,
) -> String {
    format!("{query} {radius} {limit} {offset:?} {place:?} {range:?} {tags:?}")
}

fuzz_target!(|input: &[u8]| {
    let Ok(text) = std::str::from_utf8(input) else {
        return;
    };
    let outcome = futures::executor::block_on(Find.call(RawArgs::new(text), ToolContext::detached("c")));
    match outcome {
        ToolOutcome::Output(output) => assert!(output.attachments().is_empty()),
        ToolOutcome::Error(error) => {
            assert!(error.is_recoverable(), "a decoding error must be recoverable: {error}");
            assert!(!error.to_string().is_empty());
        }
        other => panic!("a text tool ended as {other:?}"),
    }
});
