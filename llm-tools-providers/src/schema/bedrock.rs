//! Bedrock Converse's dialect: `inputSchema.json` takes JSON Schema, with a root `type:
//! "object"`, and forwards it to the model behind the id. Claude models read it as Anthropic's
//! tools do; the other families (Nova, Llama, Mistral, …) document only a conservative subset
//! (`type`, `properties`, `required`, `items`, `enum`, `description`, and `anyOf` for nullable
//! values), so a keyword beyond it is sent but may be ignored: the portability check reports it
//! as weakened. Tool names must match `^[a-zA-Z0-9_-]{1,64}$`. The schema goes as it is, once
//! it is within the [`SchemaBudget`].

use serde_json::Value;

use super::budget::{SchemaBudget, SchemaTooLarge, pointer_token};
use super::shared::SchemaNote;

/// The keywords every Converse model family documents.
const CONSERVATIVE: &[&str] = &[
    "type",
    "properties",
    "required",
    "items",
    "enum",
    "description",
    "anyOf",
    "additionalProperties",
    "title",
];

/// The schema for `inputSchema.json`: the neutral schema as it is, if it is within the budget
/// (its objects and depth counted with its `$ref`s followed, as the model behind the id reads
/// them).
///
/// ```
/// use llm_tools_providers::schema::{SchemaBudget, bedrock};
/// use serde_json::json;
///
/// let neutral = json!({"type": "object", "properties": {"city": {"type": "string"}}});
/// assert_eq!(bedrock::input_schema(&neutral, &SchemaBudget::default()).unwrap(), neutral);
/// assert!(bedrock::input_schema(&neutral, &SchemaBudget::default().with_max_bytes(10)).is_err());
/// ```
pub fn input_schema(neutral: &Value, budget: &SchemaBudget) -> Result<Value, SchemaTooLarge> {
    budget.check(neutral)?;
    Ok(neutral.clone())
}

/// What Converse refuses: a root that is not an object, a name outside its pattern.
///
/// ```
/// use llm_tools_providers::schema::bedrock;
/// use serde_json::json;
///
/// assert!(bedrock::rejected("weather", &json!({"type": "object", "properties": {}})).is_empty());
/// assert_eq!(bedrock::rejected("get.weather", &json!({"type": "object"})).len(), 1);
/// assert_eq!(bedrock::rejected("w", &json!({"type": "string"}))[0].path, "");
/// ```
pub fn rejected(name: &str, neutral: &Value) -> Vec<SchemaNote> {
    let mut notes = Vec::new();
    if neutral.get("type").and_then(Value::as_str) != Some("object") {
        notes.push(SchemaNote::new(
            "",
            "Converse needs the root of `inputSchema.json` to be `type: \"object\"`",
        ));
    }
    let valid = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !valid {
        notes.push(SchemaNote::new(
            "",
            format!("the tool name `{name}` does not match `^[a-zA-Z0-9_-]{{1,64}}$`"),
        ));
    }
    notes
}

/// The keywords outside the subset every model family documents, each where it is: sent as
/// they are, but a model other than Claude may ignore them.
///
/// ```
/// use llm_tools_providers::schema::bedrock;
/// use serde_json::json;
///
/// let schema = json!({"type": "object", "properties": {
///     "days": {"type": "integer", "minimum": 1},
///     "city": {"type": "string", "description": "The city"}
/// }});
/// let notes = bedrock::weakened(&schema);
/// assert_eq!(notes.len(), 1);
/// assert_eq!(notes[0].path, "/properties/days");
/// ```
pub fn weakened(neutral: &Value) -> Vec<SchemaNote> {
    let mut notes = Vec::new();
    walk(neutral, "", &mut notes, 0);
    notes
}

fn walk(v: &Value, path: &str, notes: &mut Vec<SchemaNote>, depth: usize) {
    let Value::Object(o) = v else { return };
    if depth > 64 {
        return;
    }
    let extra: Vec<&str> = o
        .keys()
        .map(String::as_str)
        .filter(|k| !CONSERVATIVE.contains(k) && !matches!(*k, "$defs" | "definitions" | "$schema"))
        .collect();
    if !extra.is_empty() {
        notes.push(SchemaNote::new(
            path,
            format!(
                "`{}` is forwarded to the model, and models other than Claude may ignore it",
                extra.join("`, `")
            ),
        ));
    }
    if let Some(Value::Object(props)) = o.get("properties") {
        for (name, schema) in props {
            walk(
                schema,
                &format!("{path}/properties/{}", pointer_token(name)),
                notes,
                depth + 1,
            );
        }
    }
    if let Some(items) = o.get("items") {
        walk(items, &format!("{path}/items"), notes, depth + 1);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(variants)) = o.get(key) {
            for (i, variant) in variants.iter().enumerate() {
                walk(variant, &format!("{path}/{key}/{i}"), notes, depth + 1);
            }
        }
    }
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(defs)) = o.get(key) {
            for (name, schema) in defs {
                walk(schema, &format!("{path}/{key}/{name}"), notes, depth + 1);
            }
        }
    }
}
