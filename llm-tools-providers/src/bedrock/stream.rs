//! Reassembling a streamed answer from its frames.

use super::errors::stream_exception;
use crate::framing::Frame;
use crate::protocol::{Assembler, NameMap};
use crate::wire;
use crate::wire::open_blocks::OpenBlocks;
use llm_tools_core::{ProviderError, Response, StreamEvent, Usage};
use serde_json::{Value, json};
use std::collections::VecDeque;

use super::response::*;
use crate::framing::lenient::{Present, Raw, Str, U64, lenient_struct, read_event_into};

lenient_struct! {
    /// A `contentBlockDelta` event, read without building a `Value`: there is one per piece of
    /// text or of a tool's input.
    struct DeltaEventIn<'a> {
        index: U64 = "contentBlockIndex",
        delta: Present<DeltaIn<'a>> = "delta",
    }
}

lenient_struct! {
    /// A delta: text, a tool's input fragment, a citation, reasoning, or a provider tool's
    /// result pieces (the last two kept whole, read as a `Value` when they come).
    struct DeltaIn<'a> {
        text: Str<'a> = "text",
        tool_use: ToolUseIn<'a> = "toolUse",
        citation: Raw<'a> = "citation",
        reasoning: Present<ReasoningIn<'a>> = "reasoningContent",
        tool_result: Raw<'a> = "toolResult",
    }
}

lenient_struct! {
    struct ToolUseIn<'a> {
        input: Str<'a> = "input",
    }
}

lenient_struct! {
    struct ReasoningIn<'a> {
        text: Str<'a> = "text",
        signature: Str<'a> = "signature",
        redacted: Str<'a> = "redactedContent",
    }
}

/// A content block of a stream, open until its `contentBlockStop`.
enum Open {
    /// Text, with the citations streamed into the same block: Claude's cited answer is one
    /// `citationsContent` block whose text and citations arrive as `text` and `citation`
    /// deltas at one index, in either order.
    Text { text: String, citations: Vec<Value> },
    /// A provider tool's use: its start, and its input's JSON fragments.
    Server { start: Value, input: String },
    /// A provider tool's result (Nova grounding's): its start, and its content pieces.
    ServerResult { start: Value, content: Vec<Value> },
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
    open: OpenBlocks<Open>,
    blocks: Blocks,
    calls: usize,
    usage: Option<Usage>,
    stop_reason: Option<String>,
    stopped: bool,
    /// The values the blocks keep (citations, provider tool blocks and their input).
    kept: wire::KeptValues,
    /// The events (and parts) skipped unread.
    unreadable: wire::UnreadableEvents,
    /// The limit a closing block's input passed, reported by the event that closed it.
    overflow: Option<ProviderError>,
    done: bool,
}

impl BedrockAssembler {
    pub(crate) fn new(name: &str, names: NameMap, request_id: Option<String>) -> Self {
        Self {
            name: name.to_owned(),
            names,
            request_id,
            open: OpenBlocks::default(),
            blocks: Blocks::default(),
            calls: 0,
            usage: None,
            stop_reason: None,
            stopped: false,
            kept: wire::KeptValues::default(),
            unreadable: wire::UnreadableEvents::default(),
            overflow: None,
            done: false,
        }
    }

    fn index(event: &Value) -> u64 {
        event
            .get("contentBlockIndex")
            .and_then(Value::as_u64)
            .unwrap_or(0)
    }

    /// Opens a block at `index`; one still open there ends first.
    fn open(&mut self, index: u64, block: Open, out: &mut VecDeque<StreamEvent>) {
        if let Some(ended) = self.open.open(index, block) {
            self.close_block(ended, out);
        }
    }

    fn start_call(&mut self, index: u64, tool_use: &Value, out: &mut VecDeque<StreamEvent>) {
        if is_server_tool(tool_use) {
            let server = Open::Server {
                start: tool_use.clone(),
                input: String::new(),
            };
            self.open(index, server, out);
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
        let call = Open::Call {
            call,
            id,
            name: wire_name,
            input: String::new(),
        };
        self.open(index, call, out);
    }

    fn delta(&mut self, index: u64, delta: &mut DeltaIn<'_>, out: &mut VecDeque<StreamEvent>) {
        if !self.open.is_open(index) {
            // A block that starts with its first delta (text, citations, reasoning).
            let open = if delta.reasoning.0.is_some() {
                Open::Reasoning {
                    text: String::new(),
                    signature: None,
                    redacted: None,
                }
            } else {
                Open::Text {
                    text: String::new(),
                    citations: Vec::new(),
                }
            };
            self.open(index, open, out);
        }
        let Some(open) = self.open.get_mut(index) else {
            return;
        };
        match open {
            Open::Text { text, citations } => {
                if let Some(t) = delta.text.take_filled() {
                    text.push_str(&t);
                    out.push_back(StreamEvent::TextDelta(t.into_owned()));
                }
                if let Some(c) = delta.citation.value() {
                    citations.push(c);
                }
            }
            Open::ServerResult { content, .. } => {
                if let Some(Value::Array(pieces)) = delta.tool_result.value() {
                    content.extend(pieces);
                }
            }
            Open::Server { input, .. } => {
                if let Some(fragment) = delta.tool_use.input.get() {
                    input.push_str(fragment);
                }
            }
            Open::Call { call, input, .. } => {
                if let Some(fragment) = delta.tool_use.input.take_filled() {
                    input.push_str(&fragment);
                    out.push_back(StreamEvent::ToolCallDelta {
                        index: *call,
                        fragment: fragment.into_owned(),
                    });
                }
            }
            Open::Reasoning {
                text,
                signature,
                redacted,
            } => {
                let Some(r) = &mut delta.reasoning.0 else {
                    return;
                };
                if let Some(t) = r.text.take_filled() {
                    text.push_str(&t);
                    out.push_back(StreamEvent::ReasoningDelta(t.into_owned()));
                }
                if let Some(s) = r.signature.get() {
                    signature.get_or_insert_with(String::new).push_str(s);
                }
                if let Some(d) = r.redacted.get() {
                    redacted.get_or_insert_with(String::new).push_str(d);
                }
            }
        }
    }

    fn close(&mut self, index: u64, out: &mut VecDeque<StreamEvent>) {
        if let Some(block) = self.open.close(index) {
            self.close_block(block, out);
        }
    }

    fn close_block(&mut self, block: Open, out: &mut VecDeque<StreamEvent>) {
        match block {
            Open::Text { text, citations } if citations.is_empty() => self.blocks.text(text),
            // Kept as one `citationsContent` block, as a whole answer has it: its text is the
            // message's text too, and the block goes back as it came.
            Open::Text { text, citations } => {
                let mut cited = json!({ "citations": citations });
                if !text.is_empty() {
                    cited["content"] = json!([{ "text": text }]);
                }
                let block = json!({ "citationsContent": cited });
                self.blocks.citations_of(&block);
                self.blocks.raw(block);
            }
            Open::ServerResult { mut start, content } => {
                if let Some(fields) = start.as_object_mut() {
                    fields.insert("content".into(), Value::Array(content));
                }
                self.blocks.raw(json!({ "toolResult": start }));
            }
            Open::Server { mut start, input } => {
                // Its input came in fragments, each within the limit: counted whole.
                if let Err(e) = self.kept.keep(&self.name, &input) {
                    self.overflow.get_or_insert(e);
                    return;
                }
                if let (Some(parsed), Some(fields)) = (
                    serde_json::from_str::<Value>(&input).ok(),
                    start.as_object_mut(),
                ) {
                    fields.insert("input".into(), parsed);
                }
                self.blocks.server_tool(&start);
            }
            Open::Call {
                call: start,
                id,
                name,
                input,
            } => {
                out.push_back(StreamEvent::ToolCallReady { index: start });
                let call = call_of(&self.names, &id, &name, input);
                self.blocks.call(start, call);
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
        if kind == "contentBlockDelta" {
            // The many small events: read without building a `Value`.
            let mut event = DeltaEventIn::default();
            if read_event_into(&mut self.unreadable, &self.name, &frame.data, &mut event)?
                && let Some(delta) = &mut event.delta.0
            {
                for kept in [delta.citation.0, delta.tool_result.0]
                    .into_iter()
                    .flatten()
                {
                    self.kept.keep(&self.name, kept.get())?;
                }
                let index = event.index.0.unwrap_or(0);
                if !self.open.is_open(index) {
                    // A block opened by its first delta is charged as a start is.
                    self.kept.keep_call(&self.name)?;
                }
                self.delta(index, delta, out);
            }
            return self.overflow.take().map_or(Ok(()), Err);
        }
        if kind == "contentBlockStart" {
            // Every block start is charged as a call besides: a call's start keeps more than its
            // text says, and charging each start needs no look inside it first.
            self.kept.keep(&self.name, &frame.data)?;
            self.kept.keep_call(&self.name)?;
        }
        let Some(event) = self.unreadable.read::<Value>(&self.name, &frame.data)? else {
            return Ok(());
        };
        match kind {
            "contentBlockStart" => {
                let index = Self::index(&event);
                if let Some(tool_use) = event.get("start").and_then(|s| s.get("toolUse")) {
                    self.start_call(index, tool_use, out);
                } else if let Some(result) = event.get("start").and_then(|s| s.get("toolResult")) {
                    let result = Open::ServerResult {
                        start: result.clone(),
                        content: Vec::new(),
                    };
                    self.open(index, result, out);
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
        self.overflow.take().map_or(Ok(()), Err)
    }

    fn is_finished(&self) -> bool {
        self.done
    }

    fn end(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
        if !self.stopped {
            return Err(wire::cut_short(&self.name, "no messageStop"));
        }
        // Blocks the stream never closed still count.
        for block in self.open.drain() {
            self.close_block(block, out);
        }
        if let Some(e) = self.overflow.take() {
            return Err(e);
        }
        let blocks = std::mem::take(&mut self.blocks);
        let response = Response::new(blocks.message(self.usage))
            .with_finish_reason(self.stop_reason.take())
            .with_request_id(self.request_id.take());
        out.push_back(StreamEvent::Completed(Box::new(response)));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks opened by their first delta, never closed, are charged against the values a
    /// stream may keep, as blocks opened by a start are: the stream ends with the limit.
    #[test]
    fn blocks_opened_by_deltas_count_against_the_values_a_stream_keeps() {
        let mut a = BedrockAssembler::new("t", NameMap::default(), None);
        let mut out = VecDeque::new();
        let most = llm_tools_core::json_values::MAX_JSON_VALUES / wire::VALUES_PER_CALL + 1;
        let failed = (0..=most).find_map(|index| {
            let data = format!(r#"{{"contentBlockIndex":{index},"delta":{{"text":""}}}}"#);
            a.feed(&Frame::event("contentBlockDelta", &data), &mut out)
                .err()
        });
        let error = failed.expect("the stream ends with the limit");
        assert_eq!(
            error.code(),
            Some(crate::http::HttpLimit::JsonValues.code()),
            "{error}"
        );
    }

    /// The `contentBlockDelta` events read without a `Value` read as before: escapes, values of
    /// another type, keys given twice, a missing index (block 0), reasoning with its signature.
    #[test]
    fn odd_delta_events_read_as_a_value_reads_them() {
        let mut a = BedrockAssembler::new("t", NameMap::default(), None);
        let mut out = VecDeque::new();
        for (kind, data) in [
            (
                "contentBlockDelta",
                r#"{"contentBlockIndex":0,"delta":{"text":"a\"b"}}"#,
            ),
            (
                "contentBlockDelta",
                r#"{"contentBlockIndex":0,"delta":{"text":7}}"#,
            ),
            (
                "contentBlockDelta",
                r#"{"delta":{"text":"c","text":"d"},"p":[1,{"x":null}]}"#,
            ),
            (
                "contentBlockDelta",
                r#"{"contentBlockIndex":0,"delta":{"text":"lost"#,
            ),
            (
                "contentBlockDelta",
                r#"{"contentBlockIndex":1,"delta":{"reasoningContent":{"text":"why"}}}"#,
            ),
            (
                "contentBlockDelta",
                r#"{"contentBlockIndex":1,"delta":{"reasoningContent":{"signature":"s1"}}}"#,
            ),
            (
                "contentBlockStart",
                r#"{"contentBlockIndex":2,"start":{"toolUse":{"toolUseId":"t1","name":"f"}}}"#,
            ),
            (
                "contentBlockDelta",
                r#"{"contentBlockIndex":2,"delta":{"toolUse":{"input":"{\"a\":"}}}"#,
            ),
            (
                "contentBlockDelta",
                r#"{"contentBlockIndex":2,"delta":{"toolUse":{"input":""},"toolUse":{"input":"1}"}}}"#,
            ),
            ("contentBlockStop", r#"{"contentBlockIndex":0}"#),
            ("contentBlockStop", r#"{"contentBlockIndex":1}"#),
            ("contentBlockStop", r#"{"contentBlockIndex":2}"#),
            ("messageStop", r#"{"stopReason":"tool_use"}"#),
            (
                "metadata",
                r#"{"usage":{"inputTokens":3,"outputTokens":4}}"#,
            ),
        ] {
            a.feed(&Frame::event(kind, data), &mut out).unwrap();
        }
        assert!(a.is_finished());
        a.end(&mut out).unwrap();
        let got: Vec<StreamEvent> = out.into();
        assert_eq!(got[0], StreamEvent::TextDelta("a\"b".into()));
        assert_eq!(got[1], StreamEvent::TextDelta("d".into()));
        assert_eq!(got[2], StreamEvent::ReasoningDelta("why".into()));
        assert!(
            matches!(&got[3], StreamEvent::ToolCallStarted { index: 0, id, name, .. }
            if id == "t1" && name == "f")
        );
        assert_eq!(
            got[4],
            StreamEvent::ToolCallDelta {
                index: 0,
                fragment: r#"{"a":"#.into()
            }
        );
        assert_eq!(
            got[5],
            StreamEvent::ToolCallDelta {
                index: 0,
                fragment: "1}".into()
            }
        );
        assert_eq!(got[6], StreamEvent::ToolCallReady { index: 0 });
        assert!(matches!(got[7], StreamEvent::Usage(_)));
        let StreamEvent::Completed(response) = &got[8] else {
            panic!("{got:?}");
        };
        assert_eq!(response.message.text(), "a\"bd");
        assert_eq!(response.message.tool_calls[0].arguments, r#"{"a":1}"#);
        let data = response
            .message
            .provider_data
            .as_ref()
            .map(|d| d.data.to_string());
        assert!(
            data.as_deref()
                .is_some_and(|d| d.contains(r#""signature":"s1""#) && d.contains("why")),
            "{data:?}"
        );
    }

    /// The message of a stream of `(event, data)` frames that ends the answer.
    fn streamed(frames: &[(&str, &str)]) -> llm_tools_core::Message {
        let mut a = BedrockAssembler::new("t", NameMap::default(), None);
        let mut out = VecDeque::new();
        for &(kind, data) in frames {
            a.feed(&Frame::event(kind, data), &mut out).unwrap();
        }
        a.end(&mut out).unwrap();
        match out.pop_back() {
            Some(StreamEvent::Completed(response)) => response.message,
            other => panic!("{other:?}"),
        }
    }

    /// Claude's cited answer is one `citationsContent` block: streamed, its text and its
    /// citations arrive as deltas at one index, in either order, and read as the whole
    /// answer's block does (its text, its citations, the block kept to go back).
    #[test]
    fn cited_text_streamed_with_its_citations_reads_as_the_whole_answer_does() {
        let citation = r#"{"title":"Ruby Facts","source":"https://example.com/ruby","sourceContent":[{"text":"Matz made Ruby."}],"location":{"web":{"url":"https://example.com/ruby","domain":"example.com"}}}"#;
        let whole = format!(
            r#"{{"output":{{"message":{{"role":"assistant","content":[{{"citationsContent":{{"content":[{{"text":"Ruby was made by Matz."}}],"citations":[{citation}]}}}}]}}}},"stopReason":"end_turn","usage":{{"inputTokens":3,"outputTokens":4}}}}"#
        );
        let expected = parse("t", whole.as_bytes(), &NameMap::default(), None)
            .unwrap()
            .message;
        assert_eq!(expected.text(), "Ruby was made by Matz.");
        assert_eq!(expected.citations.len(), 1);
        let text =
            r#"{"contentBlockIndex":0,"delta":{"text":"Ruby was made by Matz."}}"#.to_owned();
        let cited = format!(r#"{{"contentBlockIndex":0,"delta":{{"citation":{citation}}}}}"#);
        for deltas in [[&text, &cited], [&cited, &text]] {
            let m = streamed(&[
                ("contentBlockDelta", deltas[0]),
                ("contentBlockDelta", deltas[1]),
                ("contentBlockStop", r#"{"contentBlockIndex":0}"#),
                ("messageStop", r#"{"stopReason":"end_turn"}"#),
                (
                    "metadata",
                    r#"{"usage":{"inputTokens":3,"outputTokens":4}}"#,
                ),
            ]);
            assert_eq!(m.text(), expected.text());
            assert_eq!(m.citations, expected.citations);
            assert_eq!(
                m.provider_data.as_ref().map(|d| &d.data),
                expected.provider_data.as_ref().map(|d| &d.data)
            );
        }
    }

    /// A block opened again at an index still open ends the block that was there, which
    /// keeps what it had.
    /// A stream that closes its calls out of order still gives the answer its calls at the
    /// places their start events gave.
    #[test]
    fn calls_closed_out_of_order_keep_their_started_places() {
        let mut a = BedrockAssembler::new("t", NameMap::default(), None);
        let mut out = VecDeque::new();
        let start = |index: u64, id: &str| {
            format!(
                r#"{{"contentBlockIndex":{index},"start":{{"toolUse":{{"toolUseId":"{id}","name":"f"}}}}}}"#
            )
        };
        let stop = |index: u64| format!(r#"{{"contentBlockIndex":{index}}}"#);
        let frames = [
            ("contentBlockStart", start(0, "a")),
            ("contentBlockStart", start(1, "b")),
            ("contentBlockStart", start(2, "c")),
            ("contentBlockStop", stop(2)),
            ("contentBlockStop", stop(0)),
            ("contentBlockStop", stop(1)),
            ("messageStop", r#"{"stopReason":"tool_use"}"#.to_owned()),
            (
                "metadata",
                r#"{"usage":{"inputTokens":3,"outputTokens":4}}"#.to_owned(),
            ),
        ];
        for (kind, data) in &frames {
            a.feed(&Frame::event(*kind, data.as_str()), &mut out)
                .unwrap();
        }
        a.end(&mut out).unwrap();
        let got: Vec<StreamEvent> = out.into();
        let ids = wire::test_events::calls_at_their_started_places(&got);
        assert_eq!(ids, ["a", "b", "c"]);
    }

    #[test]
    fn a_start_at_an_open_index_ends_the_block_there() {
        let m = streamed(&[
            (
                "contentBlockStart",
                r#"{"contentBlockIndex":0,"start":{"toolUse":{"toolUseId":"t1","name":"f"}}}"#,
            ),
            (
                "contentBlockDelta",
                r#"{"contentBlockIndex":0,"delta":{"toolUse":{"input":"{\"a\":1}"}}}"#,
            ),
            (
                "contentBlockStart",
                r#"{"contentBlockIndex":0,"start":{"toolUse":{"toolUseId":"t2","name":"g"}}}"#,
            ),
            ("contentBlockStop", r#"{"contentBlockIndex":0}"#),
            ("messageStop", r#"{"stopReason":"tool_use"}"#),
        ]);
        let calls: Vec<(&str, &str)> = m
            .tool_calls
            .iter()
            .map(|c| (c.id.as_str(), c.arguments.as_str()))
            .collect();
        assert_eq!(calls, [("t1", r#"{"a":1}"#), ("t2", "{}")]);
    }
}
