//! Writing request bodies: a JSON object written key by key around the chat's raw params, and
//! tool definitions built once per dialect and reused by every request.

use std::sync::Arc;

use llm_tools_core::{Message, Part, ProviderError, Request, ToolSpec};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::answers::request_error;
use crate::schema::{ConversionError, SchemaBudget, SchemaTooLarge, StrictSchema};

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

    /// A writer for `request`'s body, with room for its transcript ([`transcript_len`]) and
    /// `tools_bytes` of tool definitions, merging the request's raw params.
    pub(crate) fn for_request(request: &Request<'p>, tools_bytes: usize) -> Self {
        Self::new(
            4096 + transcript_len(request.messages) + tools_bytes,
            request.params,
        )
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

/// Why a tool's definition was not built: a schema the dialect cannot express (the request
/// fails, naming the tool), or one past the schema budget (the tool is left out).
pub(crate) enum Refusal {
    /// What the dialect rejects.
    Rejected(String),
    /// The budget passed.
    TooLarge(SchemaTooLarge),
}

impl From<SchemaTooLarge> for Refusal {
    fn from(e: SchemaTooLarge) -> Self {
        Refusal::TooLarge(e)
    }
}

/// Where a protocol puts the provider options a tool keeps for it
/// ([`ToolSpec::provider_options`] under the protocol's id), and which fields it refuses.
pub(crate) enum ToolOptions {
    /// The protocol's tool definitions have no field a tool could add: options under `key` are a
    /// request error naming the tool (never dropped unseen).
    Refused {
        /// The protocol's id, the key the options are kept under.
        key: &'static str,
        /// Why, for the error (`"Cohere's tool definitions have no per-tool fields"`).
        why: &'static str,
    },
    /// The options' fields are written into the definition: into the entry itself, or into
    /// the object under `into` (Bedrock's `toolSpec`). A field in `own` is one the library writes
    /// from the tool and the chat's settings (name, description, schema, `strict`, …): options
    /// naming one are a request error naming the tool and the field (never a silent overwrite).
    Merged {
        /// The protocol's id, the key the options are kept under.
        key: &'static str,
        /// The object of the entry the fields go in; `None`: the entry itself.
        into: Option<&'static str>,
        /// The fields the library writes, which options may not set.
        own: &'static [&'static str],
        /// The fields the protocol writes elsewhere than `into` (Bedrock's `cachePoint`, an
        /// entry of its own after the tool's): left out here.
        apart: &'static [&'static str],
    },
}

impl ToolOptions {
    /// The protocol's id, under which a tool keeps its options for it.
    fn key(&self) -> &'static str {
        match self {
            ToolOptions::Refused { key, .. } | ToolOptions::Merged { key, .. } => key,
        }
    }

    /// Writes the tool's options into `entry`, or says why they cannot be sent.
    fn apply(&self, spec: &ToolSpec, entry: &mut Map<String, Value>) -> Result<(), String> {
        let key = self.key();
        let Some(options) = spec.provider_options(key) else {
            return Ok(());
        };
        let (into, own, apart) = match self {
            ToolOptions::Refused { why, .. } => {
                return Err(format!(
                    "it has provider options for `{key}`, and {why}: remove them (options kept for other protocols are not sent here)"
                ));
            }
            ToolOptions::Merged {
                into, own, apart, ..
            } => (*into, *own, *apart),
        };
        let Value::Object(fields) = options else {
            return Err(format!(
                "its provider options for `{key}` are {}, not a JSON object of definition fields (`{{\"field\": value}}`)",
                kind_of(options)
            ));
        };
        if let Some(field) = fields.keys().find(|f| own.contains(&f.as_str())) {
            return Err(format!(
                "its provider options for `{key}` set `{field}`, which the library writes for every tool{}: remove `{field}` from the options",
                own_hint(field)
            ));
        }
        let target = match into {
            None => entry,
            Some(into) => match entry.get_mut(into) {
                Some(Value::Object(inner)) => inner,
                _ => {
                    return Err(format!(
                        "its provider options for `{key}` go in `{into}`, which the definition does not have"
                    ));
                }
            },
        };
        for (k, v) in fields {
            if !apart.contains(&k.as_str()) {
                target.insert(k.clone(), v.clone());
            }
        }
        Ok(())
    }
}

/// What sets a field the library writes, when the library has a setting for it.
fn own_hint(field: &str) -> &'static str {
    match field {
        "strict" => " (from the provider's strict setting and the schema)",
        "defer_loading" => " (from the tool's `defer`, when tool search is on)",
        "name" => " (the tool's name)",
        "description" => " (the tool's description)",
        "type" => " (the kind of entry)",
        _ => " (from the tool's schema)",
    }
}

/// A JSON value's kind, for messages.
fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "`null`",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A tool's definition in one dialect: the entries `build` writes (from the tool's schema,
/// within `budget`), then the tool's provider options for this protocol (`options`: merged
/// where the protocol has per-tool fields, refused where it has none or where they would
/// overwrite a field the library writes). Under the default budget it is built the first time
/// a request needs it and reused by every later one ([`ToolSpec::cached_definition`] under
/// `key`: the same for every provider with that budget); under another budget it is built for
/// each request (so a definition one provider's larger budget let through never reaches a
/// provider whose budget refuses it). A definition `build` rejects (with the reason), or whose
/// options cannot be sent, is a request error naming the tool; one whose schema is past the
/// budget is `None`: the tool is left out of this request, with a warning naming the tool and
/// the limit, and the chat's other tools still go out — unless the request forces that tool
/// (`forced`), which is then a request error saying why.
pub(crate) fn definition(
    protocol: &str,
    spec: &ToolSpec,
    key: &'static str,
    options: &ToolOptions,
    budget: &SchemaBudget,
    forced: bool,
    build: impl FnOnce(&ToolSpec, &SchemaBudget, &mut Map<String, Value>) -> Result<(), Refusal>,
) -> Result<Option<Arc<RawValue>>, ProviderError> {
    enum Refused {
        Build(Refusal),
        Json(serde_json::Error),
    }
    let write = |spec: &ToolSpec| {
        let mut entry = Map::new();
        build(spec, budget, &mut entry).map_err(Refused::Build)?;
        options
            .apply(spec, &mut entry)
            .map_err(|why| Refused::Build(Refusal::Rejected(why)))?;
        serde_json::value::to_raw_value(&entry).map_err(Refused::Json)
    };
    let built = if *budget == SchemaBudget::default() {
        spec.cached_definition(key, write)
    } else {
        write(spec).map(Arc::from)
    };
    let tool = spec.joined_name();
    match built {
        Ok(definition) => Ok(Some(definition)),
        Err(Refused::Build(Refusal::TooLarge(e))) if forced => Err(request_error(
            protocol,
            format!(
                "the tool choice forces `{tool}`, which cannot be sent: {}",
                e.with_tool(tool)
            ),
        )),
        Err(Refused::Build(Refusal::TooLarge(e))) => {
            let e = e.with_tool(tool);
            tracing::warn!(
                target: "llm_tools::request",
                provider = protocol,
                tool,
                limit = e.limit.name(),
                max = e.max,
                "{e}; the tool is left out of the request"
            );
            Ok(None)
        }
        Err(Refused::Build(Refusal::Rejected(why))) => Err(request_error(
            protocol,
            format!("the definition of `{tool}`: {why}"),
        )),
        Err(Refused::Json(e)) => Err(request_error(
            protocol,
            format!("the definition of `{tool}` cannot be written: {e}"),
        )),
    }
}

/// Writes a tool's entry in the `{"type":"function","function":{…}}` form (a `definition`'s
/// `build`): its joined name, its description when it has one, and `parameters`.
pub(crate) fn function_entry(entry: &mut Map<String, Value>, spec: &ToolSpec, parameters: Value) {
    let mut function = Map::new();
    function.insert("name".into(), Value::from(spec.joined_name()));
    if !spec.description().is_empty() {
        function.insert("description".into(), Value::from(spec.description()));
    }
    function.insert("parameters".into(), parameters);
    entry.insert("type".into(), Value::from("function"));
    entry.insert("function".into(), Value::Object(function));
}

/// A tool's schema in a dialect with a strict mode: the strict form and `true` when `strict`
/// asks for it and the schema allows it (within the budget), else the plain form and `false`;
/// an error when the plain form is past the budget too.
pub(crate) fn strict_or_plain(
    strict: bool,
    neutral: &Value,
    budget: &SchemaBudget,
    strict_form: fn(&Value, &SchemaBudget) -> Result<StrictSchema, ConversionError>,
    plain_form: fn(&Value, &SchemaBudget) -> Result<Value, SchemaTooLarge>,
) -> Result<(Value, bool), SchemaTooLarge> {
    if strict {
        match strict_form(neutral, budget) {
            Ok(s) => return Ok((s.schema, true)),
            Err(ConversionError::TooLarge(e)) => tracing::debug!(
                target: "llm_tools::request",
                error = %e,
                "the strict form of a schema is past the budget; sending it without `strict`"
            ),
            Err(ConversionError::Unsupported(_)) => {}
        }
    }
    Ok((plain_form(neutral, budget)?, false))
}

/// About how many bytes a body spends on `messages`: their texts, their calls' ids, names and
/// arguments, and some room per message and call for the keys around them. A body sized with
/// it is written without growing (and copying) its buffer again and again as a long
/// transcript's messages go in; attachments and escapes may still grow it once or twice.
fn transcript_len(messages: &[Message]) -> usize {
    const PER_ITEM: usize = 64;
    messages
        .iter()
        .map(|m| {
            let texts: usize = m
                .content
                .iter()
                .filter_map(Part::as_text)
                .map(str::len)
                .sum();
            let calls: usize = m
                .tool_calls
                .iter()
                .map(|c| PER_ITEM + c.id.len() + c.name.len() + c.arguments.len())
                .sum();
            PER_ITEM + texts + calls + m.tool_call_id.as_ref().map_or(0, String::len)
        })
        .sum()
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

    /// One definition whose six properties each refer back to it with a description beside
    /// the `$ref`: 6^8 copies once strict mode inlines it, 400 bytes as it is.
    fn refers_back() -> Value {
        let properties: Map<String, Value> = (0..6)
            .map(|i| {
                (
                    format!("p{i}"),
                    serde_json::json!({"$ref": "#/$defs/D", "description": "d"}),
                )
            })
            .collect();
        serde_json::json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/D", "description": "x"}},
               "$defs": {"D": {"type": "object", "properties": properties}}})
    }

    #[test]
    #[cfg(feature = "openai")]
    fn a_strict_form_past_the_budget_goes_without_strict() {
        let budget = SchemaBudget::default();
        let neutral = refers_back();
        let strict = crate::schema::openai::strict(&neutral, &budget).unwrap_err();
        assert!(strict.too_large().is_some(), "{strict}");
        let (sent, is_strict) = strict_or_plain(
            true,
            &neutral,
            &budget,
            crate::schema::openai::strict,
            crate::schema::openai::non_strict,
        )
        .unwrap();
        assert!(!is_strict);
        assert_eq!(sent, neutral);
        let tight = budget.with_max_nodes(5);
        let refused = strict_or_plain(
            true,
            &neutral,
            &tight,
            crate::schema::openai::strict,
            crate::schema::openai::non_strict,
        )
        .unwrap_err();
        assert_eq!(refused.max, 5);
    }
}
