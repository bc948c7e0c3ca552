//! Ollama's native dialect (`/api/chat`): the server decodes a tool's schema into typed
//! structs that keep only `type`, `description`, `enum`, `properties`, `required`, `items` and
//! `anyOf` (with root `$defs`), and drops everything else without a word. So the schema is
//! sent in the form that survives: local `$ref`s inlined (a dropped `$ref` would lose the
//! shape), and the constraints the server drops (`minimum`, `format`, `pattern`, `default`,
//! `const`, …) written into the description, where the model still reads them. Ollama checks
//! nothing: the tool's own decoder validates the arguments. Inlining counts against a
//! [`SchemaBudget`], and stops as soon as what it has written passes it.

use serde_json::{Map, Value};

use super::budget::{Meter, Remarks, SchemaBudget, SchemaTooLarge, pointer_token};
use super::shared::{SchemaNote, local_ref, merge_under};

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

/// The form of a neutral schema that survives Ollama's decoder, or the budget it passes (every
/// `$ref` is inlined, recursive ones up to 16 levels deep).
///
/// ```
/// use llm_tools_providers::schema::{SchemaBudget, ollama};
/// use serde_json::json;
///
/// let neutral = json!({
///     "type": "object",
///     "properties": {"days": {"type": "integer", "minimum": 1, "description": "How long"},
///                    "unit": {"$ref": "#/$defs/Unit"}},
///     "$defs": {"Unit": {"type": "string", "enum": ["c", "f"]}}
/// });
/// let sent = ollama::parameters(&neutral, &SchemaBudget::default()).unwrap();
/// assert_eq!(sent.schema, json!({
///     "type": "object",
///     "properties": {"days": {"type": "integer", "description": "How long\n\n{minimum: 1}"},
///                    "unit": {"type": "string", "enum": ["c", "f"]}}
/// }));
/// assert_eq!(sent.weakened[0].path, "/properties/days");
/// ```
pub fn parameters(neutral: &Value, budget: &SchemaBudget) -> Result<OllamaSchema, SchemaTooLarge> {
    let mut meter = Meter::new(budget);
    meter.copy(neutral)?;
    let defs = neutral
        .get("$defs")
        .or_else(|| neutral.get("definitions"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut ctx = Ctx {
        defs,
        weakened: Remarks::default(),
        meter,
    };
    let schema = ctx.walk(neutral.clone(), "", 1)?;
    budget.check(&schema)?;
    Ok(OllamaSchema {
        schema,
        weakened: ctx.weakened.finish(),
    })
}

/// How deep `$ref`s are inlined (recursive definitions stop here, as an open object).
const MAX_DEPTH: usize = 16;

struct Ctx<'b> {
    defs: Map<String, Value>,
    weakened: Remarks,
    meter: Meter<'b>,
}

impl Ctx<'_> {
    fn weaken(&mut self, path: &str, message: String) {
        self.meter
            .remark(&mut self.weakened, SchemaNote::new(path, message));
    }

    /// The form of `v` Ollama keeps; `depth` counts schema objects from the root (1).
    fn walk(&mut self, v: Value, path: &str, depth: usize) -> Result<Value, SchemaTooLarge> {
        let Value::Object(mut obj) = v else {
            return Ok(v);
        };
        self.meter.node(depth)?;
        if matches!(obj.get("$ref"), Some(Value::String(_)))
            && let Some(Value::String(r)) = obj.remove("$ref")
        {
            match local_ref(&r).and_then(|n| self.defs.get(n)) {
                Some(target @ Value::Object(target_obj)) if depth <= MAX_DEPTH => {
                    self.meter.copy(target)?;
                    merge_under(&mut obj, target_obj.clone());
                }
                _ => self.weaken(
                    path,
                    format!("`$ref: {r}` cannot be inlined (recursive or unknown); the value's shape is not described"),
                ),
            }
        }
        let below = depth.saturating_add(1);
        let mut out = Map::new();
        let mut leftovers = Vec::new();
        for (k, value) in obj {
            match k.as_str() {
                "properties" => {
                    let mut props = Map::new();
                    if let Value::Object(declared) = value {
                        for (name, prop) in declared {
                            let p = format!("{path}/properties/{}", pointer_token(&name));
                            let converted = self.walk(prop, &p, below)?;
                            props.insert(name, converted);
                        }
                    }
                    out.insert(k, Value::Object(props));
                }
                "items" => {
                    let p = format!("{path}/items");
                    let converted = self.walk(value, &p, below)?;
                    out.insert(k, converted);
                }
                "anyOf" | "oneOf" => {
                    // `oneOf` is read as `anyOf`, which Ollama keeps.
                    let variants = match value {
                        Value::Array(variants) => variants,
                        _ => Vec::new(),
                    };
                    let mut walked = Vec::with_capacity(variants.len());
                    for (i, variant) in variants.into_iter().enumerate() {
                        walked.push(self.walk(variant, &format!("{path}/{k}/{i}"), below)?);
                    }
                    out.insert("anyOf".into(), Value::Array(walked));
                }
                "$defs"
                | "definitions"
                | "$schema"
                | "$id"
                | "$comment"
                | "title"
                | "additionalProperties" => {}
                key if KEPT.contains(&key) => {
                    out.insert(k, value);
                }
                _ => leftovers.push(format!("{k}: {value}")),
            }
        }
        if !leftovers.is_empty() {
            for item in &leftovers {
                self.weaken(
                    path,
                    format!("`{item}` is dropped by Ollama; it is kept in the description"),
                );
            }
            let note = format!("{{{}}}", leftovers.join(", "));
            let description = match out.get("description").and_then(Value::as_str) {
                Some(d) if !d.is_empty() => format!("{d}\n\n{note}"),
                _ => note,
            };
            out.insert("description".into(), Value::String(description));
        }
        Ok(Value::Object(out))
    }
}
