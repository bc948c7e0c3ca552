//! Anthropic's schema dialects: `input_schema` as it is, and strict tool use (`strict: true`).
//!
//! Without `strict`, Anthropic accepts any JSON Schema whose root is `{"type": "object"}` and
//! reads it as a hint. With `strict`, inputs are guaranteed to match the schema, which must fit
//! the subset Anthropic's SDK prepares (its `transform_schema`): every object closed with
//! `additionalProperties: false`, `oneOf` read as `anyOf`, only some string formats, `minItems`
//! of 0 or 1; every other constraint is not enforced, so it moves into the description where the
//! model still reads it. Unlike OpenAI's strict mode, optional properties stay optional.
//! Both forms count against a [`SchemaBudget`]: the strict form inlines `$ref`s that carry
//! sibling keywords, and stops as soon as that passes the budget.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::budget::{
    ConversionError, ConversionNotes, Meter, SchemaBudget, SchemaTooLarge, pointer_token,
    recursive_defs, without_root_keywords,
};
use super::shared::{
    META, ONE_OF_AS_ANY_OF, SchemaNote, StrictSchema, definitions, local_ref, merge_under,
    root_not_object, type_names,
};

/// String formats strict mode enforces; others are moved into the description.
const STRICT_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "uri",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Keywords strict mode keeps as they are (the others move into the description).
const KEPT: &[&str] = &[
    "type",
    "description",
    "title",
    "enum",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "anyOf",
    "oneOf",
    "allOf",
    "$ref",
    "$defs",
    "definitions",
    "const",
    "format",
    "minItems",
];

/// The schema for `input_schema` without `strict`: the neutral schema without meta keywords,
/// if it is within the budget.
///
/// ```
/// use llm_tools_providers::schema::{SchemaBudget, anthropic};
/// use serde_json::json;
///
/// let neutral = json!({"type": "object", "properties": {"city": {"type": "string", "minLength": 2}}});
/// assert_eq!(anthropic::input_schema(&neutral, &SchemaBudget::default()).unwrap(), neutral);
/// ```
pub fn input_schema(neutral: &Value, budget: &SchemaBudget) -> Result<Value, SchemaTooLarge> {
    without_root_keywords(neutral, META, budget)
}

/// What Anthropic rejects with or without `strict`: a root that is not an object schema.
pub fn rejected(neutral: &Value) -> Vec<SchemaNote> {
    root_not_object(neutral).into_iter().collect()
}

/// The strict form of a neutral schema, or every reason it cannot be strict, or the budget it
/// passes ([`ConversionError::TooLarge`]: a provider then sends the plain `input_schema`, as for
/// any schema that cannot be strict, if that is within the budget).
///
/// ```
/// use llm_tools_providers::schema::{SchemaBudget, anthropic};
/// use serde_json::json;
///
/// let budget = SchemaBudget::default();
/// let neutral = json!({
///     "type": "object",
///     "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
///     "required": ["city"]
/// });
/// let strict = anthropic::strict(&neutral, &budget).unwrap();
/// assert_eq!(strict.schema, json!({
///     "type": "object",
///     "properties": {
///         "city": {"type": "string"},
///         "days": {"type": "integer", "description": "{minimum: 1}"}
///     },
///     "required": ["city"],
///     "additionalProperties": false
/// }));
/// assert_eq!(strict.weakened[0].path, "/properties/days");
///
/// let open = json!({"type": "object", "properties": {"tags": {"type": "object", "additionalProperties": {"type": "string"}}}});
/// assert_eq!(anthropic::strict(&open, &budget).unwrap_err().notes()[0].path, "/properties/tags");
/// ```
pub fn strict(neutral: &Value, budget: &SchemaBudget) -> Result<StrictSchema, ConversionError> {
    let mut meter = Meter::new(budget);
    meter.copy(neutral)?;
    let defs = definitions(neutral);
    let mut ctx = Ctx {
        recursive: recursive_defs(&defs),
        defs,
        notes: ConversionNotes::new(meter),
    };
    for note in rejected(neutral) {
        ctx.notes.blocker(note);
    }
    let schema = ctx.walk(neutral, "", 0, 1)?;
    ctx.notes.finish(schema, budget)
}

/// The members of Anthropic's computer-use toolset (`computer_toolset_20260801`): a tool in the
/// namespace `computer` is sent as the member with its own name.
pub const COMPUTER_TOOLSET_MEMBERS: &[&str] = &[
    "key",
    "hold_key",
    "type",
    "cursor_position",
    "mouse_move",
    "left_mouse_down",
    "left_mouse_up",
    "left_click",
    "left_click_drag",
    "right_click",
    "middle_click",
    "double_click",
    "triple_click",
    "scroll",
    "wait",
    "screenshot",
    "zoom",
];

/// What Anthropic does with a tool in one of the namespaces it reserves for its native client
/// toolsets (`computer`, `browser`): `Ok(Some(member))` when the tool is sent as a member of the
/// computer toolset, `Ok(None)` for any other namespace, `Err` with the reason the tool cannot be
/// sent.
pub fn native_toolset_member<'a>(
    namespace: Option<&str>,
    name: &'a str,
) -> Result<Option<&'a str>, String> {
    match namespace {
        Some("computer") => {
            if COMPUTER_TOOLSET_MEMBERS.contains(&name) {
                Ok(Some(name))
            } else {
                Err(format!(
                    "the namespace `computer` is Anthropic's computer-use toolset, which has no member `{name}` (its members: {}); rename the tool or give the namespace another name",
                    COMPUTER_TOOLSET_MEMBERS.join(", ")
                ))
            }
        }
        Some("browser") => Err(
            "the namespace `browser` is Anthropic's browser-use toolset (`browser_toolset_20260801`), whose tool results must carry a `browser_state` block this library cannot build from the documentation it follows; give the namespace another name".to_owned(),
        ),
        _ => Ok(None),
    }
}

struct Ctx<'b> {
    defs: Map<String, Value>,
    recursive: HashSet<String>,
    notes: ConversionNotes<'b>,
}

/// A schema object without the meta keywords.
fn without_meta(obj: &Map<String, Value>) -> Map<String, Value> {
    obj.iter()
        .filter(|(k, _)| !META.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

impl Ctx<'_> {
    /// The strict form of `v`; `level` counts schema objects from the root (the budget's
    /// depth).
    fn walk(
        &mut self,
        v: &Value,
        path: &str,
        inlined: usize,
        level: usize,
    ) -> Result<Value, SchemaTooLarge> {
        let obj = match v {
            Value::Object(obj) => obj,
            Value::Bool(true) => {
                self.notes
                    .block(path, "a schema that accepts anything cannot be strict");
                return Ok(v.clone());
            }
            other => return Ok(other.clone()),
        };
        self.notes.meter.node(level)?;
        if let Some(reference) = obj.get("$ref").and_then(Value::as_str) {
            let Some(name) = local_ref(reference) else {
                self.notes.block(
                    path,
                    format!("`$ref` to `{reference}`: strict mode accepts only local references"),
                );
                return Ok(Value::Object(without_meta(obj)));
            };
            if self.recursive.contains(name) {
                self.notes.block(
                    path,
                    format!(
                        "`$ref` to `{reference}` is recursive, which strict mode does not accept"
                    ),
                );
                return Ok(Value::Object(without_meta(obj)));
            }
            if obj.keys().filter(|k| !META.contains(&k.as_str())).count() == 1 {
                return Ok(Value::Object(without_meta(obj)));
            }
            // A `$ref` with sibling keywords: inline the definition under them.
            match (self.defs.get(name), inlined < 8) {
                (Some(target @ Value::Object(_)), true) => {
                    self.notes.meter.copy(target)?;
                    let mut merged = without_meta(obj);
                    merged.remove("$ref");
                    if let Value::Object(target) = target.clone() {
                        merge_under(&mut merged, target);
                    }
                    return self.walk(&Value::Object(merged), path, inlined + 1, level);
                }
                _ => {
                    self.notes
                        .block(path, format!("`$ref` to `{reference}` cannot be resolved"));
                    return Ok(Value::Object(without_meta(obj)));
                }
            }
        }
        let below = level.saturating_add(1);
        let mut out = Map::new();
        let mut leftovers: Vec<(String, Value)> = Vec::new();
        for (k, val) in obj {
            if !KEPT.contains(&k.as_str()) && !META.contains(&k.as_str()) {
                leftovers.push((k.clone(), val.clone()));
            }
        }
        let has_type = obj.contains_key("type");
        let composed = ["anyOf", "oneOf", "allOf"]
            .iter()
            .any(|k| obj.get(*k).is_some_and(Value::is_array));
        if !has_type && !composed && !obj.contains_key("enum") && !obj.contains_key("const") {
            self.notes.block(
                path,
                "a schema without a `type` (or `anyOf`, `enum`) cannot be strict",
            );
        }
        if let Some(t) = obj.get("type") {
            out.insert("type".into(), t.clone());
        }
        for k in ["title", "description"] {
            if let Some(val) = obj.get(k) {
                out.insert(k.into(), val.clone());
            }
        }
        if let Some(values) = obj.get("enum") {
            out.insert("enum".into(), values.clone());
        }
        if let Some(value) = obj.get("const") {
            // The same constraint, in a keyword strict mode enforces.
            out.insert("enum".into(), Value::Array(vec![value.clone()]));
        }
        for (key, out_key) in [("anyOf", "anyOf"), ("oneOf", "anyOf"), ("allOf", "allOf")] {
            if let Some(Value::Array(variants)) = obj.get(key) {
                if key == "oneOf" {
                    self.notes.weaken(path, ONE_OF_AS_ANY_OF);
                }
                let walked = variants
                    .iter()
                    .enumerate()
                    .map(|(i, variant)| {
                        self.walk(variant, &format!("{path}/{key}/{i}"), inlined, below)
                    })
                    .collect::<Result<_, _>>()?;
                out.insert(out_key.into(), Value::Array(walked));
            }
        }
        let types = type_names(obj);
        let is_object = types.contains(&"object") || obj.contains_key("properties");
        if is_object {
            self.object(obj, &mut out, path, inlined, below)?;
        }
        if let Some(Value::String(format)) = obj.get("format") {
            if STRICT_FORMATS.contains(&format.as_str()) {
                out.insert("format".into(), Value::from(format.as_str()));
            } else {
                leftovers.push(("format".into(), Value::from(format.as_str())));
            }
        }
        if let Some(items) = obj.get("items") {
            let walked = self.walk(items, &format!("{path}/items"), inlined, below)?;
            out.insert("items".into(), walked);
        }
        match obj.get("minItems") {
            Some(n) if n.as_u64().is_some_and(|n| n <= 1) => {
                out.insert("minItems".into(), n.clone());
            }
            Some(n) => leftovers.push(("minItems".into(), n.clone())),
            None => {}
        }
        for defs_key in ["$defs", "definitions"] {
            if let Some(Value::Object(defs)) = obj.get(defs_key) {
                let mut walked = Map::new();
                for (name, def) in defs {
                    let def_path = format!("{path}/{defs_key}/{}", pointer_token(name));
                    walked.insert(name.clone(), self.walk(def, &def_path, inlined, below)?);
                }
                out.insert(defs_key.into(), Value::Object(walked));
            }
        }
        if !leftovers.is_empty() {
            leftovers.sort_by_key(|(k, _)| KEYWORD_ORDER.iter().position(|o| o == k));
            let listed: Vec<String> = leftovers.iter().map(|(k, v)| format!("{k}: {v}")).collect();
            for item in &listed {
                self.notes.weaken(
                    path,
                    format!(
                        "`{item}` is not enforced in strict mode; it is kept in the description"
                    ),
                );
            }
            let note = format!("{{{}}}", listed.join(", "));
            let description = match out.get("description").and_then(Value::as_str) {
                Some(d) if !d.is_empty() => format!("{d}\n\n{note}"),
                _ => note,
            };
            out.insert("description".into(), Value::String(description));
        }
        Ok(Value::Object(out))
    }

    fn object(
        &mut self,
        obj: &Map<String, Value>,
        out: &mut Map<String, Value>,
        path: &str,
        inlined: usize,
        level: usize,
    ) -> Result<(), SchemaTooLarge> {
        match obj.get("additionalProperties") {
            None | Some(Value::Bool(false)) => {}
            Some(_) => self.notes.block(
                path,
                "an object that accepts undeclared properties (a map) cannot be strict",
            ),
        }
        let mut props = Map::new();
        if let Some(Value::Object(declared)) = obj.get("properties") {
            for (name, prop) in declared {
                let prop_path = format!("{path}/properties/{}", pointer_token(name));
                props.insert(name.clone(), self.walk(prop, &prop_path, inlined, level)?);
            }
        }
        out.insert("properties".into(), Value::Object(props));
        if let Some(required) = obj.get("required") {
            out.insert("required".into(), required.clone());
        }
        out.insert("additionalProperties".into(), Value::Bool(false));
        Ok(())
    }
}

/// The order leftover keywords are listed in the description: the usual reading order.
const KEYWORD_ORDER: &[&str] = &[
    "minimum",
    "exclusiveMinimum",
    "maximum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minItems",
    "maxItems",
    "uniqueItems",
];

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object_with(prop: Value) -> Value {
        json!({"type": "object", "properties": {"p": prop}, "required": ["p"]})
    }

    fn strict(neutral: &Value) -> Result<StrictSchema, Vec<SchemaNote>> {
        super::strict(neutral, &SchemaBudget::default()).map_err(|e| e.notes().to_vec())
    }

    fn input_schema(neutral: &Value) -> Value {
        super::input_schema(neutral, &SchemaBudget::default()).unwrap()
    }

    /// The strict form of a one-property schema: the property and the weakenings.
    fn strict_prop(prop: Value) -> (Value, Vec<String>) {
        let s = strict(&object_with(prop)).unwrap();
        let messages = s.weakened.iter().map(|n| n.message.clone()).collect();
        (s.schema["properties"]["p"].clone(), messages)
    }

    fn blockers(prop: Value) -> Vec<SchemaNote> {
        strict(&object_with(prop)).unwrap_err()
    }

    #[test]
    fn a_root_that_is_not_an_object_is_rejected_with_or_without_strict() {
        let root = json!({"type": "string"});
        assert_eq!(rejected(&root).len(), 1);
        assert!(strict(&root).is_err());
        assert!(rejected(&json!({"type": "object", "properties": {}})).is_empty());
    }

    #[test]
    fn optional_properties_stay_optional_and_objects_are_closed() {
        let neutral = json!({
            "type": "object",
            "properties": {
                "task": {"type": "string", "description": "Task description"},
                "place": {"type": "object", "properties": {"lat": {"type": "number"}}}
            },
            "required": ["task"]
        });
        let s = strict(&neutral).unwrap();
        assert_eq!(s.schema["required"], json!(["task"]));
        assert_eq!(s.schema["additionalProperties"], json!(false));
        assert_eq!(
            s.schema["properties"]["place"]["additionalProperties"],
            json!(false)
        );
        assert!(s.weakened.is_empty());
    }

    #[test]
    fn nullable_moves_into_the_description() {
        let (p, weakened) = strict_prop(json!({"type": "string", "nullable": true}));
        assert_eq!(p["description"], json!("{nullable: true}"));
        assert_eq!(weakened.len(), 1);
    }

    #[test]
    fn const_becomes_a_one_value_enum_without_weakening() {
        let (p, weakened) = strict_prop(json!({"type": "string", "const": "celsius"}));
        assert_eq!(p, json!({"type": "string", "enum": ["celsius"]}));
        assert!(weakened.is_empty());
    }

    #[test]
    fn open_objects_cannot_be_strict() {
        for extra in [json!(true), json!({"type": "string"})] {
            let b = blockers(json!({"type": "object", "additionalProperties": extra}));
            assert_eq!(b[0].path, "/properties/p");
            assert!(b[0].message.contains("undeclared properties"), "{b:?}");
        }
    }

    #[test]
    fn one_of_is_sent_as_any_of() {
        let (p, weakened) =
            strict_prop(json!({"oneOf": [{"type": "string"}, {"type": "integer"}]}));
        assert_eq!(
            p,
            json!({"anyOf": [{"type": "string"}, {"type": "integer"}]})
        );
        assert!(weakened[0].contains("oneOf"));
    }

    #[test]
    fn all_of_and_any_of_are_kept() {
        let (p, weakened) =
            strict_prop(json!({"allOf": [{"type": "string"}], "anyOf": [{"type": "string"}]}));
        assert_eq!(p["allOf"], json!([{"type": "string"}]));
        assert_eq!(p["anyOf"], json!([{"type": "string"}]));
        assert!(weakened.is_empty());
    }

    #[test]
    fn conditionals_and_not_move_into_the_description() {
        let (p, weakened) =
            strict_prop(json!({"type": "string", "not": {"const": "x"}, "if": {"minLength": 3}}));
        let d = p["description"].as_str().unwrap();
        assert!(d.contains("not: ") && d.contains("if: "), "{d}");
        assert_eq!(weakened.len(), 2);
    }

    #[test]
    fn recursive_refs_cannot_be_strict() {
        let neutral = json!({
            "type": "object",
            "properties": {"tree": {"$ref": "#/$defs/Node"}},
            "required": ["tree"],
            "$defs": {"Node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}}
        });
        let b = strict(&neutral).unwrap_err();
        assert!(b.iter().any(|n| n.message.contains("recursive")), "{b:?}");
    }

    #[test]
    fn local_refs_are_kept_and_refs_with_siblings_inlined() {
        let neutral = json!({
            "type": "object",
            "properties": {
                "unit": {"$ref": "#/$defs/Unit"},
                "other": {"$ref": "#/$defs/Unit", "description": "Another unit"}
            },
            "$defs": {"Unit": {"type": "string", "enum": ["c", "f"]}}
        });
        let s = strict(&neutral).unwrap();
        assert_eq!(
            s.schema["properties"]["unit"],
            json!({"$ref": "#/$defs/Unit"})
        );
        assert_eq!(
            s.schema["properties"]["other"],
            json!({"type": "string", "enum": ["c", "f"], "description": "Another unit"})
        );
        assert_eq!(
            s.schema["$defs"]["Unit"],
            json!({"type": "string", "enum": ["c", "f"]})
        );
        let remote = object_with(json!({"$ref": "https://example.com/schema.json"}));
        assert!(strict(&remote).is_err());
    }

    #[test]
    fn defaults_move_into_the_description() {
        let (p, weakened) = strict_prop(json!({"type": "integer", "default": 3}));
        assert_eq!(p["description"], json!("{default: 3}"));
        assert_eq!(weakened.len(), 1);
    }

    #[test]
    fn examples_move_into_the_description() {
        let (p, weakened) = strict_prop(json!({"type": "string", "examples": ["Berlin"]}));
        assert_eq!(p["description"], json!("{examples: [\"Berlin\"]}"));
        assert_eq!(weakened.len(), 1);
    }

    #[test]
    fn unsupported_string_formats_move_into_the_description() {
        let (p, weakened) = strict_prop(json!({"type": "string", "format": "uri"}));
        assert_eq!(p, json!({"type": "string", "format": "uri"}));
        assert!(weakened.is_empty());
        let (p, weakened) = strict_prop(json!({"type": "string", "format": "iban"}));
        assert_eq!(
            p,
            json!({"type": "string", "description": "{format: \"iban\"}"})
        );
        assert_eq!(weakened.len(), 1);
    }

    #[test]
    fn patterns_and_string_lengths_move_into_the_description() {
        let (p, weakened) = strict_prop(json!({
            "type": "string", "description": "A code", "pattern": "^[A-Z]+$", "minLength": 2, "maxLength": 8
        }));
        assert_eq!(
            p["description"],
            json!("A code\n\n{minLength: 2, maxLength: 8, pattern: \"^[A-Z]+$\"}")
        );
        assert_eq!(weakened.len(), 3);
    }

    #[test]
    fn numeric_ranges_move_into_the_description() {
        let (p, weakened) = strict_prop(json!({
            "type": "number", "minimum": 0, "exclusiveMaximum": 10, "multipleOf": 0.5
        }));
        assert_eq!(
            p["description"],
            json!("{minimum: 0, exclusiveMaximum: 10, multipleOf: 0.5}")
        );
        assert_eq!(weakened.len(), 3);
    }

    #[test]
    fn min_items_of_zero_or_one_is_kept_and_larger_counts_move() {
        let (p, weakened) =
            strict_prop(json!({"type": "array", "items": {"type": "string"}, "minItems": 1}));
        assert_eq!(p["minItems"], json!(1));
        assert!(weakened.is_empty());
        let (p, weakened) = strict_prop(json!({
            "type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 5, "uniqueItems": true
        }));
        assert!(p.get("minItems").is_none());
        assert_eq!(
            p["description"],
            json!("{minItems: 2, maxItems: 5, uniqueItems: true}")
        );
        assert_eq!(weakened.len(), 3);
    }

    #[test]
    fn tuple_and_containment_keywords_move_into_the_description() {
        let (p, weakened) = strict_prop(json!({
            "type": "array", "items": {"type": "string"}, "prefixItems": [{"type": "integer"}], "contains": {"type": "string"}
        }));
        let d = p["description"].as_str().unwrap();
        assert!(d.contains("prefixItems") && d.contains("contains"), "{d}");
        assert_eq!(weakened.len(), 2);
    }

    #[test]
    fn property_count_and_name_keywords_move_into_the_description() {
        let (p, weakened) = strict_prop(json!({
            "type": "object", "properties": {"a": {"type": "string"}},
            "minProperties": 1, "maxProperties": 3, "propertyNames": {"pattern": "^[a-z]+$"},
            "patternProperties": {"^x": {"type": "string"}}
        }));
        let d = p["description"].as_str().unwrap();
        for k in [
            "minProperties",
            "maxProperties",
            "propertyNames",
            "patternProperties",
        ] {
            assert!(d.contains(k), "{d}");
        }
        assert_eq!(weakened.len(), 4);
    }

    #[test]
    fn meta_keywords_are_dropped_without_remark() {
        let neutral = json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "x", "$comment": "c",
            "type": "object", "properties": {}});
        let s = strict(&neutral).unwrap();
        assert_eq!(
            s.schema,
            json!({"type": "object", "properties": {}, "additionalProperties": false})
        );
        assert!(s.weakened.is_empty());
        assert_eq!(
            input_schema(&neutral),
            json!({"type": "object", "properties": {}})
        );
    }

    #[test]
    fn untyped_schemas_cannot_be_strict() {
        let b = blockers(json!({"description": "anything"}));
        assert!(b[0].message.contains("without a `type`"), "{b:?}");
    }
}
