//! A server started as a child process: rmcp's stdio transport over its stdin and stdout, each
//! message counted before rmcp parses it (see `message_bound`), the server's stderr read into
//! a bounded tail (each line logged, the last ones kept for errors and
//! [`McpClient::stderr_tail`](crate::McpClient::stderr_tail)), and the process handed back when
//! the session never opened, so the error can say how it ended.
//!
//! Bounds: a stderr line is cut at [`DEFAULT_MAX_STDERR_LINE`] bytes (the rest of it is counted,
//! not kept) and the last [`DEFAULT_STDERR_TAIL_LINES`] lines are kept, so what a server writes
//! to stderr costs the client at most their product, however much it writes and whether or not
//! it ever writes a newline.

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use process_wrap::tokio::{ChildWrapper, CommandWrap};
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::{AsyncRwTransport, DEFAULT_MAX_LINE_LENGTH};
use tokio::io::AsyncReadExt as _;
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};
use tokio::sync::{Notify, oneshot};

use super::message_bound::{Refused, refused};
use crate::bounded_lines::{BoundedLines, LineCheck, Verdict};

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

/// The stdio transport: rmcp's line-delimited JSON-RPC over the server's stdin and stdout
/// ([`AsyncRwTransport`]), each line counted before rmcp reads it ([`BoundedMessages`]). When
/// the transport is dropped while the client still waits for the process (a handshake that
/// failed), the process goes to the client, which then learns how it exited; otherwise it is
/// killed.
pub(crate) struct ChildProcess {
    child: Option<Box<dyn ChildWrapper>>,
    transport: AsyncRwTransport<RoleClient, BoundedMessages<ChildStdout>, ChildStdin>,
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

/// How long a server whose stdin was closed is given to exit, then again after `SIGTERM`,
/// before it is killed (the MCP stdio shutdown sequence).
const STOP_GRACE: Duration = Duration::from_secs(3);

/// `SIGTERM`, the same number on every Unix.
#[cfg(unix)]
const SIGTERM: i32 = 15;

impl ChildProcess {
    /// Starts `command` with its stdin, stdout and stderr piped; returns the transport, where
    /// its process goes if the transport is dropped before the session opens, and the stderr
    /// to read.
    pub(crate) fn spawn(
        command: tokio::process::Command,
        server: Arc<str>,
    ) -> std::io::Result<(Self, HandedOver, Option<ChildStderr>)> {
        let mut command = CommandWrap::from(command);
        command
            .command_mut()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin().take(), child.stdout().take()) else {
            let _ = child.start_kill();
            return Err(std::io::Error::other(
                "the server's stdin or stdout could not be piped",
            ));
        };
        let stderr = child.stderr().take();
        let (handover, handed_over) = oneshot::channel();
        let process = Self {
            child: Some(child),
            transport: AsyncRwTransport::new_client(bounded_messages(stdout, server), stdin),
            handover: Some(handover),
        };
        Ok((process, HandedOver(Some(handed_over)), stderr))
    }

    /// The process id, while the process runs.
    pub(crate) fn id(&self) -> Option<u32> {
        self.child.as_ref().and_then(|child| child.id())
    }
}

/// Whether `child` exited within `grace`.
async fn exited_within(
    child: &mut Box<dyn ChildWrapper>,
    grace: Duration,
) -> std::io::Result<bool> {
    match tokio::time::timeout(grace, child.wait()).await {
        Ok(Ok(_)) => Ok(true),
        Ok(Err(error)) => Err(error),
        Err(_) => Ok(false),
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        match self.handover.take() {
            Some(handover) if !handover.is_closed() => {
                if let Err(mut child) = handover.send(child) {
                    // The client stopped waiting in between.
                    let _ = child.start_kill();
                }
            }
            // Nobody waits: the process is killed, and tokio reaps it.
            _ => {
                let _ = child.start_kill();
            }
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
        self.transport.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.transport.receive()
    }

    /// Closes the server's stdin and waits for it to exit; then `SIGTERM` (on Unix) and
    /// another wait; then the process is killed.
    async fn close(&mut self) -> Result<(), Self::Error> {
        // The process stays in `self.child` until it has exited or been killed, so a close
        // dropped half-way still kills it (`Drop`).
        let Some(child) = self.child.as_mut() else {
            return Ok(());
        };
        // Closing stdin waits for a send in progress; a server that stops reading its stdin
        // would hold that forever, so the wait is bounded, and the stop goes on regardless
        // (killing the process ends the stuck send).
        let _ = tokio::time::timeout(STOP_GRACE, self.transport.close()).await;
        if exited_within(child, STOP_GRACE).await? {
            self.child = None;
            return Ok(());
        }
        #[cfg(unix)]
        if child.signal(SIGTERM).is_ok() && exited_within(child, STOP_GRACE).await? {
            self.child = None;
            return Ok(());
        }
        Box::into_pin(child.kill()).await?;
        self.child = None;
        Ok(())
    }
}

/// The server's stdout as rmcp reads it ([`BoundedLines`]): each line counted (in JSON values,
/// see [`message_bound`](super::message_bound)) before it is passed on, so a line holding too
/// many reaches rmcp as an error response or not at all. A line longer than rmcp's own limit
/// ([`DEFAULT_MAX_LINE_LENGTH`]) is dropped here, as rmcp would drop it.
pub(crate) type BoundedMessages<R> = BoundedLines<R, ServerLines>;

/// The bounded stdout of server `server`.
pub(crate) fn bounded_messages<R>(stdout: R, server: Arc<str>) -> BoundedMessages<R> {
    BoundedLines::new(stdout, DEFAULT_MAX_LINE_LENGTH, ServerLines { server })
}

/// Judges the lines of a server's stdout ([`refused`]).
pub(crate) struct ServerLines {
    server: Arc<str>,
}

impl LineCheck for ServerLines {
    fn check(&mut self, message: &[u8]) -> Verdict {
        match refused(&self.server, message) {
            None => Verdict::Pass,
            Some(Refused::Dropped) => Verdict::Drop,
            Some(Refused::Answered(replacement)) => Verdict::Replace(replacement),
        }
    }

    fn too_long(&self, max: usize) {
        tracing::warn!(target: "llm_tools::mcp", server = &*self.server, max, "dropped a message from the server: it is longer than a message may be");
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

    /// What rmcp reads of `output` through [`BoundedMessages`].
    async fn passed_on(output: &[u8]) -> String {
        let mut read = Vec::new();
        bounded_messages(output, Arc::from("s"))
            .read_to_end(&mut read)
            .await
            .unwrap();
        String::from_utf8(read).unwrap()
    }

    #[tokio::test]
    async fn lines_within_the_bound_pass_as_they_are() {
        let output = "{\"id\":1,\"result\":{}}\n\n{\"method\":\"ping\"}\r\n";
        assert_eq!(passed_on(output.as_bytes()).await, output);
    }

    #[tokio::test]
    async fn a_dense_line_is_replaced_by_an_error_response_across_reads() {
        let dense = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{{\"v\":[{}0]}}}}\n",
            "0,".repeat(llm_tools_core::json_values::MAX_JSON_VALUES)
        );
        let output = format!("{{\"id\":1}}\n{dense}{{\"id\":2}}\n");
        let passed = passed_on(output.as_bytes()).await;
        let lines: Vec<&str> = passed.lines().collect();
        assert_eq!(lines.len(), 3, "{passed:.200}");
        assert_eq!(lines[0], "{\"id\":1}");
        assert!(
            lines[1].starts_with("{\"jsonrpc\":\"2.0\",\"id\":5,\"error\""),
            "{}",
            lines[1]
        );
        assert_eq!(lines[2], "{\"id\":2}");
    }

    #[tokio::test]
    async fn a_line_past_the_byte_limit_and_an_unfinished_last_line_are_dropped() {
        let long = format!("\"{}\"\n", "x".repeat(DEFAULT_MAX_LINE_LENGTH));
        let output = format!("{{\"id\":1}}\n{long}{{\"id\":2}}\n{{\"id\":3");
        assert_eq!(
            passed_on(output.as_bytes()).await,
            "{\"id\":1}\n{\"id\":2}\n"
        );
    }

    /// A server started by `script` (`sh -c`), and its stderr.
    #[cfg(unix)]
    fn server(script: &str) -> (ChildProcess, HandedOver, ChildStderr) {
        let mut command = tokio::process::Command::new("sh");
        command.args(["-c", script]);
        let (process, handed_over, stderr) = ChildProcess::spawn(command, Arc::from("s")).unwrap();
        (process, handed_over, stderr.unwrap())
    }

    /// Everything the server writes to stderr until it exits (its stderr closes with it); the
    /// bound only turns a process that never exits into a failure.
    #[cfg(unix)]
    async fn stderr_until_exit(mut stderr: ChildStderr) -> String {
        let mut read = String::new();
        tokio::time::timeout(Duration::from_secs(30), stderr.read_to_string(&mut read))
            .await
            .expect("the server's process did not end")
            .unwrap();
        read
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_dropped_transport_kills_its_process_when_nobody_waits_for_it() {
        // It ignores SIGTERM and its closed stdin: only a kill ends it.
        let (process, handed_over, stderr) = server("trap '' TERM; exec sleep 300");
        assert!(process.id().is_some());
        drop(handed_over);
        drop(process);
        assert_eq!(stderr_until_exit(stderr).await, "");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_dropped_transport_hands_its_process_to_the_waiting_client() {
        let (process, mut handed_over, stderr) = server("exec sleep 300");
        drop(process);
        let mut child = handed_over.0.take().unwrap().await.unwrap();
        assert!(child.try_wait().unwrap().is_none(), "still running");
        child.start_kill().unwrap();
        assert_eq!(stderr_until_exit(stderr).await, "");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn close_ends_a_server_that_ignores_its_stdin_with_sigterm() {
        let (mut process, handed_over, stderr) =
            server("trap 'echo terminated >&2; exit 0' TERM; while :; do sleep 1; done");
        drop(handed_over);
        process.close().await.unwrap();
        assert_eq!(stderr_until_exit(stderr).await, "terminated\n");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_close_dropped_half_way_still_kills_the_process() {
        let (mut process, handed_over, stderr) = server("trap '' TERM; exec sleep 300");
        drop(handed_over);
        // Polled once: the server does not exit when its stdin closes, so the close waits.
        assert!(futures::FutureExt::now_or_never(process.close()).is_none());
        drop(process);
        assert_eq!(stderr_until_exit(stderr).await, "");
    }
}
