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
//!   the chat of a crashed holder is picked up soon after. Renewals have a deadline (the
//!   lease's end plus one more lease): a turn whose renewals do not get through by then stops
//!   at once, starts no call, and writes nothing more (it returns [`StoreError::Stale`]).
//!   Every turn claims under a holder id of its own, so two turns, even of one
//!   [`Worker`] in one process, never pass for one: a call another turn is running is not
//!   started again before its claim ends, and a `sequential` call it runs stays a barrier.
//! - a **call claim** on each tool call, taken (written) before the tool starts: it lasts the
//!   call's `max_run_time` and carries a **fencing token** that grows with every grant. A result
//!   is written only under the call's current token. A call whose claim expired (its process
//!   died, or it ran past its `max_run_time`) runs again, with the next attempt number; a call
//!   that pauses (a task, a question, an approval) gives its claim up. A turn that meets a call
//!   another holder still has claimed ends [`Outcome::Busy`](crate::Outcome::Busy) (its
//!   [`call_id`](crate::chat::Busy::call_id) says which), and the chat is not due again before
//!   that claim ends ([`Release::CallClaimedElsewhere`]): no [`Worker`] picks it meanwhile,
//!   unless work is due sooner (a task's poll, a cancel request).
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
//! with [`Chat::save`](crate::Chat::save). Nothing the application adds is dropped silently:
//! a chat whose write was refused (another process took it over) reads the store again
//! before its next write; [`Chat::enqueue`](crate::Chat::enqueue) then adds its message to
//! what the store holds, and a change made in memory since the refusal is refused too
//! ([`StoreError::Stale`]; make it again on the chat, which holds the stored state now).
//! Approving, answering or completing a call whose tool the chat does not have (a chat
//! loaded without `with_tools`) is [`Error::ToolNotRegistered`](crate::Error::ToolNotRegistered)
//! and leaves the call pending.
//!
//! A store call no turn's heartbeat watches (the commit that ends a turn, a claim's release,
//! a worker's pick of due chats and its load of one) is bounded by the run lease
//! ([`DurableOptions::with_run_lease`]): a store that stops answering while its connection
//! stays up (a database server stopped, a proxy whose upstream hangs) holds neither a turn nor
//! a worker past it. The call fails saying the store did not answer; a commit's outcome is
//! then unknown, and the chat is read again before its next turn, as after a lost claim.
//!
//! # Cancelling from any process
//!
//! [`Chat::cancel`](crate::Chat::cancel) on a chat another process holds records a cancel
//! request in the store ([`Store::request_cancel`]; schema version 4 adds the column). The
//! holder sees it at its next heartbeat (every third of the run lease): its turn is cancelled,
//! each paused task is cancelled through its tool, every call without a result is closed, and
//! the commit that writes this clears the request. A chat no one holds is due at once: a
//! [`Worker`] carries the cancel out the same way without asking the model
//! ([`WorkerReport::cancelled`]), and so does the next turn of any chat value that loads it.
//! A cancelled chat rests until the application adds a message or calls `complete`: one
//! cancelled from another process, one whose calls `cancel` closed in this one, and one whose
//! turn was cancelled through its [`CancelHandle`](crate::chat::CancelHandle) alike.
//!
//! # Failed turns and parked chats
//!
//! A turn that fails (a provider error, a fatal tool error, a store error) is counted in the
//! store, its error kept as the chat's last error, and the chat is due again after a delay that
//! doubles with each failure in a row ([`DurableOptions::with_retry_delay`], 5 s at first, at
//! most [`DurableOptions::with_max_retry_delay`], 10 minutes). After
//! [`DurableOptions::with_max_attempts`] failed turns in a row (5 by default) the chat is
//! **parked**; a turn that used its round budget up
//! ([`Error::RoundsExceeded`](crate::Error::RoundsExceeded)) parks it at once, and so does a
//! stored chat that does not decode. No [`Worker`] picks a
//! parked chat: the budget meant to cap spending holds. [`Store::chat_status`] shows a chat's
//! status, failure count and last error, [`Store::parked_chats`] lists the parked ones, and
//! [`Store::release_parked`] makes one runnable again once the application has acted (a turn
//! the application runs itself that ends well releases it too). A turn that ends with an
//! answer or a pause clears the failure count.
//!
//! A turn that ends its worker (the process dies mid-turn: a tool that aborts it, memory run
//! out on the chat's data, a kill by the platform) is no failed turn: nothing is left to count
//! it. Its claim is abandoned, and the next worker takes the chat over once the lease ends.
//! The stores count those takeovers per chat, in the pick's own statement (one atomic
//! `UPDATE … RETURNING` on SQLite, `FOR UPDATE SKIP LOCKED` on PostgreSQL; schema version 10),
//! and in the application's own claim (an `enqueue` after the lease ended takes the dead
//! claim over too): a chat whose claim was abandoned
//! [`DurableOptions::with_max_abandoned_claims`] times in a row
//! ([`DEFAULT_MAX_ABANDONED_CLAIMS`], 3) is parked by the next pick instead of claimed again
//! ([`ParkReason::ClaimsAbandoned`], its last error saying how many times its turn ended its
//! worker; [`ChatStatus::abandoned_claims`]), with its history, calls and state as they were.
//! A worker taking back a claim of its own (its live turn's renewals lagged) counts nothing.
//! [`Store::release_parked`] resumes it and starts the count again; so does any turn that ends
//! in its process (an answer, a pause, a counted failure), but not a claim given back
//! unchanged (a save, a message enqueued, a cancel, a busy turn). Only workers keep to the
//! parking: a turn the application runs itself (`ask`, `complete`) on a parked chat runs what
//! crashed the workers, in its own process; read [`Store::chat_status`] first.
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

pub(crate) mod contract;
pub(crate) mod error;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod lease;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;

pub use crate::chat::durable::binding::MAX_STORED_DEPTH;
pub use crate::chat::durable::worker::{Worker, WorkerReport};
pub use contract::{
    CallRecord, CallWrite, ChatRecord, ChatStatus, Commit, DEFAULT_MAX_ABANDONED_CLAIMS,
    DEFAULT_MAX_ATTEMPTS, DEFAULT_MAX_ERROR_BYTES, DEFAULT_MAX_RETRY_DELAY, DEFAULT_RETRY_DELAY,
    DEFAULT_WRITE_RESULT_AFTER, DueChat, DurableOptions, MAX_SECRET_BYTES, MAX_SECRET_KEY_BYTES,
    ParkReason, Release, RunClaim, SCHEMA_VERSION, Store,
};
pub use error::{StoreError, TlsFailure};
#[cfg(feature = "postgres")]
pub use postgres::{PostgresFileStore, PostgresOptions, PostgresStore, SslMode};
#[cfg(feature = "sqlite")]
pub use sqlite::{SqliteFileStore, SqliteOptions, SqliteStore};
