//! Chat Completions (`POST /chat/completions`): OpenAI and every compatible endpoint.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::Arc;

use llm_tools_core::{
    Message, Part, ProviderData, ProviderError, Request, Response, Role, StreamEvent, ToolCall,
    ToolChoice, ToolSpec, Usage,
};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::config::OpenAiConfig;
use super::wire::{
    self, Assembler, BodyWriter, NameMap, attachment_as_text, attachment_url, decode_error,
    nine_char_id,
};
use crate::framing::Frame;
use crate::schema;

/// The protocol name, also the key of the provider data it reads back.
pub(crate) const PROTOCOL: &str = "openai-chat";

/// The definition of one tool, serialized once per dialect.
pub(crate) fn definition(spec: &ToolSpec, strict: bool) -> Result<Arc<RawValue>, ProviderError> {
    let key = if strict {
        "openai-chat/strict"
    } else {
        "openai-chat/plain"
    };
    wire::definition(PROTOCOL, spec, key, "openai", |spec, tool| {
        let (parameters, strict) = wire::strict_or_plain(
            strict,
            spec.parameters(),
            schema::openai::strict,
            schema::openai::non_strict,
        );
        let mut function = Map::new();
        function.insert("name".into(), Value::from(spec.joined_name()));
        function.insert("description".into(), Value::from(spec.description()));
        function.insert("parameters".into(), parameters);
        if strict {
            function.insert("strict".into(), Value::Bool(true));
        }
        tool.insert("type".into(), Value::from("function"));
        tool.insert("function".into(), Value::Object(function));
        Ok(())
    })
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
    Text { text: Cow<'a, str> },
    ImageUrl { image_url: UrlOut },
    File { file: FileOut<'a> },
}

#[derive(Serialize)]
struct UrlOut {
    url: String,
}

#[derive(Serialize)]
struct FileOut<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    filename: Option<&'a str>,
    file_data: String,
}

#[derive(Serialize)]
struct CallOut<'a> {
    id: Cow<'a, str>,
    #[serde(rename = "type")]
    kind: &'static str,
    function: FunctionOut<'a>,
    /// What the endpoint sent beside the call and wants back (Gemini's OpenAI-compatible
    /// endpoint: `{"google": {"thought_signature": …}}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    extra_content: Option<&'a Value>,
}

/// The `extra_content` a call came with, kept in its provider data.
fn extra_content(call: &ToolCall) -> Option<&Value> {
    call.provider_data.as_ref()?.get("extra_content")
}

#[derive(Serialize)]
struct FunctionOut<'a> {
    name: Cow<'a, str>,
    arguments: &'a str,
}

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "snake_case")]
enum MessageOut<'a> {
    System {
        content: Content<'a>,
    },
    User {
        content: Content<'a>,
    },
    Assistant {
        content: Cow<'a, str>,
        #[serde(skip_serializing_if = "CallsOut::is_empty")]
        tool_calls: CallsOut<'a>,
        #[serde(flatten, skip_serializing_if = "Option::is_none")]
        echoed: Option<&'a Map<String, Value>>,
    },
    Tool {
        tool_call_id: Cow<'a, str>,
        content: Cow<'a, str>,
    },
}

/// The tool calls of an assistant message, written straight from the transcript.
struct CallsOut<'a> {
    config: &'a OpenAiConfig,
    calls: &'a [ToolCall],
}

impl CallsOut<'_> {
    fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }
}

impl Serialize for CallsOut<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.calls.iter().map(|c| CallOut {
            id: call_id(self.config, &c.id),
            kind: "function",
            function: FunctionOut {
                name: match &c.namespace {
                    None => Cow::Borrowed(c.name.as_str()),
                    Some(_) => Cow::Owned(c.joined_name()),
                },
                arguments: if c.arguments.trim().is_empty() {
                    "{}"
                } else {
                    &c.arguments
                },
            },
            extra_content: extra_content(c),
        }))
    }
}

fn user_content(parts: &[Part]) -> Content<'_> {
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

fn part_out(part: &Part) -> PartOut<'_> {
    match part {
        Part::Text { text } => PartOut::Text {
            text: Cow::Borrowed(text),
        },
        Part::Attachment(a) => {
            if a.is_image() {
                PartOut::ImageUrl {
                    image_url: UrlOut {
                        url: attachment_url(a),
                    },
                }
            } else if let Some(text) = attachment_as_text(a) {
                PartOut::Text {
                    text: Cow::Owned(text),
                }
            } else {
                PartOut::File {
                    file: FileOut {
                        filename: a.filename(),
                        file_data: attachment_url(a),
                    },
                }
            }
        }
        _ => PartOut::Text {
            text: Cow::Borrowed(""),
        },
    }
}

fn call_id<'a>(config: &OpenAiConfig, id: &'a str) -> Cow<'a, str> {
    if config.options.quirks.nine_char_call_ids {
        Cow::Owned(nine_char_id(id))
    } else {
        Cow::Borrowed(id)
    }
}

/// The messages array: one entry per message, tool results' images and files moved to a user
/// message after the round's tool messages (tool messages carry text only).
fn messages<'a>(config: &'a OpenAiConfig, messages: &'a [Message]) -> Vec<MessageOut<'a>> {
    let mut out = Vec::with_capacity(messages.len());
    let mut pending_media: Vec<PartOut<'a>> = Vec::new();
    for m in messages {
        if m.role != Role::Tool && !pending_media.is_empty() {
            out.push(MessageOut::User {
                content: Content::Parts(std::mem::take(&mut pending_media)),
            });
        }
        match m.role {
            Role::System => out.push(MessageOut::System {
                content: user_content(&m.content),
            }),
            Role::User => out.push(MessageOut::User {
                content: user_content(&m.content),
            }),
            Role::Assistant => {
                let echoed = m
                    .provider_data
                    .as_ref()
                    .and_then(|d| d.for_protocol(PROTOCOL))
                    .and_then(|d| d.get("echo"))
                    .and_then(Value::as_object);
                let content = match (m.content.as_slice(), &m.refusal) {
                    ([Part::Text { text }], _) if !text.is_empty() => Cow::Borrowed(text.as_str()),
                    ([], Some(refusal)) => Cow::Borrowed(refusal.as_str()),
                    ([], None) => Cow::Borrowed(""),
                    _ => match m.text() {
                        text if text.is_empty() => {
                            Cow::Borrowed(m.refusal.as_deref().unwrap_or_default())
                        }
                        text => Cow::Owned(text),
                    },
                };
                out.push(MessageOut::Assistant {
                    content,
                    tool_calls: CallsOut {
                        config,
                        calls: &m.tool_calls,
                    },
                    echoed,
                });
            }
            Role::Tool => {
                let id = m.tool_call_id.as_deref().unwrap_or_default();
                if let [Part::Text { text }] = m.content.as_slice() {
                    // The usual result, one text: written as it is.
                    out.push(MessageOut::Tool {
                        tool_call_id: call_id(config, id),
                        content: Cow::Borrowed(text),
                    });
                    continue;
                }
                let mut text = String::new();
                let mut media = Vec::new();
                for p in &m.content {
                    match p {
                        Part::Text { text: t } => {
                            if !text.is_empty() {
                                text.push('\n');
                            }
                            text.push_str(t);
                        }
                        Part::Attachment(a) => match attachment_as_text(a) {
                            Some(inline) => {
                                if !text.is_empty() {
                                    text.push('\n');
                                }
                                text.push_str(&inline);
                            }
                            None => media.push(part_out(p)),
                        },
                        _ => {}
                    }
                }
                if !media.is_empty() {
                    pending_media.push(PartOut::Text {
                        text: Cow::Owned(format!("Attachments from tool call {id}:")),
                    });
                    pending_media.extend(media);
                }
                out.push(MessageOut::Tool {
                    tool_call_id: call_id(config, id),
                    content: Cow::Owned(text),
                });
            }
            _ => {}
        }
    }
    if !pending_media.is_empty() {
        out.push(MessageOut::User {
            content: Content::Parts(pending_media),
        });
    }
    out
}

#[derive(Serialize)]
#[serde(untagged)]
enum ChoiceOut<'a> {
    Mode(&'a str),
    Function {
        #[serde(rename = "type")]
        kind: &'static str,
        function: NameOut<'a>,
    },
}

#[derive(Serialize)]
struct NameOut<'a> {
    name: &'a str,
}

/// Writes the request body.
pub(crate) fn body(
    config: &OpenAiConfig,
    request: &Request<'_>,
    stream: bool,
) -> Result<Vec<u8>, ProviderError> {
    let name = config.name();
    let tools = request.tools;
    let strict = config.strict_tools();
    let definitions = tools
        .iter()
        .map(|t| definition(t.spec(), strict))
        .collect::<Result<Vec<_>, _>>()?;
    let server_tools = wire::provider_tools::definitions(
        name,
        PROTOCOL,
        request.provider_tools,
        wire::provider_tools::chat_completions(name),
    )?;
    let mut w = BodyWriter::new(
        4096 + definitions.iter().map(|d| d.get().len()).sum::<usize>(),
        request.params,
    );
    w.field("model", &config.model);
    w.field("messages", &messages(config, request.messages));
    if !definitions.is_empty() || !server_tools.is_empty() {
        w.raw_array(
            "tools",
            definitions
                .iter()
                .map(|d| d.get())
                .chain(server_tools.iter().map(String::as_str)),
        );
        let choice = match request.choice {
            ToolChoice::Auto => None,
            ToolChoice::None => Some(ChoiceOut::Mode("none")),
            ToolChoice::Required
                if config.options.quirks.single_tool_by_name && tools.len() == 1 =>
            {
                Some(ChoiceOut::Function {
                    kind: "function",
                    function: NameOut {
                        name: tools[0].spec().joined_name(),
                    },
                })
            }
            ToolChoice::Required => Some(ChoiceOut::Mode(config.options.quirks.required_choice)),
            ToolChoice::Tool(joined) => {
                if !tools.iter().any(|t| t.spec().joined_name() == joined) {
                    return Err(wire::unknown_forced_tool(name, joined));
                }
                Some(ChoiceOut::Function {
                    kind: "function",
                    function: NameOut { name: joined },
                })
            }
            other => return Err(wire::unsupported_choice(name, other)),
        };
        if let Some(choice) = choice {
            w.field("tool_choice", &choice);
        }
        if let Some(parallel) = request.parallel_tool_calls {
            w.field("parallel_tool_calls", &parallel);
        }
    }
    if let Some(output) = request.output {
        let field = wire::output::format(
            name,
            output,
            "openai-chat/response_format",
            wire::output::chat_response_format,
        )?;
        w.raw("response_format", field.get());
    }
    w.field("stream", &stream);
    if stream && config.options.quirks.stream_usage {
        w.field(
            "stream_options",
            &serde_json::json!({"include_usage": true}),
        );
    }
    w.finish(name)
}

// ---- answers ----------------------------------------------------------------------------

#[derive(Deserialize)]
struct Completion<'a> {
    #[serde(default, borrow)]
    model: Option<Cow<'a, str>>,
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<UsageIn>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    message: Option<MessageIn>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct MessageIn {
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<CallIn>>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
}

#[derive(Deserialize)]
struct CallIn {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionIn>,
    #[serde(default)]
    extra_content: Option<Value>,
}

/// A call with the `extra_content` it came with kept for the way back.
fn with_extra(mut call: ToolCall, extra: Option<Value>) -> ToolCall {
    if let Some(extra) = extra.filter(|e| !e.is_null()) {
        call.provider_data = Some(serde_json::json!({ "extra_content": extra }));
    }
    call
}

#[derive(Deserialize)]
struct FunctionIn {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
}

#[derive(Deserialize, Default, Clone, Copy)]
pub(crate) struct UsageIn {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
    #[serde(default)]
    prompt_cache_hit_tokens: Option<u64>,
}

#[derive(Deserialize, Default, Clone, Copy)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Deserialize, Default, Clone, Copy)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

impl UsageIn {
    fn usage(self) -> Usage {
        let mut u = Usage {
            input_tokens: self.prompt_tokens,
            output_tokens: self.completion_tokens,
            ..Usage::default()
        };
        u.cached_input_tokens = self
            .prompt_tokens_details
            .and_then(|d| d.cached_tokens)
            .or(self.prompt_cache_hit_tokens)
            .unwrap_or(0);
        u.reasoning_tokens = self
            .completion_tokens_details
            .and_then(|d| d.reasoning_tokens)
            .unwrap_or(0);
        u
    }
}

/// Text and reasoning from `content`, which is a string, or (Mistral's reasoning models) a list
/// of `text` and `thinking` chunks.
fn content_text(content: Option<&Value>, text: &mut String, reasoning: &mut String) {
    match content {
        Some(Value::String(s)) => text.push_str(s),
        Some(Value::Array(parts)) => {
            for p in parts {
                match p.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        if let Some(t) = p.get("text").and_then(Value::as_str) {
                            text.push_str(t);
                        }
                    }
                    Some("thinking") => {
                        if let Some(Value::Array(chunks)) = p.get("thinking") {
                            for c in chunks {
                                if let Some(t) = c.get("text").and_then(Value::as_str) {
                                    reasoning.push_str(t);
                                }
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

fn arguments_text(arguments: Option<Value>) -> String {
    match arguments {
        Some(Value::String(s)) if !s.trim().is_empty() => s,
        Some(Value::String(_)) | Some(Value::Null) | None => "{}".into(),
        Some(other) => other.to_string(),
    }
}

fn assistant_message(
    text: String,
    refusal: Option<String>,
    calls: Vec<ToolCall>,
    reasoning: Option<(&'static str, String)>,
    usage: Option<Usage>,
) -> Message {
    let mut message = Message::assistant_with_calls(text, calls);
    message.refusal = refusal.filter(|r| !r.is_empty());
    message.usage = usage;
    if let Some((field, text)) = reasoning.filter(|(_, t)| !t.is_empty()) {
        let mut echo = Map::new();
        echo.insert(field.into(), Value::String(text.clone()));
        message.provider_data = Some(ProviderData::new(
            PROTOCOL,
            serde_json::json!({"reasoning": text, "echo": echo}),
        ));
    }
    message
}

/// Reads a whole (non-streamed) answer.
pub(crate) fn parse(
    name: &str,
    body: &[u8],
    names: &NameMap,
    request_id: Option<String>,
) -> Result<Response, ProviderError> {
    let completion: Completion<'_> = wire::parse_body(name, body)?;
    if let Some(error) = &completion.error {
        return Err(wire::reported_error(name, error, wire::REPORTED));
    }
    let usage = completion.usage.map(UsageIn::usage);
    let model = completion.model.map(Cow::into_owned);
    let Some(choice) = completion.choices.into_iter().next() else {
        return Err(decode_error(name, "the response has no choices"));
    };
    let m = choice.message.unwrap_or_default();
    let (mut text, mut reasoning) = (String::new(), String::new());
    content_text(m.content.as_ref(), &mut text, &mut reasoning);
    let reasoning_field = if let Some(r) = m.reasoning_content {
        reasoning.push_str(&r);
        "reasoning_content"
    } else if let Some(r) = m.reasoning {
        reasoning.push_str(&r);
        "reasoning"
    } else {
        "reasoning_content"
    };
    let calls = m
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .map(|c| {
            let f = c.function.unwrap_or(FunctionIn {
                name: None,
                arguments: None,
            });
            let (tool, namespace) = names.resolve(f.name.as_deref().unwrap_or_default());
            let call = ToolCall::new(
                c.id.filter(|i| !i.is_empty())
                    .unwrap_or_else(wire::fresh_call_id),
                tool,
                arguments_text(f.arguments),
            )
            .with_namespace(namespace);
            with_extra(call, c.extra_content)
        })
        .collect();
    let message = assistant_message(
        text,
        m.refusal,
        calls,
        Some((reasoning_field, reasoning)),
        usage,
    );
    Ok(Response::new(message)
        .with_finish_reason(choice.finish_reason)
        .with_request_id(request_id)
        .with_model(model))
}

// ---- streaming --------------------------------------------------------------------------

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(default, borrow)]
    model: Option<Cow<'a, str>>,
    /// The first choice (one answer is asked for; others are skipped unread).
    #[serde(default, borrow, rename = "choices", deserialize_with = "first_choice")]
    choice: Option<ChunkChoice<'a>>,
    #[serde(default)]
    usage: Option<UsageIn>,
    #[serde(default)]
    error: Option<Box<Value>>,
}

fn first_choice<'de: 'a, 'a, D>(d: D) -> Result<Option<ChunkChoice<'a>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    struct First<'a>(std::marker::PhantomData<&'a ()>);
    impl<'de: 'a, 'a> serde::de::Visitor<'de> for First<'a> {
        type Value = Option<ChunkChoice<'a>>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a list of choices")
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let first = seq.next_element::<ChunkChoice<'a>>()?;
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
            Ok(first)
        }
    }
    d.deserialize_any(First(std::marker::PhantomData))
}

#[derive(Deserialize)]
struct ChunkChoice<'a> {
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default)]
struct Delta<'a> {
    #[serde(default, borrow)]
    content: Option<StrOrValue<'a>>,
    #[serde(default, borrow)]
    refusal: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<CallDelta<'a>>>,
}

#[derive(Deserialize)]
struct CallDelta<'a> {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    extra_content: Option<Value>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    function: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
struct FunctionDelta<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    arguments: Option<StrOrValue<'a>>,
}

/// A string borrowed from the chunk where it has no escapes, or any other JSON value (content
/// as a list of parts, arguments as an object).
enum StrOrValue<'a> {
    Str(Cow<'a, str>),
    Other(Box<Value>),
}

impl<'de: 'a, 'a> Deserialize<'de> for StrOrValue<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = StrOrValue<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or a JSON value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(StrOrValue::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(StrOrValue::Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(StrOrValue::Str(Cow::Owned(v)))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(StrOrValue::Other(Box::new(Value::Null)))
            }
            fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
                Ok(StrOrValue::Other(Box::new(Value::Bool(v))))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
                Ok(StrOrValue::Other(Box::new(Value::from(v))))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
                Ok(StrOrValue::Other(Box::new(Value::from(v))))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
                Ok(StrOrValue::Other(Box::new(Value::from(v))))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<Self::Value, A::Error> {
                Value::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))
                    .map(|v| StrOrValue::Other(Box::new(v)))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<Self::Value, A::Error> {
                Value::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(|v| StrOrValue::Other(Box::new(v)))
            }
        }
        d.deserialize_any(V)
    }
}

impl StrOrValue<'_> {
    fn content(&self, text: &mut String, reasoning: &mut String) {
        match self {
            StrOrValue::Str(s) => text.push_str(s),
            StrOrValue::Other(v) => content_text(Some(v), text, reasoning),
        }
    }
}

struct CallState {
    wire_index: Option<u64>,
    id: String,
    name: String,
    arguments: String,
    extra_content: Option<Value>,
    ready: bool,
}

/// Reassembles a Chat Completions stream: text, reasoning, and tool calls whose argument
/// fragments arrive by `index` (the id only in the first fragment; `tool_calls` and
/// `finish_reason` possibly in the same chunk).
pub struct ChatAssembler {
    name: String,
    names: NameMap,
    request_id: Option<String>,
    model: Option<String>,
    text: String,
    refusal: String,
    reasoning: String,
    reasoning_field: &'static str,
    calls: Vec<CallState>,
    usage: Option<Usage>,
    finish_reason: Option<String>,
    done: bool,
}

impl ChatAssembler {
    pub(crate) fn new(name: &str, names: NameMap, request_id: Option<String>) -> Self {
        Self {
            name: name.to_owned(),
            names,
            request_id,
            model: None,
            text: String::new(),
            refusal: String::new(),
            reasoning: String::new(),
            reasoning_field: "reasoning_content",
            calls: Vec::new(),
            usage: None,
            finish_reason: None,
            done: false,
        }
    }

    fn ready_all(&mut self, out: &mut VecDeque<StreamEvent>) {
        for (index, call) in self.calls.iter_mut().enumerate() {
            if !call.ready {
                call.ready = true;
                out.push_back(StreamEvent::ToolCallReady { index });
            }
        }
    }

    fn call_delta(
        &mut self,
        position: usize,
        delta: CallDelta<'_>,
        out: &mut VecDeque<StreamEvent>,
    ) {
        let index = match delta.index {
            Some(i) => self.calls.iter().position(|c| c.wire_index == Some(i)),
            None => match &delta.id {
                Some(id) if !id.is_empty() => self.calls.iter().position(|c| c.id == **id),
                // No index and no id: a continuation of the last call, or a new one.
                _ => self.calls.len().checked_sub(1).filter(|_| position == 0),
            },
        };
        let extra = delta.extra_content.filter(|e| !e.is_null());
        let function = delta.function;
        let fragment = match function.as_ref().and_then(|f| f.arguments.as_ref()) {
            Some(StrOrValue::Str(s)) => s.clone().into_owned(),
            Some(StrOrValue::Other(v)) if v.is_null() => String::new(),
            None => String::new(),
            Some(StrOrValue::Other(other)) => other.to_string(),
        };
        let name_part = function.and_then(|f| f.name).map(Cow::into_owned);
        let index = match index {
            Some(i) => {
                let call = &mut self.calls[i];
                if let Some(n) = name_part {
                    call.name.push_str(&n);
                }
                if extra.is_some() {
                    call.extra_content = extra;
                }
                i
            }
            None => {
                // A new call: the previous ones are complete.
                self.ready_all(out);
                let id = delta
                    .id
                    .map(Cow::into_owned)
                    .filter(|i| !i.is_empty())
                    .unwrap_or_else(wire::fresh_call_id);
                self.calls.push(CallState {
                    wire_index: delta.index,
                    id: id.clone(),
                    name: name_part.unwrap_or_default(),
                    arguments: String::new(),
                    extra_content: extra,
                    ready: false,
                });
                let i = self.calls.len() - 1;
                let (name, namespace) = self.names.resolve(&self.calls[i].name);
                out.push_back(StreamEvent::ToolCallStarted {
                    index: i,
                    id,
                    name,
                    namespace,
                });
                i
            }
        };
        if !fragment.is_empty() {
            self.calls[index].arguments.push_str(&fragment);
            out.push_back(StreamEvent::ToolCallDelta { index, fragment });
        }
    }

    fn complete(&mut self, out: &mut VecDeque<StreamEvent>) {
        self.ready_all(out);
        let calls = self
            .calls
            .drain(..)
            .map(|c| {
                let (name, namespace) = self.names.resolve(&c.name);
                let arguments = if c.arguments.trim().is_empty() {
                    "{}".to_owned()
                } else {
                    c.arguments
                };
                with_extra(
                    ToolCall::new(c.id, name, arguments).with_namespace(namespace),
                    c.extra_content,
                )
            })
            .collect();
        if let Some(u) = self.usage {
            out.push_back(StreamEvent::Usage(u));
        }
        let message = assistant_message(
            std::mem::take(&mut self.text),
            Some(std::mem::take(&mut self.refusal)),
            calls,
            Some((self.reasoning_field, std::mem::take(&mut self.reasoning))),
            self.usage,
        );
        out.push_back(StreamEvent::Completed(Box::new(
            Response::new(message)
                .with_finish_reason(self.finish_reason.take())
                .with_request_id(self.request_id.take())
                .with_model(self.model.take()),
        )));
        self.done = true;
    }
}

impl Assembler for ChatAssembler {
    fn feed(
        &mut self,
        event: &Frame<'_>,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.complete(out);
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        let chunk: Chunk<'_> = match serde_json::from_str(data) {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(provider = %self.name, error = %e, "skipping an unreadable stream event");
                return Ok(());
            }
        };
        if let Some(error) = &chunk.error {
            return Err(wire::reported_error(&self.name, error, wire::REPORTED));
        }
        if self.model.is_none() {
            self.model = chunk.model.map(Cow::into_owned);
        }
        if let Some(u) = chunk.usage {
            self.usage = Some(u.usage());
        }
        if let Some(choice) = chunk.choice {
            if let Some(delta) = choice.delta {
                let mut text = String::new();
                let mut reasoning = String::new();
                if let Some(c) = &delta.content {
                    c.content(&mut text, &mut reasoning);
                }
                if let Some(r) = delta.reasoning_content.filter(|r| !r.is_empty()) {
                    self.reasoning_field = "reasoning_content";
                    reasoning.push_str(&r);
                } else if let Some(r) = delta.reasoning.filter(|r| !r.is_empty()) {
                    self.reasoning_field = "reasoning";
                    reasoning.push_str(&r);
                }
                if !reasoning.is_empty() {
                    self.reasoning.push_str(&reasoning);
                    out.push_back(StreamEvent::ReasoningDelta(reasoning));
                }
                if !text.is_empty() {
                    self.text.push_str(&text);
                    out.push_back(StreamEvent::TextDelta(text));
                }
                if let Some(r) = delta.refusal {
                    self.refusal.push_str(&r);
                }
                for (position, call) in delta.tool_calls.into_iter().flatten().enumerate() {
                    self.call_delta(position, call, out);
                }
            }
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(reason.into_owned());
                self.ready_all(out);
            }
        }
        Ok(())
    }

    fn is_finished(&self) -> bool {
        self.done
    }

    fn end(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        if self.finish_reason.is_some() {
            // Some servers end without `[DONE]`; the finish reason says the answer is whole.
            self.complete(out);
            return Ok(());
        }
        Err(wire::cut_short(&self.name, "no finish reason, no [DONE]"))
    }
}
