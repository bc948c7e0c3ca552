//! What the canonical forms of request bodies share: a tool schema read back into the neutral
//! dialect, whatever dialect it was sent in (OpenAI's strict mode, Anthropic's, Gemini's
//! `parameters`), so schemas sent in different dialects compare.

use serde_json::{Map, Value};

use crate::schema::shared::{local_ref, merge_under};

/// A schema as the neutral dialect says it: local `$ref`s inlined, `$defs` dropped, lower-case
/// types, "optional" as "not required" (never `nullable`, `["T","null"]` or an all-required
/// list of nullable properties), no closed-object marker, no empty `required`, no Gemini
/// `propertyOrdering`, no `strict` flag inside the schema.
pub(crate) fn schema(v: &Value) -> Value {
    let mut out = v.clone();
    let defs = match &mut out {
        Value::Object(root) => root
            .remove("$defs")
            .or_else(|| root.remove("definitions"))
            .and_then(|d| match d {
                Value::Object(d) => Some(d),
                _ => None,
            })
            .unwrap_or_default(),
        _ => Map::new(),
    };
    inline_refs(&mut out, &defs, 0);
    normalize(&mut out);
    out
}

fn inline_refs(v: &mut Value, defs: &Map<String, Value>, depth: usize) {
    match v {
        Value::Object(o) => {
            if let Some(Value::String(r)) = o.get("$ref")
                && let Some(Value::Object(target)) = local_ref(r).and_then(|n| defs.get(n))
                && depth < 8
            {
                let target = target.clone();
                o.remove("$ref");
                merge_under(o, target);
            }
            for child in o.values_mut() {
                inline_refs(child, defs, depth + 1);
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|i| inline_refs(i, defs, depth + 1)),
        _ => {}
    }
}

/// Whether a property schema says it may be `null`; the `null` is taken out.
fn take_null(prop: &mut Value) -> bool {
    let Value::Object(o) = prop else { return false };
    let mut nullable = false;
    if o.remove("nullable") == Some(Value::Bool(true)) {
        nullable = true;
    }
    if let Some(Value::Array(types)) = o.get_mut("type")
        && types
            .iter()
            .any(|t| t.as_str().is_some_and(|t| t.eq_ignore_ascii_case("null")))
    {
        nullable = true;
        types.retain(|t| !t.as_str().is_some_and(|t| t.eq_ignore_ascii_case("null")));
        if types.len() == 1 {
            let only = types.remove(0);
            o.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(variants)) = o.get("anyOf") {
        let is_null = |v: &Value| {
            v.get("type")
                .and_then(Value::as_str)
                .is_some_and(|t| t.eq_ignore_ascii_case("null"))
        };
        if variants.iter().any(is_null) {
            nullable = true;
            let rest: Vec<Value> = variants.iter().filter(|v| !is_null(v)).cloned().collect();
            o.remove("anyOf");
            if rest.len() == 1 {
                if let Some(Value::Object(inner)) = rest.into_iter().next() {
                    merge_under(o, inner);
                }
            } else {
                o.insert("anyOf".into(), Value::Array(rest));
            }
        }
    }
    if nullable && let Some(Value::Array(values)) = o.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    nullable
}

fn normalize(v: &mut Value) {
    let Value::Object(o) = v else {
        if let Value::Array(items) = v {
            items.iter_mut().for_each(normalize);
        }
        return;
    };
    o.remove("strict");
    o.remove("propertyOrdering");
    for k in ["$schema", "$id", "$comment"] {
        o.remove(k);
    }
    if o.get("additionalProperties") == Some(&Value::Bool(false)) {
        o.remove("additionalProperties");
    }
    if let Some(Value::String(t)) = o.get_mut("type") {
        *t = t.to_ascii_lowercase();
    }
    if let Some(Value::Array(types)) = o.get_mut("type") {
        for t in types.iter_mut() {
            if let Value::String(s) = t {
                *s = s.to_ascii_lowercase();
            }
        }
    }
    let mut nullable: Vec<String> = Vec::new();
    if let Some(Value::Object(props)) = o.get_mut("properties") {
        for (name, prop) in props.iter_mut() {
            if take_null(prop) {
                nullable.push(name.clone());
            }
        }
    }
    if let Some(Value::Array(required)) = o.get_mut("required") {
        required.retain(|r| !r.as_str().is_some_and(|r| nullable.iter().any(|n| n == r)));
        if required.is_empty() {
            o.remove("required");
        }
    }
    for (k, child) in o.iter_mut() {
        if !matches!(
            k.as_str(),
            "enum" | "const" | "default" | "example" | "examples"
        ) {
            normalize(child);
        }
    }
}

/// The text blocks of a tool result or user message that carry an inlined file.
pub(crate) fn is_inlined_file(text: &str) -> bool {
    text.starts_with("<file ") && text.ends_with("</file>")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_dialect_reads_back_to_the_neutral_schema() {
        let neutral = json!({
            "type": "object",
            "properties": {
                "task": {"type": "string"},
                "status": {"type": "string", "enum": ["pending", "done"]}
            },
            "required": ["task"]
        });
        let gemini_legacy = json!({
            "type": "OBJECT",
            "properties": {
                "task": {"type": "STRING"},
                "status": {"type": "STRING", "enum": ["pending", "done"], "nullable": true}
            },
            "required": ["task", "status"],
            "propertyOrdering": ["task", "status"]
        });
        let strict = json!({
            "type": "object",
            "properties": {
                "task": {"type": "string"},
                "status": {"type": ["string", "null"], "enum": ["pending", "done", null]}
            },
            "required": ["task", "status"],
            "additionalProperties": false,
            "strict": true
        });
        assert_eq!(schema(&gemini_legacy), schema(&neutral));
        assert_eq!(schema(&strict), schema(&neutral));
    }
}
