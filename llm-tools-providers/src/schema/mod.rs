//! Tool parameter schemas in each provider's dialect, and the portability check.
//!
//! Every tool has one neutral JSON Schema ([`ToolSpec::parameters`]); each dialect turns it
//! into what its provider accepts. [`openai::strict`] and [`anthropic::strict`] give the
//! strict-mode schemas (or say why a schema cannot be strict), [`gemini::json_schema`] and
//! [`gemini::parameters`] Gemini's two schema fields, and [`check_portability`] reports, for a
//! set of tools, which schemas a dialect would reject or weaken, so a plain `#[test]` can keep
//! tools portable; [`check_output_portability`] does the same for a chat's structured output.
//!
//! [`ToolSpec::parameters`]: llm_tools_core::ToolSpec::parameters

pub mod anthropic;
pub mod bedrock;
pub mod gemini;
pub mod ollama;
pub mod openai;
mod portability;

pub use portability::{
    Dialect, Finding, FindingKind, PortabilityReport, check_output_portability, check_portability,
    check_spec_portability,
};

use serde_json::{Map, Value};

/// Keywords nobody needs on the wire.
const META: &[&str] = &["$schema", "$id", "$comment"];

/// Keywords whose values are data, not schemas: walkers do not look inside them.
fn is_data_keyword(key: &str) -> bool {
    matches!(key, "enum" | "const" | "default" | "example" | "examples")
}

/// A key as one JSON-pointer token (`~` and `/` escaped).
pub(crate) fn pointer_token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The neutral schema without some root keywords (the meta keywords, say).
fn without_root_keywords(neutral: &Value, keywords: &[&str]) -> Value {
    let mut schema = neutral.clone();
    if let Value::Object(root) = &mut schema {
        for k in keywords {
            root.remove(*k);
        }
    }
    schema
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

/// The definitions that reach themselves through `$ref`s.
fn recursive_defs(defs: &Map<String, Value>) -> Vec<String> {
    fn refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(o) => {
                if let Some(name) = o.get("$ref").and_then(Value::as_str).and_then(local_ref) {
                    out.push(name.to_owned());
                }
                o.values().for_each(|c| refs(c, out));
            }
            Value::Array(items) => items.iter().for_each(|c| refs(c, out)),
            _ => {}
        }
    }
    let mut recursive = Vec::new();
    for start in defs.keys() {
        let mut seen: Vec<String> = Vec::new();
        let mut stack: Vec<String> = Vec::new();
        if let Some(d) = defs.get(start) {
            refs(d, &mut stack);
        }
        while let Some(name) = stack.pop() {
            if name == *start {
                recursive.push(start.clone());
                break;
            }
            if seen.contains(&name) {
                continue;
            }
            if let Some(d) = defs.get(&name) {
                refs(d, &mut stack);
            }
            seen.push(name);
        }
    }
    recursive
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
