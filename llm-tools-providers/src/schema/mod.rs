//! Tool parameter schemas in each provider's dialect, and the portability check.
//!
//! Every tool has one neutral JSON Schema ([`ToolSpec::parameters`]); each dialect turns it
//! into what its provider accepts. [`openai::strict`] and [`anthropic::strict`] give the
//! strict-mode schemas (or say why a schema cannot be strict), [`gemini::json_schema`] and
//! [`gemini::parameters`] Gemini's two schema fields, [`ollama::parameters`] the form Ollama
//! keeps, and [`check_portability`] reports, for a set of tools, which schemas a dialect would
//! reject or weaken, so a plain `#[test]` can keep tools portable; [`check_output_portability`]
//! does the same for a chat's structured output.
//!
//! Every conversion counts against one [`SchemaBudget`] (schema objects, nesting depth, bytes,
//! `$ref`s followed) and stops as soon as it is passed, with [`SchemaTooLarge`]: a schema from
//! an MCP server is input like any other, and a few hundred bytes of `$ref`s can stand for
//! billions of objects. A tool past the budget is left out of the request, the chat's other
//! tools still go out.
//!
//! [`ToolSpec::parameters`]: llm_tools_core::ToolSpec::parameters

pub mod anthropic;
pub mod bedrock;
mod budget;
pub mod gemini;
pub mod ollama;
pub mod openai;
mod portability;

pub use budget::{ConversionError, SchemaBudget, SchemaLimit, SchemaTooLarge};
pub use portability::{
    Dialect, Finding, FindingKind, PortabilityReport, check_output_portability, check_portability,
    check_portability_within, check_spec_portability,
};

pub(crate) use budget::{Meter, Remarks, pointer_token, recursive_defs};

use serde_json::{Map, Value};

/// Keywords nobody needs on the wire.
const META: &[&str] = &["$schema", "$id", "$comment"];

/// Keywords whose values are data, not schemas: walkers do not look inside them.
fn is_data_keyword(key: &str) -> bool {
    matches!(key, "enum" | "const" | "default" | "example" | "examples")
}

/// The neutral schema without some root keywords (the meta keywords, say), once it is within
/// the budget: what the dialects that send a schema as it is send.
fn without_root_keywords(
    neutral: &Value,
    keywords: &[&str],
    budget: &SchemaBudget,
) -> Result<Value, SchemaTooLarge> {
    budget.check(neutral)?;
    let mut schema = neutral.clone();
    if let Value::Object(root) = &mut schema {
        for k in keywords {
            root.remove(*k);
        }
    }
    Ok(schema)
}

/// Why every provider rejects a schema whose root is not an object schema.
fn root_not_object(neutral: &Value) -> Option<SchemaNote> {
    (neutral.get("type").and_then(Value::as_str) != Some("object")).then(|| {
        SchemaNote::new(
            "",
            "the root must be an object schema (`\"type\": \"object\"`)",
        )
    })
}

/// What a dialect without exclusive unions says about `oneOf`.
const ONE_OF_AS_ANY_OF: &str = "`oneOf` is sent as `anyOf` (exclusivity is not enforced)";

/// The schema's type names (`"type": "string"` or `"type": ["string", "null"]`).
fn type_names(obj: &Map<String, Value>) -> Vec<&str> {
    match obj.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// The root's definitions (`$defs`, or the older `definitions`).
fn definitions(neutral: &Value) -> Map<String, Value> {
    neutral
        .get("$defs")
        .or_else(|| neutral.get("definitions"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// The name a local `$ref` points to (`#/$defs/Name` or `#/definitions/Name`).
pub(crate) fn local_ref(reference: &str) -> Option<&str> {
    reference
        .strip_prefix("#/$defs/")
        .or_else(|| reference.strip_prefix("#/definitions/"))
}

/// Adds a referenced schema's keywords under a schema's own (the schema's own win).
pub(crate) fn merge_under(obj: &mut Map<String, Value>, target: Map<String, Value>) {
    for (k, v) in target {
        obj.entry(k).or_insert(v);
    }
}

/// A schema in a provider's strict dialect, and what the transformation weakened.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct StrictSchema {
    /// The schema to send with `strict: true`.
    pub schema: Value,
    /// What the strict schema no longer enforces (dropped keywords, keywords moved into the
    /// description, `oneOf` sent as `anyOf`).
    pub weakened: Vec<SchemaNote>,
}

/// A remark about one place in a schema: why it cannot be strict, or what a dialect loses.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SchemaNote {
    /// Where, as a JSON pointer into the neutral schema (`/properties/units`); empty for the root.
    pub path: String,
    /// What.
    pub message: String,
}

impl SchemaNote {
    pub(crate) fn new(path: &str, message: impl Into<String>) -> Self {
        Self {
            path: path.to_owned(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for SchemaNote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "at `{}`: {}", self.path, self.message)
        }
    }
}
