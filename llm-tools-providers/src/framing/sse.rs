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
//! Each byte is scanned once: the splitter remembers where its last scan stopped (inside a
//! line still arriving, or after the lines of an event still arriving) and goes on from there
//! when more bytes come. The bytes kept are those of the event still arriving, and their count
//! is bounded (`max_event_bytes`, 16 MiB by default, each data line also counted for the
//! range that keeps its place): an event, or a line, that grows past it is a `Decode` error
//! naming the limit, and the framing stops. Lines outside any event
//! (comments between events) are let go as soon as they are read, so a stream of keep-alive
//! comments holds no memory.
//!
//! The splitter is this crate's own rather than an SSE crate's because stream reassembly is a
//! hot path: handing each event over as a borrowed slice, with no `String` per event, is what
//! the SSE crates (which yield owned events) cannot do, and it measurably speeds up streaming.

use std::borrow::Cow;
use std::ops::Range;

use llm_tools_core::{ProviderError, ProviderErrorKind};

use super::frame::Frame;

/// What each data line of an event still arriving costs besides its bytes: its range.
const DATA_LINE_BYTES: usize = size_of::<Range<usize>>();

/// The room for data lines kept between events.
const KEPT_DATA_LINES: usize = 16;

/// Splits the bytes of one stream into events.
#[derive(Debug)]
pub(crate) struct Splitter {
    buf: Vec<u8>,
    /// Where the event still arriving starts (the bytes before it are read).
    pos: usize,
    /// Where the next line starts: the lines from `pos` to here are read into `event` and
    /// `data`.
    scan: usize,
    /// How far the line starting at `scan` was searched for its end.
    searched: usize,
    /// The event still arriving: its `event:` value and its `data:` values, as ranges of `buf`.
    event: Option<Range<usize>>,
    data: Vec<Range<usize>>,
    /// The last line ended in `\r`, which a `\n` may follow (one line ending, `\r\n`).
    after_cr: bool,
    /// The most bytes an event may hold while it arrives.
    max_event_bytes: usize,
    /// Whether the start of the stream was checked for a byte-order mark.
    started: bool,
    /// An event grew past the limit: the framing stops.
    failed: bool,
    /// How many bytes were scanned for line ends (each byte once).
    #[cfg(test)]
    scanned: usize,
}

impl Splitter {
    /// A splitter that keeps at most `max_event_bytes` of an event while it arrives.
    pub(crate) fn new(max_event_bytes: usize) -> Self {
        Self {
            buf: Vec::new(),
            pos: 0,
            scan: 0,
            searched: 0,
            event: None,
            data: Vec::new(),
            after_cr: false,
            max_event_bytes,
            started: false,
            failed: false,
            #[cfg(test)]
            scanned: 0,
        }
    }

    /// Adds the next bytes of the stream.
    pub(crate) fn push(&mut self, chunk: &[u8]) {
        if self.failed {
            return;
        }
        if self.pos > 0 {
            // The bytes before the event still arriving are read: let them go, and move what
            // points into the buffer with the bytes that stay.
            let shift = self.pos;
            self.buf.drain(..shift);
            self.pos = 0;
            self.scan -= shift;
            self.searched -= shift;
            if let Some(r) = self.event.as_mut() {
                *r = r.start - shift..r.end - shift;
            }
            for r in &mut self.data {
                *r = r.start - shift..r.end - shift;
            }
        }
        self.buf.extend_from_slice(chunk);
        if !self.started && self.buf.len() >= 3 {
            self.started = true;
            if self.buf.starts_with(b"\xEF\xBB\xBF") {
                self.pos = 3;
                self.scan = 3;
                self.searched = 3;
            }
        }
    }

    /// The stream has ended: no more bytes come. (A `\r` last in the stream ended its line
    /// already; an event without its blank line is dropped.)
    pub(crate) fn end(&mut self) {}

    /// The event still arriving is over the limit: the framing stops with an error.
    /// What the event still arriving keeps when its bytes reach `end`: those bytes, and a range
    /// for each of its data lines so far (kept until the event ends), so that many short lines
    /// (`data\n` over and over) hold no more than the limit either.
    fn kept(&self, end: usize) -> usize {
        (end - self.pos).saturating_add(self.data.len().saturating_mul(DATA_LINE_BYTES))
    }

    fn too_large(&mut self, name: &str) -> ProviderError {
        self.failed = true;
        self.buf = Vec::new();
        self.data = Vec::new();
        crate::http::limits::event_too_large(name, self.max_event_bytes)
    }

    /// The next complete event, or `None` until more bytes arrive. A field that is not UTF-8
    /// is a `Decode` error (the event is skipped); an event past the limit is a `Decode` error
    /// that ends the framing.
    pub(crate) fn next_frame(&mut self, name: &str) -> Option<Result<Frame<'_>, ProviderError>> {
        if self.failed {
            return None;
        }
        if !self.started {
            if self.buf.len() < 3 && b"\xEF\xBB\xBF".starts_with(&self.buf) {
                // Could still be a byte-order mark: wait for its end.
                return None;
            }
            // Fewer than three bytes that begin no byte-order mark: the stream has none (with
            // three or more, `push` looked). Checked before any byte is read, never later.
            self.started = true;
        }
        loop {
            if self.after_cr {
                match self.buf.get(self.scan) {
                    None => return None,
                    Some(b'\n') => {
                        self.scan += 1;
                        self.searched = self.scan;
                        if self.event.is_none() && self.data.is_empty() {
                            self.pos = self.scan;
                        }
                    }
                    Some(_) => {}
                }
                self.after_cr = false;
            }
            let from = self.searched.max(self.scan);
            let found = self
                .buf
                .get(from..)
                .and_then(|rest| memchr::memchr2(b'\n', b'\r', rest));
            #[cfg(test)]
            {
                self.scanned += found.map_or(self.buf.len().saturating_sub(from), |at| at + 1);
            }
            let Some(at) = found else {
                // No line end yet: the line goes on in the next bytes.
                self.searched = self.buf.len();
                if self.kept(self.buf.len()) > self.max_event_bytes {
                    return Some(Err(self.too_large(name)));
                }
                return None;
            };
            let line = self.scan..from + at;
            if self.kept(line.end) > self.max_event_bytes {
                return Some(Err(self.too_large(name)));
            }
            self.after_cr = self.buf.get(line.end) == Some(&b'\r');
            self.scan = line.end + 1;
            self.searched = self.scan;
            if line.is_empty() {
                // A blank line ends the event; one without data is no event.
                let event = self.event.take();
                let data = std::mem::take(&mut self.data);
                self.pos = self.scan;
                if data.is_empty() {
                    self.data = data;
                    continue;
                }
                let frame = build(name, &self.buf, event, &data);
                let mut data = data;
                data.clear();
                // An event of many lines does not keep its ranges' room for the whole stream.
                data.shrink_to(KEPT_DATA_LINES);
                self.data = data;
                return Some(frame);
            }
            let text = &self.buf[line.clone()];
            let (field, value) = match memchr::memchr(b':', text) {
                Some(colon) => {
                    let mut start = line.start + colon + 1;
                    if self.buf.get(start) == Some(&b' ') && start < line.end {
                        start += 1;
                    }
                    (&text[..colon], start..line.end)
                }
                None => (text, line.end..line.end),
            };
            match field {
                b"data" => {
                    self.data.push(value);
                    if self.kept(self.scan) > self.max_event_bytes {
                        return Some(Err(self.too_large(name)));
                    }
                }
                b"event" => self.event = Some(value),
                _ => {}
            }
            if self.event.is_none() && self.data.is_empty() {
                // A line outside any event (a comment, `id:`, `retry:`): nothing to keep.
                self.pos = self.scan;
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
    fn a_byte_order_mark_counts_only_first_in_the_stream() {
        // After a first line, the same bytes are part of a field name: no `data` field.
        let body = b"\n\xEF\xBB\xBFdata: x\n\ndata: y\n\n";
        for cut in 0..body.len() {
            let data: Vec<String> = cut_in_two(body, cut)
                .into_iter()
                .map(|e| e.data.into_owned())
                .collect();
            assert_eq!(data, ["y"], "cut at {cut}");
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
        let mut splitter = Splitter::new(1024);
        splitter.push(b"data: one\n\ndata: a\ndata: b\n\n");
        let first = splitter.next_frame("t").unwrap().unwrap();
        assert!(matches!(first.data, Cow::Borrowed("one")));
        let second = splitter.next_frame("t").unwrap().unwrap();
        assert!(matches!(second.data, Cow::Owned(ref s) if s == "a\nb"));
        assert!(splitter.next_frame("t").is_none());
    }

    /// The frames of `chunks` pushed one by one into a splitter with this limit, and the
    /// bytes it scanned.
    fn split(max: usize, chunks: &[&[u8]]) -> (Vec<Result<String, ProviderErrorKind>>, usize) {
        let mut s = Splitter::new(max);
        let mut out = Vec::new();
        for chunk in chunks {
            s.push(chunk);
            while let Some(f) = s.next_frame("t") {
                out.push(f.map(|f| f.data.into_owned()).map_err(|e| e.kind()));
            }
        }
        (out, s.scanned)
    }

    #[test]
    fn a_line_arriving_in_many_chunks_is_scanned_once() {
        let chunk = vec![b'x'; 16 * 1024];
        let mut chunks: Vec<&[u8]> = vec![b"data: "];
        chunks.extend(std::iter::repeat_n(chunk.as_slice(), 512));
        chunks.push(b"\n\n");
        let total: usize = chunks.iter().map(|c| c.len()).sum();
        let (frames, scanned) = split(16 * 1024 * 1024, &chunks);
        assert_eq!(frames.len(), 1);
        assert_eq!(frames[0].as_ref().unwrap().len(), 512 * 16 * 1024);
        assert_eq!(scanned, total, "each of the {total} bytes scanned once");
    }

    /// An event of many empty data lines is bounded by what it holds, ranges included: 5
    /// bytes a line on the wire keep 21, so 1,000 lines are past a 16,000-byte limit though
    /// their 5,000 bytes are within it; and an event of many lines does not keep their room.
    #[test]
    fn an_event_of_many_short_lines_counts_what_each_line_keeps() {
        let within: Vec<&[u8]> = std::iter::repeat_n(
            &b"data
"[..],
            700,
        )
        .chain([&b"
"[..]])
        .collect();
        let (frames, _) = split(16_000, &within);
        assert_eq!(frames.len(), 1);
        assert_eq!(frames[0].as_ref().unwrap().len(), 699);
        let past: Vec<&[u8]> = std::iter::repeat_n(
            &b"data
"[..],
            1_000,
        )
        .chain([&b"
"[..]])
        .collect();
        let (frames, _) = split(16_000, &past);
        assert_eq!(frames, [Err(ProviderErrorKind::Decode)]);

        let mut s = Splitter::new(1 << 20);
        s.push(
            &b"data: x
"
            .repeat(10_000),
        );
        s.push(
            b"
",
        );
        assert!(s.next_frame("t").unwrap().is_ok());
        assert!(
            s.data.capacity() <= KEPT_DATA_LINES,
            "{}",
            s.data.capacity()
        );

        // A line after many data lines counts their ranges too, ended or still arriving.
        let mut lines = b"data\n".repeat(500);
        let tail = vec![b'x'; 16_000 - 500 * 5 - 500 * DATA_LINE_BYTES + 100];
        lines.extend_from_slice(b"data: ");
        lines.extend_from_slice(&tail);
        let (frames, _) = split(16_000, &[&lines]);
        assert_eq!(frames, [Err(ProviderErrorKind::Decode)]);
        let (frames, _) = split(16_000, &[&lines, b"\n\n"]);
        assert_eq!(frames, [Err(ProviderErrorKind::Decode)]);
    }

    #[test]
    fn an_event_of_many_lines_is_scanned_once() {
        let line = b"data: abcdefghijklmnopqrstuvwxyz\n";
        let mut chunks: Vec<&[u8]> = std::iter::repeat_n(&line[..], 4096).collect();
        chunks.push(b"\n");
        let total: usize = chunks.iter().map(|c| c.len()).sum();
        let (frames, scanned) = split(1024 * 1024, &chunks);
        assert_eq!(frames.len(), 1);
        assert_eq!(scanned, total);
    }

    #[test]
    fn an_event_past_the_limit_is_a_typed_error_and_the_framing_stops() {
        // One line without an end, in chunks: refused once it holds more than the limit.
        let chunk = [b'x'; 1000];
        let mut chunks: Vec<&[u8]> = vec![b"data: "];
        chunks.extend(std::iter::repeat_n(&chunk[..], 5));
        chunks.push(b"\n\ndata: later\n\n");
        let mut s = Splitter::new(4096);
        let mut pushed = 0;
        let mut error = None;
        for chunk in &chunks {
            s.push(chunk);
            pushed += chunk.len();
            if let Some(f) = s.next_frame("t") {
                error = Some((f.map(|_| ()).unwrap_err(), pushed));
                break;
            }
        }
        let (error, pushed) = error.unwrap();
        assert_eq!(error.kind(), ProviderErrorKind::Decode);
        assert_eq!(
            crate::http::HttpLimit::of(&error),
            Some(crate::http::HttpLimit::StreamEventBytes)
        );
        assert!(error.message().contains("4096 bytes"), "{error}");
        assert!(
            pushed <= 4096 + 1000,
            "refused once past the limit: {pushed} bytes"
        );
        s.push(b"data: more\n\n");
        assert!(s.next_frame("t").is_none(), "the framing stopped");
        // Many short lines of one event count together; an event within the limit passes.
        let many = "data: 0123456789\n".repeat(300);
        let (frames, _) = split(4096, &[many.as_bytes(), b"\n"]);
        assert_eq!(frames, [Err(ProviderErrorKind::Decode)]);
        // One line of 4,096 bytes with its range (`DATA_LINE_BYTES`) is at the limit.
        let exact = format!("data: {}\n\n", "y".repeat(4096 - 8 - DATA_LINE_BYTES));
        let (frames, _) = split(4096, &[exact.as_bytes()]);
        assert_eq!(frames.len(), 1);
        assert!(frames[0].is_ok());
    }

    #[test]
    fn comments_between_events_are_let_go() {
        let mut s = Splitter::new(64);
        for _ in 0..10_000 {
            s.push(b": keep-alive\n");
            assert!(s.next_frame("t").is_none());
        }
        s.push(b"data: hello\n\n");
        assert_eq!(s.next_frame("t").unwrap().unwrap().data, "hello");
        assert!(s.buf.len() <= 64, "{} bytes kept", s.buf.len());
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
