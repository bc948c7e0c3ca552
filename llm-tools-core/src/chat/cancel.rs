//! [`CancelHandle`]: stops a running `ask`, `step` or `complete` from elsewhere.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;

use futures::task::AtomicWaker;

/// Cancels the chat's run in progress from another task or thread: the model request in flight
/// is dropped, running tool calls are dropped and closed with an error result (finished results
/// are kept), and the run returns [`Error::Cancelled`](crate::Error::Cancelled).
///
/// A cancellation is used once: by the run in progress (a turn that ends another way before it
/// sees the cancellation, by a hook's stop or a pause, say, takes it with it), or, if none is
/// running, by the next one. A run of [`step`](super::Chat::step)s is one run until its turn
/// ends.
///
/// ```
/// use llm_tools_core::chat::Chat;
/// use llm_tools_core::testing::ScriptedProvider;
///
/// let chat = Chat::new(ScriptedProvider::new());
/// let handle = chat.cancel_handle();
/// handle.cancel();
/// assert!(handle.is_cancelled());
/// ```
#[derive(Clone, Default)]
pub struct CancelHandle {
    inner: Arc<Inner>,
}

/// A flag and the waker of the one run that may be waiting on it (a chat runs one turn at a
/// time, `&mut self`).
#[derive(Default)]
struct Inner {
    flag: AtomicBool,
    waker: AtomicWaker,
}

impl CancelHandle {
    /// Cancels the run in progress (or the next one).
    pub fn cancel(&self) {
        self.inner.flag.store(true, Ordering::SeqCst);
        self.inner.waker.wake();
    }

    /// Whether a cancellation waits to be used.
    pub fn is_cancelled(&self) -> bool {
        self.inner.flag.load(Ordering::SeqCst)
    }

    /// Uses the cancellation, if there is one.
    pub(crate) fn take(&self) -> bool {
        self.inner.flag.swap(false, Ordering::SeqCst)
    }

    /// Resolves when a cancellation arrives, and uses it. Keep one such future for a whole
    /// wait (pinned) rather than making one per poll.
    pub(crate) async fn cancelled(&self) {
        std::future::poll_fn(|cx| {
            if self.take() {
                return Poll::Ready(());
            }
            self.inner.waker.register(cx.waker());
            if self.take() {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
    }
}

impl std::fmt::Debug for CancelHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelHandle")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}
