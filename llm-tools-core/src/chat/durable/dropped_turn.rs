//! A turn dropped while it holds the run claim gives the claim up.
//!
//! A turn's future is dropped whenever its caller stops waiting: a timeout around `ask`, a
//! closed HTTP request, a worker shut down. The turn's calls run on its own task, so they end
//! with it; the claim, written in the store, would otherwise stay until its lease ran out
//! (30 s by default), and the chat stay busy for every process, this one included.
//!
//! [`GivesClaimUpOnDrop`] wraps a turn holding the claim. Dropped before it ends, it drops
//! the turn first (so no call of it is alive any more), then gives the claim up on a task of
//! the current tokio runtime, with the turn's token: a claim that changed hands since is left
//! alone, since the store refuses a stale token. The task's handle is kept in the chat's
//! binding, and the chat's next use of its claim (a turn, `save`, `enqueue`, `cancel`) waits
//! for it first, so that use never meets its own dropped turn's claim. Without a runtime (a
//! turn dropped outside one) the claim ends with its lease, as it did before.
//!
//! A turn that panics (a provider's bug, a panicking hook outside its guard) failed: its claim
//! is given up as a failed turn's, counted toward parking the chat like any other failure. A
//! [`Worker`](crate::store::Worker)'s turn leaves that to the worker, which catches the panic
//! and writes the failure with the panic's message. A turn dropped while another future's
//! panic unwinds (two chats' turns joined in one task, one of them panicking) did not fail: it
//! gives its claim up unchanged.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::task::JoinHandle;

use crate::store::contract::{DurableOptions, Release, Store};

/// Where a chat keeps the task giving up a dropped turn's claim, until its next use of the
/// claim waits for it.
pub(crate) type PendingRelease = Arc<Mutex<Option<JoinHandle<()>>>>;

/// The claim a turn holds, as its release needs it.
pub(crate) struct HeldClaim {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) chat_id: Arc<str>,
    pub(crate) token: u64,
    pub(crate) pending: PendingRelease,
    /// What a panic unwinding through the turn does with the claim.
    pub(crate) on_panic: OnPanic,
}

/// What a panic unwinding through a turn does with its claim.
pub(crate) enum OnPanic {
    /// Gives it up as a failed turn's (with these options), counted toward parking.
    CountFailure(DurableOptions),
    /// Leaves it to the turn's caller, which catches the panic and counts it (a worker).
    LeaveToCaller,
}

impl HeldClaim {
    /// Gives the claim up on a task of the current runtime (nothing without one): unchanged
    /// for a turn dropped by its caller; as a failed turn's for one that `panicked` (see the
    /// [module docs](self)).
    fn give_up(self, panicked: bool) {
        if panicked && matches!(self.on_panic, OnPanic::LeaveToCaller) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(
                chat_id = &*self.chat_id,
                "a turn was dropped outside a tokio runtime; its run claim ends with its lease"
            );
            return;
        };
        let Self {
            store,
            chat_id,
            token,
            pending,
            on_panic,
        } = self;
        let task = runtime.spawn(async move {
            if let (true, OnPanic::CountFailure(options)) = (panicked, &on_panic) {
                super::release::release_failed(
                    &*store,
                    &chat_id,
                    token,
                    options,
                    "the turn panicked",
                    None,
                )
                .await;
                return;
            }
            match store.release_run(&chat_id, token, &Release::Unchanged).await {
                Ok(_) => {
                    tracing::debug!(chat_id = &*chat_id, "a dropped turn gave its run claim up");
                }
                Err(error) => {
                    tracing::warn!(chat_id = &*chat_id, %error, "could not give a dropped turn's run claim up; it ends with its lease");
                }
            }
        });
        let mut slot = pending
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *slot = Some(task);
    }
}

/// A turn holding the run claim that gives the claim up when dropped before it ends (see
/// the [module docs](self)).
struct GivesClaimUpOnDrop<F> {
    turn: Option<Pin<Box<F>>>,
    claim: Option<HeldClaim>,
    /// Whether the turn itself panicked (not another future of the same task, whose panic
    /// drops this turn while it unwinds).
    panicked: bool,
}

impl<F: Future> GivesClaimUpOnDrop<F> {
    fn new(turn: F, claim: HeldClaim) -> Self {
        Self {
            turn: Some(Box::pin(turn)),
            claim: Some(claim),
            panicked: false,
        }
    }
}

impl<F: Future> Future for GivesClaimUpOnDrop<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let Some(turn) = self.turn.as_mut() else {
            // Polled again after its end: a misuse, which never happens in an `.await`.
            return Poll::Pending;
        };
        let polled =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| turn.as_mut().poll(cx)));
        let output = match polled {
            Ok(poll) => std::task::ready!(poll),
            Err(payload) => {
                self.panicked = true;
                std::panic::resume_unwind(payload)
            }
        };
        // The turn ended and settled its claim itself.
        self.turn = None;
        self.claim = None;
        Poll::Ready(output)
    }
}

impl<F> Drop for GivesClaimUpOnDrop<F> {
    fn drop(&mut self) {
        // The turn, its calls with it, ends before its claim is given up.
        drop(self.turn.take());
        if let Some(claim) = self.claim.take() {
            claim.give_up(self.panicked);
        }
    }
}

/// Runs `turn`, which holds `claim` (when the chat holds one), giving the claim up if `turn`
/// is dropped before it ends.
pub(crate) async fn giving_up_if_dropped<F: Future>(
    claim: Option<HeldClaim>,
    turn: F,
) -> F::Output {
    match claim {
        Some(claim) => GivesClaimUpOnDrop::new(turn, claim).await,
        None => turn.await,
    }
}

/// Waits for the release of a dropped turn's claim, if one is under way; returns whether
/// there was one (the chat's token is then no longer its own).
pub(crate) async fn wait_for_release(pending: &PendingRelease) -> bool {
    let task = pending
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .take();
    match task {
        Some(task) => {
            // A release task that panicked or was cancelled leaves the claim to its lease.
            let _ = task.await;
            true
        }
        None => false,
    }
}
