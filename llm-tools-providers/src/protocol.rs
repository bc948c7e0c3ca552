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
//! /// A service that answers `{"text": …}` to `{"prompt": …}`, streaming one text per line;
//! /// its configuration is the endpoint's settings.
//! struct Echo {
//!     settings: HttpSettings,
//! }
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
//!     type Config = HttpSettings;
//!     type Assembler = EchoStream;
//!     const ID: &'static str = "echo";
//!     fn open(settings: HttpSettings) -> Result<(Self, HttpClient), llm_tools_core::Error> {
//!         let http = HttpClient::new(settings.clone())?;
//!         Ok((Echo { settings }, http))
//!     }
//!     fn config(&self) -> &HttpSettings { &self.settings }
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
//! let provider = HttpProvider::<Echo>::new(HttpSettings::new("echo", "http://127.0.0.1:9/v1")).unwrap();
//! assert_eq!(provider.config().base_url, "http://127.0.0.1:9/v1");
//! let answer = provider.parse_response(br#"{"text":"hi"}"#, &[]).unwrap();
//! assert_eq!(answer.message.text(), "hi");
//! ```
//!
//! # Adding a protocol
//!
//! Cohere (`src/cohere/`) is the smallest complete protocol to copy; Ollama shows another
//! framing (NDJSON), Bedrock a signed one with its own paths.
//!
//! 1. **Files**, in `src/<name>/`:
//!    - `mod.rs`: the module doc (what it speaks, with a `no_run` example), the protocol struct
//!      holding its configuration, `pub type <Name> = HttpProvider<<Struct>>`, and
//!      `impl Protocol`: `type Config`, `const ID` (from [`ids`]), `open` (the client, with
//!      any signer or headers the protocol adds), `config`, `model`, `path`, `body`, `parse`,
//!      `assembler`, and `framing` unless it is SSE. `impl StreamInBody` when its streamed
//!      requests have a body of their own; [`HttpProvider`] then gives the provider `new`,
//!      `config` and `request_body` (never write them again per protocol).
//!    - `config.rs`: `pub type <Name>Config = ProviderConfig<<Name>Options>`
//!      ([`ProviderConfig`](crate::config::ProviderConfig)), its presets and options.
//!    - `request.rs`: `PROTOCOL` (the id again, for the provider data it writes and reads back)
//!      and `body`: tool definitions through `wire::definition`, structured output through
//!      `wire::output::format`, provider tools through `wire::provider_tools::definitions`.
//!      The protocol's own field shapes (its output field, its provider tools) live here, never
//!      in `src/wire/`, which names no provider.
//!    - `response.rs` (a whole answer), `stream.rs` (its [`Assembler`]), `errors.rs` where the
//!      vendor has an error format of its own, `canonical.rs` (`canonical_request`, for the
//!      fixture tests).
//!    - A schema dialect in `src/schema/<name>.rs` if the vendor's differs from those there.
//! 2. **The id**: a new constant in [`ids`] and its line in the `ids_never_change` test. An id
//!    is stored in saved chats: pick it once, never change or reuse one.
//! 3. **Features**: `<name> = ["_protocol", …]` in `Cargo.toml` (with a comment; `_protocol` is
//!    the private feature that builds the shared code), `#[cfg(feature = "<name>")] pub mod
//!    <name>;` and its line in the crate doc in `lib.rs`, the feature in the `all(…)` of
//!    `src/wire/mod.rs`, in the loop of `scripts/check-docs.sh`, and in the feature lists of
//!    `tests/Cargo.toml` and `examples/Cargo.toml`.
//! 4. **Fixtures**: real traffic recorded with [`Recorder`](crate::record::Recorder) into
//!    `tests/fixtures/recorded/<protocol>/` (and `<protocol>-errors/` for error answers), in
//!    the format `tests/fixtures/README.md` describes.
//! 5. **Tests to copy** (in `tests/tests/providers/`, each a module of that test binary): `cohere_fixtures.rs` (every recording replayed
//!    through the real provider and the chat loop), `cohere_mapping.rs` (request bodies),
//!    `bedrock_errors.rs` or `gemini_errors.rs` (error mapping); add the protocol's cases to
//!    `provider_tools.rs` and `structured_output.rs`; a benchmark beside
//!    `benches/bedrock_cohere_ollama.rs` (with its `required-features`).

use std::borrow::Cow;
use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;

use bytes::Bytes;
use futures::Stream;
use llm_tools_core::json_values::too_many_values;
use llm_tools_core::{
    BoxFuture, EventStream, Provider, ProviderError, Request, Response, StreamEvent, Tool,
};
use serde_json::{Map, Value};

use crate::framing::{Deframer, Frame, Framing};
use crate::http::client_secrets::ClientSecrets;
use crate::http::{HttpClient, HttpResponse};

/// The ids of the crate's protocols ([`Protocol::ID`]), all in one table.
///
/// An id is what [`Provider::protocol`] reports, the key of the provider data a protocol keeps
/// in messages (reasoning items, thinking blocks, the shape of an answer to send back), and
/// what a raw provider tool is addressed to (`ProviderTool::raw`). Saved chats store those
/// messages with their ids, and a protocol reads back only the data under its own id, so **an
/// id never changes**, not even to make the table consistent (`openai-chat` beside
/// `bedrock.converse`): a changed id would silently drop what every stored chat kept for that
/// protocol. A new protocol adds a new id here (and to the test below).
pub mod ids {
    /// OpenAI's Responses API (`OpenAiResponses`).
    pub const OPENAI_RESPONSES: &str = "openai-responses";
    /// OpenAI's Chat Completions and the compatible endpoints (`OpenAiChat`).
    pub const OPENAI_CHAT: &str = "openai-chat";
    /// Anthropic Messages (`Anthropic`).
    pub const ANTHROPIC: &str = "anthropic";
    /// Gemini's `generateContent` (`Gemini`).
    pub const GEMINI: &str = "gemini";
    /// Amazon Bedrock's Converse (`Bedrock`).
    pub const BEDROCK_CONVERSE: &str = "bedrock.converse";
    /// Cohere's v2 chat (`Cohere`).
    pub const COHERE: &str = "cohere";
    /// Ollama's native `/api/chat` (`Ollama`).
    pub const OLLAMA: &str = "ollama";

    #[cfg(test)]
    mod tests {
        use super::*;

        /// Stored chats key provider data by these exact strings: this test is the reminder
        /// that changing one breaks every chat saved before.
        #[test]
        fn ids_never_change() {
            assert_eq!(OPENAI_RESPONSES, "openai-responses");
            assert_eq!(OPENAI_CHAT, "openai-chat");
            assert_eq!(ANTHROPIC, "anthropic");
            assert_eq!(GEMINI, "gemini");
            assert_eq!(BEDROCK_CONVERSE, "bedrock.converse");
            assert_eq!(COHERE, "cohere");
            assert_eq!(OLLAMA, "ollama");
        }

        #[test]
        fn ids_are_distinct() {
            let all = [
                OPENAI_RESPONSES,
                OPENAI_CHAT,
                ANTHROPIC,
                GEMINI,
                BEDROCK_CONVERSE,
                COHERE,
                OLLAMA,
            ];
            for (i, a) in all.iter().enumerate() {
                for b in &all[i + 1..] {
                    assert_ne!(a, b);
                }
            }
        }
    }
}

/// The params of an output limit of `tokens` at `path` in the body (`["generationConfig",
/// "maxOutputTokens"]` is `{"generationConfig": {"maxOutputTokens": tokens}}`), for
/// [`Protocol::output_limit`].
#[cfg(feature = "_protocol")]
pub(crate) fn output_limit_at(path: &[&str], tokens: u32) -> Map<String, Value> {
    let mut params = Map::new();
    let mut keys = path.iter().rev();
    if let Some(innermost) = keys.next() {
        params.insert((*innermost).to_owned(), Value::from(tokens));
    }
    for key in keys {
        let mut outer = Map::new();
        outer.insert((*key).to_owned(), Value::Object(params));
        params = outer;
    }
    params
}

/// One wire protocol: where a request goes, how its body is written and how the answer is
/// read, whole or streamed. [`HttpProvider`] sends and receives for it.
pub trait Protocol: Send + Sync + Sized + 'static {
    /// What a provider of this protocol is made from ([`HttpProvider::new`]): `OpenAiConfig`,
    /// `AnthropicConfig`, … for the crate's own protocols.
    type Config;

    /// Reassembles one streamed answer.
    type Assembler: Assembler + Unpin;

    /// The protocol's id: its name as [`Provider::protocol`] reports it, and the key of the
    /// provider data it keeps in messages (which saved chats store, so an id never changes:
    /// the crate's own are in [`ids`]).
    const ID: &'static str;

    /// This protocol for `config`, and the client it sends through; a missing API key or
    /// credentials, or an invalid header, is an error here, before any request.
    fn open(config: Self::Config) -> Result<(Self, HttpClient), llm_tools_core::Error>;

    /// The configuration it was opened with.
    fn config(&self) -> &Self::Config;

    /// The protocol's name, as [`Provider::protocol`] reports it (default: [`Self::ID`]).
    fn protocol(&self) -> &str {
        Self::ID
    }

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

    /// The request params that hold one answer to at most `tokens` output tokens (see
    /// [`Provider::output_limit`]); `None` (the default) when the protocol has no such field.
    fn output_limit(&self, tokens: u32) -> Option<Map<String, Value>> {
        let _ = tokens;
        None
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
    ) -> BoxFuture<'a, Result<Response, ProviderError>> {
        exchange(provider, request)
    }

    /// One streamed turn: by default one exchange ([`HttpProvider::send_streaming`]).
    fn stream<'a>(
        provider: &'a HttpProvider<Self>,
        request: Request<'a>,
    ) -> BoxFuture<'a, Result<EventStream<'a>, ProviderError>> {
        exchange_streaming(provider, request)
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
    /// The provider for a configuration (`OpenAiConfig`, `AnthropicConfig`, …); a missing API
    /// key or credentials where the endpoint needs them, or an invalid header, is an
    /// [`Error::InvalidConfig`](llm_tools_core::Error::InvalidConfig) or a request error,
    /// before any request.
    pub fn new(config: P::Config) -> Result<Self, llm_tools_core::Error> {
        let (protocol, http) = P::open(config)?;
        Ok(Self::from_parts(protocol, http))
    }

    /// The provider of `protocol` over `http`.
    pub fn from_parts(protocol: P, http: HttpClient) -> Self {
        Self { protocol, http }
    }

    /// The configuration.
    pub fn config(&self) -> &P::Config {
        self.protocol.config()
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
        exchange(self, request).await
    }

    /// Parses a whole answer once its JSON values are counted: one past
    /// [`MAX_JSON_VALUES`](llm_tools_core::json_values::MAX_JSON_VALUES) is refused unparsed
    /// ([`HttpLimit::JsonValues`](crate::http::HttpLimit::JsonValues)), whatever the protocol.
    fn parse_counted(
        &self,
        body: &[u8],
        names: &NameMap,
        request_id: Option<String>,
    ) -> Result<Response, ProviderError> {
        if let Some(count) = too_many_values(body) {
            return Err(crate::http::limits::too_many_json_values(
                self.http.name(),
                count,
            ));
        }
        // The answer's own error (an `error` object in place of the content) may quote the
        // request.
        self.protocol
            .parse(self.http.name(), body, names, request_id)
            .map_err(|e| self.http.without_secrets(e))
    }

    /// Sends one request and streams the answer (one exchange).
    pub async fn send_streaming<'s>(
        &self,
        request: Request<'_>,
    ) -> Result<EventStream<'s>, ProviderError> {
        exchange_streaming(self, request).await
    }

    /// Reads a whole answer body as this provider does, for a request with `tools` (for
    /// tests, benchmarks and tools that look at traffic).
    pub fn parse_response(
        &self,
        body: &[u8],
        tools: &[Arc<dyn Tool>],
    ) -> Result<Response, ProviderError> {
        self.parse_counted(body, &NameMap::new(tools), None)
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
            self.http.client_secrets(),
        )
    }
}

/// A protocol whose streamed requests have a body of their own (a `stream` field): its
/// provider's [`request_body`](HttpProvider::request_body) takes `stream`. (Gemini and Bedrock
/// stream from another path with the same body; their `request_body` takes the request alone.)
pub trait StreamInBody: Protocol {}

impl<P: StreamInBody> HttpProvider<P> {
    /// The request body this provider would send (for inspection and benchmarks).
    pub fn request_body(
        &self,
        request: &Request<'_>,
        stream: bool,
    ) -> Result<Vec<u8>, ProviderError> {
        self.protocol.body(request, stream)
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

    fn output_limit(&self, tokens: u32) -> Option<Map<String, Value>> {
        self.protocol.output_limit(tokens)
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

/// What an exchange needs of its provider: the client, and the protocol's writing of the
/// request and reading of the answer. Object-safe, so that [`exchange`] and
/// [`exchange_streaming`] are plain functions, compiled once in this crate whatever the
/// protocol and whichever crate makes the provider (a generic async body is compiled in every
/// crate that polls it).
trait Exchanges: Send + Sync {
    fn client(&self) -> &HttpClient;

    /// The request's body, the map of its tools' names on the wire, and the path it goes to.
    fn prepare(
        &self,
        request: &Request<'_>,
        stream: bool,
    ) -> Result<(Vec<u8>, NameMap, &str), ProviderError>;

    /// The framing of a streamed answer.
    fn framing(&self) -> Framing;

    /// A whole answer, parsed once its JSON values are counted.
    fn read_answer(
        &self,
        body: &[u8],
        names: &NameMap,
        request_id: Option<String>,
    ) -> Result<Response, ProviderError>;

    /// A streamed answer in `framing`, reassembled as its frames come.
    fn stream_answer(
        &self,
        answer: HttpResponse,
        names: NameMap,
        framing: Framing,
    ) -> EventStream<'static>;
}

impl<P: Protocol> Exchanges for HttpProvider<P> {
    fn client(&self) -> &HttpClient {
        &self.http
    }

    fn prepare(
        &self,
        request: &Request<'_>,
        stream: bool,
    ) -> Result<(Vec<u8>, NameMap, &str), ProviderError> {
        let body = self.protocol.body(request, stream)?;
        let names =
            NameMap::new(request.tools).with_answer_tool(self.protocol.answer_tool(request));
        Ok((body, names, self.protocol.path(stream)))
    }

    fn framing(&self) -> Framing {
        self.protocol.framing()
    }

    fn read_answer(
        &self,
        body: &[u8],
        names: &NameMap,
        request_id: Option<String>,
    ) -> Result<Response, ProviderError> {
        self.parse_counted(body, names, request_id)
    }

    fn stream_answer(
        &self,
        answer: HttpResponse,
        names: NameMap,
        framing: Framing,
    ) -> EventStream<'static> {
        let request_id = answer.request_id().map(str::to_owned);
        let assembler = self.protocol.assembler(self.http.name(), names, request_id);
        assemble(
            self.http.name(),
            framing,
            self.http.max_event_bytes(),
            answer.byte_stream(),
            assembler,
            self.http.client_secrets(),
        )
    }
}

/// One exchange: the request written (when first polled), sent with its retries, and its
/// whole answer read.
#[inline(never)]
fn exchange<'a>(
    provider: &'a dyn Exchanges,
    request: Request<'a>,
) -> BoxFuture<'a, Result<Response, ProviderError>> {
    Box::pin(async move {
        let (body, names, path) = provider.prepare(&request, false)?;
        let answer = provider.client().post_json_now(path, body, None).await?;
        let request_id = answer.request_id().map(str::to_owned);
        let bytes = answer.bytes_now().await?;
        provider.read_answer(&bytes, &names, request_id)
    })
}

/// One exchange whose answer streams: the request written (when first polled) and sent, and
/// its answer reassembled as it comes.
#[inline(never)]
fn exchange_streaming<'a, 's>(
    provider: &'a dyn Exchanges,
    request: Request<'a>,
) -> BoxFuture<'a, Result<EventStream<'s>, ProviderError>> {
    Box::pin(async move {
        let (body, names, path) = provider.prepare(&request, true)?;
        let framing = provider.framing();
        let answer = provider
            .client()
            .post_json_now(path, body, Some(framing))
            .await?;
        Ok(provider.stream_answer(answer, names, framing) as EventStream<'s>)
    })
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
    ///
    /// An owned name (`String`) is kept as the tool's name when it is one already, so a name
    /// the answer's reading had to copy anyway is not copied again.
    pub fn resolve<'w>(&self, wire: impl Into<Cow<'w, str>>) -> (String, Option<String>) {
        let wire = wire.into();
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
            None => (wire.into_owned(), None),
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
    /// What the stream's errors must not show (a provider's `error` event may quote the
    /// request).
    secrets: Arc<ClientSecrets>,
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
                frame.and_then(|frame| {
                    // An event is counted before any assembler parses it (only a long one is).
                    if let Some(count) = too_many_values(frame.data.as_bytes()) {
                        return Err(crate::http::limits::too_many_json_values(&d.name, count));
                    }
                    d.assembler.feed(&frame, &mut d.queue)
                })
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
                return Poll::Ready(Some(Err(d.secrets.redact(e))));
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
    secrets: Arc<ClientSecrets>,
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
        secrets,
        drained: false,
        ended: false,
    })
}
