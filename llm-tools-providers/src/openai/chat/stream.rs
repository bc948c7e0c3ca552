//! Reassembling a streamed answer of Chat Completions from its server-sent events.

use crate::framing::Frame;
use crate::protocol::{Assembler, NameMap};
use crate::wire;
use llm_tools_core::{ProviderError, Response, StreamEvent, ToolCall, Usage};
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};

use crate::framing::lenient::{
    Bail, Fill, First, List, Quick, Raw, Reader, Scalar, Str, U64, lenient_struct, read_event_into,
};

use super::response::*;

lenient_struct! {
    /// A chunk, read as a `Value` would be (a key missing or of another type is nothing, the
    /// last of a repeated key counts) without building one: the many small chunks of a stream
    /// are read into borrowed parts.
    struct Chunk<'a> {
        model: Str<'a> = "model",
        /// The first choice (one answer is asked for; others are skipped unread).
        choice: First<ChunkChoice<'a>> = "choices",
        usage: Raw<'a> = "usage",
        error: Raw<'a> = "error",
    }
}

lenient_struct! {
    struct ChunkChoice<'a> {
        delta: Delta<'a> = "delta",
        finish_reason: Str<'a> = "finish_reason",
    }
}

lenient_struct! {
    struct Delta<'a> {
        content: Content<'a> = "content",
        refusal: Str<'a> = "refusal",
        reasoning_content: Str<'a> = "reasoning_content",
        reasoning: Str<'a> = "reasoning",
        tool_calls: List<CallDelta<'a>> = "tool_calls",
    }
}

lenient_struct! {
    struct CallDelta<'a> {
        index: U64 = "index",
        extra_content: Raw<'a> = "extra_content",
        id: Str<'a> = "id",
        function: FunctionDelta<'a> = "function",
    }
}

lenient_struct! {
    struct FunctionDelta<'a> {
        name: Str<'a> = "name",
        arguments: Content<'a> = "arguments",
    }
}

/// A value that is mostly a string (content, arguments): `None` for `null` or a missing key.
#[derive(Default)]
struct Content<'a>(Option<StrOrValue<'a>>);

impl<'de: 'a, 'a> Fill<'de> for Content<'a> {
    fn fill<D: serde::Deserializer<'de>>(d: D, into: &mut Self) -> Result<(), D::Error> {
        into.0 = match StrOrValue::deserialize(d)? {
            StrOrValue::Other(v) if v.is_null() => None,
            other => Some(other),
        };
        Ok(())
    }
    fn fill_quick(r: &mut Reader<'de>, into: &mut Self) -> Quick {
        // A string or `null`; anything else (content as a list of parts) is read as a `Value`
        // by `serde_json`.
        into.0 = match (r.peek()?, r.scalar()?) {
            (_, Scalar::Str(s)) => Some(StrOrValue::Str(s)),
            (b'n', Scalar::Other) => None,
            _ => return Err(Bail),
        };
        Ok(())
    }
}

/// A raw value read as a `Value` when it is there and not `null`.
fn value_of<'a, T: Deserialize<'a>>(raw: &Raw<'a>) -> Option<T> {
    raw.0
        .and_then(|r| serde_json::from_str::<Option<T>>(r.get()).ok())
        .flatten()
}

/// A string borrowed from the chunk where it has no escapes, or any other JSON value (content
/// as a list of parts, arguments as an object).
enum StrOrValue<'a> {
    Str(Cow<'a, str>),
    Other(Box<Value>),
}

impl<'de: 'a, 'a> Deserialize<'de> for StrOrValue<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = StrOrValue<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or a JSON value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(StrOrValue::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(StrOrValue::Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(StrOrValue::Str(Cow::Owned(v)))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(StrOrValue::Other(Box::new(Value::Null)))
            }
            fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
                Ok(StrOrValue::Other(Box::new(Value::Bool(v))))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
                Ok(StrOrValue::Other(Box::new(Value::from(v))))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
                Ok(StrOrValue::Other(Box::new(Value::from(v))))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
                Ok(StrOrValue::Other(Box::new(Value::from(v))))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<Self::Value, A::Error> {
                Value::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))
                    .map(|v| StrOrValue::Other(Box::new(v)))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<Self::Value, A::Error> {
                Value::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(|v| StrOrValue::Other(Box::new(v)))
            }
        }
        d.deserialize_any(V)
    }
}

struct CallState {
    wire_index: Option<u64>,
    id: String,
    name: String,
    arguments: String,
    extra_content: Option<Value>,
    /// Where the arguments so far stand as JSON: whether they are one whole object yet.
    json: JsonEnd,
    /// `ToolCallReady` was sent.
    ready: bool,
    /// In [`ChatAssembler::touched`]: arguments came since the last check.
    touched: bool,
}

/// Whether JSON text fed a piece at a time is one whole object (or array) so far: the depth of
/// its brackets outside strings. Each byte is looked at once, however the text is cut.
#[derive(Clone, Copy, Debug, Default)]
struct JsonEnd {
    depth: u32,
    in_string: bool,
    escaped: bool,
    closed: bool,
}

impl JsonEnd {
    fn feed(&mut self, text: &str) {
        for byte in text.bytes() {
            if self.in_string {
                match byte {
                    _ if self.escaped => self.escaped = false,
                    b'\\' => self.escaped = true,
                    b'"' => self.in_string = false,
                    _ => {}
                }
                continue;
            }
            match byte {
                b'"' => self.in_string = true,
                b'{' | b'[' => {
                    self.depth = self.depth.saturating_add(1);
                    self.closed = false;
                }
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    self.closed = self.depth == 0;
                }
                _ => {}
            }
        }
    }

    /// The outermost brackets opened and closed, and nothing opened since.
    fn complete(&self) -> bool {
        self.closed && self.depth == 0 && !self.in_string
    }
}

/// Reassembles a Chat Completions stream: text, reasoning, and tool calls whose argument
/// fragments arrive by `index` (the id only in the first fragment; `tool_calls` and
/// `finish_reason` possibly in the same chunk).
pub struct ChatAssembler {
    name: String,
    names: NameMap,
    request_id: Option<String>,
    model: Option<String>,
    text: String,
    refusal: String,
    reasoning: String,
    /// The field reasoning came in, which it goes back under (`None`: none yet, or only
    /// `thinking` chunks of the content).
    reasoning_field: Option<&'static str>,
    calls: Vec<CallState>,
    /// The call of each wire `index` and of each id, so a fragment finds its call in constant
    /// time however many calls the answer has (the server's values: hashed with the standard
    /// library's keyed hasher). Built the first time they are needed: a fragment for a call
    /// before the last (calls interleaved), or one with an id and no index (rare servers). A
    /// fragment for the last call, or one with an index above every index so far (a new
    /// call), needs neither.
    by_index: Option<HashMap<u64, usize>>,
    by_id: Option<HashMap<String, usize>>,
    /// The highest wire index so far.
    max_index: Option<u64>,
    /// Calls not ready yet whose arguments grew since the last check: the only ones a new
    /// call can find complete. (A new call used to mean the ones before it were complete; a
    /// server that interleaves fragments sends more for an earlier call after a later one
    /// started.)
    touched: Vec<usize>,
    /// Every call before this one is ready: where the next "everything is ready" starts, so
    /// a server repeating `finish_reason` does not make each chunk look at every call.
    first_unready: usize,
    usage: Option<Usage>,
    finish_reason: Option<String>,
    /// The values the calls keep (`extra_content`).
    kept: wire::KeptValues,
    /// The events (and parts) skipped unread.
    unreadable: wire::UnreadableEvents,
    done: bool,
}

impl ChatAssembler {
    pub(crate) fn new(name: &str, names: NameMap, request_id: Option<String>) -> Self {
        Self {
            name: name.to_owned(),
            names,
            request_id,
            model: None,
            text: String::new(),
            refusal: String::new(),
            reasoning: String::new(),
            reasoning_field: None,
            calls: Vec::new(),
            by_index: None,
            max_index: None,
            by_id: None,
            touched: Vec::new(),
            first_unready: 0,
            usage: None,
            finish_reason: None,
            kept: wire::KeptValues::default(),
            unreadable: wire::UnreadableEvents::default(),
            done: false,
        }
    }

    /// A new call starts: `ToolCallReady` for each call whose arguments grew since the last
    /// check and are one whole JSON object now, in call order. Each fragment is checked once.
    fn ready_complete(&mut self, out: &mut VecDeque<StreamEvent>) {
        self.touched.sort_unstable();
        for index in self.touched.drain(..) {
            let Some(call) = self.calls.get_mut(index) else {
                continue;
            };
            call.touched = false;
            if call.json.complete() {
                call.ready = true;
                out.push_back(StreamEvent::ToolCallReady { index });
            }
        }
    }

    /// The answer is complete: `ToolCallReady` for every call not ready yet, in call order.
    fn ready_all(&mut self, out: &mut VecDeque<StreamEvent>) {
        self.touched.clear();
        let from = self.first_unready;
        for (index, call) in self.calls.iter_mut().enumerate().skip(from) {
            if !call.ready {
                call.ready = true;
                out.push_back(StreamEvent::ToolCallReady { index });
            }
        }
        self.first_unready = self.calls.len();
    }

    fn call_delta(
        &mut self,
        position: usize,
        delta: &mut CallDelta<'_>,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let index = match delta.index.0 {
            Some(i) if self.calls.last().is_some_and(|c| c.wire_index == Some(i)) => {
                Some(self.calls.len() - 1)
            }
            Some(i) if self.max_index.is_none_or(|max| i > max) => None,
            Some(i) => {
                let calls = &self.calls;
                self.by_index
                    .get_or_insert_with(|| {
                        let mut by_index = HashMap::with_capacity(calls.len());
                        for (at, call) in calls.iter().enumerate() {
                            if let Some(wire) = call.wire_index {
                                by_index.insert(wire, at);
                            }
                        }
                        by_index
                    })
                    .get(&i)
                    .copied()
            }
            None => match &delta.id.0 {
                Some(id) if !id.is_empty() => {
                    let calls = &self.calls;
                    self.by_id
                        .get_or_insert_with(|| {
                            let mut by_id = HashMap::with_capacity(calls.len());
                            for (i, call) in calls.iter().enumerate() {
                                by_id.entry(call.id.clone()).or_insert(i);
                            }
                            by_id
                        })
                        .get(id.as_ref())
                        .copied()
                }
                // No index and no id: a continuation of the last call, or a new one.
                _ => self.calls.len().checked_sub(1).filter(|_| position == 0),
            },
        };
        // A fragment at a known call's index (or id) that names another call under another id
        // starts a new call: some servers (Ollama's `/v1`) send parallel calls whole, each at
        // index 0. A server that changes the id on every fragment names the call only once.
        let index = index.filter(|&i| {
            let names_another = match (delta.id.0.as_deref(), delta.function.name.get()) {
                (Some(id), Some(name)) => {
                    !id.is_empty()
                        && !name.is_empty()
                        && self.calls.get(i).is_some_and(|c| c.id != id)
                }
                _ => false,
            };
            !names_another
        });
        let extra = value_of::<Value>(&delta.extra_content);
        let function = &mut delta.function;
        let fragment = match function.arguments.0.take() {
            Some(StrOrValue::Str(s)) => s.into_owned(),
            None => String::new(),
            Some(StrOrValue::Other(other)) => other.to_string(),
        };
        let name_part = function.name.get().map(str::to_owned);
        let index = match index {
            Some(i) => {
                let call = &mut self.calls[i];
                // Some servers send the whole name again with every fragment.
                if let Some(n) = name_part.filter(|n| *n != call.name) {
                    call.name.push_str(&n);
                }
                if extra.is_some() {
                    call.extra_content = extra;
                }
                i
            }
            None => {
                self.kept.keep_call(&self.name)?;
                // A new call: those of the calls before it whose arguments are whole.
                self.ready_complete(out);
                let id = delta
                    .id
                    .0
                    .take()
                    .map(Cow::into_owned)
                    .filter(|i| !i.is_empty())
                    .unwrap_or_else(wire::fresh_call_id);
                let i = self.calls.len();
                if let Some(wire) = delta.index.0 {
                    self.max_index = Some(self.max_index.map_or(wire, |max| max.max(wire)));
                    // The newest call at an index takes the fragments that follow without an id.
                    if let Some(by_index) = self.by_index.as_mut() {
                        by_index.insert(wire, i);
                    }
                }
                if let Some(by_id) = self.by_id.as_mut() {
                    by_id.entry(id.clone()).or_insert(i);
                }
                self.calls.push(CallState {
                    wire_index: delta.index.0,
                    id: id.clone(),
                    name: name_part.unwrap_or_default(),
                    arguments: String::new(),
                    extra_content: extra,
                    json: JsonEnd::default(),
                    ready: false,
                    touched: false,
                });
                let (name, namespace) = self.names.resolve(&self.calls[i].name);
                out.push_back(StreamEvent::ToolCallStarted {
                    index: i,
                    id,
                    name,
                    namespace,
                });
                i
            }
        };
        if self.calls[index].ready && self.calls[index].json.complete() && !fragment.is_empty() {
            // Its arguments were whole, and `ToolCallReady` said so: blank space changes
            // nothing, anything more would change arguments the stream already gave as complete.
            // (A call made ready by a `finish_reason` before its arguments were whole, as some
            // servers send it, takes the rest of them.)
            if wire::is_blank(&fragment) {
                return Ok(());
            }
            let call = &self.calls[index];
            return Err(wire::decode_error(
                &self.name,
                format!(
                    "the stream sent more arguments for call `{}` after they were whole ({} bytes \
                     more)",
                    call.id,
                    fragment.len()
                ),
            ));
        }
        if !fragment.is_empty() {
            let call = &mut self.calls[index];
            call.arguments.push_str(&fragment);
            call.json.feed(&fragment);
            if !call.ready && !call.touched {
                call.touched = true;
                self.touched.push(index);
            }
            out.push_back(StreamEvent::ToolCallDelta { index, fragment });
        }
        Ok(())
    }

    fn complete(&mut self, out: &mut VecDeque<StreamEvent>) {
        self.ready_all(out);
        let calls = self
            .calls
            .drain(..)
            .map(|c| {
                let (name, namespace) = self.names.resolve(c.name);
                let arguments = if wire::is_blank(&c.arguments) {
                    "{}".to_owned()
                } else {
                    c.arguments
                };
                with_extra(
                    ToolCall::new(c.id, name, arguments).with_namespace(namespace),
                    c.extra_content,
                )
            })
            .collect();
        if let Some(u) = self.usage {
            out.push_back(StreamEvent::Usage(u));
        }
        let message = assistant_message(
            std::mem::take(&mut self.text),
            Some(std::mem::take(&mut self.refusal)),
            calls,
            (self.reasoning_field, std::mem::take(&mut self.reasoning)),
            self.usage,
        );
        out.push_back(StreamEvent::Completed(Box::new(
            Response::new(message)
                .with_finish_reason(self.finish_reason.take())
                .with_request_id(self.request_id.take())
                .with_model(self.model.take()),
        )));
        self.done = true;
    }
}

impl Assembler for ChatAssembler {
    fn feed(
        &mut self,
        event: &Frame<'_>,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.complete(out);
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        let mut chunk = Chunk::default();
        if !read_event_into(&mut self.unreadable, &self.name, data, &mut chunk)? {
            return Ok(());
        }
        if let Some(error) = value_of::<Value>(&chunk.error) {
            return Err(crate::openai::errors::reported(
                &self.name,
                &error,
                wire::REPORTED,
            ));
        }
        if self.model.is_none() {
            self.model = chunk.model.get().map(str::to_owned);
        }
        if let Some(u) = value_of::<UsageIn>(&chunk.usage) {
            self.usage = Some(u.usage());
        }
        if let Some(choice) = &mut chunk.choice.0 {
            let delta = &mut choice.delta;
            let mut reasoning = String::new();
            let text = match delta.content.0.take() {
                // (The common case: a string, moved on as it is.)
                Some(StrOrValue::Str(s)) => s.into_owned(),
                Some(StrOrValue::Other(v)) => {
                    let mut text = String::new();
                    content_text(Some(&v), &mut text, &mut reasoning);
                    text
                }
                None => String::new(),
            };
            if let Some(r) = delta.reasoning_content.get().filter(|r| !r.is_empty()) {
                self.reasoning_field = Some("reasoning_content");
                reasoning.push_str(r);
            } else if let Some(r) = delta.reasoning.get().filter(|r| !r.is_empty()) {
                self.reasoning_field = Some("reasoning");
                reasoning.push_str(r);
            }
            if !reasoning.is_empty() {
                self.reasoning.push_str(&reasoning);
                out.push_back(StreamEvent::ReasoningDelta(reasoning));
            }
            if !text.is_empty() {
                self.text.push_str(&text);
                out.push_back(StreamEvent::TextDelta(text));
            }
            if let Some(r) = delta.refusal.get() {
                self.refusal.push_str(r);
            }
            for (position, call) in delta.tool_calls.0.iter_mut().enumerate() {
                if let Some(extra) = call.extra_content.0 {
                    self.kept.keep(&self.name, extra.get())?;
                }
                self.call_delta(position, call, out)?;
            }
            // An empty reason (some servers send one on every chunk) finishes nothing.
            if let Some(reason) = choice.finish_reason.get().filter(|r| !r.is_empty()) {
                self.finish_reason = Some(reason.to_owned());
                self.ready_all(out);
            }
        }
        Ok(())
    }

    fn is_finished(&self) -> bool {
        self.done
    }

    fn end(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        if self.finish_reason.is_some() {
            // Some servers end without `[DONE]`; the finish reason says the answer is whole.
            self.complete(out);
            return Ok(());
        }
        Err(wire::cut_short(&self.name, "no finish reason, no [DONE]"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::test_events::{completed_calls, ready_indexes};
    use llm_tools_core::ProviderErrorKind;

    fn feed_all(frames: &[&str]) -> Vec<StreamEvent> {
        let mut a = ChatAssembler::new("t", NameMap::default(), None);
        let mut out = VecDeque::new();
        for f in frames {
            a.feed(&Frame::data(*f), &mut out).unwrap();
        }
        a.end(&mut out).unwrap();
        out.into()
    }

    /// Fragments of calls interleaved (a fragment for an earlier call after a later one
    /// started), by index or, from servers that send no index, by id: each reaches its call.
    #[test]
    fn interleaved_fragments_reach_their_calls_by_index_or_by_id() {
        let by_index = feed_all(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{\"x\":"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"g","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":2,"id":"c","function":{"name":"h","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
        ]);
        assert_eq!(
            completed_calls(&by_index),
            [
                ("a".to_owned(), r#"{"x":1}"#.to_owned()),
                ("b".to_owned(), "{}".to_owned()),
                ("c".to_owned(), "{}".to_owned())
            ]
        );
        let by_id = feed_all(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{\"x\":"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"b","function":{"name":"g","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"arguments":"1}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
        ]);
        assert_eq!(
            completed_calls(&by_id),
            [
                ("a".to_owned(), r#"{"x":1}"#.to_owned()),
                ("b".to_owned(), "{}".to_owned())
            ]
        );
    }

    /// The names and arguments of the calls of the stream's answer, in order.
    fn named_calls(events: &[StreamEvent]) -> Vec<(String, String, String)> {
        let Some(StreamEvent::Completed(response)) = events.last() else {
            panic!("the stream did not end with its answer: {events:?}");
        };
        response
            .message
            .tool_calls
            .iter()
            .map(|c| (c.id.clone(), c.name.clone(), c.arguments.clone()))
            .collect()
    }

    /// Parallel calls sent whole, each at index 0 under its own id (Ollama's `/v1`), are two
    /// calls; fragments after them without an id go to the newest at that index.
    #[test]
    fn calls_sent_whole_at_one_index_under_their_own_ids_are_separate_calls() {
        let events = feed_all(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"call_1","index":0,"function":{"name":"weather","arguments":"{\"city\":\"Berlin\"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"call_2","index":0,"function":{"name":"best_language","arguments":"{\"level\":"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
        ]);
        assert_eq!(
            named_calls(&events),
            [
                (
                    "call_1".to_owned(),
                    "weather".to_owned(),
                    r#"{"city":"Berlin"}"#.to_owned()
                ),
                (
                    "call_2".to_owned(),
                    "best_language".to_owned(),
                    r#"{"level":1}"#.to_owned()
                ),
            ]
        );
        let started = events
            .iter()
            .filter(|e| matches!(e, StreamEvent::ToolCallStarted { .. }))
            .count();
        assert_eq!(started, 2);
    }

    /// A server that sends the whole name again with every fragment of one call (same id), or
    /// a new id with every fragment but the name once: one call, its name once.
    #[test]
    fn a_name_sent_again_with_each_fragment_or_ids_that_change_keep_one_call() {
        let repeated_name = feed_all(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"c1","index":0,"function":{"name":"read_file","arguments":"{\"name\":"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"c1","index":0,"function":{"name":"read_file","arguments":"\"a.md\""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"c1","index":0,"function":{"name":"read_file","arguments":"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
        ]);
        assert_eq!(
            named_calls(&repeated_name),
            [(
                "c1".to_owned(),
                "read_file".to_owned(),
                r#"{"name":"a.md"}"#.to_owned()
            )]
        );
        let changing_ids = feed_all(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"x1","index":0,"function":{"name":"read_file","arguments":"{\"name\":"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"x2","index":0,"function":{"arguments":"\"a.md\"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
        ]);
        assert_eq!(
            named_calls(&changing_ids),
            [(
                "x1".to_owned(),
                "read_file".to_owned(),
                r#"{"name":"a.md"}"#.to_owned()
            )]
        );
    }

    /// Calls' indexes, each with the position of an event of it in the stream.
    type Positions = Vec<(usize, usize)>;

    /// Where each call's fragments and each call's `ToolCallReady` are in `events`.
    fn positions(events: &[StreamEvent]) -> (Positions, Positions) {
        let mut deltas = Vec::new();
        let mut ready = Vec::new();
        for (at, e) in events.iter().enumerate() {
            match e {
                StreamEvent::ToolCallDelta { index, .. } => deltas.push((*index, at)),
                StreamEvent::ToolCallReady { index } => ready.push((*index, at)),
                _ => {}
            }
        }
        (deltas, ready)
    }

    /// A server that interleaves fragments: a call is ready once its arguments are one whole
    /// object, not when the next call starts; each call is ready once, after its last fragment.
    #[test]
    fn a_call_is_ready_when_its_arguments_are_whole_however_fragments_interleave() {
        let events = feed_all(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{\"x\":"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"g","arguments":"{\"s\":\"}\\\"{\""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":2,"id":"c","function":{"name":"h","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":3,"id":"d","function":{"name":"k"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
        ]);
        let (deltas, ready) = positions(&events);
        let order: Vec<usize> = ready.iter().map(|(index, _)| *index).collect();
        // `c` is whole when `d` starts, as are `a` and `b` by then; `d` has no arguments
        // and is ready when the answer is.
        assert_eq!(order, [0, 1, 2, 3], "{events:?}");
        for (index, at) in &ready {
            let last = deltas
                .iter()
                .filter(|(i, _)| i == index)
                .map(|(_, at)| *at)
                .max();
            assert!(
                last.is_none_or(|last| last < *at),
                "call {index}: {events:?}"
            );
        }
        assert_eq!(
            completed_calls(&events)[1].1,
            r#"{"s":"}\"{"}"#,
            "the brace and the quote in the string are text"
        );
    }

    /// A fragment for a call whose arguments were whole (and given as ready) fails the
    /// stream, naming the call: the arguments never change after `ToolCallReady`. Blank space
    /// after them changes nothing and is let through.
    #[test]
    fn more_arguments_for_a_ready_call_fail_the_stream() {
        let frames = [
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"g","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":" "}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"x\":1}"}}]}}]}"#,
        ];
        let mut a = ChatAssembler::new("t", NameMap::default(), None);
        let mut out = VecDeque::new();
        for (n, data) in frames.iter().enumerate() {
            let fed = a.feed(&Frame::data(*data), &mut out);
            if n < 3 {
                fed.unwrap();
            } else {
                let error = fed.unwrap_err();
                assert_eq!(error.kind(), ProviderErrorKind::Decode, "{error}");
                assert!(
                    error.to_string().contains("call `a` after they were whole"),
                    "{error}"
                );
            }
        }
        let events: Vec<StreamEvent> = out.into();
        let (deltas, ready) = positions(&events);
        let ready_at = ready
            .iter()
            .find(|(i, _)| *i == 0)
            .map(|(_, at)| *at)
            .unwrap();
        assert!(
            deltas.iter().all(|(i, at)| *i != 0 || *at < ready_at),
            "no fragment of call 0 after its ready event: {events:?}"
        );
        // A `finish_reason` before the arguments are whole (some servers send it early): the
        // rest of them still come in; an empty reason finishes nothing.
        let early = feed_all(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{\"x\":"}}]},"finish_reason":""}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}}]}"#,
        ]);
        assert_eq!(completed_calls(&early)[0].1, r#"{"x":1}"#, "{early:?}");
        // After `finish_reason`, every call is ready: a fragment then fails the same way.
        let mut a = ChatAssembler::new("t", NameMap::default(), None);
        let mut out = VecDeque::new();
        a.feed(&Frame::data(frames[0]), &mut out).unwrap();
        a.feed(
            &Frame::data(r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#),
            &mut out,
        )
        .unwrap();
        assert!(a.feed(&Frame::data(frames[3]), &mut out).is_err());
    }

    /// A server that repeats `finish_reason` gets each call ready once.
    #[test]
    fn each_call_is_ready_once_however_often_the_answer_finishes() {
        let events = feed_all(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"g","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
        ]);
        assert_eq!(ready_indexes(&events), [0, 1], "{events:?}");
    }

    #[test]
    fn json_end_sees_whole_objects_however_the_text_is_cut() {
        let text = r#"{"a":[1,{"b":"]}\"\\"}],"c":"{"}"#;
        for cut in 0..=text.len() {
            let (head, tail) = text.split_at(cut);
            let mut end = JsonEnd::default();
            end.feed(head);
            assert_eq!(end.complete(), cut == text.len(), "cut at {cut}");
            end.feed(tail);
            assert!(end.complete(), "cut at {cut}");
        }
        let mut end = JsonEnd::default();
        end.feed("12");
        assert!(!end.complete(), "a number may go on");
        end.feed(" {}{");
        assert!(!end.complete(), "opened again");
    }

    /// The chunks read without a `Value` read as a `Value` reads them: escapes, values of
    /// another type (nothing, the rest of the chunk still read), keys given twice (the last
    /// counts), the first choice only, unreadable chunks skipped.
    #[test]
    fn odd_delta_events_read_as_a_value_reads_them() {
        let got = feed_all(&[
            r#"{"model":"m","choices":[{"index":0,"delta":{"content":"a\"b"}}]}"#,
            r#"{"choices":[{"delta":{"content":7}}]}"#,
            r#"{"model":7,"choices":[{"delta":{"content":"c"},"finish_reason":null}]}"#,
            r#"{"choices":{"delta":{"content":"not a list"}}}"#,
            r#"{"choices":[{"delta":{"content":"d"}},{"delta":{"content":"second"}}]}"#,
            r#"{"choices":[{"delta":{"content":"x","content":"e"}}]}"#,
            r#"{"choices":[{"delta":{"content":"lost"#,
            r#"{"choices":[{"delta":{"content":[{"type":"text","text":"f"}]}}]}"#,
            r#"{"choices":[{"delta":{"reasoning_content":"r","reasoning":7}}]}"#,
            r#"{"error":null,"choices":[{"delta":{"content":"g","refusal":null}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":{"index":0,"id":"no"}}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"f","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":"0","function":{"arguments":"1}"}}]}}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
            "[DONE]",
        ]);
        let text = |t: &str| StreamEvent::TextDelta(t.into());
        assert_eq!(
            got[..7],
            [
                text("a\"b"),
                text("c"),
                text("d"),
                text("e"),
                text("f"),
                StreamEvent::ReasoningDelta("r".into()),
                text("g"),
            ]
        );
        assert!(
            matches!(&got[7], StreamEvent::ToolCallStarted { index: 0, id, name, .. }
            if id == "c1" && name == "f"),
            "{got:?}"
        );
        let fragment = |f: &str| StreamEvent::ToolCallDelta {
            index: 0,
            fragment: f.into(),
        };
        // (An index that is no count, as `Value::as_u64` reads it, is none: the last call.)
        assert_eq!(got[8..10], [fragment(r#"{"a":"#), fragment("1}")]);
        assert_eq!(got[10], StreamEvent::ToolCallReady { index: 0 });
        assert_eq!(got[11], StreamEvent::Usage(Usage::new(3, 4)));
        let StreamEvent::Completed(response) = &got[12] else {
            panic!("{got:?}");
        };
        assert_eq!(response.message.text(), "a\"bcdefg");
        assert_eq!(response.message.tool_calls[0].arguments, r#"{"a":1}"#);
        assert_eq!(response.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(response.model.as_deref(), Some("m"));
        assert_eq!(got.len(), 13);
    }

    #[test]
    fn an_error_in_a_chunk_is_an_error_and_a_null_one_is_none() {
        let mut a = ChatAssembler::new("t", NameMap::default(), None);
        let mut out = VecDeque::new();
        a.feed(&Frame::data(r#"{"error":null,"choices":[]}"#), &mut out)
            .unwrap();
        let error = a.feed(
            &Frame::data(r#"{"error":{"message":"boom","type":"invalid_request_error"}}"#),
            &mut out,
        );
        let error = error.unwrap_err();
        assert_eq!(error.error_type(), Some("invalid_request_error"));
        assert!(error.message().contains("boom"), "{error}");
        // A bad request is not worth trying again.
        assert!(!error.is_retryable(), "{error}");
    }
}
