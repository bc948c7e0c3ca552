//! Provider tools ([`ProviderTool`]) in each protocol's `tools` array, beside the function
//! tools: raw definitions addressed to the protocol, the typed tools it has (each protocol's
//! `request` module says how it writes them), and a clear error for a tool it does not have.

use llm_tools_core::{ProviderError, ProviderTool, RemoteMcp};
use serde_json::Value;

use super::answers::request_error;
use crate::http::Secret;

/// The tokens of remote MCP servers, by server name, from a provider's configuration.
pub(crate) type McpTokens = [(String, Secret)];

/// The token `tokens` has for a remote MCP `server`, if any.
pub(crate) fn token<'a>(tokens: &'a McpTokens, server: &RemoteMcp) -> Option<&'a str> {
    tokens
        .iter()
        .find(|(name, _)| *name == server.name)
        .map(|(_, token)| token.expose())
}

/// The `tools` entries for `tools` on `protocol`, each as JSON text. `typed` gives a typed
/// tool's definition, or `None` when the protocol has no such tool: a request error, with
/// `hint` when the endpoint has a better way than removing it (another of the vendor's APIs).
pub(crate) fn definitions(
    name: &str,
    protocol: &str,
    tools: &[ProviderTool],
    typed: impl Fn(&ProviderTool) -> Option<Value>,
    hint: Option<&str>,
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
                let hint = match hint {
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

/// A protocol with no provider tools of its own (raw definitions still go through).
pub(crate) fn none(_: &ProviderTool) -> Option<Value> {
    None
}
