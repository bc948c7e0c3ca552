//! Callbacks: code the loop runs before each request, after each message, on each tool call and
//! on each tool result. Registrations add up and run in registration order.

use std::sync::Arc;

use crate::{Message, Request, ToolCall, ToolProgress};

/// What an [`on_tool_call`](super::Chat::on_tool_call) callback decides for a call about to run.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolCallAction {
    /// Run the call as it is.
    Run,
    /// Do not run it; the model gets this reason as an error result.
    Veto(String),
    /// Run it with these JSON arguments instead (the transcript keeps the rewritten ones).
    Rewrite(String),
}

type BeforeRequest = Arc<dyn Fn(&Request<'_>) + Send + Sync>;
type AfterMessage = Arc<dyn Fn(&Message) + Send + Sync>;
type OnToolCall = Arc<dyn Fn(&ToolCall) -> ToolCallAction + Send + Sync>;
type OnToolResult = Arc<dyn Fn(&ToolCall, &Message) + Send + Sync>;
pub(crate) type OnToolProgress = Arc<dyn Fn(&ToolProgress) + Send + Sync>;

/// The registered callbacks of one chat.
#[derive(Clone, Default)]
pub(crate) struct Callbacks {
    pub(crate) before_request: Vec<BeforeRequest>,
    pub(crate) after_message: Vec<AfterMessage>,
    pub(crate) on_tool_call: Vec<OnToolCall>,
    pub(crate) on_tool_result: Vec<OnToolResult>,
    pub(crate) on_tool_progress: Vec<OnToolProgress>,
}

impl Callbacks {
    pub(crate) fn before_request(&self, request: &Request<'_>) {
        for f in &self.before_request {
            f(request);
        }
    }

    pub(crate) fn after_message(&self, message: &Message) {
        for f in &self.after_message {
            f(message);
        }
    }

    pub(crate) fn on_tool_result(&self, call: &ToolCall, result: &Message) {
        for f in &self.on_tool_result {
            f(call, result);
        }
    }

    /// Runs the `on_tool_call` callbacks in order; a rewrite is what the next one sees, a veto
    /// stops. Returns the final decision: `Run`, `Veto`, or `Rewrite` with the last arguments.
    pub(crate) fn on_tool_call(&self, call: &ToolCall) -> ToolCallAction {
        if self.on_tool_call.is_empty() {
            return ToolCallAction::Run;
        }
        let mut rewritten: Option<ToolCall> = None;
        for f in &self.on_tool_call {
            match f(rewritten.as_ref().unwrap_or(call)) {
                ToolCallAction::Run => {}
                ToolCallAction::Veto(reason) => return ToolCallAction::Veto(reason),
                ToolCallAction::Rewrite(arguments) => {
                    rewritten.get_or_insert_with(|| call.clone()).arguments = arguments;
                }
            }
        }
        match rewritten {
            Some(c) => ToolCallAction::Rewrite(c.arguments),
            None => ToolCallAction::Run,
        }
    }
}

impl std::fmt::Debug for Callbacks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Callbacks")
            .field("before_request", &self.before_request.len())
            .field("after_message", &self.after_message.len())
            .field("on_tool_call", &self.on_tool_call.len())
            .field("on_tool_result", &self.on_tool_result.len())
            .finish()
    }
}
