//! Reassembling a streamed answer from its frames.

use crate::framing::Frame;
use crate::protocol::{Assembler, NameMap};
use crate::wire;
use llm_tools_core::{ProviderError, StreamEvent};
use serde_json::Value;
use std::collections::VecDeque;

use super::response::*;

/// Reassembles an NDJSON stream: text and thinking as they come, each tool call whole when its
/// line arrives, the answer complete at the `done: true` line.
pub struct OllamaAssembler {
    name: String,
    names: NameMap,
    request_id: Option<String>,
    answer: Answer,
    done: bool,
}

impl OllamaAssembler {
    pub(crate) fn new(name: &str, names: NameMap, request_id: Option<String>) -> Self {
        Self {
            name: name.to_owned(),
            names,
            request_id,
            answer: Answer::default(),
            done: false,
        }
    }
}

impl Assembler for OllamaAssembler {
    fn feed(
        &mut self,
        frame: &Frame<'_>,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let v: Value = match serde_json::from_str(&frame.data) {
            Ok(v) => v,
            Err(e) => {
                let start: String = frame.data.chars().take(120).collect();
                return Err(wire::decode_error(
                    &self.name,
                    format!("a stream line is not JSON ({e}): {start}"),
                ));
            }
        };
        if let Some(e) = server_error(&self.name, &v) {
            return Err(e);
        }
        if let Some(message) = v.get("message") {
            if let Some(t) = message
                .get("thinking")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
            {
                self.answer.thinking.push_str(t);
                out.push_back(StreamEvent::ReasoningDelta(t.to_owned()));
            }
            if let Some(t) = message
                .get("content")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
            {
                self.answer.text.push_str(t);
                out.push_back(StreamEvent::TextDelta(t.to_owned()));
            }
            for call in calls_of(&self.names, message) {
                let index = self.answer.calls.len();
                out.push_back(StreamEvent::ToolCallStarted {
                    index,
                    id: call.id.clone(),
                    name: call.name.clone(),
                    namespace: call.namespace.clone(),
                });
                out.push_back(StreamEvent::ToolCallDelta {
                    index,
                    fragment: call.arguments.clone(),
                });
                out.push_back(StreamEvent::ToolCallReady { index });
                self.answer.calls.push(call);
            }
        }
        if v.get("done").and_then(Value::as_bool) == Some(true) {
            self.done = true;
            self.answer.usage = usage_of(&v);
            self.answer.done_reason = v
                .get("done_reason")
                .and_then(Value::as_str)
                .map(str::to_owned);
            self.answer.model = v.get("model").and_then(Value::as_str).map(str::to_owned);
            if let Some(usage) = self.answer.usage {
                out.push_back(StreamEvent::Usage(usage));
            }
        }
        Ok(())
    }

    fn is_finished(&self) -> bool {
        self.done
    }

    fn end(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
        if !self.done {
            return Err(wire::cut_short(&self.name, "no `done: true` line"));
        }
        let answer = std::mem::take(&mut self.answer);
        out.push_back(StreamEvent::Completed(Box::new(
            answer.response(self.request_id.take()),
        )));
        Ok(())
    }
}
