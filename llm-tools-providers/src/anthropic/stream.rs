//! Reassembling a streamed answer from its frames.

use crate::framing::Frame;
use crate::protocol::{Assembler, NameMap};
use crate::wire;
use llm_tools_core::{ProviderError, Response, StreamEvent};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use std::borrow::Cow;
use std::collections::VecDeque;

use super::response::*;

/// One stream event; the parts only some events have stay unparsed until they are needed, so
/// the many small delta events are read cheaply.
#[derive(Deserialize)]
struct EventIn<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    index: Option<u64>,
    #[serde(default, borrow)]
    message: Option<&'a RawValue>,
    #[serde(default, borrow)]
    content_block: Option<&'a RawValue>,
    #[serde(default, borrow)]
    delta: Option<DeltaIn<'a>>,
    #[serde(default, borrow)]
    usage: Option<&'a RawValue>,
    #[serde(default, borrow)]
    error: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct MessageStartIn<'a> {
    #[serde(default, borrow)]
    model: Option<Cow<'a, str>>,
    #[serde(default)]
    usage: Option<UsageIn>,
}

#[derive(Deserialize)]
struct DeltaIn<'a> {
    #[serde(default, rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    /// The delta's content: `text` (`text_delta`), `partial_json` (`input_json_delta`),
    /// `thinking` (`thinking_delta`) or `signature` (`signature_delta`); one field, so the many
    /// small delta events are read into a small value.
    #[serde(
        default,
        borrow,
        alias = "text",
        alias = "partial_json",
        alias = "thinking",
        alias = "signature"
    )]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    stop_reason: Option<Cow<'a, str>>,
    /// A `citations_delta`'s citation, kept as it came (it goes back with the text).
    #[serde(default, borrow)]
    citation: Option<&'a RawValue>,
}

/// A block being streamed.
enum Open {
    /// A text block and its citations (from the start and `citations_delta` events).
    Text(String, Vec<Value>),
    Call {
        call: usize,
        id: String,
        name: String,
        toolset: Option<String>,
        input: String,
    },
    /// A block whose `input` arrives as JSON fragments (`server_tool_use`, `mcp_tool_use`).
    Server {
        block: Value,
        input: String,
    },
    Thinking {
        thinking: String,
        signature: String,
    },
    Whole(Value),
}

/// Reassembles a Messages stream: blocks by index, tool inputs from their `input_json_delta`
/// fragments (no fragment at all means `{}`), the whole answer at `message_stop`.
pub struct AnthropicAssembler {
    name: String,
    names: NameMap,
    request_id: Option<String>,
    model: Option<String>,
    open: Vec<(u64, Open)>,
    blocks: Blocks,
    calls: usize,
    usage: UsageIn,
    stop_reason: Option<String>,
    done: bool,
}

impl AnthropicAssembler {
    pub(crate) fn new(name: &str, names: NameMap, request_id: Option<String>) -> Self {
        Self {
            name: name.to_owned(),
            names,
            request_id,
            model: None,
            open: Vec::new(),
            blocks: Blocks::default(),
            calls: 0,
            usage: UsageIn::default(),
            stop_reason: None,
            done: false,
        }
    }

    fn open_mut(&mut self, index: Option<u64>) -> Option<&mut Open> {
        let index = index?;
        self.open
            .iter_mut()
            .find(|(i, _)| *i == index)
            .map(|(_, b)| b)
    }

    fn start(&mut self, index: u64, block: Value, out: &mut VecDeque<StreamEvent>) {
        let s = |k: &str| block.get(k).and_then(Value::as_str).unwrap_or_default();
        let open = match s("type") {
            "text" => {
                let text = s("text").to_owned();
                if !text.is_empty() {
                    out.push_back(StreamEvent::TextDelta(text.clone()));
                }
                let citations = match block.get("citations") {
                    Some(Value::Array(c)) => c.clone(),
                    _ => Vec::new(),
                };
                Open::Text(text, citations)
            }
            "tool_use" => {
                let call = self.calls;
                self.calls += 1;
                let id = s("id").to_owned();
                let toolset = block
                    .get("toolset_name")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                let (name, namespace) = match &toolset {
                    Some(t) => (s("name").to_owned(), Some(t.clone())),
                    None => self.names.resolve(s("name")),
                };
                out.push_back(StreamEvent::ToolCallStarted {
                    index: call,
                    id: id.clone(),
                    name,
                    namespace,
                });
                Open::Call {
                    call,
                    id,
                    name: s("name").to_owned(),
                    toolset,
                    input: String::new(),
                }
            }
            "thinking" => {
                let thinking = s("thinking").to_owned();
                if !thinking.is_empty() {
                    out.push_back(StreamEvent::ReasoningDelta(thinking.clone()));
                }
                Open::Thinking {
                    thinking,
                    signature: s("signature").to_owned(),
                }
            }
            "server_tool_use" | "mcp_tool_use" => Open::Server {
                block,
                input: String::new(),
            },
            _ => Open::Whole(block),
        };
        self.open.push((index, open));
    }

    fn delta(&mut self, index: Option<u64>, delta: DeltaIn<'_>, out: &mut VecDeque<StreamEvent>) {
        let Some(open) = self.open_mut(index) else {
            return;
        };
        if let Some(citation) = delta.citation {
            if let (Open::Text(_, citations), Ok(c)) =
                (open, serde_json::from_str::<Value>(citation.get()))
            {
                citations.push(c);
            }
            return;
        }
        let content = delta.content.filter(|c| !c.is_empty());
        match (open, delta.kind.as_deref(), content) {
            (Open::Text(text, _), Some("text_delta"), Some(t)) => {
                text.push_str(&t);
                out.push_back(StreamEvent::TextDelta(t.into_owned()));
            }
            (Open::Call { call, input, .. }, Some("input_json_delta"), Some(fragment)) => {
                input.push_str(&fragment);
                out.push_back(StreamEvent::ToolCallDelta {
                    index: *call,
                    fragment: fragment.into_owned(),
                });
            }
            (Open::Server { input, .. }, Some("input_json_delta"), Some(fragment)) => {
                input.push_str(&fragment);
            }
            (Open::Thinking { thinking, .. }, Some("thinking_delta"), Some(t)) => {
                thinking.push_str(&t);
                out.push_back(StreamEvent::ReasoningDelta(t.into_owned()));
            }
            (Open::Thinking { signature, .. }, Some("signature_delta"), Some(sig)) => {
                signature.push_str(&sig);
            }
            _ => {}
        }
    }

    fn stop(&mut self, index: Option<u64>, out: &mut VecDeque<StreamEvent>) {
        let Some(position) = index.and_then(|i| self.open.iter().position(|(j, _)| *j == i)) else {
            return;
        };
        let (_, open) = self.open.remove(position);
        self.close(open, out);
    }

    fn close(&mut self, open: Open, out: &mut VecDeque<StreamEvent>) {
        match open {
            Open::Text(text, citations) => self.blocks.text(text, citations),
            Open::Call {
                call,
                id,
                name,
                toolset,
                input,
            } => {
                out.push_back(StreamEvent::ToolCallReady { index: call });
                let call = call_of(&self.names, &id, &name, toolset.as_deref(), input);
                self.blocks.call(call);
            }
            Open::Server { mut block, input } => {
                if let Value::Object(o) = &mut block {
                    let parsed = if input.trim().is_empty() {
                        Some(json!({}))
                    } else {
                        serde_json::from_str(&input).ok()
                    };
                    if let Some(v) = parsed {
                        o.insert("input".into(), v);
                    }
                }
                self.blocks.raw(block);
            }
            Open::Thinking {
                thinking,
                signature,
            } => self.blocks.raw(json!({
                "type": "thinking",
                "thinking": thinking,
                "signature": signature,
            })),
            Open::Whole(block) => self.blocks.raw(block),
        }
    }

    fn complete(&mut self, out: &mut VecDeque<StreamEvent>) {
        // Blocks never stopped (a server that skips `content_block_stop`) close in order.
        let open = std::mem::take(&mut self.open);
        for (_, block) in open {
            self.close(block, out);
        }
        let usage = self.usage.usage();
        out.push_back(StreamEvent::Usage(usage));
        let blocks = std::mem::take(&mut self.blocks);
        let message = blocks.message(
            Some(usage),
            self.stop_reason.as_deref(),
            self.names.answer_tool(),
        );
        out.push_back(StreamEvent::Completed(Box::new(
            Response::new(message)
                .with_finish_reason(self.stop_reason.take())
                .with_request_id(self.request_id.take())
                .with_model(self.model.take()),
        )));
        self.done = true;
    }
}

impl Assembler for AnthropicAssembler {
    fn feed(
        &mut self,
        event: &Frame<'_>,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(());
        }
        let Some(e) = wire::read_event::<EventIn<'_>>(&self.name, data) else {
            return Ok(());
        };
        match e.kind.as_ref() {
            "message_start" => {
                if let Some(m) = e
                    .message
                    .and_then(|m| serde_json::from_str::<MessageStartIn<'_>>(m.get()).ok())
                {
                    self.model = m.model.map(Cow::into_owned);
                    if let Some(u) = m.usage {
                        self.usage.merge(u);
                    }
                }
            }
            "content_block_start" => {
                if let Some(index) = e.index
                    && let Some(block) = wire::value_of(e.content_block).filter(Value::is_object)
                {
                    self.start(index, block, out);
                }
            }
            "content_block_delta" => {
                if let Some(delta) = e.delta {
                    self.delta(e.index, delta, out);
                }
            }
            "content_block_stop" => self.stop(e.index, out),
            "message_delta" => {
                if let Some(reason) = e.delta.and_then(|d| d.stop_reason) {
                    self.stop_reason = Some(reason.into_owned());
                }
                if let Some(u) = e
                    .usage
                    .and_then(|u| serde_json::from_str::<UsageIn>(u.get()).ok())
                {
                    self.usage.merge(u);
                }
            }
            "message_stop" => self.complete(out),
            "error" => {
                let error = wire::value_of(e.error).unwrap_or(Value::Null);
                return Err(error_of(&self.name, &error));
            }
            _ => {}
        }
        Ok(())
    }

    fn is_finished(&self) -> bool {
        self.done
    }

    fn end(&mut self, _out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        Err(wire::cut_short(&self.name, "no message_stop event"))
    }
}
