//! What every dialect's conversion shares: the keywords they drop or leave alone, the walks
//! over the neutral schema (its definitions, local `$ref`s, type names), and what a conversion
//! reports ([`SchemaNote`], [`StrictSchema`]).

use serde_json::{Map, Value};

/// Keywords nobody needs on the wire.
pub(crate) const META: &[&str] = &["$schema", "$id", "$comment"];

/// Keywords whose values are data, not schemas: walkers do not look inside them.
pub(crate) fn is_data_keyword(key: &str) -> bool {
    matches!(key, "enum" | "const" | "default" | "example" | "examples")
}

/// Why every provider rejects a schema whose root is not an object schema.
pub(crate) fn root_not_object(neutral: &Value) -> Option<SchemaNote> {
    (neutral.get("type").and_then(Value::as_str) != Some("object")).then(|| {
        SchemaNote::new(
            "",
            "the root must be an object schema (`\"type\": \"object\"`)",
        )
    })
}

/// What a dialect without exclusive unions says about `oneOf`.
pub(crate) const ONE_OF_AS_ANY_OF: &str =
    "`oneOf` is sent as `anyOf` (exclusivity is not enforced)";

/// The schema's type names (`"type": "string"` or `"type": ["string", "null"]`).
pub(crate) fn type_names(obj: &Map<String, Value>) -> Vec<&str> {
    match obj.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// The root's definitions (`$defs`, or the older `definitions`).
pub(crate) fn definitions(neutral: &Value) -> Map<String, Value> {
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
