//! Callbacks: code the loop runs before each request, after each message, on each tool call and
//! on each tool result. Registrations add up and run in registration order.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use super::hooks::{CallHook, HOOK_TIMEOUT, Resolver, ResultHook};
use crate::{
    context::ToolProgress,
    message::{Message, ToolCall},
    provider::Request,
};

type BeforeRequest = Arc<dyn Fn(&Request<'_>) + Send + Sync>;
type AfterMessage = Arc<dyn Fn(&Message) + Send + Sync>;
type OnToolResult = Arc<dyn Fn(&ToolCall, &Message) + Send + Sync>;
pub(crate) type OnToolProgress = Arc<dyn Fn(&ToolProgress) + Send + Sync>;

/// The registered callbacks of one chat.
#[derive(Clone, Default)]
pub(crate) struct Callbacks {
    pub(crate) before_request: Vec<BeforeRequest>,
    pub(crate) after_message: Vec<AfterMessage>,
    pub(crate) on_tool_call: Vec<CallHook>,
    pub(crate) on_tool_result: Vec<OnToolResult>,
    pub(crate) on_tool_result_async: Vec<ResultHook>,
    pub(crate) on_tool_progress: Vec<OnToolProgress>,
    pub(crate) resolver: Option<Resolver>,
    /// The bound of each hook and of the resolver; `None`: [`HOOK_TIMEOUT`].
    pub(crate) hook_timeout: Option<Duration>,
    /// The argument predicates of `approve_always_if` rules, by name.
    pub(crate) approval_predicates: HashMap<String, ApprovalPredicate>,
}

/// An argument predicate of an `approve_always_if` rule.
pub(crate) type ApprovalPredicate = Arc<dyn Fn(&serde_json::Value) -> bool + Send + Sync>;

impl Callbacks {
    pub(crate) fn before_request(&self, request: &Request<'_>) {
        for f in &self.before_request {
            observe("before_request", || f(request));
        }
    }

    pub(crate) fn after_message(&self, message: &Message) {
        for f in &self.after_message {
            observe("after_message", || f(message));
        }
    }

    pub(crate) fn on_tool_result(&self, call: &ToolCall, result: &Message) {
        for f in &self.on_tool_result {
            observe("on_tool_result", || f(call, result));
        }
    }

    pub(crate) fn hook_timeout(&self) -> Duration {
        self.hook_timeout.unwrap_or(HOOK_TIMEOUT)
    }
}

impl std::fmt::Debug for Callbacks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Callbacks")
            .field("before_request", &self.before_request.len())
            .field("after_message", &self.after_message.len())
            .field("on_tool_call", &self.on_tool_call.len())
            .field("on_tool_result", &self.on_tool_result.len())
            .field("on_tool_result_async", &self.on_tool_result_async.len())
            .field("resolver", &self.resolver.is_some())
            .finish()
    }
}

/// Runs an observer (a callback that only watches): one that panics (on a model's text it did
/// not expect, say) is logged and the chat goes on, its transcript whole.
fn observe(name: &'static str, f: impl FnOnce()) {
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err() {
        tracing::warn!(target: "llm_tools::chat", callback = name, "an observer callback panicked; the chat goes on");
    }
}
