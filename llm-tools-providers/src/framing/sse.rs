//! Server-sent events ([`Framing::Sse`](super::Framing::Sse)) on a byte stream, split where they arrive: the bytes of a stream are kept
//! in one buffer, lines are found with `memchr`, and an event's `data` is handed to the protocol
//! as a slice of that buffer (a copy is made only for an event of several `data` lines). The
//! splitting follows the SSE specification (WHATWG HTML §9.2.6): lines end in `\n`, `\r\n` or
//! `\r`; a blank line ends an event; `data:` lines are joined with newlines; one space after the
//! colon is dropped; a leading byte-order mark is skipped.
//!
//! Lines that are not SSE fields (garbage, keep-alive comments such as OpenRouter's
//! `: OPENROUTER PROCESSING`) are skipped as the specification says; an event cut off by the
//! end of the stream is dropped, and the protocol notices that its terminal event never came.
//!
//! The splitter is this crate's own rather than an SSE crate's because stream reassembly is a
//! hot path: handing each event over as a borrowed slice, with no `String` per event, is what
//! the SSE crates (which yield owned events) cannot do, and it measurably speeds up streaming.

use std::borrow::Cow;
use std::ops::Range;

use llm_tools_core::{ProviderError, ProviderErrorKind};

use super::Frame;

/// Splits the bytes of one stream into events.
#[derive(Debug, Default)]
pub(crate) struct Splitter {
    buf: Vec<u8>,
    /// Where the bytes not yet read as events start.
    pos: usize,
    /// Whether the start of the stream was checked for a byte-order mark.
    started: bool,
    /// Whether the stream has ended: a `\r` last in the buffer then ends its line.
    ended: bool,
}

impl Splitter {
    /// Adds the next bytes of the stream.
    pub(crate) fn push(&mut self, chunk: &[u8]) {
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.extend_from_slice(chunk);
        if !self.started && self.buf.len() >= 3 {
            self.started = true;
            if self.buf.starts_with(b"\xEF\xBB\xBF") {
                self.pos = 3;
            }
        }
    }

    /// The stream has ended: no more bytes come.
    pub(crate) fn end(&mut self) {
        self.ended = true;
    }

    /// The next complete event, or `None` until more bytes arrive. A field that is not UTF-8
    /// is a `Decode` error (the event is skipped).
    pub(crate) fn next_frame(&mut self, name: &str) -> Option<Result<Frame<'_>, ProviderError>> {
        if !self.started
            && self.buf.len() < 3
            && self.buf.starts_with(&b"\xEF\xBB\xBF"[..self.buf.len()])
        {
            // Could still be a byte-order mark: wait for its end.
            return None;
        }
        let buf = &self.buf;
        let mut at = self.pos;
        let mut event: Option<Range<usize>> = None;
        let mut data: Vec<Range<usize>> = Vec::new();
        loop {
            let rest = &buf[at..];
            let end = memchr::memchr2(b'\n', b'\r', rest)?;
            let line = at..at + end;
            let mut next = at + end + 1;
            if rest[end] == b'\r' {
                match buf.get(next) {
                    // A `\r` last in the buffer may be the first half of `\r\n`.
                    None if !self.ended => return None,
                    None => {}
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                }
            }
            at = next;
            if line.is_empty() {
                // A blank line ends the event; one without data is no event.
                self.pos = at;
                if data.is_empty() {
                    event = None;
                    continue;
                }
                return Some(build(name, &self.buf, event, &data));
            }
            let text = &buf[line.clone()];
            let (field, value) = match memchr::memchr(b':', text) {
                Some(colon) => {
                    let mut start = line.start + colon + 1;
                    if buf.get(start) == Some(&b' ') && start < line.end {
                        start += 1;
                    }
                    (&text[..colon], start..line.end)
                }
                None => (text, line.end..line.end),
            };
            match field {
                b"data" => data.push(value),
                b"event" => event = Some(value),
                _ => {}
            }
        }
    }
}

fn utf8<'a>(name: &str, bytes: &'a [u8]) -> Result<&'a str, ProviderError> {
    std::str::from_utf8(bytes).map_err(|e| {
        ProviderError::new(
            name,
            ProviderErrorKind::Decode,
            format!("the event stream cannot be read: a field is not UTF-8 ({e})"),
        )
    })
}

/// The event of `buf`'s ranges.
fn build<'a>(
    name: &str,
    buf: &'a [u8],
    event: Option<Range<usize>>,
    data: &[Range<usize>],
) -> Result<Frame<'a>, ProviderError> {
    let event = match event {
        Some(r) => Some(Cow::Borrowed(utf8(name, &buf[r])?)),
        None => None,
    };
    let data = match data {
        [one] => Cow::Borrowed(utf8(name, &buf[one.clone()])?),
        many => {
            let mut joined = String::with_capacity(many.iter().map(|r| r.len() + 1).sum());
            for (i, r) in many.iter().enumerate() {
                if i > 0 {
                    joined.push('\n');
                }
                joined.push_str(utf8(name, &buf[r.clone()])?);
            }
            Cow::Owned(joined)
        }
    };
    Ok(Frame {
        event,
        data,
        exception: false,
    })
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use futures::StreamExt;

    use super::*;
    use crate::framing::Framing;

    fn events<S>(
        name: &str,
        bytes: S,
    ) -> impl futures::Stream<Item = Result<Frame<'static>, ProviderError>>
    where
        S: futures::Stream<Item = Result<Bytes, ProviderError>> + Send,
    {
        crate::framing::frames(Framing::Sse, name, bytes)
    }

    fn collect(chunks: Vec<&'static str>) -> Vec<Result<Frame<'static>, ProviderError>> {
        let stream = futures::stream::iter(
            chunks
                .into_iter()
                .map(|c| Ok::<_, ProviderError>(Bytes::from(c))),
        );
        futures::executor::block_on(events("t", stream).collect())
    }

    /// The events of `body` sent in two chunks cut at `cut`.
    fn cut_in_two(body: &[u8], cut: usize) -> Vec<Frame<'static>> {
        let (a, b) = body.split_at(cut);
        let stream = futures::stream::iter(vec![
            Ok::<_, ProviderError>(Bytes::copy_from_slice(a)),
            Ok(Bytes::copy_from_slice(b)),
        ]);
        let got: Vec<_> = futures::executor::block_on(events("t", stream).collect());
        got.into_iter().map(Result::unwrap).collect()
    }

    #[test]
    fn events_split_anywhere_reassemble() {
        let body = "event: response.created\ndata: {\"x\":\"é\"}\n\ndata: two\ndata: lines\r\n\r\n";
        let bytes = body.as_bytes();
        for cut in 1..bytes.len() {
            let got = cut_in_two(bytes, cut);
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
        let got: Vec<Frame<'_>> = got.into_iter().map(Result::unwrap).collect();
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
    fn line_endings_bom_spaces_and_fields_follow_the_specification() {
        // CR and CRLF endings, a byte-order mark, no space or two after the colon, a field
        // without a colon, an `event:` without data, `id`/`retry` ignored.
        let body = "\u{feff}data:a\r\rdata:  two spaces\r\n\r\nevent: ping\n\nid: 7\nretry: 10\ndata\ndata: x\n\n";
        let bytes = body.as_bytes();
        for cut in 0..bytes.len() {
            let data: Vec<String> = cut_in_two(bytes, cut)
                .into_iter()
                .map(|e| e.data.into_owned())
                .collect();
            assert_eq!(data, ["a", " two spaces", "\nx"], "cut at {cut}");
        }
    }

    #[test]
    fn a_stream_ending_in_carriage_returns_ends_its_last_event() {
        let got = collect(vec!["data: a\r", "\r"]);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].as_ref().unwrap().data, "a");
    }

    #[test]
    fn a_field_that_is_not_utf8_is_a_decode_error() {
        let stream = futures::stream::iter(vec![Ok::<_, ProviderError>(Bytes::from_static(
            b"data: \xff\xfe\n\ndata: fine\n\n",
        ))]);
        let got: Vec<_> = futures::executor::block_on(events("t", stream).collect());
        assert_eq!(
            got[0].as_ref().unwrap_err().kind(),
            ProviderErrorKind::Decode
        );
        assert_eq!(got[1].as_ref().unwrap().data, "fine");
    }

    #[test]
    fn one_data_line_is_borrowed_from_the_buffer_and_several_are_joined() {
        let mut splitter = Splitter::default();
        splitter.push(b"data: one\n\ndata: a\ndata: b\n\n");
        let first = splitter.next_frame("t").unwrap().unwrap();
        assert!(matches!(first.data, Cow::Borrowed("one")));
        let second = splitter.next_frame("t").unwrap().unwrap();
        assert!(matches!(second.data, Cow::Owned(ref s) if s == "a\nb"));
        assert!(splitter.next_frame("t").is_none());
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
