//! Writing a request body of Chat Completions.

use std::borrow::Cow;
use std::sync::Arc;

use llm_tools_core::{
    Message, OutputSchema, Part, ProviderError, ProviderTool, Request, Role, ToolCall, ToolChoice,
    ToolSpec,
};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::super::config::OpenAiConfig;
use super::super::output::strict_if_possible;
use crate::schema::{self, SchemaBudget};
use crate::wire::output::Built;
use crate::wire::{self, BodyWriter, attachment_as_text, attachment_url};

/// The protocol's id (from the table in [`crate::protocol::ids`]), also the key of the provider
/// data it reads back.
pub(crate) const PROTOCOL: &str = crate::protocol::ids::OPENAI_CHAT;

/// A Chat Completions function has no field a tool could add: provider options under
/// `"openai-chat"` are refused (those under `"openai-responses"` are the Responses API's).
pub(crate) const TOOL_OPTIONS: wire::ToolOptions = wire::ToolOptions::Refused {
    key: PROTOCOL,
    why: "a Chat Completions function has no fields besides the name, description, parameters and `strict` the library writes",
};

/// The key a tool's definition is kept under, per strict setting.
fn dialect_key(strict: bool) -> &'static str {
    if strict {
        "openai-chat/strict"
    } else {
        "openai-chat/plain"
    }
}

/// The definition of one tool, serialized once per dialect; `None` when its schema is past the
/// budget (the tool is left out, see [`wire::definition`]).
pub(crate) fn definition(
    spec: &ToolSpec,
    strict: bool,
    budget: &SchemaBudget,
    forced: bool,
) -> Result<Option<Arc<RawValue>>, ProviderError> {
    wire::definition(
        PROTOCOL,
        spec,
        dialect_key(strict),
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
        },
    )
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
    Text { text: Cow<'a, str> },
    ImageUrl { image_url: UrlOut },
    File { file: FileOut<'a> },
}

#[derive(Serialize)]
pub(super) struct UrlOut {
    pub(super) url: String,
}

#[derive(Serialize)]
pub(super) struct FileOut<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) filename: Option<&'a str>,
    pub(super) file_data: String,
}

#[derive(Serialize)]
pub(super) struct CallOut<'a> {
    pub(super) id: Cow<'a, str>,
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    pub(super) function: FunctionOut<'a>,
    /// What the endpoint sent beside the call and wants back (Gemini's OpenAI-compatible
    /// endpoint: `{"google": {"thought_signature": …}}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) extra_content: Option<&'a Value>,
}

/// The `extra_content` a call came with, kept in its provider data.
pub(super) fn extra_content(call: &ToolCall) -> Option<&Value> {
    call.provider_data.as_ref()?.get("extra_content")
}

#[derive(Serialize)]
pub(super) struct FunctionOut<'a> {
    pub(super) name: Cow<'a, str>,
    pub(super) arguments: &'a str,
}

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub(super) enum MessageOut<'a> {
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
pub(super) struct CallsOut<'a> {
    pub(super) config: &'a OpenAiConfig,
    pub(super) calls: &'a [ToolCall],
}

impl CallsOut<'_> {
    pub(super) fn is_empty(&self) -> bool {
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
                arguments: wire::arguments_text(&c.arguments),
            },
            extra_content: extra_content(c),
        }))
    }
}

pub(super) fn user_content(parts: &[Part]) -> Content<'_> {
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

pub(super) fn part_out(part: &Part) -> PartOut<'_> {
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
        Part::SearchResult(r) => PartOut::Text {
            text: Cow::Owned(r.to_text()),
        },
        _ => PartOut::Text {
            text: Cow::Borrowed(""),
        },
    }
}

pub(super) fn call_id<'a>(config: &OpenAiConfig, id: &'a str) -> Cow<'a, str> {
    if config.options.quirks.nine_char_call_ids {
        Cow::Owned(nine_char_id(id))
    } else {
        Cow::Borrowed(id)
    }
}

/// The messages array: one entry per message, tool results' images and files moved to a user
/// message after the round's tool messages (tool messages carry text only).
pub(super) fn messages<'a>(
    config: &'a OpenAiConfig,
    messages: &'a [Message],
) -> Vec<MessageOut<'a>> {
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
                    .filter(|_| config.options.quirks.echo_reasoning)
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
                        Part::Text { text: t } => wire::push_line(&mut text, t),
                        Part::Attachment(a) => match attachment_as_text(a) {
                            Some(inline) => wire::push_line(&mut text, &inline),
                            None => media.push(part_out(p)),
                        },
                        // No search-result block here: the result as text.
                        Part::SearchResult(r) => wire::push_line(&mut text, &r.to_text()),
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
pub(super) enum ChoiceOut<'a> {
    Mode(&'a str),
    Function {
        #[serde(rename = "type")]
        kind: &'static str,
        function: NameOut<'a>,
    },
}

#[derive(Serialize)]
pub(super) struct NameOut<'a> {
    pub(super) name: &'a str,
}

/// Writes the request body; the tool definitions come from `kept` when the request has the
/// last request's tools.
pub(crate) fn body(
    config: &OpenAiConfig,
    kept: &wire::kept::KeptDefinitions,
    request: &Request<'_>,
    stream: bool,
) -> Result<Vec<u8>, ProviderError> {
    let name = config.name();
    let tools = request.tools;
    let strict = config.strict_tools();
    let forced = wire::forced_tool(request);
    let budget = &config.schema_budget;
    let definitions = kept.get(dialect_key(strict), budget, request, || {
        tools
            .iter()
            .map(|t| {
                let spec = t.spec();
                let is_forced = forced == Some(spec.joined_name());
                definition(spec, strict, budget, is_forced)
            })
            .collect()
    })?;
    let server_tools = wire::provider_tools::definitions(
        name,
        PROTOCOL,
        request.provider_tools,
        provider_tool(name),
        missing_tool_hint(name),
    )?;
    let mut w = BodyWriter::for_request(
        request,
        definitions.iter().map(|d| d.get().len()).sum::<usize>(),
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
            &config.schema_budget,
            response_format,
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

/// Chat Completions' `response_format`.
fn response_format(output: &OutputSchema, budget: &SchemaBudget) -> Built {
    let (schema, strict) = strict_if_possible(output, budget)?;
    Ok(
        json!({"type": "json_schema", "json_schema": {"name": output.name(), "schema": schema, "strict": strict}}),
    )
}

/// Chat Completions: only OpenRouter has a server-side tool (its web search plugin as a tool).
fn provider_tool(provider: &str) -> impl Fn(&ProviderTool) -> Option<Value> + '_ {
    move |tool| match tool {
        ProviderTool::WebSearch(search) if provider == "openrouter" => {
            let mut def = json!({"type": "openrouter:web_search"});
            let mut parameters = Map::new();
            if let Some(max) = search.max_uses {
                parameters.insert("max_results".into(), json!(max));
            }
            if !search.allowed_domains.is_empty() {
                parameters.insert("allowed_domains".into(), json!(search.allowed_domains));
            }
            if !search.blocked_domains.is_empty() {
                parameters.insert("excluded_domains".into(), json!(search.blocked_domains));
            }
            if !parameters.is_empty() {
                def["parameters"] = Value::Object(parameters);
            }
            Some(def)
        }
        _ => None,
    }
}

/// Why Chat Completions lacks a provider tool on endpoint `name`, where the vendor's Responses
/// API has it.
fn missing_tool_hint(name: &str) -> Option<&'static str> {
    match name {
        "xai" => Some(
            "xAI runs its provider tools on its Responses API: use `OpenAiResponses` with `OpenAiConfig::xai(…)`",
        ),
        "deepseek" => Some(
            "DeepSeek runs its provider tools on its Responses API: use `OpenAiResponses` with `OpenAiConfig::deepseek(…)`",
        ),
        _ => None,
    }
}

/// A tool-call id of exactly 9 ASCII letters and digits (Mistral's rule): the id itself when
/// it already is one, else a hash of it, so the same id always maps to the same short id.
fn nine_char_id(id: &str) -> String {
    if id.len() == 9 && id.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return id.to_owned();
    }
    const ALPHABET: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    let mut out = String::with_capacity(9);
    for _ in 0..9 {
        out.push(char::from(ALPHABET[(hash % 62) as usize]));
        hash /= 62;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nine_char_ids_are_stable_and_valid() {
        assert_eq!(nine_char_id("D681PevKs"), "D681PevKs");
        let a = nine_char_id("call_0fypS1hVX");
        assert_eq!(a.len(), 9);
        assert!(a.bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_eq!(a, nine_char_id("call_0fypS1hVX"));
        assert_ne!(a, nine_char_id("call_0fypS1hVY"));
    }
}
