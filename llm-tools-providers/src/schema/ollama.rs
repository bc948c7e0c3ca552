//! Ollama's native dialect (`/api/chat`): the server decodes a tool's schema into typed
//! structs that keep only `type`, `description`, `enum`, `properties`, `required`, `items` and
//! `anyOf` (with root `$defs`), and drops everything else without a word. So the schema is
//! sent in the form that survives: local `$ref`s inlined (a dropped `$ref` would lose the
//! shape), and the constraints the server drops (`minimum`, `format`, `pattern`, `default`,
//! `const`, …) written into the description, where the model still reads them. Ollama checks
//! nothing: the tool's own decoder validates the arguments.

use serde_json::{Map, Value};

use super::{SchemaNote, local_ref, merge_under, pointer_token};

/// The keywords Ollama's decoder keeps.
const KEPT: &[&str] = &[
    "type",
    "description",
    "enum",
    "properties",
    "required",
    "items",
    "anyOf",
];

/// A neutral schema as Ollama keeps it, and what was moved into descriptions.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct OllamaSchema {
    /// The schema to send.
    pub schema: Value,
    /// Each keyword moved into a description, where it was.
    pub weakened: Vec<SchemaNote>,
}

/// The form of a neutral schema that survives Ollama's decoder.
///
/// ```
/// use llm_tools_providers::schema::ollama;
/// use serde_json::json;
///
/// let neutral = json!({
///     "type": "object",
///     "properties": {"days": {"type": "integer", "minimum": 1, "description": "How long"},
///                    "unit": {"$ref": "#/$defs/Unit"}},
///     "$defs": {"Unit": {"type": "string", "enum": ["c", "f"]}}
/// });
/// let sent = ollama::parameters(&neutral);
/// assert_eq!(sent.schema, json!({
///     "type": "object",
///     "properties": {"days": {"type": "integer", "description": "How long\n\n{minimum: 1}"},
///                    "unit": {"type": "string", "enum": ["c", "f"]}}
/// }));
/// assert_eq!(sent.weakened[0].path, "/properties/days");
/// ```
pub fn parameters(neutral: &Value) -> OllamaSchema {
    let defs = neutral
        .get("$defs")
        .or_else(|| neutral.get("definitions"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut weakened = Vec::new();
    let schema = walk(neutral, "", &defs, &mut weakened, 0);
    OllamaSchema { schema, weakened }
}

/// How deep `$ref`s are inlined (recursive definitions stop here, as an open object).
const MAX_DEPTH: usize = 16;

fn walk(
    v: &Value,
    path: &str,
    defs: &Map<String, Value>,
    weakened: &mut Vec<SchemaNote>,
    depth: usize,
) -> Value {
    let Value::Object(source) = v else {
        return v.clone();
    };
    let mut obj = source.clone();
    if let Some(Value::String(r)) = obj.get("$ref").cloned() {
        obj.remove("$ref");
        match local_ref(&r).and_then(|n| defs.get(n)) {
            Some(Value::Object(target)) if depth < MAX_DEPTH => merge_under(&mut obj, target.clone()),
            _ => weakened.push(SchemaNote::new(
                path,
                format!("`$ref: {r}` cannot be inlined (recursive or unknown); the value's shape is not described"),
            )),
        }
    }
    let mut out = Map::new();
    let mut leftovers = Vec::new();
    for (k, value) in &obj {
        match k.as_str() {
            "properties" => {
                let mut props = Map::new();
                if let Value::Object(declared) = value {
                    for (name, prop) in declared {
                        let p = format!("{path}/properties/{}", pointer_token(name));
                        props.insert(name.clone(), walk(prop, &p, defs, weakened, depth + 1));
                    }
                }
                out.insert(k.clone(), Value::Object(props));
            }
            "items" => {
                let p = format!("{path}/items");
                out.insert(k.clone(), walk(value, &p, defs, weakened, depth + 1));
            }
            "anyOf" | "oneOf" => {
                // `oneOf` is read as `anyOf`, which Ollama keeps.
                let variants: Vec<Value> = value
                    .as_array()
                    .into_iter()
                    .flatten()
                    .enumerate()
                    .map(|(i, variant)| {
                        walk(
                            variant,
                            &format!("{path}/{k}/{i}"),
                            defs,
                            weakened,
                            depth + 1,
                        )
                    })
                    .collect();
                out.insert("anyOf".into(), Value::Array(variants));
            }
            "$defs"
            | "definitions"
            | "$schema"
            | "$id"
            | "$comment"
            | "title"
            | "additionalProperties" => {}
            key if KEPT.contains(&key) => {
                out.insert(k.clone(), value.clone());
            }
            _ => leftovers.push(format!("{k}: {value}")),
        }
    }
    if !leftovers.is_empty() {
        for item in &leftovers {
            weakened.push(SchemaNote::new(
                path,
                format!("`{item}` is dropped by Ollama; it is kept in the description"),
            ));
        }
        let note = format!("{{{}}}", leftovers.join(", "));
        let description = match out.get("description").and_then(Value::as_str) {
            Some(d) if !d.is_empty() => format!("{d}\n\n{note}"),
            _ => note,
        };
        out.insert("description".into(), Value::String(description));
    }
    Value::Object(out)
}
