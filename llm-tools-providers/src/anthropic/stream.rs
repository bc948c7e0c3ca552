//! Reassembling a streamed answer from its frames.

use crate::framing::Frame;
use crate::protocol::{Assembler, NameMap};
use crate::wire;
use crate::wire::open_blocks::OpenBlocks;
use llm_tools_core::{ProviderError, Response, StreamEvent};
use serde::Deserialize;
use serde_json::{Value, json};
use std::borrow::Cow;
use std::collections::VecDeque;

use crate::framing::lenient::{Raw, Str, U64, lenient_struct, read_event_into};

use super::response::*;

lenient_struct! {
    /// One stream event, read as a `Value` would be (a key missing or of another type is
    /// nothing, the last of a repeated key counts) without building one; the parts only some
    /// events have stay unread until they are needed, so the many small delta events are read
    /// cheaply.
    struct EventIn<'a> {
        kind: Str<'a> = "type",
        index: U64 = "index",
        message: Raw<'a> = "message",
        content_block: Raw<'a> = "content_block",
        delta: DeltaIn<'a> = "delta",
        usage: Raw<'a> = "usage",
        error: Raw<'a> = "error",
    }
}

#[derive(Deserialize)]
struct MessageStartIn<'a> {
    #[serde(default, borrow)]
    model: Option<Cow<'a, str>>,
    #[serde(default)]
    usage: Option<UsageIn>,
}

lenient_struct! {
    struct DeltaIn<'a> {
        kind: Str<'a> = "type",
        /// A `text_delta`'s text.
        text: Str<'a> = "text",
        /// An `input_json_delta`'s fragment.
        partial_json: Str<'a> = "partial_json",
        /// A `thinking_delta`'s text.
        thinking: Str<'a> = "thinking",
        /// A `signature_delta`'s part.
        signature: Str<'a> = "signature",
        stop_reason: Str<'a> = "stop_reason",
        /// A `citations_delta`'s citation, kept as it came (it goes back with the text).
        citation: Raw<'a> = "citation",
    }
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
        /// Who made the call (see `Blocks::call`).
        caller: Option<Value>,
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
    open: OpenBlocks<Open>,
    blocks: Blocks,
    calls: usize,
    usage: UsageIn,
    stop_reason: Option<String>,
    /// The values the blocks keep (citations, server blocks and their input).
    kept: wire::KeptValues,
    /// The events (and parts) skipped unread.
    unreadable: wire::UnreadableEvents,
    done: bool,
}

impl AnthropicAssembler {
    pub(crate) fn new(name: &str, names: NameMap, request_id: Option<String>) -> Self {
        Self {
            name: name.to_owned(),
            names,
            request_id,
            model: None,
            open: OpenBlocks::default(),
            blocks: Blocks::default(),
            calls: 0,
            usage: UsageIn::default(),
            stop_reason: None,
            kept: wire::KeptValues::default(),
            unreadable: wire::UnreadableEvents::default(),
            done: false,
        }
    }

    fn open_mut(&mut self, index: Option<u64>) -> Option<&mut Open> {
        self.open.get_mut(index?)
    }

    fn start(
        &mut self,
        index: u64,
        block: Value,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), ProviderError> {
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
                self.kept.keep_call(&self.name)?;
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
                    caller: block.get("caller").cloned(),
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
        if let Some(ended) = self.open.open(index, open) {
            self.close(ended, out)?;
        }
        Ok(())
    }

    fn delta(
        &mut self,
        index: Option<u64>,
        delta: &mut DeltaIn<'_>,
        out: &mut VecDeque<StreamEvent>,
    ) {
        let Some(open) = self.open_mut(index) else {
            return;
        };
        // (A `null` citation is none, as it was when the event was read into `Option`s.)
        if let Some(citation) = delta.citation.0.filter(|c| c.get() != "null") {
            if let (Open::Text(_, citations), Ok(c)) =
                (open, serde_json::from_str::<Value>(citation.get()))
            {
                citations.push(c);
            }
            return;
        }
        match (open, delta.kind.get()) {
            (Open::Text(text, _), Some("text_delta")) => {
                if let Some(t) = delta.text.take_filled() {
                    text.push_str(&t);
                    out.push_back(StreamEvent::TextDelta(t.into_owned()));
                }
            }
            (Open::Call { call, input, .. }, Some("input_json_delta")) => {
                if let Some(fragment) = delta.partial_json.take_filled() {
                    input.push_str(&fragment);
                    out.push_back(StreamEvent::ToolCallDelta {
                        index: *call,
                        fragment: fragment.into_owned(),
                    });
                }
            }
            (Open::Server { input, .. }, Some("input_json_delta")) => {
                if let Some(fragment) = delta.partial_json.get() {
                    input.push_str(fragment);
                }
            }
            (Open::Thinking { thinking, .. }, Some("thinking_delta")) => {
                if let Some(t) = delta.thinking.take_filled() {
                    thinking.push_str(&t);
                    out.push_back(StreamEvent::ReasoningDelta(t.into_owned()));
                }
            }
            (Open::Thinking { signature, .. }, Some("signature_delta")) => {
                if let Some(sig) = delta.signature.get() {
                    signature.push_str(sig);
                }
            }
            _ => {}
        }
    }

    fn stop(
        &mut self,
        index: Option<u64>,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let Some(open) = index.and_then(|i| self.open.close(i)) else {
            return Ok(());
        };
        self.close(open, out)
    }

    fn close(&mut self, open: Open, out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
        match open {
            Open::Text(text, citations) => self.blocks.text(text, citations),
            Open::Call {
                call: start,
                id,
                name,
                toolset,
                caller,
                input,
            } => {
                out.push_back(StreamEvent::ToolCallReady { index: start });
                let call = call_of(&self.names, &id, &name, toolset.as_deref(), input);
                self.blocks.call(start, call, caller);
            }
            Open::Server { mut block, input } => {
                // Its input came in fragments, each within the limit: counted whole.
                self.kept.keep(&self.name, &input)?;
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
        Ok(())
    }

    fn complete(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
        // Blocks never stopped (a server that skips `content_block_stop`) close in order.
        for block in self.open.drain() {
            self.close(block, out)?;
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
        Ok(())
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
        let mut e = EventIn::default();
        if !read_event_into(&mut self.unreadable, &self.name, data, &mut e)? {
            return Ok(());
        }
        let index = e.index.0;
        match e.kind.get().unwrap_or_default() {
            "message_start" => {
                if let Some(m) = e
                    .message
                    .0
                    .and_then(|m| serde_json::from_str::<MessageStartIn<'_>>(m.get()).ok())
                {
                    self.model = m.model.map(Cow::into_owned);
                    if let Some(u) = m.usage {
                        self.usage.merge(u);
                    }
                }
            }
            "content_block_start" => {
                if let Some(raw) = e.content_block.0 {
                    self.kept.keep(&self.name, raw.get())?;
                }
                if let Some(index) = index
                    && let Some(block) = e.content_block.value().filter(Value::is_object)
                {
                    self.start(index, block, out)?;
                }
            }
            "content_block_delta" => {
                if let Some(citation) = e.delta.citation.0 {
                    self.kept.keep(&self.name, citation.get())?;
                }
                self.delta(index, &mut e.delta, out);
            }
            "content_block_stop" => self.stop(index, out)?,
            "message_delta" => {
                if let Some(reason) = e.delta.stop_reason.get() {
                    self.stop_reason = Some(reason.to_owned());
                }
                if let Some(u) = e
                    .usage
                    .0
                    .and_then(|u| serde_json::from_str::<UsageIn>(u.get()).ok())
                {
                    self.usage.merge(u);
                }
            }
            "message_stop" => self.complete(out)?,
            "error" => {
                let error = e.error.value().unwrap_or(Value::Null);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn feed_all(frames: &[&str]) -> Vec<StreamEvent> {
        let mut a = AnthropicAssembler::new("t", NameMap::default(), None);
        let mut out = VecDeque::new();
        for f in frames {
            a.feed(&Frame::data(*f), &mut out).unwrap();
        }
        a.end(&mut out).unwrap();
        out.into()
    }

    /// A stream that closes its calls out of order still gives the answer its calls at the
    /// places their start events gave.
    #[test]
    fn calls_closed_out_of_order_keep_their_started_places() {
        let got = feed_all(&[
            r#"{"type":"message_start","message":{"model":"m"}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"a","name":"f","input":{}}}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"b","name":"f","input":{}}}"#,
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"c","name":"f","input":{}}}"#,
            r#"{"type":"content_block_stop","index":2}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"}}"#,
            r#"{"type":"message_stop"}"#,
        ]);
        let ids = wire::test_events::calls_at_their_started_places(&got);
        assert_eq!(ids, ["a", "b", "c"]);
    }

    /// The events read without a `Value` read as a `Value` reads them: escapes, values of
    /// another type, keys given twice (the last counts), each delta's own key, unreadable
    /// events skipped.
    #[test]
    fn odd_delta_events_read_as_a_value_reads_them() {
        let got = feed_all(&[
            r#"{"type":"message_start","message":{"model":"m","usage":{"input_tokens":3}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\"b"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":7}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","partial_json":"no"}}"#,
            r#"{"type":"x","type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"c"}}"#,
            r#"{"type":"content_block_delta","index":"0","delta":{"type":"text_delta","text":"no"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":null}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lost"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","citation":null,"text":"d"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t1","name":"f","input":{}}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"x","partial_json":"1}"}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"thinking","thinking":""}}"#,
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"thinking_delta","thinking":"hm"}}"#,
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"signature_delta","signature":"sig"}}"#,
            r#"{"type":"content_block_stop","index":2}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":4}}"#,
            r#"{"type":"message_stop"}"#,
        ]);
        let text = |t: &str| StreamEvent::TextDelta(t.into());
        assert_eq!(got[..3], [text("a\"b"), text("c"), text("d")], "{got:?}");
        assert!(
            matches!(&got[3], StreamEvent::ToolCallStarted { index: 0, id, name, .. }
            if id == "t1" && name == "f"),
            "{got:?}"
        );
        let fragment = |f: &str| StreamEvent::ToolCallDelta {
            index: 0,
            fragment: f.into(),
        };
        assert_eq!(got[4..6], [fragment(r#"{"a":"#), fragment("1}")]);
        assert_eq!(got[6], StreamEvent::ToolCallReady { index: 0 });
        assert_eq!(got[7], StreamEvent::ReasoningDelta("hm".into()));
        let StreamEvent::Usage(usage) = &got[8] else {
            panic!("{got:?}");
        };
        assert_eq!((usage.input_tokens, usage.output_tokens), (3, 4));
        let StreamEvent::Completed(response) = &got[9] else {
            panic!("{got:?}");
        };
        assert_eq!(response.message.text(), "a\"bcd");
        assert_eq!(response.message.tool_calls[0].arguments, r#"{"a":1}"#);
        assert_eq!(response.finish_reason.as_deref(), Some("tool_use"));
        assert_eq!(response.model.as_deref(), Some("m"));
        assert_eq!(got.len(), 10);
    }

    #[test]
    fn an_error_event_is_an_error() {
        let mut a = AnthropicAssembler::new("t", NameMap::default(), None);
        let mut out = VecDeque::new();
        let error = a.feed(
            &Frame::data(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"busy"}}"#,
            ),
            &mut out,
        );
        let error = error.unwrap_err();
        assert_eq!(error.error_type(), Some("overloaded_error"));
        assert!(error.message().contains("busy"), "{error}");
        // Overloaded is worth trying again.
        assert!(error.is_retryable(), "{error}");
    }
}
