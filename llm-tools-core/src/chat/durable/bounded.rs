//! Store calls no heartbeat watches (the commit that ends a turn, a claim's release, a
//! worker's pick and load), bounded by the run lease: past it the claim has ended anyway, and a
//! store that stopped answering while its connection stays up (a database server stopped, a
//! proxy whose upstream hangs) must not hold the turn, or the worker, for ever. The operation
//! is dropped, and its outcome is unknown: a commit is treated as a lost claim (the chat is
//! read again before its next turn).

use std::future::Future;

use crate::store::contract::DurableOptions;
use crate::store::error::StoreError;

/// `operation` (`what` the store is asked about the chat `chat_id`, or about none, for the
/// error), or the error saying the store did not answer within the run lease.
pub(crate) async fn within_lease<T, E: From<StoreError>>(
    options: &DurableOptions,
    chat_id: Option<&str>,
    what: &str,
    operation: impl Future<Output = Result<T, E>>,
) -> Result<T, E> {
    let lease = options.run_lease();
    match tokio::time::timeout(lease, operation).await {
        Ok(done) => done,
        Err(_) => Err(no_answer(chat_id, what, lease).into()),
    }
}

/// The error of a store call (about the chat `chat_id`, or none) that got no answer within
/// `lease`.
pub(crate) fn no_answer(
    chat_id: Option<&str>,
    what: &str,
    lease: std::time::Duration,
) -> StoreError {
    StoreError::Backend {
        location: chat_id.map_or_else(|| "the store".to_owned(), |id| format!("chat `{id}`")),
        message: format!(
            "the store did not answer {what} within the run lease ({:.1} s); whether it took \
             effect is unknown",
            lease.as_secs_f64()
        ),
    }
}
