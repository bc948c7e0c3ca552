//! Reassembling a streamed answer of the Responses API from its server-sent events.
//!
//! Each event is read leniently ([`lenient`](crate::framing::lenient)), as the other
//! protocols' stream events are: a key missing or of another type than expected is nothing
//! there, and the last of a repeated key counts. The many small delta events are read by their
//! keys only (`type`, `item_id`, `output_index`, `delta`, `arguments`); the item or response an
//! event carries whole is kept unread until its event is handled, then read strictly
//! (one that is not an item or a response makes its event unreadable, skipped and counted). So
//! an event serde would have refused for a value of another type (a `delta` that is not a
//! string, an `output_index` that is not a count, an `item` on a delta event) is read with
//! that value absent, never as something else: a delta that is not a string adds nothing, an
//! item without a readable `output_index` goes after those with one (as one without an index
//! does), an `error` event whose `message` is not a string is the stream's error with the
//! generic message, and an event without a `type` is passed over without being counted as
//! unreadable.

use crate::framing::Frame;
use crate::framing::lenient::{Raw, Str, U64, lenient_struct, read_event_into};
use crate::protocol::{Assembler, NameMap};
use crate::wire::{self, stream_error};
use llm_tools_core::{ProviderError, StreamEvent};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use super::response::*;

lenient_struct! {
    /// One stream event; the item or response it carries whole stays unread until needed.
    struct EventIn<'a> {
        kind: Str<'a> = "type",
        item_id: Str<'a> = "item_id",
        output_index: U64 = "output_index",
        delta: Str<'a> = "delta",
        arguments: Str<'a> = "arguments",
        item: Raw<'a> = "item",
        response: Raw<'a> = "response",
        message: Str<'a> = "message",
        code: Str<'a> = "code",
    }
}

/// A value an event carries whole, read as `T` when it is there (`null` is absent, as it was
/// when the event was read whole).
fn read_whole<T: serde::de::DeserializeOwned>(raw: &Raw<'_>) -> serde_json::Result<Option<T>> {
    match raw.0 {
        Some(r) if r.get() != "null" => serde_json::from_str(r.get()).map(Some),
        _ => Ok(None),
    }
}

/// A function call of the stream, by its place among the calls.
struct CallState {
    /// The call's id (`call_id`), as its `ToolCallStarted` event gave it.
    id: String,
    /// The arguments so far.
    arguments: String,
    ready: bool,
}

/// Reassembles a Responses stream: typed events, tool-call arguments by item id, the whole
/// answer from `response.completed`.
pub struct ResponsesAssembler {
    name: String,
    names: NameMap,
    request_id: Option<String>,
    calls: Vec<CallState>,
    /// The place among `calls` of the call each item id names (the first call given that id).
    /// The ids are the server's, so they are hashed with the standard library's keyed hasher.
    call_of_item: HashMap<String, usize>,
    /// The items streamed whole (`output_item.done`), by their `output_index` and then the
    /// order they came: two items a server gives one index are both kept, and an item without
    /// an index goes after those with one.
    items: BTreeMap<(u64, usize), ItemIn>,
    /// The values the streamed items keep.
    kept: wire::KeptValues,
    /// The events (and parts) skipped unread.
    unreadable: wire::UnreadableEvents,
    done: bool,
}

impl ResponsesAssembler {
    pub(crate) fn new(name: &str, names: NameMap, request_id: Option<String>) -> Self {
        Self {
            name: name.to_owned(),
            names,
            request_id,
            calls: Vec::new(),
            call_of_item: HashMap::new(),
            items: BTreeMap::new(),
            kept: wire::KeptValues::default(),
            unreadable: wire::UnreadableEvents::default(),
            done: false,
        }
    }

    fn call_index(&self, item_id: Option<&str>) -> Option<usize> {
        self.call_of_item.get(item_id?).copied()
    }

    /// Refuses an answer whose calls are not where the stream's `ToolCallStarted` events put
    /// them (a server that added its call items in another order than their `output_index`):
    /// an application that follows the events by index would take one call for another.
    fn check_call_places(&self, calls: &[llm_tools_core::ToolCall]) -> Result<(), ProviderError> {
        for (index, started) in self.calls.iter().enumerate() {
            if calls.get(index).map(|c| c.id.as_str()) != Some(started.id.as_str()) {
                return Err(wire::decode_error(
                    &self.name,
                    format!(
                        "the stream started call `{}` at place {index}, but the answer has {}",
                        started.id,
                        calls.get(index).map_or_else(
                            || "fewer calls".to_owned(),
                            |c| format!("call `{}` there", c.id)
                        )
                    ),
                ));
            }
        }
        Ok(())
    }

    fn ready(&mut self, index: usize, out: &mut VecDeque<StreamEvent>) {
        if let Some(c) = self.calls.get_mut(index)
            && !c.ready
        {
            c.ready = true;
            out.push_back(StreamEvent::ToolCallReady { index });
        }
    }
}

impl Assembler for ResponsesAssembler {
    fn feed(
        &mut self,
        event: &Frame<'_>,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let data = event.data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        let mut e = EventIn::default();
        if !read_event_into(&mut self.unreadable, &self.name, data, &mut e)? {
            return Ok(());
        }
        match e.kind.get().unwrap_or_default() {
            "response.output_text.delta" => {
                if let Some(d) = e.delta.take_filled() {
                    out.push_back(StreamEvent::TextDelta(d.into_owned()));
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                if let Some(d) = e.delta.take_filled() {
                    out.push_back(StreamEvent::ReasoningDelta(d.into_owned()));
                }
            }
            "response.output_item.added" => {
                let item = match read_whole::<ItemIn>(&e.item) {
                    Ok(Some(item)) => item,
                    Ok(None) => return Ok(()),
                    Err(error) => return self.unreadable.skip(&self.name, &error),
                };
                if item.kind == "function_call" {
                    self.kept.keep_call(&self.name)?;
                    let wire_name = item.name.unwrap_or_default();
                    let (name, namespace) = match item.namespace {
                        Some(ns) => (wire_name, Some(ns)),
                        None => self.names.resolve(wire_name),
                    };
                    self.call_of_item
                        .entry(item.id.unwrap_or_default())
                        .or_insert(self.calls.len());
                    // A call the server gave no id gets one here, and keeps it in the answer.
                    let id = item
                        .call_id
                        .filter(|i| !i.is_empty())
                        .unwrap_or_else(wire::fresh_call_id);
                    self.calls.push(CallState {
                        id: id.clone(),
                        arguments: String::new(),
                        ready: false,
                    });
                    out.push_back(StreamEvent::ToolCallStarted {
                        index: self.calls.len() - 1,
                        id,
                        name,
                        namespace,
                    });
                }
            }
            "response.function_call_arguments.delta" => {
                if let (Some(i), Some(d)) =
                    (self.call_index(e.item_id.get()), e.delta.take_filled())
                {
                    self.calls[i].arguments.push_str(&d);
                    out.push_back(StreamEvent::ToolCallDelta {
                        index: i,
                        fragment: d.into_owned(),
                    });
                }
            }
            "response.function_call_arguments.done" => {
                if let (Some(i), Some(a)) = (self.call_index(e.item_id.get()), e.arguments.0) {
                    self.calls[i].arguments = a.into_owned();
                }
            }
            "response.output_item.done" => {
                let item = match read_whole::<ItemIn>(&e.item) {
                    Ok(Some(item)) => item,
                    Ok(None) => return Ok(()),
                    Err(error) => return self.unreadable.skip(&self.name, &error),
                };
                self.kept.keep(&self.name, data)?;
                if let Some(i) = self.call_index(item.id.as_deref()) {
                    self.ready(i, out);
                }
                let index = e.output_index.0.unwrap_or(u64::MAX);
                self.items.insert((index, self.items.len()), item);
            }
            "response.completed" | "response.incomplete" | "response.failed" => {
                let mut response = match read_whole::<ResponseIn>(&e.response) {
                    Ok(response) => response.unwrap_or_default(),
                    Err(error) => return self.unreadable.skip(&self.name, &error),
                };
                let streamed = std::mem::take(&mut self.items);
                if !streamed.is_empty() {
                    let completed = response.output.take().unwrap_or_default();
                    response.output = Some(merge_items(streamed, completed));
                }
                // The calls the stream started without an id keep the one they were given.
                for item in response.output.iter_mut().flatten().filter(|item| {
                    item.kind == "function_call"
                        && item.call_id.as_deref().is_none_or(str::is_empty)
                }) {
                    if let Some(i) = self.call_index(item.id.as_deref()) {
                        item.call_id = Some(self.calls[i].id.clone());
                    }
                }
                let parsed = from_response_object(
                    &self.name,
                    response,
                    &self.names,
                    self.request_id.take(),
                )?;
                self.check_call_places(&parsed.message.tool_calls)?;
                for i in 0..self.calls.len() {
                    self.ready(i, out);
                }
                if let Some(u) = parsed.message.usage {
                    out.push_back(StreamEvent::Usage(u));
                }
                out.push_back(StreamEvent::Completed(Box::new(parsed)));
                self.done = true;
            }
            "error" => {
                let mut err = stream_error(
                    &self.name,
                    e.message
                        .0
                        .map(Cow::into_owned)
                        .unwrap_or_else(|| wire::REPORTED.into()),
                );
                if let Some(c) = e.code.0 {
                    err = err.with_code(c.into_owned());
                }
                let retryable = crate::openai::errors::is_transient(err.error_type(), err.code());
                err = err.with_retryable(retryable);
                return Err(crate::http::classified(
                    err,
                    crate::openai::errors::is_context_length,
                ));
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
        Err(wire::cut_short(&self.name, "no response.completed event"))
    }
}

/// The answer's items: those streamed whole (`output_item.done`) stand as they came, and the
/// final event's copy fills in the items the stream did not carry whole, at their place. A final
/// item was streamed when a streamed item shares its `id` or its `call_id`, or when an item
/// streamed at its index names no final item (a server that gave it another id, or none).
/// Both lists are bounded by the stream's limits, and the lookups are hashed, so the merge is
/// linear in the items.
fn merge_items(
    mut streamed: BTreeMap<(u64, usize), ItemIn>,
    completed: Vec<ItemIn>,
) -> Vec<ItemIn> {
    if completed.is_empty() {
        return streamed.into_values().collect();
    }
    fn names(item: &ItemIn) -> impl Iterator<Item = &str> {
        [item.id.as_deref(), item.call_id.as_deref()]
            .into_iter()
            .flatten()
    }
    let final_names: HashSet<String> = completed
        .iter()
        .flat_map(names)
        .map(str::to_owned)
        .collect();
    let mut streamed_names: HashSet<String> = HashSet::new();
    let mut standing_in: HashSet<u64> = HashSet::new();
    for ((index, _), item) in &streamed {
        streamed_names.extend(names(item).map(str::to_owned));
        if !names(item).any(|n| final_names.contains(n)) {
            standing_in.insert(*index);
        }
    }
    let arrived = streamed.len();
    for (place, item) in completed.into_iter().enumerate() {
        let index = u64::try_from(place).unwrap_or(u64::MAX);
        let was_streamed =
            names(&item).any(|n| streamed_names.contains(n)) || standing_in.contains(&index);
        if !was_streamed {
            streamed.insert((index, arrived + place), item);
        }
    }
    streamed.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server that starts a call without a `call_id`: the call gets an id when it starts,
    /// and the answer's call has the same one, streamed whole or only in the final event.
    #[test]
    fn a_call_started_without_an_id_keeps_the_one_it_was_given() {
        for done in [true, false] {
            let mut a = ResponsesAssembler::new("t", NameMap::default(), None);
            let mut out = VecDeque::new();
            let mut frames = vec![
                r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","id":"fc_1","name":"f"}}"#.to_owned(),
                argument("fc_1", "{}"),
            ];
            if done {
                frames.push(r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","id":"fc_1","name":"f","arguments":"{}"}}"#.to_owned());
            }
            frames.push(r#"{"type":"response.completed","response":{"id":"r","status":"completed","output":[{"type":"function_call","id":"fc_1","name":"f","arguments":"{}"}]}}"#.to_owned());
            for f in &frames {
                a.feed(&Frame::data(f.as_str()), &mut out).unwrap();
            }
            a.end(&mut out).unwrap();
            let events: Vec<StreamEvent> = out.into();
            let Some(StreamEvent::ToolCallStarted { id, .. }) = events.first() else {
                panic!("{events:?}");
            };
            assert!(!id.is_empty());
            let calls = wire::test_events::completed_calls(&events);
            assert_eq!(calls, [(id.clone(), "{}".to_owned())], "{done}");
        }
    }

    fn added(item_id: &str, call_id: &str) -> String {
        format!(
            r#"{{"type":"response.output_item.added","item":{{"type":"function_call","id":"{item_id}","call_id":"{call_id}","name":"f"}}}}"#
        )
    }

    fn argument(item_id: &str, delta: &str) -> String {
        format!(
            r#"{{"type":"response.function_call_arguments.delta","item_id":"{item_id}","delta":"{delta}"}}"#
        )
    }

    /// The ids of the completed answer's calls and its text, after feeding `frames` (JSON of one
    /// line each; newlines in them are dropped).
    fn completed_calls_and_text(frames: &[&str]) -> (Vec<String>, String) {
        let mut a = ResponsesAssembler::new("t", NameMap::default(), None);
        let mut out = VecDeque::new();
        for data in frames {
            a.feed(&Frame::data(data.replace('\n', "")), &mut out)
                .unwrap();
        }
        let Some(StreamEvent::Completed(response)) = out.back() else {
            panic!("{out:?}");
        };
        let ids = response
            .message
            .tool_calls
            .iter()
            .map(|c| c.id.clone())
            .collect();
        (ids, response.message.text())
    }

    /// Calls added in one order and placed in another by their `output_index`: the answer is
    /// refused, since the started events' indexes would name the wrong calls; added in their
    /// places, the same calls pass.
    #[test]
    fn calls_added_out_of_their_places_are_refused() {
        let done = |index: u32, item_id: &str, call_id: &str| {
            format!(
                r#"{{"type":"response.output_item.done","output_index":{index},"item":{{"id":"{item_id}","type":"function_call","call_id":"{call_id}","name":"f","arguments":"{{}}"}}}}"#
            )
        };
        let completed = r#"{"type":"response.completed","response":{"id":"r","status":"completed","output":[]}}"#;
        let feed = |frames: &[String]| {
            let mut a = ResponsesAssembler::new("t", NameMap::default(), None);
            let mut out = VecDeque::new();
            for data in frames {
                a.feed(&Frame::data(data.as_str()), &mut out)?;
            }
            Ok::<_, ProviderError>(out)
        };
        let swapped = [
            added("fa", "a"),
            added("fb", "b"),
            done(1, "fa", "a"),
            done(0, "fb", "b"),
            completed.to_owned(),
        ];
        let error = feed(&swapped)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("started call `a` at place 0"), "{error}");
        let in_place = [
            added("fa", "a"),
            added("fb", "b"),
            done(0, "fa", "a"),
            done(1, "fb", "b"),
            completed.to_owned(),
        ];
        let events: Vec<StreamEvent> = feed(&in_place).map(Vec::from).unwrap_or_default();
        let ids = wire::test_events::calls_at_their_started_places(&events);
        assert_eq!(ids, ["a", "b"]);
    }

    /// Two items given one `output_index`, and one given none: each is kept, in index order,
    /// then in the order they came.
    #[test]
    fn items_sharing_an_output_index_or_without_one_are_all_kept() {
        let (ids, text) = completed_calls_and_text(&[
            r#"{"type":"response.output_item.done","output_index":0,"item":{"id":"fc_1","type":"function_call","call_id":"call_1","name":"f","arguments":"{}"}}"#,
            r#"{"type":"response.output_item.done","output_index":0,"item":{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"output_text","text":"Hi"}]}}"#,
            r#"{"type":"response.output_item.done","item":{"id":"fc_2","type":"function_call","call_id":"call_2","name":"g","arguments":"{}"}}"#,
            r#"{"type":"response.completed","response":{"id":"r","status":"completed","output":[]}}"#,
        ]);
        assert_eq!(ids, ["call_1", "call_2"]);
        assert_eq!(text, "Hi");
    }

    /// An answer that streams some items whole and carries the others only in
    /// `response.completed` keeps them all, each once, in the final event's order.
    #[test]
    fn items_only_in_the_final_event_join_those_streamed() {
        let (ids, text) = completed_calls_and_text(&[
            r#"{"type":"response.output_item.done","output_index":1,"item":{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"output_text","text":"Hi"}]}}"#,
            r#"{"type":"response.completed","response":{"id":"r","status":"completed","output":[
                {"id":"fc_1","type":"function_call","call_id":"call_1","name":"f","arguments":"{}"},
                {"id":"msg_1","type":"message","role":"assistant","content":[{"type":"output_text","text":"Hi"}]},
                {"type":"function_call","call_id":"call_2","name":"g","arguments":"{}"}]}}"#,
        ]);
        assert_eq!(ids, ["call_1", "call_2"]);
        assert_eq!(text, "Hi");
    }

    /// A server that streams an item under another id than the final event's, or without
    /// one, or a call under its `call_id` only, gets each item once.
    #[test]
    fn an_item_streamed_under_another_id_is_not_added_again() {
        let (ids, text) = completed_calls_and_text(&[
            r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","call_id":"call_1","name":"f","arguments":"{}"}}"#,
            r#"{"type":"response.output_item.done","output_index":1,"item":{"id":"other","type":"message","role":"assistant","content":[{"type":"output_text","text":"Hi"}]}}"#,
            r#"{"type":"response.completed","response":{"id":"r","status":"completed","output":[
                {"id":"fc_1","type":"function_call","call_id":"call_1","name":"f","arguments":"{}"},
                {"id":"msg_1","type":"message","role":"assistant","content":[{"type":"output_text","text":"Hi"}]}]}}"#,
        ]);
        assert_eq!(ids, ["call_1"]);
        assert_eq!(text, "Hi");
    }

    /// Argument deltas go to the call their item id names, among many; an id given twice names
    /// the first call given it, and an unknown id none.
    #[test]
    fn argument_deltas_find_their_call_by_item_id_among_many() {
        let mut assembler = ResponsesAssembler::new("t", NameMap::default(), None);
        let mut out = VecDeque::new();
        let count = 3000;
        let mut data: Vec<String> = (0..count)
            .map(|i| added(&format!("fc{i}"), &format!("call{i}")))
            .collect();
        data.push(added("fc7", "again"));
        data.extend(
            (0..count)
                .rev()
                .map(|i| argument(&format!("fc{i}"), &format!("a{i}"))),
        );
        data.push(argument("fc7", "b"));
        data.push(argument("unknown", "lost"));
        data.push(
            r#"{"type":"response.output_item.done","item":{"type":"function_call","id":"fc3"}}"#
                .to_owned(),
        );
        for d in &data {
            assembler.feed(&Frame::data(d.as_str()), &mut out).unwrap();
        }
        let events: Vec<_> = out.into();
        let started = events
            .iter()
            .filter(|e| matches!(e, StreamEvent::ToolCallStarted { .. }))
            .count();
        assert_eq!(started, count + 1);
        let deltas: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::ToolCallDelta { index, fragment } => Some((*index, fragment.clone())),
                _ => None,
            })
            .collect();
        let mut want: Vec<_> = (0..count).rev().map(|i| (i, format!("a{i}"))).collect();
        want.push((7, "b".to_owned()));
        assert_eq!(deltas, want);
        assert_eq!(assembler.calls[7].arguments, "a7b");
        assert_eq!(assembler.calls[count].arguments, "");
        assert_eq!(
            events.last(),
            Some(&StreamEvent::ToolCallReady { index: 3 })
        );
    }

    /// The events of `frames`, fed in turn (an error fed ends them).
    fn events_of(frames: &[&str]) -> Vec<StreamEvent> {
        let mut a = ResponsesAssembler::new("t", NameMap::default(), None);
        let mut out = VecDeque::new();
        for &data in frames {
            a.feed(&Frame::data(data), &mut out).unwrap();
        }
        out.into()
    }

    /// Delta events read by their keys: escapes decoded, the last of a repeated key counting,
    /// and a delta that is not a string (or an item id that is not one) adding nothing.
    #[test]
    fn delta_events_read_as_a_value_reads_them() {
        let events = events_of(&[
            &added("fc_1", "call_1"),
            r#"{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"delta":"a\u00e9\n\"","logprobs":[],"sequence_number":1}"#,
            r#"{"type":"response.output_text.delta","delta":7}"#,
            r#"{"type":"response.output_text.delta","delta":["x"]}"#,
            r#"{"type":"response.output_text.delta","delta":null,"item":{"bogus":true}}"#,
            r#"{"type":"response.output_text.delta","delta":"x","delta":"y"}"#,
            r#"{"type":"response.output_text.delta","output_index":"0","delta":"z"}"#,
            r#"{"type":"response.reasoning_summary_text.delta","delta":{"text":"no"}}"#,
            r#"{"type":"response.reasoning_text.delta","delta":"r"}"#,
            r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","delta":1}"#,
            r#"{"type":"response.function_call_arguments.delta","item_id":["fc_1"],"delta":"{}"}"#,
            r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","delta":"{\"a\":1}"}"#,
            r#"{"delta":"no type"}"#,
            r#"{"type":7,"delta":"type not a string"}"#,
        ]);
        assert!(matches!(&events[0], StreamEvent::ToolCallStarted { id, .. } if id == "call_1"));
        assert_eq!(
            events[1..],
            [
                StreamEvent::TextDelta("aé\n\"".into()),
                StreamEvent::TextDelta("y".into()),
                StreamEvent::TextDelta("z".into()),
                StreamEvent::ReasoningDelta("r".into()),
                StreamEvent::ToolCallDelta {
                    index: 0,
                    fragment: r#"{"a":1}"#.into()
                },
            ]
        );
    }

    /// An item or response that is not one makes its event unreadable, skipped and counted;
    /// `null` is none.
    #[test]
    fn an_item_that_is_not_one_skips_its_event() {
        let events = events_of(&[
            r#"{"type":"response.output_item.added","item":[{"type":"function_call"}]}"#,
            r#"{"type":"response.output_item.added","item":null}"#,
            r#"{"type":"response.output_item.done","output_index":0,"item":"x"}"#,
            r#"{"type":"response.completed","response":[1]}"#,
            r#"{"type":"response.output_item.done","output_index":-1,"item":{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"output_text","text":"Hi"}]}}"#,
            r#"{"type":"response.completed","response":{"id":"r","status":"completed","output":[]}}"#,
        ]);
        let Some(StreamEvent::Completed(response)) = events.last() else {
            panic!("{events:?}");
        };
        assert_eq!(response.message.text(), "Hi");
        assert_eq!(events.len(), 1, "{events:?}");
        // Each counted as an unreadable event: past the bound on them, the stream's error.
        let mut a = ResponsesAssembler::new("t", NameMap::default(), None);
        let mut out = VecDeque::new();
        let bad = Frame::data(r#"{"type":"response.output_item.done","item":"x"}"#);
        for _ in 0..crate::http::MAX_UNREADABLE_EVENTS {
            a.feed(&bad, &mut out).unwrap();
        }
        let error = a.feed(&bad, &mut out).unwrap_err();
        assert_eq!(
            error.to_string(),
            crate::http::limits::too_many_unreadable_events("t").to_string()
        );
    }

    /// An `error` event is the stream's error, with the generic message when its message is
    /// not a string.
    #[test]
    fn an_error_event_whose_message_is_not_a_string_is_still_an_error() {
        let mut a = ResponsesAssembler::new("t", NameMap::default(), None);
        let mut out = VecDeque::new();
        let error = a
            .feed(
                &Frame::data(r#"{"type":"error","message":5,"code":"server_error"}"#),
                &mut out,
            )
            .unwrap_err();
        assert!(error.to_string().contains(wire::REPORTED), "{error}");
        assert_eq!(error.code(), Some("server_error"));
    }
}
