//! Stream framing: how a provider's streamed answer is cut into frames before its protocol reads
//! them. A [`Framing`] names the format, and every framing yields the same [`Frame`] (an event
//! name, the data, whether it is an exception), so a protocol's stream assembler does not care
//! how its frames travelled:
//!
//! - [`Framing::Sse`]: server-sent events (OpenAI, Anthropic, Gemini, Cohere), see [`sse`];
//! - [`Framing::Ndjson`]: one JSON value per line (Ollama's native API);
//! - `Framing::AwsEventStream`: AWS's binary event-stream messages (Bedrock `ConverseStream`),
//!   with the cargo feature `event-stream`.
//!
//! Frames are handed to the protocol borrowed from the framing's buffer: no allocation per frame.
//!
//! Every framing scans each byte of the stream once, and keeps at most one frame's bytes while
//! it arrives, up to a limit (`max_event_bytes`, [`DEFAULT_MAX_EVENT_BYTES`](crate::http::DEFAULT_MAX_EVENT_BYTES)
//! by default, set on the provider's configuration): a frame that grows past it is a `Decode`
//! error with the code of [`HttpLimit::StreamEventBytes`](crate::http::HttpLimit::StreamEventBytes),
//! and the framing stops.
//!
//! Each protocol reads its frames' JSON leniently (the crate's `framing/lenient.rs`): into
//! structs of parts borrowed from the frame, as a `serde_json::Value` would be read (a key
//! missing or of another type than expected is nothing there, the last of a repeated key
//! counts), by a quick reader written for the JSON streams send (`framing/lenient/quick.rs`);
//! what it passes over is read again by `serde_json`, so what is accepted and refused as JSON is
//! `serde_json`'s.
//!
//! A frame whose data is not the JSON its protocol sends is skipped by the protocol (Ollama's
//! ends the stream at once), the first few logged; past
//! [`MAX_UNREADABLE_EVENTS`](crate::http::MAX_UNREADABLE_EVENTS) of them the stream ends with
//! [`HttpLimit::UnreadableEvents`](crate::http::HttpLimit::UnreadableEvents).
//!
//! ```
//! # futures::executor::block_on(async {
//! use bytes::Bytes;
//! use futures::StreamExt;
//! use llm_tools_providers::framing::{Framing, frames};
//!
//! let chunks = vec![Ok(Bytes::from("data: {\"a\"")), Ok(Bytes::from(":1}\n\nnoise\ndata: [DONE]\n\n"))];
//! let got: Vec<_> = frames(Framing::Sse, "test", futures::stream::iter(chunks)).collect().await;
//! assert_eq!(got[0].as_ref().unwrap().data, r#"{"a":1}"#);
//! assert_eq!(got[1].as_ref().unwrap().data, "[DONE]");
//!
//! let lines = vec![Ok(Bytes::from("{\"done\":false}\n{\"do")), Ok(Bytes::from("ne\":true}"))];
//! let got: Vec<_> = frames(Framing::Ndjson, "test", futures::stream::iter(lines)).collect().await;
//! assert_eq!(got[1].as_ref().unwrap().data, r#"{"done":true}"#);
//! # });
//! ```

#[cfg(feature = "event-stream")]
mod event_stream;
mod frame;
#[cfg(any(
    feature = "openai",
    feature = "anthropic",
    feature = "bedrock",
    feature = "cohere",
    feature = "gemini",
    feature = "ollama"
))]
#[cfg_attr(
    not(all(
        feature = "openai",
        feature = "anthropic",
        feature = "bedrock",
        feature = "cohere",
        feature = "gemini",
        feature = "ollama"
    )),
    allow(dead_code, unused_imports)
)]
pub(crate) mod lenient;
mod ndjson;
pub mod sse;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use llm_tools_core::ProviderError;

pub use frame::Frame;

/// How a streamed answer is framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Framing {
    /// Server-sent events (`text/event-stream`).
    Sse,
    /// Newline-delimited JSON (`application/x-ndjson`).
    Ndjson,
    /// AWS event-stream messages (`application/vnd.amazon.eventstream`).
    #[cfg(feature = "event-stream")]
    AwsEventStream,
}

impl Framing {
    /// The media type a streaming request asks for (its `accept` header).
    pub fn content_type(self) -> &'static str {
        match self {
            Self::Sse => "text/event-stream",
            Self::Ndjson => "application/x-ndjson",
            #[cfg(feature = "event-stream")]
            Self::AwsEventStream => "application/vnd.amazon.eventstream",
        }
    }
}

/// Cuts one stream's bytes into frames, in one of the framings.
#[derive(Debug)]
pub(crate) enum Deframer {
    Sse(sse::Splitter),
    Ndjson(ndjson::Splitter),
    #[cfg(feature = "event-stream")]
    AwsEventStream(Box<event_stream::Decoder>),
}

impl Deframer {
    /// A deframer for `framing` that keeps at most `max_event_bytes` of a frame while it
    /// arrives.
    pub(crate) fn new(framing: Framing, max_event_bytes: usize) -> Self {
        match framing {
            Framing::Sse => Self::Sse(sse::Splitter::new(max_event_bytes)),
            Framing::Ndjson => Self::Ndjson(ndjson::Splitter::new(max_event_bytes)),
            #[cfg(feature = "event-stream")]
            Framing::AwsEventStream => {
                Self::AwsEventStream(Box::new(event_stream::Decoder::new(max_event_bytes)))
            }
        }
    }

    /// Adds the next bytes of the stream.
    pub(crate) fn push(&mut self, chunk: &[u8]) {
        match self {
            Self::Sse(s) => s.push(chunk),
            Self::Ndjson(s) => s.push(chunk),
            #[cfg(feature = "event-stream")]
            Self::AwsEventStream(d) => d.push(chunk),
        }
    }

    /// The stream has ended: no more bytes come.
    pub(crate) fn end(&mut self) {
        match self {
            Self::Sse(s) => s.end(),
            Self::Ndjson(s) => s.end(),
            #[cfg(feature = "event-stream")]
            Self::AwsEventStream(d) => d.end(),
        }
    }

    /// The next complete frame, or `None` until more bytes arrive.
    pub(crate) fn next_frame(&mut self, name: &str) -> Option<Result<Frame<'_>, ProviderError>> {
        match self {
            Self::Sse(s) => s.next_frame(name),
            Self::Ndjson(s) => s.next_frame(name),
            #[cfg(feature = "event-stream")]
            Self::AwsEventStream(d) => d.next_frame(name),
        }
    }
}

/// Cuts a byte stream into owned frames (for tests and tools that look at traffic; the
/// protocols read borrowed frames). Transport errors pass through; a frame that cannot be read,
/// or that grows past [`DEFAULT_MAX_EVENT_BYTES`](crate::http::DEFAULT_MAX_EVENT_BYTES), is a
/// `Decode` error.
pub fn frames<S>(
    framing: Framing,
    name: &str,
    bytes: S,
) -> impl Stream<Item = Result<Frame<'static>, ProviderError>> + Send + use<S>
where
    S: Stream<Item = Result<Bytes, ProviderError>> + Send,
{
    let state = (
        Box::pin(bytes),
        Deframer::new(framing, crate::http::limits::DEFAULT_MAX_EVENT_BYTES),
        name.to_owned(),
        false,
    );
    futures::stream::unfold(
        state,
        |(mut bytes, mut deframer, name, mut ended)| async move {
            loop {
                if let Some(frame) = deframer.next_frame(&name) {
                    let frame = frame.map(Frame::into_owned);
                    return Some((frame, (bytes, deframer, name, ended)));
                }
                if ended {
                    return None;
                }
                match bytes.next().await {
                    Some(Ok(chunk)) => deframer.push(&chunk),
                    Some(Err(e)) => {
                        ended = true;
                        return Some((Err(e), (bytes, deframer, name, ended)));
                    }
                    None => {
                        ended = true;
                        deframer.end();
                    }
                }
            }
        },
    )
}
