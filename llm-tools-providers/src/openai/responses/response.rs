//! Reading a whole answer of the Responses API.

use crate::protocol::NameMap;
use crate::wire::{self, decode_error};
use base64::Engine as _;
use llm_tools_core::{
    Attachment, Citation, Message, Part, ProviderData, ProviderError, Response, ServerToolUse,
    ToolCall, Usage,
};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::borrow::Cow;

use super::request::*;

/// A response object, whole or from a stream's terminal event.
#[derive(Deserialize, Default)]
pub(crate) struct ResponseIn {
    #[serde(default)]
    pub(super) status: Option<String>,
    #[serde(default)]
    pub(super) model: Option<String>,
    #[serde(default)]
    pub(super) output: Option<Vec<ItemIn>>,
    #[serde(default, deserialize_with = "wire::lenient_object")]
    pub(super) usage: Option<UsageIn>,
    #[serde(default)]
    pub(super) incomplete_details: Option<IncompleteIn>,
    #[serde(default)]
    pub(super) error: Option<Value>,
}

#[derive(Deserialize, Default)]
pub(super) struct IncompleteIn {
    #[serde(default)]
    pub(super) reason: Option<String>,
}

/// Every part read leniently (a count that is not a whole non-negative number is 0, a part of
/// another shape none): usage never costs the answer, read in one pass.
#[derive(Deserialize, Default, Clone, Copy)]
pub(super) struct UsageIn {
    #[serde(default, deserialize_with = "wire::count")]
    pub(super) input_tokens: u64,
    #[serde(default, deserialize_with = "wire::count")]
    pub(super) output_tokens: u64,
    #[serde(default, deserialize_with = "wire::lenient_object")]
    pub(super) input_tokens_details: Option<CachedIn>,
    #[serde(default, deserialize_with = "wire::lenient_object")]
    pub(super) output_tokens_details: Option<ReasoningIn>,
    /// xAI's count of the provider tools it ran.
    #[serde(default, deserialize_with = "wire::count_opt")]
    pub(super) num_server_side_tools_used: Option<u64>,
}

#[derive(Deserialize, Default, Clone, Copy)]
pub(super) struct CachedIn {
    #[serde(default, deserialize_with = "wire::count")]
    pub(super) cached_tokens: u64,
}

#[derive(Deserialize, Default, Clone, Copy)]
pub(super) struct ReasoningIn {
    #[serde(default, deserialize_with = "wire::count")]
    pub(super) reasoning_tokens: u64,
}

impl UsageIn {
    pub(super) fn usage(self) -> Usage {
        let mut u = Usage::new(self.input_tokens, self.output_tokens);
        u.cached_input_tokens = self.input_tokens_details.map_or(0, |d| d.cached_tokens);
        u.reasoning_tokens = self.output_tokens_details.map_or(0, |d| d.reasoning_tokens);
        u.server_tool_requests = self.num_server_side_tools_used.unwrap_or(0);
        u
    }
}

/// One output item: a message, a function call, reasoning (kept whole for sending back), or
/// a kind this crate does not read (a provider tool's call, say), kept whole in `other`.
pub(crate) struct ItemIn {
    pub(super) kind: String,
    pub(super) id: Option<String>,
    pub(super) call_id: Option<String>,
    pub(super) name: Option<String>,
    pub(super) namespace: Option<String>,
    pub(super) arguments: Option<String>,
    pub(super) content: Option<Vec<Value>>,
    pub(super) summary: Option<Value>,
    pub(super) encrypted_content: Option<String>,
    /// A message's `phase` (`commentary` or `final_answer`), which goes back with it.
    pub(super) phase: Option<String>,
    pub(super) other: Option<Value>,
}

impl<'de> Deserialize<'de> for ItemIn {
    /// One pass over the item: the fields this crate reads go straight into their types, any
    /// other field into a map that is kept (with the read ones put back) only for a kind this
    /// crate does not read.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> serde::de::Visitor<'de> for Fields {
            type Value = ItemIn;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an output item object")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<ItemIn, A::Error> {
                let mut item = ItemIn {
                    kind: String::new(),
                    id: None,
                    call_id: None,
                    name: None,
                    namespace: None,
                    arguments: None,
                    content: None,
                    summary: None,
                    encrypted_content: None,
                    phase: None,
                    other: None,
                };
                let mut rest = Map::new();
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    if is_read(&item.kind) {
                        // The kind came first (as providers write it): straight into types.
                        match key.as_ref() {
                            "id" => item.id = map.next_value()?,
                            "call_id" => item.call_id = map.next_value()?,
                            "name" => item.name = map.next_value()?,
                            "namespace" => item.namespace = map.next_value()?,
                            "arguments" => item.arguments = map.next_value()?,
                            "encrypted_content" => item.encrypted_content = map.next_value()?,
                            "content" => item.content = map.next_value()?,
                            "summary" => item.summary = map.next_value()?,
                            // Only a string means anything; another value is let go.
                            "phase" => {
                                item.phase = map.next_value::<Value>()?.as_str().map(str::to_owned);
                            }
                            _ => {
                                map.next_value::<serde::de::IgnoredAny>()?;
                            }
                        }
                        continue;
                    }
                    let value: Value = map.next_value()?;
                    // A field of the expected shape is read; anything else stays as it came.
                    let slot = match (key.as_ref(), value) {
                        ("type", Value::String(v)) => {
                            item.kind = v;
                            continue;
                        }
                        ("id", Value::String(v)) => (&mut item.id, v),
                        ("call_id", Value::String(v)) => (&mut item.call_id, v),
                        ("name", Value::String(v)) => (&mut item.name, v),
                        ("namespace", Value::String(v)) => (&mut item.namespace, v),
                        ("arguments", Value::String(v)) => (&mut item.arguments, v),
                        ("encrypted_content", Value::String(v)) => (&mut item.encrypted_content, v),
                        ("phase", Value::String(v)) => (&mut item.phase, v),
                        ("content", Value::Array(parts)) => {
                            item.content = Some(parts);
                            continue;
                        }
                        ("summary", v) if !v.is_null() => {
                            item.summary = Some(v);
                            continue;
                        }
                        (_, v) => {
                            rest.insert(key.into_owned(), v);
                            continue;
                        }
                    };
                    *slot.0 = Some(slot.1);
                }
                if !is_read(&item.kind) {
                    item.keep_whole(rest);
                }
                Ok(item)
            }
        }
        d.deserialize_map(Fields)
    }
}

/// The item kinds this crate reads into fields.
pub(super) fn is_read(kind: &str) -> bool {
    matches!(kind, "message" | "function_call" | "reasoning")
}

impl ItemIn {
    /// Keeps an item of a kind this crate does not read whole: its other fields, and the
    /// read ones put back.
    pub(super) fn keep_whole(&mut self, mut rest: Map<String, Value>) {
        let mut put = |key: &str, value: Option<Value>| {
            if let Some(v) = value {
                rest.insert(key.to_owned(), v);
            }
        };
        put("type", Some(Value::String(self.kind.clone())));
        put("id", self.id.clone().map(Value::String));
        put("call_id", self.call_id.take().map(Value::String));
        put("name", self.name.take().map(Value::String));
        put("namespace", self.namespace.take().map(Value::String));
        put("arguments", self.arguments.take().map(Value::String));
        put("content", self.content.take().map(Value::Array));
        put("summary", self.summary.take());
        put("phase", self.phase.take().map(Value::String));
        put(
            "encrypted_content",
            self.encrypted_content.take().map(Value::String),
        );
        self.other = Some(Value::Object(rest));
    }
}

/// What a provider tool's output item says it did: `web_search_call` (its action),
/// `code_interpreter_call` (its code, and its `outputs` when included), `file_search_call`
/// (its queries), or any other
/// `…_call` as it came.
pub(super) fn server_tool_use(kind: &str, item: &Value) -> Option<ServerToolUse> {
    let name = kind.strip_suffix("_call")?;
    if name == "function" || name == "custom_tool" {
        return None;
    }
    let input = match name {
        // A remote MCP server's tool: which server, which tool, with what.
        "mcp" => {
            let field = |k: &str| item.get(k).cloned().unwrap_or(Value::Null);
            let arguments = match item.get("arguments").and_then(Value::as_str) {
                // JSON inside a string, which the answer's count saw as one value: counted here.
                Some(text) if llm_tools_core::json_values::too_many_values(text).is_none() => {
                    serde_json::from_str(text).unwrap_or_else(|_| field("arguments"))
                }
                Some(_) => field("arguments"),
                None => field("arguments"),
            };
            Some(
                serde_json::json!({"server": field("server_label"), "tool": field("name"), "arguments": arguments}),
            )
        }
        "web_search" => item.get("action").cloned(),
        "code_interpreter" => item.get("code").cloned(),
        "file_search" => item.get("queries").cloned(),
        "image_generation" => item.get("revised_prompt").cloned(),
        _ => item
            .get("arguments")
            .or_else(|| item.get("action"))
            .cloned(),
    };
    let id = item.get("id").and_then(Value::as_str).map(str::to_owned);
    let used = ServerToolUse::new(id, name, input.unwrap_or(Value::Null));
    // A code run's logs and images, where the request included them
    // (`code_interpreter_call.outputs`).
    Some(match item.get("outputs").filter(|o| !o.is_null()) {
        Some(outputs) if name == "code_interpreter" => used.with_output(outputs.clone()),
        _ => used,
    })
}

/// The image an `image_generation_call` made, as an image part; its base64 `result` leaves
/// the kept item (which goes back with it refilled from the part, see
/// `request::image_item`), so a saved chat holds the image once. An item whose result is not
/// base64 is kept as it came.
pub(super) fn take_image(item: &mut Value) -> Option<Part> {
    let Value::Object(fields) = item else {
        return None;
    };
    let bytes = fields
        .get("result")
        .and_then(Value::as_str)
        .and_then(|b64| base64::engine::general_purpose::STANDARD.decode(b64).ok())?;
    fields.remove("result");
    let format = fields
        .get("output_format")
        .and_then(Value::as_str)
        .unwrap_or("png");
    let media_type = match format {
        "jpeg" | "jpg" => "image/jpeg",
        "webp" => "image/webp",
        _ => "image/png",
    };
    let mut image = Attachment::bytes(media_type, bytes);
    if let Some(id) = fields.get("id").and_then(Value::as_str) {
        image = image.with_filename(format!("{id}.{format}"));
    }
    Some(Part::Attachment(image))
}

/// The URL citations of an `output_text` part (`annotations` of type `url_citation`).
pub(super) fn url_citations(part: &Value, out: &mut Vec<Citation>) {
    for a in part
        .get("annotations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if a.get("type").and_then(Value::as_str) != Some("url_citation") {
            continue;
        }
        let Some(url) = a.get("url").and_then(Value::as_str) else {
            continue;
        };
        let title = a.get("title").and_then(Value::as_str).map(str::to_owned);
        out.push(Citation::url(url).with_title(title));
    }
}

/// Builds the assistant message from output items: one text part per `message` item with
/// text, in order (`Message::text` joins them as OpenAI's SDKs join `output_text`). Each call
/// is charged as a stream's is (`wire::KeptValues`), before it is built: past the limit, its
/// error.
pub(super) fn message_from_items(
    name: &str,
    items: Vec<ItemIn>,
    names: &NameMap,
    usage: Option<Usage>,
) -> Result<Message, ProviderError> {
    let mut charged = wire::KeptValues::whole_answer();
    let mut texts = Vec::new();
    let mut refusal = String::new();
    let mut calls = Vec::new();
    let mut skeleton = Vec::new();
    let mut reasoning = false;
    let mut server_tool_uses = Vec::new();
    let mut citations = Vec::new();
    let mut images = Vec::new();
    for item in items {
        match item.kind.as_str() {
            "reasoning" => {
                reasoning = true;
                let mut kept = Map::new();
                kept.insert("type".into(), Value::from("reasoning"));
                // The id goes back with the item when responses are stored (see
                // `request::reasoning`).
                if let Some(id) = item.id.filter(|id| !id.is_empty()) {
                    kept.insert("id".into(), Value::String(id));
                }
                kept.insert(
                    "summary".into(),
                    item.summary.unwrap_or_else(|| Value::Array(Vec::new())),
                );
                if let Some(content) = item.content.filter(|c| !c.is_empty()) {
                    kept.insert("content".into(), Value::Array(content));
                }
                if let Some(enc) = item.encrypted_content {
                    kept.insert("encrypted_content".into(), Value::String(enc));
                }
                skeleton.push(Value::Object(kept));
            }
            "message" => {
                let mut item_text = String::new();
                for part in item.content.iter().flatten() {
                    let field = |k: &str| part.get(k).and_then(Value::as_str).unwrap_or_default();
                    match field("type") {
                        "output_text" => {
                            item_text.push_str(field("text"));
                            url_citations(part, &mut citations);
                        }
                        "refusal" => refusal.push_str(field("refusal")),
                        _ => {}
                    }
                }
                // Each message item goes back at its place with its own text (see
                // `request::assistant_items`): its id when responses are stored, its phase.
                let mut kept = Map::new();
                kept.insert("type".into(), Value::from("message"));
                if let Some(id) = item.id.filter(|id| !id.is_empty()) {
                    kept.insert("id".into(), Value::String(id));
                }
                if let Some(phase) = item.phase.filter(|p| !p.is_empty()) {
                    kept.insert("phase".into(), Value::String(phase));
                }
                if item_text.is_empty() {
                    kept.insert(TEXT_PARTS.into(), Value::from(0));
                } else {
                    texts.push(Part::text(item_text));
                }
                skeleton.push(Value::Object(kept));
            }
            "function_call" => {
                charged.keep_call(name)?;
                let id = item
                    .call_id
                    .filter(|i| !i.is_empty())
                    .unwrap_or_else(wire::fresh_call_id);
                let wire_name = item.name.unwrap_or_default();
                let (name, namespace) = match item.namespace {
                    Some(ns) => (wire_name, Some(ns)),
                    None => names.resolve(wire_name),
                };
                let arguments = item
                    .arguments
                    .filter(|a| !a.trim().is_empty())
                    .unwrap_or_else(|| "{}".to_owned());
                skeleton.push(json!({"type": "function_call", "call_id": id}));
                let mut call = ToolCall::new(id, name, arguments).with_namespace(namespace);
                call.provider_data = item.id.map(|item_id| json!({ "id": item_id }));
                calls.push(call);
            }
            "" => {
                // An item without a type cannot be sent back (every later request would be
                // refused for it): left out.
                tracing::warn!(target: "llm_tools::provider", "an output item without a type is left out");
            }
            kind => {
                // A provider tool's item (or a kind this crate does not know): kept whole, in
                // order, and sent back so the conversation continues.
                if let Some(mut other) = item.other {
                    if kind == "image_generation_call" {
                        images.extend(take_image(&mut other));
                    }
                    server_tool_uses.extend(server_tool_use(kind, &other));
                    reasoning = true;
                    skeleton.push(other);
                }
            }
        }
    }
    let mut message = Message::assistant_with_calls(String::new(), calls);
    message.content = texts;
    message.content.extend(images);
    message.refusal = (!refusal.is_empty()).then_some(refusal);
    message.usage = usage;
    if let Some(usage) = message.usage.as_mut()
        && usage.server_tool_requests == 0
    {
        usage.server_tool_requests = u64::try_from(server_tool_uses.len()).unwrap_or(u64::MAX);
    }
    message.server_tool_uses = server_tool_uses;
    message.citations = citations;
    if reasoning {
        message.provider_data = Some(ProviderData::new(PROTOCOL, json!({ "output": skeleton })));
    }
    Ok(message)
}

/// Reads a response object (whole, or from `response.completed`).
pub(super) fn from_response_object(
    name: &str,
    response: ResponseIn,
    names: &NameMap,
    request_id: Option<String>,
) -> Result<Response, ProviderError> {
    if response.status.as_deref() == Some("failed") {
        let error = response.error.as_ref().unwrap_or(&Value::Null);
        return Err(crate::openai::errors::reported(
            name,
            error,
            "the response failed",
        ));
    }
    let usage = response.usage.map(UsageIn::usage);
    let message = message_from_items(name, response.output.unwrap_or_default(), names, usage)?;
    let finish = match (
        response.status,
        response.incomplete_details.and_then(|d| d.reason),
    ) {
        (Some(s), Some(reason)) => Some(format!("{s}: {reason}")),
        (status, _) => status,
    };
    Ok(Response::new(message)
        .with_finish_reason(finish)
        .with_request_id(request_id)
        .with_model(response.model))
}

/// Reads a whole (non-streamed) answer.
pub(crate) fn parse(
    name: &str,
    body: &[u8],
    names: &NameMap,
    request_id: Option<String>,
) -> Result<Response, ProviderError> {
    let response: ResponseIn = wire::parse_body(name, body)?;
    if response.output.is_none() {
        if let Some(error) = response.error.as_ref().filter(|e| !e.is_null()) {
            return Err(crate::openai::errors::reported(name, error, wire::REPORTED));
        }
        return Err(decode_error(name, "the response has no `output`"));
    }
    from_response_object(name, response, names, request_id)
}
