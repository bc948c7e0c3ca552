//! A served call's progress: what the tool reports with `ToolContext::report_progress` goes to
//! the client as `notifications/progress`, in order, when the client asked for progress (gave a
//! progress token); the call's result waits until every report before it was sent.

use llm_tools_core::ToolProgress;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};

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
    sender: Option<tokio::sync::mpsc::UnboundedSender<Forward>>,
    token: Option<ProgressToken>,
}

impl ProgressForwarder {
    /// A forwarder for the call whose progress token is `token` (none: reports are dropped).
    pub(super) fn new(peer: Peer<RoleServer>, token: Option<ProgressToken>) -> Self {
        if token.is_none() {
            return Self {
                sender: None,
                token,
            };
        }
        let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel::<Forward>();
        tokio::spawn(async move {
            while let Some(forward) = receiver.recv().await {
                match forward {
                    Forward::Progress(params) => {
                        let _ = peer.notify_progress(params).await;
                    }
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

    /// Sends a report (in order, without waiting).
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
        let _ = sender.send(Forward::Progress(params));
    }

    /// Waits until every report made before was sent.
    pub(super) async fn flush(&self) {
        if let Some(sender) = &self.sender {
            let (done, flushed) = tokio::sync::oneshot::channel();
            if sender.send(Forward::Flush(done)).is_ok() {
                let _ = flushed.await;
            }
        }
    }
}
