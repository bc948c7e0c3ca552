//! Reading `/api/chat` answers: one JSON object whole, or NDJSON lines of the same shape, each
//! with a piece of `content` and `thinking` and whole `tool_calls`, the last with `done: true`,
//! the reason and the token counts. An `{"error": …}` line is the server's error.

use llm_tools_core::{Message, Part, ProviderData, ProviderError, Response, ToolCall, Usage};
use serde_json::{Value, json};

use super::request::PROTOCOL;
use crate::protocol::NameMap;
use crate::wire;

/// One answer or one line of a stream.
#[derive(Default)]
pub(super) struct Answer {
    pub(super) text: String,
    pub(super) thinking: String,
    pub(super) calls: Vec<ToolCall>,
    pub(super) usage: Option<Usage>,
    pub(super) done_reason: Option<String>,
    pub(super) model: Option<String>,
}

impl Answer {
    pub(super) fn message(self) -> Message {
        let mut message = Message::assistant_with_calls("", self.calls);
        message.content = if self.text.is_empty() {
            Vec::new()
        } else {
            vec![Part::text(self.text)]
        };
        message.usage = self.usage;
        if !self.thinking.is_empty() {
            message.provider_data = Some(ProviderData::new(
                PROTOCOL,
                json!({"thinking": self.thinking}),
            ));
        }
        message
    }

    pub(super) fn response(self, request_id: Option<String>) -> Response {
        let reason = self.done_reason.clone();
        let model = self.model.clone();
        let mut response = Response::new(self.message())
            .with_finish_reason(reason)
            .with_request_id(request_id);
        response.model = model;
        response
    }
}

pub(super) fn server_error(name: &str, v: &Value) -> Option<ProviderError> {
    let error = v.get("error")?;
    let message = error
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| error.to_string());
    Some(crate::http::classified(
        wire::stream_error(name, message),
        super::errors::is_context_length,
    ))
}

/// The calls of one answer or line: each whole, its arguments an object. They are charged to
/// `kept` (the answer's or the stream's) before any is built: past its limit, its error.
pub(super) fn calls_of(
    name: &str,
    names: &NameMap,
    message: &Value,
    kept: &mut wire::KeptValues,
) -> Result<Vec<ToolCall>, ProviderError> {
    let calls = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    kept.keep_calls(name, calls.len())?;
    Ok(calls
        .iter()
        .map(|c| {
            let function = c.get("function").unwrap_or(&Value::Null);
            let wire_name = function
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let (name, namespace) = names.resolve(wire_name);
            let arguments = match function.get("arguments") {
                Some(Value::Object(o)) => Value::Object(o.clone()).to_string(),
                // Some models send the arguments as JSON text.
                Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
                _ => "{}".to_owned(),
            };
            let id = match c.get("id").and_then(Value::as_str) {
                Some(id) if !id.is_empty() => id.to_owned(),
                _ => wire::fresh_call_id(),
            };
            ToolCall::new(id, name, arguments).with_namespace(namespace)
        })
        .collect())
}

pub(super) fn usage_of(v: &Value) -> Option<Usage> {
    let input = v.get("prompt_eval_count").and_then(Value::as_u64);
    let output = v.get("eval_count").and_then(Value::as_u64);
    if input.is_none() && output.is_none() {
        return None;
    }
    Some(Usage::new(input.unwrap_or(0), output.unwrap_or(0)))
}

/// Reads a whole answer.
pub(crate) fn parse(
    name: &str,
    body: &[u8],
    names: &NameMap,
    request_id: Option<String>,
) -> Result<Response, ProviderError> {
    let v: Value = wire::parse_body(name, body)?;
    if let Some(e) = server_error(name, &v) {
        return Err(e);
    }
    let Some(message) = v.get("message") else {
        return Err(wire::decode_error(name, "the answer has no `message`"));
    };
    let answer = Answer {
        text: message
            .get("content")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        thinking: message
            .get("thinking")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        calls: calls_of(name, names, message, &mut wire::KeptValues::whole_answer())?,
        usage: usage_of(&v),
        done_reason: v
            .get("done_reason")
            .and_then(Value::as_str)
            .map(str::to_owned),
        model: v.get("model").and_then(Value::as_str).map(str::to_owned),
    };
    Ok(answer.response(request_id))
}
