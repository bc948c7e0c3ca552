//! Tool-definition drift: a server that changes the definition (description, schemas,
//! annotations) of a tool the chat already offers, in the same session. A description the
//! server rewrites mid-session is a known injection path, so a changed definition is never
//! adopted silently: [`McpServer::on_tool_drift`](crate::McpServer::on_tool_drift) decides
//! ([`DriftDecision`]); by default the change is refused and logged, naming what changed.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

/// A tool whose definition the server changed during the session, as the handler of
/// [`McpServer::on_tool_drift`](crate::McpServer::on_tool_drift) sees it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ToolDrift {
    /// The name given to the server.
    pub server: String,
    /// The tool's name on the server.
    pub tool: String,
    /// The fields of the definition that differ (`description`, `inputSchema`,
    /// `outputSchema`, `title`, `annotations`, …), sorted.
    pub changed: Vec<String>,
    /// The definition the chat trusts (the one offered until now), as the server sent it.
    pub before: Value,
    /// The definition the server sends now.
    pub after: Value,
}

/// What becomes of a tool whose definition changed ([`ToolDrift`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DriftDecision {
    /// The new definition is adopted: the chat offers it from its next request on.
    Accept,
    /// The new definition is refused: the tool leaves the chat (a call of it is an error
    /// result for the model) until the server sends the trusted definition again or the
    /// client reconnects. Logged as a warning naming what changed.
    Refuse,
    /// Like [`Refuse`](Self::Refuse) for now, and the change waits for the application:
    /// [`McpClient::pending_drifts`](crate::McpClient::pending_drifts) lists it and
    /// [`McpClient::accept_drift`](crate::McpClient::accept_drift) adopts it (a person was
    /// asked, say).
    Ask,
}

/// The application's decision on drift.
#[derive(Clone)]
pub(crate) struct DriftHandler(pub(crate) Arc<dyn Fn(&ToolDrift) -> DriftDecision + Send + Sync>);

impl fmt::Debug for DriftHandler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DriftHandler")
    }
}

/// The top-level fields of two tool definitions that differ, sorted.
pub(crate) fn changed_fields(before: &Value, after: &Value) -> Vec<String> {
    let empty = serde_json::Map::new();
    let before = before.as_object().unwrap_or(&empty);
    let after = after.as_object().unwrap_or(&empty);
    let mut changed: Vec<String> = before
        .keys()
        .chain(after.keys())
        .filter(|key| before.get(*key) != after.get(*key))
        .cloned()
        .collect();
    changed.sort();
    changed.dedup();
    changed
}

/// Decides on one drift: the application's handler, else [`DriftDecision::Refuse`]; a
/// refusal is logged with what changed.
pub(crate) fn decide(handler: Option<&DriftHandler>, drift: &ToolDrift) -> DriftDecision {
    let decision = handler.map_or(DriftDecision::Refuse, |handler| (handler.0)(drift));
    match decision {
        DriftDecision::Accept => tracing::info!(
            target: "llm_tools::mcp",
            server = drift.server.as_str(),
            tool = drift.tool.as_str(),
            changed = ?drift.changed,
            "the server changed a tool's definition; the application accepted it"
        ),
        DriftDecision::Refuse => tracing::warn!(
            target: "llm_tools::mcp",
            server = drift.server.as_str(),
            tool = drift.tool.as_str(),
            changed = ?drift.changed,
            "the server changed the definition of a tool the chat offers; refused, the tool \
             leaves the chat"
        ),
        DriftDecision::Ask => tracing::warn!(
            target: "llm_tools::mcp",
            server = drift.server.as_str(),
            tool = drift.tool.as_str(),
            changed = ?drift.changed,
            "the server changed the definition of a tool the chat offers; the tool leaves the \
             chat until the application accepts the change"
        ),
    }
    decision
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_changed_fields_are_named_once_sorted() {
        let before = json!({"name": "t", "description": "a", "inputSchema": {"type": "object"}});
        let after = json!({"name": "t", "description": "b", "inputSchema": {"type": "object", "properties": {}}, "title": "T"});
        assert_eq!(
            changed_fields(&before, &after),
            ["description", "inputSchema", "title"]
        );
        assert!(changed_fields(&before, &before).is_empty());
    }

    #[test]
    fn without_a_handler_a_drift_is_refused() {
        let drift = ToolDrift {
            server: "s".into(),
            tool: "t".into(),
            changed: vec!["description".into()],
            before: json!({}),
            after: json!({}),
        };
        assert_eq!(decide(None, &drift), DriftDecision::Refuse);
        let accept = DriftHandler(Arc::new(|_: &ToolDrift| DriftDecision::Accept));
        assert_eq!(decide(Some(&accept), &drift), DriftDecision::Accept);
    }
}
