//! Writing request bodies: a JSON object written key by key around the chat's raw params, and
//! tool definitions built once per dialect and reused by every request.

use std::sync::Arc;

use llm_tools_core::{ProviderError, ToolSpec};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::answers::request_error;
use crate::schema::{SchemaNote, StrictSchema};

/// Writes a JSON object body key by key, then the chat's raw params. A key the params also
/// have is merged with them when the params are written ([`merge_param`]): objects key by key,
/// the `tools` array extended, anything else replaced by the params' value.
pub(crate) struct BodyWriter<'p> {
    buf: Vec<u8>,
    params: Option<&'p Map<String, Value>>,
    /// What the body would have written under keys the params also have.
    shadowed: Map<String, Value>,
    first: bool,
    error: Option<serde_json::Error>,
}

/// The params' `param` merged over the body's own `ours` for `key`: objects merge key by key
/// (the params win, recursively), the top-level `tools` array is extended with the params'
/// entries (a provider tool the library has no type for, say), anything else is the params'.
pub(crate) fn merge_param(key: &str, ours: Value, param: &Value) -> Value {
    match (ours, param) {
        (Value::Array(mut ours), Value::Array(theirs)) if key == "tools" => {
            ours.extend(theirs.iter().cloned());
            Value::Array(ours)
        }
        (ours, param) => merge_objects(ours, param),
    }
}

fn merge_objects(ours: Value, param: &Value) -> Value {
    match (ours, param) {
        (Value::Object(mut ours), Value::Object(theirs)) => {
            for (k, v) in theirs {
                let merged = match ours.remove(k) {
                    Some(own) => merge_objects(own, v),
                    None => v.clone(),
                };
                ours.insert(k.clone(), merged);
            }
            Value::Object(ours)
        }
        (_, param) => param.clone(),
    }
}

impl<'p> BodyWriter<'p> {
    pub(crate) fn new(capacity: usize, params: Option<&'p Map<String, Value>>) -> Self {
        let mut buf = Vec::with_capacity(capacity);
        buf.push(b'{');
        Self {
            buf,
            params,
            shadowed: Map::new(),
            first: true,
            error: None,
        }
    }

    fn overridden(&self, key: &str) -> bool {
        self.params.is_some_and(|p| p.contains_key(key))
    }

    fn key(&mut self, key: &str) {
        if !self.first {
            self.buf.push(b',');
        }
        self.first = false;
        self.buf.push(b'"');
        self.buf.extend_from_slice(key.as_bytes());
        self.buf.extend_from_slice(b"\":");
    }

    /// Writes `key: value`.
    pub(crate) fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) {
        if self.overridden(key) {
            match serde_json::to_value(value) {
                Ok(v) => self.shadow(key, v),
                Err(e) => {
                    self.error.get_or_insert(e);
                }
            }
            return;
        }
        self.key(key);
        if let Err(e) = serde_json::to_writer(&mut self.buf, value) {
            self.error.get_or_insert(e);
        }
    }

    /// Writes `key: [raw, raw, …]` from JSON text already serialized.
    pub(crate) fn raw_array<'r>(&mut self, key: &str, items: impl IntoIterator<Item = &'r str>) {
        if self.overridden(key) {
            let parsed: Result<Vec<Value>, _> =
                items.into_iter().map(serde_json::from_str).collect();
            match parsed {
                Ok(items) => self.shadow(key, Value::Array(items)),
                Err(e) => {
                    self.error.get_or_insert(e);
                }
            }
            return;
        }
        self.key(key);
        self.buf.push(b'[');
        for (i, item) in items.into_iter().enumerate() {
            if i > 0 {
                self.buf.push(b',');
            }
            self.buf.extend_from_slice(item.as_bytes());
        }
        self.buf.push(b']');
    }

    /// Writes `key: raw` from a JSON text already serialized.
    pub(crate) fn raw(&mut self, key: &str, raw: &str) {
        if self.overridden(key) {
            match serde_json::from_str(raw) {
                Ok(v) => self.shadow(key, v),
                Err(e) => {
                    self.error.get_or_insert(e);
                }
            }
            return;
        }
        self.key(key);
        self.buf.extend_from_slice(raw.as_bytes());
    }

    fn shadow(&mut self, key: &str, value: Value) {
        self.shadowed.insert(key.to_owned(), value);
    }

    pub(crate) fn finish(mut self, name: &str) -> Result<Vec<u8>, ProviderError> {
        if let Some(params) = self.params {
            let mut shadowed = std::mem::take(&mut self.shadowed);
            for (k, v) in params {
                self.key_owned(k);
                let written = match shadowed.remove(k) {
                    Some(ours) => serde_json::to_writer(&mut self.buf, &merge_param(k, ours, v)),
                    None => serde_json::to_writer(&mut self.buf, v),
                };
                if let Err(e) = written {
                    self.error.get_or_insert(e);
                }
            }
        }
        if let Some(e) = self.error {
            return Err(request_error(
                name,
                format!("the request body cannot be written: {e}"),
            ));
        }
        self.buf.push(b'}');
        Ok(self.buf)
    }

    fn key_owned(&mut self, key: &str) {
        if !self.first {
            self.buf.push(b',');
        }
        self.first = false;
        if let Err(e) = serde_json::to_writer(&mut self.buf, key) {
            self.error.get_or_insert(e);
        }
        self.buf.push(b':');
    }
}

/// A tool's definition in one dialect, built the first time a request needs it and reused by
/// every later one ([`ToolSpec::cached_definition`] under `key`): the entries `build` writes,
/// then the tool's provider options for `options_key` over them. A definition `build` refuses
/// (with the reason) is a request error naming the tool.
pub(crate) fn definition(
    protocol: &str,
    spec: &ToolSpec,
    key: &'static str,
    options_key: &str,
    build: impl FnOnce(&ToolSpec, &mut Map<String, Value>) -> Result<(), String>,
) -> Result<Arc<RawValue>, ProviderError> {
    enum Refused {
        Build(String),
        Json(serde_json::Error),
    }
    let built = spec.cached_definition(key, |spec| {
        let mut entry = Map::new();
        build(spec, &mut entry).map_err(Refused::Build)?;
        if let Some(Value::Object(extra)) = spec.provider_options(options_key) {
            for (k, v) in extra {
                entry.insert(k.clone(), v.clone());
            }
        }
        serde_json::value::to_raw_value(&entry).map_err(Refused::Json)
    });
    built.map_err(|refused| {
        let tool = spec.joined_name();
        let message = match refused {
            Refused::Build(why) => format!("the definition of `{tool}`: {why}"),
            Refused::Json(e) => format!("the definition of `{tool}` cannot be written: {e}"),
        };
        request_error(protocol, message)
    })
}

/// A tool's schema in a dialect with a strict mode: the strict form and `true` when `strict`
/// asks for it and the schema allows it, else the plain form and `false`.
pub(crate) fn strict_or_plain(
    strict: bool,
    neutral: &Value,
    strict_form: fn(&Value) -> Result<StrictSchema, Vec<SchemaNote>>,
    plain_form: fn(&Value) -> Value,
) -> (Value, bool) {
    match strict.then(|| strict_form(neutral).ok()).flatten() {
        Some(s) => (s.schema, true),
        None => (plain_form(neutral), false),
    }
}

/// JSON texts as one JSON array, appended to `out`.
pub(crate) fn push_raw_array<'r>(out: &mut String, items: impl IntoIterator<Item = &'r str>) {
    out.push('[');
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(item);
    }
    out.push(']');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_override_the_written_keys() {
        let mut params = Map::new();
        params.insert("temperature".into(), Value::from(0.2));
        params.insert("model".into(), Value::from("other"));
        let mut w = BodyWriter::new(64, Some(&params));
        w.field("model", "m");
        w.field("stream", &false);
        w.raw_array("tools", [r#"{"a":1}"#, "2"]);
        let body: Value = serde_json::from_slice(&w.finish("t").unwrap()).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"stream": false, "tools": [{"a":1}, 2], "temperature": 0.2, "model": "other"})
        );
    }

    #[test]
    fn params_merge_into_objects_and_extend_the_tools() {
        let params = serde_json::json!({
            "text": {"verbosity": "low", "format": {"strict": false}},
            "tools": [{"type": "web_search"}],
            "include": ["x"]
        });
        let params = params.as_object().unwrap();
        let mut w = BodyWriter::new(64, Some(params));
        w.raw(
            "text",
            r#"{"format":{"type":"json_schema","name":"p","strict":true}}"#,
        );
        w.raw_array("tools", [r#"{"type":"function","name":"f"}"#]);
        w.field("include", &["reasoning.encrypted_content"]);
        let body: Value = serde_json::from_slice(&w.finish("t").unwrap()).unwrap();
        assert_eq!(
            body,
            serde_json::json!({
                "text": {"format": {"type": "json_schema", "name": "p", "strict": false}, "verbosity": "low"},
                "tools": [{"type": "function", "name": "f"}, {"type": "web_search"}],
                "include": ["x"]
            })
        );
    }
}
