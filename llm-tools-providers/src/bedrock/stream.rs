//! Reassembling a streamed answer from its frames.

use super::errors::stream_exception;
use crate::framing::Frame;
use crate::protocol::{Assembler, NameMap};
use crate::wire;
use llm_tools_core::{ProviderError, Response, StreamEvent, Usage};
use serde_json::{Value, json};
use std::collections::VecDeque;

use super::response::*;

/// A content block of a stream, open until its `contentBlockStop`.
enum Open {
    Text(String),
    /// A provider tool's use: its start, and its input's JSON fragments.
    Server {
        start: Value,
        input: String,
    },
    /// A provider tool's result (Nova grounding's): its start, and its content pieces.
    ServerResult {
        start: Value,
        content: Vec<Value>,
    },
    /// Citations streamed one by one, kept as one `citationsContent` block.
    Citations(Vec<Value>),
    Call {
        call: usize,
        id: String,
        name: String,
        input: String,
    },
    Reasoning {
        text: String,
        signature: Option<String>,
        redacted: Option<String>,
    },
}

/// Reassembles a ConverseStream: blocks by `contentBlockIndex`, tool inputs from their
/// fragments (none at all means `{}`), the answer complete at `metadata` (or when the stream
/// ends after `messageStop`).
pub struct BedrockAssembler {
    name: String,
    names: NameMap,
    request_id: Option<String>,
    open: Vec<(u64, Open)>,
    blocks: Blocks,
    calls: usize,
    usage: Option<Usage>,
    stop_reason: Option<String>,
    stopped: bool,
    done: bool,
}

impl BedrockAssembler {
    pub(crate) fn new(name: &str, names: NameMap, request_id: Option<String>) -> Self {
        Self {
            name: name.to_owned(),
            names,
            request_id,
            open: Vec::new(),
            blocks: Blocks::default(),
            calls: 0,
            usage: None,
            stop_reason: None,
            stopped: false,
            done: false,
        }
    }

    fn index(event: &Value) -> u64 {
        event
            .get("contentBlockIndex")
            .and_then(Value::as_u64)
            .unwrap_or(0)
    }

    fn open_mut(&mut self, index: u64) -> Option<&mut Open> {
        self.open
            .iter_mut()
            .find(|(i, _)| *i == index)
            .map(|(_, b)| b)
    }

    fn start_call(&mut self, index: u64, tool_use: &Value, out: &mut VecDeque<StreamEvent>) {
        if is_server_tool(tool_use) {
            self.open.push((
                index,
                Open::Server {
                    start: tool_use.clone(),
                    input: String::new(),
                },
            ));
            return;
        }
        let call = self.calls;
        self.calls += 1;
        let id = match str_at(tool_use, "toolUseId") {
            "" => wire::fresh_call_id(),
            id => id.to_owned(),
        };
        let wire_name = str_at(tool_use, "name").to_owned();
        let (name, namespace) = self.names.resolve(&wire_name);
        out.push_back(StreamEvent::ToolCallStarted {
            index: call,
            id: id.clone(),
            name,
            namespace,
        });
        self.open.push((
            index,
            Open::Call {
                call,
                id,
                name: wire_name,
                input: String::new(),
            },
        ));
    }

    fn delta(&mut self, index: u64, delta: &Value, out: &mut VecDeque<StreamEvent>) {
        if self.open_mut(index).is_none() {
            // A block that starts with its first delta (text, reasoning).
            let open = if delta.get("citation").is_some() {
                Open::Citations(Vec::new())
            } else if delta.get("reasoningContent").is_some() {
                Open::Reasoning {
                    text: String::new(),
                    signature: None,
                    redacted: None,
                }
            } else {
                Open::Text(String::new())
            };
            self.open.push((index, open));
        }
        let Some(open) = self.open_mut(index) else {
            return;
        };
        match open {
            Open::Text(text) => {
                if let Some(t) = delta
                    .get("text")
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty())
                {
                    text.push_str(t);
                    out.push_back(StreamEvent::TextDelta(t.to_owned()));
                }
            }
            Open::ServerResult { content, .. } => {
                if let Some(pieces) = delta.get("toolResult").and_then(Value::as_array) {
                    content.extend(pieces.iter().cloned());
                }
            }
            Open::Citations(citations) => {
                if let Some(c) = delta.get("citation") {
                    citations.push(c.clone());
                }
            }
            Open::Server { input, .. } => {
                if let Some(fragment) = delta
                    .get("toolUse")
                    .and_then(|u| u.get("input"))
                    .and_then(Value::as_str)
                {
                    input.push_str(fragment);
                }
            }
            Open::Call { call, input, .. } => {
                if let Some(fragment) = delta
                    .get("toolUse")
                    .and_then(|u| u.get("input"))
                    .and_then(Value::as_str)
                    .filter(|f| !f.is_empty())
                {
                    input.push_str(fragment);
                    out.push_back(StreamEvent::ToolCallDelta {
                        index: *call,
                        fragment: fragment.to_owned(),
                    });
                }
            }
            Open::Reasoning {
                text,
                signature,
                redacted,
            } => {
                let Some(r) = delta.get("reasoningContent") else {
                    return;
                };
                if let Some(t) = r
                    .get("text")
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty())
                {
                    text.push_str(t);
                    out.push_back(StreamEvent::ReasoningDelta(t.to_owned()));
                }
                if let Some(s) = r.get("signature").and_then(Value::as_str) {
                    signature.get_or_insert_with(String::new).push_str(s);
                }
                if let Some(d) = r.get("redactedContent").and_then(Value::as_str) {
                    redacted.get_or_insert_with(String::new).push_str(d);
                }
            }
        }
    }

    fn close(&mut self, index: u64, out: &mut VecDeque<StreamEvent>) {
        let Some(at) = self.open.iter().position(|(i, _)| *i == index) else {
            return;
        };
        let (_, block) = self.open.remove(at);
        self.close_block(block, out);
    }

    fn close_block(&mut self, block: Open, out: &mut VecDeque<StreamEvent>) {
        match block {
            Open::Text(text) => self.blocks.text(text),
            Open::ServerResult { mut start, content } => {
                if let Some(fields) = start.as_object_mut() {
                    fields.insert("content".into(), Value::Array(content));
                }
                self.blocks.raw(json!({ "toolResult": start }));
            }
            Open::Citations(citations) => {
                let block = json!({"citationsContent": {"citations": citations}});
                self.blocks.citations_of(&block);
                self.blocks.raw(block);
            }
            Open::Server { mut start, input } => {
                if let (Some(parsed), Some(fields)) = (
                    serde_json::from_str::<Value>(&input).ok(),
                    start.as_object_mut(),
                ) {
                    fields.insert("input".into(), parsed);
                }
                self.blocks.server_tool(&start);
            }
            Open::Call {
                call,
                id,
                name,
                input,
            } => {
                out.push_back(StreamEvent::ToolCallReady { index: call });
                let call = call_of(&self.names, &id, &name, input);
                self.blocks.call(call);
            }
            Open::Reasoning {
                text,
                signature,
                redacted,
            } => {
                let content = match redacted {
                    Some(data) => json!({"redactedContent": data}),
                    None => {
                        let mut reasoning = json!({"text": text});
                        if let Some(s) = signature {
                            reasoning["signature"] = Value::from(s);
                        }
                        json!({"reasoningText": reasoning})
                    }
                };
                self.blocks.raw(json!({"reasoningContent": content}));
            }
        }
    }
}

impl Assembler for BedrockAssembler {
    fn feed(
        &mut self,
        frame: &Frame<'_>,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let kind = frame.event.as_deref().unwrap_or_default();
        if frame.exception {
            return Err(stream_exception(&self.name, kind, &frame.data));
        }
        let Some(event) = wire::read_event::<Value>(&self.name, &frame.data) else {
            return Ok(());
        };
        match kind {
            "contentBlockStart" => {
                let index = Self::index(&event);
                if let Some(tool_use) = event.get("start").and_then(|s| s.get("toolUse")) {
                    self.start_call(index, tool_use, out);
                } else if let Some(result) = event.get("start").and_then(|s| s.get("toolResult")) {
                    self.open.push((
                        index,
                        Open::ServerResult {
                            start: result.clone(),
                            content: Vec::new(),
                        },
                    ));
                }
            }
            "contentBlockDelta" => {
                if let Some(delta) = event.get("delta") {
                    self.delta(Self::index(&event), delta, out);
                }
            }
            "contentBlockStop" => self.close(Self::index(&event), out),
            "messageStop" => {
                self.stopped = true;
                self.stop_reason = event
                    .get("stopReason")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
            }
            "metadata" => {
                if let Some(u) = event.get("usage") {
                    let usage = usage_of(u);
                    self.usage = Some(usage);
                    out.push_back(StreamEvent::Usage(usage));
                }
                if self.stopped {
                    self.done = true;
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn is_finished(&self) -> bool {
        self.done
    }

    fn end(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
        if !self.stopped {
            return Err(wire::cut_short(&self.name, "no messageStop"));
        }
        // Blocks the stream never closed still count.
        let open = std::mem::take(&mut self.open);
        for (_, block) in open {
            self.close_block(block, out);
        }
        let blocks = std::mem::take(&mut self.blocks);
        let response = Response::new(blocks.message(self.usage))
            .with_finish_reason(self.stop_reason.take())
            .with_request_id(self.request_id.take());
        out.push_back(StreamEvent::Completed(Box::new(response)));
        Ok(())
    }
}
