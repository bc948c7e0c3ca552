//! Server-sent events on a byte stream, parsed by the `sse-stream` crate (the SSE decoder of
//! the official MCP SDK: memchr line scanning, no copies of the pending buffer).
//!
//! Lines that are not SSE fields (garbage, keep-alive comments such as OpenRouter's
//! `: OPENROUTER PROCESSING`) are skipped as the SSE specification says; an event cut off by the
//! end of the stream is dropped, and the protocol notices that its terminal event never came.

use bytes::Bytes;
use futures::{Stream, StreamExt};
use llm_tools_core::{ProviderError, ProviderErrorKind};
use sse_stream::{Error as SseError, SseByteStream};

/// One server-sent event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SseEvent {
    /// The `event:` name; `None` when the server gave none (which SSE reads as `message`).
    pub event: Option<String>,
    /// The `data:` lines, joined with newlines.
    pub data: String,
}

/// Parses a byte stream into events (blocks without data, such as keep-alive comments, are
/// skipped). Transport errors pass through; a field that is not UTF-8 is a `Decode` error.
///
/// ```
/// # futures::executor::block_on(async {
/// use bytes::Bytes;
/// use futures::StreamExt;
/// use llm_tools_providers::sse;
///
/// let chunks = vec![Ok(Bytes::from("data: {\"a\"")), Ok(Bytes::from(":1}\n\nnoise\ndata: [DONE]\n\n"))];
/// let events: Vec<_> = sse::events("test", futures::stream::iter(chunks)).collect().await;
/// assert_eq!(events[0].as_ref().unwrap().data, r#"{"a":1}"#);
/// assert_eq!(events[1].as_ref().unwrap().data, "[DONE]");
/// # });
/// ```
pub fn events<S>(
    name: &str,
    bytes: S,
) -> impl Stream<Item = Result<SseEvent, ProviderError>> + Send + use<S>
where
    S: Stream<Item = Result<Bytes, ProviderError>> + Send,
{
    let name = name.to_owned();
    SseByteStream::new(bytes).filter_map(move |item| {
        let out = match item {
            Ok(block) => block.data.map(|data| {
                Ok(SseEvent {
                    event: block.event,
                    data,
                })
            }),
            Err(SseError::Body(e)) => Some(Err(match e.downcast::<ProviderError>() {
                Ok(provider) => *provider,
                Err(other) => ProviderError::new(
                    &name,
                    ProviderErrorKind::Stream,
                    format!("the stream broke off: {other}"),
                ),
            })),
            Err(e) => Some(Err(ProviderError::new(
                &name,
                ProviderErrorKind::Decode,
                format!("the event stream cannot be read: {e}"),
            ))),
        };
        futures::future::ready(out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(chunks: Vec<&'static str>) -> Vec<Result<SseEvent, ProviderError>> {
        let stream = futures::stream::iter(
            chunks
                .into_iter()
                .map(|c| Ok::<_, ProviderError>(Bytes::from(c))),
        );
        futures::executor::block_on(events("t", stream).collect())
    }

    #[test]
    fn events_split_anywhere_reassemble() {
        let body = "event: response.created\ndata: {\"x\":\"é\"}\n\ndata: two\ndata: lines\r\n\r\n";
        let bytes = body.as_bytes();
        for cut in 1..bytes.len() {
            let (a, b) = bytes.split_at(cut);
            let stream = futures::stream::iter(vec![
                Ok::<_, ProviderError>(Bytes::copy_from_slice(a)),
                Ok(Bytes::copy_from_slice(b)),
            ]);
            let got: Vec<_> = futures::executor::block_on(events("t", stream).collect());
            let got: Vec<SseEvent> = got.into_iter().map(Result::unwrap).collect();
            assert_eq!(got.len(), 2, "cut at {cut}");
            assert_eq!(got[0].event.as_deref(), Some("response.created"));
            assert_eq!(got[0].data, "{\"x\":\"é\"}");
            assert_eq!(got[1].event, None);
            assert_eq!(got[1].data, "two\nlines");
        }
    }

    #[test]
    fn garbage_and_comment_lines_are_skipped() {
        let got = collect(vec![
            ": OPENROUTER PROCESSING\n\nthis is not sse\n{\"broken\n",
            "data: ok\n\nretry: soon\nid\n\n",
        ]);
        let got: Vec<SseEvent> = got.into_iter().map(Result::unwrap).collect();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].data, "ok");
    }

    #[test]
    fn an_event_cut_by_the_end_of_the_stream_is_dropped() {
        let got = collect(vec!["data: first\n\ndata: {\"half"]);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].as_ref().unwrap().data, "first");
    }

    #[test]
    fn transport_errors_pass_through() {
        let stream = futures::stream::iter(vec![
            Ok(Bytes::from("data: a\n\n")),
            Err(ProviderError::new("t", ProviderErrorKind::Stream, "cut")),
        ]);
        let got: Vec<_> = futures::executor::block_on(events("t", stream).collect());
        assert_eq!(got.len(), 2);
        assert_eq!(got[1].as_ref().unwrap_err().message(), "cut");
    }
}
