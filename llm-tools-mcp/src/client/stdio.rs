//! A server started as a child process: rmcp's stdio transport, the server's stderr read into
//! a bounded tail (each line logged, the last ones kept for errors and
//! [`McpClient::stderr_tail`](crate::McpClient::stderr_tail)), and the process handed back when
//! the session never opened, so the error can say how it ended.
//!
//! Bounds: a stderr line is cut at [`DEFAULT_MAX_STDERR_LINE`] bytes (the rest of it is counted,
//! not kept) and the last [`DEFAULT_STDERR_TAIL_LINES`] lines are kept, so what a server writes
//! to stderr costs the client at most their product, however much it writes and whether or not
//! it ever writes a newline.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use process_wrap::tokio::ChildWrapper;
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::{TokioChildProcess, Transport};
use tokio::io::AsyncReadExt as _;
use tokio::sync::{Notify, oneshot};

/// The longest stderr line a client keeps and logs, in bytes, unless
/// [`McpServer::max_stderr_line`](crate::McpServer::max_stderr_line) says otherwise: 4 KiB.
/// A longer line is cut there, and says how many bytes were cut.
pub const DEFAULT_MAX_STDERR_LINE: usize = 4 * 1024;

/// How many of the server's last stderr lines a client keeps for errors and
/// [`McpClient::stderr_tail`](crate::McpClient::stderr_tail), unless
/// [`McpServer::stderr_tail_lines`](crate::McpServer::stderr_tail_lines) says otherwise: 16.
pub const DEFAULT_STDERR_TAIL_LINES: usize = 16;

/// How much stderr is read at once.
const READ_CHUNK: usize = 8 * 1024;

/// How long a server whose output closed during the handshake is given to exit (and to finish
/// its stderr) before the error is made without its exit status; at most the handshake's own
/// timeout.
pub(crate) const EXIT_GRACE: Duration = Duration::from_secs(5);

/// The last lines a server wrote to its stderr, each at most `max_line` bytes.
pub(crate) struct StderrTail {
    server: Arc<str>,
    max_line: usize,
    max_lines: usize,
    state: Mutex<TailState>,
    /// Signalled when stderr ended.
    ended: Notify,
}

#[derive(Default)]
struct TailState {
    lines: VecDeque<String>,
    /// The line being written (at most `max_line` bytes of it).
    partial: Vec<u8>,
    /// Bytes of the line being written that were past `max_line`.
    cut: u64,
    ended: bool,
}

impl StderrTail {
    pub(crate) fn new(server: Arc<str>, max_line: usize, max_lines: usize) -> Self {
        Self {
            server,
            max_line,
            max_lines,
            state: Mutex::default(),
            ended: Notify::new(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, TailState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Reads the server's stderr to its end: each line is logged (`llm_tools::mcp`, debug) and
    /// the last ones kept.
    pub(crate) async fn read(self: Arc<Self>, mut stderr: impl tokio::io::AsyncRead + Unpin) {
        let mut chunk = vec![0u8; READ_CHUNK];
        loop {
            let read = match stderr.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(read) => read,
            };
            let finished = self.push(chunk.get(..read).unwrap_or_default());
            for line in finished {
                tracing::debug!(target: "llm_tools::mcp", server = &*self.server, stderr = line.as_str());
            }
        }
        let last = {
            let mut state = self.state();
            let last =
                (!state.partial.is_empty() || state.cut > 0).then(|| self.finish_line(&mut state));
            state.ended = true;
            last
        };
        if let Some(line) = last {
            tracing::debug!(target: "llm_tools::mcp", server = &*self.server, stderr = line.as_str());
        }
        self.ended.notify_waiters();
    }

    /// Adds what was read; returns the lines it finished.
    fn push(&self, mut bytes: &[u8]) -> Vec<String> {
        let mut finished = Vec::new();
        let mut state = self.state();
        while !bytes.is_empty() {
            match bytes.iter().position(|&b| b == b'\n') {
                Some(end) => {
                    let (line, rest) = bytes.split_at(end);
                    self.append(&mut state, line);
                    finished.push(self.finish_line(&mut state));
                    bytes = rest.get(1..).unwrap_or_default();
                }
                None => {
                    self.append(&mut state, bytes);
                    break;
                }
            }
        }
        finished
    }

    /// Adds part of a line: what fits under `max_line` is kept, the rest counted.
    fn append(&self, state: &mut TailState, part: &[u8]) {
        let room = self.max_line.saturating_sub(state.partial.len());
        let (kept, cut) = part.split_at(room.min(part.len()));
        state.partial.extend_from_slice(kept);
        state.cut = state
            .cut
            .saturating_add(u64::try_from(cut.len()).unwrap_or(u64::MAX));
    }

    /// The line being written as text, with how much of it was cut. Control characters but
    /// tabs show escaped (`\u{1b}`): a server's terminal escapes (colours, hyperlinks to
    /// `file:` URLs) never reach the terminal that shows an error or a log.
    fn render(&self, state: &TailState) -> String {
        let text = String::from_utf8_lossy(&state.partial);
        let text = text.trim_end_matches('\r');
        let mut line = String::with_capacity(text.len());
        for c in text.chars() {
            if c.is_control() && c != '\t' {
                line.extend(c.escape_unicode());
            } else {
                line.push(c);
            }
        }
        if state.cut > 0 {
            line.push_str(&format!("… [{} bytes cut]", state.cut));
        }
        line
    }

    /// Ends the line being written: it joins the tail (the oldest line leaves past
    /// `max_lines`) and is returned to be logged.
    fn finish_line(&self, state: &mut TailState) -> String {
        let line = self.render(state);
        state.partial.clear();
        state.cut = 0;
        if self.max_lines > 0 {
            if state.lines.len() >= self.max_lines {
                state.lines.pop_front();
            }
            state.lines.push_back(line.clone());
        }
        line
    }

    /// The last lines, the one being written included (cut as it is).
    pub(crate) fn lines(&self) -> Vec<String> {
        let state = self.state();
        let mut lines: Vec<String> = state.lines.iter().cloned().collect();
        if !state.partial.is_empty() || state.cut > 0 {
            lines.push(self.render(&state));
            if lines.len() > self.max_lines {
                lines.remove(0);
            }
        }
        lines
    }

    /// Waits until stderr ended (the server and any process it started closed it).
    pub(crate) async fn ended(&self) {
        loop {
            let notified = self.ended.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.state().ended {
                return;
            }
            notified.await;
        }
    }
}

/// rmcp's stdio transport, whose process goes to the client when the transport is dropped
/// while the client still waits for it (a handshake that failed): the client then learns how
/// it exited. Once the session is open nobody waits, and rmcp ends the process as usual.
pub(crate) struct ChildProcess {
    process: Option<TokioChildProcess>,
    handover: Option<oneshot::Sender<Box<dyn ChildWrapper>>>,
}

/// Where a dropped [`ChildProcess`] hands its process over. Dropped, it stops waiting, and
/// kills a process handed over that nobody took.
pub(crate) struct HandedOver(Option<oneshot::Receiver<Box<dyn ChildWrapper>>>);

impl Drop for HandedOver {
    fn drop(&mut self) {
        if let Some(mut handed_over) = self.0.take() {
            handed_over.close();
            if let Ok(mut child) = handed_over.try_recv() {
                let _ = child.start_kill();
            }
        }
    }
}

impl ChildProcess {
    pub(crate) fn new(process: TokioChildProcess) -> (Self, HandedOver) {
        let (handover, handed_over) = oneshot::channel();
        (
            Self {
                process: Some(process),
                handover: Some(handover),
            },
            HandedOver(Some(handed_over)),
        )
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        let (Some(process), Some(handover)) = (self.process.take(), self.handover.take()) else {
            return;
        };
        if handover.is_closed() {
            // Nobody waits: rmcp's own cleanup stops the process.
            drop(process);
            return;
        }
        if let Some(child) = process.into_inner()
            && let Err(mut child) = handover.send(child)
        {
            // The client stopped waiting in between.
            let _ = child.start_kill();
        }
    }
}

impl Transport<RoleClient> for ChildProcess {
    type Error = std::io::Error;

    fn name() -> std::borrow::Cow<'static, str> {
        "stdio".into()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let sent = self.process.as_mut().map(|process| process.send(item));
        async move {
            match sent {
                Some(sent) => sent.await,
                None => Err(std::io::Error::other("the server's process is gone")),
            }
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        match self.process.as_mut() {
            Some(process) => process.receive().await,
            None => None,
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        match self.process.as_mut() {
            Some(process) => process.close().await,
            None => Ok(()),
        }
    }
}

/// How the server's process ended, when the session never opened: waits for it (and for its
/// stderr to end) until `deadline`; a process still running then is killed, and `None`
/// returned.
pub(crate) async fn exit_status(
    mut handed_over: HandedOver,
    tail: &StderrTail,
    deadline: tokio::time::Instant,
) -> Option<std::process::ExitStatus> {
    let waiting = handed_over.0.as_mut()?;
    let mut child = tokio::time::timeout_at(deadline, waiting)
        .await
        .ok()?
        .ok()?;
    let status = match tokio::time::timeout_at(deadline, child.wait()).await {
        Ok(Ok(status)) => Some(status),
        _ => {
            let _ = Box::into_pin(child.kill()).await;
            None
        }
    };
    if status.is_some() {
        let _ = tokio::time::timeout_at(deadline, tail.ended()).await;
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tail(max_line: usize, max_lines: usize) -> StderrTail {
        StderrTail::new(Arc::from("s"), max_line, max_lines)
    }

    #[test]
    fn lines_are_split_and_the_partial_one_shows() {
        let tail = tail(100, 10);
        tail.push(b"one\ntw");
        tail.push(b"o\r\nthr");
        assert_eq!(tail.lines(), ["one", "two", "thr"]);
    }

    #[test]
    fn a_long_line_is_cut_at_the_cap_and_counts_the_rest() {
        let tail = tail(4, 10);
        for _ in 0..1000 {
            tail.push(b"xxxxxxxxxx");
        }
        assert_eq!(tail.lines(), ["xxxx… [9996 bytes cut]"]);
        assert!(tail.state().partial.len() <= 4);
        tail.push(b"\nnext\n");
        assert_eq!(tail.lines(), ["xxxx… [9996 bytes cut]", "next"]);
    }

    #[test]
    fn terminal_escapes_show_escaped() {
        let tail = tail(100, 10);
        tail.push(b"\x1b]8;;file:///etc/passwd\x1b\\click\x1b]8;;\x1b\\\tdone\n");
        let line = &tail.lines()[0];
        assert!(!line.contains('\x1b'), "{line:?}");
        assert!(
            line.starts_with("\\u{1b}]8;;file:///etc/passwd"),
            "{line:?}"
        );
        assert!(line.ends_with("\tdone"), "{line:?}");
    }

    #[test]
    fn only_the_last_lines_are_kept() {
        let tail = tail(100, 3);
        for i in 0..10 {
            tail.push(format!("line {i}\n").as_bytes());
        }
        assert_eq!(tail.lines(), ["line 7", "line 8", "line 9"]);
        tail.push(b"partial");
        assert_eq!(tail.lines(), ["line 8", "line 9", "partial"]);
        assert!(self::tail(100, 0).push(b"a\nb\n").len() == 2);
    }

    #[tokio::test]
    async fn reading_to_the_end_finishes_the_last_line() {
        let tail = Arc::new(tail(100, 3));
        Arc::clone(&tail)
            .read(&b"first\nlast without newline"[..])
            .await;
        tail.ended().await;
        assert_eq!(tail.lines(), ["first", "last without newline"]);
    }
}
