//! The [`Store`] trait every backend implements, and what it reads and writes: chat records,
//! calls, commits, the run claim and its release, a chat's status, and the durable options.

use std::time::Duration;

use super::error::StoreError;
use crate::future::BoxFuture;

/// The newest schema version the stores of this library write.
pub const SCHEMA_VERSION: u32 = 11;

/// How long a worker waits before it tries a chat again after its first failed turn, by
/// default ([`DurableOptions::with_retry_delay`]); the wait doubles with each failure in a row.
pub const DEFAULT_RETRY_DELAY: Duration = Duration::from_secs(5);

/// The longest wait between two tries of a failing chat, by default
/// ([`DurableOptions::with_max_retry_delay`]).
pub const DEFAULT_MAX_RETRY_DELAY: Duration = Duration::from_secs(600);

/// How many failed turns in a row park a chat, by default
/// ([`DurableOptions::with_max_attempts`]).
pub const DEFAULT_MAX_ATTEMPTS: u32 = 5;

/// How many times in a row a chat's run claim may be abandoned (its holder never gave it back:
/// the worker process died or stalled mid-turn, and the lease expired) before a worker parks
/// the chat instead of claiming it again, by default
/// ([`DurableOptions::with_max_abandoned_claims`]).
///
/// A chat whose turn ends its worker every time (a tool that aborts the process, memory run
/// out on the chat's data, a kill by the platform) would otherwise be claimed again by the
/// next worker once the lease expires, and again, without end, each claim spending model
/// tokens. The stores count such takeovers per chat in the claim's own statement; a claim that
/// would be the chat's third takeover in a row parks it instead ([`ParkReason::ClaimsAbandoned`],
/// its last error saying how many times its turn ended its worker). Nothing is lost: history,
/// pending calls and stored state stay as they were. [`Store::release_parked`] resumes it
/// (and starts the count again); so does a turn that ends in a process (any release by the
/// claim's holder but [`Release::Unchanged`] and [`Release::CallClaimedElsewhere`]).
///
/// ```
/// use llm_tools_core::store::{DEFAULT_MAX_ABANDONED_CLAIMS, DurableOptions};
///
/// assert_eq!(DEFAULT_MAX_ABANDONED_CLAIMS, 3);
/// let options = DurableOptions::default().with_max_abandoned_claims(5);
/// assert_eq!(options.max_abandoned_claims(), 5);
/// ```
pub const DEFAULT_MAX_ABANDONED_CLAIMS: u32 = 3;

/// How many bytes of a failed turn's error the store keeps as the chat's last error, by
/// default ([`DurableOptions::with_max_error_bytes`]); longer texts are cut at a character
/// boundary and end with `…`.
pub const DEFAULT_MAX_ERROR_BYTES: usize = 4096;

/// [`DurableOptions::write_result_after`] by default: a call that ran 100 ms or longer has its
/// result written the moment it ends.
pub const DEFAULT_WRITE_RESULT_AFTER: Duration = Duration::from_millis(100);

/// Where durable chats live: an object-safe async interface a database implements.
///
/// The chat serializes what it stores (JSON text) and says which writes are conditional; a
/// store keeps the text, runs each [`Commit`] as one transaction, and refuses a commit whose
/// conditions do not hold with [`StoreError::Stale`]. Times are milliseconds since the Unix
/// epoch, read from the store's clock ([`now_ms`](Self::now_ms)), so every machine sharing the
/// store measures claims and leases alike.
pub trait Store: Send + Sync + 'static {
    /// The store's clock, in milliseconds since the Unix epoch: what claims, leases and wake
    /// times are written and compared in, by every process sharing the store. The default is
    /// this machine's clock (right for a store only this machine opens, as SQLite);
    /// `PostgresStore` (feature `postgres`) reads the database server's clock, so machines
    /// whose clocks disagree still agree on when a lease ends.
    fn now_ms(&self) -> u64 {
        crate::clock::now_ms()
    }

    /// Creates a chat with its first contents. [`StoreError::AlreadyExists`] when the id is
    /// taken.
    fn create_chat<'a>(
        &'a self,
        chat_id: &'a str,
        record: &'a ChatRecord,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Reads a chat whole: its meta, every message, and the calls of its latest round.
    /// [`StoreError::NotFound`] when there is none.
    fn load_chat<'a>(&'a self, chat_id: &'a str) -> BoxFuture<'a, Result<ChatRecord, StoreError>>;

    /// Takes the run claim for `holder` until `now_ms + lease`: granted with a new token when
    /// the claim is free, expired, or already `holder`'s; otherwise [`RunClaim::Busy`].
    fn claim_run<'a>(
        &'a self,
        chat_id: &'a str,
        holder: &'a str,
        now_ms: u64,
        lease: Duration,
    ) -> BoxFuture<'a, Result<RunClaim, StoreError>>;

    /// Extends the run claim `token` to `now_ms + lease`; [`StoreError::Stale`] when the claim
    /// is no longer that token's.
    fn renew_run<'a>(
        &'a self,
        chat_id: &'a str,
        token: u64,
        now_ms: u64,
        lease: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Gives the run claim `token` up (nothing happens when it is no longer that token's), and
    /// writes what the holder's turn says about the chat's health ([`Release`]): nothing, a
    /// success (the failure count and last error cleared, the chat no longer parked), a failure
    /// to try again at a given time, a failure that parks the chat, or nothing but a wake time
    /// past a call another holder still has claimed.
    fn release_run<'a>(
        &'a self,
        chat_id: &'a str,
        token: u64,
        release: &'a Release,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Picks up to `limit` chats that are due (their wake time has come, no one holds their
    /// run claim, and they are not parked) and takes their run claims for `holder`, skipping
    /// chats another picker is taking at the same moment. The earliest due first.
    ///
    /// The stores of this library bound the claims a chat's dead workers abandon as
    /// [`claim_due_parking_abandoned`](Self::claim_due_parking_abandoned) does, at
    /// [`DEFAULT_MAX_ABANDONED_CLAIMS`].
    fn claim_due<'a>(
        &'a self,
        holder: &'a str,
        now_ms: u64,
        lease: Duration,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<DueChat>, StoreError>>;

    /// [`claim_due`](Self::claim_due), counting the chats' abandoned claims: taking over a run
    /// claim another holder never gave back (its lease ended with that holder still set: the
    /// worker died or stalled mid-turn) adds one to the chat's count, and a chat whose count,
    /// with this pick's takeover, reaches `max_abandoned_claims` is parked instead
    /// ([`ParkReason::ClaimsAbandoned`], with a last error saying how many times its turn
    /// ended its worker), its dead claim given up and its token moved on, so no worker claims
    /// it again until [`release_parked`](Self::release_parked). Its history, calls and state
    /// stay as they were. The pick and the count are one statement, so two pickers never both
    /// take a chat and the count is exact.
    ///
    /// A claim of `holder` itself whose lease ended (its own live turn's renewals lagged, or
    /// its release failed) is taken back uncounted: a [`Worker`](super::Worker)'s holder is
    /// new with each worker, so the claim of a process that died is still counted by the
    /// process that replaces it. The application's own claim ([`Store::claim_run`], taken by
    /// `enqueue`, `save`, `cancel`, `ask`, `complete`) counts its takeover of an abandoned
    /// claim too, and is never refused for it; its release [`Release::Unchanged`] keeps the
    /// count, so the next pick of a chat counted up to the bound that way parks it. A release
    /// by the holder other than [`Release::Unchanged`] and [`Release::CallClaimedElsewhere`]
    /// starts the count again; so does `release_parked`. What a [`Worker`](super::Worker)
    /// calls, with [`DurableOptions::max_abandoned_claims`].
    ///
    /// The stores of this library keep the count (schema version 10); the default calls
    /// `claim_due`, whatever bound that store keeps, if any.
    fn claim_due_parking_abandoned<'a>(
        &'a self,
        holder: &'a str,
        now_ms: u64,
        lease: Duration,
        limit: usize,
        max_abandoned_claims: u32,
    ) -> BoxFuture<'a, Result<Vec<DueChat>, StoreError>> {
        let _ = max_abandoned_claims;
        self.claim_due(holder, now_ms, lease, limit)
    }

    /// Writes one batch of changes, all or nothing, and returns the chat's new revision.
    fn commit<'a>(
        &'a self,
        chat_id: &'a str,
        commit: &'a Commit,
    ) -> BoxFuture<'a, Result<u64, StoreError>>;

    /// The end of a turn: writes one batch of changes like [`commit`](Store::commit), then
    /// gives the run claim (`commit.run_token`) up like [`release_run`](Store::release_run),
    /// and returns the chat's new revision. A refused commit releases nothing.
    ///
    /// The default does the two one after the other (a release that fails after the commit is
    /// logged, and the claim ends with its lease); the built-in stores do both in one
    /// transaction, so a turn's last write costs one commit.
    fn commit_and_release<'a>(
        &'a self,
        chat_id: &'a str,
        commit: &'a Commit,
        release: &'a Release,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        Box::pin(async move {
            let revision = self.commit(chat_id, commit).await?;
            if let Err(e) = self.release_run(chat_id, commit.run_token, release).await {
                tracing::warn!(chat_id, error = %e, "could not release the chat's run claim; it ends with its lease");
            }
            Ok(revision)
        })
    }

    /// A chat's health: whether it is parked and why, its failed turns in a row, its last
    /// error, its wake time. [`StoreError::NotFound`] when there is none.
    ///
    /// ```
    /// # #[cfg(feature = "sqlite")] {
    /// use llm_tools_core::Chat;
    /// use llm_tools_core::store::{SqliteStore, Store};
    /// use llm_tools_core::testing::ScriptedProvider;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # let dir = std::env::temp_dir().join(format!("llm-tools-status-doc-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// let store = SqliteStore::open(dir.join("chats.db")).await?;
    /// Chat::create(store.clone(), "c1", ScriptedProvider::new()).await?;
    /// let status = store.chat_status("c1").await?;
    /// assert!(status.parked.is_none());
    /// assert_eq!((status.failures, status.last_error), (0, None));
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// # }
    /// ```
    fn chat_status<'a>(&'a self, chat_id: &'a str)
    -> BoxFuture<'a, Result<ChatStatus, StoreError>>;

    /// Up to `limit` parked chats, by id, starting after the id `after` (`None`: from the
    /// first): page through them by passing the last id of a page as the next `after`.
    fn parked_chats<'a>(
        &'a self,
        after: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<ChatStatus>, StoreError>>;

    /// Makes a parked chat runnable again: it is no longer parked, its failure count and its
    /// count of abandoned claims are zero (its last error stays until a turn ends well), and a
    /// chat with work waiting is due at once. Returns whether the chat was parked (`false`: nothing changed).
    /// [`StoreError::NotFound`] when there is no such chat.
    ///
    /// Call it once the cause is dealt with: the round budget raised or the model's behaviour
    /// understood (a chat parked for [`ParkReason::RoundsExceeded`] gets a fresh budget when a
    /// worker runs it again), the provider or its credentials fixed, the stored row repaired,
    /// the tool or the data that ended the worker of a chat parked for
    /// [`ParkReason::ClaimsAbandoned`] dealt with.
    /// A message [`Chat::enqueue`](crate::Chat::enqueue)d to a parked chat is stored but not
    /// answered until the chat is released.
    fn release_parked<'a>(&'a self, chat_id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Records a request to cancel the chat's calls, made at `now_ms` by a process that does
    /// not hold the chat ([`Chat::cancel`](crate::Chat::cancel) does this when another process
    /// holds it). The holder sees it at its next heartbeat (or its next turn), cancels each
    /// paused task through its tool and closes the calls without results; a chat no one holds
    /// is due at once, so a [`Worker`](super::Worker) does the same. The next commit that carries it out
    /// ([`Commit::with_cancel_handled`]) clears it. [`StoreError::NotFound`] when there is no
    /// such chat. The stores of this library keep it (schema version 4); the default says the
    /// store does not.
    fn request_cancel<'a>(
        &'a self,
        chat_id: &'a str,
        now_ms: u64,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let _ = now_ms;
        Box::pin(async move {
            Err(StoreError::Backend {
                location: chat_id.to_owned(),
                message: "this store does not keep cancel requests".into(),
            })
        })
    }

    /// [`renew_run`](Self::renew_run), and then [`cancel_requested`](Self::cancel_requested):
    /// what a holder's heartbeat asks. The stores of this library answer both with one
    /// statement; the default makes the two calls.
    fn renew_run_reading_cancel<'a>(
        &'a self,
        chat_id: &'a str,
        token: u64,
        now_ms: u64,
        lease: Duration,
    ) -> BoxFuture<'a, Result<Option<u64>, StoreError>> {
        Box::pin(async move {
            self.renew_run(chat_id, token, now_ms, lease).await?;
            self.cancel_requested(chat_id).await
        })
    }

    /// When a cancel was requested for the chat and not carried out yet
    /// ([`request_cancel`](Self::request_cancel)); `None` when none waits. The default: none.
    fn cancel_requested<'a>(
        &'a self,
        chat_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<u64>, StoreError>> {
        let _ = chat_id;
        Box::pin(async { Ok(None) })
    }

    /// The bytes kept under `key` by [`save_secret`](Self::save_secret), if any: credentials
    /// a chat's connections need in any process (an MCP server's OAuth tokens), kept apart
    /// from chats and never in a chat's state. The store keeps what it is given: encrypt
    /// before saving (`llm-tools-mcp`'s `StoreTokenStore` does). The stores of this library
    /// keep them (schema version 7); the default says the store does not.
    fn load_secret<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<Vec<u8>>, StoreError>> {
        Box::pin(async move { Err(no_secrets(key)) })
    }

    /// Keeps `value` under `key`, replacing what was there. Keys are at most
    /// [`MAX_SECRET_KEY_BYTES`], values at most [`MAX_SECRET_BYTES`]: past either, an error
    /// with nothing written.
    fn save_secret<'a>(
        &'a self,
        key: &'a str,
        value: &'a [u8],
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let _ = value;
        Box::pin(async move { Err(no_secrets(key)) })
    }

    /// Forgets what is kept under `key` (nothing when nothing is).
    fn clear_secret<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move { Err(no_secrets(key)) })
    }
}

/// The longest key of a kept secret, in bytes.
pub const MAX_SECRET_KEY_BYTES: usize = 1024;
/// The largest kept secret, in bytes.
pub const MAX_SECRET_BYTES: usize = 64 * 1024;

fn no_secrets(key: &str) -> StoreError {
    StoreError::Backend {
        location: key.to_owned(),
        message: "this store does not keep secrets".into(),
    }
}

/// A stored secret's value past [`MAX_SECRET_BYTES`] (written around the store): refused
/// unread.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn stored_secret_too_large(bytes: u64) -> StoreError {
    StoreError::Backend {
        location: "secrets".to_owned(),
        message: format!(
            "a stored secret holds {bytes} bytes, more than a secret may ({MAX_SECRET_BYTES}); \
             it was not read"
        ),
    }
}

/// Refuses a secret's key or value past its bound, naming which.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn check_secret(key: &str, value: Option<&[u8]>) -> Result<(), StoreError> {
    if key.is_empty() || key.len() > MAX_SECRET_KEY_BYTES {
        return Err(StoreError::Backend {
            location: "secrets".to_owned(),
            message: format!(
                "a secret's key takes 1 to {MAX_SECRET_KEY_BYTES} bytes; this one has {}",
                key.len()
            ),
        });
    }
    if let Some(value) = value
        && value.len() > MAX_SECRET_BYTES
    {
        return Err(StoreError::Backend {
            location: key.to_owned(),
            message: format!(
                "a secret takes at most {MAX_SECRET_BYTES} bytes; this one has {}",
                value.len()
            ),
        });
    }
    Ok(())
}

/// A shared store is a store: `Arc<dyn Store>` (or `Arc<SqliteStore>`) goes wherever a store
/// does.
impl<S: Store + ?Sized> Store for std::sync::Arc<S> {
    fn now_ms(&self) -> u64 {
        (**self).now_ms()
    }

    fn create_chat<'a>(
        &'a self,
        chat_id: &'a str,
        record: &'a ChatRecord,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        (**self).create_chat(chat_id, record)
    }

    fn load_chat<'a>(&'a self, chat_id: &'a str) -> BoxFuture<'a, Result<ChatRecord, StoreError>> {
        (**self).load_chat(chat_id)
    }

    fn claim_run<'a>(
        &'a self,
        chat_id: &'a str,
        holder: &'a str,
        now_ms: u64,
        lease: Duration,
    ) -> BoxFuture<'a, Result<RunClaim, StoreError>> {
        (**self).claim_run(chat_id, holder, now_ms, lease)
    }

    fn renew_run<'a>(
        &'a self,
        chat_id: &'a str,
        token: u64,
        now_ms: u64,
        lease: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        (**self).renew_run(chat_id, token, now_ms, lease)
    }

    fn release_run<'a>(
        &'a self,
        chat_id: &'a str,
        token: u64,
        release: &'a Release,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        (**self).release_run(chat_id, token, release)
    }

    fn claim_due<'a>(
        &'a self,
        holder: &'a str,
        now_ms: u64,
        lease: Duration,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<DueChat>, StoreError>> {
        (**self).claim_due(holder, now_ms, lease, limit)
    }

    fn claim_due_parking_abandoned<'a>(
        &'a self,
        holder: &'a str,
        now_ms: u64,
        lease: Duration,
        limit: usize,
        max_abandoned_claims: u32,
    ) -> BoxFuture<'a, Result<Vec<DueChat>, StoreError>> {
        (**self).claim_due_parking_abandoned(holder, now_ms, lease, limit, max_abandoned_claims)
    }

    fn commit<'a>(
        &'a self,
        chat_id: &'a str,
        commit: &'a Commit,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        (**self).commit(chat_id, commit)
    }

    fn commit_and_release<'a>(
        &'a self,
        chat_id: &'a str,
        commit: &'a Commit,
        release: &'a Release,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        (**self).commit_and_release(chat_id, commit, release)
    }

    fn chat_status<'a>(
        &'a self,
        chat_id: &'a str,
    ) -> BoxFuture<'a, Result<ChatStatus, StoreError>> {
        (**self).chat_status(chat_id)
    }

    fn parked_chats<'a>(
        &'a self,
        after: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<ChatStatus>, StoreError>> {
        (**self).parked_chats(after, limit)
    }

    fn release_parked<'a>(&'a self, chat_id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        (**self).release_parked(chat_id)
    }

    fn request_cancel<'a>(
        &'a self,
        chat_id: &'a str,
        now_ms: u64,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        (**self).request_cancel(chat_id, now_ms)
    }

    fn cancel_requested<'a>(
        &'a self,
        chat_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<u64>, StoreError>> {
        (**self).cancel_requested(chat_id)
    }

    fn renew_run_reading_cancel<'a>(
        &'a self,
        chat_id: &'a str,
        token: u64,
        now_ms: u64,
        lease: Duration,
    ) -> BoxFuture<'a, Result<Option<u64>, StoreError>> {
        (**self).renew_run_reading_cancel(chat_id, token, now_ms, lease)
    }

    fn load_secret<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<Vec<u8>>, StoreError>> {
        (**self).load_secret(key)
    }

    fn save_secret<'a>(
        &'a self,
        key: &'a str,
        value: &'a [u8],
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        (**self).save_secret(key, value)
    }

    fn clear_secret<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        (**self).clear_secret(key)
    }
}

/// A chat as stored.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct ChatRecord {
    /// Everything but the messages and the round's calls, as JSON.
    pub meta: String,
    /// The transcript, one JSON message each, in order.
    pub messages: Vec<String>,
    /// The calls of the latest round, in call order.
    pub calls: Vec<CallRecord>,
    /// Grows by one with every commit.
    pub revision: u64,
    /// When the chat has work a worker can do (see [`Commit::wake_at`]).
    pub wake_at: Option<u64>,
    /// When a cancel of its calls was requested and not carried out yet
    /// ([`Store::request_cancel`]).
    pub cancel_requested: Option<u64>,
}

impl ChatRecord {
    /// A record of the given parts.
    pub fn new(meta: String, messages: Vec<String>, calls: Vec<CallRecord>, revision: u64) -> Self {
        Self {
            meta,
            messages,
            calls,
            revision,
            wake_at: None,
            cancel_requested: None,
        }
    }

    /// Sets when the chat has work a worker can do.
    #[must_use]
    pub fn with_wake_at(mut self, wake_at: Option<u64>) -> Self {
        self.wake_at = wake_at;
        self
    }

    /// Sets when a cancel of its calls was requested.
    #[must_use]
    pub fn with_cancel_requested(mut self, requested: Option<u64>) -> Self {
        self.cancel_requested = requested;
        self
    }
}

/// A chat [`Store::claim_due`] picked, with its run claim.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DueChat {
    /// The chat's id.
    pub chat_id: String,
    /// The run claim's token.
    pub token: u64,
    /// The chat's revision.
    pub revision: u64,
}

impl DueChat {
    /// A picked chat.
    pub fn new(chat_id: String, token: u64, revision: u64) -> Self {
        Self {
            chat_id,
            token,
            revision,
        }
    }
}

/// One tool call of a round, as stored: its columns (for conditions and queries) and its whole
/// ledger entry as JSON.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct CallRecord {
    /// The position of the assistant message whose calls the round answers.
    pub round: u64,
    /// The call's position in that message.
    pub position: u32,
    /// The call's id.
    pub call_id: String,
    /// Its state's name: `ready`, `awaiting_approval`, `running`, `task`, `question`,
    /// `answered`, `denied`, `finished`, `appended`.
    pub state: String,
    /// How many times it started.
    pub attempt: u32,
    /// Its fencing token.
    pub token: u64,
    /// When its claim ends, while it is running.
    pub claimed_until: Option<u64>,
    /// The ledger entry, as JSON.
    pub body: String,
}

impl CallRecord {
    /// A record of the given parts.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        round: u64,
        position: u32,
        call_id: String,
        state: String,
        attempt: u32,
        token: u64,
        claimed_until: Option<u64>,
        body: String,
    ) -> Self {
        Self {
            round,
            position,
            call_id,
            state,
            attempt,
            token,
            claimed_until,
            body,
        }
    }
}

/// One batch of changes to a chat, written as one transaction.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Commit {
    /// The run claim the writer holds: the commit is refused ([`StoreError::Stale`]) unless
    /// it is still the chat's and still held (a claim given up with
    /// [`release_run`](Store::release_run) fences a late commit out, as one taken over does).
    pub run_token: u64,
    /// The chat's meta after the changes.
    pub meta: String,
    /// The position of `messages[0]` in the transcript. Messages stored at or after it are
    /// replaced (it is the stored count when messages are only appended).
    pub messages_from: usize,
    /// The messages from `messages_from` on, as JSON.
    pub messages: Vec<String>,
    /// The calls that changed.
    pub calls: Vec<CallWrite>,
    /// When the chat has work a worker can do after this commit: now (a message to answer,
    /// calls ready to run), when a working task's poll interval has passed, when a running
    /// call's claim expires; `None` while it waits on a person or is answered.
    pub wake_at: Option<u64>,
    /// The cancel request (its time) this commit carries out: the store clears the chat's
    /// request unless a newer one came since.
    pub cancel_handled: Option<u64>,
}

impl Commit {
    /// A commit of the given parts.
    pub fn new(
        run_token: u64,
        meta: String,
        messages_from: usize,
        messages: Vec<String>,
        calls: Vec<CallWrite>,
    ) -> Self {
        Self {
            run_token,
            meta,
            messages_from,
            messages,
            calls,
            wake_at: None,
            cancel_handled: None,
        }
    }

    /// Says the commit carries out the cancel requested at `requested`.
    #[must_use]
    pub fn with_cancel_handled(mut self, requested: Option<u64>) -> Self {
        self.cancel_handled = requested;
        self
    }

    /// Sets when the chat has work a worker can do.
    #[must_use]
    pub fn with_wake_at(mut self, wake_at: Option<u64>) -> Self {
        self.wake_at = wake_at;
        self
    }
}

/// One changed call, written only if the stored call still has the token the writer saw.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct CallWrite {
    /// The call as it is now.
    pub record: CallRecord,
    /// The token the store must still hold for the call; `None` for a call not stored yet.
    pub expected_token: Option<u64>,
}

impl CallWrite {
    /// A write of `record`, conditional on `expected_token`.
    pub fn new(record: CallRecord, expected_token: Option<u64>) -> Self {
        Self {
            record,
            expected_token,
        }
    }
}

/// The answer to [`Store::claim_run`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunClaim {
    /// The claim is the caller's, under `token`; the chat stands at `revision`.
    Granted {
        /// The claim's fencing token.
        token: u64,
        /// The chat's revision.
        revision: u64,
    },
    /// Another holder has the claim until `until_ms`.
    Busy {
        /// Who holds it.
        holder: String,
        /// When its lease ends.
        until_ms: u64,
    },
}

/// How a holder gives its run claim up ([`Store::release_run`]): what its turn says about the
/// chat's health.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Release {
    /// No turn ran, or its end says nothing about the chat's health (a save, a cancel): the
    /// chat's failure count, count of abandoned claims, last error and parking stay as they
    /// are.
    Unchanged,
    /// The turn stopped at a call another holder's claim keeps until `until` (milliseconds
    /// since the Unix epoch, by the store's clock): what [`Unchanged`](Self::Unchanged) keeps
    /// stays (failure count, count of abandoned claims, last error, parking), and the chat is
    /// not due again before the claim ends, when a call whose holder died runs again. Its wake
    /// time becomes `until`, unless it is later than now and earlier than `until` (work the
    /// turn left for sooner: a task's next poll), or a cancel request waits (the chat stays due
    /// at once, as [`Store::request_cancel`] made it). Without it every worker would pick the
    /// chat at each poll, reading it whole, for as long as the other holder's call runs. A
    /// [`Worker`](super::Worker) gives back so a chat it picked while its own turn of it still
    /// runs (that turn's run claim lapsed), `until` one run lease on, by when the turn has
    /// stopped.
    CallClaimedElsewhere {
        /// When the call's claim ends.
        until: u64,
    },
    /// The turn ended with an answer or a pause: the failure count and the count of abandoned
    /// claims are zero, the last error is gone, and a parked chat is parked no more.
    Succeeded,
    /// The turn failed and is tried again: the failure count grows by one, `error` is the last
    /// error, and the chat is due at `retry_at` (milliseconds since the Unix epoch). The turn
    /// ended in its process: the count of abandoned claims is zero.
    Retry {
        /// The failure, as text (cut to [`DurableOptions::max_error_bytes`]).
        error: String,
        /// When a worker may pick the chat again.
        retry_at: u64,
    },
    /// The chat stops: the failure count grows by one, `error` is the last error, and the chat
    /// is parked for `reason` until [`Store::release_parked`]. Its wake time stays, so a
    /// released chat with work waiting is due. The count of abandoned claims is zero.
    Park {
        /// The failure, as text (cut to [`DurableOptions::max_error_bytes`]).
        error: String,
        /// Why the chat stops.
        reason: ParkReason,
    },
}

/// Why a chat is parked: no worker picks it until the application releases it
/// ([`Store::release_parked`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ParkReason {
    /// A turn used the chat's whole round budget
    /// ([`Error::RoundsExceeded`](crate::Error::RoundsExceeded)): a worker never runs it again
    /// with a fresh budget on its own.
    RoundsExceeded,
    /// [`DurableOptions::max_attempts`] turns in a row failed.
    AttemptsExhausted,
    /// The stored chat could not be read back (a value that does not decode, a state that does
    /// not hold together, a state from a newer version).
    Undecodable,
    /// The chat's run claim was abandoned [`DurableOptions::max_abandoned_claims`] times in a
    /// row: each time its turn ended its worker (the process died or stalled mid-turn and
    /// never gave the claim back), so a worker parked it instead of claiming it again
    /// ([`Store::claim_due_parking_abandoned`]). [`ChatStatus::abandoned_claims`] and the
    /// last error say how many times.
    ///
    /// Only workers keep to the parking. A [`Chat`](crate::Chat) has no view of it, and its
    /// `ask`, `complete` or `step` on the parked chat runs the turn in the application's own
    /// process, the one that ended its workers: the tool that aborted them runs again there.
    /// Before running a turn of a chat a worker may have parked, read
    /// [`Store::chat_status`] (its `parked`) or list [`Store::parked_chats`], deal with the
    /// cause, then [`Store::release_parked`]. `enqueue` only stores the message, answered once
    /// the chat is released.
    ClaimsAbandoned,
}

impl ParkReason {
    /// The reason's name as stored: `rounds_exceeded`, `attempts_exhausted`, `undecodable`,
    /// `claims_abandoned`.
    pub fn as_str(self) -> &'static str {
        match self {
            ParkReason::RoundsExceeded => "rounds_exceeded",
            ParkReason::AttemptsExhausted => "attempts_exhausted",
            ParkReason::Undecodable => "undecodable",
            ParkReason::ClaimsAbandoned => CLAIMS_ABANDONED,
        }
    }

    /// The reason of a stored name ([`as_str`](Self::as_str)); `None` for another text.
    pub fn from_name(name: &str) -> Option<Self> {
        [
            ParkReason::RoundsExceeded,
            ParkReason::AttemptsExhausted,
            ParkReason::Undecodable,
            ParkReason::ClaimsAbandoned,
        ]
        .into_iter()
        .find(|reason| reason.as_str() == name)
    }
}

impl std::fmt::Display for ParkReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ParkReason::RoundsExceeded => "a turn used the round budget up",
            ParkReason::AttemptsExhausted => "its turns failed as many times in a row as allowed",
            ParkReason::Undecodable => "the stored chat could not be read back",
            ParkReason::ClaimsAbandoned => {
                "its turns ended their workers (claims never given back) as many times in a row as allowed"
            }
        })
    }
}

/// The stored name of [`ParkReason::ClaimsAbandoned`], which the stores' claim statements
/// write.
pub(crate) const CLAIMS_ABANDONED: &str = "claims_abandoned";

/// A chat's health as stored ([`Store::chat_status`], [`Store::parked_chats`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChatStatus {
    /// The chat's id.
    pub chat_id: String,
    /// Why the chat is parked; `None` while workers may pick it.
    pub parked: Option<ParkReason>,
    /// When it was parked (milliseconds since the Unix epoch).
    pub parked_at: Option<u64>,
    /// Its failed turns in a row: zero after a turn that ended well, or a release.
    pub failures: u32,
    /// The error of its latest failed turn, until a turn ends well.
    pub last_error: Option<String>,
    /// When it has work a worker can do (see [`Commit::wake_at`]); a parked chat keeps its
    /// wake time but is not picked.
    pub wake_at: Option<u64>,
    /// How many times in a row its run claim was taken over after its holder abandoned it
    /// (the lease ended and the holder never gave it back: its worker died or stalled
    /// mid-turn), by a worker or by the application's own claim; zero after a release by the
    /// holder that ended a turn (not [`Release::Unchanged`] or
    /// [`Release::CallClaimedElsewhere`]), or [`Store::release_parked`].
    /// At [`DurableOptions::max_abandoned_claims`] a worker's next pick parks the chat
    /// ([`ParkReason::ClaimsAbandoned`]).
    pub abandoned_claims: u32,
}

impl ChatStatus {
    /// A healthy chat's status: not parked, no failures, no error.
    pub fn new(chat_id: String) -> Self {
        Self {
            chat_id,
            parked: None,
            parked_at: None,
            failures: 0,
            last_error: None,
            wake_at: None,
            abandoned_claims: 0,
        }
    }

    /// Sets why and when the chat was parked.
    #[must_use]
    pub fn with_parked(mut self, reason: ParkReason, at: u64) -> Self {
        self.parked = Some(reason);
        self.parked_at = Some(at);
        self
    }

    /// Sets the failed turns in a row and the last error.
    #[must_use]
    pub fn with_failures(mut self, failures: u32, last_error: Option<String>) -> Self {
        self.failures = failures;
        self.last_error = last_error;
        self
    }

    /// Sets the wake time.
    #[must_use]
    pub fn with_wake_at(mut self, wake_at: Option<u64>) -> Self {
        self.wake_at = wake_at;
        self
    }

    /// Sets how many times in a row its run claim was taken over after it was abandoned.
    #[must_use]
    pub fn with_abandoned_claims(mut self, abandoned: u32) -> Self {
        self.abandoned_claims = abandoned;
        self
    }

    /// Whether the chat is parked.
    pub fn is_parked(&self) -> bool {
        self.parked.is_some()
    }
}

/// How a durable chat uses its store: the run claim's lease, how failed turns are tried
/// again (a delay that doubles from [`retry_delay`](Self::retry_delay) up to
/// [`max_retry_delay`](Self::max_retry_delay), at most [`max_attempts`](Self::max_attempts)
/// turns in a row before the chat is parked), and how many claims in a row a chat's turns may
/// abandon by ending their worker before a worker parks it
/// ([`max_abandoned_claims`](Self::max_abandoned_claims)).
///
/// ```
/// use std::time::Duration;
/// use llm_tools_core::store::DurableOptions;
///
/// let options = DurableOptions::default()
///     .with_retry_delay(Duration::from_secs(2))
///     .with_max_retry_delay(Duration::from_secs(60))
///     .with_max_attempts(4);
/// // Failed turns 1, 2 and 3 are tried again after 2, 4 and 8 s; the fourth parks the chat.
/// assert_eq!(options.retry_delay_after(1), Some(Duration::from_secs(2)));
/// assert_eq!(options.retry_delay_after(3), Some(Duration::from_secs(8)));
/// assert_eq!(options.retry_delay_after(4), None);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DurableOptions {
    run_lease: Duration,
    retry_delay: Duration,
    max_retry_delay: Duration,
    max_attempts: u32,
    max_error_bytes: usize,
    task_poll: Duration,
    write_result_after: Duration,
    max_abandoned_claims: u32,
}

impl Default for DurableOptions {
    fn default() -> Self {
        Self {
            run_lease: Duration::from_secs(30),
            retry_delay: DEFAULT_RETRY_DELAY,
            max_retry_delay: DEFAULT_MAX_RETRY_DELAY,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            max_error_bytes: DEFAULT_MAX_ERROR_BYTES,
            task_poll: Duration::from_secs(5),
            write_result_after: DEFAULT_WRITE_RESULT_AFTER,
            max_abandoned_claims: DEFAULT_MAX_ABANDONED_CLAIMS,
        }
    }
}

impl DurableOptions {
    /// How long the run claim lasts without a renewal (30 s by default): a crashed holder's
    /// chat can be picked up after this long. The holder renews it every third of it; a turn
    /// whose renewals have not got through by the end of its last lease plus one more lease
    /// stops (see [the store's docs](crate::store)). At least 100 ms, at most a day (a longer
    /// one is held at a day).
    #[must_use]
    pub fn with_run_lease(mut self, lease: Duration) -> Self {
        self.run_lease = lease.clamp(
            Duration::from_millis(100),
            Duration::from_secs(24 * 60 * 60),
        );
        self
    }

    /// The run claim's lease.
    pub fn run_lease(&self) -> Duration {
        self.run_lease
    }

    /// How many times in a row a chat's run claim may be abandoned before a worker parks it
    /// instead of claiming it again ([`DEFAULT_MAX_ABANDONED_CLAIMS`], 3, by default; at least
    /// 1). A claim is abandoned when its holder never gives it back and its lease ends: the
    /// worker process died mid-turn (a tool that aborts it, memory run out, a kill) or
    /// stalled past the lease. With 3, a chat whose turn kills its worker every time is run
    /// three times, then parked ([`ParkReason::ClaimsAbandoned`]) until
    /// [`Store::release_parked`]: a crash loop spends a bounded amount. A turn that ends in its
    /// process (an answer, a pause, a failure counted with [`with_max_attempts`](Self::with_max_attempts))
    /// starts the count again.
    ///
    /// ```
    /// use std::time::Duration;
    /// use llm_tools_core::store::DurableOptions;
    ///
    /// let options = DurableOptions::default()
    ///     .with_run_lease(Duration::from_secs(10))
    ///     .with_max_abandoned_claims(2);
    /// assert_eq!(options.max_abandoned_claims(), 2);
    /// assert_eq!(DurableOptions::default().with_max_abandoned_claims(0).max_abandoned_claims(), 1);
    /// ```
    #[must_use]
    pub fn with_max_abandoned_claims(mut self, claims: u32) -> Self {
        self.max_abandoned_claims = claims.max(1);
        self
    }

    /// How many times in a row a chat's run claim may be abandoned before it is parked.
    pub fn max_abandoned_claims(&self) -> u32 {
        self.max_abandoned_claims
    }

    /// How long after a failed turn (a provider error, a fatal tool error, a store error) a
    /// worker picks the chat again ([`DEFAULT_RETRY_DELAY`], 5 s, by default). The delay
    /// doubles with each further failure in a row, up to
    /// [`with_max_retry_delay`](Self::with_max_retry_delay).
    #[must_use]
    pub fn with_retry_delay(mut self, delay: Duration) -> Self {
        self.retry_delay = delay;
        self
    }

    /// The delay before the first failed turn is tried again.
    pub fn retry_delay(&self) -> Duration {
        self.retry_delay
    }

    /// The longest delay between two tries of a failing chat ([`DEFAULT_MAX_RETRY_DELAY`],
    /// 10 minutes, by default).
    #[must_use]
    pub fn with_max_retry_delay(mut self, delay: Duration) -> Self {
        self.max_retry_delay = delay;
        self
    }

    /// The longest delay between two tries.
    pub fn max_retry_delay(&self) -> Duration {
        self.max_retry_delay
    }

    /// How many turns in a row may fail before the chat is parked ([`DEFAULT_MAX_ATTEMPTS`],
    /// 5, by default; at least 1): the model is asked at most this many times for one turn's
    /// request before the application has to act ([`Store::release_parked`]).
    #[must_use]
    pub fn with_max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// How many turns in a row may fail before the chat is parked.
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// How many bytes of a failed turn's error the store keeps as the chat's last error
    /// ([`DEFAULT_MAX_ERROR_BYTES`], 4,096, by default; at least 64).
    #[must_use]
    pub fn with_max_error_bytes(mut self, bytes: usize) -> Self {
        self.max_error_bytes = bytes.max(64);
        self
    }

    /// How many bytes of a failed turn's error the store keeps.
    pub fn max_error_bytes(&self) -> usize {
        self.max_error_bytes
    }

    /// The delay before a chat whose last `failures` turns failed in a row is tried again:
    /// `retry_delay × 2^(failures − 1)`, at most `max_retry_delay`; `None` once `failures`
    /// reaches `max_attempts` (the chat is parked instead).
    pub fn retry_delay_after(&self, failures: u32) -> Option<Duration> {
        if failures >= self.max_attempts {
            return None;
        }
        let doublings = failures.saturating_sub(1);
        let factor = 1_u32.checked_shl(doublings).unwrap_or(u32::MAX);
        Some(
            self.retry_delay
                .saturating_mul(factor)
                .min(self.max_retry_delay),
        )
    }

    /// How often a worker resumes a working task that gave no `poll_interval` (5 s by default).
    #[must_use]
    pub fn with_task_poll(mut self, poll: Duration) -> Self {
        self.task_poll = poll;
        self
    }

    /// The poll interval of tasks that give none.
    pub fn task_poll(&self) -> Duration {
        self.task_poll
    }

    /// How long a call must have run for its result to be written the moment it ends, while
    /// calls of the same round still run ([`DEFAULT_WRITE_RESULT_AFTER`], 100 ms, by default).
    /// A quicker call's result is written with the round's next commit (the next claims, or the
    /// round's last results), so a round of quick calls costs two commits: one opening it with
    /// its claims, one closing it with its results. The trade: when the process dies in
    /// between, a finished call whose result was not written yet runs again (at most this long
    /// of work repeated per call). `Duration::ZERO` writes every result as it comes.
    ///
    /// ```
    /// use std::time::Duration;
    /// use llm_tools_core::store::DurableOptions;
    ///
    /// let options = DurableOptions::default().with_write_result_after(Duration::ZERO);
    /// assert_eq!(options.write_result_after(), Duration::ZERO);
    /// ```
    #[must_use]
    pub fn with_write_result_after(mut self, after: Duration) -> Self {
        self.write_result_after = after;
        self
    }

    /// How long a call must have run for its result to be written the moment it ends.
    pub fn write_result_after(&self) -> Duration {
        self.write_result_after
    }

    /// What to write when a turn that held the run claim failed with `error`, the chat's
    /// `failures`-th failed turn in a row (this one included): parked at once for `park`;
    /// parked once the attempts are used up; else due again after the backoff, from `now_ms`.
    pub(crate) fn release_after_failure(
        &self,
        error: &str,
        failures: u32,
        park: Option<ParkReason>,
        now_ms: u64,
    ) -> Release {
        let text = error_text(error, self.max_error_bytes);
        if let Some(reason) = park {
            return Release::Park {
                error: text,
                reason,
            };
        }
        match self.retry_delay_after(failures) {
            Some(delay) => Release::Retry {
                error: text,
                retry_at: now_ms
                    .saturating_add(u64::try_from(delay.as_millis()).unwrap_or(u64::MAX)),
            },
            None => Release::Park {
                error: text,
                reason: ParkReason::AttemptsExhausted,
            },
        }
    }
}

/// `text` cut to at most `max_bytes` bytes at a character boundary, ending with `…` when cut.
fn error_text(text: &str, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text.to_owned();
    }
    let ellipsis = '…';
    let mut end = max_bytes.saturating_sub(ellipsis.len_utf8());
    while end > 0 && !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut cut = text.get(..end).unwrap_or_default().to_owned();
    cut.push(ellipsis);
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_retry_delay_doubles_up_to_its_cap_and_never_overflows() {
        let options = DurableOptions::default().with_max_attempts(u32::MAX);
        let delays: Vec<u64> = (1..=9)
            .map(|n| options.retry_delay_after(n).map_or(0, |d| d.as_secs()))
            .collect();
        assert_eq!(delays, [5, 10, 20, 40, 80, 160, 320, 600, 600]);
        for failures in [32, 33, 64, 1_000, u32::MAX - 1] {
            assert_eq!(
                options.retry_delay_after(failures),
                Some(DEFAULT_MAX_RETRY_DELAY)
            );
        }
        assert_eq!(options.retry_delay_after(u32::MAX), None);
        let huge = DurableOptions::default()
            .with_retry_delay(Duration::MAX)
            .with_max_retry_delay(Duration::MAX);
        assert_eq!(huge.retry_delay_after(4), Some(Duration::MAX));
        let release = huge.release_after_failure(
            "the round budget is used up",
            1,
            Some(ParkReason::RoundsExceeded),
            u64::MAX,
        );
        assert!(matches!(
            release,
            Release::Park {
                reason: ParkReason::RoundsExceeded,
                ..
            }
        ));
    }

    #[test]
    fn the_default_policy_parks_at_the_fifth_failure() {
        let options = DurableOptions::default();
        let error = crate::error::Error::Store(Box::new(StoreError::Backend {
            location: "here".into(),
            message: "down".into(),
        }))
        .to_string();
        for failures in 1..5 {
            assert!(matches!(
                options.release_after_failure(&error, failures, None, 1_000),
                Release::Retry { retry_at, .. } if retry_at > 1_000
            ));
        }
        assert!(matches!(
            options.release_after_failure(&error, 5, None, 1_000),
            Release::Park {
                reason: ParkReason::AttemptsExhausted,
                ..
            }
        ));
    }

    #[test]
    fn a_long_error_is_cut_at_a_character_boundary() {
        let text = "é".repeat(5_000);
        let cut = error_text(&text, 101);
        assert!(cut.len() <= 101, "{}", cut.len());
        assert!(cut.ends_with('…'));
        assert_eq!(error_text("short", 101), "short");
        for name in [
            "rounds_exceeded",
            "attempts_exhausted",
            "undecodable",
            "claims_abandoned",
        ] {
            assert_eq!(
                ParkReason::from_name(name).map(ParkReason::as_str),
                Some(name)
            );
        }
        assert_eq!(ParkReason::from_name("other"), None);
    }

    #[test]
    fn a_run_lease_too_long_to_count_is_held_at_a_day_and_renewals_can_count_it() {
        let lease = DurableOptions::default()
            .with_run_lease(Duration::MAX)
            .run_lease();
        assert_eq!(lease, Duration::from_secs(24 * 60 * 60));
        // What the renewing heartbeat computes from it.
        assert!(std::time::Instant::now().checked_add(lease * 2).is_some());
        assert_eq!(
            DurableOptions::default()
                .with_run_lease(Duration::ZERO)
                .run_lease(),
            Duration::from_millis(100)
        );
    }
}
