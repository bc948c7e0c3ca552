//! Newline-delimited JSON ([`Framing::Ndjson`](super::Framing::Ndjson)), as Ollama's native API
//! streams: one JSON value per line. Lines end in `\n` (a `\r` before it is dropped), blank lines
//! are skipped, and a last line without its newline still counts when the stream ends. Each
//! line is handed over as a slice of the stream's buffer; whether it is JSON is for the protocol
//! to judge.

use llm_tools_core::{ProviderError, ProviderErrorKind};

use super::Frame;

/// Splits the bytes of one stream into lines.
#[derive(Debug, Default)]
pub(crate) struct Splitter {
    buf: Vec<u8>,
    /// Where the bytes not yet read as lines start.
    pos: usize,
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
    }

    /// The stream has ended: a last line without its newline is complete.
    pub(crate) fn end(&mut self) {
        self.ended = true;
    }

    /// The next complete line, or `None` until more bytes arrive. A line that is not UTF-8 is a
    /// `Decode` error (the line is skipped).
    pub(crate) fn next_frame(&mut self, name: &str) -> Option<Result<Frame<'_>, ProviderError>> {
        loop {
            let rest = &self.buf[self.pos..];
            if rest.is_empty() {
                return None;
            }
            let (line, used) = match memchr::memchr(b'\n', rest) {
                Some(end) => (self.pos..self.pos + end, end + 1),
                None if self.ended => (self.pos..self.buf.len(), rest.len()),
                None => return None,
            };
            self.pos += used;
            let mut bytes = &self.buf[line];
            if let [head @ .., b'\r'] = bytes {
                bytes = head;
            }
            if bytes.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return Some(match std::str::from_utf8(bytes) {
                Ok(text) => Ok(Frame::data(text)),
                Err(e) => Err(ProviderError::new(
                    name,
                    ProviderErrorKind::Decode,
                    format!("the stream cannot be read: a line is not UTF-8 ({e})"),
                )),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(chunks: &[&[u8]], end: bool) -> Vec<Result<String, ProviderErrorKind>> {
        let mut s = Splitter::default();
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
}
