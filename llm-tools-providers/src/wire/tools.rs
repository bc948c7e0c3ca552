//! Tools and calls on the wire: the forced tool of a request, errors for tool choices a
//! protocol cannot express, calls written back in the answer's order, arguments as objects,
//! fresh call ids, and what a message keeps for its protocol.

use llm_tools_core::{Message, ProviderError, Request, ToolCall, ToolChoice, ToolSpec};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::answers::request_error;

/// The tool a request forces by name, if it does.
pub(crate) fn forced_tool<'a>(request: &Request<'a>) -> Option<&'a str> {
    match request.choice {
        ToolChoice::Tool(joined) => Some(joined.as_str()),
        _ => None,
    }
}

/// The error for a forced tool that is not among the request's tools.
pub(crate) fn unknown_forced_tool(name: &str, joined: &str) -> ProviderError {
    request_error(
        name,
        format!("the tool choice names `{joined}`, which is not among the request's tools"),
    )
}

/// The error for a tool choice the protocol cannot express.
pub(crate) fn unsupported_choice(name: &str, choice: &ToolChoice) -> ProviderError {
    request_error(name, format!("the tool choice {choice:?} is not supported"))
}

/// What a message's provider data keeps under `key` for `protocol`.
pub(crate) fn protocol_data<'m>(
    message: &'m Message,
    protocol: &str,
    key: &str,
) -> Option<&'m Value> {
    message
        .provider_data
        .as_ref()
        .and_then(|d| d.for_protocol(protocol))
        .and_then(|d| d.get(key))
}

/// The tool calls of an assistant message, each written once: where the answer's recorded
/// order places it ([`take`](Self::take)), and the others after ([`rest`](Self::rest)).
pub(crate) struct CallsInOrder<'a> {
    calls: &'a [ToolCall],
    done: Vec<bool>,
}

impl<'a> CallsInOrder<'a> {
    pub(crate) fn new(calls: &'a [ToolCall]) -> Self {
        Self {
            calls,
            done: vec![false; calls.len()],
        }
    }

    /// The call with this id, unless it was taken already.
    pub(crate) fn take(&mut self, id: Option<&str>) -> Option<&'a ToolCall> {
        let i = self.calls.iter().position(|c| Some(c.id.as_str()) == id)?;
        if self.done[i] {
            return None;
        }
        self.done[i] = true;
        Some(&self.calls[i])
    }

    /// The calls not taken, in their order.
    pub(crate) fn rest(self) -> impl Iterator<Item = &'a ToolCall> {
        self.calls
            .iter()
            .zip(self.done)
            .filter_map(|(call, done)| (!done).then_some(call))
    }
}

/// A call's arguments as the JSON object the protocol takes: the JSON text the model sent, or
/// `{}` when it is not one JSON object.
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum ArgumentsObject<'a> {
    Raw(&'a RawValue),
    Empty(Map<String, Value>),
}

impl<'a> ArgumentsObject<'a> {
    pub(crate) fn of(call: &'a ToolCall) -> Self {
        match serde_json::from_str::<&RawValue>(&call.arguments) {
            Ok(raw) if raw.get().trim_start().starts_with('{') => ArgumentsObject::Raw(raw),
            _ => ArgumentsObject::Empty(Map::new()),
        }
    }
}

/// A call as an answer gives it: its id (a fresh one when the server sent none or an empty
/// one), its tool's name and namespace (as [`NameMap::resolve`](crate::protocol::NameMap::resolve)
/// gives them back), and its arguments as the JSON text they came as (`{}` when blank).
pub(crate) fn call_read(
    id: &str,
    (name, namespace): (String, Option<String>),
    arguments: String,
) -> ToolCall {
    let id = if id.is_empty() {
        fresh_call_id()
    } else {
        id.to_owned()
    };
    let arguments = if is_blank(&arguments) {
        "{}".to_owned()
    } else {
        arguments
    };
    ToolCall::new(id, name, arguments).with_namespace(namespace)
}

/// Whether a protocol without native tool search sends `spec`'s tool: every tool when the chat
/// chose the deferred ones it offers ([`Request::deferred_chosen`]: its own search found them),
/// else only the tools not deferred.
pub(crate) fn sent_without_native_search(request: &Request<'_>, spec: &ToolSpec) -> bool {
    request.deferred_chosen || !spec.defer()
}

/// The arguments as written back: `{}` for blank ones ([`is_blank`]), else as they are.
pub(crate) fn arguments_text(arguments: &str) -> &str {
    if is_blank(arguments) { "{}" } else { arguments }
}

/// Whether `text` is empty or only whitespace (`text.trim().is_empty()`, looking no further
/// than the first other character: arguments are written back with every request).
pub(crate) fn is_blank(text: &str) -> bool {
    text.chars().all(char::is_whitespace)
}

/// A fresh call id for servers that send none.
pub(crate) fn fresh_call_id() -> String {
    let mut id = String::from("call_");
    for _ in 0..24 {
        id.push(fastrand::alphanumeric());
    }
    id
}
