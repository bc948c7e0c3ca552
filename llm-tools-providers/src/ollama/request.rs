//! Writing an `/api/chat` request: the messages (assistant tool calls with their arguments as
//! objects, results as `tool` messages naming the tool and the call, images as base64), the
//! tools in the form Ollama's decoder keeps (serialized once), thinking, `keep_alive` and the
//! model's options.

use std::sync::Arc;

use llm_tools_core::{
    Message, OutputSchema, Part, ProviderError, Request, Role, Source, ToolCall, ToolChoice,
    ToolSpec,
};
use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::config::OllamaConfig;
use crate::schema::{self, SchemaBudget};
use crate::wire::output::Built;
use crate::wire::{self, ArgumentsObject, BodyWriter, attachment_as_text, request_error};

/// The protocol's id (from the table in [`crate::protocol::ids`]).
pub(crate) const PROTOCOL: &str = crate::protocol::ids::OLLAMA;

/// Ollama's tool definitions have no field a tool could add: provider options under `"ollama"`
/// are refused.
pub(crate) const TOOL_OPTIONS: wire::ToolOptions = wire::ToolOptions::Refused {
    key: PROTOCOL,
    why: "Ollama's tool definitions have no fields besides the name, description and parameters the library writes",
};

/// The key a tool's definition is kept under.
const KEY: &str = "ollama";

/// A tool's `{"type":"function","function":{…}}` entry, serialized once and reused; `None`
/// when its schema is past the budget (the tool is left out, see [`wire::definition`]).
fn definition(
    spec: &ToolSpec,
    budget: &SchemaBudget,
) -> Result<Option<Arc<RawValue>>, ProviderError> {
    wire::definition(
        PROTOCOL,
        spec,
        KEY,
        &TOOL_OPTIONS,
        budget,
        false,
        |spec, budget, entry| {
            let parameters = schema::ollama::parameters(spec.parameters(), budget)?.schema;
            wire::function_entry(entry, spec, parameters);
            Ok(())
        },
    )
}

#[derive(Serialize)]
struct CallOut<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "str::is_empty")]
    id: &'a str,
    function: FunctionOut<'a>,
}

#[derive(Serialize)]
struct FunctionOut<'a> {
    index: usize,
    name: String,
    arguments: ArgumentsObject<'a>,
}

#[derive(Serialize)]
struct MessageOut<'a> {
    role: &'static str,
    content: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    images: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<CallOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

/// A message's text (text files inlined) and its images; other attachments are refused.
fn text_and_images(name: &str, parts: &[Part]) -> Result<(String, Vec<String>), ProviderError> {
    let mut text = String::new();
    let mut images = Vec::new();
    for p in parts {
        match p {
            Part::Text { text: t } => {
                if !text.is_empty() && !t.is_empty() {
                    text.push('\n');
                }
                text.push_str(t);
            }
            Part::Attachment(a) if a.is_image() => match a.source() {
                Source::Url(_) => {
                    return Err(request_error(
                        name,
                        "Ollama takes images as bytes, not URLs",
                    ));
                }
                _ => images.push(a.base64().unwrap_or_default()),
            },
            // No search-result block here: the result as text.
            Part::SearchResult(r) => {
                wire::push_line(&mut text, &r.to_text());
            }
            Part::Attachment(a) => match attachment_as_text(a) {
                Some(inlined) => {
                    wire::push_line(&mut text, &inlined);
                }
                None => {
                    return Err(wire::attachment_refused(
                        name,
                        "Ollama takes images and text as attachments",
                        a,
                    ));
                }
            },
            _ => {}
        }
    }
    Ok((text, images))
}

fn call_out(index: usize, call: &ToolCall) -> CallOut<'_> {
    CallOut {
        kind: "function",
        id: &call.id,
        function: FunctionOut {
            index,
            name: call.joined_name(),
            arguments: ArgumentsObject::of(call),
        },
    }
}

fn messages<'a>(name: &str, messages: &'a [Message]) -> Result<Vec<MessageOut<'a>>, ProviderError> {
    let mut out = Vec::with_capacity(messages.len());
    let mut last_calls = wire::ById::new(&[], |c: &'a ToolCall| Some(c.id.as_str()));
    for m in messages {
        let role = match m.role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
            _ => continue,
        };
        let (mut content, images) = text_and_images(name, &m.content)?;
        if m.role == Role::Assistant
            && content.is_empty()
            && m.tool_calls.is_empty()
            && let Some(refusal) = &m.refusal
        {
            content = refusal.clone();
        }
        let thinking = wire::protocol_data(m, PROTOCOL, "thinking").and_then(Value::as_str);
        let (tool_name, tool_call_id) = if m.role == Role::Tool {
            let id = m.tool_call_id.as_deref();
            let tool = id
                .and_then(|id| last_calls.get(id))
                .map(ToolCall::joined_name);
            (tool, id)
        } else {
            (None, None)
        };
        if m.role == Role::Assistant {
            last_calls = wire::ById::new(&m.tool_calls, |c| Some(c.id.as_str()));
        }
        out.push(MessageOut {
            role,
            content,
            images,
            thinking,
            tool_calls: m
                .tool_calls
                .iter()
                .enumerate()
                .map(|(i, c)| call_out(i, c))
                .collect(),
            tool_name,
            tool_call_id,
        });
    }
    Ok(out)
}

/// Writes the request body; the tool definitions come from `kept` when the request has the
/// last request's tools.
pub(crate) fn body(
    config: &OllamaConfig,
    kept: &wire::kept::KeptDefinitions,
    request: &Request<'_>,
    stream: bool,
) -> Result<Vec<u8>, ProviderError> {
    let name = config.name();
    let offer_tools = match request.choice {
        ToolChoice::Auto => true,
        ToolChoice::None => false,
        other => return Err(wire::unsupported_choice(name, other)),
    };
    let budget = &config.schema_budget;
    let definitions = if offer_tools {
        kept.get(KEY, budget, request, || {
            request
                .tools
                .iter()
                .filter(|t| wire::sent_without_native_search(request, t.spec()))
                .map(|t| definition(t.spec(), budget))
                .collect()
        })?
    } else {
        Arc::from([])
    };
    let server_tools = wire::provider_tools::definitions(
        name,
        PROTOCOL,
        request.provider_tools,
        wire::provider_tools::none,
        None,
    )?;
    let messages = messages(name, request.messages)?;
    let mut w = BodyWriter::for_request(
        request,
        definitions.iter().map(|d| d.get().len()).sum::<usize>(),
    );
    w.field("model", config.model());
    w.field("messages", &messages);
    if !definitions.is_empty() || !server_tools.is_empty() {
        w.raw_array(
            "tools",
            definitions
                .iter()
                .map(|d| d.get())
                .chain(server_tools.iter().map(String::as_str)),
        );
    }
    w.field("stream", &stream);
    if let Some(output) = request.output {
        let field = wire::output::format(
            name,
            output,
            "ollama/format",
            &config.schema_budget,
            output_format,
        )?;
        w.raw("format", field.get());
    }
    if let Some(think) = &config.options.think {
        w.field("think", think);
    }
    if let Some(keep_alive) = &config.options.keep_alive {
        w.field("keep_alive", keep_alive);
    }
    if !config.options.options.is_empty() {
        w.field("options", &config.options.options);
    }
    w.finish(name)
}

/// Ollama's `format`: the schema itself, in the form its decoder keeps.
fn output_format(output: &OutputSchema, budget: &SchemaBudget) -> Built {
    Ok(schema::ollama::parameters(output.schema(), budget)?.schema)
}
