//! Writing a Messages request: tool definitions (serialized once per dialect), deferred tools
//! with the tool-search entry, the computer toolset, tool choice with the parallel switch, the
//! system prompt, and the messages with tool results grouped per round.

use std::borrow::Cow;
use std::sync::Arc;

use llm_tools_core::provider_tools::WebFetch;
use llm_tools_core::{
    Attachment, Message, OutputSchema, Part, ProviderError, ProviderTool, Request, Role, Source,
    Tool, ToolCall, ToolChoice, ToolSpec, WebSearch,
};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::config::{AnthropicConfig, MCP_CONNECTOR_BETA, WEB_FETCH_BETA};
use crate::schema::anthropic::{COMPUTER_TOOLSET_MEMBERS, native_toolset_member};
use crate::schema::{self, SchemaBudget};
use crate::wire::output::{Built, closed_schema};
use crate::wire::provider_tools::{McpTokens, token};
use crate::wire::{
    self, ArgumentsObject, BodyWriter, CallsInOrder, attachment_as_text, request_error,
};

/// The protocol's id (from the table in [`crate::protocol::ids`]), also the key of the provider
/// data it reads back.
pub(crate) const PROTOCOL: &str = crate::protocol::ids::ANTHROPIC;

/// The tool a structured answer comes through on models without structured output.
pub(crate) const ANSWER_TOOL: &str = "final_answer";

/// The definition of [`ANSWER_TOOL`] for `output`: its input is the answer.
fn answer_tool(output: &OutputSchema, budget: &SchemaBudget) -> Built {
    Ok(serde_json::json!({
        "name": ANSWER_TOOL,
        "description": format!(
            "Gives the final answer as a `{}` object: call it once, with the whole answer as its input, instead of answering in text.",
            output.name()
        ),
        "input_schema": closed_schema(output, budget)?,
    }))
}

/// Whether this request asks for structured output through [`ANSWER_TOOL`].
pub(crate) fn answers_through_tool(config: &AnthropicConfig, request: &Request<'_>) -> bool {
    request.output.is_some() && !config.native_structured_output()
}

/// The `type` of the computer-use toolset entry.
pub(crate) const COMPUTER_TOOLSET: &str = "computer_toolset_20260801";

/// Where a custom tool's provider options (under `"anthropic"`) go: into its entry, beside the
/// fields written here (`cache_control`, `input_examples`, `eager_input_streaming`,
/// `allowed_callers`, …); the fields the library writes are refused.
pub(crate) const TOOL_OPTIONS: wire::ToolOptions = wire::ToolOptions::Merged {
    key: PROTOCOL,
    into: None,
    own: &[
        "name",
        "description",
        "input_schema",
        "strict",
        "defer_loading",
        "type",
    ],
    apart: &[],
};

/// The definition of one custom tool (its joined name, its schema in the dialect asked for),
/// serialized once per dialect and reused by every request; `None` when its schema is past the
/// budget (the tool is left out, see [`wire::definition`]).
pub(crate) fn definition(
    spec: &ToolSpec,
    strict: bool,
    budget: &SchemaBudget,
    forced: bool,
) -> Result<Option<Arc<RawValue>>, ProviderError> {
    let key = if strict {
        "anthropic/strict"
    } else {
        "anthropic/plain"
    };
    wire::definition(
        PROTOCOL,
        spec,
        key,
        &TOOL_OPTIONS,
        budget,
        forced,
        |spec, budget, tool| {
            let (input_schema, strict) = wire::strict_or_plain(
                strict,
                spec.parameters(),
                budget,
                schema::anthropic::strict,
                schema::anthropic::input_schema,
            )?;
            tool.insert("name".into(), Value::from(spec.joined_name()));
            if !spec.description().is_empty() {
                tool.insert("description".into(), Value::from(spec.description()));
            }
            tool.insert("input_schema".into(), input_schema);
            if strict {
                tool.insert("strict".into(), Value::Bool(true));
            }
            Ok(())
        },
    )
}

/// A cached definition with `"defer_loading": true` added.
fn deferred(definition: &RawValue) -> String {
    let text = definition.get();
    let body = text.strip_suffix('}').unwrap_or(text);
    format!("{body},\"defer_loading\":true}}")
}

/// The `tools` array, as JSON texts.
fn tools_json(
    config: &AnthropicConfig,
    tools: &[Arc<dyn Tool>],
    forced: Option<&str>,
) -> Result<Vec<Cow<'static, str>>, ProviderError> {
    let name = config.name();
    let mut out: Vec<Cow<'static, str>> = Vec::with_capacity(tools.len() + 2);
    let mut members: Vec<&str> = Vec::new();
    let mut toolset_slot = None;
    let mut any_deferred = false;
    for tool in tools {
        let spec = tool.spec();
        let namespace = spec.namespace().map(|n| n.name());
        match native_toolset_member(namespace, spec.name()) {
            Err(reason) => {
                return Err(request_error(
                    name,
                    format!("tool `{}`: {reason}", spec.joined_name()),
                ));
            }
            Ok(Some(member)) => {
                if spec.provider_options(PROTOCOL).is_some() {
                    return Err(request_error(
                        name,
                        format!(
                            "tool `{}` has provider options for `{PROTOCOL}`, and it is a member of the computer toolset, which goes as one `{COMPUTER_TOOLSET}` entry without fields per member: remove them",
                            spec.joined_name()
                        ),
                    ));
                }
                if toolset_slot.is_none() {
                    toolset_slot = Some(out.len());
                }
                members.push(member);
                continue;
            }
            Ok(None) => {}
        }
        let is_forced = forced == Some(spec.joined_name());
        let Some(def) = definition(
            spec,
            config.options.strict,
            &config.schema_budget,
            is_forced,
        )?
        else {
            continue;
        };
        if spec.defer() && forced != Some(spec.joined_name()) {
            any_deferred = true;
            out.push(Cow::Owned(deferred(&def)));
        } else {
            out.push(Cow::Owned(def.get().to_owned()));
        }
    }
    if let Some(slot) = toolset_slot {
        // Members without a tool are switched off, as Anthropic's SDKs do.
        let mut configs = Map::new();
        for member in COMPUTER_TOOLSET_MEMBERS {
            if !members.contains(member) {
                configs.insert((*member).to_owned(), serde_json::json!({"enabled": false}));
            }
        }
        let mut entry = Map::new();
        entry.insert("type".into(), Value::from(COMPUTER_TOOLSET));
        if !configs.is_empty() {
            entry.insert("configs".into(), Value::Object(configs));
        }
        out.insert(slot, Cow::Owned(Value::Object(entry).to_string()));
    }
    if any_deferred {
        out.push(Cow::Borrowed(config.options.tool_search.entry()));
    }
    Ok(out)
}

#[derive(Serialize)]
#[serde(untagged)]
enum Block<'a> {
    Text {
        #[serde(rename = "type")]
        kind: &'static str,
        text: Cow<'a, str>,
        /// The citations the block came with, sent back as they came.
        #[serde(skip_serializing_if = "Option::is_none")]
        citations: Option<&'a Value>,
    },
    Media {
        #[serde(rename = "type")]
        kind: &'static str,
        source: SourceOut<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        title: Option<&'a str>,
    },
    ToolUse {
        #[serde(rename = "type")]
        kind: &'static str,
        id: &'a str,
        name: Cow<'a, str>,
        input: ArgumentsObject<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        toolset_name: Option<&'static str>,
        /// Who made the call, when not the model directly, as the answer said.
        #[serde(skip_serializing_if = "Option::is_none")]
        caller: Option<&'a Value>,
    },
    ToolResult {
        #[serde(rename = "type")]
        kind: &'static str,
        tool_use_id: &'a str,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        content: Vec<Block<'a>>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        toolset_name: Option<&'static str>,
    },
    /// A search result a tool returned, which the model can cite.
    SearchResult {
        #[serde(rename = "type")]
        kind: &'static str,
        source: &'a str,
        title: &'a str,
        content: Vec<Block<'a>>,
        citations: Enabled,
    },
    Raw(&'a Value),
}

/// `{"enabled": true}`.
#[derive(Serialize)]
struct Enabled {
    enabled: bool,
}

impl<'a> Block<'a> {
    fn text(text: impl Into<Cow<'a, str>>) -> Self {
        Block::Text {
            kind: "text",
            text: text.into(),
            citations: None,
        }
    }
}

#[derive(Serialize)]
#[serde(untagged)]
enum SourceOut<'a> {
    Base64 {
        #[serde(rename = "type")]
        kind: &'static str,
        media_type: &'a str,
        data: String,
    },
    Url {
        #[serde(rename = "type")]
        kind: &'static str,
        url: &'a str,
    },
}

#[derive(Serialize)]
struct MessageOut<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

/// One attachment as a content block: images, PDFs, and text inlined; anything else is an error.
fn attachment_block<'a>(name: &str, a: &'a Attachment) -> Result<Block<'a>, ProviderError> {
    let source = |a: &'a Attachment| match a.source() {
        Source::Url(url) => SourceOut::Url { kind: "url", url },
        _ => SourceOut::Base64 {
            kind: "base64",
            media_type: a.media_type(),
            data: a.base64().unwrap_or_default(),
        },
    };
    if a.is_image() {
        return Ok(Block::Media {
            kind: "image",
            source: source(a),
            title: None,
        });
    }
    if a.media_type() == "application/pdf" {
        return Ok(Block::Media {
            kind: "document",
            source: source(a),
            title: a.filename(),
        });
    }
    if let Some(text) = attachment_as_text(a) {
        return Ok(Block::text(text));
    }
    Err(wire::attachment_refused(
        name,
        "Anthropic takes images, PDF documents and text as attachments",
        a,
    ))
}

fn content_blocks<'a>(name: &str, parts: &'a [Part]) -> Result<Vec<Block<'a>>, ProviderError> {
    let mut out = Vec::with_capacity(parts.len());
    for p in parts {
        match p {
            Part::Text { text } if text.is_empty() => {}
            Part::Text { text } => out.push(Block::text(Cow::Borrowed(text.as_str()))),
            Part::Attachment(a) => out.push(attachment_block(name, a)?),
            Part::SearchResult(r) => out.push(Block::SearchResult {
                kind: "search_result",
                source: &r.source,
                title: &r.title,
                content: r.content.iter().map(|t| Block::text(t.as_str())).collect(),
                citations: Enabled {
                    enabled: r.citations,
                },
            }),
            _ => {}
        }
    }
    Ok(out)
}

/// The name a call travels under, and the toolset it belongs to.
fn wire_name(call: &ToolCall) -> (Cow<'_, str>, Option<&'static str>) {
    if call.namespace.as_deref() == Some("computer")
        && COMPUTER_TOOLSET_MEMBERS.contains(&call.name.as_str())
    {
        return (Cow::Borrowed(call.name.as_str()), Some("computer"));
    }
    match &call.namespace {
        Some(_) => (Cow::Owned(call.joined_name()), None),
        None => (Cow::Borrowed(call.name.as_str()), None),
    }
}

fn tool_use(call: &ToolCall) -> Block<'_> {
    tool_use_by(call, None)
}

/// A call's `tool_use` block, with the `caller` the answer gave it (kept in the provider data).
fn tool_use_by<'a>(call: &'a ToolCall, caller: Option<&'a Value>) -> Block<'a> {
    let (name, toolset_name) = wire_name(call);
    Block::ToolUse {
        kind: "tool_use",
        id: &call.id,
        name,
        input: ArgumentsObject::of(call),
        toolset_name,
        caller,
    }
}

/// An assistant message's blocks, in the order the model produced them: thinking and server
/// blocks (kept in the provider data) where they were, text and tool calls from the message.
fn assistant_blocks(m: &Message) -> Vec<Block<'_>> {
    let texts: Vec<&str> = m.content.iter().filter_map(Part::as_text).collect();
    let skeleton = wire::protocol_data(m, PROTOCOL, "content").and_then(Value::as_array);
    let mut out = Vec::with_capacity(texts.len() + m.tool_calls.len());
    let mut next_text = 0;
    let mut calls = CallsInOrder::new(&m.tool_calls);
    for entry in skeleton.into_iter().flatten() {
        match entry.get("type").and_then(Value::as_str) {
            Some("text") if entry.get("text").is_none() => {
                if let Some(t) = texts.get(next_text).filter(|t| !t.is_empty()) {
                    out.push(Block::Text {
                        kind: "text",
                        text: Cow::Borrowed(*t),
                        citations: entry.get("citations").filter(|c| c.is_array()),
                    });
                }
                next_text += 1;
            }
            Some("tool_use") if entry.get("input").is_none() => {
                let id = entry.get("id").and_then(Value::as_str);
                let caller = entry.get("caller");
                out.extend(calls.take(id).map(|c| tool_use_by(c, caller)));
            }
            // What the API refuses in every later request: a thinking block without its
            // signature (a gateway that signs none), a block without a type.
            Some("thinking")
                if entry
                    .get("signature")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty) => {}
            None | Some("") => {}
            _ => out.push(Block::Raw(entry)),
        }
    }
    for t in texts.iter().skip(next_text).filter(|t| !t.is_empty()) {
        out.push(Block::text(Cow::Borrowed(*t)));
    }
    if out.is_empty()
        && m.tool_calls.is_empty()
        && let Some(refusal) = &m.refusal
    {
        out.push(Block::text(Cow::Borrowed(refusal.as_str())));
    }
    out.extend(calls.rest().map(tool_use));
    out
}

/// The system prompt and the messages. Every system message goes to the system prompt (the
/// Messages API has no system role); the results of one round go in one user message.
fn messages<'a>(
    name: &str,
    messages: &'a [Message],
) -> Result<(Vec<Block<'a>>, Vec<MessageOut<'a>>), ProviderError> {
    let mut system = Vec::new();
    let mut out: Vec<MessageOut<'a>> = Vec::with_capacity(messages.len());
    let mut results: Vec<Block<'a>> = Vec::new();
    let mut toolset_calls: Vec<&'a str> = Vec::new();
    let flush = |results: &mut Vec<Block<'a>>, out: &mut Vec<MessageOut<'a>>| {
        if !results.is_empty() {
            out.push(MessageOut {
                role: "user",
                content: std::mem::take(results),
            });
        }
    };
    for m in messages {
        if m.role != Role::Tool {
            flush(&mut results, &mut out);
        }
        match m.role {
            Role::System => system.extend(content_blocks(name, &m.content)?),
            Role::User => {
                let content = content_blocks(name, &m.content)?;
                if !content.is_empty() {
                    out.push(MessageOut {
                        role: "user",
                        content,
                    });
                }
            }
            Role::Assistant => {
                toolset_calls = m
                    .tool_calls
                    .iter()
                    .filter(|c| wire_name(c).1.is_some())
                    .map(|c| c.id.as_str())
                    .collect();
                let content = assistant_blocks(m);
                if !content.is_empty() {
                    out.push(MessageOut {
                        role: "assistant",
                        content,
                    });
                }
            }
            Role::Tool => {
                let id = m.tool_call_id.as_deref().unwrap_or_default();
                results.push(Block::ToolResult {
                    kind: "tool_result",
                    tool_use_id: id,
                    content: content_blocks(name, &m.content)?,
                    is_error: m.is_error,
                    toolset_name: toolset_calls.contains(&id).then_some("computer"),
                });
            }
            _ => {}
        }
    }
    flush(&mut results, &mut out);
    Ok((system, out))
}

#[derive(Serialize)]
struct ChoiceOut<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    disable_parallel_tool_use: Option<bool>,
}

/// The `tool_choice` value, or an error for a choice the protocol cannot express.
fn tool_choice<'a>(
    name: &str,
    request: &Request<'a>,
) -> Result<Option<ChoiceOut<'a>>, ProviderError> {
    let disable = request.parallel_tool_calls.map(|parallel| !parallel);
    let choice = match request.choice {
        ToolChoice::Auto => disable.map(|_| ChoiceOut {
            kind: "auto",
            name: None,
            disable_parallel_tool_use: disable,
        }),
        ToolChoice::None => Some(ChoiceOut {
            kind: "none",
            name: None,
            disable_parallel_tool_use: None,
        }),
        ToolChoice::Required => Some(ChoiceOut {
            kind: "any",
            name: None,
            disable_parallel_tool_use: disable,
        }),
        ToolChoice::Tool(joined) => {
            let Some(tool) = request.tool(joined) else {
                return Err(wire::unknown_forced_tool(name, joined));
            };
            let spec = tool.spec();
            if let Ok(Some(member)) =
                native_toolset_member(spec.namespace().map(|n| n.name()), spec.name())
            {
                return Err(request_error(
                    name,
                    format!(
                        "`{joined}` is the member `{member}` of Anthropic's computer-use toolset, and a toolset member cannot be forced; use `ToolChoice::Required` (with only the tools the model may pick) instead"
                    ),
                ));
            }
            Some(ChoiceOut {
                kind: "tool",
                name: Some(joined.as_str()),
                disable_parallel_tool_use: disable,
            })
        }
        other => return Err(wire::unsupported_choice(name, other)),
    };
    Ok(choice)
}

/// Writes the request body.
pub(crate) fn body(
    config: &AnthropicConfig,
    request: &Request<'_>,
    stream: bool,
) -> Result<Vec<u8>, ProviderError> {
    let name = config.name();
    let mut tools = tools_json(config, request.tools, wire::forced_tool(request))?;
    let through_tool = answers_through_tool(config, request);
    if through_tool && let Some(output) = request.output {
        if request.tool(ANSWER_TOOL).is_some() {
            return Err(request_error(
                name,
                format!(
                    "the tool `{ANSWER_TOOL}` carries the structured answer on `{}`, which has no structured output: rename the chat's tool of that name",
                    config.model()
                ),
            ));
        }
        let definition = wire::output::format(
            name,
            output,
            "anthropic/answer_tool",
            &config.schema_budget,
            answer_tool,
        )?;
        tools.push(Cow::Owned(definition.get().to_owned()));
    }
    let server_tools = wire::provider_tools::definitions(
        name,
        PROTOCOL,
        request.provider_tools,
        provider_tool,
        None,
    )?;
    let mcp_servers = mcp_server_entries(request.provider_tools, &config.mcp_tokens);
    if !mcp_servers.is_empty()
        && !config
            .options
            .betas
            .iter()
            .any(|b| b.starts_with("mcp-client-"))
    {
        return Err(request_error(
            name,
            format!(
                "Anthropic's MCP connector is a beta: add `.with_mcp_connector()` (the beta `{MCP_CONNECTOR_BETA}`) to the `AnthropicConfig`"
            ),
        ));
    }
    if request
        .provider_tools
        .iter()
        .any(|t| matches!(t, ProviderTool::WebFetch(_)))
        && !config
            .options
            .betas
            .iter()
            .any(|b| b.starts_with("web-fetch-"))
    {
        return Err(request_error(
            name,
            format!(
                "Anthropic's web fetch tool is a beta: add `.with_web_fetch()` (the beta `{WEB_FETCH_BETA}`) to the `AnthropicConfig`"
            ),
        ));
    }
    let (system, messages) = messages(name, request.messages)?;
    let mut w = BodyWriter::for_request(request, tools.iter().map(|t| t.len()).sum::<usize>());
    w.field("model", &config.model);
    w.field("max_tokens", &config.options.max_tokens);
    if !system.is_empty() {
        w.field("system", &system);
    }
    w.field("messages", &messages);
    if !mcp_servers.is_empty() {
        w.field("mcp_servers", &mcp_servers);
    }
    if !tools.is_empty() || !server_tools.is_empty() {
        w.raw_array(
            "tools",
            tools
                .iter()
                .map(|t| t.as_ref())
                .chain(server_tools.iter().map(String::as_str)),
        );
        let choice = match tool_choice(name, request)? {
            // The answer must come as a call: of the answer tool, or of a tool it runs first.
            _ if through_tool && request.tools.is_empty() => Some(ChoiceOut {
                kind: "tool",
                name: Some(ANSWER_TOOL),
                disable_parallel_tool_use: None,
            }),
            None if through_tool => Some(ChoiceOut {
                kind: "any",
                name: None,
                disable_parallel_tool_use: None,
            }),
            Some(ChoiceOut {
                kind: "auto",
                disable_parallel_tool_use,
                ..
            }) if through_tool => Some(ChoiceOut {
                kind: "any",
                name: None,
                disable_parallel_tool_use,
            }),
            Some(ChoiceOut { kind: "none", .. }) if through_tool => Some(ChoiceOut {
                kind: "tool",
                name: Some(ANSWER_TOOL),
                disable_parallel_tool_use: None,
            }),
            other => other,
        };
        if let Some(choice) = choice {
            w.field("tool_choice", &choice);
        }
    }
    if let Some(output) = request.output.filter(|_| !through_tool) {
        let field = wire::output::format(
            name,
            output,
            "anthropic/output_config",
            &config.schema_budget,
            output_config,
        )?;
        w.raw("output_config", field.get());
    }
    w.field("stream", &stream);
    w.finish(name)
}

/// Anthropic's `output_config`.
fn output_config(output: &OutputSchema, budget: &SchemaBudget) -> Built {
    Ok(json!({"format": {"type": "json_schema", "schema": closed_schema(output, budget)?}}))
}

/// Anthropic's top-level `mcp_servers`: one entry per remote MCP server, with its token.
fn mcp_server_entries(tools: &[ProviderTool], tokens: &McpTokens) -> Vec<Value> {
    tools
        .iter()
        .filter_map(|tool| match tool {
            ProviderTool::RemoteMcp(server) => {
                let mut def = json!({"type": "url", "url": server.url, "name": server.name});
                if let Some(token) = token(tokens, server) {
                    def["authorization_token"] = json!(token);
                }
                Some(def)
            }
            _ => None,
        })
        .collect()
}

/// Anthropic Messages' server tools; a remote MCP server is its `mcp_toolset` entry (the
/// server itself goes in `mcp_servers`).
fn provider_tool(tool: &ProviderTool) -> Option<Value> {
    Some(match tool {
        ProviderTool::RemoteMcp(server) => {
            let mut def = json!({"type": "mcp_toolset", "mcp_server_name": server.name});
            if !server.allowed_tools.is_empty() {
                let enabled: Map<String, Value> = server
                    .allowed_tools
                    .iter()
                    .map(|t| (t.clone(), json!({"enabled": true})))
                    .collect();
                def["default_config"] = json!({"enabled": false});
                def["configs"] = Value::Object(enabled);
            }
            def
        }
        ProviderTool::WebSearch(search) => web_search(search),
        ProviderTool::WebFetch(fetch) => web_fetch(fetch),
        ProviderTool::CodeExecution => {
            json!({"type": "code_execution_20260521", "name": "code_execution"})
        }
        _ => return None,
    })
}

/// `web_fetch_20250910` with the options set.
fn web_fetch(fetch: &WebFetch) -> Value {
    let mut def = json!({"type": "web_fetch_20250910", "name": "web_fetch"});
    if let Some(max) = fetch.max_uses {
        def["max_uses"] = json!(max);
    }
    if !fetch.allowed_domains.is_empty() {
        def["allowed_domains"] = json!(fetch.allowed_domains);
    }
    if !fetch.blocked_domains.is_empty() {
        def["blocked_domains"] = json!(fetch.blocked_domains);
    }
    if fetch.citations {
        def["citations"] = json!({"enabled": true});
    }
    if let Some(max) = fetch.max_content_tokens {
        def["max_content_tokens"] = json!(max);
    }
    def
}

fn web_search(search: &WebSearch) -> Value {
    let mut def = json!({"type": "web_search_20260318", "name": "web_search"});
    if let Some(max) = search.max_uses {
        def["max_uses"] = json!(max);
    }
    if !search.allowed_domains.is_empty() {
        def["allowed_domains"] = json!(search.allowed_domains);
    }
    if !search.blocked_domains.is_empty() {
        def["blocked_domains"] = json!(search.blocked_domains);
    }
    def
}
