//! Schemas that multiply when their `$ref`s are followed (forty definitions that each name the
//! one before twice) go through every dialect's conversion and the core's normalization in
//! bounded time: a schema from an MCP server is input like any other.
#![cfg(all(
    feature = "openai",
    feature = "anthropic",
    feature = "gemini",
    feature = "bedrock",
    feature = "ollama"
))]
#![allow(clippy::unwrap_used)]

use llm_tools_providers::schema::{anthropic, bedrock, gemini, ollama, openai};
use serde_json::{Map, Value, json};

fn bomb() -> Value {
    let mut defs = Map::new();
    defs.insert("D0".into(), json!({"type": "string"}));
    for i in 1..=40 {
        let prev = format!("#/$defs/D{}", i - 1);
        defs.insert(
            format!("D{i}"),
            json!({"type": "object", "properties": {"a": {"$ref": prev}, "b": {"$ref": prev, "description": "again"}},
                   "required": ["a", "b"], "additionalProperties": false}),
        );
    }
    json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/D40"}}, "required": ["x"],
           "additionalProperties": false, "$defs": defs})
}

#[test]
fn every_dialect_converts_a_multiplying_schema_in_bounded_time() {
    let schema = llm_tools_core::normalize_schema(bomb());
    let _ = openai::strict(&schema);
    let _ = openai::non_strict(&schema);
    let _ = openai::rejected(&schema);
    let _ = anthropic::strict(&schema);
    let _ = anthropic::input_schema(&schema);
    let _ = anthropic::rejected(&schema);
    let _ = gemini::json_schema(&schema);
    let notes = gemini::parameters(&schema).unwrap_err();
    assert!(
        notes.iter().any(|n| n.message.contains("inlined")),
        "{notes:?}"
    );
    let _ = bedrock::rejected("t", &schema);
    let _ = bedrock::weakened(&schema);
    let _ = ollama::parameters(&schema);
}
