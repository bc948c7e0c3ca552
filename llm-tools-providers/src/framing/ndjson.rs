//! Newline-delimited JSON ([`Framing::Ndjson`](super::Framing::Ndjson)), as Ollama's native API
//! streams: one JSON value per line. Lines end in `\n` (a `\r` before it is dropped), blank lines
//! are skipped, and a last line without its newline still counts when the stream ends. Each
//! line is handed over as a slice of the stream's buffer; whether it is JSON is for the protocol
//! to judge.
//!
//! Each byte is scanned once (the splitter remembers how far it searched a line still
//! arriving), and a line may hold at most `max_event_bytes` (16 MiB by default): one that grows
//! past it is a `Decode` error naming the limit, and the framing stops.

use llm_tools_core::{ProviderError, ProviderErrorKind};

use super::frame::Frame;

/// Splits the bytes of one stream into lines.
#[derive(Debug)]
pub(crate) struct Splitter {
    buf: Vec<u8>,
    /// Where the bytes not yet read as lines start.
    pos: usize,
    /// How far the line starting at `pos` was searched for its end.
    searched: usize,
    /// The most bytes a line may hold.
    max_line_bytes: usize,
    ended: bool,
    /// A line grew past the limit: the framing stops.
    failed: bool,
}

impl Splitter {
    /// A splitter of lines of at most `max_line_bytes`.
    pub(crate) fn new(max_line_bytes: usize) -> Self {
        Self {
            buf: Vec::new(),
            pos: 0,
            searched: 0,
            max_line_bytes,
            ended: false,
            failed: false,
        }
    }

    /// Adds the next bytes of the stream.
    pub(crate) fn push(&mut self, chunk: &[u8]) {
        if self.failed {
            return;
        }
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.searched -= self.pos;
            self.pos = 0;
        }
        self.buf.extend_from_slice(chunk);
    }

    /// The stream has ended: a last line without its newline is complete.
    pub(crate) fn end(&mut self) {
        self.ended = true;
    }

    /// The next complete line, or `None` until more bytes arrive. A line that is not UTF-8 is a
    /// `Decode` error (the line is skipped); a line past the limit is a `Decode` error that
    /// ends the framing.
    pub(crate) fn next_frame(&mut self, name: &str) -> Option<Result<Frame<'_>, ProviderError>> {
        if self.failed {
            return None;
        }
        loop {
            if self.pos >= self.buf.len() {
                return None;
            }
            let from = self.searched.max(self.pos);
            let found = self
                .buf
                .get(from..)
                .and_then(|tail| memchr::memchr(b'\n', tail))
                .map(|at| from + at);
            let (line, next) = match found {
                Some(end) => (self.pos..end, end + 1),
                None if self.ended => (self.pos..self.buf.len(), self.buf.len()),
                None => {
                    self.searched = self.buf.len();
                    if self.buf.len() - self.pos > self.max_line_bytes {
                        return Some(Err(self.too_large(name)));
                    }
                    return None;
                }
            };
            if line.len() > self.max_line_bytes {
                return Some(Err(self.too_large(name)));
            }
            self.pos = next;
            self.searched = next;
            let mut line = line;
            if self
                .buf
                .get(line.clone())
                .is_some_and(|l| l.ends_with(b"\r"))
            {
                line.end -= 1;
            }
            if self.buf[line.clone()].iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return Some(match std::str::from_utf8(&self.buf[line]) {
                Ok(text) => Ok(Frame::data(text)),
                Err(e) => Err(ProviderError::new(
                    name,
                    ProviderErrorKind::Decode,
                    format!("the stream cannot be read: a line is not UTF-8 ({e})"),
                )),
            });
        }
    }

    /// The line still arriving is over the limit: the framing stops with an error.
    fn too_large(&mut self, name: &str) -> ProviderError {
        self.failed = true;
        self.buf = Vec::new();
        crate::http::limits::event_too_large(name, self.max_line_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(chunks: &[&[u8]], end: bool) -> Vec<Result<String, ProviderErrorKind>> {
        let mut s = Splitter::new(1024);
        let mut out = Vec::new();
        for chunk in chunks {
            s.push(chunk);
            while let Some(f) = s.next_frame("t") {
                out.push(f.map(|f| f.data.into_owned()).map_err(|e| e.kind()));
            }
        }
        if end {
            s.end();
            while let Some(f) = s.next_frame("t") {
                out.push(f.map(|f| f.data.into_owned()).map_err(|e| e.kind()));
            }
        }
        out
    }

    #[test]
    fn lines_split_anywhere_reassemble() {
        let body = b"{\"a\":\"\xc3\xa9\"}\r\n\n  \n{\"done\":true}\n";
        for cut in 0..body.len() {
            let got = lines(&[&body[..cut], &body[cut..]], true);
            assert_eq!(
                got,
                [
                    Ok("{\"a\":\"é\"}".to_owned()),
                    Ok("{\"done\":true}".to_owned())
                ],
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn a_last_line_without_a_newline_counts_only_at_the_end() {
        assert_eq!(
            lines(&[b"{\"a\":1}\n{\"b\""], false),
            [Ok("{\"a\":1}".to_owned())]
        );
        assert_eq!(
            lines(&[b"{\"a\":1}\n{\"b\""], true),
            [Ok("{\"a\":1}".to_owned()), Ok("{\"b\"".to_owned())]
        );
    }

    #[test]
    fn a_line_that_is_not_utf8_is_a_decode_error_and_the_next_line_is_read() {
        assert_eq!(
            lines(&[b"\xff\xfe\n{}\n"], true),
            [Err(ProviderErrorKind::Decode), Ok("{}".to_owned())]
        );
    }

    #[test]
    fn a_line_past_the_limit_is_a_typed_error_and_the_framing_stops() {
        let chunk = [b'x'; 100];
        let mut s = Splitter::new(1024);
        s.push(b"{\"a\":1}\n");
        assert_eq!(s.next_frame("t").unwrap().unwrap().data, "{\"a\":1}");
        let mut pushed = 0;
        let error = loop {
            s.push(&chunk);
            pushed += chunk.len();
            if let Some(f) = s.next_frame("t") {
                break f.map(|_| ()).unwrap_err();
            }
        };
        assert!(pushed > 1024 && pushed <= 1024 + 100, "{pushed}");
        assert_eq!(error.kind(), ProviderErrorKind::Decode);
        assert!(error.message().contains("1024 bytes"), "{error}");
        s.push(b"\n{}\n");
        s.end();
        assert!(s.next_frame("t").is_none(), "the framing stopped");
        // A whole line past the limit, arriving at once, is refused too.
        let long = format!("{}\n", "y".repeat(1025));
        assert_eq!(
            lines(&[long.as_bytes()], true),
            [Err(ProviderErrorKind::Decode)]
        );
    }
}
