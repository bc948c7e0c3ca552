//! The seam every wire protocol implements, and the one provider shell around it.
//!
//! A protocol says where a request goes, how its body is written, how an answer is read whole,
//! and how a streamed answer is reassembled from [`Frame`]s ([`Protocol`], [`Assembler`]); the
//! shell, [`HttpProvider`], does the rest for every protocol alike: the HTTP client with its
//! auth, signing, retries and recording, the framing of the stream, the mapping of namespaced
//! tool names ([`NameMap`]), and the [`Provider`] implementation the chat calls. Every provider
//! of this crate is this shell around its protocol (`OpenAiResponses` is
//! `HttpProvider<ResponsesApi>`, `Gemini` is `HttpProvider<GenerateContent>`, …), and a protocol
//! written outside the crate gets the same shell:
//!
//! ```
//! use std::collections::VecDeque;
//! use llm_tools_core::{Message, ProviderError, Request, Response, StreamEvent};
//! use llm_tools_providers::framing::{Frame, Framing};
//! use llm_tools_providers::http::{HttpClient, HttpSettings};
//! use llm_tools_providers::protocol::{Assembler, HttpProvider, NameMap, Protocol};
//!
//! /// A service that answers `{"text": …}` to `{"prompt": …}`, streaming one text per line.
//! struct Echo;
//!
//! struct EchoStream(String, bool);
//!
//! impl Assembler for EchoStream {
//!     fn feed(&mut self, frame: &Frame<'_>, out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
//!         if frame.data == "[END]" {
//!             self.1 = true;
//!         } else {
//!             self.0.push_str(&frame.data);
//!             out.push_back(StreamEvent::TextDelta(frame.data.to_string()));
//!         }
//!         Ok(())
//!     }
//!     fn is_finished(&self) -> bool {
//!         self.1
//!     }
//!     fn end(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
//!         let text = std::mem::take(&mut self.0);
//!         out.push_back(StreamEvent::Completed(Box::new(Response::new(Message::assistant(text)))));
//!         Ok(())
//!     }
//! }
//!
//! impl Protocol for Echo {
//!     type Assembler = EchoStream;
//!     fn protocol(&self) -> &str { "echo" }
//!     fn model(&self) -> &str { "echo-1" }
//!     fn framing(&self) -> Framing { Framing::Ndjson }
//!     fn path(&self, _stream: bool) -> &str { "/echo" }
//!     fn body(&self, request: &Request<'_>, _stream: bool) -> Result<Vec<u8>, ProviderError> {
//!         let prompt = request.messages.last().map(Message::text).unwrap_or_default();
//!         Ok(serde_json::to_vec(&serde_json::json!({ "prompt": prompt })).unwrap_or_default())
//!     }
//!     fn parse(&self, name: &str, body: &[u8], _: &NameMap, _: Option<String>) -> Result<Response, ProviderError> {
//!         let v: serde_json::Value = serde_json::from_slice(body)
//!             .map_err(|e| ProviderError::new(name, llm_tools_core::ProviderErrorKind::Decode, e.to_string()))?;
//!         Ok(Response::new(Message::assistant(v["text"].as_str().unwrap_or_default())))
//!     }
//!     fn assembler(&self, _: &str, _: NameMap, _: Option<String>) -> EchoStream {
//!         EchoStream(String::new(), false)
//!     }
//! }
//!
//! let http = HttpClient::new(HttpSettings::new("echo", "http://127.0.0.1:9/v1")).unwrap();
//! let provider = HttpProvider::from_parts(Echo, http);
//! let answer = provider.parse_response(br#"{"text":"hi"}"#, &[]).unwrap();
//! assert_eq!(answer.message.text(), "hi");
//! ```

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;

use bytes::Bytes;
use futures::Stream;
use llm_tools_core::{
    BoxFuture, EventStream, Provider, ProviderError, Request, Response, StreamEvent, Tool,
};

use crate::framing::{Deframer, Frame, Framing};
use crate::http::HttpClient;

/// One wire protocol: where a request goes, how its body is written and how the answer is
/// read, whole or streamed. [`HttpProvider`] sends and receives for it.
pub trait Protocol: Send + Sync + 'static {
    /// Reassembles one streamed answer.
    type Assembler: Assembler + Unpin;

    /// The protocol's name, as [`Provider::protocol`] reports it (`openai.responses`).
    fn protocol(&self) -> &str;

    /// The model requests go to.
    fn model(&self) -> &str;

    /// How a streamed answer is framed (default: server-sent events).
    fn framing(&self) -> Framing {
        Framing::Sse
    }

    /// Whether the provider searches deferred tools itself (see
    /// [`Provider::native_tool_search`]).
    fn native_tool_search(&self) -> bool {
        false
    }

    /// The tool a structured answer comes through, for a protocol that asks for structured
    /// output by forcing a tool call (Anthropic on models without structured output): a call
    /// of it in the answer is the answer's text, not a call to run. `None` (the default)
    /// otherwise.
    fn answer_tool(&self, request: &Request<'_>) -> Option<&'static str> {
        let _ = request;
        None
    }

    /// The path, after the base URL, a request is posted to.
    fn path(&self, stream: bool) -> &str;

    /// Writes the request body.
    fn body(&self, request: &Request<'_>, stream: bool) -> Result<Vec<u8>, ProviderError>;

    /// Reads a whole answer; `name` is the endpoint's name, for errors.
    fn parse(
        &self,
        name: &str,
        body: &[u8],
        names: &NameMap,
        request_id: Option<String>,
    ) -> Result<Response, ProviderError>;

    /// The assembler of one streamed answer.
    fn assembler(&self, name: &str, names: NameMap, request_id: Option<String>) -> Self::Assembler;

    /// One whole turn: by default one exchange ([`HttpProvider::send`]); a protocol whose
    /// server can pause a turn sends again from here.
    fn complete<'a>(
        provider: &'a HttpProvider<Self>,
        request: Request<'a>,
    ) -> BoxFuture<'a, Result<Response, ProviderError>>
    where
        Self: Sized,
    {
        Box::pin(provider.send(request))
    }

    /// One streamed turn: by default one exchange ([`HttpProvider::send_streaming`]).
    fn stream<'a>(
        provider: &'a HttpProvider<Self>,
        request: Request<'a>,
    ) -> BoxFuture<'a, Result<EventStream<'a>, ProviderError>>
    where
        Self: Sized,
    {
        Box::pin(provider.send_streaming(request))
    }
}

/// Turns the frames of one streamed answer into [`StreamEvent`]s, ending with
/// [`StreamEvent::Completed`].
pub trait Assembler: Send + 'static {
    /// Handles one frame; pushes what it produced.
    fn feed(
        &mut self,
        frame: &Frame<'_>,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), ProviderError>;

    /// Whether the terminal frame arrived (later frames are ignored).
    fn is_finished(&self) -> bool;

    /// The stream ended: pushes the completed answer, or fails if it was cut short.
    fn end(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError>;
}

/// A provider: a [`Protocol`] and the [`HttpClient`] it sends through.
#[derive(Clone)]
pub struct HttpProvider<P> {
    protocol: P,
    http: HttpClient,
}

impl<P: fmt::Debug> fmt::Debug for HttpProvider<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpProvider")
            .field("protocol", &self.protocol)
            .field("http", &self.http)
            .finish()
    }
}

impl<P: Protocol> HttpProvider<P> {
    /// The provider of `protocol` over `http`.
    pub fn from_parts(protocol: P, http: HttpClient) -> Self {
        Self { protocol, http }
    }

    /// The protocol.
    pub fn wire(&self) -> &P {
        &self.protocol
    }

    /// The HTTP client.
    pub fn http(&self) -> &HttpClient {
        &self.http
    }

    /// Sends one request and reads the whole answer (one exchange, retries included).
    pub async fn send(&self, request: Request<'_>) -> Result<Response, ProviderError> {
        let body = self.protocol.body(&request, false)?;
        let names =
            NameMap::new(request.tools).with_answer_tool(self.protocol.answer_tool(&request));
        let answer = self
            .http
            .post_json(self.protocol.path(false), body, None)
            .await?;
        let request_id = answer.request_id().map(str::to_owned);
        let bytes = answer.bytes().await?;
        self.protocol
            .parse(self.http.name(), &bytes, &names, request_id)
    }

    /// Sends one request and streams the answer (one exchange).
    pub async fn send_streaming<'s>(
        &self,
        request: Request<'_>,
    ) -> Result<EventStream<'s>, ProviderError> {
        let body = self.protocol.body(&request, true)?;
        let names =
            NameMap::new(request.tools).with_answer_tool(self.protocol.answer_tool(&request));
        let framing = self.protocol.framing();
        let answer = self
            .http
            .post_json(self.protocol.path(true), body, Some(framing))
            .await?;
        let request_id = answer.request_id().map(str::to_owned);
        let assembler = self.protocol.assembler(self.http.name(), names, request_id);
        Ok(assemble(
            self.http.name(),
            framing,
            self.http.max_event_bytes(),
            answer.byte_stream(),
            assembler,
        ))
    }

    /// Reads a whole answer body as this provider does, for a request with `tools` (for
    /// tests, benchmarks and tools that look at traffic).
    pub fn parse_response(
        &self,
        body: &[u8],
        tools: &[Arc<dyn Tool>],
    ) -> Result<Response, ProviderError> {
        self.protocol
            .parse(self.http.name(), body, &NameMap::new(tools), None)
    }

    /// Reassembles a streamed answer (its raw bytes, in the protocol's framing) as this
    /// provider does, for a request with `tools`.
    pub fn stream_events<S>(&self, bytes: S, tools: &[Arc<dyn Tool>]) -> EventStream<'static>
    where
        S: Stream<Item = Result<Bytes, ProviderError>> + Send + 'static,
    {
        let assembler = self
            .protocol
            .assembler(self.http.name(), NameMap::new(tools), None);
        assemble(
            self.http.name(),
            self.protocol.framing(),
            self.http.max_event_bytes(),
            bytes,
            assembler,
        )
    }
}

impl<P: Protocol> Provider for HttpProvider<P> {
    fn protocol(&self) -> &str {
        self.protocol.protocol()
    }

    fn model(&self) -> &str {
        self.protocol.model()
    }

    fn native_tool_search(&self) -> bool {
        self.protocol.native_tool_search()
    }

    fn complete<'a>(
        &'a self,
        request: Request<'a>,
    ) -> BoxFuture<'a, Result<Response, ProviderError>> {
        P::complete(self, request)
    }

    fn stream<'a>(
        &'a self,
        request: Request<'a>,
    ) -> BoxFuture<'a, Result<EventStream<'a>, ProviderError>> {
        P::stream(self, request)
    }
}

/// The tools of a request, to map names on the wire back to (namespace, name). Only tools in a
/// namespace need mapping (a tool without one is called by its own name), and they are shared,
/// not copied: for tools without namespaces, building one per request allocates nothing.
#[derive(Clone, Default)]
pub struct NameMap {
    tools: Vec<Arc<dyn Tool>>,
    answer_tool: Option<&'static str>,
}

impl NameMap {
    /// The map of a request's tools.
    pub fn new(tools: &[Arc<dyn Tool>]) -> Self {
        Self {
            tools: tools
                .iter()
                .filter(|t| t.spec().namespace().is_some())
                .cloned()
                .collect(),
            answer_tool: None,
        }
    }

    /// Sets the tool a structured answer comes through ([`Protocol::answer_tool`]).
    #[must_use]
    pub fn with_answer_tool(mut self, tool: Option<&'static str>) -> Self {
        self.answer_tool = tool;
        self
    }

    /// The tool a structured answer comes through, when the request forced one.
    pub fn answer_tool(&self) -> Option<&'static str> {
        self.answer_tool
    }

    /// A joined name from the wire (`crm__find_customer`): the tool's own name and namespace,
    /// or the name as it came when no tool has it (the chat reports unknown tools).
    pub fn resolve(&self, wire: &str) -> (String, Option<String>) {
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

impl fmt::Debug for NameMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.tools.iter().map(|t| t.spec().joined_name()))
            .finish()
    }
}

/// Reads a byte stream into frames and feeds them to an assembler, each frame borrowed from
/// the deframer's buffer.
struct Driver<B, A> {
    bytes: std::pin::Pin<Box<B>>,
    deframer: Deframer,
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
            } else if let Some(frame) = d.deframer.next_frame(&d.name) {
                frame.and_then(|frame| d.assembler.feed(&frame, &mut d.queue))
            } else if d.drained {
                d.ended = true;
                d.assembler.end(&mut d.queue)
            } else {
                match d.bytes.as_mut().poll_next(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Some(Ok(chunk))) => {
                        d.deframer.push(&chunk);
                        Ok(())
                    }
                    Poll::Ready(Some(Err(e))) => {
                        d.drained = true;
                        Err(e)
                    }
                    Poll::Ready(None) => {
                        d.drained = true;
                        d.deframer.end();
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

/// Drives an assembler over a byte stream in `framing`, frames of at most `max_event_bytes`.
pub(crate) fn assemble<B, A>(
    name: &str,
    framing: Framing,
    max_event_bytes: usize,
    bytes: B,
    assembler: A,
) -> EventStream<'static>
where
    B: Stream<Item = Result<Bytes, ProviderError>> + Send + 'static,
    A: Assembler + Unpin,
{
    Box::pin(Driver {
        bytes: Box::pin(bytes),
        deframer: Deframer::new(framing, max_event_bytes),
        name: name.to_owned(),
        assembler,
        queue: VecDeque::new(),
        drained: false,
        ended: false,
    })
}
