//! A stream of newline-delimited JSON-RPC messages as rmcp reads it, bounded before rmcp parses
//! a line: each line is at most so many bytes (a longer one is dropped, with a warning) and is
//! judged whole by a [`LineCheck`] (counted in JSON values, say), which passes it on, drops it
//! or puts a line of its own in its place. An unfinished line at the end of the stream is
//! dropped, as rmcp would. The client reads a server's stdout through it, and the server a
//! client's stdin.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// What one read of the stream takes.
const READ_CHUNK: usize = 64 * 1024;

/// A line buffer that grew past this for one long line is given back once the line is done.
const KEPT_CAPACITY: usize = 1024 * 1024;

/// What a whole line becomes.
pub(crate) enum Verdict {
    /// It reaches rmcp as it is.
    Pass,
    /// It never reaches rmcp.
    Drop,
    /// This line (without its end) reaches rmcp in its place.
    Replace(String),
}

/// Judges the lines of a [`BoundedLines`].
pub(crate) trait LineCheck {
    /// What `message` (one line, without its end) becomes.
    fn check(&mut self, message: &[u8]) -> Verdict;

    /// Logs a line dropped for being longer than `max` bytes.
    fn too_long(&self, max: usize);
}

/// The stream `inner` as rmcp reads it: see the [module](self).
pub(crate) struct BoundedLines<R, C> {
    inner: R,
    check: C,
    max_line: usize,
    /// What one read takes.
    chunk: Box<[u8]>,
    /// The line being read, up to `max_line`.
    line: Vec<u8>,
    /// The line being read is past the limit: the rest of it is dropped.
    discarding: bool,
    /// Lines judged and passed on, not yet read by rmcp; `passing[passed..]` is what is left.
    passing: Vec<u8>,
    passed: usize,
}

impl<R, C: LineCheck> BoundedLines<R, C> {
    /// `inner` read in lines of at most `max_line` bytes, each judged by `check`.
    pub(crate) fn new(inner: R, max_line: usize, check: C) -> Self {
        Self {
            inner,
            check,
            max_line,
            chunk: vec![0; READ_CHUNK].into_boxed_slice(),
            line: Vec::new(),
            discarding: false,
            passing: Vec::new(),
            passed: 0,
        }
    }

    /// Takes what was read: each line it finishes is judged and passed on (or replaced).
    fn take(&mut self, read: usize) {
        let mut rest = self.chunk.get(..read).unwrap_or_default();
        while !rest.is_empty() {
            let (part, finished) = match rest.iter().position(|&b| b == b'\n') {
                Some(end) => (rest.get(..=end).unwrap_or_default(), true),
                None => (rest, false),
            };
            rest = rest.get(part.len()..).unwrap_or_default();
            if !self.discarding {
                if self.line.len().saturating_add(part.len()) > self.max_line {
                    self.check.too_long(self.max_line);
                    self.line = Vec::new();
                    self.discarding = true;
                } else {
                    self.line.extend_from_slice(part);
                }
            }
            if finished {
                if !self.discarding {
                    let message = self.line.strip_suffix(b"\n").unwrap_or(&self.line);
                    match self.check.check(message) {
                        // Passed on without a copy when nothing else waits to be read.
                        Verdict::Pass if self.passing.is_empty() => {
                            std::mem::swap(&mut self.passing, &mut self.line);
                            self.passed = 0;
                        }
                        Verdict::Pass => self.passing.extend_from_slice(&self.line),
                        Verdict::Drop => {}
                        Verdict::Replace(replacement) => {
                            self.passing.extend_from_slice(replacement.as_bytes());
                            self.passing.push(b'\n');
                        }
                    }
                }
                self.discarding = false;
                self.line.clear();
                if self.line.capacity() > KEPT_CAPACITY {
                    self.line = Vec::new();
                }
            }
        }
    }
}

impl<R: AsyncRead + Unpin, C: LineCheck + Unpin> AsyncRead for BoundedLines<R, C> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        loop {
            let left = this.passing.get(this.passed..).unwrap_or_default();
            if !left.is_empty() {
                let n = left.len().min(buf.remaining());
                buf.put_slice(left.get(..n).unwrap_or_default());
                this.passed += n;
                if this.passed == this.passing.len() {
                    this.passing.clear();
                    this.passed = 0;
                    if this.passing.capacity() > KEPT_CAPACITY {
                        this.passing = Vec::new();
                    }
                }
                return Poll::Ready(Ok(()));
            }
            let mut read = ReadBuf::new(&mut this.chunk);
            match Pin::new(&mut this.inner).poll_read(cx, &mut read) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(error)) => return Poll::Ready(Err(error)),
                Poll::Ready(Ok(())) => {}
            }
            let read = read.filled().len();
            if read == 0 {
                // The end of the stream: an unfinished line is dropped, as rmcp drops it.
                return Poll::Ready(Ok(()));
            }
            this.take(read);
        }
    }
}
