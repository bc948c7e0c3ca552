//! Provider tools ([`ProviderTool`]) in each protocol's `tools` array, beside the function
//! tools: the typed tools a protocol has, raw definitions addressed to it, and a clear error
//! for a tool it does not have.

use llm_tools_core::{ProviderError, ProviderTool, RemoteMcp, WebSearch};
use serde_json::{Map, Value, json};

use super::answers::request_error;
use crate::http::Secret;

/// The tokens of remote MCP servers, by server name, from a provider's configuration.
pub(crate) type McpTokens = [(String, Secret)];

fn token<'a>(tokens: &'a McpTokens, server: &RemoteMcp) -> Option<&'a str> {
    tokens
        .iter()
        .find(|(name, _)| *name == server.name)
        .map(|(_, token)| token.expose())
}

/// Why a protocol lacks a tool, where another API of the same vendor has it.
fn elsewhere(name: &str, protocol: &str) -> Option<&'static str> {
    match (name, protocol) {
        ("xai", "openai-chat") => Some(
            "xAI runs its provider tools on its Responses API: use `OpenAiResponses` with `OpenAiConfig::xai(…)`",
        ),
        ("deepseek", "openai-chat") => Some(
            "DeepSeek runs its provider tools on its Responses API: use `OpenAiResponses` with `OpenAiConfig::deepseek(…)`",
        ),
        _ => None,
    }
}

/// The `tools` entries for `tools` on `protocol`, each as JSON text. `typed` gives a typed
/// tool's definition, or `None` when the protocol has no such tool (a request error).
pub(crate) fn definitions(
    name: &str,
    protocol: &str,
    tools: &[ProviderTool],
    typed: impl Fn(&ProviderTool) -> Option<Value>,
) -> Result<Vec<String>, ProviderError> {
    let mut out = Vec::with_capacity(tools.len());
    for tool in tools {
        let definition = match tool {
            ProviderTool::Raw {
                protocol: target,
                definition,
            } => {
                if target != protocol {
                    continue;
                }
                definition.clone()
            }
            other => typed(other).ok_or_else(|| {
                let hint = match elsewhere(name, protocol) {
                    Some(hint) => hint.to_owned(),
                    None => "remove it for this provider, or send the provider's own definition with `ProviderTool::raw`".to_owned(),
                };
                request_error(
                    name,
                    format!("{name} ({protocol}) has no {} tool; {hint}", other.label()),
                )
            })?,
        };
        out.push(definition.to_string());
    }
    Ok(out)
}

/// OpenAI Responses (and the compatible Responses APIs of xAI and DeepSeek); a remote MCP
/// server with its token from `tokens`. Calls of a remote server's tools run without asking
/// (`require_approval: never`): the chat has no way to answer the provider's approval requests.
pub(crate) fn responses(tokens: &McpTokens) -> impl Fn(&ProviderTool) -> Option<Value> + '_ {
    move |tool| match tool {
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
        other => responses_builtin(other),
    }
}

fn responses_builtin(tool: &ProviderTool) -> Option<Value> {
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

/// Chat Completions: only OpenRouter has a server-side tool (its web search plugin as a tool).
pub(crate) fn chat_completions(provider: &str) -> impl Fn(&ProviderTool) -> Option<Value> + '_ {
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

/// Anthropic's top-level `mcp_servers`: one entry per remote MCP server, with its token.
pub(crate) fn anthropic_mcp_servers(tools: &[ProviderTool], tokens: &McpTokens) -> Vec<Value> {
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
pub(crate) fn anthropic(tool: &ProviderTool) -> Option<Value> {
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
        ProviderTool::WebSearch(search) => anthropic_web_search(search),
        ProviderTool::CodeExecution => {
            json!({"type": "code_execution_20260521", "name": "code_execution"})
        }
        _ => return None,
    })
}

fn anthropic_web_search(search: &WebSearch) -> Value {
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

/// Gemini's built-in tools, each its own `tools` entry; remote MCP servers (`mcpServers`) on
/// the Developer API only (Vertex AI has none), with their tokens as bearer headers.
pub(crate) fn gemini(
    vertex: bool,
    tokens: &McpTokens,
) -> impl Fn(&ProviderTool) -> Option<Value> + '_ {
    move |tool| match tool {
        ProviderTool::RemoteMcp(_) if vertex => None,
        ProviderTool::RemoteMcp(server) => {
            let mut transport = json!({"url": server.url});
            if let Some(token) = token(tokens, server) {
                transport["headers"] = json!({"Authorization": format!("Bearer {token}")});
            }
            Some(
                json!({"mcpServers": [{"name": server.name, "streamableHttpTransport": transport}]}),
            )
        }
        other => gemini_builtin(other),
    }
}

fn gemini_builtin(tool: &ProviderTool) -> Option<Value> {
    Some(match tool {
        ProviderTool::WebSearch(_) => json!({"google_search": {}}),
        ProviderTool::CodeExecution => json!({"code_execution": {}}),
        ProviderTool::UrlContext => json!({"url_context": {}}),
        _ => return None,
    })
}

/// A protocol with no provider tools of its own (raw definitions still go through).
pub(crate) fn none(_: &ProviderTool) -> Option<Value> {
    None
}

/// Bedrock Converse's system tools: web search is Nova's grounding (Amazon Nova models only).
pub(crate) fn bedrock(tool: &ProviderTool) -> Option<Value> {
    match tool {
        ProviderTool::WebSearch(_) => Some(json!({"systemTool": {"name": "nova_grounding"}})),
        _ => None,
    }
}
