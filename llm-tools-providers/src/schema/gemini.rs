//! Gemini's two schema fields: `parametersJsonSchema` (JSON Schema, the default) and the older
//! `parameters` (an OpenAPI 3.0 subset mapped onto a protobuf message, for models or endpoints
//! that need it).
//!
//! `parametersJsonSchema` takes the neutral schema nearly as it is; `oneOf` and `allOf`, which
//! Gemini is reported to ignore silently, are rewritten (`oneOf` as `anyOf`, `allOf` merged).
//! `parameters` takes only the fields of Gemini's `Schema` message: `$ref`s are inlined, type
//! arrays and `null` variants become `nullable`, `const` becomes a one-value `enum`, types are
//! upper-cased, and every other keyword is dropped (and reported, where it constrained
//! anything). What cannot be expressed at all (an array without `items`, a property name
//! Gemini does not accept, a root that is not an object) is rejected before any request.
//! Both count against a [`SchemaBudget`]; `parameters`, which inlines every `$ref`, stops as
//! soon as what it has written passes it.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::budget::{
    ConversionError, ConversionNotes, Meter, Remarks, SchemaBudget, SchemaTooLarge, pointer_token,
    recursive_defs, without_root_keywords,
};
use super::shared::{
    META, ONE_OF_AS_ANY_OF, SchemaNote, definitions, is_data_keyword, local_ref, merge_under,
    root_not_object,
};

/// A schema for one of Gemini's fields, and what the conversion weakened.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct GeminiSchema {
    /// The schema to send.
    pub schema: Value,
    /// What Gemini will not enforce: dropped keywords, `oneOf` sent as `anyOf`, …
    pub weakened: Vec<SchemaNote>,
}

/// The fields of Gemini's `Schema` message (camelCase on the wire).
const SCHEMA_FIELDS: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
    "items",
    "minimum",
    "maximum",
];

/// What a Gemini property name must look like in `parameters`.
fn is_valid_property_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && (b[0].is_ascii_alphabetic() || b[0] == b'_')
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

/// The schema for `parametersJsonSchema`, or why Gemini rejects it, or the budget it passes.
///
/// ```
/// use llm_tools_providers::schema::{SchemaBudget, gemini};
/// use serde_json::json;
///
/// let neutral = json!({
///     "type": "object",
///     "properties": {"v": {"oneOf": [{"type": "string"}, {"type": "integer"}]}},
///     "required": ["v"]
/// });
/// let converted = gemini::json_schema(&neutral, &SchemaBudget::default()).unwrap();
/// assert_eq!(converted.schema["properties"]["v"], json!({"anyOf": [{"type": "string"}, {"type": "integer"}]}));
/// assert_eq!(converted.weakened.len(), 1);
/// ```
pub fn json_schema(
    neutral: &Value,
    budget: &SchemaBudget,
) -> Result<GeminiSchema, ConversionError> {
    if let Some(note) = root_not_object(neutral) {
        return Err(ConversionError::Unsupported(vec![note]));
    }
    let mut schema = without_root_keywords(neutral, META, budget)?;
    let mut meter = Meter::new(budget);
    let mut weakened = Remarks::default();
    rewrite_compositions(&mut schema, "", &mut meter, &mut weakened);
    budget.check(&schema)?;
    Ok(GeminiSchema {
        schema,
        weakened: weakened.finish(),
    })
}

/// `oneOf` → `anyOf`, `allOf` merged into its schema, everywhere.
fn rewrite_compositions(v: &mut Value, path: &str, meter: &mut Meter<'_>, weakened: &mut Remarks) {
    match v {
        Value::Object(obj) => {
            if let Some(variants) = obj.remove("oneOf") {
                meter.remark(weakened, SchemaNote::new(path, ONE_OF_AS_ANY_OF));
                match obj.get_mut("anyOf") {
                    Some(Value::Array(existing)) => {
                        if let Value::Array(more) = variants {
                            existing.extend(more);
                        }
                    }
                    _ => {
                        obj.insert("anyOf".into(), variants);
                    }
                }
            }
            if let Some(Value::Array(parts)) = obj.remove("allOf")
                && merge_all_of(obj, parts)
            {
                meter.remark(weakened, SchemaNote::new(path, ALL_OF_CONFLICT));
            }
            for (k, child) in obj.iter_mut() {
                if !is_data_keyword(k) {
                    let child_path = format!("{path}/{}", pointer_token(k));
                    rewrite_compositions(child, &child_path, meter, weakened);
                }
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter_mut().enumerate() {
                rewrite_compositions(child, &format!("{path}/{i}"), meter, weakened);
            }
        }
        _ => {}
    }
}

/// What a merged `allOf` whose parts disagree weakened.
const ALL_OF_CONFLICT: &str =
    "`allOf` is merged into one schema, and its parts disagree: the first part's keywords are kept";

/// Merges the schemas of an `allOf` into `obj`: properties and `required` are united; any other
/// keyword that two parts set differently keeps its first value. Returns whether two parts
/// disagreed.
fn merge_all_of(obj: &mut Map<String, Value>, parts: Vec<Value>) -> bool {
    let mut conflict = false;
    for part in parts {
        let Value::Object(part) = part else { continue };
        for (k, val) in part {
            match (k.as_str(), obj.get_mut(&k)) {
                ("properties", Some(Value::Object(props))) => {
                    if let Value::Object(more) = val {
                        for (name, schema) in more {
                            if props.contains_key(&name) {
                                conflict = true;
                            } else {
                                props.insert(name, schema);
                            }
                        }
                    }
                }
                ("required", Some(Value::Array(required))) => {
                    if let Value::Array(more) = val {
                        let mut listed: HashSet<String> = required
                            .iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect();
                        for r in more {
                            match r.as_str() {
                                Some(name) if !listed.insert(name.to_owned()) => {}
                                _ => required.push(r),
                            }
                        }
                    }
                }
                (_, Some(existing)) => {
                    if *existing != val {
                        conflict = true;
                    }
                }
                (_, None) => {
                    obj.insert(k, val);
                }
            }
        }
    }
    conflict
}

/// The schema for the older `parameters` field, or every reason Gemini rejects it, or the budget
/// it passes: every `$ref` is inlined (recursive definitions cut after a few levels), and the
/// conversion stops as soon as what it has written passes the budget.
///
/// ```
/// use llm_tools_providers::schema::{SchemaBudget, gemini};
/// use serde_json::json;
///
/// let budget = SchemaBudget::default();
///
/// let neutral = json!({
///     "type": "object",
///     "properties": {
///         "task": {"type": "string", "description": "Task description"},
///         "status": {"anyOf": [{"$ref": "#/$defs/Status"}, {"type": "null"}]}
///     },
///     "required": ["task", "status"],
///     "$defs": {"Status": {"type": "string", "enum": ["pending", "done"]}}
/// });
/// let converted = gemini::parameters(&neutral, &budget).unwrap();
/// assert_eq!(converted.schema, json!({
///     "type": "OBJECT",
///     "properties": {
///         "task": {"type": "STRING", "description": "Task description"},
///         "status": {"type": "STRING", "enum": ["pending", "done"], "nullable": true}
///     },
///     "required": ["task", "status"],
///     "propertyOrdering": ["task", "status"]
/// }));
/// assert!(converted.weakened.is_empty());
///
/// let list = json!({"type": "object", "properties": {"tags": {"type": "array"}}});
/// assert_eq!(gemini::parameters(&list, &budget).unwrap_err().notes()[0].path, "/properties/tags");
/// ```
pub fn parameters(neutral: &Value, budget: &SchemaBudget) -> Result<GeminiSchema, ConversionError> {
    let mut meter = Meter::new(budget);
    meter.copy(neutral)?;
    let root = neutral.clone();
    let defs = definitions(neutral);
    let mut ctx = Legacy {
        recursive: recursive_defs(&defs),
        defs,
        notes: ConversionNotes::new(meter),
    };
    if let Some(note) = root_not_object(neutral) {
        ctx.notes.blocker(note);
    }
    let schema = ctx.convert(root, "", 0, 1)?;
    let converted = ctx.notes.finish(schema, budget)?;
    Ok(GeminiSchema {
        schema: converted.schema,
        weakened: converted.weakened,
    })
}

struct Legacy<'b> {
    defs: Map<String, Value>,
    recursive: HashSet<String>,
    notes: ConversionNotes<'b>,
}

/// How deep `$ref`s are inlined before a recursive schema is cut.
const MAX_INLINE: usize = 3;

impl Legacy<'_> {
    /// Replaces a `$ref` by its definition (the definition's keywords under the reference's
    /// own), and again while the result is a `$ref`: `None` when it cannot be inlined (and that
    /// is rejected). Each definition inlined counts against the budget.
    fn resolve(
        &mut self,
        mut obj: Map<String, Value>,
        path: &str,
        mut depth: usize,
        level: usize,
    ) -> Result<Option<Map<String, Value>>, SchemaTooLarge> {
        while let Some(reference) = obj.remove("$ref") {
            self.notes.meter.node(level)?;
            let reference = reference.as_str().unwrap_or_default();
            let Some(name) = local_ref(reference) else {
                self.notes.block(
                    path,
                    format!(
                        "`$ref` to `{reference}` cannot be inlined (only local references can)"
                    ),
                );
                return Ok(None);
            };
            let Some(target @ Value::Object(target_obj)) = self.defs.get(name) else {
                self.notes
                    .block(path, format!("`$ref` to `{reference}` names no definition"));
                return Ok(None);
            };
            if self.recursive.contains(name) && depth >= MAX_INLINE {
                let mut cut = Map::new();
                cut.insert("type".into(), Value::from("OBJECT"));
                if let Some(d) = obj
                    .get("description")
                    .or_else(|| target_obj.get("description"))
                {
                    self.notes.meter.copy(d)?;
                    cut.insert("description".into(), d.clone());
                }
                let message = format!(
                    "the recursive schema `{name}` is cut after {MAX_INLINE} levels (`parameters` cannot refer to a definition)"
                );
                self.notes.weaken(path, message);
                return Ok(Some(cut));
            }
            self.notes.meter.copy(target)?;
            merge_under(&mut obj, target_obj.clone());
            depth = depth.saturating_add(1);
        }
        Ok(Some(obj))
    }

    /// The `parameters` form of `v`; `depth` counts the `$ref`s inlined on the way (recursive
    /// definitions are cut past [`MAX_INLINE`]), `level` every schema object from the root (the
    /// budget's depth).
    fn convert(
        &mut self,
        v: Value,
        path: &str,
        depth: usize,
        level: usize,
    ) -> Result<Value, SchemaTooLarge> {
        let Value::Object(obj) = v else {
            if v == Value::Bool(true) {
                self.notes.weaken(
                    path,
                    "a schema that accepts anything is sent as an empty schema",
                );
            }
            return Ok(Value::Object(Map::new()));
        };
        self.notes.meter.node(level)?;
        let below = level.saturating_add(1);
        let (mut obj, depth) = if obj.contains_key("$ref") {
            match self.resolve(obj, path, depth, level)? {
                Some(resolved) => (resolved, depth.saturating_add(1)),
                None => return Ok(Value::Object(Map::new())),
            }
        } else {
            (obj, depth)
        };
        for k in META {
            obj.remove(*k);
        }
        obj.remove("$defs");
        obj.remove("definitions");
        let mut nullable = obj.get("nullable") == Some(&Value::Bool(true));

        // `allOf`: merged into the schema; `oneOf`: read as `anyOf`.
        if let Some(Value::Array(parts)) = obj.remove("allOf")
            && merge_all_of(&mut obj, parts)
        {
            self.notes.weaken(path, ALL_OF_CONFLICT);
        }
        if let Some(variants) = obj.remove("oneOf") {
            self.notes.weaken(path, ONE_OF_AS_ANY_OF);
            obj.entry("anyOf").or_insert(variants);
        }

        // `anyOf: [X, {"type": "null"}]` → X, nullable.
        let is_null = |v: &Value| v.get("type").and_then(Value::as_str) == Some("null");
        if let Some(Value::Array(variants)) = obj.get("anyOf")
            && variants.iter().any(is_null)
        {
            nullable = true;
            let rest: Vec<Value> = match obj.remove("anyOf") {
                Some(Value::Array(variants)) => {
                    variants.into_iter().filter(|v| !is_null(v)).collect()
                }
                _ => Vec::new(),
            };
            if rest.len() == 1 {
                if let Some(Value::Object(only)) = rest.into_iter().next() {
                    let Some(only) = self.resolve(only, path, depth, level)? else {
                        return Ok(Value::Object(Map::new()));
                    };
                    merge_under(&mut obj, only);
                }
            } else if !rest.is_empty() {
                obj.insert("anyOf".into(), Value::Array(rest));
            }
        }

        // Type arrays: `[T, "null"]` → T, nullable; several types → `anyOf`.
        if let Some(Value::Array(types)) = obj.get("type").cloned() {
            let mut names: Vec<String> = types
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect();
            if names.iter().any(|t| t == "null") {
                nullable = true;
                names.retain(|t| t != "null");
            }
            match names.len() {
                0 => {
                    obj.remove("type");
                }
                1 => {
                    obj.insert("type".into(), Value::from(names[0].as_str()));
                }
                _ => {
                    obj.remove("type");
                    let variants = names
                        .iter()
                        .map(|t| serde_json::json!({"type": t}))
                        .collect();
                    obj.insert("anyOf".into(), Value::Array(variants));
                }
            }
        }

        // `const` → a one-value `enum`; enums hold strings only.
        if let Some(value) = obj.remove("const") {
            if value.is_string() {
                obj.insert("enum".into(), Value::Array(vec![value]));
            } else {
                self.notes.weaken(
                    path,
                    format!("`const: {value}` is dropped (Gemini's `enum` holds strings only)"),
                );
            }
        }
        if let Some(Value::Array(values)) = obj.get("enum").cloned() {
            if values.iter().any(Value::is_null) {
                nullable = true;
            }
            let kept: Vec<Value> = values.into_iter().filter(|v| !v.is_null()).collect();
            if kept.iter().all(Value::is_string) {
                obj.insert("enum".into(), Value::Array(kept));
            } else {
                obj.remove("enum");
                self.notes.weaken(
                    path,
                    format!(
                        "`enum: {}` is dropped (Gemini's `enum` holds strings only)",
                        Value::Array(kept)
                    ),
                );
            }
        }
        if let Some(Value::Array(examples)) = obj.remove("examples")
            && let Some(first) = examples.into_iter().next()
        {
            obj.entry("example").or_insert(first);
        }

        let type_name = obj.get("type").and_then(Value::as_str).map(str::to_owned);
        let is_array = type_name.as_deref() == Some("array");
        if is_array && !obj.contains_key("items") {
            self.notes.block(
                path,
                "an array schema needs `items` (Gemini rejects arrays without an item type)",
            );
        }
        if !is_array && obj.contains_key("items") && type_name.is_some() {
            self.notes
                .block(path, "`items` on a schema that is not an array");
        }

        let mut out = Map::new();
        let mut dropped: Vec<String> = Vec::new();
        for (k, val) in obj {
            if !SCHEMA_FIELDS.contains(&k.as_str()) {
                if k == "additionalProperties" && val == Value::Bool(false) {
                    dropped.push(
                        "`additionalProperties: false` is dropped (not accepted in `parameters`): undeclared properties are not ruled out".into(),
                    );
                } else {
                    dropped.push(format!(
                        "`{k}: {}` is dropped (not a field of Gemini's `parameters` schema)",
                        short(&val)
                    ));
                }
                continue;
            }
            let converted = match k.as_str() {
                "type" => Value::from(val.as_str().unwrap_or_default().to_ascii_uppercase()),
                "properties" => {
                    let mut props = Map::new();
                    if let Value::Object(declared) = val {
                        for (name, prop) in declared {
                            let prop_path = format!("{path}/properties/{}", pointer_token(&name));
                            if !is_valid_property_name(&name) {
                                self.notes.block(
                                    &prop_path,
                                    format!(
                                        "the property name `{name}` is not accepted (it must match ^[A-Za-z_][A-Za-z0-9_]{{0,63}}$)"
                                    ),
                                );
                            }
                            let converted = self.convert(prop, &prop_path, depth, below)?;
                            props.insert(name, converted);
                        }
                    }
                    Value::Object(props)
                }
                "items" => self.convert(val, &format!("{path}/items"), depth, below)?,
                "anyOf" => {
                    let variants = match val {
                        Value::Array(variants) => variants,
                        other => vec![other],
                    };
                    Value::Array(
                        variants
                            .into_iter()
                            .enumerate()
                            .map(|(i, variant)| {
                                self.convert(variant, &format!("{path}/anyOf/{i}"), depth, below)
                            })
                            .collect::<Result<_, _>>()?,
                    )
                }
                "nullable" => continue,
                _ => val,
            };
            out.insert(k, converted);
        }
        for message in dropped {
            self.notes.weaken(path, message);
        }
        if nullable {
            out.insert("nullable".into(), Value::Bool(true));
        }
        if let Some(Value::Object(props)) = out.get("properties")
            && props.len() > 1
            && !out.contains_key("propertyOrdering")
        {
            let order = props.keys().map(|k| Value::from(k.as_str())).collect();
            out.insert("propertyOrdering".into(), Value::Array(order));
        }
        Ok(Value::Object(out))
    }
}

/// A keyword's value as shown in a remark: short values whole, long ones cut.
fn short(v: &Value) -> String {
    let text = v.to_string();
    if text.len() <= 60 {
        return text;
    }
    let mut end = 57;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::SchemaLimit;
    use serde_json::json;

    fn parameters(neutral: &Value) -> Result<GeminiSchema, Vec<SchemaNote>> {
        super::parameters(neutral, &SchemaBudget::default()).map_err(|e| e.notes().to_vec())
    }

    fn json_schema(neutral: &Value) -> Result<GeminiSchema, Vec<SchemaNote>> {
        super::json_schema(neutral, &SchemaBudget::default()).map_err(|e| e.notes().to_vec())
    }

    #[test]
    fn definitions_that_multiply_when_inlined_are_refused_not_expanded() {
        // Each definition refers to the one before twice: inlined whole, 2^40 objects.
        let mut defs = Map::new();
        defs.insert("D0".into(), json!({"type": "string"}));
        for i in 1..=40 {
            let prev = format!("#/$defs/D{}", i - 1);
            defs.insert(
                format!("D{i}"),
                json!({"type": "object", "properties": {"a": {"$ref": prev}, "b": {"$ref": prev}}}),
            );
        }
        let neutral =
            json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/D40"}}, "$defs": defs});
        let refused = super::parameters(&neutral, &SchemaBudget::default()).unwrap_err();
        let refused = refused.too_large().unwrap();
        assert_eq!(refused.limit, SchemaLimit::Nodes);
        assert_eq!(refused.max, SchemaBudget::DEFAULT_MAX_NODES);
    }

    fn object_with(prop: Value) -> Value {
        json!({"type": "object", "properties": {"p": prop}, "required": ["p"]})
    }

    fn legacy_prop(prop: Value) -> (Value, Vec<String>) {
        let s = parameters(&object_with(prop)).unwrap();
        let notes = s.weakened.iter().map(|n| n.message.clone()).collect();
        (s.schema["properties"]["p"].clone(), notes)
    }

    fn legacy_rejects(prop: Value) -> Vec<SchemaNote> {
        parameters(&object_with(prop)).unwrap_err()
    }

    #[test]
    fn json_schema_keeps_what_gemini_supports() {
        let neutral = json!({
            "type": "object",
            "properties": {
                "unit": {"type": ["string", "null"], "enum": ["c", "f", null]},
                "tags": {"type": "object", "additionalProperties": {"type": "string"}},
                "pair": {"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}]},
                "node": {"$ref": "#/$defs/Node"},
                "n": {"type": "integer", "minimum": 1, "maximum": 9}
            },
            "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}}
        });
        let s = json_schema(&neutral).unwrap();
        assert_eq!(s.schema, neutral);
        assert!(s.weakened.is_empty());
    }

    #[test]
    fn json_schema_rejects_a_root_that_is_not_an_object() {
        assert_eq!(
            json_schema(&json!({"type": "array", "items": {}}))
                .unwrap_err()
                .len(),
            1
        );
        assert_eq!(parameters(&json!({"type": "string"})).unwrap_err().len(), 1);
    }

    #[test]
    fn json_schema_sends_one_of_as_any_of() {
        let s = json_schema(&object_with(
            json!({"oneOf": [{"type": "string"}, {"type": "integer"}]}),
        ))
        .unwrap();
        assert_eq!(
            s.schema["properties"]["p"],
            json!({"anyOf": [{"type": "string"}, {"type": "integer"}]})
        );
        assert_eq!(s.weakened[0].path, "/properties/p");
    }

    #[test]
    fn json_schema_merges_all_of_and_reports_only_conflicts() {
        let merged = json_schema(&object_with(json!({"allOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"properties": {"b": {"type": "integer"}}, "required": ["b"]}
        ]})))
        .unwrap();
        assert_eq!(
            merged.schema["properties"]["p"],
            json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}, "required": ["a", "b"]})
        );
        assert!(merged.weakened.is_empty());
        let clash = json_schema(&object_with(
            json!({"allOf": [{"type": "string"}, {"type": "integer"}]}),
        ))
        .unwrap();
        assert_eq!(clash.schema["properties"]["p"], json!({"type": "string"}));
        assert_eq!(clash.weakened.len(), 1);
    }

    #[test]
    fn legacy_turns_type_arrays_into_nullable() {
        let (p, notes) = legacy_prop(json!({"type": ["integer", "null"]}));
        assert_eq!(p, json!({"type": "INTEGER", "nullable": true}));
        assert!(notes.is_empty());
        let (p, _) = legacy_prop(json!({"type": ["string", "integer"]}));
        assert_eq!(
            p,
            json!({"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}]})
        );
    }

    #[test]
    fn legacy_turns_any_of_with_null_into_nullable() {
        let (p, notes) =
            legacy_prop(json!({"anyOf": [{"type": "string", "format": "date"}, {"type": "null"}]}));
        assert_eq!(
            p,
            json!({"type": "STRING", "format": "date", "nullable": true})
        );
        assert!(notes.is_empty());
    }

    #[test]
    fn legacy_turns_string_const_into_enum_and_drops_others() {
        let (p, notes) = legacy_prop(json!({"type": "string", "const": "c"}));
        assert_eq!(p, json!({"type": "STRING", "enum": ["c"]}));
        assert!(notes.is_empty());
        let (p, notes) = legacy_prop(json!({"type": "integer", "const": 3}));
        assert_eq!(p, json!({"type": "INTEGER"}));
        assert!(notes[0].contains("const"), "{notes:?}");
    }

    #[test]
    fn legacy_drops_enums_that_are_not_strings() {
        let (p, notes) = legacy_prop(json!({"type": "integer", "enum": [1, 2, 3]}));
        assert_eq!(p, json!({"type": "INTEGER"}));
        assert!(notes[0].contains("enum"), "{notes:?}");
    }

    #[test]
    fn legacy_drops_additional_properties() {
        let (p, notes) = legacy_prop(
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": false}),
        );
        assert_eq!(
            p,
            json!({"type": "OBJECT", "properties": {"a": {"type": "STRING"}}})
        );
        assert!(notes[0].contains("additionalProperties"), "{notes:?}");
        let (_, notes) =
            legacy_prop(json!({"type": "object", "additionalProperties": {"type": "string"}}));
        assert!(notes[0].contains("additionalProperties"), "{notes:?}");
    }

    #[test]
    fn legacy_rejects_arrays_without_items_and_items_elsewhere() {
        let r = legacy_rejects(json!({"type": "array"}));
        assert_eq!(r[0].path, "/properties/p");
        assert!(r[0].message.contains("items"));
        let r = legacy_rejects(json!({"type": "string", "items": {"type": "string"}}));
        assert!(r[0].message.contains("not an array"), "{r:?}");
    }

    #[test]
    fn legacy_drops_prefix_items() {
        let (p, notes) = legacy_prop(
            json!({"type": "array", "items": {"type": "number"}, "prefixItems": [{"type": "number"}]}),
        );
        assert_eq!(p, json!({"type": "ARRAY", "items": {"type": "NUMBER"}}));
        assert!(notes[0].contains("prefixItems"));
    }

    #[test]
    fn legacy_sends_one_of_as_any_of() {
        let (p, notes) = legacy_prop(json!({"oneOf": [{"type": "string"}, {"type": "integer"}]}));
        assert_eq!(
            p,
            json!({"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}]})
        );
        assert!(notes[0].contains("oneOf"));
    }

    #[test]
    fn legacy_merges_all_of() {
        let (p, notes) = legacy_prop(json!({"allOf": [{"type": "string"}, {"maxLength": 4}]}));
        assert_eq!(p, json!({"type": "STRING", "maxLength": 4}));
        assert!(notes.is_empty());
    }

    #[test]
    fn legacy_drops_not_and_conditionals() {
        let (p, notes) = legacy_prop(
            json!({"type": "string", "not": {"const": "x"}, "if": {"minLength": 1}, "then": {}, "else": {}}),
        );
        assert_eq!(p, json!({"type": "STRING"}));
        assert_eq!(notes.len(), 4);
    }

    #[test]
    fn legacy_inlines_refs() {
        let neutral = json!({
            "type": "object",
            "properties": {"place": {"$ref": "#/$defs/Place", "description": "Where"}},
            "$defs": {"Place": {"type": "object", "properties": {"lat": {"type": "number"}}, "required": ["lat"]}}
        });
        let s = parameters(&neutral).unwrap();
        assert_eq!(
            s.schema["properties"]["place"],
            json!({"type": "OBJECT", "description": "Where", "properties": {"lat": {"type": "NUMBER"}}, "required": ["lat"]})
        );
        assert!(s.schema.get("$defs").is_none());
        assert!(s.weakened.is_empty());
    }

    #[test]
    fn legacy_cuts_recursive_refs() {
        let neutral = json!({
            "type": "object",
            "properties": {"tree": {"$ref": "#/$defs/Node"}},
            "$defs": {"Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"}}}}
        });
        let s = parameters(&neutral).unwrap();
        let mut node = &s.schema["properties"]["tree"];
        let mut levels = 0;
        while let Some(child) = node.get("properties").and_then(|p| p.get("child")) {
            node = child;
            levels += 1;
        }
        assert!(levels <= MAX_INLINE + 1, "{levels}");
        assert_eq!(node["type"], json!("OBJECT"));
        assert!(s.weakened.iter().any(|n| n.message.contains("recursive")));
    }

    #[test]
    fn legacy_drops_exclusive_bounds_and_multiple_of() {
        let (p, notes) = legacy_prop(
            json!({"type": "number", "minimum": 0, "exclusiveMaximum": 1, "multipleOf": 0.1}),
        );
        assert_eq!(p, json!({"type": "NUMBER", "minimum": 0}));
        assert_eq!(notes.len(), 2);
    }

    #[test]
    fn legacy_keeps_the_first_example_and_drops_examples() {
        let (p, notes) = legacy_prop(json!({"type": "string", "examples": ["Berlin", "Paris"]}));
        assert_eq!(p, json!({"type": "STRING", "example": "Berlin"}));
        assert!(notes.is_empty());
    }

    #[test]
    fn legacy_drops_unique_items_and_contains() {
        let (p, notes) = legacy_prop(
            json!({"type": "array", "items": {"type": "string"}, "uniqueItems": true, "contains": {"const": "a"}}),
        );
        assert_eq!(p, json!({"type": "ARRAY", "items": {"type": "STRING"}}));
        assert_eq!(notes.len(), 2);
    }

    #[test]
    fn legacy_drops_pattern_properties_and_property_names() {
        let (p, notes) = legacy_prop(
            json!({"type": "object", "properties": {}, "patternProperties": {"^x": {}}, "propertyNames": {"pattern": "^[a-z]+$"}}),
        );
        assert_eq!(p, json!({"type": "OBJECT", "properties": {}}));
        assert_eq!(notes.len(), 2);
    }

    #[test]
    fn legacy_strips_meta_keywords_without_remark() {
        let neutral = json!({"$schema": "x", "$id": "y", "$comment": "z", "type": "object", "properties": {}});
        let s = parameters(&neutral).unwrap();
        assert_eq!(s.schema, json!({"type": "OBJECT", "properties": {}}));
        assert!(s.weakened.is_empty());
        assert_eq!(
            json_schema(&neutral).unwrap().schema,
            json!({"type": "object", "properties": {}})
        );
    }

    #[test]
    fn legacy_rejects_property_names_gemini_does_not_accept() {
        let neutral = json!({"type": "object", "properties": {"first-name": {"type": "string"}, "ok_name": {"type": "string"}}});
        let r = parameters(&neutral).unwrap_err();
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].path, "/properties/first-name");
    }

    #[test]
    fn legacy_orders_properties_as_declared() {
        let neutral = json!({"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "string"}}});
        let s = parameters(&neutral).unwrap();
        assert_eq!(s.schema["propertyOrdering"], json!(["b", "a"]));
    }
}
