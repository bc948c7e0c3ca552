//! Durable chats: a [`Store`] keeps a chat's transcript, options and the ledger of its round,
//! written as they change, so a chat survives its process and carries on in another.
//!
//! Two stores come with the crate: `SqliteStore` (feature `sqlite`: one file, every process on
//! the machine) and `PostgresStore` (feature `postgres`: many processes on many machines). A
//! [`Worker`] runs the chats that are due (a new message from [`Chat::enqueue`](crate::Chat::enqueue),
//! a decided pause, a task to poll, a call whose worker died) in as many processes as you like.
//!
//! A chat bound to a store ([`Chat::create`](crate::Chat::create),
//! [`Chat::load`](crate::Chat::load)) writes every message and every call transition as it
//! happens, and holds two kinds of claims:
//!
//! - a **run claim** on the chat: one process drives a chat's loop at a time. `ask`, `complete`
//!   and `step` take it first; while another live process holds it they return
//!   [`Outcome::Busy`](crate::Outcome::Busy) at once and run nothing. The claim is a short lease
//!   ([`DurableOptions::with_run_lease`], 30 s by default) renewed while the holder works, so
//!   the chat of a crashed holder is picked up soon after.
//! - a **call claim** on each tool call, taken (written) before the tool starts: it lasts the
//!   call's `max_run_time` and carries a **fencing token** that grows with every grant. A result
//!   is written only under the call's current token. A call whose claim expired (its process
//!   died, or it ran past its `max_run_time`) runs again, with the next attempt number; a call
//!   that pauses (a task, a question, an approval) gives its claim up.
//!
//! Every write is conditional: on the run claim's token, and for each call on the token the
//! writer last saw. A writer whose claim was taken over gets [`StoreError::Stale`], and nothing
//! it would have written lands.
//!
//! # What is guaranteed
//!
//! - **Results in the transcript: exactly once.** A call gets one result, in call order; a
//!   finished result is never lost or run again, whichever process crashes when.
//! - **Tool side effects: at least once.** A tool whose process dies mid-run runs again once its
//!   claim expires. Make side effects idempotent with the key the call's context gives:
//!   [`ToolContext::call_id`](crate::ToolContext::call_id) (the same for every attempt) and
//!   [`ToolContext::attempt`](crate::ToolContext::attempt).
//!
//! Settling calls ([`Chat::approve`](crate::Chat::approve), `answer`, `deny`, …) changes the
//! chat in memory; the change is written by the next `ask`, `complete` or `step`, or at once
//! with [`Chat::save`](crate::Chat::save).
//!
//! ```
//! # #[cfg(feature = "sqlite")] {
//! use llm_tools_core::{tool, Chat};
//! use llm_tools_core::store::SqliteStore;
//! use llm_tools_core::testing::ScriptedProvider;
//! use serde_json::json;
//!
//! /// Drops a database table
//! #[tool(needs_approval)]
//! async fn drop_table(table: String) -> String { format!("dropped {table}") }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let dir = std::env::temp_dir().join(format!("llm-tools-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let store = SqliteStore::open(dir.join("chats.db")).await?;
//! let model = ScriptedProvider::new()
//!     .then_call("drop_table", json!({"table": "sessions"}))
//!     .then_text("Dropped.");
//!
//! // One process asks; the call waits for an approval.
//! let mut chat = Chat::create(store.clone(), "support-42", model.clone()).await?;
//! chat.with_tools(DropTable)?;
//! assert!(chat.ask("Drop the sessions table").await?.is_paused());
//! drop(chat);
//!
//! // Another (here: the same) process loads it, approves, and finishes.
//! let mut chat = Chat::load(store, "support-42", model).await?;
//! chat.with_tools(DropTable)?;
//! let id = chat.pending_approvals()[0].id.clone();
//! chat.approve(&id)?;
//! assert_eq!(chat.complete().await?.text().as_deref(), Some("Dropped."));
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! # }
//! ```

#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;

use std::time::Duration;

use crate::BoxFuture;

#[cfg(feature = "postgres")]
pub use postgres::{PostgresOptions, PostgresStore};
#[cfg(feature = "sqlite")]
pub use sqlite::{SqliteFileStore, SqliteStore};
pub use worker::{Worker, WorkerReport};
mod worker;

/// The newest schema version the stores of this library write.
pub const SCHEMA_VERSION: u32 = 2;

/// Where durable chats live: an object-safe async interface a database implements.
///
/// The chat serializes what it stores (JSON text) and says which writes are conditional; a
/// store keeps the text, runs each [`Commit`] as one transaction, and refuses a commit whose
/// conditions do not hold with [`StoreError::Stale`]. Times are milliseconds since the Unix
/// epoch, from the writer's clock.
pub trait Store: Send + Sync + 'static {
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

    /// Gives the run claim `token` up (nothing happens when it is no longer that token's).
    /// `retry_at`, when given, replaces the chat's wake time (a failed turn is retried then).
    fn release_run<'a>(
        &'a self,
        chat_id: &'a str,
        token: u64,
        retry_at: Option<u64>,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Picks up to `limit` chats that are due (their wake time has come and no one holds their
    /// run claim) and takes their run claims for `holder`, skipping chats another picker is
    /// taking at the same moment. The earliest due first.
    fn claim_due<'a>(
        &'a self,
        holder: &'a str,
        now_ms: u64,
        lease: Duration,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<DueChat>, StoreError>>;

    /// Writes one batch of changes, all or nothing, and returns the chat's new revision.
    fn commit<'a>(
        &'a self,
        chat_id: &'a str,
        commit: &'a Commit,
    ) -> BoxFuture<'a, Result<u64, StoreError>>;
}

/// A shared store is a store: `Arc<dyn Store>` (or `Arc<SqliteStore>`) goes wherever a store
/// does.
impl<S: Store + ?Sized> Store for std::sync::Arc<S> {
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
        retry_at: Option<u64>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        (**self).release_run(chat_id, token, retry_at)
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

    fn commit<'a>(
        &'a self,
        chat_id: &'a str,
        commit: &'a Commit,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        (**self).commit(chat_id, commit)
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
        }
    }

    /// Sets when the chat has work a worker can do.
    #[must_use]
    pub fn with_wake_at(mut self, wake_at: Option<u64>) -> Self {
        self.wake_at = wake_at;
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
    /// The run claim the writer holds: the commit is refused unless it is still the chat's.
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
        }
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

/// How a durable chat uses its store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DurableOptions {
    run_lease: Duration,
    retry_delay: Duration,
    task_poll: Duration,
}

impl Default for DurableOptions {
    fn default() -> Self {
        Self {
            run_lease: Duration::from_secs(30),
            retry_delay: Duration::from_secs(5),
            task_poll: Duration::from_secs(5),
        }
    }
}

impl DurableOptions {
    /// How long the run claim lasts without a renewal (30 s by default): a crashed holder's
    /// chat can be picked up after this long. The holder renews it every third of it. At
    /// least 100 ms.
    #[must_use]
    pub fn with_run_lease(mut self, lease: Duration) -> Self {
        self.run_lease = lease.max(Duration::from_millis(100));
        self
    }

    /// The run claim's lease.
    pub fn run_lease(&self) -> Duration {
        self.run_lease
    }

    /// How long after a failed turn (a provider error, a fatal tool error) a worker picks the
    /// chat again (5 s by default).
    #[must_use]
    pub fn with_retry_delay(mut self, delay: Duration) -> Self {
        self.retry_delay = delay;
        self
    }

    /// The delay before a failed turn is retried.
    pub fn retry_delay(&self) -> Duration {
        self.retry_delay
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
}

/// What went wrong in a store. Each names what and where; none loses what is stored.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No chat has this id.
    #[error("no stored chat has the id `{chat_id}`")]
    NotFound {
        /// The id asked for.
        chat_id: String,
    },

    /// A chat with this id exists already.
    #[error("a stored chat has the id `{chat_id}` already; load it instead")]
    AlreadyExists {
        /// The id.
        chat_id: String,
    },

    /// A conditional write was refused: another holder took the chat's run claim, or a call's
    /// claim, since this writer saw it. Nothing of the commit was written; load the chat again.
    #[error("chat `{chat_id}`: {what}; nothing was written (load the chat again)")]
    Stale {
        /// The chat.
        chat_id: String,
        /// Which condition failed.
        what: String,
    },

    /// The file is not a database, or is damaged.
    #[error("{location} is not a readable database: {message}")]
    Corrupt {
        /// The file.
        location: String,
        /// What the database engine said.
        message: String,
    },

    /// The database holds tables of that name that this library did not make.
    #[error("{location} has tables named like this library's that it did not make: {message}")]
    Foreign {
        /// The file or schema.
        location: String,
        /// What was found.
        message: String,
    },

    /// The database was written by a newer version of this library.
    #[error(
        "{location} has schema version {found}, newer than this library's {supported}; upgrade llm-tools"
    )]
    NewerSchema {
        /// The file or schema.
        location: String,
        /// The version found.
        found: u32,
        /// The newest version this library knows.
        supported: u32,
    },

    /// The database stayed locked by another connection for longer than the store waits.
    #[error("{location} stayed locked by another connection: {message}")]
    Locked {
        /// The file.
        location: String,
        /// What the database engine said.
        message: String,
    },

    /// A stored value could not be read back.
    #[error("chat `{chat_id}`: the stored {what} could not be read: {source}")]
    Decode {
        /// The chat.
        chat_id: String,
        /// Which value: `meta`, `message 3`, `call call_1`.
        what: String,
        /// What was wrong with it.
        #[source]
        source: serde_json::Error,
    },

    /// Any other failure of the database or of the store's I/O.
    #[error("{location}: {message}")]
    Backend {
        /// The file or server.
        location: String,
        /// What went wrong.
        message: String,
    },
}

impl StoreError {
    /// Whether the error is a refused conditional write (another holder took a claim over).
    pub fn is_stale(&self) -> bool {
        matches!(self, StoreError::Stale { .. })
    }
}
