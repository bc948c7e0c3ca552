//! Provider tools ([`ProviderTool`]) in each protocol's `tools` array, beside the function
//! tools: the typed tools a protocol has, raw definitions addressed to it, and a clear error
//! for a tool it does not have.

use llm_tools_core::{ProviderError, ProviderTool, WebSearch};
use serde_json::{Map, Value, json};

use super::answers::request_error;

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
                request_error(
                    name,
                    format!(
                        "{name} ({protocol}) has no {} tool; remove it for this provider, or send the provider's own definition with `ProviderTool::raw`",
                        other.label()
                    ),
                )
            })?,
        };
        out.push(definition.to_string());
    }
    Ok(out)
}

/// OpenAI Responses (and the compatible Responses APIs of xAI and DeepSeek).
pub(crate) fn responses(tool: &ProviderTool) -> Option<Value> {
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

/// Anthropic Messages' server tools.
pub(crate) fn anthropic(tool: &ProviderTool) -> Option<Value> {
    Some(match tool {
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

/// Gemini's built-in tools, each its own `tools` entry.
pub(crate) fn gemini(tool: &ProviderTool) -> Option<Value> {
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
