//! Writing a `generateContent` request: function declarations (serialized once per schema
//! field), the function-calling mode, the system instruction, and the contents with each
//! round's function responses in one content, in call order.

use std::borrow::Cow;
use std::sync::Arc;

use llm_tools_core::{
    Attachment, Message, OutputSchema, Part, ProviderError, ProviderTool, Request, Role, Source,
    ToolCall, ToolChoice, ToolSpec,
};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::config::{GeminiConfig, SchemaField};
use crate::schema::{self, ConversionError, SchemaBudget};
use crate::wire::output::{Built, plain};
use crate::wire::provider_tools::{McpTokens, token};
use crate::wire::{
    self, ArgumentsObject, BodyWriter, CallsInOrder, Refusal, attachment_as_text, request_error,
};

/// The protocol's id (from the table in [`crate::protocol::ids`]), also the key of the provider
/// data it reads back.
pub(crate) const PROTOCOL: &str = crate::protocol::ids::GEMINI;

/// Whether a schema says nothing: an object without properties or other constraints.
fn is_empty_object(schema: &Value) -> bool {
    let Some(o) = schema.as_object() else {
        return false;
    };
    o.iter().all(|(k, v)| match k.as_str() {
        "type" => v == "object",
        "properties" => v.as_object().is_some_and(Map::is_empty),
        "required" => v.as_array().is_some_and(Vec::is_empty),
        "additionalProperties" => v == &Value::Bool(false),
        _ => false,
    })
}

/// Where a tool's provider options (under `"gemini"`) go: into its function declaration, beside
/// the fields written here (`behavior`, `response`, `responseJsonSchema`, …); the fields the
/// library writes are refused (both schema fields, whichever one is sent).
pub(crate) const TOOL_OPTIONS: wire::ToolOptions = wire::ToolOptions::Merged {
    key: PROTOCOL,
    into: None,
    own: &["name", "description", "parameters", "parametersJsonSchema"],
    apart: &[],
};

/// The function declaration of one tool (its joined name, its schema in the field asked for),
/// serialized once per field and reused by every request. A schema Gemini would reject is an
/// error before any request; one past the budget is `None` (the tool is left out, see
/// [`wire::definition`]).
pub(crate) fn definition(
    spec: &ToolSpec,
    field: SchemaField,
    budget: &SchemaBudget,
    forced: bool,
) -> Result<Option<Arc<RawValue>>, ProviderError> {
    let key = match field {
        SchemaField::JsonSchema => "gemini/json-schema",
        SchemaField::Parameters => "gemini/parameters",
    };
    wire::definition(
        PROTOCOL,
        spec,
        key,
        &TOOL_OPTIONS,
        budget,
        forced,
        |spec, budget, decl| {
            decl.insert("name".into(), Value::from(spec.joined_name()));
            if !spec.description().is_empty() {
                decl.insert("description".into(), Value::from(spec.description()));
            }
            if !is_empty_object(spec.parameters()) {
                let converted = match field {
                    SchemaField::JsonSchema => {
                        schema::gemini::json_schema(spec.parameters(), budget)
                            .map(|c| ("parametersJsonSchema", c.schema))
                    }
                    SchemaField::Parameters => {
                        schema::gemini::parameters(spec.parameters(), budget)
                            .map(|c| ("parameters", c.schema))
                    }
                };
                let (key, schema) = converted.map_err(|e| match e {
                    ConversionError::TooLarge(e) => Refusal::TooLarge(e),
                    ConversionError::Unsupported(notes) => {
                        let listed: Vec<String> = notes.iter().map(ToString::to_string).collect();
                        Refusal::Rejected(format!(
                            "Gemini rejects its schema: {}",
                            listed.join("; ")
                        ))
                    }
                })?;
                decl.insert(key.into(), schema);
            }
            Ok(())
        },
    )
}

/// The `tools` array: one entry holding every function declaration (a tool whose schema is
/// past the budget left out).
fn tools_json(
    config: &GeminiConfig,
    request: &Request<'_>,
) -> Result<Option<String>, ProviderError> {
    let forced = wire::forced_tool(request);
    let mut declarations = Vec::with_capacity(request.tools.len());
    for tool in request.tools {
        let spec = tool.spec();
        let is_forced = forced == Some(spec.joined_name());
        let field = config.options.schema_field;
        if let Some(declaration) = definition(spec, field, &config.schema_budget, is_forced)? {
            declarations.push(declaration);
        }
    }
    if declarations.is_empty() {
        return Ok(None);
    }
    let mut s = String::with_capacity(
        32 + declarations
            .iter()
            .map(|d| d.get().len() + 1)
            .sum::<usize>(),
    );
    s.push_str(r#"{"functionDeclarations":"#);
    wire::push_raw_array(&mut s, declarations.iter().map(|d| d.get()));
    s.push('}');
    Ok(Some(s))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Content<'a> {
    role: &'static str,
    parts: Vec<PartOut<'a>>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum PartOut<'a> {
    Text {
        text: Cow<'a, str>,
        #[serde(rename = "thoughtSignature", skip_serializing_if = "Option::is_none")]
        thought_signature: Option<&'a str>,
    },
    InlineData {
        #[serde(rename = "inlineData")]
        inline_data: Blob<'a>,
    },
    FileData {
        #[serde(rename = "fileData")]
        file_data: FileRef<'a>,
    },
    FunctionCall {
        #[serde(rename = "functionCall")]
        function_call: CallOut<'a>,
        #[serde(rename = "thoughtSignature", skip_serializing_if = "Option::is_none")]
        thought_signature: Option<&'a str>,
    },
    FunctionResponse {
        #[serde(rename = "functionResponse")]
        function_response: ResponseOut<'a>,
    },
    Raw(&'a Value),
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Blob<'a> {
    mime_type: &'a str,
    data: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FileRef<'a> {
    mime_type: &'a str,
    file_uri: &'a str,
}

#[derive(Serialize)]
struct CallOut<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    name: Cow<'a, str>,
    args: ArgumentsObject<'a>,
}

#[derive(Serialize)]
struct ResponseOut<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    name: Cow<'a, str>,
    response: Map<String, Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    parts: Vec<PartOut<'a>>,
}

/// What Gemini keeps about one call: the thought signature to echo, the id it gave (if any).
fn call_data<'a>(call: &'a ToolCall, key: &str) -> Option<&'a str> {
    call.provider_data
        .as_ref()
        .and_then(|d| d.get(key))
        .and_then(Value::as_str)
}

/// The id Gemini gave a call; calls it gave no id to go back without one and are paired with
/// their responses by position.
fn gemini_id(call: &ToolCall) -> Option<&str> {
    call_data(call, "functionCallId")
}

fn media_part<'a>(a: &'a Attachment) -> PartOut<'a> {
    match a.source() {
        Source::Url(uri) => PartOut::FileData {
            file_data: FileRef {
                mime_type: a.media_type(),
                file_uri: uri,
            },
        },
        _ => PartOut::InlineData {
            inline_data: Blob {
                mime_type: a.media_type(),
                data: a.base64().unwrap_or_default(),
            },
        },
    }
}

fn user_parts(parts: &[Part]) -> Vec<PartOut<'_>> {
    let mut out = Vec::with_capacity(parts.len());
    for p in parts {
        match p {
            Part::Text { text } if text.is_empty() => {}
            Part::Text { text } => out.push(PartOut::Text {
                text: Cow::Borrowed(text),
                thought_signature: None,
            }),
            Part::Attachment(a) => match attachment_as_text(a) {
                Some(text) => out.push(PartOut::Text {
                    text: Cow::Owned(text),
                    thought_signature: None,
                }),
                None => out.push(media_part(a)),
            },
            Part::SearchResult(r) => out.push(PartOut::Text {
                text: Cow::Owned(r.to_text()),
                thought_signature: None,
            }),
            _ => {}
        }
    }
    out
}

fn call_part(call: &ToolCall) -> PartOut<'_> {
    PartOut::FunctionCall {
        function_call: CallOut {
            id: gemini_id(call),
            name: Cow::Owned(call.joined_name()),
            args: ArgumentsObject::of(call),
        },
        thought_signature: call_data(call, "thoughtSignature"),
    }
}

/// The thought signature Google documents for a function call Gemini did not make (a call
/// from another provider's answer, or from a Gemini 2.5 answer without signatures), which
/// Gemini 3 and later would refuse without one
/// (<https://ai.google.dev/gemini-api/docs/thought-signatures>).
const STAND_IN_SIGNATURE: &str = "skip_thought_signature_validator";

/// A model message's parts in the order the model produced them: thought parts (kept in the
/// provider data) where they were, text with its signature, calls with theirs. With
/// `stand_in` (a Gemini 3 or later model), a message whose calls carry no signature at all
/// gives its first call [`STAND_IN_SIGNATURE`], as Google asks for calls it did not make.
fn model_parts(m: &Message, stand_in: bool) -> Vec<PartOut<'_>> {
    let texts: Vec<&str> = m.content.iter().filter_map(Part::as_text).collect();
    let skeleton = wire::protocol_data(m, PROTOCOL, "parts").and_then(Value::as_array);
    let mut out = Vec::with_capacity(texts.len() + m.tool_calls.len());
    let mut next_text = 0;
    let mut calls = CallsInOrder::new(&m.tool_calls);
    for entry in skeleton.into_iter().flatten() {
        match entry.get("kind").and_then(Value::as_str) {
            Some("text") => {
                if let Some(t) = texts.get(next_text) {
                    out.push(PartOut::Text {
                        text: Cow::Borrowed(t),
                        thought_signature: entry.get("thoughtSignature").and_then(Value::as_str),
                    });
                }
                next_text += 1;
            }
            Some("call") => {
                let id = entry.get("id").and_then(Value::as_str);
                out.extend(calls.take(id).map(call_part));
            }
            Some("raw") => {
                if let Some(part) = entry.get("part") {
                    out.push(PartOut::Raw(part));
                }
            }
            _ => {}
        }
    }
    for t in texts.iter().skip(next_text).filter(|t| !t.is_empty()) {
        out.push(PartOut::Text {
            text: Cow::Borrowed(t),
            thought_signature: None,
        });
    }
    out.extend(calls.rest().map(call_part));
    if stand_in
        && !m
            .tool_calls
            .iter()
            .any(|c| call_data(c, "thoughtSignature").is_some())
    {
        let first_call = out.iter_mut().find_map(|part| match part {
            PartOut::FunctionCall {
                thought_signature, ..
            } => Some(thought_signature),
            _ => None,
        });
        if let Some(signature) = first_call {
            *signature = Some(STAND_IN_SIGNATURE);
        }
    }
    out
}

/// The function responses of one round, in the order of the calls they answer, in one content;
/// binary attachments inside each response (`parts`) or after all of them.
fn round<'a>(
    config: &GeminiConfig,
    calls: &'a [ToolCall],
    results: &[&'a Message],
) -> Result<Content<'a>, ProviderError> {
    let name = config.name();
    let inside = config.function_response_parts();
    let calls_by_id = wire::ById::new(calls, |c| Some(c.id.as_str()));
    let results_by_id = wire::ById::new(results, |r| r.tool_call_id.as_deref());
    for r in results {
        let id = r.tool_call_id.as_deref().unwrap_or_default();
        if calls_by_id.get(id).is_none() {
            return Err(request_error(
                name,
                format!("the tool result `{id}` answers no call of the answer before it"),
            ));
        }
    }
    let mut parts = Vec::with_capacity(calls.len());
    let mut beside = Vec::new();
    for call in calls {
        let Some(result) = results_by_id.get(&call.id).copied() else {
            return Err(request_error(
                name,
                format!(
                    "the call `{}` (`{}`) has no result; Gemini needs one response per call",
                    call.id,
                    call.joined_name()
                ),
            ));
        };
        let mut text = String::new();
        let mut media = Vec::new();
        for p in &result.content {
            match p {
                Part::Text { text: t } => {
                    wire::push_line(&mut text, t);
                }
                Part::Attachment(a) => match attachment_as_text(a) {
                    Some(inline) => {
                        wire::push_line(&mut text, &inline);
                    }
                    None => match a.source() {
                        Source::Bytes(_) if inside => media.push(media_part(a)),
                        _ => beside.push(media_part(a)),
                    },
                },
                // No search-result part here: the result as text.
                Part::SearchResult(r) => {
                    wire::push_line(&mut text, &r.to_text());
                }
                _ => {}
            }
        }
        let mut response = Map::new();
        let key = if result.is_error { "error" } else { "output" };
        response.insert(key.into(), Value::String(text));
        parts.push(PartOut::FunctionResponse {
            function_response: ResponseOut {
                id: gemini_id(call),
                name: Cow::Owned(call.joined_name()),
                response,
                parts: media,
            },
        });
    }
    parts.extend(beside);
    Ok(Content {
        role: "user",
        parts,
    })
}

/// The system instruction and the contents.
fn contents<'a>(
    config: &GeminiConfig,
    messages: &'a [Message],
) -> Result<(Vec<PartOut<'a>>, Vec<Content<'a>>), ProviderError> {
    let mut system = Vec::new();
    let mut out: Vec<Content<'a>> = Vec::with_capacity(messages.len());
    let mut calls: &'a [ToolCall] = &[];
    let mut results: Vec<&'a Message> = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        let m = &messages[i];
        match m.role {
            Role::Tool => {
                results.clear();
                while let Some(r) = messages.get(i).filter(|r| r.role == Role::Tool) {
                    results.push(r);
                    i += 1;
                }
                out.push(round(config, calls, &results)?);
                calls = &[];
                continue;
            }
            Role::System => system.extend(user_parts(&m.content)),
            Role::User => {
                let parts = user_parts(&m.content);
                if !parts.is_empty() {
                    out.push(Content {
                        role: "user",
                        parts,
                    });
                }
            }
            Role::Assistant => {
                calls = &m.tool_calls;
                let parts = model_parts(m, config.gemini_3_or_later());
                if !parts.is_empty() {
                    out.push(Content {
                        role: "model",
                        parts,
                    });
                }
            }
            _ => {}
        }
        i += 1;
    }
    Ok((system, out))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolConfigOut<'a> {
    function_calling_config: CallingConfig<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CallingConfig<'a> {
    mode: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    allowed_function_names: Option<[&'a str; 1]>,
}

#[derive(Serialize)]
struct SystemOut<'a> {
    parts: Vec<PartOut<'a>>,
}

/// Writes the request body. Gemini has no parallel-calls switch: the chat's cap on calls per
/// answer is what limits them.
pub(crate) fn body(config: &GeminiConfig, request: &Request<'_>) -> Result<Vec<u8>, ProviderError> {
    let name = config.name();
    let forced = wire::forced_tool(request);
    if let Some(joined) = forced
        && request.tool(joined).is_none()
    {
        return Err(wire::unknown_forced_tool(name, joined));
    }
    let tools = tools_json(config, request)?;
    let server_tools = wire::provider_tools::definitions(
        name,
        PROTOCOL,
        request.provider_tools,
        provider_tool(config.options.vertex.is_some(), &config.mcp_tokens),
        None,
    )?;
    let (system, contents) = contents(config, request.messages)?;
    let mut w = BodyWriter::for_request(request, tools.as_ref().map_or(0, String::len));
    w.field("contents", &contents);
    if !system.is_empty() {
        w.field("systemInstruction", &SystemOut { parts: system });
    }
    if tools.is_none() && !server_tools.is_empty() {
        w.raw_array("tools", server_tools.iter().map(String::as_str));
    }
    if let Some(tools) = &tools {
        w.raw_array(
            "tools",
            std::iter::once(tools.as_str()).chain(server_tools.iter().map(String::as_str)),
        );
        let calling = match request.choice {
            ToolChoice::None => Some(CallingConfig {
                mode: "NONE",
                allowed_function_names: None,
            }),
            ToolChoice::Required => Some(CallingConfig {
                mode: "ANY",
                allowed_function_names: None,
            }),
            ToolChoice::Tool(joined) => Some(CallingConfig {
                mode: "ANY",
                allowed_function_names: Some([joined.as_str()]),
            }),
            ToolChoice::Auto => None,
            other => return Err(wire::unsupported_choice(name, other)),
        };
        if let Some(calling) = calling {
            w.field(
                "toolConfig",
                &ToolConfigOut {
                    function_calling_config: calling,
                },
            );
        }
    }
    if let Some(output) = request.output {
        let (dialect, build): (_, fn(&_, &_) -> _) = match config.options.schema_field {
            SchemaField::JsonSchema => ("gemini/generationConfig", generation_config),
            SchemaField::Parameters => (
                "gemini/generationConfig-responseSchema",
                legacy_generation_config,
            ),
        };
        let field = wire::output::format(name, output, dialect, &config.schema_budget, build)?;
        w.raw("generationConfig", field.get());
    }
    w.finish(name)
}

/// Gemini's `responseJsonSchema` (with `responseMimeType`), inside `generationConfig`.
fn generation_config(output: &OutputSchema, budget: &SchemaBudget) -> Built {
    let schema = match schema::gemini::json_schema(output.schema(), budget) {
        Ok(s) => s.schema,
        Err(ConversionError::TooLarge(e)) => return Err(e),
        Err(ConversionError::Unsupported(_)) => plain(output, budget)?,
    };
    Ok(json!({"responseMimeType": "application/json", "responseJsonSchema": schema}))
}

/// Gemini's older `responseSchema` (the OpenAPI subset of `parameters`), for a configuration
/// that sends schemas that way ([`SchemaField::Parameters`](crate::gemini::SchemaField)); a
/// schema the subset cannot express (or that passes the budget once its `$ref`s are inlined)
/// goes as `responseJsonSchema` instead.
fn legacy_generation_config(output: &OutputSchema, budget: &SchemaBudget) -> Built {
    match schema::gemini::parameters(output.schema(), budget) {
        Ok(legacy) => {
            Ok(json!({"responseMimeType": "application/json", "responseSchema": legacy.schema}))
        }
        Err(reasons) => {
            tracing::debug!(
                target: "llm_tools::request",
                schema = output.name(),
                reasons = %reasons,
                "the output schema does not fit `responseSchema`; sending `responseJsonSchema`"
            );
            generation_config(output, budget)
        }
    }
}

/// Gemini's built-in tools, each its own `tools` entry; remote MCP servers (`mcpServers`) and
/// File Search stores on the Developer API only (Vertex AI has neither), MCP tokens as bearer
/// headers.
fn provider_tool(vertex: bool, tokens: &McpTokens) -> impl Fn(&ProviderTool) -> Option<Value> + '_ {
    move |tool| match tool {
        ProviderTool::RemoteMcp(_) | ProviderTool::FileSearch { .. } if vertex => None,
        ProviderTool::RemoteMcp(server) => {
            let mut transport = json!({"url": server.url});
            if let Some(token) = token(tokens, server) {
                transport["headers"] = json!({"Authorization": format!("Bearer {token}")});
            }
            Some(
                json!({"mcpServers": [{"name": server.name, "streamableHttpTransport": transport}]}),
            )
        }
        other => builtin_tool(other),
    }
}

fn builtin_tool(tool: &ProviderTool) -> Option<Value> {
    Some(match tool {
        ProviderTool::WebSearch(_) => json!({"google_search": {}}),
        ProviderTool::CodeExecution => json!({"code_execution": {}}),
        ProviderTool::UrlContext => json!({"url_context": {}}),
        // The user's File Search stores (Developer API only).
        ProviderTool::FileSearch {
            vector_store_ids,
            max_results,
        } => {
            let mut def = json!({"file_search_store_names": vector_store_ids});
            if let Some(top_k) = max_results {
                def["top_k"] = json!(top_k);
            }
            json!({ "file_search": def })
        }
        _ => return None,
    })
}
