//! The Responses API (`POST /responses`): OpenAI's default, and xAI's.

use std::borrow::Cow;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use llm_tools_core::{
    Citation, Message, Part, ProviderData, ProviderError, Request, Response, Role, ServerToolUse,
    StreamEvent, Tool, ToolCall, ToolChoice, ToolSpec, Usage,
};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::config::OpenAiConfig;
use super::wire::{
    self, Assembler, BodyWriter, CallsInOrder, NameMap, attachment_as_text, attachment_url,
    decode_error, request_error, stream_error,
};
use crate::framing::Frame;
use crate::schema;

/// The protocol name, also the key of the provider data it reads back.
pub(crate) const PROTOCOL: &str = "openai-responses";

/// Namespace names the Responses API reserves for its own tools.
const RESERVED_NAMESPACES: &[&str] = &["computer", "browser"];

/// The definition of one function tool (its own name: a namespaced tool sits inside its
/// namespace group), serialized once per dialect. `strict` is always sent.
pub(crate) fn definition(
    spec: &ToolSpec,
    strict: bool,
    deferred: bool,
) -> Result<Arc<RawValue>, ProviderError> {
    let key = match (strict, deferred) {
        (true, false) => "openai-responses/strict",
        (false, false) => "openai-responses/plain",
        (true, true) => "openai-responses/strict/deferred",
        (false, true) => "openai-responses/plain/deferred",
    };
    wire::definition(PROTOCOL, spec, key, "openai", |spec, tool| {
        let (parameters, strict) = wire::strict_or_plain(
            strict,
            spec.parameters(),
            schema::openai::strict,
            schema::openai::non_strict,
        );
        tool.insert("type".into(), Value::from("function"));
        tool.insert("name".into(), Value::from(spec.name()));
        tool.insert("description".into(), Value::from(spec.description()));
        tool.insert("parameters".into(), parameters);
        tool.insert("strict".into(), Value::Bool(strict));
        if deferred {
            tool.insert("defer_loading".into(), Value::Bool(true));
        }
        Ok(())
    })
}

/// The `tools` array: plain functions, and one namespace group per namespace (at the place of
/// its first tool), each function written from its cached definition.
fn tools_json(
    name: &str,
    tools: &[Arc<dyn Tool>],
    strict: bool,
    native_search: bool,
) -> Result<Vec<Cow<'static, str>>, ProviderError> {
    let mut out: Vec<Cow<'static, str>> = Vec::with_capacity(tools.len());
    let mut groups: Vec<(String, usize, Vec<Arc<RawValue>>)> = Vec::new();
    let mut slots: Vec<Option<usize>> = Vec::new();
    let mut plain: Vec<Arc<RawValue>> = Vec::new();
    for tool in tools {
        let spec = tool.spec();
        let def = definition(spec, strict, native_search && spec.defer())?;
        match spec.namespace() {
            None => {
                slots.push(None);
                plain.push(def);
            }
            Some(ns) => {
                if RESERVED_NAMESPACES.contains(&ns.name()) {
                    return Err(request_error(
                        name,
                        format!(
                            "the namespace `{}` (tool `{}`) is reserved by the Responses API; give the namespace another name",
                            ns.name(),
                            spec.joined_name()
                        ),
                    ));
                }
                if ns.get_description().is_none() {
                    return Err(request_error(
                        name,
                        format!(
                            "the namespace `{}` (tool `{}`) has no description, which the Responses API requires; add one with `Namespace::description`",
                            ns.name(),
                            spec.joined_name()
                        ),
                    ));
                }
                match groups.iter_mut().find(|(n, _, _)| n == ns.name()) {
                    Some((_, _, defs)) => defs.push(def),
                    None => {
                        slots.push(Some(groups.len()));
                        groups.push((ns.name().to_owned(), groups.len(), vec![def]));
                    }
                }
            }
        }
    }
    let mut plain = plain.into_iter();
    for slot in slots {
        match slot {
            None => {
                if let Some(def) = plain.next() {
                    out.push(Cow::Owned(def.get().to_owned()));
                }
            }
            Some(g) => {
                let (ns_name, _, defs) = &groups[g];
                let description = tools
                    .iter()
                    .filter_map(|t| t.spec().namespace())
                    .find(|n| n.name() == ns_name)
                    .and_then(|n| n.get_description())
                    .unwrap_or_default();
                let mut s =
                    String::with_capacity(64 + defs.iter().map(|d| d.get().len()).sum::<usize>());
                s.push_str(r#"{"type":"namespace","name":"#);
                s.push_str(&Value::from(ns_name.as_str()).to_string());
                s.push_str(r#","description":"#);
                s.push_str(&Value::from(description).to_string());
                s.push_str(r#","tools":"#);
                wire::push_raw_array(&mut s, defs.iter().map(|d| d.get()));
                s.push('}');
                out.push(Cow::Owned(s));
            }
        }
    }
    if native_search && tools.iter().any(|t| t.spec().defer()) {
        out.push(Cow::Borrowed(r#"{"type":"tool_search"}"#));
    }
    Ok(out)
}

#[derive(Serialize)]
#[serde(untagged)]
enum Content<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<PartOut<'a>>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum PartOut<'a> {
    InputText {
        text: Cow<'a, str>,
    },
    InputImage {
        image_url: String,
    },
    InputFile {
        #[serde(skip_serializing_if = "Option::is_none")]
        filename: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        file_data: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        file_url: Option<&'a str>,
    },
    OutputText {
        text: Cow<'a, str>,
    },
    Refusal {
        refusal: &'a str,
    },
}

#[derive(Serialize)]
#[serde(untagged)]
enum Item<'a> {
    Message {
        role: &'static str,
        content: Content<'a>,
    },
    Raw(&'a Value),
    Call {
        #[serde(rename = "type")]
        kind: &'static str,
        call_id: &'a str,
        name: &'a str,
        arguments: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        namespace: Option<&'a str>,
    },
    Output {
        #[serde(rename = "type")]
        kind: &'static str,
        call_id: &'a str,
        output: Content<'a>,
    },
}

fn part_out(part: &Part) -> PartOut<'_> {
    match part {
        Part::Text { text } => PartOut::InputText {
            text: Cow::Borrowed(text),
        },
        Part::Attachment(a) => {
            if a.is_image() {
                PartOut::InputImage {
                    image_url: attachment_url(a),
                }
            } else if let Some(text) = attachment_as_text(a) {
                PartOut::InputText {
                    text: Cow::Owned(text),
                }
            } else {
                match a.source() {
                    llm_tools_core::Source::Url(u) => PartOut::InputFile {
                        filename: a.filename(),
                        file_data: None,
                        file_url: Some(u),
                    },
                    _ => PartOut::InputFile {
                        filename: a.filename(),
                        file_data: Some(attachment_url(a)),
                        file_url: None,
                    },
                }
            }
        }
        _ => PartOut::InputText {
            text: Cow::Borrowed(""),
        },
    }
}

fn input_content(parts: &[Part]) -> Content<'_> {
    if parts.iter().all(|p| p.as_text().is_some()) {
        let text: Vec<&str> = parts.iter().filter_map(Part::as_text).collect();
        return Content::Text(if text.len() == 1 {
            Cow::Borrowed(text[0])
        } else {
            Cow::Owned(text.concat())
        });
    }
    Content::Parts(parts.iter().map(part_out).collect())
}

fn call_item(c: &ToolCall) -> Item<'_> {
    Item::Call {
        kind: "function_call",
        call_id: &c.id,
        name: &c.name,
        arguments: if c.arguments.trim().is_empty() {
            "{}"
        } else {
            &c.arguments
        },
        namespace: c.namespace.as_deref(),
    }
}

fn assistant_text(m: &Message) -> Option<Item<'_>> {
    let mut parts: Vec<PartOut<'_>> = m
        .content
        .iter()
        .filter_map(Part::as_text)
        .filter(|t| !t.is_empty())
        .map(|t| PartOut::OutputText {
            text: Cow::Borrowed(t),
        })
        .collect();
    if let Some(r) = &m.refusal {
        parts.push(PartOut::Refusal { refusal: r });
    }
    (!parts.is_empty()).then_some(Item::Message {
        role: "assistant",
        content: Content::Parts(parts),
    })
}

/// One assistant message as input items, in the order the model produced them: reasoning
/// items (encrypted content) first where the provider data has them, then text and calls.
fn assistant_items<'a>(m: &'a Message, out: &mut Vec<Item<'a>>) {
    let skeleton = wire::protocol_data(m, PROTOCOL, "output").and_then(Value::as_array);
    let mut text_done = false;
    let mut calls = CallsInOrder::new(&m.tool_calls);
    if let Some(items) = skeleton {
        for item in items {
            match item.get("type").and_then(Value::as_str) {
                Some("reasoning") => out.push(Item::Raw(item)),
                Some("message") => {
                    if !text_done {
                        text_done = true;
                        out.extend(assistant_text(m));
                    }
                }
                Some("function_call") => {
                    let id = item.get("call_id").and_then(Value::as_str);
                    out.extend(calls.take(id).map(call_item));
                }
                // A provider tool's item, sent back as it came.
                _ => out.push(Item::Raw(item)),
            }
        }
    }
    if !text_done {
        out.extend(assistant_text(m));
    }
    out.extend(calls.rest().map(call_item));
}

fn tool_output(m: &Message) -> Content<'_> {
    if m.content.iter().all(|p| p.as_text().is_some()) {
        let text: Vec<&str> = m.content.iter().filter_map(Part::as_text).collect();
        return Content::Text(Cow::Owned(text.join("\n")));
    }
    Content::Parts(m.content.iter().map(part_out).collect())
}

/// Writes the request body.
pub(crate) fn body(
    config: &OpenAiConfig,
    request: &Request<'_>,
    stream: bool,
) -> Result<Vec<u8>, ProviderError> {
    let name = config.name();
    let tools = request.tools;
    let definitions = tools_json(
        name,
        tools,
        config.strict_tools(),
        config.native_tool_search(),
    )?;
    let server_tools = wire::provider_tools::definitions(
        name,
        PROTOCOL,
        request.provider_tools,
        wire::provider_tools::responses,
    )?;

    let mut instructions: Vec<&str> = Vec::new();
    let mut leading = true;
    let mut input: Vec<Item<'_>> = Vec::with_capacity(request.messages.len() + 8);
    for m in request.messages {
        match m.role {
            Role::System if leading => {
                instructions.extend(m.content.iter().filter_map(Part::as_text));
                continue;
            }
            Role::System => input.push(Item::Message {
                role: "developer",
                content: input_content(&m.content),
            }),
            Role::User => input.push(Item::Message {
                role: "user",
                content: input_content(&m.content),
            }),
            Role::Assistant => assistant_items(m, &mut input),
            Role::Tool => input.push(Item::Output {
                kind: "function_call_output",
                call_id: m.tool_call_id.as_deref().unwrap_or_default(),
                output: tool_output(m),
            }),
            _ => {}
        }
        leading = false;
    }

    let mut w = BodyWriter::new(
        4096 + definitions.iter().map(|d| d.len()).sum::<usize>(),
        request.params,
    );
    w.field("model", &config.model);
    w.field("input", &input);
    if !instructions.is_empty() {
        w.field("instructions", &instructions.join("\n\n"));
    }
    if !definitions.is_empty() || !server_tools.is_empty() {
        w.raw_array(
            "tools",
            definitions
                .iter()
                .map(|d| d.as_ref())
                .chain(server_tools.iter().map(String::as_str)),
        );
        match request.choice {
            ToolChoice::Auto => {}
            ToolChoice::None => w.field("tool_choice", "none"),
            ToolChoice::Required => w.field("tool_choice", "required"),
            ToolChoice::Tool(joined) => {
                let Some(tool) = tools.iter().find(|t| t.spec().joined_name() == joined) else {
                    return Err(wire::unknown_forced_tool(name, joined));
                };
                if let Some(ns) = tool.spec().namespace() {
                    return Err(request_error(
                        name,
                        format!(
                            "`{joined}` is inside the Responses namespace `{}`, and the Responses API cannot force a namespaced tool; use `ToolChoice::Required` (with only the tools the model may pick) instead",
                            ns.name()
                        ),
                    ));
                }
                w.field(
                    "tool_choice",
                    &json!({"type": "function", "name": tool.spec().name()}),
                );
            }
            other => return Err(wire::unsupported_choice(name, other)),
        }
        if let Some(parallel) = request.parallel_tool_calls {
            w.field("parallel_tool_calls", &parallel);
        }
    }
    if let Some(output) = request.output {
        let field = wire::output::format(
            name,
            output,
            "openai-responses/text",
            wire::output::responses_text,
        )?;
        w.raw("text", field.get());
    }
    w.field("stream", &stream);
    w.field("store", &config.options.store);
    if !config.options.store {
        w.field("include", &["reasoning.encrypted_content"]);
    }
    w.finish(name)
}

// ---- answers ----------------------------------------------------------------------------

/// A response object, whole or from a stream's terminal event.
#[derive(Deserialize, Default)]
pub(crate) struct ResponseIn {
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    output: Option<Vec<ItemIn>>,
    #[serde(default)]
    usage: Option<UsageIn>,
    #[serde(default)]
    incomplete_details: Option<IncompleteIn>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize, Default)]
struct IncompleteIn {
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Deserialize, Default, Clone, Copy)]
struct UsageIn {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    input_tokens_details: Option<CachedIn>,
    #[serde(default)]
    output_tokens_details: Option<ReasoningIn>,
    /// xAI's count of the provider tools it ran.
    #[serde(default)]
    num_server_side_tools_used: Option<u64>,
}

#[derive(Deserialize, Default, Clone, Copy)]
struct CachedIn {
    #[serde(default)]
    cached_tokens: u64,
}

#[derive(Deserialize, Default, Clone, Copy)]
struct ReasoningIn {
    #[serde(default)]
    reasoning_tokens: u64,
}

impl UsageIn {
    fn usage(self) -> Usage {
        let mut u = Usage {
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            ..Usage::default()
        };
        u.cached_input_tokens = self.input_tokens_details.map_or(0, |d| d.cached_tokens);
        u.reasoning_tokens = self.output_tokens_details.map_or(0, |d| d.reasoning_tokens);
        u.server_tool_requests = self.num_server_side_tools_used.unwrap_or(0);
        u
    }
}

/// One output item: a message, a function call, reasoning (kept whole for sending back), or
/// a kind this crate does not read (a provider tool's call, say), kept whole in `other`.
pub(crate) struct ItemIn {
    kind: String,
    id: Option<String>,
    call_id: Option<String>,
    name: Option<String>,
    namespace: Option<String>,
    arguments: Option<String>,
    content: Option<Vec<Value>>,
    summary: Option<Value>,
    encrypted_content: Option<String>,
    other: Option<Value>,
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
fn is_read(kind: &str) -> bool {
    matches!(kind, "message" | "function_call" | "reasoning")
}

impl ItemIn {
    /// Keeps an item of a kind this crate does not read whole: its other fields, and the
    /// read ones put back.
    fn keep_whole(&mut self, mut rest: Map<String, Value>) {
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
        put(
            "encrypted_content",
            self.encrypted_content.take().map(Value::String),
        );
        self.other = Some(Value::Object(rest));
    }
}

/// What a provider tool's output item says it did: `web_search_call` (its action),
/// `code_interpreter_call` (its code), `file_search_call` (its queries), or any other
/// `…_call` as it came.
fn server_tool_use(kind: &str, item: &Value) -> Option<ServerToolUse> {
    let name = kind.strip_suffix("_call")?;
    if name == "function" || name == "custom_tool" {
        return None;
    }
    let input = match name {
        "web_search" => item.get("action").cloned(),
        "code_interpreter" => item.get("code").cloned(),
        "file_search" => item.get("queries").cloned(),
        _ => item
            .get("arguments")
            .or_else(|| item.get("action"))
            .cloned(),
    };
    let id = item.get("id").and_then(Value::as_str).map(str::to_owned);
    Some(ServerToolUse::new(id, name, input.unwrap_or(Value::Null)))
}

/// The URL citations of an `output_text` part (`annotations` of type `url_citation`).
fn url_citations(part: &Value, out: &mut Vec<Citation>) {
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

/// Builds the assistant message from output items.
fn message_from_items(items: Vec<ItemIn>, names: &NameMap, usage: Option<Usage>) -> Message {
    let mut text = String::new();
    let mut refusal = String::new();
    let mut calls = Vec::new();
    let mut skeleton = Vec::new();
    let mut reasoning = false;
    let mut server_tool_uses = Vec::new();
    let mut citations = Vec::new();
    for item in items {
        match item.kind.as_str() {
            "reasoning" => {
                reasoning = true;
                let mut kept = Map::new();
                kept.insert("type".into(), Value::from("reasoning"));
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
                for part in item.content.iter().flatten() {
                    let field = |k: &str| part.get(k).and_then(Value::as_str).unwrap_or_default();
                    match field("type") {
                        "output_text" => {
                            text.push_str(field("text"));
                            url_citations(part, &mut citations);
                        }
                        "refusal" => refusal.push_str(field("refusal")),
                        _ => {}
                    }
                }
                skeleton.push(json!({"type": "message"}));
            }
            "function_call" => {
                let id = item
                    .call_id
                    .filter(|i| !i.is_empty())
                    .unwrap_or_else(wire::fresh_call_id);
                let wire_name = item.name.unwrap_or_default();
                let (name, namespace) = match item.namespace {
                    Some(ns) => (wire_name, Some(ns)),
                    None => names.resolve(&wire_name),
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
            kind => {
                // A provider tool's item (or a kind this crate does not know): kept whole, in
                // order, and sent back so the conversation continues.
                if let Some(other) = item.other {
                    server_tool_uses.extend(server_tool_use(kind, &other));
                    reasoning = true;
                    skeleton.push(other);
                }
            }
        }
    }
    let mut message = Message::assistant_with_calls(text, calls);
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
    message
}

/// Reads a response object (whole, or from `response.completed`).
fn from_response_object(
    name: &str,
    response: ResponseIn,
    names: &NameMap,
    request_id: Option<String>,
) -> Result<Response, ProviderError> {
    if response.status.as_deref() == Some("failed") {
        let error = response.error.as_ref().unwrap_or(&Value::Null);
        return Err(wire::reported_error(name, error, "the response failed"));
    }
    let usage = response.usage.map(UsageIn::usage);
    let message = message_from_items(response.output.unwrap_or_default(), names, usage);
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
            return Err(wire::reported_error(name, error, wire::REPORTED));
        }
        return Err(decode_error(name, "the response has no `output`"));
    }
    from_response_object(name, response, names, request_id)
}

// ---- streaming --------------------------------------------------------------------------

#[derive(Deserialize)]
struct EventIn<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    item_id: Option<Cow<'a, str>>,
    #[serde(default)]
    output_index: Option<u64>,
    #[serde(default, borrow)]
    delta: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    arguments: Option<Cow<'a, str>>,
    #[serde(default)]
    item: Option<Box<ItemIn>>,
    #[serde(default)]
    response: Option<Box<ResponseIn>>,
    #[serde(default, borrow)]
    message: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    code: Option<Cow<'a, str>>,
}

struct CallState {
    item_id: String,
    arguments: String,
    ready: bool,
}

/// Reassembles a Responses stream: typed events, tool-call arguments by item id, the whole
/// answer from `response.completed`.
pub struct ResponsesAssembler {
    name: String,
    names: NameMap,
    request_id: Option<String>,
    calls: Vec<CallState>,
    items: BTreeMap<u64, ItemIn>,
    done: bool,
}

impl ResponsesAssembler {
    pub(crate) fn new(name: &str, names: NameMap, request_id: Option<String>) -> Self {
        Self {
            name: name.to_owned(),
            names,
            request_id,
            calls: Vec::new(),
            items: BTreeMap::new(),
            done: false,
        }
    }

    fn call_index(&self, item_id: Option<&str>) -> Option<usize> {
        let id = item_id?;
        self.calls.iter().position(|c| c.item_id == id)
    }

    fn ready(&mut self, index: usize, out: &mut VecDeque<StreamEvent>) {
        if let Some(c) = self.calls.get_mut(index)
            && !c.ready
        {
            c.ready = true;
            out.push_back(StreamEvent::ToolCallReady { index });
        }
    }
}

impl Assembler for ResponsesAssembler {
    fn feed(
        &mut self,
        event: &Frame<'_>,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let data = event.data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        let Some(e) = wire::read_event::<EventIn<'_>>(&self.name, data) else {
            return Ok(());
        };
        match e.kind.as_ref() {
            "response.output_text.delta" => {
                if let Some(d) = e.delta.filter(|d| !d.is_empty()) {
                    out.push_back(StreamEvent::TextDelta(d.into_owned()));
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                if let Some(d) = e.delta.filter(|d| !d.is_empty()) {
                    out.push_back(StreamEvent::ReasoningDelta(d.into_owned()));
                }
            }
            "response.output_item.added" => {
                let Some(item) = e.item else { return Ok(()) };
                if item.kind == "function_call" {
                    let wire_name = item.name.unwrap_or_default();
                    let (name, namespace) = match item.namespace {
                        Some(ns) => (wire_name, Some(ns)),
                        None => self.names.resolve(&wire_name),
                    };
                    self.calls.push(CallState {
                        item_id: item.id.unwrap_or_default(),
                        arguments: String::new(),
                        ready: false,
                    });
                    out.push_back(StreamEvent::ToolCallStarted {
                        index: self.calls.len() - 1,
                        id: item.call_id.unwrap_or_default(),
                        name,
                        namespace,
                    });
                }
            }
            "response.function_call_arguments.delta" => {
                if let (Some(i), Some(d)) = (self.call_index(e.item_id.as_deref()), e.delta)
                    && !d.is_empty()
                {
                    self.calls[i].arguments.push_str(&d);
                    out.push_back(StreamEvent::ToolCallDelta {
                        index: i,
                        fragment: d.into_owned(),
                    });
                }
            }
            "response.function_call_arguments.done" => {
                if let (Some(i), Some(a)) = (self.call_index(e.item_id.as_deref()), e.arguments) {
                    self.calls[i].arguments = a.into_owned();
                }
            }
            "response.output_item.done" => {
                let Some(item) = e.item else { return Ok(()) };
                if let Some(i) = self.call_index(item.id.as_deref()) {
                    self.ready(i, out);
                }
                let index = e.output_index.unwrap_or(self.items.len() as u64);
                self.items.insert(index, *item);
            }
            "response.completed" | "response.incomplete" | "response.failed" => {
                let mut response = e.response.map(|r| *r).unwrap_or_default();
                // The items as streamed (`output_item.done`) are the answer; the copy in the
                // final event is used only when the stream carried none.
                let streamed: Vec<ItemIn> = std::mem::take(&mut self.items).into_values().collect();
                if !streamed.is_empty() {
                    response.output = Some(streamed);
                }
                let parsed = from_response_object(
                    &self.name,
                    response,
                    &self.names,
                    self.request_id.take(),
                )?;
                for i in 0..self.calls.len() {
                    self.ready(i, out);
                }
                if let Some(u) = parsed.message.usage {
                    out.push_back(StreamEvent::Usage(u));
                }
                out.push_back(StreamEvent::Completed(Box::new(parsed)));
                self.done = true;
            }
            "error" => {
                let mut err = stream_error(
                    &self.name,
                    e.message
                        .map(Cow::into_owned)
                        .unwrap_or_else(|| wire::REPORTED.into()),
                );
                if let Some(c) = e.code {
                    err = err.with_code(c.into_owned());
                }
                return Err(err);
            }
            _ => {}
        }
        Ok(())
    }

    fn is_finished(&self) -> bool {
        self.done
    }

    fn end(&mut self, _out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        Err(wire::cut_short(&self.name, "no response.completed event"))
    }
}
