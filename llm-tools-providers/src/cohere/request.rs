//! Writing a v2 chat request: the messages (the system prompt, user text and images, assistant
//! text with its `tool_plan` and calls, tool results as documents the model can cite), the
//! tools (serialized once), and the tool choice.

use std::sync::Arc;

use llm_tools_core::{
    Message, OutputSchema, Part, ProviderError, Request, Role, ToolCall, ToolChoice, ToolSpec,
};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::config::CohereConfig;
use crate::schema::SchemaBudget;
use crate::wire::output::{Built, plain};
use crate::wire::{self, BodyWriter, attachment_as_text, attachment_url};

/// The protocol's id (from the table in [`crate::protocol::ids`]), also the key of the provider
/// data it reads back.
pub(crate) const PROTOCOL: &str = crate::protocol::ids::COHERE;

/// Cohere's tool definitions have no field a tool could add: provider options under `"cohere"`
/// are refused.
pub(crate) const TOOL_OPTIONS: wire::ToolOptions = wire::ToolOptions::Refused {
    key: PROTOCOL,
    why: "Cohere's tool definitions have no fields besides the name, description and parameters the library writes",
};

/// The key a tool's definition is kept under.
const KEY: &str = "cohere";

/// A tool's `{"type":"function","function":{…}}` entry, serialized once and reused; `None`
/// when its schema is past the budget (the tool is left out, see [`wire::definition`]).
fn definition(
    spec: &ToolSpec,
    budget: &SchemaBudget,
    forced: bool,
) -> Result<Option<Arc<RawValue>>, ProviderError> {
    wire::definition(
        PROTOCOL,
        spec,
        KEY,
        &TOOL_OPTIONS,
        budget,
        forced,
        |spec, budget, entry| {
            budget.check(spec.parameters())?;
            wire::function_entry(entry, spec, spec.parameters().clone());
            Ok(())
        },
    )
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum PartOut<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: ImageUrl },
    Document { document: Document<'a> },
}

#[derive(Serialize)]
struct ImageUrl {
    url: String,
}

#[derive(Serialize)]
struct Document<'a> {
    /// The source of a search result, which citations name.
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    data: DocumentData<'a>,
}

/// A document's data: text, or a search result's fields.
#[derive(Serialize)]
#[serde(untagged)]
enum DocumentData<'a> {
    Text(std::borrow::Cow<'a, str>),
    SearchResult {
        title: &'a str,
        text: std::borrow::Cow<'a, str>,
        url: &'a str,
    },
}

impl<'a> Document<'a> {
    fn text(text: impl Into<std::borrow::Cow<'a, str>>) -> Self {
        Document {
            id: None,
            data: DocumentData::Text(text.into()),
        }
    }
}

#[derive(Serialize)]
struct CallOut<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: FunctionOut<'a>,
}

#[derive(Serialize)]
struct FunctionOut<'a> {
    name: String,
    arguments: &'a str,
}

#[derive(Serialize)]
struct MessageOut<'a> {
    role: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<Vec<PartOut<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_plan: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<CallOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

fn parts<'a>(
    name: &str,
    content: &'a [Part],
    documents: bool,
) -> Result<Vec<PartOut<'a>>, ProviderError> {
    let mut out = Vec::with_capacity(content.len());
    for p in content {
        match p {
            Part::Text { text } if text.is_empty() => {}
            Part::Text { text } if documents => out.push(PartOut::Document {
                document: Document::text(text.as_str()),
            }),
            Part::SearchResult(r) => {
                let text = match r.content.as_slice() {
                    [one] => std::borrow::Cow::Borrowed(one.as_str()),
                    many => std::borrow::Cow::Owned(many.join("\n")),
                };
                out.push(PartOut::Document {
                    document: Document {
                        id: Some(&r.source),
                        data: DocumentData::SearchResult {
                            title: &r.title,
                            text,
                            url: &r.source,
                        },
                    },
                });
            }
            Part::Text { text } => out.push(PartOut::Text { text }),
            Part::Attachment(a) if a.is_image() && !documents => out.push(PartOut::ImageUrl {
                image_url: ImageUrl {
                    url: attachment_url(a),
                },
            }),
            Part::Attachment(a) => match attachment_as_text(a) {
                Some(text) => out.push(PartOut::Document {
                    document: Document::text(text),
                }),
                None => {
                    return Err(wire::attachment_refused(
                        name,
                        "Cohere takes images in user messages and text in tool results",
                        a,
                    ));
                }
            },
            _ => {}
        }
    }
    Ok(out)
}

fn call_out(call: &ToolCall) -> CallOut<'_> {
    CallOut {
        id: &call.id,
        kind: "function",
        function: FunctionOut {
            name: call.joined_name(),
            arguments: wire::arguments_text(&call.arguments),
        },
    }
}

fn messages<'a>(name: &str, messages: &'a [Message]) -> Result<Vec<MessageOut<'a>>, ProviderError> {
    let mut out = Vec::with_capacity(messages.len());
    for m in messages {
        let message = match m.role {
            Role::System | Role::User => MessageOut {
                role: if m.role == Role::System {
                    "system"
                } else {
                    "user"
                },
                content: Some(parts(name, &m.content, false)?),
                tool_plan: None,
                tool_calls: Vec::new(),
                tool_call_id: None,
            },
            Role::Assistant => {
                let mut content = parts(name, &m.content, false)?;
                if content.is_empty()
                    && m.tool_calls.is_empty()
                    && let Some(refusal) = &m.refusal
                {
                    content.push(PartOut::Text { text: refusal });
                }
                MessageOut {
                    role: "assistant",
                    content: (!content.is_empty()).then_some(content),
                    tool_plan: wire::protocol_data(m, PROTOCOL, "tool_plan")
                        .and_then(Value::as_str)
                        .filter(|_| !m.tool_calls.is_empty()),
                    tool_calls: m.tool_calls.iter().map(call_out).collect(),
                    tool_call_id: None,
                }
            }
            Role::Tool => {
                let mut content = parts(name, &m.content, true)?;
                if content.is_empty() {
                    content.push(PartOut::Document {
                        document: Document::text(""),
                    });
                }
                if m.is_error
                    && let Some(PartOut::Document { document }) = content.first_mut()
                    && let DocumentData::Text(text) = &mut document.data
                {
                    *text = format!("Error: {text}").into();
                }
                MessageOut {
                    role: "tool",
                    content: Some(content),
                    tool_plan: None,
                    tool_calls: Vec::new(),
                    tool_call_id: m.tool_call_id.as_deref(),
                }
            }
            _ => continue,
        };
        out.push(message);
    }
    Ok(out)
}

/// Writes the request body; the tool definitions come from `kept` when the request has the
/// last request's tools and forces none.
pub(crate) fn body(
    config: &CohereConfig,
    kept: &wire::kept::KeptDefinitions,
    request: &Request<'_>,
    stream: bool,
) -> Result<Vec<u8>, ProviderError> {
    let name = config.name();
    // Cohere cannot force one tool by name: it is offered alone, and a call is required.
    let (forced, choice) = match request.choice {
        ToolChoice::Auto => (None, None),
        ToolChoice::Required => (None, Some("REQUIRED")),
        ToolChoice::None => (None, Some("NONE")),
        ToolChoice::Tool(joined) => {
            if request.tool(joined).is_none() {
                return Err(wire::unknown_forced_tool(name, joined));
            }
            (Some(joined.as_str()), Some("REQUIRED"))
        }
        other => return Err(wire::unsupported_choice(name, other)),
    };
    let budget = &config.schema_budget;
    let build = || {
        request
            .tools
            .iter()
            .map(|t| t.spec())
            .filter(|s| {
                forced.map_or(wire::sent_without_native_search(request, s), |f| {
                    s.joined_name() == f
                })
            })
            .map(|s| definition(s, budget, forced.is_some()))
            .collect::<Result<Vec<_>, _>>()
    };
    // A request that forces a tool offers it alone: not the list the chat sends otherwise.
    let definitions: Arc<[Arc<RawValue>]> = match forced {
        None => kept.get(KEY, budget, request, build)?,
        Some(_) => build()?.into_iter().flatten().collect(),
    };
    let server_tools = wire::provider_tools::definitions(
        name,
        "cohere",
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
    w.field("stream", &stream);
    if let Some(output) = request.output {
        let field = wire::output::format(
            name,
            output,
            "cohere/response_format",
            &config.schema_budget,
            response_format,
        )?;
        w.raw("response_format", field.get());
    }
    if !definitions.is_empty() || !server_tools.is_empty() {
        w.raw_array(
            "tools",
            definitions
                .iter()
                .map(|d| d.get())
                .chain(server_tools.iter().map(String::as_str)),
        );
        if let Some(choice) = choice {
            w.field("tool_choice", choice);
        }
        if config.options.strict_tools {
            w.field("strict_tools", &true);
        }
    }
    w.finish(name)
}

/// Cohere v2's `response_format`.
fn response_format(output: &OutputSchema, budget: &SchemaBudget) -> Built {
    Ok(json!({"type": "json_object", "json_schema": plain(output, budget)?}))
}
