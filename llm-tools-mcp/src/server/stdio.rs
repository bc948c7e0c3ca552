//! A connection of newline-delimited JSON-RPC (stdio, or any pair of byte streams), bounded as
//! Streamable HTTP is: each message is at most
//! [`DEFAULT_MAX_REQUEST_BODY_BYTES`](crate::DEFAULT_MAX_REQUEST_BODY_BYTES) long and holds at
//! most [`DEFAULT_MAX_REQUEST_JSON_VALUES`](crate::DEFAULT_MAX_REQUEST_JSON_VALUES) values,
//! counted before rmcp parses it ([`llm_tools_core::json_values`]), so `[0,0,…]` never costs
//! many times its size in memory.
//!
//! A request holding more values is answered with a JSON-RPC error naming the limit, without
//! being parsed: [`ClientLines`] has [`BoundedLines`] hand rmcp a stand-in request of the same
//! id (the method [`REFUSED_METHOD`]) which [`BoundedStdio`] answers itself. A longer line, a
//! notification or response holding more, or a request whose id is no string or number of at
//! most 256 characters is dropped, with a warning. Either way the session goes on.

use std::sync::Arc;

use llm_tools_core::json_values::too_many_values_of;
use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ErrorData, ServerJsonRpcMessage};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWrite};

use super::http::{DEFAULT_MAX_REQUEST_BODY_BYTES, DEFAULT_MAX_REQUEST_JSON_VALUES};
use crate::bounded_lines::{BoundedLines, LineCheck, Verdict};

/// The method of the stand-in for a refused request: [`BoundedStdio`] answers it with the
/// error naming the limit (a client sending it gets that error too, and nothing else).
const REFUSED_METHOD: &str = "llm-tools/refused-too-many-json-values";

/// The longest request id a stand-in echoes; a request with a longer one is dropped.
const MAX_ECHOED_ID: usize = 256;

/// What a refused message is read for: its id, and whether it is a request.
#[derive(Deserialize)]
struct Head<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(default)]
    method: Option<IgnoredAny>,
}

/// The stand-in rmcp reads for `message` (one line, without its end), or nothing when it is
/// dropped; `None` when it may pass as it is.
fn refused(message: &[u8], max_values: usize) -> Option<Option<String>> {
    let values = too_many_values_of(message, max_values)?;
    let message = message.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(message);
    let message = message.strip_suffix(b"\r").unwrap_or(message);
    // Reading the id and method allocates nothing: every other field is skipped.
    let head = serde_json::from_slice::<Head<'_>>(message).ok();
    let id = head
        .as_ref()
        .filter(|head| head.method.is_some())
        .and_then(|head| head.id)
        .map(RawValue::get)
        .filter(|id| {
            id.len() <= MAX_ECHOED_ID
                && (id.starts_with('"') || id.starts_with(|c: char| c == '-' || c.is_ascii_digit()))
        });
    let Some(id) = id else {
        tracing::warn!(target: "llm_tools::mcp", values, max = max_values, "dropped a message from the client: it holds more JSON values than a message may");
        return Some(None);
    };
    tracing::warn!(target: "llm_tools::mcp", values, max = max_values, "refused a request from the client: it holds more JSON values than a message may");
    Some(Some(format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"{REFUSED_METHOD}"}}"#
    )))
}

/// Judges the lines of a client's stream ([`refused`]): at most `max_values` JSON values each.
pub(super) struct ClientLines {
    max_values: usize,
}

impl LineCheck for ClientLines {
    fn check(&mut self, message: &[u8]) -> Verdict {
        match refused(message, self.max_values) {
            None => Verdict::Pass,
            Some(None) => Verdict::Drop,
            Some(Some(stand_in)) => Verdict::Replace(stand_in),
        }
    }

    fn too_long(&self, max: usize) {
        tracing::warn!(target: "llm_tools::mcp", max, "dropped a message from the client: it is longer than a message may be");
    }
}

/// rmcp's transport for a pair of byte streams, reading through [`BoundedLines`]; it answers
/// the stand-ins of refused requests with the error naming the limit.
pub(super) struct BoundedStdio<R: AsyncRead + Unpin, W: AsyncWrite> {
    inner: AsyncRwTransport<RoleServer, BoundedLines<R, ClientLines>, W>,
    /// What a refused request is told.
    refusal: Arc<str>,
    /// The refusal being written, on a task of its own: rmcp drops a `receive` when another
    /// event comes first, and then (draining its answers as it quits) awaits other sends
    /// without polling `receive`; a refusal written only while `receive` was polled would
    /// hold the writer from them.
    refusing: Option<tokio::task::JoinHandle<Result<(), std::io::Error>>>,
}

impl<R, W> BoundedStdio<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    /// `read` and `write` with the HTTP server's default bounds on a message.
    pub(super) fn new(read: R, write: W) -> Self {
        let (max_line, max_values) = (
            DEFAULT_MAX_REQUEST_BODY_BYTES,
            DEFAULT_MAX_REQUEST_JSON_VALUES,
        );
        let lines = BoundedLines::new(read, max_line, ClientLines { max_values });
        // The lines are bounded already; rmcp's own bound stays above them (a line end).
        let inner = AsyncRwTransport::new(lines, write).with_max_line_length(max_line + 2);
        Self {
            inner,
            refusal: Arc::from(format!(
                "the request holds more than {max_values} JSON values, more than a message \
                 may (DEFAULT_MAX_REQUEST_JSON_VALUES); it was not read"
            )),
            refusing: None,
        }
    }
}

impl<R: AsyncRead + Unpin, W: AsyncWrite> Drop for BoundedStdio<R, W> {
    /// A refusal still waiting for the writer goes with the connection.
    fn drop(&mut self) {
        if let Some(refusing) = self.refusing.take() {
            refusing.abort();
        }
    }
}

impl<R, W> Transport<RoleServer> for BoundedStdio<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            // A refusal waits for the writer (another answer may be being written) before the
            // next message is read.
            if let Some(refusing) = self.refusing.as_mut() {
                let sent = refusing.await;
                self.refusing = None;
                if !matches!(sent, Ok(Ok(()))) {
                    return None;
                }
            }
            let message = self.inner.receive().await?;
            let ClientJsonRpcMessage::Request(request) = &message else {
                return Some(message);
            };
            let ClientRequest::CustomRequest(custom) = &request.request else {
                return Some(message);
            };
            if custom.method != REFUSED_METHOD {
                return Some(message);
            }
            let error = ErrorData::invalid_request(self.refusal.to_string(), None);
            let answer = ServerJsonRpcMessage::error(error, Some(request.id.clone()));
            self.refusing = Some(tokio::spawn(self.inner.send(answer)));
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // A refusal not yet written goes out before the writer closes.
        if let Some(refusing) = self.refusing.as_mut() {
            let _ = refusing.await;
            self.refusing = None;
        }
        self.inner.close().await
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn dense(head: &str) -> String {
        format!(
            r#"{{{head}"params":{{"arguments":{{"a":[{}0]}}}}}}"#,
            "0,".repeat(100)
        )
    }

    #[test]
    fn a_dense_request_becomes_a_stand_in_of_its_id_and_anything_else_is_dropped() {
        let request = dense(r#""jsonrpc":"2.0","id":7,"method":"tools/call","#);
        assert_eq!(
            refused(request.as_bytes(), 50),
            Some(Some(format!(
                r#"{{"jsonrpc":"2.0","id":7,"method":"{REFUSED_METHOD}"}}"#
            )))
        );
        assert_eq!(refused(request.as_bytes(), 1000), None, "within the bound");
        for head in [
            r#""jsonrpc":"2.0","method":"notifications/progress","#,
            r#""jsonrpc":"2.0","id":7,"#,
            r#""jsonrpc":"2.0","id":[7],"method":"tools/call","#,
        ] {
            assert_eq!(refused(dense(head).as_bytes(), 50), Some(None), "{head}");
        }
    }

    /// A writer that takes nothing until it is opened, then keeps everything written.
    #[derive(Clone, Default)]
    struct Gate(Arc<std::sync::Mutex<GateState>>);

    #[derive(Default)]
    struct GateState {
        open: bool,
        written: Vec<u8>,
        waiting: Option<std::task::Waker>,
    }

    impl Gate {
        fn open(&self) {
            let mut state = self.0.lock().unwrap();
            state.open = true;
            if let Some(waker) = state.waiting.take() {
                waker.wake();
            }
        }

        fn written(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().written.clone()).unwrap()
        }
    }

    impl AsyncWrite for Gate {
        fn poll_write(
            self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
            buf: &[u8],
        ) -> std::task::Poll<std::io::Result<usize>> {
            let mut state = self.0.lock().unwrap();
            if !state.open {
                state.waiting = Some(cx.waker().clone());
                return std::task::Poll::Pending;
            }
            state.written.extend_from_slice(buf);
            std::task::Poll::Ready(Ok(buf.len()))
        }

        fn poll_flush(
            self: std::pin::Pin<&mut Self>,
            _cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }

        fn poll_shutdown(
            self: std::pin::Pin<&mut Self>,
            _cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn a_refusal_whose_receive_is_dropped_while_another_send_writes_is_still_sent() {
        use futures::FutureExt as _;
        let values = DEFAULT_MAX_REQUEST_JSON_VALUES + 1;
        let dense = format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"arguments":{{"a":[{}0]}}}}}}"#,
            "0,".repeat(values)
        );
        let input = format!("{dense}\n").into_bytes();
        let gate = Gate::default();
        let mut transport = BoundedStdio::new(std::io::Cursor::new(input), gate.clone());
        // Another answer is being written (a slow reader): it holds the writer.
        let other = ServerJsonRpcMessage::error(
            ErrorData::internal_error("another answer", None),
            Some(rmcp::model::RequestId::Number(1)),
        );
        let mut writing = Box::pin(transport.send(other));
        assert!(
            (&mut writing).now_or_never().is_none(),
            "the writer is held"
        );
        // rmcp's loop polls `receive` and drops it when another of its branches is ready: here
        // while the refusal waits for the writer.
        assert!(
            transport.receive().now_or_never().is_none(),
            "the refusal waits for the writer"
        );
        gate.open();
        writing.await.unwrap();
        while transport.receive().await.is_some() {}
        let written = gate.written();
        let refusal = written
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .find(|message| message["id"] == 7);
        let refusal = refusal.unwrap_or_else(|| panic!("no answer to request 7: {written}"));
        let message = refusal["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("DEFAULT_MAX_REQUEST_JSON_VALUES"),
            "{refusal}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_refusal_is_written_while_rmcp_awaits_other_sends_without_receiving() {
        use futures::FutureExt as _;
        let values = DEFAULT_MAX_REQUEST_JSON_VALUES + 1;
        let dense = format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"arguments":{{"a":[{}0]}}}}}}"#,
            "0,".repeat(values)
        );
        let input = format!("{dense}\n").into_bytes();
        let gate = Gate::default();
        let mut transport = BoundedStdio::new(std::io::Cursor::new(input), gate.clone());
        // The refusal starts while the client reads nothing; rmcp drops that `receive`.
        assert!(
            transport.receive().now_or_never().is_none(),
            "the refusal waits for the writer"
        );
        gate.open();
        // Quitting, rmcp awaits the answers it spawned, and polls `receive` no more.
        let other = ServerJsonRpcMessage::error(
            ErrorData::internal_error("another answer", None),
            Some(rmcp::model::RequestId::Number(1)),
        );
        let sent = tokio::time::timeout(Duration::from_secs(2), transport.send(other)).await;
        assert!(
            matches!(sent, Ok(Ok(()))),
            "the answer waited for a refusal nothing wrote: {sent:?}"
        );
        transport.close().await.unwrap();
        let written = gate.written();
        assert!(written.contains(r#""id":7"#), "{written}");
        assert!(written.contains(r#""id":1"#), "{written}");
    }

    #[tokio::test]
    async fn lines_past_the_bounds_never_reach_the_reader() {
        use tokio::io::AsyncReadExt as _;
        let long = format!("\"{}\"", "x".repeat(2000));
        let dense = dense(r#""jsonrpc":"2.0","id":"a","method":"tools/call","#);
        let input = format!("{{\"ok\":1}}\n{long}\n{dense}\n{{\"ok\":2}}\nunfinished");
        let mut lines = BoundedLines::new(input.as_bytes(), 1000, ClientLines { max_values: 50 });
        let mut read = String::new();
        lines.read_to_string(&mut read).await.unwrap();
        assert_eq!(
            read,
            format!(
                "{{\"ok\":1}}\n{{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"{REFUSED_METHOD}\"}}\n{{\"ok\":2}}\n"
            )
        );
    }
}
