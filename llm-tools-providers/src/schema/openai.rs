//! OpenAI's schema dialects: strict mode (Structured Outputs) and non-strict.
//!
//! Strict mode needs every object closed (`additionalProperties: false`) with every property in
//! `required`; an optional property becomes nullable instead, and the tool receives `null` for
//! it (`Option<T>` arguments decode `null` as `None`). Only a subset of JSON Schema is allowed:
//! what cannot be expressed makes the schema non-strict, and a few validation keywords OpenAI
//! does not enforce are dropped and reported. Both forms count against a [`SchemaBudget`]:
//! the strict form inlines `$ref`s that carry sibling keywords, and stops as soon as that passes
//! the budget.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::budget::{
    ConversionError, ConversionNotes, Meter, SchemaBudget, SchemaTooLarge, pointer_token,
    without_root_keywords,
};
use super::shared::{
    ONE_OF_AS_ANY_OF, SchemaNote, definitions, is_data_keyword, local_ref, merge_under,
    root_not_object, type_names,
};

pub use super::shared::StrictSchema;

/// String formats strict mode accepts.
const STRICT_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Keywords that make a schema impossible to send strictly.
const BLOCKING: &[&str] = &[
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "patternProperties",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "prefixItems",
];

/// Keywords strict mode does not enforce; they are dropped.
const DROPPED: &[&str] = &[
    "minLength",
    "maxLength",
    "minProperties",
    "maxProperties",
    "uniqueItems",
    "contains",
    "minContains",
    "maxContains",
];

/// Keywords nobody needs on the wire (examples included: strict mode does not take them).
const META: &[&str] = &["$schema", "$id", "$comment", "examples"];

/// The deepest object nesting strict mode accepts.
const MAX_DEPTH: usize = 10;

/// The strict-mode form of a neutral schema, or every reason it cannot be strict, or the
/// budget it passes ([`ConversionError::TooLarge`]: a provider then sends the non-strict form,
/// as for any schema that cannot be strict, if that is within the budget).
///
/// ```
/// use llm_tools_providers::schema::{SchemaBudget, openai};
/// use serde_json::json;
///
/// let budget = SchemaBudget::default();
/// let neutral = json!({
///     "type": "object",
///     "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
///     "required": ["city"]
/// });
/// let strict = openai::strict(&neutral, &budget).unwrap();
/// assert_eq!(strict.schema, json!({
///     "type": "object",
///     "properties": {"city": {"type": "string"}, "days": {"type": ["integer", "null"], "minimum": 1}},
///     "required": ["city", "days"],
///     "additionalProperties": false
/// }));
///
/// let open = json!({"type": "object", "properties": {"tags": {"type": "object", "additionalProperties": {"type": "string"}}}});
/// let blockers = openai::strict(&open, &budget).unwrap_err();
/// assert_eq!(blockers.notes()[0].path, "/properties/tags");
/// ```
pub fn strict(neutral: &Value, budget: &SchemaBudget) -> Result<StrictSchema, ConversionError> {
    let mut meter = Meter::new(budget);
    meter.copy(neutral)?;
    let mut schema = neutral.clone();
    let mut ctx = Ctx {
        defs: definitions(neutral),
        notes: ConversionNotes::new(meter),
    };
    if let Some(note) = root_not_object(neutral) {
        ctx.notes.blocker(note);
    }
    if neutral.get("anyOf").is_some() || neutral.get("oneOf").is_some() {
        ctx.notes.block("", "the root cannot be a union (`anyOf`)");
    }
    ctx.walk(&mut schema, "", 0, 0, 1)?;
    ctx.notes.finish(schema, budget)
}

/// The non-strict form: the neutral schema without meta keywords, if it is within the budget.
pub fn non_strict(neutral: &Value, budget: &SchemaBudget) -> Result<Value, SchemaTooLarge> {
    without_root_keywords(neutral, META, budget)
}

/// What OpenAI rejects even without strict mode: arrays without `items`, a root that is not an
/// object.
pub fn rejected(neutral: &Value) -> Vec<SchemaNote> {
    let mut out: Vec<SchemaNote> = root_not_object(neutral).into_iter().collect();
    find_arrays_without_items(neutral, "", &mut out);
    out
}

fn find_arrays_without_items(v: &Value, path: &str, out: &mut Vec<SchemaNote>) {
    match v {
        Value::Object(map) => {
            let is_array = type_names(map).contains(&"array");
            if is_array && !map.contains_key("items") && !map.contains_key("prefixItems") {
                out.push(SchemaNote::new(path, "an array schema needs `items`"));
            }
            for (k, child) in map {
                if !is_data_keyword(k) {
                    find_arrays_without_items(child, &format!("{path}/{}", pointer_token(k)), out);
                }
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                find_arrays_without_items(child, &format!("{path}/{i}"), out);
            }
        }
        _ => {}
    }
}

struct Ctx<'b> {
    defs: Map<String, Value>,
    notes: ConversionNotes<'b>,
}

impl Ctx<'_> {
    /// Replaces a `$ref` that has sibling keywords by the schema it points to.
    fn inline_ref(
        &mut self,
        obj: &mut Map<String, Value>,
        path: &str,
        inlined: usize,
    ) -> Result<(), SchemaTooLarge> {
        let Some(Value::String(reference)) = obj.get("$ref") else {
            return Ok(());
        };
        if obj.len() == 1 {
            return Ok(());
        }
        let target = local_ref(reference).and_then(|n| self.defs.get(n));
        match (target, inlined < 8) {
            (Some(target @ Value::Object(_)), true) => {
                self.notes.meter.copy(target)?;
                if let Value::Object(target) = target.clone() {
                    obj.remove("$ref");
                    merge_under(obj, target);
                }
            }
            _ => {
                let message =
                    format!("`$ref` to `{reference}` with sibling keywords cannot be inlined");
                self.notes.block(path, message);
            }
        }
        Ok(())
    }

    /// Converts `v` in place; `depth` counts nested objects (strict mode's own limit), `level`
    /// every schema object from the root (the budget's).
    fn walk(
        &mut self,
        v: &mut Value,
        path: &str,
        depth: usize,
        inlined: usize,
        level: usize,
    ) -> Result<(), SchemaTooLarge> {
        let obj = match v {
            Value::Object(obj) => obj,
            Value::Bool(true) => {
                self.notes
                    .block(path, "a schema that accepts anything cannot be strict");
                return Ok(());
            }
            _ => return Ok(()),
        };
        self.notes.meter.node(level)?;
        if obj.is_empty() {
            self.notes
                .block(path, "a schema without a type cannot be strict");
            return Ok(());
        }
        for k in META {
            obj.remove(*k);
        }
        if obj.contains_key("$ref") && obj.len() > 1 {
            self.inline_ref(obj, path, inlined)?;
            if !obj.contains_key("$ref") {
                // The inlined schema may itself carry a `$ref` with siblings.
                return self.walk(v, path, depth, inlined + 1, level);
            }
        }
        match obj.remove("default") {
            Some(Value::Null) | None => {}
            Some(d) => self
                .notes
                .weaken(path, format!("the default {d} is dropped")),
        }
        for k in BLOCKING {
            if obj.contains_key(*k) {
                self.notes
                    .block(path, format!("`{k}` is not supported in strict mode"));
            }
        }
        for k in DROPPED {
            if let Some(value) = obj.remove(*k) {
                self.notes.weaken(
                    path,
                    format!("`{k}: {value}` is not enforced in strict mode"),
                );
            }
        }
        if let Some(Value::String(format)) = obj.get("format")
            && !STRICT_FORMATS.contains(&format.as_str())
        {
            let format = format.clone();
            obj.remove("format");
            self.notes.weaken(
                path,
                format!("format `{format}` is not enforced in strict mode"),
            );
        }
        if let Some(variants) = obj.remove("oneOf") {
            self.notes.weaken(path, ONE_OF_AS_ANY_OF);
            obj.insert("anyOf".into(), variants);
        }
        if let Some(all) = obj.remove("allOf") {
            match all {
                Value::Array(mut parts) if parts.len() == 1 => {
                    if let Some(Value::Object(only)) = parts.pop() {
                        merge_under(obj, only);
                    }
                }
                _ => self.notes.block(
                    path,
                    "`allOf` with several schemas is not supported in strict mode",
                ),
            }
        }
        if let Some(Value::Array(values)) = obj.get("enum")
            && values.len() > 1000
        {
            self.notes
                .block(path, "strict mode accepts at most 1000 enum values");
        }

        let is_object = obj.get("type").and_then(Value::as_str) == Some("object")
            || obj.contains_key("properties");
        let below = level.saturating_add(1);
        if is_object {
            self.object(obj, path, depth, inlined, below)?;
        }
        let is_array = type_names(obj).contains(&"array");
        if is_array && !obj.contains_key("items") {
            self.notes.block(path, "an array schema needs `items`");
        }
        if let Some(items) = obj.get_mut("items") {
            self.walk(items, &format!("{path}/items"), depth, inlined, below)?;
        }
        if let Some(Value::Array(variants)) = obj.get_mut("anyOf") {
            for (i, variant) in variants.iter_mut().enumerate() {
                self.walk(variant, &format!("{path}/anyOf/{i}"), depth, inlined, below)?;
            }
        }
        for defs_key in ["$defs", "definitions"] {
            if let Some(Value::Object(defs)) = obj.get_mut(defs_key) {
                for (name, def) in defs.iter_mut() {
                    self.walk(
                        def,
                        &format!("{path}/{defs_key}/{}", pointer_token(name)),
                        depth,
                        inlined,
                        below,
                    )?;
                }
            }
        }
        Ok(())
    }

    fn object(
        &mut self,
        obj: &mut Map<String, Value>,
        path: &str,
        depth: usize,
        inlined: usize,
        level: usize,
    ) -> Result<(), SchemaTooLarge> {
        if depth >= MAX_DEPTH {
            self.notes.block(
                path,
                format!("strict mode accepts at most {MAX_DEPTH} levels of nested objects"),
            );
        }
        match obj.get("additionalProperties") {
            None | Some(Value::Bool(false)) => {}
            Some(_) => self.notes.block(
                path,
                "an object that accepts undeclared properties (a map) cannot be strict",
            ),
        }
        if !obj.contains_key("properties") {
            if obj.get("additionalProperties").is_none() {
                self.notes.block(
                    path,
                    "an object without declared properties cannot be strict",
                );
            }
            return Ok(());
        }
        obj.insert("additionalProperties".into(), Value::Bool(false));
        let required: HashSet<String> = match obj.get("required") {
            Some(Value::Array(r)) => r
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => HashSet::new(),
        };
        let mut all = Vec::new();
        if let Some(Value::Object(props)) = obj.get_mut("properties") {
            for (name, prop) in props.iter_mut() {
                let prop_path = format!("{path}/properties/{}", pointer_token(name));
                self.walk(prop, &prop_path, depth + 1, inlined, level)?;
                if !required.contains(name) {
                    make_nullable(prop);
                }
                all.push(Value::String(name.clone()));
            }
        }
        obj.insert("required".into(), Value::Array(all));
        Ok(())
    }
}

/// Makes a property schema accept `null` (how strict mode says "optional").
fn make_nullable(prop: &mut Value) {
    let Value::Object(obj) = prop else { return };
    let accepts_null = |t: &Value| t == "null";
    match obj.get_mut("type") {
        Some(Value::String(t)) if t != "null" => {
            let t = t.clone();
            obj.insert(
                "type".into(),
                Value::Array(vec![Value::String(t), Value::from("null")]),
            );
            if let Some(Value::Array(values)) = obj.get_mut("enum")
                && !values.iter().any(Value::is_null)
            {
                values.push(Value::Null);
            }
            return;
        }
        Some(Value::Array(types)) => {
            if !types.iter().any(accepts_null) {
                types.push(Value::from("null"));
            }
            if let Some(Value::Array(values)) = obj.get_mut("enum")
                && !values.iter().any(Value::is_null)
            {
                values.push(Value::Null);
            }
            return;
        }
        Some(_) => return,
        None => {}
    }
    if let Some(Value::Array(variants)) = obj.get_mut("anyOf") {
        if !variants
            .iter()
            .any(|v| v.get("type") == Some(&Value::from("null")))
        {
            variants.push(serde_json::json!({"type": "null"}));
        }
        return;
    }
    let description = obj.remove("description");
    let inner = Value::Object(std::mem::take(obj));
    obj.insert(
        "anyOf".into(),
        Value::Array(vec![inner, serde_json::json!({"type": "null"})]),
    );
    if let Some(d) = description {
        obj.insert("description".into(), d);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn strict(neutral: &Value) -> Result<StrictSchema, Vec<SchemaNote>> {
        super::strict(neutral, &SchemaBudget::default()).map_err(|e| e.notes().to_vec())
    }

    #[test]
    fn nested_objects_and_optional_enums_become_strict() {
        let neutral = json!({
            "type": "object",
            "properties": {
                "task": {"type": "string", "description": "Task description"},
                "status": {"type": "string", "enum": ["pending", "done"], "description": "Optional task status"},
                "place": {"$ref": "#/$defs/Place", "description": "Where"},
                "tags": {"type": "array", "items": {"type": "string", "minLength": 2}}
            },
            "required": ["task", "tags"],
            "$defs": {"Place": {"type": "object", "properties": {"lat": {"type": "number"}}, "required": ["lat"]}}
        });
        let s = strict(&neutral).unwrap();
        assert_eq!(
            s.schema["properties"]["status"],
            json!({"type": ["string", "null"], "enum": ["pending", "done", null], "description": "Optional task status"})
        );
        assert_eq!(
            s.schema["required"],
            json!(["task", "status", "place", "tags"])
        );
        let place = &s.schema["properties"]["place"];
        assert_eq!(place["type"], json!(["object", "null"]));
        assert_eq!(place["additionalProperties"], json!(false));
        assert_eq!(place["description"], json!("Where"));
        assert_eq!(
            s.schema["$defs"]["Place"]["additionalProperties"],
            json!(false)
        );
        assert_eq!(s.weakened.len(), 1);
        assert_eq!(s.weakened[0].path, "/properties/tags/items");
        assert!(
            s.schema["properties"]["tags"]["items"]
                .get("minLength")
                .is_none()
        );
    }

    #[test]
    fn plain_refs_become_nullable_through_any_of() {
        let neutral = json!({
            "type": "object",
            "properties": {"unit": {"$ref": "#/$defs/Unit"}},
            "$defs": {"Unit": {"type": "string", "enum": ["c", "f"]}}
        });
        let s = strict(&neutral).unwrap();
        assert_eq!(
            s.schema["properties"]["unit"],
            json!({"anyOf": [{"$ref": "#/$defs/Unit"}, {"type": "null"}]})
        );
    }

    #[test]
    fn what_cannot_be_strict_is_reported_with_its_place() {
        let neutral = json!({
            "type": "object",
            "properties": {
                "any": {},
                "list": {"type": "array"},
                "either": {"allOf": [{"type": "string"}, {"minLength": 1}]},
                "cond": {"type": "string", "if": {"const": "a"}}
            },
            "required": ["any", "list", "either", "cond"]
        });
        let blockers = strict(&neutral).unwrap_err();
        let paths: Vec<&str> = blockers.iter().map(|b| b.path.as_str()).collect();
        assert!(paths.contains(&"/properties/any"), "{blockers:?}");
        assert!(paths.contains(&"/properties/list"), "{blockers:?}");
        assert!(paths.contains(&"/properties/either"), "{blockers:?}");
        assert!(paths.contains(&"/properties/cond"), "{blockers:?}");
        assert_eq!(rejected(&neutral).len(), 1);
    }

    #[test]
    fn one_of_is_weakened_to_any_of_and_defaults_are_dropped() {
        let neutral = json!({
            "type": "object",
            "properties": {"v": {"oneOf": [{"type": "string"}, {"type": "integer"}], "default": "x"}},
            "required": ["v"]
        });
        let s = strict(&neutral).unwrap();
        assert!(s.schema["properties"]["v"].get("anyOf").is_some());
        assert!(s.schema["properties"]["v"].get("default").is_none());
        assert_eq!(s.weakened.len(), 2);
    }

    #[test]
    fn empty_parameter_lists_are_strict() {
        let s = strict(&json!({"type": "object", "properties": {}})).unwrap();
        assert_eq!(
            s.schema,
            json!({"type": "object", "properties": {}, "additionalProperties": false, "required": []})
        );
    }
}
