//! Writing a Converse request: the system prompt, the messages (tool uses, tool results with
//! their status and attachments, reasoning blocks sent back as they came), the tool
//! configuration (definitions serialized once, the tool choice), and the inference settings.

use std::sync::Arc;

use llm_tools_core::{
    Attachment, Message, OutputSchema, Part, ProviderError, ProviderTool, Request, Role, Source,
    ToolCall, ToolChoice, ToolSpec,
};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::config::BedrockConfig;
use crate::schema::SchemaBudget;
use crate::wire::output::{Built, closed_schema};
use crate::wire::{
    self, ArgumentsObject, BodyWriter, CallsInOrder, attachment_as_text, request_error,
};

/// The protocol's id (from the table in [`crate::protocol::ids`]), also the key of the provider
/// data it reads back.
pub(crate) const PROTOCOL: &str = crate::protocol::ids::BEDROCK_CONVERSE;

/// Where a tool's provider options (under `"bedrock.converse"`) go: into its `toolSpec`, beside
/// the fields written here (`strict`, …), except `cachePoint`, which is an entry of its own
/// right after the tool's ([`cache_point_after`]); the fields the library writes are refused.
pub(crate) const TOOL_OPTIONS: wire::ToolOptions = wire::ToolOptions::Merged {
    key: PROTOCOL,
    into: Some("toolSpec"),
    own: &["name", "description", "inputSchema"],
    apart: &["cachePoint"],
};

/// The `{"cachePoint": …}` entry a tool's options ask for right after its own (so that the
/// tools up to it are cached), if they do.
fn cache_point_after(spec: &ToolSpec) -> Option<String> {
    let point = spec.provider_options(PROTOCOL)?.get("cachePoint")?;
    Some(json!({ "cachePoint": point }).to_string())
}

/// The `toolSpec` entry of one tool, serialized once and reused by every request: the joined
/// name, the description, and the schema as it is (Converse takes JSON Schema in
/// `inputSchema.json`); `None` when the schema is past the budget (the tool is left out, see
/// [`wire::definition`]).
fn definition(
    spec: &ToolSpec,
    budget: &SchemaBudget,
    forced: bool,
) -> Result<Option<Arc<RawValue>>, ProviderError> {
    wire::definition(
        PROTOCOL,
        spec,
        "bedrock",
        &TOOL_OPTIONS,
        budget,
        forced,
        |spec, budget, entry| {
            let mut tool = serde_json::Map::new();
            tool.insert("name".into(), Value::from(spec.joined_name()));
            if !spec.description().is_empty() {
                tool.insert("description".into(), Value::from(spec.description()));
            }
            let schema = crate::schema::bedrock::input_schema(spec.parameters(), budget)?;
            tool.insert("inputSchema".into(), json!({ "json": schema }));
            entry.insert("toolSpec".into(), Value::Object(tool));
            Ok(())
        },
    )
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
enum Block<'a> {
    Text(&'a str),
    Image {
        format: &'static str,
        source: Bytes,
    },
    Document {
        format: &'static str,
        name: String,
        source: Bytes,
    },
    ToolUse {
        #[serde(rename = "toolUseId")]
        tool_use_id: &'a str,
        name: String,
        input: ArgumentsObject<'a>,
    },
    ToolResult {
        #[serde(rename = "toolUseId")]
        tool_use_id: &'a str,
        content: Vec<Block<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        status: Option<&'static str>,
    },
    /// A search result a tool returned, which the model can cite.
    SearchResult {
        source: &'a str,
        title: &'a str,
        content: Vec<TextOut<'a>>,
        citations: Enabled,
    },
    #[serde(untagged)]
    Raw(&'a Value),
    #[serde(untagged)]
    Inlined {
        text: String,
    },
}

/// `{"text": …}` inside a search result.
#[derive(Serialize)]
struct TextOut<'a> {
    text: &'a str,
}

/// `{"enabled": true}`.
#[derive(Serialize)]
struct Enabled {
    enabled: bool,
}

#[derive(Serialize)]
struct Bytes {
    bytes: String,
}

#[derive(Serialize)]
struct MessageOut<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

/// The image formats Converse takes.
fn image_format(media_type: &str) -> Option<&'static str> {
    Some(match media_type {
        "image/png" => "png",
        "image/jpeg" | "image/jpg" => "jpeg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        _ => return None,
    })
}

/// The document formats Converse takes.
fn document_format(media_type: &str) -> Option<&'static str> {
    Some(match media_type {
        "application/pdf" => "pdf",
        "text/csv" => "csv",
        "application/msword" => "doc",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document" => "docx",
        "application/vnd.ms-excel" => "xls",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" => "xlsx",
        "text/html" => "html",
        "text/markdown" => "md",
        _ => return None,
    })
}

/// A document's name as Converse allows it (letters, digits, spaces, hyphens, parentheses and
/// square brackets; no extension), from the attachment's file name.
fn document_name(a: &Attachment) -> String {
    let file = a.filename().unwrap_or("document");
    let stem = file.rsplit_once('.').map_or(file, |(stem, _)| stem);
    let name: String = stem
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || matches!(c, ' ' | '-' | '(' | ')' | '[' | ']') {
                c
            } else {
                '-'
            }
        })
        .collect();
    if name.trim().is_empty() {
        "document".into()
    } else {
        name
    }
}

fn attachment_block<'a>(name: &str, a: &'a Attachment) -> Result<Block<'a>, ProviderError> {
    let url_refused = || {
        request_error(
            name,
            format!(
                "Converse takes attachments as bytes (or S3 locations through provider options), not URLs; `{}` is a URL",
                a.filename().unwrap_or("an attachment")
            ),
        )
    };
    if let Some(format) = image_format(a.media_type()) {
        if matches!(a.source(), Source::Url(_)) {
            return Err(url_refused());
        }
        return Ok(Block::Image {
            format,
            source: Bytes {
                bytes: a.base64().unwrap_or_default(),
            },
        });
    }
    if let Some(format) = document_format(a.media_type()) {
        if matches!(a.source(), Source::Url(_)) {
            return Err(url_refused());
        }
        return Ok(Block::Document {
            format,
            name: document_name(a),
            source: Bytes {
                bytes: a.base64().unwrap_or_default(),
            },
        });
    }
    if let Some(text) = attachment_as_text(a) {
        return Ok(Block::Inlined { text });
    }
    Err(wire::attachment_refused(
        name,
        "Converse takes images, documents and text as attachments",
        a,
    ))
}

fn content_blocks<'a>(name: &str, parts: &'a [Part]) -> Result<Vec<Block<'a>>, ProviderError> {
    let mut out = Vec::with_capacity(parts.len());
    for p in parts {
        match p {
            Part::Text { text } if text.is_empty() => {}
            Part::Text { text } => out.push(Block::Text(text)),
            Part::Attachment(a) => out.push(attachment_block(name, a)?),
            Part::SearchResult(r) => out.push(Block::SearchResult {
                source: &r.source,
                title: &r.title,
                content: r.content.iter().map(|text| TextOut { text }).collect(),
                citations: Enabled {
                    enabled: r.citations,
                },
            }),
            _ => {}
        }
    }
    Ok(out)
}

fn tool_use(call: &ToolCall) -> Block<'_> {
    Block::ToolUse {
        tool_use_id: &call.id,
        name: call.joined_name(),
        input: ArgumentsObject::of(call),
    }
}

/// An assistant message's blocks: in the order the answer had them (the provider data keeps
/// that order when the answer had reasoning blocks), text and tool uses from the message.
fn assistant_blocks(m: &Message) -> Vec<Block<'_>> {
    let texts: Vec<&str> = m.content.iter().filter_map(Part::as_text).collect();
    let skeleton = wire::protocol_data(m, PROTOCOL, "content").and_then(Value::as_array);
    let mut out = Vec::with_capacity(texts.len() + m.tool_calls.len());
    let mut next_text = 0;
    let mut calls = CallsInOrder::new(&m.tool_calls);
    for entry in skeleton.into_iter().flatten() {
        if entry.get("text") == Some(&Value::Null) {
            if let Some(t) = texts.get(next_text).filter(|t| !t.is_empty()) {
                out.push(Block::Text(t));
            }
            next_text += 1;
        } else if let Some(id) = entry
            .get("toolUse")
            .filter(|u| !super::response::is_server_tool(u))
            .and_then(|u| u.get("toolUseId"))
        {
            out.extend(calls.take(id.as_str()).map(tool_use));
        } else {
            // A server tool's use (Nova's `nova_grounding`) and its result go back as they came.
            // A cited passage's text is in the message's text too: the block carries it back.
            if super::response::has_cited_text(entry) {
                next_text += 1;
            }
            out.push(Block::Raw(entry));
        }
    }
    for t in texts.iter().skip(next_text).filter(|t| !t.is_empty()) {
        out.push(Block::Text(t));
    }
    if out.is_empty()
        && m.tool_calls.is_empty()
        && let Some(refusal) = &m.refusal
    {
        out.push(Block::Text(refusal));
    }
    out.extend(calls.rest().map(tool_use));
    out
}

/// Adds a user turn, merged into the last one when it is the user's too (Converse wants the
/// roles to alternate: tool results and the next question travel together).
fn push_user<'a>(out: &mut Vec<MessageOut<'a>>, content: Vec<Block<'a>>) {
    if content.is_empty() {
        return;
    }
    match out.last_mut() {
        Some(last) if last.role == "user" => last.content.extend(content),
        _ => out.push(MessageOut {
            role: "user",
            content,
        }),
    }
}

type Conversation<'a> = (Vec<Block<'a>>, Vec<MessageOut<'a>>, bool);

/// The system blocks, the messages, and whether the history has tool uses.
fn messages<'a>(name: &str, messages: &'a [Message]) -> Result<Conversation<'a>, ProviderError> {
    let mut system = Vec::new();
    let mut out: Vec<MessageOut<'a>> = Vec::with_capacity(messages.len());
    let mut used_tools = false;
    for m in messages {
        match m.role {
            Role::System => system.extend(content_blocks(name, &m.content)?),
            Role::User => push_user(&mut out, content_blocks(name, &m.content)?),
            Role::Assistant => {
                used_tools |= !m.tool_calls.is_empty();
                let content = assistant_blocks(m);
                if !content.is_empty() {
                    out.push(MessageOut {
                        role: "assistant",
                        content,
                    });
                }
            }
            Role::Tool => {
                let mut content = content_blocks(name, &m.content)?;
                if content.is_empty() {
                    // A result must have content; an empty one is an empty text.
                    content.push(Block::Text(""));
                }
                let result = Block::ToolResult {
                    tool_use_id: m.tool_call_id.as_deref().unwrap_or_default(),
                    content,
                    status: m.is_error.then_some("error"),
                };
                push_user(&mut out, vec![result]);
            }
            _ => {}
        }
    }
    Ok((system, out, used_tools))
}

/// The `toolChoice` value (`None`: the default, auto).
fn tool_choice(name: &str, request: &Request<'_>) -> Result<Option<Value>, ProviderError> {
    Ok(match request.choice {
        ToolChoice::Auto => None,
        ToolChoice::Required => Some(json!({"any": {}})),
        ToolChoice::Tool(joined) => {
            if request.tool(joined).is_none() {
                return Err(wire::unknown_forced_tool(name, joined));
            }
            Some(json!({"tool": {"name": joined}}))
        }
        other => return Err(wire::unsupported_choice(name, other)),
    })
}

/// Writes the request body (the same for Converse and ConverseStream).
pub(crate) fn body(
    config: &BedrockConfig,
    request: &Request<'_>,
) -> Result<Vec<u8>, ProviderError> {
    let name = config.name();
    let (system, messages, used_tools) = messages(name, request.messages)?;
    // Converse has no "no tools" choice: without tools it cannot call any, but a history with
    // tool uses needs the tool configuration, so `None` works only before the first call.
    let offer_tools = !request.tools.is_empty() && *request.choice != ToolChoice::None;
    if *request.choice == ToolChoice::None && used_tools && !request.tools.is_empty() {
        return Err(request_error(
            name,
            "Converse cannot forbid tool calls once the conversation has some (it needs the tools declared); use `ToolChoice::Auto`, or instructions",
        ));
    }
    let definitions = if offer_tools {
        request
            .tools
            .iter()
            .filter(|t| wire::sent_without_native_search(request, t.spec()))
            .filter_map(|t| {
                let spec = t.spec();
                let is_forced = wire::forced_tool(request) == Some(spec.joined_name());
                definition(spec, &config.schema_budget, is_forced)
                    .transpose()
                    .map(|d| d.map(|d| (d, cache_point_after(spec))))
            })
            .collect::<Result<Vec<_>, _>>()?
    } else {
        Vec::new()
    };
    let server_tools = wire::provider_tools::definitions(
        name,
        PROTOCOL,
        request.provider_tools,
        provider_tool,
        None,
    )?;
    let mut w = BodyWriter::for_request(
        request,
        definitions
            .iter()
            .map(|(d, _)| d.get().len())
            .sum::<usize>(),
    );
    w.field("messages", &messages);
    let cache_point = json!({"cachePoint": {"type": "default"}});
    let mut system = system;
    if !system.is_empty() {
        if config.options.cache_points {
            system.push(Block::Raw(&cache_point));
        }
        w.field("system", &system);
    }
    let mut inference = serde_json::Map::new();
    if let Some(max) = config.options.max_tokens {
        inference.insert("maxTokens".into(), Value::from(max));
    }
    w.field("inferenceConfig", &inference);
    if let Some(output) = request.output {
        let field = wire::output::format(
            name,
            output,
            "bedrock/outputConfig",
            &config.schema_budget,
            output_config,
        )?;
        w.raw("outputConfig", field.get());
    }
    if !definitions.is_empty() || !server_tools.is_empty() {
        let mut tools = String::with_capacity(
            64 + definitions
                .iter()
                .map(|(d, _)| d.get().len())
                .sum::<usize>(),
        );
        tools.push_str("{\"tools\":");
        let point = r#"{"cachePoint":{"type":"default"}}"#;
        let points = config.options.cache_points.then_some(point);
        wire::push_raw_array(
            &mut tools,
            definitions
                .iter()
                .flat_map(|(d, point)| std::iter::once(d.get()).chain(point.as_deref()))
                .chain(server_tools.iter().map(String::as_str))
                .chain(points),
        );
        if let Some(choice) = tool_choice(name, request)? {
            tools.push_str(",\"toolChoice\":");
            tools.push_str(&choice.to_string());
        }
        tools.push('}');
        w.raw("toolConfig", &tools);
    }
    w.finish(name)
}

/// Bedrock Converse's `outputConfig`: the schema travels as a JSON string.
fn output_config(output: &OutputSchema, budget: &SchemaBudget) -> Built {
    let schema = closed_schema(output, budget)?.to_string();
    Ok(
        json!({"textFormat": {"type": "json_schema", "structure": {"jsonSchema": {"schema": schema, "name": output.name()}}}}),
    )
}

/// Bedrock Converse's system tools: web search is Nova's grounding (Amazon Nova models only).
fn provider_tool(tool: &ProviderTool) -> Option<Value> {
    match tool {
        ProviderTool::WebSearch(_) => Some(json!({"systemTool": {"name": "nova_grounding"}})),
        _ => None,
    }
}
