//! The neutral parameter schema: JSON Schema draft 2020-12 from schemars, without noise.
//!
//! "Optional" is said by leaving a property out of `required` (never `["T","null"]`); the
//! providers transform this neutral schema into their dialects (strict mode, Gemini's subset).

use schemars::generate::{SchemaGenerator, SchemaSettings};
use schemars::{JsonSchema, Schema};
use serde_json::{Map, Value};

/// The neutral JSON Schema of `T` (an object type: a tool's arguments).
///
/// Draft 2020-12; no `$schema`, no root `title`, no non-standard numeric `format`s (`int32`,
/// `double`, …); `Option<T>` fields are `T` and left out of `required`. A definition used once
/// (an enum of one parameter, say) is written where it is used; `$defs` keeps the types used
/// several times and recursive ones.
///
/// ```
/// use llm_tools_core::schema_for;
/// use serde_json::json;
///
/// #[derive(schemars::JsonSchema, serde::Deserialize)]
/// #[serde(rename_all = "lowercase")]
/// enum Units { Metric, Imperial }
///
/// #[derive(schemars::JsonSchema, serde::Deserialize)]
/// #[allow(dead_code)]
/// struct Args {
///     /// City name
///     city: String,
///     days: Option<u8>,
///     /// Unit system
///     units: Units,
/// }
///
/// assert_eq!(
///     schema_for::<Args>(),
///     json!({
///         "type": "object",
///         "properties": {
///             "city": {"type": "string", "description": "City name"},
///             "days": {"type": "integer", "minimum": 0, "maximum": 255},
///             "units": {"type": "string", "enum": ["metric", "imperial"], "description": "Unit system"}
///         },
///         "required": ["city", "units"]
///     })
/// );
/// ```
pub fn schema_for<T: JsonSchema>() -> Value {
    // Only this line is generic: each tool's schema adds as little code as possible.
    finish(generator().into_root_schema_for::<T>())
}

/// One parameter of a `#[tool]` fn, for [`params_schema`].
pub struct ParamSchema {
    /// The property name (the parameter's name).
    pub name: &'static str,
    /// The description from the doc comment or `#[arg(description)]`.
    pub description: Option<&'static str>,
    /// `generator.subschema_for::<T>()` of the parameter's type.
    pub schema: fn(&mut SchemaGenerator) -> Schema,
    /// Left out of `required` (an `Option`, or a parameter with a default).
    pub optional: bool,
    /// The default, for a parameter with a default whose type is `Serialize`.
    pub default: Option<Value>,
}

/// The neutral schema of a `#[tool]` fn's parameters: the same JSON as [`schema_for`] gives for
/// a struct of these fields deriving `JsonSchema` with `deny_unknown_fields`, built by this one
/// function instead of a derive per tool (the only per-tool code is the table of parameters).
pub fn params_schema(params: &[ParamSchema]) -> Value {
    let mut generator = generator();
    let mut properties = Map::with_capacity(params.len());
    let mut required: Vec<Value> = Vec::with_capacity(params.len());
    for param in params {
        let mut schema = (param.schema)(&mut generator);
        if let Some(description) = param.description.filter(|d| !d.is_empty()) {
            schema.insert("description".into(), description.into());
        }
        if let Some(default) = &param.default {
            schema.insert("default".into(), default.clone());
        }
        properties.insert(param.name.to_owned(), schema.to_value());
        if !param.optional {
            required.push(param.name.into());
        }
    }
    let mut root = Map::new();
    root.insert("type".into(), "object".into());
    root.insert("additionalProperties".into(), false.into());
    if !properties.is_empty() {
        root.insert("properties".into(), Value::Object(properties));
    }
    if !required.is_empty() {
        root.insert("required".into(), Value::Array(required));
    }
    let definitions = generator.take_definitions(false);
    if !definitions.is_empty() {
        root.insert("$defs".into(), Value::Object(definitions));
    }
    finish(Schema::from(root))
}

fn generator() -> SchemaGenerator {
    SchemaSettings::draft2020_12()
        .with(|s| {
            s.meta_schema = None;
        })
        .into_generator()
}

fn finish(schema: Schema) -> Value {
    let mut schema = schema.to_value();
    drop_null_from_optional_properties(&mut schema);
    inline_single_use_definitions(&mut schema);
    normalize(schema)
}

// Keys are removed with `retain`, which keeps the order of the others (serde_json's `remove`
// swaps the last key into the hole when `preserve_order` is on).

/// Annotations a `$ref` may carry next to it that win over the definition's own.
const ANNOTATIONS: &[&str] = &[
    "description",
    "title",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// Writes each definition referenced exactly once, and not by itself, where it is referenced:
/// the schema only gets shorter, and a model reads the enum of a parameter where the parameter
/// is. Types used several times and recursive ones stay in `$defs` (dropped when empty).
fn inline_single_use_definitions(schema: &mut Value) {
    const PREFIX: &str = "#/$defs/";
    let mut kept: Vec<String> = Vec::new();
    loop {
        let Some(Value::Object(defs)) = schema.get("$defs") else {
            return;
        };
        let mut uses: Vec<(String, usize)> = defs
            .keys()
            .filter(|k| !kept.contains(k))
            .map(|k| (k.clone(), 0))
            .collect();
        count_refs(schema, PREFIX, &mut uses);
        let inlinable = uses.into_iter().find(|(name, n)| {
            *n == 1
                && defs.get(name).is_some_and(|def| {
                    let mut own = vec![(name.clone(), 0)];
                    count_refs(def, PREFIX, &mut own);
                    own[0].1 == 0
                })
        });
        let Some((name, _)) = inlinable else {
            break;
        };
        let def_keys: Vec<String> = defs
            .get(&name)
            .and_then(Value::as_object)
            .map(|def| def.keys().cloned().collect())
            .unwrap_or_default();
        let target = format!("{PREFIX}{name}");
        let clash = find_ref(schema, &target).is_none_or(|site| {
            site.keys()
                .any(|k| k != "$ref" && def_keys.contains(k) && !ANNOTATIONS.contains(&k.as_str()))
        });
        if clash {
            // The reference says more than annotations about what the definition says: keep it.
            kept.push(name);
            continue;
        }
        let def = match schema.get_mut("$defs") {
            Some(Value::Object(defs)) => {
                let def = defs.get(&name).cloned();
                defs.retain(|key, _| *key != name);
                def
            }
            _ => None,
        };
        let (Some(Value::Object(def)), Some(site)) = (def, find_ref(schema, &target)) else {
            return;
        };
        site.retain(|key, _| key != "$ref");
        for (k, value) in def {
            site.entry(k).or_insert(value);
        }
    }
    if let Value::Object(root) = schema
        && root
            .get("$defs")
            .and_then(Value::as_object)
            .is_some_and(Map::is_empty)
    {
        root.retain(|key, _| key != "$defs");
    }
}

fn count_refs(v: &Value, prefix: &str, uses: &mut [(String, usize)]) {
    match v {
        Value::Object(map) => {
            if let Some(name) = map
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix(prefix))
                && let Some(entry) = uses.iter_mut().find(|(n, _)| n == name)
            {
                entry.1 += 1;
            }
            map.values().for_each(|v| count_refs(v, prefix, uses));
        }
        Value::Array(items) => items.iter().for_each(|v| count_refs(v, prefix, uses)),
        _ => {}
    }
}

/// The object holding `"$ref": target`.
fn find_ref<'v>(v: &'v mut Value, target: &str) -> Option<&'v mut Map<String, Value>> {
    match v {
        Value::Object(map) => {
            if map.get("$ref").and_then(Value::as_str) == Some(target) {
                return Some(map);
            }
            map.values_mut().find_map(|child| find_ref(child, target))
        }
        Value::Array(items) => items.iter_mut().find_map(|child| find_ref(child, target)),
        _ => None,
    }
}

/// Cleans a schema the way [`schema_for`] does: drops `$schema`, the root `title` and the
/// non-standard numeric `format`s, and makes sure an object root has `properties`. Used for
/// literal schemas (`#[tool(schema = …)]`) too.
pub fn normalize(mut schema: Value) -> Value {
    if let Value::Object(root) = &mut schema {
        root.retain(|key, _| key != "$schema" && key != "title");
        if root.get("type").and_then(Value::as_str) == Some("object")
            && !root.contains_key("properties")
        {
            root.insert("properties".into(), Value::Object(Map::new()));
        }
        if let Some(Value::Array(required)) = root.get("required")
            && required.is_empty()
        {
            root.retain(|key, _| key != "required");
        }
    }
    strip_numeric_formats(&mut schema);
    schema
}

/// schemars says `Option<T>` is `["T","null"]` (or `anyOf: [T, {"type":"null"}]`); in the
/// neutral schema an optional property is one left out of `required`, so the `null` goes.
/// Nulls elsewhere (`Vec<Option<T>>` items, required properties) are real and stay.
fn drop_null_from_optional_properties(v: &mut Value) {
    match v {
        Value::Object(map) => {
            let required: Vec<String> = match map.get("required") {
                Some(Value::Array(r)) => r
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect(),
                _ => Vec::new(),
            };
            if let Some(Value::Object(props)) = map.get_mut("properties") {
                for (name, prop) in props.iter_mut() {
                    if !required.iter().any(|r| r == name) {
                        drop_null(prop);
                    }
                }
            }
            map.values_mut()
                .for_each(drop_null_from_optional_properties);
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(drop_null_from_optional_properties),
        _ => {}
    }
}

fn is_null_schema(v: &Value) -> bool {
    v.get("type").and_then(Value::as_str) == Some("null")
        && v.as_object().is_some_and(|o| o.len() == 1)
}

fn drop_null(prop: &mut Value) {
    let Value::Object(obj) = prop else { return };
    // `#[serde(default)]` on an `Option` makes schemars say `"default": null`: absence already
    // says it.
    obj.retain(|key, value| !(key == "default" && value.is_null()));
    if let Some(Value::Array(types)) = obj.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            obj.insert("type".into(), only);
        }
        if let Some(Value::Array(values)) = obj.get_mut("enum") {
            values.retain(|v| !v.is_null());
        }
        return;
    }
    if let Some(Value::Array(variants)) = obj.get_mut("anyOf") {
        variants.retain(|v| !is_null_schema(v));
        if variants.len() == 1
            && let Some(Value::Object(inner)) = variants.pop()
        {
            obj.retain(|key, _| key != "anyOf");
            for (k, val) in inner {
                obj.entry(k).or_insert(val);
            }
        }
    }
}

pub(crate) fn empty_object_schema() -> Value {
    let mut root = Map::new();
    root.insert("type".into(), Value::from("object"));
    root.insert("properties".into(), Value::Object(Map::new()));
    Value::Object(root)
}

/// schemars marks Rust number widths with `format` values no JSON Schema consumer knows; the
/// range they imply is already in `minimum`/`maximum`.
fn strip_numeric_formats(v: &mut Value) {
    const RUST_FORMATS: &[&str] = &[
        "int", "int8", "int16", "int32", "int64", "int128", "uint", "uint8", "uint16", "uint32",
        "uint64", "uint128", "float", "double",
    ];
    match v {
        Value::Object(map) => {
            if map
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| RUST_FORMATS.contains(&f))
            {
                map.retain(|key, _| key != "format");
            }
            map.values_mut().for_each(strip_numeric_formats);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_numeric_formats),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(schemars::JsonSchema, serde::Deserialize)]
    #[serde(rename_all = "lowercase")]
    #[allow(dead_code)]
    /// A unit system.
    enum Units {
        Metric,
        Imperial,
    }

    #[derive(schemars::JsonSchema, serde::Deserialize)]
    #[allow(dead_code)]
    struct Place {
        name: String,
    }

    #[derive(schemars::JsonSchema, serde::Deserialize)]
    #[allow(dead_code)]
    struct Node {
        label: String,
        children: Vec<Node>,
    }

    #[derive(schemars::JsonSchema, serde::Deserialize)]
    #[allow(dead_code)]
    struct Args {
        /// How to answer
        units: Units,
        fallback: Option<Units2>,
        from: Place,
        to: Place,
        tree: Node,
    }

    #[derive(schemars::JsonSchema, serde::Deserialize)]
    #[serde(rename_all = "lowercase")]
    #[allow(dead_code)]
    enum Units2 {
        Si,
    }

    #[test]
    fn definitions_used_once_are_written_where_they_are_used() {
        let s = schema_for::<Args>();
        let props = &s["properties"];
        // Used once: inline, the reference's own description wins over the type's doc.
        assert_eq!(
            props["units"],
            json!({"type": "string", "enum": ["metric", "imperial"], "description": "How to answer"})
        );
        assert_eq!(props["fallback"], json!({"type": "string", "enum": ["si"]}));
        // Used twice, or by itself: kept in `$defs`.
        assert_eq!(props["from"], json!({"$ref": "#/$defs/Place"}));
        assert_eq!(props["to"], json!({"$ref": "#/$defs/Place"}));
        assert_eq!(props["tree"], json!({"$ref": "#/$defs/Node"}));
        let defs = s["$defs"].as_object().unwrap();
        let mut names: Vec<&str> = defs.keys().map(String::as_str).collect();
        names.sort_unstable();
        assert_eq!(names, ["Node", "Place"]);
        assert_eq!(
            defs["Node"]["properties"]["children"]["items"],
            json!({"$ref": "#/$defs/Node"})
        );
    }

    #[test]
    fn no_defs_left_when_every_definition_is_inlined() {
        #[derive(schemars::JsonSchema, serde::Deserialize)]
        #[allow(dead_code)]
        struct One {
            units: Units,
        }
        let s = schema_for::<One>();
        assert!(s.get("$defs").is_none(), "{s}");
        assert_eq!(
            s["properties"]["units"],
            json!({"type": "string", "enum": ["metric", "imperial"], "description": "A unit system."})
        );
    }

    #[test]
    fn literal_schemas_lose_the_same_noise() {
        let s = normalize(json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Args",
            "type": "object",
            "required": [],
            "properties": {"n": {"type": "integer", "format": "int32", "title": "kept"}}
        }));
        assert_eq!(
            s,
            json!({"type": "object", "properties": {"n": {"type": "integer", "title": "kept"}}})
        );
        assert_eq!(
            normalize(json!({"type": "object"})),
            json!({"type": "object", "properties": {}})
        );
    }
}
