//! Reconnecting a client whose session ended: [`ReconnectPolicy`] (whether a call on a dead
//! session reconnects by itself, and how often it tries) and [`ToolChanges`] (how the server's
//! tool list differs on the new session, and how that is logged).

use std::collections::HashMap;
use std::time::Duration;

/// How many connection attempts one automatic reconnect makes, unless
/// [`ReconnectPolicy::with_max_attempts`] says otherwise: 5.
pub const DEFAULT_RECONNECT_ATTEMPTS: u32 = 5;

/// The wait before an automatic reconnect's second attempt, unless
/// [`ReconnectPolicy::with_first_delay`] says otherwise: 250 ms. Each later wait doubles it,
/// up to [`DEFAULT_RECONNECT_MAX_DELAY`].
pub const DEFAULT_RECONNECT_FIRST_DELAY: Duration = Duration::from_millis(250);

/// The longest wait between two attempts of an automatic reconnect, unless
/// [`ReconnectPolicy::with_max_delay`] says otherwise: 10 s.
pub const DEFAULT_RECONNECT_MAX_DELAY: Duration = Duration::from_secs(10);

/// Whether a client reconnects by itself when a call finds its session ended (the stdio
/// server's process exited, the HTTP connection is gone), set with
/// [`McpServer::reconnect`](crate::McpServer::reconnect).
///
/// [`never`](Self::never) (the default): the call is an error result for the model, and the
/// application reconnects with [`McpClient::reconnect`](crate::McpClient::reconnect).
/// [`backoff`](Self::backoff): the first call that finds the session ended reconnects, with up
/// to [`DEFAULT_RECONNECT_ATTEMPTS`] attempts, the first at once, then waiting
/// [`DEFAULT_RECONNECT_FIRST_DELAY`], doubled after each failure up to
/// [`DEFAULT_RECONNECT_MAX_DELAY`] (at most 250 ms + 500 ms + 1 s + 2 s of waiting with the
/// defaults, plus each attempt's handshake, bounded by
/// [`McpServer::timeout`](crate::McpServer::timeout)). Calls that find the session ended while
/// it reconnects wait for that reconnect and share its outcome: one sequence of attempts, not
/// one per call. When every attempt failed, each of those calls is an error result the model
/// reads (it may try again later: the next call starts a new sequence).
///
/// A call whose request never left (the session had ended before it was sent) is sent again on
/// the new session. A call whose connection ended while the server ran it is not: whether it
/// ran is unknown, so the model is told, and the client reconnects for the next call.
///
/// ```
/// use std::time::Duration;
/// use llm_tools_mcp::{McpServer, ReconnectPolicy};
///
/// let server = McpServer::stdio("my-mcp-server").reconnect(
///     ReconnectPolicy::backoff()
///         .with_max_attempts(3)
///         .with_first_delay(Duration::from_millis(100)),
/// );
/// # let _ = server;
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReconnectPolicy {
    /// Zero: never by itself.
    max_attempts: u32,
    first_delay: Duration,
    max_delay: Duration,
}

impl Default for ReconnectPolicy {
    fn default() -> Self {
        Self::never()
    }
}

impl ReconnectPolicy {
    /// No automatic reconnect: a call on an ended session is an error result for the model
    /// (the default).
    pub const fn never() -> Self {
        Self {
            max_attempts: 0,
            first_delay: DEFAULT_RECONNECT_FIRST_DELAY,
            max_delay: DEFAULT_RECONNECT_MAX_DELAY,
        }
    }

    /// Reconnect when a call finds the session ended, with exponential backoff between
    /// attempts: [`DEFAULT_RECONNECT_ATTEMPTS`] attempts, waits from
    /// [`DEFAULT_RECONNECT_FIRST_DELAY`] doubling up to [`DEFAULT_RECONNECT_MAX_DELAY`].
    pub const fn backoff() -> Self {
        Self {
            max_attempts: DEFAULT_RECONNECT_ATTEMPTS,
            first_delay: DEFAULT_RECONNECT_FIRST_DELAY,
            max_delay: DEFAULT_RECONNECT_MAX_DELAY,
        }
    }

    /// How many attempts one reconnect makes ([`DEFAULT_RECONNECT_ATTEMPTS`] with
    /// [`backoff`](Self::backoff)); zero is [`never`](Self::never).
    pub const fn with_max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts;
        self
    }

    /// The wait before the second attempt ([`DEFAULT_RECONNECT_FIRST_DELAY`]); each later one
    /// doubles it.
    pub const fn with_first_delay(mut self, delay: Duration) -> Self {
        self.first_delay = delay;
        self
    }

    /// The longest wait between two attempts ([`DEFAULT_RECONNECT_MAX_DELAY`]).
    pub const fn with_max_delay(mut self, delay: Duration) -> Self {
        self.max_delay = delay;
        self
    }

    /// Whether a call on an ended session reconnects by itself.
    pub const fn is_automatic(&self) -> bool {
        self.max_attempts > 0
    }

    /// How many attempts one reconnect makes.
    pub const fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// The wait before attempt `attempt` (1 for the first, which does not wait).
    pub(crate) fn delay_before(&self, attempt: u32) -> Duration {
        if attempt <= 1 {
            return Duration::ZERO;
        }
        let doublings = attempt.saturating_sub(2).min(31);
        self.first_delay
            .checked_mul(1u32 << doublings)
            .unwrap_or(self.max_delay)
            .min(self.max_delay)
    }
}

/// How the server's tool list on a new session differs from the one before, by the server's
/// tool names: what [`McpClient::reconnect`](crate::McpClient::reconnect) returns. The chat
/// offers the new list from its next request on; a tool that left answers a call the model
/// makes anyway with an error result saying so. Removed and changed tools are also logged
/// (`llm_tools::mcp`, warn).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolChanges {
    /// Tools the server offers now and did not before.
    pub added: Vec<String>,
    /// Tools the server offered before and does not now.
    pub removed: Vec<String>,
    /// Tools whose definition (description, input schema, annotations, …) changed.
    pub changed: Vec<String>,
}

impl ToolChanges {
    /// Whether the list is the same as before.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// How `after` differs from `before`, by the server's tool names, each list sorted.
pub(super) fn changes_between(
    before: &HashMap<String, serde_json::Value>,
    after: &HashMap<String, serde_json::Value>,
) -> ToolChanges {
    let mut changes = ToolChanges::default();
    for (name, definition) in after {
        match before.get(name) {
            None => changes.added.push(name.clone()),
            Some(previous) if previous != definition => changes.changed.push(name.clone()),
            Some(_) => {}
        }
    }
    changes.removed = before
        .keys()
        .filter(|name| !after.contains_key(*name))
        .cloned()
        .collect();
    changes.added.sort();
    changes.removed.sort();
    changes.changed.sort();
    changes
}

/// Logs how a listing changed the tools: after a reconnect, tools that left or changed are a
/// warning (a chat's history may hold calls made with the old definitions).
pub(super) fn report(server: &str, changes: &ToolChanges, reconnected: bool) {
    if changes.is_empty() {
        return;
    }
    if reconnected && (!changes.removed.is_empty() || !changes.changed.is_empty()) {
        tracing::warn!(
            target: "llm_tools::mcp",
            server,
            added = ?changes.added,
            removed = ?changes.removed,
            changed = ?changes.changed,
            "the server's tools differ after reconnecting; calls of removed tools are refused"
        );
    } else {
        tracing::debug!(
            target: "llm_tools::mcp",
            server,
            added = ?changes.added,
            removed = ?changes.removed,
            changed = ?changes.changed,
            "the server's tool list changed"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_from_the_first_delay_up_to_the_cap() {
        let policy = ReconnectPolicy::backoff();
        let waits: Vec<Duration> = (1..=8).map(|a| policy.delay_before(a)).collect();
        assert_eq!(
            waits,
            [0, 250, 500, 1000, 2000, 4000, 8000, 10_000].map(Duration::from_millis)
        );
        assert_eq!(policy.delay_before(u32::MAX), DEFAULT_RECONNECT_MAX_DELAY);
        assert!(!ReconnectPolicy::never().is_automatic());
        assert!(
            !ReconnectPolicy::backoff()
                .with_max_attempts(0)
                .is_automatic()
        );
    }
}
