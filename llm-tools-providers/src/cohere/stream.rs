//! Reassembling a streamed answer from its frames.

use crate::framing::Frame;
use crate::protocol::{Assembler, NameMap};
use crate::wire;
use crate::wire::open_blocks::OpenBlocks;
use llm_tools_core::{ProviderError, StreamEvent};
use serde_json::{Map, Value};
use std::collections::VecDeque;

use super::response::*;
use crate::framing::lenient::{Str, U64, lenient_struct, parse_into, read_event_into};

lenient_struct! {
    /// What the many small events are read for (content and tool-plan deltas, argument
    /// fragments, a call's end), without building a `Value` of each; the events that keep
    /// parts whole are read again as a `Value` (`feed_whole`).
    struct EventIn<'a> {
        index: U64 = "index",
        id: Str<'a> = "id",
        delta: DeltaIn<'a> = "delta",
    }
}

lenient_struct! {
    /// An event's `type`, for an event without an `event:` line.
    struct KindIn<'a> {
        kind: Str<'a> = "type",
    }
}

lenient_struct! {
    struct DeltaIn<'a> {
        message: MessageIn<'a> = "message",
    }
}

lenient_struct! {
    struct MessageIn<'a> {
        content: ContentIn<'a> = "content",
        tool_plan: Str<'a> = "tool_plan",
        tool_calls: CallIn<'a> = "tool_calls",
    }
}

lenient_struct! {
    struct ContentIn<'a> {
        text: Str<'a> = "text",
    }
}

lenient_struct! {
    struct CallIn<'a> {
        function: FunctionIn<'a> = "function",
    }
}

lenient_struct! {
    struct FunctionIn<'a> {
        arguments: Str<'a> = "arguments",
    }
}

/// A call of a stream, open until its `tool-call-end`.
struct OpenCall {
    /// The call's index among the stream's calls, as its events give it.
    call: usize,
    /// The call's start, its `id` filled in.
    start: Value,
    /// The argument fragments so far, joined.
    arguments: String,
}

/// Reassembles a v2 chat stream: text, the tool plan (as reasoning), calls by `index` from
/// their argument fragments, citations, the answer complete at `message-end`.
pub struct CohereAssembler {
    name: String,
    names: NameMap,
    request_id: Option<String>,
    answer: Answer,
    /// The calls closed, put in the order they started at the end.
    calls: wire::CallsInStartOrder,
    /// The calls open, by the `index` their start gave (else their place among the calls).
    open: OpenBlocks<OpenCall>,
    /// The values the calls and citations keep.
    kept: wire::KeptValues,
    /// The events (and parts) skipped unread.
    unreadable: wire::UnreadableEvents,
    /// The calls started without an `index` so far (their keys in `open`).
    unindexed_starts: u64,
    done: bool,
}

/// Where the keys of calls started without an `index` begin.
const UNINDEXED: u64 = 1 << 63;

impl CohereAssembler {
    pub(crate) fn new(name: &str, names: NameMap, request_id: Option<String>) -> Self {
        Self {
            name: name.to_owned(),
            names,
            request_id,
            answer: Answer::default(),
            calls: wire::CallsInStartOrder::default(),
            open: OpenBlocks::default(),
            kept: wire::KeptValues::default(),
            unreadable: wire::UnreadableEvents::default(),
            unindexed_starts: 0,
            done: false,
        }
    }

    /// Closes the call open at `index`, else (without one) the call opened first of those
    /// open.
    fn close(&mut self, index: Option<u64>, out: &mut VecDeque<StreamEvent>) {
        let open = match index {
            Some(i) => self.open.close(i),
            None => self.open.close_first(),
        };
        if let Some(open) = open {
            self.finish(open, out);
        }
    }

    /// Ends a call that was open: it is ready, and one of the answer's calls.
    fn finish(&mut self, open: OpenCall, out: &mut VecDeque<StreamEvent>) {
        out.push_back(StreamEvent::ToolCallReady { index: open.call });
        let call = call_of(&self.names, &open.start, open.arguments);
        self.calls.push(open.call, call);
    }

    /// The events that keep parts whole (a call's start, a citation, the end), read as a
    /// `Value`.
    fn feed_whole(
        &mut self,
        kind: &str,
        event: &Value,
        index: Option<u64>,
        out: &mut VecDeque<StreamEvent>,
    ) {
        let delta = event.get("delta").and_then(|d| d.get("message"));
        match kind {
            "tool-call-start" => {
                let start = delta
                    .and_then(|m| m.get("tool_calls"))
                    .cloned()
                    .unwrap_or(Value::Null);
                // A start without an index opens under a key of its own, past the indexes a
                // server usually gives. A new start at a key still open ends the call that was
                // there, whichever way it got the key: an index a server gives may fall among
                // those keys, and the call open there is kept, never dropped.
                let key = index.unwrap_or_else(|| {
                    self.unindexed_starts = self.unindexed_starts.saturating_add(1);
                    UNINDEXED.saturating_add(self.unindexed_starts)
                });
                self.close(Some(key), out);
                let call = self.calls.len() + self.open.len();
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
                self.open.open(
                    key,
                    OpenCall {
                        call,
                        start,
                        arguments,
                    },
                );
            }
            "citation-start" => {
                if let Some(c) = delta.and_then(|m| m.get("citations")) {
                    self.answer.citations.push(c.clone());
                }
            }
            "message-end" => {
                for open in self.open.drain() {
                    self.finish(open, out);
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
    }
}

impl Assembler for CohereAssembler {
    fn feed(
        &mut self,
        frame: &Frame<'_>,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), ProviderError> {
        // An event with no data (a keep-alive a proxy sends as `data:`) or the end marker some
        // gateways add says nothing: skipped, and never counted as unreadable.
        let data = frame.data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        let mut event = EventIn::default();
        if !read_event_into(&mut self.unreadable, &self.name, &frame.data, &mut event)? {
            return Ok(());
        }
        // The event's name, from its `event:` line, else from its `type` (read apart: Cohere
        // names its events, and a name read twice is work for nothing).
        let mut named = KindIn::default();
        let kind = match frame.event.as_deref() {
            Some(kind) => kind,
            None => {
                // (The frame was read as JSON just above: this reading succeeds too.)
                let _ = parse_into(&frame.data, &mut named);
                named.kind.get().unwrap_or_default()
            }
        };
        let index = event.index.0;
        let message = &mut event.delta.message;
        match kind {
            "message-start" => {
                self.answer.id = event.id.get().map(str::to_owned);
            }
            "content-start" | "content-delta" => {
                if let Some(t) = message.content.text.take_filled() {
                    self.answer.text.push_str(&t);
                    out.push_back(StreamEvent::TextDelta(t.into_owned()));
                }
            }
            "tool-plan-delta" => {
                if let Some(t) = message.tool_plan.take_filled() {
                    self.answer.plan.push_str(&t);
                    out.push_back(StreamEvent::ReasoningDelta(t.into_owned()));
                }
            }
            "tool-call-delta" => {
                let fragment = message.tool_calls.function.arguments.take_filled();
                let open = match index {
                    Some(i) => self.open.get_mut(i),
                    None => self.open.last_mut(),
                };
                if let (Some(open), Some(fragment)) = (open, fragment) {
                    open.arguments.push_str(&fragment);
                    out.push_back(StreamEvent::ToolCallDelta {
                        index: open.call,
                        fragment: fragment.into_owned(),
                    });
                }
            }
            "tool-call-end" => self.close(index, out),
            "tool-call-start" | "citation-start" | "message-end" => {
                // Once per call or answer: these keep parts of the event whole.
                let kind = kind.to_owned();
                self.kept.keep(&self.name, &frame.data)?;
                if kind == "tool-call-start" {
                    self.kept.keep_call(&self.name)?;
                }
                if let Some(event) = self.unreadable.read::<Value>(&self.name, &frame.data)? {
                    self.feed_whole(&kind, &event, index, out);
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
        if !self.done {
            return Err(wire::cut_short(&self.name, "no message-end"));
        }
        let mut answer = std::mem::take(&mut self.answer);
        answer.calls = std::mem::take(&mut self.calls).into_calls();
        out.push_back(StreamEvent::Completed(Box::new(
            answer.response(self.request_id.take()),
        )));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::test_events::{completed_calls, ready_indexes};
    use llm_tools_core::Usage;

    fn feed_all(frames: &[Frame<'_>]) -> Vec<StreamEvent> {
        let mut a = CohereAssembler::new("t", NameMap::default(), None);
        let mut out = VecDeque::new();
        for f in frames {
            a.feed(f, &mut out).unwrap();
        }
        a.end(&mut out).unwrap();
        out.into()
    }

    /// Keep-alives without data (more of them than the unreadable events a stream may have)
    /// and an end marker are skipped: the answer comes whole.
    #[test]
    fn events_without_data_are_skipped_however_many() {
        let keep_alives = vec![Frame::data(""); crate::http::MAX_UNREADABLE_EVENTS + 500];
        let mut frames = vec![Frame::event(
            "content-delta",
            r#"{"index":0,"delta":{"message":{"content":{"text":"Hello"}}}}"#,
        )];
        frames.extend(keep_alives);
        frames.push(Frame::data("[DONE]"));
        frames.push(Frame::event(
            "message-end",
            r#"{"delta":{"finish_reason":"COMPLETE"}}"#,
        ));
        let got = feed_all(&frames);
        let text: String = got
            .iter()
            .filter_map(|e| match e {
                StreamEvent::TextDelta(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text, "Hello");
        assert!(
            got.iter().any(|e| matches!(e, StreamEvent::Completed(_))),
            "{got:?}"
        );
    }

    /// A stream that ends its calls out of order still gives the answer its calls at the
    /// places their start events gave.
    #[test]
    fn calls_ended_out_of_order_keep_their_started_places() {
        let start = |index: u64, id: &str| {
            format!(
                r#"{{"index":{index},"delta":{{"message":{{"tool_calls":{{"id":"{id}","function":{{"name":"f","arguments":"{{}}"}}}}}}}}}}"#
            )
        };
        let (a, b, c) = (start(0, "a"), start(1, "b"), start(2, "c"));
        let got = feed_all(&[
            Frame::event("tool-call-start", &a),
            Frame::event("tool-call-start", &b),
            Frame::event("tool-call-start", &c),
            Frame::event("tool-call-end", r#"{"index":2}"#),
            Frame::event("tool-call-end", r#"{"index":0}"#),
            Frame::event("tool-call-end", r#"{"index":1}"#),
            Frame::event("message-end", r#"{"delta":{"finish_reason":"TOOL_CALL"}}"#),
        ]);
        let ids = wire::test_events::calls_at_their_started_places(&got);
        assert_eq!(ids, ["a", "b", "c"]);
    }

    /// A start without an index never closes a call started at an index: each keeps its own
    /// arguments.
    #[test]
    fn a_start_without_an_index_leaves_the_call_at_index_one_open() {
        let indexed = r#"{"index":1,"delta":{"message":{"tool_calls":{"id":"a","function":{"name":"f","arguments":"{\"x\":"}}}}}"#;
        let unindexed = r#"{"delta":{"message":{"tool_calls":{"id":"b","function":{"name":"g","arguments":"{}"}}}}}"#;
        let got = feed_all(&[
            Frame::event("tool-call-start", indexed),
            Frame::event("tool-call-start", unindexed),
            Frame::event(
                "tool-call-delta",
                r#"{"index":1,"delta":{"message":{"tool_calls":{"function":{"arguments":"1}"}}}}}"#,
            ),
            Frame::event("tool-call-end", r#"{"index":1}"#),
            Frame::event("message-end", r#"{"delta":{"finish_reason":"TOOL_CALL"}}"#),
        ]);
        assert_eq!(
            completed_calls(&got),
            [
                ("a".to_owned(), r#"{"x":1}"#.to_owned()),
                ("b".to_owned(), "{}".to_owned())
            ]
        );
    }

    /// A server's index that falls on the key a start without an index takes loses no call:
    /// the call open there ends (ready, kept), and each call keeps the place its start gave.
    #[test]
    fn a_start_without_an_index_on_a_key_a_server_index_took_keeps_both_calls() {
        let indexed = format!(
            r#"{{"index":{},"delta":{{"message":{{"tool_calls":{{"id":"a","function":{{"name":"f","arguments":"{{}}"}}}}}}}}}}"#,
            UNINDEXED + 1
        );
        let unindexed = r#"{"delta":{"message":{"tool_calls":{"id":"b","function":{"name":"g","arguments":"{}"}}}}}"#;
        let got = feed_all(&[
            Frame::event("tool-call-start", &indexed),
            Frame::event("tool-call-start", unindexed),
            Frame::event("message-end", r#"{"delta":{"finish_reason":"TOOL_CALL"}}"#),
        ]);
        assert_eq!(
            completed_calls(&got),
            [
                ("a".to_owned(), "{}".to_owned()),
                ("b".to_owned(), "{}".to_owned())
            ]
        );
        let ids = wire::test_events::calls_at_their_started_places(&got);
        assert_eq!(ids, ["a", "b"]);
    }

    /// The delta events read without a `Value` read as before: escapes, values of another
    /// type, keys given twice, a name only in `type`, unreadable events skipped.
    #[test]
    fn odd_delta_events_read_as_a_value_reads_them() {
        let got = feed_all(&[
            Frame::event(
                "content-delta",
                r#"{"type":"content-delta","index":0,"delta":{"message":{"content":{"text":"a\"b"}}}}"#,
            ),
            Frame::event(
                "content-delta",
                r#"{"delta":{"message":{"content":{"text":7}}}}"#,
            ),
            Frame::event(
                "content-delta",
                r#"{"delta":{"message":{"content":"text"}}}"#,
            ),
            Frame::data(r#"{"type":"content-delta","delta":{"message":{"content":{"text":"c"}}}}"#),
            Frame::event(
                "content-delta",
                r#"{"delta":{"message":{"content":{"text":"lost"#,
            ),
            Frame::event(
                "tool-plan-delta",
                r#"{"delta":{"message":{"tool_plan":"plan"}}}"#,
            ),
            Frame::event(
                "tool-call-start",
                r#"{"index":2,"delta":{"message":{"tool_calls":{"id":"c1","function":{"name":"f","arguments":""}}}}}"#,
            ),
            Frame::event(
                "tool-call-delta",
                r#"{"index":2,"delta":{"message":{"tool_calls":{"function":{"arguments":"x","arguments":"{\"a\":"}}}}}"#,
            ),
            Frame::event(
                "tool-call-delta",
                r#"{"index":-1,"delta":{"message":{"tool_calls":{"function":{"arguments":"1}"}}}}}"#,
            ),
            Frame::event("tool-call-end", r#"{"index":2}"#),
            Frame::event(
                "message-end",
                r#"{"delta":{"finish_reason":"TOOL_CALL","usage":{"tokens":{"input_tokens":3,"output_tokens":4}}}}"#,
            ),
        ]);
        assert_eq!(got[0], StreamEvent::TextDelta("a\"b".into()));
        assert_eq!(got[1], StreamEvent::TextDelta("c".into()));
        assert_eq!(got[2], StreamEvent::ReasoningDelta("plan".into()));
        assert!(
            matches!(&got[3], StreamEvent::ToolCallStarted { index: 0, id, name, .. }
            if id == "c1" && name == "f")
        );
        assert_eq!(
            got[4],
            StreamEvent::ToolCallDelta {
                index: 0,
                fragment: r#"{"a":"#.into()
            }
        );
        // (An index that is no count, as `Value::as_u64` reads it, is none: the last call.)
        assert_eq!(
            got[5],
            StreamEvent::ToolCallDelta {
                index: 0,
                fragment: "1}".into()
            }
        );
        assert_eq!(got[6], StreamEvent::ToolCallReady { index: 0 });
        assert_eq!(got[7], StreamEvent::Usage(Usage::new(3, 4)));
        let StreamEvent::Completed(response) = &got[8] else {
            panic!("{got:?}");
        };
        assert_eq!(response.message.text(), "a\"bc");
        assert_eq!(response.message.tool_calls[0].arguments, r#"{"a":1}"#);
        assert_eq!(response.finish_reason.as_deref(), Some("TOOL_CALL"));
        assert_eq!(got.len(), 9);
    }

    fn start(index: Option<u64>, id: &str) -> Frame<'static> {
        let index = index
            .map(|i| format!(r#""index":{i},"#))
            .unwrap_or_default();
        Frame::event(
            "tool-call-start",
            format!(
                r#"{{{index}"delta":{{"message":{{"tool_calls":{{"id":"{id}","function":{{"name":"f","arguments":""}}}}}}}}}}"#
            ),
        )
    }

    fn argument(index: Option<u64>, fragment: &str) -> Frame<'static> {
        let index = index
            .map(|i| format!(r#""index":{i},"#))
            .unwrap_or_default();
        Frame::event(
            "tool-call-delta",
            format!(
                r#"{{{index}"delta":{{"message":{{"tool_calls":{{"function":{{"arguments":"{fragment}"}}}}}}}}}}"#
            ),
        )
    }

    /// Of many calls left open, an end without an index closes the oldest, a delta without one
    /// goes to the newest, and `message-end` closes the rest in the order they opened; the
    /// answer has them all in the order they opened.
    #[test]
    fn many_open_calls_close_oldest_first_and_the_rest_in_order_at_the_end() {
        let count = 3000;
        let mut frames: Vec<_> = (0..count)
            .map(|i| start(Some(i), &format!("c{i}")))
            .collect();
        frames.push(argument(None, "{}"));
        frames.push(argument(Some(5), "{\\\"a\\\":5}"));
        frames.push(Frame::event("tool-call-end", "{}"));
        frames.push(Frame::event("tool-call-end", "{}"));
        frames.push(Frame::event("tool-call-end", r#"{"index":10}"#));
        frames.push(Frame::event("tool-call-end", r#"{"index":10}"#));
        frames.push(Frame::event("message-end", r#"{"delta":{}}"#));
        let got = feed_all(&frames);

        let count = count as usize;
        let mut order = vec![0, 1, 10];
        order.extend((2..count).filter(|&i| i != 10));
        assert_eq!(ready_indexes(&got), order);
        let calls = completed_calls(&got);
        let ids: Vec<_> = calls.iter().map(|(id, _)| id.clone()).collect();
        // The answer has them in the order they started, where their events put them.
        let want: Vec<_> = (0..count).map(|i| format!("c{i}")).collect();
        assert_eq!(ids, want);
        let arguments = |id: &str| {
            calls
                .iter()
                .find(|(i, _)| i == id)
                .map(|(_, a)| a.clone())
                .unwrap()
        };
        assert_eq!(arguments("c5"), r#"{"a":5}"#);
        assert_eq!(arguments(&format!("c{}", count - 1)), "{}");
    }

    /// A new start at an index still open ends the call that was there, before the new call
    /// starts; later deltas at that index go to the new call.
    #[test]
    fn a_new_start_at_an_open_index_ends_the_call_there() {
        let got = feed_all(&[
            start(Some(0), "a"),
            argument(Some(0), "{}"),
            start(Some(1), "b"),
            start(Some(0), "c"),
            argument(Some(0), "[]"),
            Frame::event("message-end", r#"{"delta":{}}"#),
        ]);
        let kinds: Vec<_> = got
            .iter()
            .map(|e| match e {
                StreamEvent::ToolCallStarted { index, id, .. } => format!("start {index} {id}"),
                StreamEvent::ToolCallDelta { index, fragment } => {
                    format!("delta {index} {fragment}")
                }
                StreamEvent::ToolCallReady { index } => format!("ready {index}"),
                StreamEvent::Completed(_) => "completed".to_owned(),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "start 0 a",
                "delta 0 {}",
                "start 1 b",
                "ready 0",
                "start 2 c",
                "delta 2 []",
                "ready 1",
                "ready 2",
                "completed",
            ]
        );
        assert_eq!(
            completed_calls(&got),
            [
                ("a".to_owned(), "{}".to_owned()),
                ("b".to_owned(), "{}".to_owned()),
                ("c".to_owned(), "[]".to_owned()),
            ]
        );
    }
}
