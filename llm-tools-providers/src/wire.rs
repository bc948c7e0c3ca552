//! What every wire protocol shares: sending a request and reading its answer, whole or
//! streamed ([`Protocol`]), writing request bodies around cached tool definitions, mapping
//! joined tool names back to namespaces, attachments, fresh call ids, reading answer bodies,
//! and driving a stream assembler over server-sent events.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;
use futures::Stream;
use llm_tools_core::{
    Attachment, EventStream, Message, ProviderError, ProviderErrorKind, Request, Response, Source,
    StreamEvent, Tool, ToolCall, ToolChoice, ToolSpec,
};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::http::{ErrorDetails, HttpClient};
use crate::schema::{SchemaNote, StrictSchema};
use crate::sse::{Splitter, SseEvent};

/// One wire protocol: where a request goes, how its body is written and how the answer is
/// read, whole or streamed. Every provider's [`Provider`](llm_tools_core::Provider)
/// implementation is [`complete`] and [`stream`] over its protocol.
pub(crate) trait Protocol: Send + Sync {
    /// Reassembles one streamed answer.
    type Assembler: Assembler + Unpin;

    /// The client requests go through (its name is the one errors carry).
    fn http(&self) -> &HttpClient;

    /// The path, after the base URL, a request is posted to.
    fn path(&self, stream: bool) -> &str;

    /// Writes the request body.
    fn body(&self, request: &Request<'_>, stream: bool) -> Result<Vec<u8>, ProviderError>;

    /// Reads a whole answer.
    fn parse(
        &self,
        body: &[u8],
        names: &NameMap,
        request_id: Option<String>,
    ) -> Result<Response, ProviderError>;

    /// The assembler of one streamed answer.
    fn assembler(&self, names: NameMap, request_id: Option<String>) -> Self::Assembler;
}

/// The inspection methods every protocol type has, as it reads answers: `parse_response` for a
/// whole body and `stream_events` for the raw SSE bytes of a streamed one (for tests,
/// benchmarks and tools that look at traffic).
macro_rules! inspection_methods {
    () => {
        /// Reads a whole answer body as this provider does.
        pub fn parse_response(
            &self,
            body: &[u8],
            tools: &[std::sync::Arc<dyn llm_tools_core::Tool>],
        ) -> Result<llm_tools_core::Response, llm_tools_core::ProviderError> {
            $crate::wire::parse_response(self, body, tools)
        }

        /// Reassembles a streamed answer (the raw SSE bytes) as this provider does.
        pub fn stream_events<S>(
            &self,
            bytes: S,
            tools: &[std::sync::Arc<dyn llm_tools_core::Tool>],
        ) -> llm_tools_core::EventStream<'static>
        where
            S: futures::Stream<Item = Result<bytes::Bytes, llm_tools_core::ProviderError>>
                + Send
                + 'static,
        {
            $crate::wire::stream_events(self, bytes, tools)
        }
    };
}

/// Sends a request and reads the whole answer.
pub(crate) async fn complete<P: Protocol>(
    protocol: &P,
    request: Request<'_>,
) -> Result<Response, ProviderError> {
    let body = protocol.body(&request, false)?;
    let names = NameMap::new(request.tools);
    let answer = protocol
        .http()
        .post_json(protocol.path(false), body, false)
        .await?;
    let request_id = answer.request_id().map(str::to_owned);
    let bytes = answer.bytes().await?;
    protocol.parse(&bytes, &names, request_id)
}

/// Sends a request and streams the answer.
pub(crate) async fn stream<'s, P: Protocol>(
    protocol: &P,
    request: Request<'_>,
) -> Result<EventStream<'s>, ProviderError> {
    let body = protocol.body(&request, true)?;
    let names = NameMap::new(request.tools);
    let answer = protocol
        .http()
        .post_json(protocol.path(true), body, true)
        .await?;
    let request_id = answer.request_id().map(str::to_owned);
    let assembler = protocol.assembler(names, request_id);
    Ok(assemble(
        protocol.http().name(),
        answer.byte_stream(),
        assembler,
    ))
}

/// Reads a whole answer body for a request with `tools`, as [`complete`] does.
pub(crate) fn parse_response<P: Protocol>(
    protocol: &P,
    body: &[u8],
    tools: &[Arc<dyn Tool>],
) -> Result<Response, ProviderError> {
    protocol.parse(body, &NameMap::new(tools), None)
}

/// Reassembles a streamed answer (the raw SSE bytes) for a request with `tools`, as [`stream`]
/// does.
pub(crate) fn stream_events<P, S>(
    protocol: &P,
    bytes: S,
    tools: &[Arc<dyn Tool>],
) -> EventStream<'static>
where
    P: Protocol,
    S: Stream<Item = Result<Bytes, ProviderError>> + Send + 'static,
{
    let assembler = protocol.assembler(NameMap::new(tools), None);
    assemble(protocol.http().name(), bytes, assembler)
}

/// Writes a JSON object body key by key; keys also present in the chat's raw params are left
/// to the params, which are written last.
pub(crate) struct BodyWriter<'p> {
    buf: Vec<u8>,
    params: Option<&'p Map<String, Value>>,
    first: bool,
    error: Option<serde_json::Error>,
}

impl<'p> BodyWriter<'p> {
    pub(crate) fn new(capacity: usize, params: Option<&'p Map<String, Value>>) -> Self {
        let mut buf = Vec::with_capacity(capacity);
        buf.push(b'{');
        Self {
            buf,
            params,
            first: true,
            error: None,
        }
    }

    fn overridden(&self, key: &str) -> bool {
        self.params.is_some_and(|p| p.contains_key(key))
    }

    fn key(&mut self, key: &str) {
        if !self.first {
            self.buf.push(b',');
        }
        self.first = false;
        self.buf.push(b'"');
        self.buf.extend_from_slice(key.as_bytes());
        self.buf.extend_from_slice(b"\":");
    }

    /// Writes `key: value`.
    pub(crate) fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) {
        if self.overridden(key) {
            return;
        }
        self.key(key);
        if let Err(e) = serde_json::to_writer(&mut self.buf, value) {
            self.error.get_or_insert(e);
        }
    }

    /// Writes `key: [raw, raw, …]` from JSON text already serialized.
    pub(crate) fn raw_array<'r>(&mut self, key: &str, items: impl IntoIterator<Item = &'r str>) {
        if self.overridden(key) {
            return;
        }
        self.key(key);
        self.buf.push(b'[');
        for (i, item) in items.into_iter().enumerate() {
            if i > 0 {
                self.buf.push(b',');
            }
            self.buf.extend_from_slice(item.as_bytes());
        }
        self.buf.push(b']');
    }

    pub(crate) fn finish(mut self, name: &str) -> Result<Vec<u8>, ProviderError> {
        if let Some(params) = self.params {
            for (k, v) in params {
                self.key_owned(k);
                if let Err(e) = serde_json::to_writer(&mut self.buf, v) {
                    self.error.get_or_insert(e);
                }
            }
        }
        if let Some(e) = self.error {
            return Err(request_error(
                name,
                format!("the request body cannot be written: {e}"),
            ));
        }
        self.buf.push(b'}');
        Ok(self.buf)
    }

    fn key_owned(&mut self, key: &str) {
        if !self.first {
            self.buf.push(b',');
        }
        self.first = false;
        if let Err(e) = serde_json::to_writer(&mut self.buf, key) {
            self.error.get_or_insert(e);
        }
        self.buf.push(b':');
    }
}

/// A tool's definition in one dialect, built the first time a request needs it and reused by
/// every later one ([`ToolSpec::cached_definition`] under `key`): the entries `build` writes,
/// then the tool's provider options for `options_key` over them. A definition `build` refuses
/// (with the reason) is a request error naming the tool.
pub(crate) fn definition(
    protocol: &str,
    spec: &ToolSpec,
    key: &'static str,
    options_key: &str,
    build: impl FnOnce(&ToolSpec, &mut Map<String, Value>) -> Result<(), String>,
) -> Result<Arc<RawValue>, ProviderError> {
    enum Refused {
        Build(String),
        Json(serde_json::Error),
    }
    let built = spec.cached_definition(key, |spec| {
        let mut entry = Map::new();
        build(spec, &mut entry).map_err(Refused::Build)?;
        if let Some(Value::Object(extra)) = spec.provider_options(options_key) {
            for (k, v) in extra {
                entry.insert(k.clone(), v.clone());
            }
        }
        serde_json::value::to_raw_value(&entry).map_err(Refused::Json)
    });
    built.map_err(|refused| {
        let tool = spec.joined_name();
        let message = match refused {
            Refused::Build(why) => format!("the definition of `{tool}`: {why}"),
            Refused::Json(e) => format!("the definition of `{tool}` cannot be written: {e}"),
        };
        request_error(protocol, message)
    })
}

/// A tool's schema in a dialect with a strict mode: the strict form and `true` when `strict`
/// asks for it and the schema allows it, else the plain form and `false`.
#[cfg_attr(not(any(feature = "openai", feature = "anthropic")), allow(dead_code))]
pub(crate) fn strict_or_plain(
    strict: bool,
    neutral: &Value,
    strict_form: fn(&Value) -> Result<StrictSchema, Vec<SchemaNote>>,
    plain_form: fn(&Value) -> Value,
) -> (Value, bool) {
    match strict.then(|| strict_form(neutral).ok()).flatten() {
        Some(s) => (s.schema, true),
        None => (plain_form(neutral), false),
    }
}

/// JSON texts as one JSON array, appended to `out`.
#[cfg_attr(not(any(feature = "openai", feature = "gemini")), allow(dead_code))]
pub(crate) fn push_raw_array<'r>(out: &mut String, items: impl IntoIterator<Item = &'r str>) {
    out.push('[');
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(item);
    }
    out.push(']');
}

/// The tool a request forces by name, if it does.
#[cfg_attr(not(any(feature = "anthropic", feature = "gemini")), allow(dead_code))]
pub(crate) fn forced_tool<'a>(request: &Request<'a>) -> Option<&'a str> {
    match request.choice {
        ToolChoice::Tool(joined) => Some(joined.as_str()),
        _ => None,
    }
}

/// The error for a forced tool that is not among the request's tools.
pub(crate) fn unknown_forced_tool(name: &str, joined: &str) -> ProviderError {
    request_error(
        name,
        format!("the tool choice names `{joined}`, which is not among the request's tools"),
    )
}

/// The error for a tool choice the protocol cannot express.
pub(crate) fn unsupported_choice(name: &str, choice: &ToolChoice) -> ProviderError {
    request_error(name, format!("the tool choice {choice:?} is not supported"))
}

/// What a message's provider data keeps under `key` for `protocol`.
pub(crate) fn protocol_data<'m>(
    message: &'m Message,
    protocol: &str,
    key: &str,
) -> Option<&'m Value> {
    message
        .provider_data
        .as_ref()
        .and_then(|d| d.for_protocol(protocol))
        .and_then(|d| d.get(key))
}

/// The tool calls of an assistant message, each written once: where the answer's recorded
/// order places it ([`take`](Self::take)), and the others after ([`rest`](Self::rest)).
pub(crate) struct CallsInOrder<'a> {
    calls: &'a [ToolCall],
    done: Vec<bool>,
}

impl<'a> CallsInOrder<'a> {
    pub(crate) fn new(calls: &'a [ToolCall]) -> Self {
        Self {
            calls,
            done: vec![false; calls.len()],
        }
    }

    /// The call with this id, unless it was taken already.
    pub(crate) fn take(&mut self, id: Option<&str>) -> Option<&'a ToolCall> {
        let i = self.calls.iter().position(|c| Some(c.id.as_str()) == id)?;
        if self.done[i] {
            return None;
        }
        self.done[i] = true;
        Some(&self.calls[i])
    }

    /// The calls not taken, in their order.
    pub(crate) fn rest(self) -> impl Iterator<Item = &'a ToolCall> {
        self.calls
            .iter()
            .zip(self.done)
            .filter_map(|(call, done)| (!done).then_some(call))
    }
}

/// A call's arguments as the JSON object the protocol takes: the JSON text the model sent, or
/// `{}` when it is not one JSON object.
#[derive(Serialize)]
#[serde(untagged)]
#[cfg_attr(not(any(feature = "anthropic", feature = "gemini")), allow(dead_code))]
pub(crate) enum ArgumentsObject<'a> {
    Raw(&'a RawValue),
    Empty(Map<String, Value>),
}

impl<'a> ArgumentsObject<'a> {
    #[cfg_attr(not(any(feature = "anthropic", feature = "gemini")), allow(dead_code))]
    pub(crate) fn of(call: &'a ToolCall) -> Self {
        match serde_json::from_str::<&RawValue>(&call.arguments) {
            Ok(raw) if raw.get().trim_start().starts_with('{') => ArgumentsObject::Raw(raw),
            _ => ArgumentsObject::Empty(Map::new()),
        }
    }
}

pub(crate) fn request_error(name: &str, message: impl Into<String>) -> ProviderError {
    ProviderError::new(name, ProviderErrorKind::Request, message)
}

pub(crate) fn decode_error(name: &str, message: impl Into<String>) -> ProviderError {
    ProviderError::new(name, ProviderErrorKind::Decode, message)
}

pub(crate) fn stream_error(name: &str, message: impl Into<String>) -> ProviderError {
    ProviderError::new(name, ProviderErrorKind::Stream, message)
}

/// The tools of a request, to map names on the wire back to (namespace, name). Only tools in a
/// namespace need mapping (a tool without one is called by its own name), and they are shared,
/// not copied: for tools without namespaces, building one per request allocates nothing.
#[derive(Clone, Default)]
pub(crate) struct NameMap {
    tools: Vec<Arc<dyn Tool>>,
}

impl NameMap {
    pub(crate) fn new(tools: &[Arc<dyn Tool>]) -> Self {
        Self {
            tools: tools
                .iter()
                .filter(|t| t.spec().namespace().is_some())
                .cloned()
                .collect(),
        }
    }

    /// A joined name from Chat Completions: the tool's own name and namespace, or the name as
    /// it came when no tool has it (the loop reports unknown tools).
    pub(crate) fn resolve(&self, wire: &str) -> (String, Option<String>) {
        let found = self
            .tools
            .iter()
            .map(|t| t.spec())
            .find(|s| s.joined_name() == wire);
        match found {
            Some(s) => (
                s.name().to_owned(),
                s.namespace().map(|n| n.name().to_owned()),
            ),
            None => (wire.to_owned(), None),
        }
    }
}

impl std::fmt::Debug for NameMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.tools.iter().map(|t| t.spec().joined_name()))
            .finish()
    }
}

/// Inline text of a text attachment, as the model reads it in a tool result.
pub(crate) fn attachment_as_text(a: &Attachment) -> Option<String> {
    if !a.is_text() {
        return None;
    }
    let Source::Bytes(bytes) = a.source() else {
        return None;
    };
    let name = a.filename().unwrap_or("attachment");
    Some(format!(
        "<file name='{name}' mime_type='{}'>{}</file>",
        a.media_type(),
        String::from_utf8_lossy(bytes)
    ))
}

/// A URL the provider can fetch: the attachment's URL, or its bytes as a data URL.
#[cfg_attr(not(feature = "openai"), allow(dead_code))]
pub(crate) fn attachment_url(a: &Attachment) -> String {
    match a.source() {
        Source::Url(u) => u.clone(),
        _ => format!(
            "data:{};base64,{}",
            a.media_type(),
            a.base64().unwrap_or_default()
        ),
    }
}

/// A fresh call id for servers that send none.
pub(crate) fn fresh_call_id() -> String {
    let mut id = String::from("call_");
    for _ in 0..24 {
        id.push(fastrand::alphanumeric());
    }
    id
}

/// Turns SSE events into [`StreamEvent`]s, ending with [`StreamEvent::Completed`].
pub(crate) trait Assembler: Send + 'static {
    /// Handles one event; pushes what it produced.
    fn feed(
        &mut self,
        event: &SseEvent<'_>,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), ProviderError>;

    /// Whether the terminal event arrived (later events are ignored).
    fn is_finished(&self) -> bool;

    /// The stream ended: pushes the completed answer, or fails if it was cut short.
    fn end(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError>;
}

/// Reads a byte stream into events and feeds them to an assembler, each event borrowed from
/// the splitter's buffer.
struct Driver<B, A> {
    bytes: std::pin::Pin<Box<B>>,
    splitter: Splitter,
    name: String,
    assembler: A,
    queue: VecDeque<StreamEvent>,
    /// The byte stream has ended (or failed).
    drained: bool,
    ended: bool,
}

impl<B, A> Stream for Driver<B, A>
where
    B: Stream<Item = Result<Bytes, ProviderError>>,
    A: Assembler + Unpin,
{
    type Item = Result<StreamEvent, ProviderError>;

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        use std::task::Poll;
        let d = self.get_mut();
        loop {
            if let Some(event) = d.queue.pop_front() {
                return Poll::Ready(Some(Ok(event)));
            }
            if d.ended {
                return Poll::Ready(None);
            }
            let result = if d.assembler.is_finished() {
                d.ended = true;
                d.assembler.end(&mut d.queue)
            } else if let Some(event) = d.splitter.next_event(&d.name) {
                event.and_then(|event| d.assembler.feed(&event, &mut d.queue))
            } else if d.drained {
                d.ended = true;
                d.assembler.end(&mut d.queue)
            } else {
                match d.bytes.as_mut().poll_next(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Some(Ok(chunk))) => {
                        d.splitter.push(&chunk);
                        Ok(())
                    }
                    Poll::Ready(Some(Err(e))) => {
                        d.drained = true;
                        Err(e)
                    }
                    Poll::Ready(None) => {
                        d.drained = true;
                        d.splitter.end();
                        Ok(())
                    }
                }
            };
            if let Err(e) = result {
                d.ended = true;
                d.queue.clear();
                return Poll::Ready(Some(Err(e)));
            }
        }
    }
}

/// Drives an assembler over a byte stream.
pub(crate) fn assemble<B, A>(name: &str, bytes: B, assembler: A) -> EventStream<'static>
where
    B: Stream<Item = Result<Bytes, ProviderError>> + Send + 'static,
    A: Assembler + Unpin,
{
    Box::pin(Driver {
        bytes: Box::pin(bytes),
        splitter: Splitter::default(),
        name: name.to_owned(),
        assembler,
        queue: VecDeque::new(),
        drained: false,
        ended: false,
    })
}

/// Reads a whole answer's body, failing with a decode error that quotes its start.
pub(crate) fn parse_body<'de, T: serde::Deserialize<'de>>(
    name: &str,
    body: &'de [u8],
) -> Result<T, ProviderError> {
    serde_json::from_slice(body).map_err(|e| {
        let text = String::from_utf8_lossy(body);
        let start: String = text.trim().chars().take(200).collect();
        decode_error(
            name,
            format!("the response is not the expected JSON ({e}): {start}"),
        )
    })
}

/// One stream event's data read as `T`; an event that is not (a keep-alive, garbage) is
/// skipped with a warning.
pub(crate) fn read_event<'de, T: serde::Deserialize<'de>>(name: &str, data: &'de str) -> Option<T> {
    match serde_json::from_str(data) {
        Ok(event) => Some(event),
        Err(error) => {
            tracing::warn!(provider = %name, error = %error, "skipping an unreadable stream event");
            None
        }
    }
}

/// A part of an answer or event kept unparsed (`RawValue`) and read when it is needed;
/// unreadable means "nothing there".
#[cfg_attr(not(any(feature = "anthropic", feature = "gemini")), allow(dead_code))]
pub(crate) fn value_of(raw: Option<&RawValue>) -> Option<Value> {
    raw.and_then(|r| serde_json::from_str(r.get()).ok())
}

/// An error object the provider reported inside an answer or a stream
/// (`{"type" or "status": …, "code": …, "message": …}`) as a `Stream` error with its type and
/// code; `fallback` is the message when it has none.
pub(crate) fn reported_error(name: &str, error: &Value, fallback: &str) -> ProviderError {
    let details = ErrorDetails::from_value(&serde_json::json!({ "error": error }));
    let mut e = stream_error(name, details.message.unwrap_or_else(|| fallback.to_owned()));
    if let Some(t) = details.error_type {
        e = e.with_error_type(t);
    }
    if let Some(c) = details.code {
        e = e.with_code(c);
    }
    e
}

/// The message of an error the provider reported without one.
pub(crate) const REPORTED: &str = "the provider reported an error";

/// The stream ended before its terminal event (`missing` says which): worth trying again.
pub(crate) fn cut_short(name: &str, missing: &str) -> ProviderError {
    stream_error(
        name,
        format!("the stream ended before the answer was complete ({missing})"),
    )
    .with_retryable(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_override_the_written_keys() {
        let mut params = Map::new();
        params.insert("temperature".into(), Value::from(0.2));
        params.insert("model".into(), Value::from("other"));
        let mut w = BodyWriter::new(64, Some(&params));
        w.field("model", "m");
        w.field("stream", &false);
        w.raw_array("tools", [r#"{"a":1}"#, "2"]);
        let body: Value = serde_json::from_slice(&w.finish("t").unwrap()).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"stream": false, "tools": [{"a":1}, 2], "temperature": 0.2, "model": "other"})
        );
    }
}
