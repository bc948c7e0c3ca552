//! A served call's progress: what the tool reports with `ToolContext::report_progress` goes to
//! the client as `notifications/progress`, in order, when the client asked for progress (gave a
//! progress token); the call's result waits until every report before it was sent.
//!
//! A client that asks for progress and stops reading cannot make the server hold its reports
//! without end: at most [`PROGRESS_QUEUE`] wait to be sent (later ones are dropped until there
//! is room: a report says how far the call is, and the next one says it again), and a report
//! the client does not take within [`PROGRESS_SEND_TIMEOUT`] ends the call's progress.

use std::time::Duration;

use llm_tools_core::{BoxFuture, ToolProgress};
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};

use crate::progress_token::{MAX_PROGRESS_TOKEN, progress_token_len};

/// The most reports of one call waiting to be sent.
const PROGRESS_QUEUE: usize = 64;

/// How long one report may take to send; past it, the call's later reports are dropped.
const PROGRESS_SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// What the progress forwarder of one call is asked to do.
enum Forward {
    Progress(ProgressNotificationParam),
    /// Answer once everything before has been sent.
    Flush(tokio::sync::oneshot::Sender<()>),
}

/// Sends a call's progress reports to the client, in order, when it asked for progress; the
/// call's result waits for [`ProgressForwarder::flush`], so no report arrives after it (a
/// client drops those).
#[derive(Clone)]
pub(super) struct ProgressForwarder {
    sender: Option<tokio::sync::mpsc::Sender<Forward>>,
    token: Option<ProgressToken>,
}

impl ProgressForwarder {
    /// A forwarder for the call whose progress token is `token` (none: reports are dropped).
    /// A token longer than [`MAX_PROGRESS_TOKEN`] (256 bytes) is none: each report sends the token back,
    /// and a client's own are short.
    pub(super) fn new(peer: Peer<RoleServer>, token: Option<ProgressToken>) -> Self {
        let token = token.filter(|token| {
            let short = progress_token_len(token) <= MAX_PROGRESS_TOKEN;
            if !short {
                tracing::debug!(target: "llm_tools::mcp", "a call's progress token is longer than {MAX_PROGRESS_TOKEN} bytes: its progress is not reported");
            }
            short
        });
        Self::sending_with(token, move |params| {
            let peer = peer.clone();
            Box::pin(async move {
                let _ = peer.notify_progress(params).await;
            })
        })
    }

    /// A forwarder whose reports go out through `send`.
    fn sending_with(
        token: Option<ProgressToken>,
        send: impl Fn(ProgressNotificationParam) -> BoxFuture<'static, ()> + Send + 'static,
    ) -> Self {
        if token.is_none() {
            return Self {
                sender: None,
                token,
            };
        }
        let (sender, mut receiver) = tokio::sync::mpsc::channel::<Forward>(PROGRESS_QUEUE);
        tokio::spawn(async move {
            let mut stalled = false;
            while let Some(forward) = receiver.recv().await {
                match forward {
                    Forward::Progress(params) if !stalled => {
                        let sent = tokio::time::timeout(PROGRESS_SEND_TIMEOUT, send(params)).await;
                        stalled = sent.is_err();
                    }
                    Forward::Progress(_) => {}
                    Forward::Flush(done) => {
                        let _ = done.send(());
                    }
                }
            }
        });
        Self {
            sender: Some(sender),
            token,
        }
    }

    /// Sends a report (in order, without waiting; dropped when [`PROGRESS_QUEUE`] reports
    /// wait already).
    pub(super) fn report(&self, p: &ToolProgress) {
        let (Some(sender), Some(token)) = (&self.sender, &self.token) else {
            return;
        };
        let mut params = ProgressNotificationParam::new(token.clone(), p.progress);
        if let Some(total) = p.total {
            params = params.with_total(total);
        }
        if let Some(message) = &p.message {
            params = params.with_message(message.clone());
        }
        Self::queue(sender, params);
    }

    /// Puts a report in the queue, or drops it when the queue is full.
    fn queue(sender: &tokio::sync::mpsc::Sender<Forward>, params: ProgressNotificationParam) {
        let _ = sender.try_send(Forward::Progress(params));
    }

    /// Waits until every report made before was sent (or given up on).
    pub(super) async fn flush(&self) {
        if let Some(sender) = &self.sender {
            let (done, flushed) = tokio::sync::oneshot::channel();
            if sender.send(Forward::Flush(done)).await.is_ok() {
                let _ = flushed.await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    fn token() -> ProgressToken {
        ProgressToken(rmcp::model::NumberOrString::Number(1))
    }

    /// Reports `0..n` through `forwarder`'s queue, as `report` does.
    fn report_up_to(forwarder: &ProgressForwarder, n: u32) {
        let sender = forwarder.sender.as_ref().unwrap();
        for i in 0..n {
            ProgressForwarder::queue(
                sender,
                ProgressNotificationParam::new(token(), f64::from(i)),
            );
        }
    }

    /// A client that never takes a report: the first send times out, the rest are dropped,
    /// and the call's result is not held past that.
    #[tokio::test(start_paused = true)]
    async fn a_client_that_takes_no_report_holds_neither_reports_nor_the_result() {
        let attempts = Arc::new(AtomicUsize::new(0));
        let forwarder = ProgressForwarder::sending_with(Some(token()), {
            let attempts = Arc::clone(&attempts);
            move |_| {
                attempts.fetch_add(1, Ordering::SeqCst);
                Box::pin(std::future::pending())
            }
        });
        report_up_to(&forwarder, 10_000);
        // (Paused time: the send's timeout passes at once; a flush that waited on the client
        // would reach this guard.)
        let flushed = tokio::time::timeout(PROGRESS_SEND_TIMEOUT * 6, forwarder.flush()).await;
        assert!(
            flushed.is_ok(),
            "the result waited on a client that takes nothing"
        );
        assert_eq!(
            attempts.load(Ordering::SeqCst),
            1,
            "one try, then nothing more"
        );
    }

    /// A client that takes its reports gets each, in order.
    #[tokio::test]
    async fn reports_go_out_in_order() {
        let sent = Arc::new(std::sync::Mutex::new(Vec::new()));
        let forwarder = ProgressForwarder::sending_with(Some(token()), {
            let sent = Arc::clone(&sent);
            move |params: ProgressNotificationParam| {
                sent.lock().unwrap().push(params.progress);
                Box::pin(async {})
            }
        });
        report_up_to(&forwarder, 10);
        forwarder.flush().await;
        let sent = sent.lock().unwrap().clone();
        assert_eq!(sent, (0..10).map(f64::from).collect::<Vec<_>>());
    }
}
