//! Giving a failed turn's run claim up: the failure counted with the chat's stored count, and
//! what [`DurableOptions::release_after_failure`] says written (tried again later, or parked).
//! Used by the turn itself, by a turn a panic ended (`dropped_turn.rs`) and by the worker.

use crate::store::contract::{DurableOptions, ParkReason, Release, Store};

/// Gives the run claim `token` on `chat_id` up after a turn that failed with `error`: counts
/// the failure with the chat's stored count (read under the claim) and writes what
/// `DurableOptions::release_after_failure` says. Returns what was written, or `None` when
/// nothing could be (the claim ends with its lease then).
pub(crate) async fn release_failed(
    store: &dyn Store,
    chat_id: &str,
    token: u64,
    options: &DurableOptions,
    error: &str,
    park: Option<ParkReason>,
) -> Option<Release> {
    let failures = match super::bounded::within_lease(
        options,
        Some(chat_id),
        "a read of the chat's status",
        store.chat_status(chat_id),
    )
    .await
    {
        Ok(status) => status.failures.saturating_add(1),
        Err(e) => {
            tracing::warn!(chat_id, error = %e, "could not read the chat's failure count; counting this failure as its first");
            1
        }
    };
    let release = options.release_after_failure(error, failures, park, store.now_ms());
    let released = super::bounded::within_lease(
        options,
        Some(chat_id),
        "the release of a run claim",
        store.release_run(chat_id, token, &release),
    )
    .await;
    match released {
        Ok(()) => {
            if let Release::Park { reason, .. } = &release {
                tracing::warn!(chat_id, failures, reason = reason.as_str(), error = %error, "parked the chat: no worker runs it until it is released");
            }
            Some(release)
        }
        Err(e) => {
            tracing::warn!(chat_id, error = %e, "could not release the chat's run claim; it ends with its lease");
            None
        }
    }
}
