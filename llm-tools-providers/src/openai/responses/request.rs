//! Writing a request body of the Responses API.

use std::borrow::Cow;
use std::sync::Arc;

use llm_tools_core::provider_tools::{ImageGeneration, XSearch};
use llm_tools_core::{
    Attachment, Message, OutputSchema, Part, ProviderError, ProviderTool, Request, Role, ToolCall,
    ToolChoice, ToolSpec,
};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::super::config::OpenAiConfig;
use super::super::output::strict_if_possible;
use crate::schema::{self, SchemaBudget};
use crate::wire::output::Built;
use crate::wire::provider_tools::{McpTokens, token};
use crate::wire::{
    self, BodyWriter, CallsInOrder, attachment_as_text, attachment_url, request_error,
};

/// The protocol's id (from the table in [`crate::protocol::ids`]), also the key of the provider
/// data it reads back.
pub(crate) const PROTOCOL: &str = crate::protocol::ids::OPENAI_RESPONSES;

/// Namespace names the Responses API reserves for its own tools.
pub(super) const RESERVED_NAMESPACES: &[&str] = &["computer", "browser"];

/// Where a function tool's provider options (under `"openai-responses"`) go: into its entry,
/// beside the fields written here (`output_schema`, `allowed_callers`, …); the fields the
/// library writes are refused.
pub(crate) const TOOL_OPTIONS: wire::ToolOptions = wire::ToolOptions::Merged {
    key: PROTOCOL,
    into: None,
    own: &[
        "type",
        "name",
        "description",
        "parameters",
        "strict",
        "defer_loading",
    ],
    apart: &[],
};

/// The definition of one function tool (its own name: a namespaced tool sits inside its
/// namespace group), serialized once per dialect. `strict` is always sent. `None`: its schema
/// is past the budget, and the tool is left out (see [`wire::definition`]).
pub(crate) fn definition(
    spec: &ToolSpec,
    strict: bool,
    deferred: bool,
    budget: &SchemaBudget,
    forced: bool,
) -> Result<Option<Arc<RawValue>>, ProviderError> {
    let key = match (strict, deferred) {
        (true, false) => "openai-responses/strict",
        (false, false) => "openai-responses/plain",
        (true, true) => "openai-responses/strict/deferred",
        (false, true) => "openai-responses/plain/deferred",
    };
    wire::definition(
        PROTOCOL,
        spec,
        key,
        &TOOL_OPTIONS,
        budget,
        forced,
        |spec, budget, tool| {
            let (parameters, strict) = wire::strict_or_plain(
                strict,
                spec.parameters(),
                budget,
                schema::openai::strict,
                schema::openai::non_strict,
            )?;
            tool.insert("type".into(), Value::from("function"));
            tool.insert("name".into(), Value::from(spec.name()));
            tool.insert("description".into(), Value::from(spec.description()));
            tool.insert("parameters".into(), parameters);
            tool.insert("strict".into(), Value::Bool(strict));
            if deferred {
                tool.insert("defer_loading".into(), Value::Bool(true));
            }
            Ok(())
        },
    )
}

/// The `tools` array: plain functions, and one namespace group per namespace (at the place of
/// its first tool), each function written from its cached definition; a tool whose schema is
/// past the budget is left out.
pub(super) fn tools_json(
    name: &str,
    request: &Request<'_>,
    strict: bool,
    native_search: bool,
    budget: &SchemaBudget,
) -> Result<Vec<Cow<'static, str>>, ProviderError> {
    let tools = request.tools;
    let forced = wire::forced_tool(request);
    let mut out: Vec<Cow<'static, str>> = Vec::with_capacity(tools.len());
    let mut groups: Vec<(String, usize, Vec<Arc<RawValue>>)> = Vec::new();
    let mut slots: Vec<Option<usize>> = Vec::new();
    let mut plain: Vec<Arc<RawValue>> = Vec::new();
    for tool in tools {
        let spec = tool.spec();
        let deferred = native_search && spec.defer();
        let is_forced = forced == Some(spec.joined_name());
        let Some(def) = definition(spec, strict, deferred, budget, is_forced)? else {
            continue;
        };
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
pub(super) enum Content<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<PartOut<'a>>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum PartOut<'a> {
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
pub(super) enum Item<'a> {
    Message {
        role: &'static str,
        content: Content<'a>,
        /// An assistant message's `phase` (`commentary` or `final_answer`), sent back as it
        /// came: OpenAI asks for it on every assistant message of a follow-up request.
        #[serde(skip_serializing_if = "Option::is_none")]
        phase: Option<&'a str>,
    },
    Raw(&'a Value),
    /// A kept item sent with a field left out (a reasoning item's `id`, see [`reasoning`]).
    Trimmed(Value),
    /// An assistant message sent back as the stored output item it was (`store: true`): with
    /// its id, so the server pairs it with the reasoning item before it.
    Stored {
        #[serde(rename = "type")]
        kind: &'static str,
        id: &'a str,
        role: &'static str,
        content: Content<'a>,
        status: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        phase: Option<&'a str>,
    },
    /// A stored item named by its id (`item_reference`): a message item with nothing of its
    /// own to send (no text), which still holds its place after the reasoning before it.
    Reference {
        #[serde(rename = "type")]
        kind: &'static str,
        id: &'a str,
    },
    Call {
        #[serde(rename = "type")]
        kind: &'static str,
        /// The call's item id (`fc_…`), sent when responses are stored.
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<&'a str>,
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

pub(super) fn part_out(part: &Part) -> PartOut<'_> {
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
        // No search-result item here: the result as text.
        Part::SearchResult(r) => PartOut::InputText {
            text: Cow::Owned(r.to_text()),
        },
        _ => PartOut::InputText {
            text: Cow::Borrowed(""),
        },
    }
}

pub(super) fn input_content(parts: &[Part]) -> Content<'_> {
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

/// A call as its `function_call` item; with its item id when responses are stored (`store`).
pub(super) fn call_item(c: &ToolCall, store: bool) -> Item<'_> {
    Item::Call {
        kind: "function_call",
        id: c
            .provider_data
            .as_ref()
            .and_then(|d| d.get("id"))
            .and_then(Value::as_str)
            .filter(|_| store),
        call_id: &c.id,
        name: &c.name,
        arguments: wire::arguments_text(&c.arguments),
        namespace: c.namespace.as_deref(),
    }
}

pub(super) fn assistant_text(m: &Message) -> Option<Item<'_>> {
    let texts: Vec<&str> = m.content.iter().filter_map(Part::as_text).collect();
    assistant_message(&texts, m.refusal.as_deref(), None, None)
}

/// An assistant message item with these texts (empty ones left out) and refusal, or `None`
/// when it has nothing to say. With an `id` (responses stored), the stored output item it
/// was, so the server pairs it with the reasoning item before it.
fn assistant_message<'a>(
    texts: &[&'a str],
    refusal: Option<&'a str>,
    id: Option<&'a str>,
    phase: Option<&'a str>,
) -> Option<Item<'a>> {
    let mut parts: Vec<PartOut<'a>> = texts
        .iter()
        .filter(|t| !t.is_empty())
        .map(|t| PartOut::OutputText {
            text: Cow::Borrowed(t),
        })
        .collect();
    if let Some(refusal) = refusal {
        parts.push(PartOut::Refusal { refusal });
    }
    if parts.is_empty() {
        return None;
    }
    let content = Content::Parts(parts);
    Some(match id {
        Some(id) => Item::Stored {
            kind: "message",
            id,
            role: "assistant",
            content,
            status: "completed",
            phase,
        },
        None => Item::Message {
            role: "assistant",
            content,
            phase,
        },
    })
}

/// A kept reasoning item as it goes back, or `None` when it cannot.
///
/// - `store: true`: with its `id`, as OpenAI's API reference has the `reasoning` input item
///   (`id` required): the server resolves the stored item by it (and the answer's message and
///   calls after it go with their ids too, so it finds the items that follow it). An item
///   with neither id nor encrypted content (a chat saved before ids were kept) cannot be
///   resolved and is left out.
/// - `store: false`: nothing is stored, and the reasoning travels in its `encrypted_content`
///   (the reference's `include` value `reasoning.encrypted_content` "enables reasoning items
///   to be used in multi-turn conversations when using the Responses API statelessly"). The id
///   is left out: with it the server looks for a stored item and answers 404 "Item with id
///   'rs_…' not found. Items are not persisted when `store` is set to false"; OpenAI's own
///   Codex client, which runs unstored, never sends it, and the recorded OpenAI traffic here
///   sends none. An item without encrypted content goes where it carries reasoning text
///   (`content`, DeepSeek's form), and is left out otherwise.
pub(super) fn reasoning(item: &Value, store: bool) -> Option<Item<'_>> {
    let has = |k: &str| item.get(k).is_some_and(|v| !v.is_null());
    if store {
        return (has("id") || has("encrypted_content")).then_some(Item::Raw(item));
    }
    let text = item
        .get("content")
        .and_then(Value::as_array)
        .is_some_and(|c| !c.is_empty());
    if !has("encrypted_content") && !text {
        return None;
    }
    match item {
        Value::Object(fields) if fields.contains_key("id") => {
            let mut fields = fields.clone();
            fields.remove("id");
            Some(Item::Trimmed(Value::Object(fields)))
        }
        _ => Some(Item::Raw(item)),
    }
}

/// The image parts of an answer, as its `image_generation_call` items take them back.
struct Images<'m> {
    parts: Vec<Option<&'m Attachment>>,
}

impl<'m> Images<'m> {
    fn of(m: &'m Message) -> Self {
        Self {
            parts: m
                .content
                .iter()
                .filter_map(Part::as_attachment)
                .filter(|a| a.is_image())
                .map(Some)
                .collect(),
        }
    }

    /// The image of the item `id`: the part named after it (`{id}.{format}`, as the answer's
    /// reader names it), never another item's; an item without an id takes the next part
    /// named after none.
    fn take(&mut self, id: Option<&str>) -> Option<&'m Attachment> {
        let of_item = |image: &Attachment| match (id, image.filename()) {
            (Some(id), Some(name)) => name
                .strip_prefix(id)
                .is_some_and(|rest| rest.starts_with('.')),
            (None, name) => name.is_none(),
            (Some(_), None) => false,
        };
        let slot = self
            .parts
            .iter_mut()
            .find(|slot| slot.is_some_and(of_item))?;
        slot.take()
    }
}

/// An `image_generation_call` item as it goes back: its `result` (which the answer's reader
/// moved into an image part) refilled from its own image part. An item that made no image
/// (a failed call) goes as it came, without one.
fn image_item<'a>(item: &'a Value, images: &mut Images<'_>) -> Item<'a> {
    if let Value::Object(fields) = item
        && !fields.contains_key("result")
        && let Some(result) = images
            .take(fields.get("id").and_then(Value::as_str))
            .and_then(Attachment::base64)
    {
        let mut fields = fields.clone();
        fields.insert("result".into(), Value::String(result));
        return Item::Trimmed(Value::Object(fields));
    }
    Item::Raw(item)
}

/// llm-tools' own key in a kept `message` entry: how many of the message's text parts the
/// item holds when it is not one (a message item without text, a refusal alone, holds none).
/// The answer's reader makes each `message` item with text one text part, in order, so the
/// k-th entry holding one goes back with the k-th text part.
pub(super) const TEXT_PARTS: &str = "text_parts";

/// One assistant message as input items, in the order the model produced them: reasoning
/// items (see [`reasoning`]) where the provider data has them, then text and calls.
///
/// Each kept `message` entry goes back at its place with its own text: the answer's reader
/// made one text part per `message` item with text, in order, and marked an item without
/// text ([`TEXT_PARTS`]), which goes back as a reference to the stored item when responses are
/// stored and is left out otherwise. The last entry also takes any text
/// parts left over (text added to the message since) and the refusal. A message kept before
/// text parts were split this way holds all its text in one part, which goes with the first
/// entry, as it did then.
pub(super) fn assistant_items<'a>(m: &'a Message, store: bool, out: &mut Vec<Item<'a>>) {
    let skeleton = wire::protocol_data(m, PROTOCOL, "output").and_then(Value::as_array);
    let is_message = |item: &Value| item.get("type").and_then(Value::as_str) == Some("message");
    let entries = skeleton.map_or(0, |items| items.iter().filter(|i| is_message(i)).count());
    let texts: Vec<&str> = m.content.iter().filter_map(Part::as_text).collect();
    let mut texts_left = texts.as_slice();
    let mut entries_seen = 0;
    let mut calls = CallsInOrder::new(&m.tool_calls);
    let mut images = Images::of(m);
    for item in skeleton.into_iter().flatten() {
        match item.get("type").and_then(Value::as_str) {
            Some("reasoning") => out.extend(reasoning(item, store)),
            Some("message") => {
                entries_seen += 1;
                let last = entries_seen == entries;
                let holds = item
                    .get(TEXT_PARTS)
                    .and_then(Value::as_u64)
                    .map_or(1, |n| usize::try_from(n).unwrap_or(usize::MAX));
                let take = if last {
                    texts_left.len()
                } else {
                    holds.min(texts_left.len())
                };
                let (own, rest) = texts_left.split_at(take);
                texts_left = rest;
                let id = item.get("id").and_then(Value::as_str).filter(|_| store);
                let written = assistant_message(
                    own,
                    m.refusal.as_deref().filter(|_| last),
                    id,
                    item.get("phase").and_then(Value::as_str),
                );
                match (written, id) {
                    (Some(message), _) => out.push(message),
                    // Nothing of its own to say: stored, it is named, so the reasoning before
                    // it keeps the item that followed it.
                    (None, Some(id)) => out.push(Item::Reference {
                        kind: "item_reference",
                        id,
                    }),
                    (None, None) => {}
                }
            }
            Some("function_call") => {
                let id = item.get("call_id").and_then(Value::as_str);
                out.extend(calls.take(id).map(|c| call_item(c, store)));
            }
            Some("image_generation_call") => out.push(image_item(item, &mut images)),
            // A provider tool's item, sent back as it came.
            _ => out.push(Item::Raw(item)),
        }
    }
    if entries == 0 {
        out.extend(assistant_text(m));
    }
    out.extend(calls.rest().map(|c| call_item(c, store)));
}

pub(super) fn tool_output(m: &Message) -> Content<'_> {
    let as_text = |p: &Part| match p {
        Part::SearchResult(r) => Some(r.to_text()),
        other => other.as_text().map(str::to_owned),
    };
    if m.content.iter().all(|p| as_text(p).is_some()) {
        let text: Vec<String> = m.content.iter().filter_map(as_text).collect();
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
        request,
        config.strict_tools(),
        config.native_tool_search(),
        &config.schema_budget,
    )?;
    let server_tools = wire::provider_tools::definitions(
        name,
        PROTOCOL,
        request.provider_tools,
        provider_tool(&config.mcp_tokens, name == "xai"),
        request
            .provider_tools
            .iter()
            .any(|t| matches!(t, ProviderTool::XSearch(_)))
            .then_some("X search is xAI's: use `OpenAiConfig::xai`"),
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
                phase: None,
            }),
            Role::User => input.push(Item::Message {
                role: "user",
                content: input_content(&m.content),
                phase: None,
            }),
            Role::Assistant => assistant_items(m, config.options.store, &mut input),
            Role::Tool => input.push(Item::Output {
                kind: "function_call_output",
                call_id: m.tool_call_id.as_deref().unwrap_or_default(),
                output: tool_output(m),
            }),
            _ => {}
        }
        leading = false;
    }

    let mut w =
        BodyWriter::for_request(request, definitions.iter().map(|d| d.len()).sum::<usize>());
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
            &config.schema_budget,
            text_format,
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

/// Responses' `text` field: `{"format": {"type": "json_schema", …}}`.
fn text_format(output: &OutputSchema, budget: &SchemaBudget) -> Built {
    let (schema, strict) = strict_if_possible(output, budget)?;
    Ok(
        json!({"format": {"type": "json_schema", "name": output.name(), "schema": schema, "strict": strict}}),
    )
}

/// OpenAI Responses (and the compatible Responses APIs of xAI and DeepSeek); a remote MCP
/// server with its token from `tokens`. Calls of a remote server's tools run without asking
/// (`require_approval: never`): the chat has no way to answer the provider's approval requests.
fn provider_tool(tokens: &McpTokens, xai: bool) -> impl Fn(&ProviderTool) -> Option<Value> + '_ {
    move |tool| match tool {
        ProviderTool::XSearch(search) if xai => Some(x_search(search)),
        ProviderTool::RemoteMcp(server) => {
            let mut def = json!({
                "type": "mcp",
                "server_label": server.name,
                "server_url": server.url,
                "require_approval": "never",
            });
            if let Some(description) = &server.description {
                def["server_description"] = json!(description);
            }
            if !server.allowed_tools.is_empty() {
                def["allowed_tools"] = json!(server.allowed_tools);
            }
            if let Some(token) = token(tokens, server) {
                def["authorization"] = json!(token);
            }
            Some(def)
        }
        other => builtin_tool(other),
    }
}

/// xAI's `x_search` with the options set.
fn x_search(search: &XSearch) -> Value {
    let mut def = json!({"type": "x_search"});
    if !search.allowed_handles.is_empty() {
        def["allowed_x_handles"] = json!(search.allowed_handles);
    }
    if !search.excluded_handles.is_empty() {
        def["excluded_x_handles"] = json!(search.excluded_handles);
    }
    if let Some(from) = &search.from_date {
        def["from_date"] = json!(from);
    }
    if let Some(to) = &search.to_date {
        def["to_date"] = json!(to);
    }
    def
}

/// `image_generation` with the options set.
fn image_generation(options: &ImageGeneration) -> Value {
    let mut def = json!({"type": "image_generation"});
    for (key, value) in [
        ("size", &options.size),
        ("quality", &options.quality),
        ("output_format", &options.output_format),
        ("background", &options.background),
    ] {
        if let Some(v) = value {
            def[key] = json!(v);
        }
    }
    def
}

fn builtin_tool(tool: &ProviderTool) -> Option<Value> {
    Some(match tool {
        ProviderTool::WebSearch(search) => {
            let mut def = json!({"type": "web_search"});
            if !search.allowed_domains.is_empty() {
                def["filters"] = json!({"allowed_domains": search.allowed_domains});
            }
            def
        }
        ProviderTool::CodeExecution => {
            json!({"type": "code_interpreter", "container": {"type": "auto"}})
        }
        ProviderTool::ImageGeneration(options) => image_generation(options),
        ProviderTool::FileSearch {
            vector_store_ids,
            max_results,
        } => {
            let mut def = json!({"type": "file_search", "vector_store_ids": vector_store_ids});
            if let Some(max) = max_results {
                def["max_num_results"] = json!(max);
            }
            def
        }
        _ => return None,
    })
}
