//! Reassembling a streamed answer from its frames.

use crate::framing::Frame;
use crate::protocol::{Assembler, NameMap};
use crate::wire;
use llm_tools_core::{ProviderError, StreamEvent};
use serde_json::{Map, Value};
use std::collections::VecDeque;

use super::response::*;

/// A call of a stream, open until its `tool-call-end`.
struct OpenCall {
    index: u64,
    call: usize,
    start: Value,
    arguments: String,
}

/// Reassembles a v2 chat stream: text, the tool plan (as reasoning), calls by `index` from
/// their argument fragments, citations, the answer complete at `message-end`.
pub struct CohereAssembler {
    name: String,
    names: NameMap,
    request_id: Option<String>,
    answer: Answer,
    open: Vec<OpenCall>,
    done: bool,
}

impl CohereAssembler {
    pub(crate) fn new(name: &str, names: NameMap, request_id: Option<String>) -> Self {
        Self {
            name: name.to_owned(),
            names,
            request_id,
            answer: Answer::default(),
            open: Vec::new(),
            done: false,
        }
    }

    fn close(&mut self, index: Option<u64>, out: &mut VecDeque<StreamEvent>) {
        let at = match index {
            Some(i) => self.open.iter().position(|c| c.index == i),
            None => (!self.open.is_empty()).then_some(0),
        };
        let Some(at) = at else { return };
        let open = self.open.remove(at);
        out.push_back(StreamEvent::ToolCallReady { index: open.call });
        let call = call_of(&self.names, &open.start, open.arguments);
        self.answer.calls.push(call);
    }
}

impl Assembler for CohereAssembler {
    fn feed(
        &mut self,
        frame: &Frame<'_>,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let Some(event) = wire::read_event::<Value>(&self.name, &frame.data) else {
            return Ok(());
        };
        let kind = frame
            .event
            .as_deref()
            .or_else(|| event.get("type").and_then(Value::as_str))
            .unwrap_or_default()
            .to_owned();
        let delta = event.get("delta").and_then(|d| d.get("message"));
        let index = event.get("index").and_then(Value::as_u64);
        match kind.as_str() {
            "message-start" => {
                self.answer.id = event.get("id").and_then(Value::as_str).map(str::to_owned);
            }
            "content-start" | "content-delta" => {
                let text = delta
                    .and_then(|m| m.get("content"))
                    .and_then(|c| c.get("text"))
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty());
                if let Some(t) = text {
                    self.answer.text.push_str(t);
                    out.push_back(StreamEvent::TextDelta(t.to_owned()));
                }
            }
            "tool-plan-delta" => {
                if let Some(t) = delta
                    .and_then(|m| m.get("tool_plan"))
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty())
                {
                    self.answer.plan.push_str(t);
                    out.push_back(StreamEvent::ReasoningDelta(t.to_owned()));
                }
            }
            "tool-call-start" => {
                let start = delta
                    .and_then(|m| m.get("tool_calls"))
                    .cloned()
                    .unwrap_or(Value::Null);
                let call = self.answer.calls.len() + self.open.len();
                let wire_name = start
                    .get("function")
                    .and_then(|f| f.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let (name, namespace) = self.names.resolve(wire_name);
                let id = match start.get("id").and_then(Value::as_str) {
                    Some(id) if !id.is_empty() => id.to_owned(),
                    _ => wire::fresh_call_id(),
                };
                // (`tool_calls` is one object in these events; anything else is read as a call
                // with no name, never indexed as an object.)
                let mut start = match start {
                    Value::Object(o) => o,
                    _ => Map::new(),
                };
                start.insert("id".into(), Value::String(id.clone()));
                let start = Value::Object(start);
                let arguments = start
                    .get("function")
                    .and_then(|f| f.get("arguments"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                out.push_back(StreamEvent::ToolCallStarted {
                    index: call,
                    id,
                    name,
                    namespace,
                });
                if !arguments.is_empty() {
                    out.push_back(StreamEvent::ToolCallDelta {
                        index: call,
                        fragment: arguments.clone(),
                    });
                }
                self.open.push(OpenCall {
                    index: index.unwrap_or(call as u64),
                    call,
                    start,
                    arguments,
                });
            }
            "tool-call-delta" => {
                let fragment = delta
                    .and_then(|m| m.get("tool_calls"))
                    .and_then(|c| c.get("function"))
                    .and_then(|f| f.get("arguments"))
                    .and_then(Value::as_str)
                    .filter(|f| !f.is_empty());
                let open = match index {
                    Some(i) => self.open.iter_mut().find(|c| c.index == i),
                    None => self.open.last_mut(),
                };
                if let (Some(open), Some(fragment)) = (open, fragment) {
                    open.arguments.push_str(fragment);
                    out.push_back(StreamEvent::ToolCallDelta {
                        index: open.call,
                        fragment: fragment.to_owned(),
                    });
                }
            }
            "tool-call-end" => self.close(index, out),
            "citation-start" => {
                if let Some(c) = delta.and_then(|m| m.get("citations")) {
                    self.answer.citations.push(c.clone());
                }
            }
            "message-end" => {
                while !self.open.is_empty() {
                    self.close(None, out);
                }
                let end = event.get("delta");
                self.answer.finish_reason = end
                    .and_then(|d| d.get("finish_reason"))
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                if let Some(u) = end.and_then(|d| d.get("usage")) {
                    let usage = usage_of(u);
                    self.answer.usage = Some(usage);
                    out.push_back(StreamEvent::Usage(usage));
                }
                self.done = true;
            }
            _ => {}
        }
        Ok(())
    }

    fn is_finished(&self) -> bool {
        self.done
    }

    fn end(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
        if !self.done {
            return Err(wire::cut_short(&self.name, "no message-end"));
        }
        let answer = std::mem::take(&mut self.answer);
        out.push_back(StreamEvent::Completed(Box::new(
            answer.response(self.request_id.take()),
        )));
        Ok(())
    }
}
