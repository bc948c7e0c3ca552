//! A chat bound to a [`Store`]: creating and loading it, the run claim around each turn (with
//! its heartbeat), and writing what changed (messages, meta, call transitions) as one commit.
//!
//! The binding is the durable chat's [`Journal`]: the loop tells it its transitions (a
//! message changed, a round retired, a commit point) and never sees the store or the claim.
//! The claim is taken around a turn, in one place: `acquire` takes it (reading the chat again
//! when another process changed it), `Heartbeat::race` runs the loop beside the heartbeat
//! that renews it, and `end_turn` writes the turn's last commit and gives the claim up (as a
//! success, unchanged, past a call claimed elsewhere, or a failure to count), for
//! `ask`/`complete`, `step` and a worker's turn alike; a turn dropped before its end gives the
//! claim up all the same (`dropped_turn.rs`). `binding.rs` holds the binding itself and the stored form of a chat; `worker.rs` is the [`Worker`](crate::store::Worker) that runs due chats
//! (its public path is `llm_tools_core::store::Worker`).

pub(crate) mod binding;
mod bounded;
mod dropped_turn;
mod release;
pub(crate) mod worker;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dropped_turn::{HeldClaim, OnPanic};
pub(crate) use release::release_failed;

use binding::{
    Binding, call_record, decode, fingerprint, mark_stale, mark_stored, message_json, meta_of,
    wake_at,
};

use super::journal::Journal;
use super::ledger::Ledger;
use super::outcome::{Busy, Outcome, Step};
use super::stream::Sink;
use super::{Chat, file_tools};
use crate::store::{
    contract::{ChatRecord, DurableOptions, ParkReason, Release, RunClaim, Store},
    error::StoreError,
};
use crate::{error::Error, future::BoxFuture, message::Message, provider::Provider};

impl Journal for Binding {
    fn message_changed(&mut self, index: usize) {
        if index < self.stored_messages {
            self.changed_from = Some(self.changed_from.map_or(index, |i| i.min(index)));
        }
    }

    fn round_retired(&mut self, round: Ledger) {
        self.retired.push(round);
    }

    fn turn_files(
        &self,
        files: &Arc<dyn crate::files::FileStore>,
    ) -> Option<Arc<dyn crate::files::FileStore>> {
        let fenced = files.fenced(&self.chat_id, self.run_token?);
        if fenced.is_none() {
            warn_unfenced_once();
        }
        fenced
    }

    fn write_result_after(&self) -> Option<Duration> {
        Some(self.options.write_result_after())
    }

    fn keeps_calls(&self) -> bool {
        true
    }

    fn now_ms(&self) -> u64 {
        self.store.now_ms()
    }
}

/// The durable chat's entry points, which binding a chat to a store puts in its place (see
/// [`DurableEntry`](super::DurableEntry)): nothing else names them, so a program that never
/// binds a chat to a store links none of this module's code.
pub(crate) static ENTRY: super::DurableEntry = super::DurableEntry {
    turn: |chat, message, sink| Box::pin(chat.durable_turn(message, sink)),
    step: |chat, sink| Box::pin(chat.durable_step(sink)),
    commit: |binding, state| Box::pin(binding.write(state, None)),
};

/// Warns, once per process, that a durable chat's file store cannot fence its saves by the
/// run claim ([`FileStore::fenced`](crate::files::FileStore::fenced) gives `None`): a turn
/// that lost its claim can still overwrite a file the new holder saved.
fn warn_unfenced_once() {
    static WARNED: std::sync::Once = std::sync::Once::new();
    WARNED.call_once(|| {
        tracing::warn!(
            "a durable chat's file store cannot fence its saves by the run claim: a turn that lost the chat to another process can still overwrite that process's files (SqliteFileStore and PostgresFileStore fence)"
        );
    });
}

/// Why a turn's `error` parks its chat at once, if it does: a used-up round budget is never
/// tried again with a fresh one.
pub(crate) fn parks_at_once(error: &Error) -> Option<ParkReason> {
    match error {
        Error::RoundsExceeded { .. } => Some(ParkReason::RoundsExceeded),
        _ => None,
    }
}

/// The holder id of a new turn of the chat value whose holder base is `base`: `base#n`.
fn turn_holder(base: &str) -> Arc<str> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("{base}#{}", NEXT.fetch_add(1, Ordering::Relaxed)).into()
}

/// A holder id unique to this chat value: the process, the time and a counter.
pub(crate) fn new_holder() -> Arc<str> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("pid{}-{nanos:x}-{n}", std::process::id()).into()
}

/// Renews the run claim while a turn runs; ends only when the claim is lost.
///
/// Renewals have a deadline: the end of the lease the last granted claim or renewal asked for
/// (measured from when it was sent), plus one more lease of grace for a store slowed by load
/// (a renewal that lands late still extends the claim when no one took it over meanwhile).
/// When no renewal has succeeded by then (the store hangs, or keeps failing) the claim is
/// lost as far as this turn knows, even if the store still holds it, so the turn stops (its
/// calls in flight are dropped, no new call starts) and writes nothing more. Between the end
/// of the lease and the deadline another holder may take the chat over; the turn can start no
/// call then either, since a call's claim is written under the run claim's token before the
/// call starts, and a call claimed by this turn is not started elsewhere before its claim
/// ends.
struct Heartbeat {
    store: Arc<dyn Store>,
    chat_id: Arc<str>,
    token: u64,
    lease: Duration,
    /// The deadline of the next renewal: when the lease granted last ends, by this process's
    /// clock, plus one more lease.
    valid_until: Instant,
    /// Cancels the turn when another process asked for a cancel.
    cancel: super::cancel::CancelHandle,
    /// The time of the cancel request seen (0: none).
    cancel_seen: Arc<std::sync::atomic::AtomicU64>,
}

impl Heartbeat {
    fn new(
        binding: &Binding,
        token: u64,
        asked_at: Instant,
        cancel: super::cancel::CancelHandle,
    ) -> Self {
        let lease = binding.options.run_lease();
        Self {
            store: Arc::clone(&binding.store),
            chat_id: Arc::clone(&binding.chat_id),
            token,
            lease,
            valid_until: asked_at + lease * 2,
            cancel,
            cancel_seen: Arc::default(),
        }
    }

    /// The error of a claim whose renewals missed their deadline.
    fn missed(&self, last: Option<&StoreError>) -> Error {
        let cause = last.map_or_else(
            || "no renewal answered in time".to_owned(),
            |e| format!("the last renewal failed: {e}"),
        );
        StoreError::Stale {
            chat_id: self.chat_id.to_string(),
            what: format!(
                "the run claim was not renewed within its lease ({} ms; {cause}), so it counts as lost and the turn stopped",
                self.lease.as_millis()
            ),
        }
        .into()
    }

    /// Cancels the turn: another process asked for a cancel of the chat's calls at `at`
    /// ([`Store::request_cancel`]).
    fn cancel_asked(&self, at: u64) {
        use std::sync::atomic::Ordering;
        if self.cancel_seen.swap(at.max(1), Ordering::SeqCst) == 0 {
            tracing::info!(
                chat_id = &*self.chat_id,
                "another process asked to cancel the chat's calls"
            );
            self.cancel.cancel();
        }
    }

    async fn lost(mut self) -> Error {
        let mut last_error = None;
        loop {
            let wake = (Instant::now() + self.lease / 3).min(self.valid_until);
            tokio::time::sleep_until(wake.into()).await;
            let sent = Instant::now();
            let Some(left) = self
                .valid_until
                .checked_duration_since(sent)
                .filter(|d| !d.is_zero())
            else {
                return self.missed(last_error.as_ref());
            };
            let renewal = self.store.renew_run_reading_cancel(
                &self.chat_id,
                self.token,
                self.store.now_ms(),
                self.lease,
            );
            match tokio::time::timeout(left, renewal).await {
                Ok(Ok(cancel)) => {
                    self.valid_until = sent + self.lease * 2;
                    last_error = None;
                    if let Some(at) = cancel {
                        self.cancel_asked(at);
                    }
                }
                Ok(Err(e)) if e.is_stale() => return e.into(),
                Ok(Err(e)) => {
                    tracing::warn!(chat_id = &*self.chat_id, error = %e, "could not renew the chat's run claim");
                    last_error = Some(e);
                }
                Err(_) => return self.missed(last_error.as_ref()),
            }
        }
    }
}

/// The error of a write the chat could not make: another process holds its run claim.
fn busy_error(chat_id: Option<&str>, busy: &Busy) -> Error {
    StoreError::Stale {
        chat_id: chat_id.unwrap_or_default().to_owned(),
        what: format!(
            "another process holds the chat's run claim (for {} ms more)",
            busy.remaining().as_millis()
        ),
    }
    .into()
}

/// What a turn under the run claim ends with, and how its claim is given up then.
trait TurnEnd: Send {
    /// The release the turn's last commit carries (a turn stopped at a call claimed
    /// elsewhere: see [`Chat::release_past_call_claims`]).
    fn release(&self) -> Release;

    /// Whether the turn stopped at a call another holder has claimed.
    fn busy_on_a_call(&self) -> bool;
}

impl TurnEnd for Outcome {
    fn release(&self) -> Release {
        match self {
            Outcome::Done(_) | Outcome::Paused(_) | Outcome::Stopped(_) => Release::Succeeded,
            _ => Release::Unchanged,
        }
    }

    fn busy_on_a_call(&self) -> bool {
        matches!(self, Outcome::Busy(busy) if busy.call_id().is_some())
    }
}

impl TurnEnd for Step {
    fn release(&self) -> Release {
        match self {
            Step::Busy(_) => Release::Unchanged,
            _ => Release::Succeeded,
        }
    }

    fn busy_on_a_call(&self) -> bool {
        matches!(self, Step::Busy(busy) if busy.call_id().is_some())
    }
}

/// How a turn's loop ran beside its heartbeat.
struct Ran<T> {
    /// What the loop returned, or the lost claim's error.
    result: Result<T, Error>,
    /// The heartbeat could not renew the claim in time: the loop was dropped.
    lost: bool,
    /// The time of a cancel request the heartbeat saw (0: none).
    cancel_seen: Arc<std::sync::atomic::AtomicU64>,
}

impl Heartbeat {
    /// Runs `run` (the loop) beside the heartbeat, which renews the claim; the loop is dropped
    /// when the claim is lost.
    async fn race<T>(self, run: impl Future<Output = Result<T, Error>>) -> Ran<T> {
        let heartbeat = self;
        let cancel_seen = Arc::clone(&heartbeat.cancel_seen);
        let (result, lost) = tokio::select! {
            result = run => (result, false),
            lost = heartbeat.lost() => (Err(lost), true),
        };
        Ran {
            result,
            lost,
            cancel_seen,
        }
    }
}

/// Whether a turn got the run claim.
enum Acquired {
    Held(Heartbeat),
    Busy(Busy),
}

impl Chat {
    /// Creates a durable chat: an empty chat stored under `chat_id`, which writes every message
    /// and call transition to `store` as it happens (see [`crate::store`]). Fails with
    /// [`StoreError::AlreadyExists`] when the id is taken.
    pub async fn create(
        store: impl Store,
        chat_id: impl Into<String>,
        provider: impl Provider,
    ) -> Result<Self, Error> {
        Self::create_shared(Arc::new(store), chat_id, Arc::new(provider)).await
    }

    /// [`create`](Self::create) on a shared store and provider.
    pub async fn create_shared(
        store: Arc<dyn Store>,
        chat_id: impl Into<String>,
        provider: Arc<dyn Provider>,
    ) -> Result<Self, Error> {
        Self::boxed_create(store, chat_id.into().into(), provider).await
    }

    /// [`create_shared`](Self::create_shared) as a boxed future made here, so that a caller's
    /// crate compiles none of it (see [`Chat::boxed_turn`]).
    #[inline(never)]
    fn boxed_create(
        store: Arc<dyn Store>,
        chat_id: Arc<str>,
        provider: Arc<dyn Provider>,
    ) -> BoxFuture<'static, Result<Self, Error>> {
        Box::pin(async move {
            let mut chat = Self::with_shared_provider(provider);
            let meta = meta_of(&chat.state);
            store
                .create_chat(
                    &chat_id,
                    &ChatRecord::new(meta.clone(), Vec::new(), Vec::new(), 0),
                )
                .await?;
            chat.bind(store, chat_id, 0, meta);
            Ok(chat)
        })
    }

    /// Stores this chat (transcript, options, the round in progress) under a new `chat_id` and
    /// makes it durable from now on: a chat built in memory, or restored with
    /// [`from_state`](Self::from_state), moves into a store. Fails with
    /// [`StoreError::AlreadyExists`] when the id is taken, and for a chat that has a store
    /// already.
    pub async fn store_in(
        &mut self,
        store: impl Store,
        chat_id: impl Into<String>,
    ) -> Result<(), Error> {
        self.store_in_shared(Arc::new(store), chat_id).await
    }

    /// [`store_in`](Self::store_in) a shared store.
    pub async fn store_in_shared(
        &mut self,
        store: Arc<dyn Store>,
        chat_id: impl Into<String>,
    ) -> Result<(), Error> {
        self.boxed_store_in(store, chat_id.into().into()).await
    }

    /// [`store_in_shared`](Self::store_in_shared) as a boxed future made here (see
    /// [`Chat::boxed_turn`]).
    #[inline(never)]
    fn boxed_store_in(
        &mut self,
        store: Arc<dyn Store>,
        chat_id: Arc<str>,
    ) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async move {
            if self.durable.is_some() {
                return Err(crate::error::ConfigError::AlreadyStored.into());
            }
            let meta = meta_of(&self.state);
            let calls = self
                .state
                .round
                .iter()
                .flat_map(|round| {
                    round
                        .calls
                        .iter()
                        .enumerate()
                        .map(move |(i, entry)| call_record(round, i, entry))
                })
                .collect();
            let messages = self.state.messages.iter().map(message_json).collect();
            let record = ChatRecord::new(meta.clone(), messages, calls, 0).with_wake_at(wake_at(
                &self.state,
                &DurableOptions::default(),
                store.now_ms(),
            ));
            store.create_chat(&chat_id, &record).await?;
            self.bind(store, chat_id, 0, meta);
            Ok(())
        })
    }

    /// Loads a durable chat stored under `chat_id`, in any process: its transcript, options,
    /// remembered approvals, found tools and the round in progress (tasks with their data,
    /// questions, answers, approvals, claims). Tools, callbacks and the file store are code:
    /// add them again before `complete`.
    pub async fn load(
        store: impl Store,
        chat_id: impl Into<String>,
        provider: impl Provider,
    ) -> Result<Self, Error> {
        Self::load_shared(Arc::new(store), chat_id, Arc::new(provider)).await
    }

    /// [`load`](Self::load) from a shared store with a shared provider.
    pub async fn load_shared(
        store: Arc<dyn Store>,
        chat_id: impl Into<String>,
        provider: Arc<dyn Provider>,
    ) -> Result<Self, Error> {
        Self::boxed_load(store, chat_id.into().into(), provider).await
    }

    /// [`load_shared`](Self::load_shared) as a boxed future made here (see
    /// [`Chat::boxed_turn`]).
    #[inline(never)]
    fn boxed_load(
        store: Arc<dyn Store>,
        chat_id: Arc<str>,
        provider: Arc<dyn Provider>,
    ) -> BoxFuture<'static, Result<Self, Error>> {
        Box::pin(async move {
            let record = store.load_chat(&chat_id).await?;
            let revision = record.revision;
            let cancel_requested = record.cancel_requested;
            let state = decode(&chat_id, record)?;
            let mut chat = Self::with_shared_provider(provider);
            let meta = meta_of(&state);
            chat.state = state;
            chat.bind(store, chat_id, revision, meta);
            if let Some(binding) = chat.durable.as_deref_mut() {
                binding.cancel_requested = cancel_requested;
            }
            Ok(chat)
        })
    }

    /// Binds the chat to its store, which holds the chat's state as it is now.
    fn bind(&mut self, store: Arc<dyn Store>, chat_id: Arc<str>, revision: u64, meta: String) {
        self.holder = new_holder();
        self.turn_holder = Arc::clone(&self.holder);
        let mut binding = Box::new(Binding {
            store,
            chat_id,
            options: DurableOptions::default(),
            run_token: None,
            revision,
            stored_messages: 0,
            changed_from: None,
            retired: Vec::new(),
            stored_meta: String::new(),
            stale: false,
            stale_at: None,
            parked: false,
            cancel_requested: None,
            cancel_handled: None,
            pending_release: Default::default(),
        });
        mark_stored(&mut binding, &mut self.state, revision, meta);
        self.durable = Some(binding);
        self.durable_entry = Some(&ENTRY);
    }

    /// Sets how this durable chat uses its store (the run claim's lease). No effect on a chat
    /// without a store.
    pub fn with_durable_options(&mut self, options: DurableOptions) -> &mut Self {
        if let Some(binding) = self.durable.as_deref_mut() {
            binding.options = options;
        }
        self
    }

    /// The id a durable chat is stored under; `None` for a chat without a store.
    pub fn chat_id(&self) -> Option<&str> {
        self.durable.as_deref().map(|b| &*b.chat_id)
    }

    /// Writes what changed in memory since the last write (settled calls, options, messages
    /// added with [`add_message`](Self::add_message)) to the chat's store now, under the run
    /// claim. A chat without a store has nothing to write. Fails when another process holds
    /// the chat, or changed it since this one read it.
    pub async fn save(&mut self) -> Result<(), Error> {
        self.boxed_save().await
    }

    /// [`save`](Self::save) as a boxed future: compiled once, here (see
    /// [`boxed_turn`](Self::boxed_turn)).
    #[inline(never)]
    pub(crate) fn boxed_save(&mut self) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(self.save_now())
    }

    async fn save_now(&mut self) -> Result<(), Error> {
        self.settle_dropped_turn().await;
        let Some(binding) = self.durable.as_deref() else {
            return Ok(());
        };
        if binding.run_token.is_some() {
            return self.persist().await;
        }
        match self.acquire(true).await? {
            Acquired::Busy(busy) => Err(busy_error(self.chat_id(), &busy)),
            Acquired::Held(_) => {
                let saved = self.persist().await;
                self.release().await;
                saved
            }
        }
    }

    /// Adds a message for a worker to answer: the message is written to the store at once and
    /// the chat becomes due, so a [`Worker`](crate::store::Worker) in any process runs the loop.
    /// The web side of an application calls this and returns; the answer lands in the store.
    ///
    /// A parked chat (see [`crate::store`]) stays parked: the message is stored, and answered
    /// once the application releases the chat ([`Store::release_parked`]).
    pub async fn enqueue(&mut self, message: impl Into<Message>) -> Result<(), Error> {
        self.boxed_enqueue(message.into()).await
    }

    /// [`enqueue`](Self::enqueue) as a boxed future: compiled once, here (see
    /// [`boxed_turn`](Self::boxed_turn)).
    #[inline(never)]
    fn boxed_enqueue(&mut self, message: Message) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(self.enqueue_now(message))
    }

    async fn enqueue_now(&mut self, message: Message) -> Result<(), Error> {
        if self.durable.is_none() {
            return Err(crate::error::ConfigError::NotDurable(
                "only a durable chat can be enqueued: create or load it from a store",
            )
            .into());
        }
        self.settle_dropped_turn().await;
        if self
            .durable
            .as_deref()
            .is_some_and(|b| b.run_token.is_some())
        {
            self.add_message(message)?;
            return self.persist().await;
        }
        // The claim first: a chat behind its store is read again, and the message is added to
        // what the store holds.
        match self.acquire(true).await? {
            Acquired::Busy(busy) => Err(busy_error(self.chat_id(), &busy)),
            Acquired::Held(_) => {
                let saved = match self.add_message(message) {
                    Ok(_) => self.persist().await,
                    Err(e) => Err(e),
                };
                self.release().await;
                saved
            }
        }
    }

    /// The end of a turn that went as far as it could: writes what changed and gives the run
    /// claim up as `release` says, in one commit. When the write fails, the claim is still
    /// held: the caller gives it up as a failed turn.
    async fn persist_and_release(&mut self, release: Release) -> Result<(), Error> {
        match self.durable.as_deref_mut() {
            Some(binding) => binding.write(&mut self.state, Some(&release)).await,
            None => Ok(()),
        }
    }

    /// Whether the chat in memory has changes the store does not.
    fn has_unsaved_changes(&self) -> bool {
        let Some(binding) = self.durable.as_deref() else {
            return false;
        };
        binding.changed_from.is_some()
            || !binding.retired.is_empty()
            || binding.stored_messages != self.state.messages.len()
            || self
                .state
                .round
                .as_ref()
                .is_some_and(|r| r.calls.iter().any(|e| e.dirty))
            || meta_of(&self.state) != binding.stored_meta
    }

    /// Takes the run claim, and reads the chat again when another process changed it since.
    /// When a cancel another process asked for closes calls decided here (and `decisions_kept`,
    /// as for all but `cancel` itself), the cancel is written and the decisions' loss is an
    /// error.
    async fn acquire(&mut self, decisions_kept: bool) -> Result<Acquired, Error> {
        self.settle_dropped_turn().await;
        let Some(binding) = self.durable.as_deref_mut() else {
            return Err(crate::error::ConfigError::NotDurable("the chat has no store").into());
        };
        self.turn_holder = turn_holder(&self.holder);
        let holder = Arc::clone(&self.turn_holder);
        let store = Arc::clone(&binding.store);
        let chat_id = Arc::clone(&binding.chat_id);
        let lease = binding.options.run_lease();
        let asked_at = Instant::now();
        let now = store.now_ms();
        let (token, revision) = match store.claim_run(&chat_id, &holder, now, lease).await? {
            RunClaim::Busy { until_ms, .. } => {
                return Ok(Acquired::Busy(Busy::chat(until_ms, now)));
            }
            RunClaim::Granted { token, revision } => (token, revision),
        };
        binding.run_token = Some(token);
        if revision != binding.revision || binding.stale {
            // The refused turn's own changes are dropped; any made since are the
            // application's, and dropping them is an error, never silent.
            let own_changes = match binding.stale_at.as_deref() {
                Some(at) => fingerprint(&self.state) != at,
                None => !binding.stale && self.has_unsaved_changes(),
            };
            let reloaded = self.reload().await;
            if own_changes || reloaded.is_err() {
                self.release().await;
            }
            reloaded?;
            if own_changes {
                return Err(StoreError::Stale {
                    chat_id: chat_id.to_string(),
                    what: "the chat changed in another process since this one read it, so what was changed here since was not stored; the chat has been read again: make the change again".into(),
                }
                .into());
            }
        }
        let Some(binding) = self.durable.as_deref() else {
            return Err(crate::error::ConfigError::NotDurable("the chat has no store").into());
        };
        let heartbeat = Heartbeat::new(binding, token, asked_at, self.cancel.clone());
        // A decision made here (an approval, an answer) on a call that a cancel another process
        // asked for closes: the cancel is carried out and written, and the decision's loss is
        // an error, never a silent `Ok`.
        let decided_here = decisions_kept
            && binding.cancel_requested.is_some()
            && self
                .state
                .round
                .as_ref()
                .is_some_and(|r| r.calls.iter().any(|e| e.dirty));
        if self.carry_out_requested_cancel().await && decided_here {
            drop(heartbeat);
            let written = self.persist().await;
            self.release().await;
            written?;
            return Err(StoreError::Stale {
                chat_id: chat_id.to_string(),
                what: "another process asked to cancel the chat's calls before what was decided here was stored: the calls are closed, and the decisions made here on them did not take effect".into(),
            }
            .into());
        }
        Ok(Acquired::Held(heartbeat))
    }

    /// Reads the chat's state again from the store (the configuration in code stays).
    async fn reload(&mut self) -> Result<(), Error> {
        let Some(binding) = self.durable.as_deref_mut() else {
            return Ok(());
        };
        let record = binding.store.load_chat(&binding.chat_id).await?;
        let revision = record.revision;
        binding.cancel_requested = record.cancel_requested;
        let mut state = decode(&binding.chat_id, record)?;
        let meta = meta_of(&state);
        mark_stored(binding, &mut state, revision, meta);
        self.state = state;
        if self.files.is_some() {
            self.registry
                .set_extras(file_tools::file_tools(self.file_editing));
        }
        Ok(())
    }

    /// Ends a turn whose run claim was lost (its heartbeat could not renew it in time):
    /// nothing of the turn is written any more, the claim is given up in case the store still
    /// holds it, and the chat is read again before its next turn.
    async fn claim_lost(&mut self) {
        let Some(binding) = self.durable.as_deref_mut() else {
            return;
        };
        mark_stale(binding, &self.state);
        // Bounded: the store that did not answer the renewal may not answer this either.
        let lease = binding.options.run_lease();
        if tokio::time::timeout(lease, self.release()).await.is_err() {
            tracing::warn!(
                chat_id = self.chat_id().unwrap_or_default(),
                "could not give the lost run claim up; it ends with its lease"
            );
        }
    }

    /// Gives the run claim up, leaving the chat's failure record as it is.
    async fn release(&mut self) {
        self.release_with(&Release::Unchanged).await;
    }

    /// Gives the run claim up after a failed turn: the failure is counted and kept as the
    /// chat's last error, and the chat is parked (at once for a used-up round budget, or once
    /// its attempts are used up) or due again after the backoff. A refused write (another
    /// holder took the claim over) changes nothing.
    async fn release_for_retry(&mut self, error: &Error) {
        if matches!(error, Error::Store(s) if s.is_stale()) {
            self.release().await;
            return;
        }
        let Some(binding) = self.durable.as_deref_mut() else {
            return;
        };
        let Some(token) = binding.run_token.take() else {
            return;
        };
        let released = release_failed(
            &*binding.store,
            &binding.chat_id,
            token,
            &binding.options,
            &error.to_string(),
            parks_at_once(error),
        )
        .await;
        binding.parked = matches!(released, Some(Release::Park { .. }));
    }

    async fn release_with(&mut self, release: &Release) {
        if let Some(binding) = self.durable.as_deref_mut() {
            binding.release_with(release).await;
        }
    }

    /// Whether the chat's last failed turn parked it.
    pub(crate) fn was_parked(&self) -> bool {
        self.durable.as_deref().is_some_and(|b| b.parked)
    }

    /// One `ask`/`complete` of a durable chat ([`Chat::turn`]): the loop inside the run claim.
    pub(crate) async fn durable_turn(
        &mut self,
        message: Option<Message>,
        sink: Option<&Sink>,
    ) -> Result<Outcome, Error> {
        let heartbeat = match self.acquire(true).await? {
            Acquired::Busy(busy) => return self.busy(busy).map(Outcome::Busy),
            Acquired::Held(heartbeat) => heartbeat,
        };
        // A handle loaded without the tool of a call that waited for it is the application's
        // mistake, not a failed turn of the chat: refused before it starts, counting toward
        // no parking.
        if let Err(refused) = self.needed_tools_registered() {
            drop(heartbeat);
            self.release().await;
            return Err(refused);
        }
        let claim = self.held_claim(self.count_a_panic());
        dropped_turn::giving_up_if_dropped(claim, self.complete_under(heartbeat, message, sink))
            .await
    }

    /// One `step` of a durable chat ([`Chat::step_turn`]): the loop's step inside the run
    /// claim.
    pub(crate) async fn durable_step(&mut self, sink: Option<&Sink>) -> Result<Step, Error> {
        let heartbeat = match self.acquire(true).await? {
            Acquired::Busy(busy) => return self.busy(busy).map(Step::Busy),
            Acquired::Held(heartbeat) => heartbeat,
        };
        // A handle loaded without the tool of a call that waited for it is the application's
        // mistake, not a failed turn of the chat: refused before it starts, counting toward
        // no parking.
        if let Err(refused) = self.needed_tools_registered() {
            drop(heartbeat);
            self.release().await;
            return Err(refused);
        }
        let claim = self.held_claim(self.count_a_panic());
        let step = async {
            let ran = heartbeat.race(self.step_with(sink)).await;
            self.end_turn(ran).await
        };
        dropped_turn::giving_up_if_dropped(claim, step).await
    }

    /// A turn that met another process's run claim: `Busy` when nothing here waits to be
    /// stored; else the error `save` gives, so changes made here (a decision, an answer, an
    /// edit) are never left unstored behind an `Ok`. The handle keeps them for another try.
    fn busy(&self, busy: Busy) -> Result<Busy, Error> {
        if self.has_unsaved_changes() {
            return Err(StoreError::Stale {
                chat_id: self.chat_id().unwrap_or_default().to_owned(),
                what: format!(
                    "another process holds the chat's run claim (for {} ms more), so the \
                     changes made here (a decision, an answer, an edit) are not stored yet; this \
                     chat keeps them: `save` or `complete` again later",
                    busy.remaining().as_millis()
                ),
            }
            .into());
        }
        Ok(busy)
    }

    /// The run claim this chat holds now, for a turn that gives it up when dropped.
    fn held_claim(&self, on_panic: OnPanic) -> Option<HeldClaim> {
        let binding = self.durable.as_deref()?;
        Some(HeldClaim {
            store: Arc::clone(&binding.store),
            chat_id: Arc::clone(&binding.chat_id),
            token: binding.run_token?,
            pending: Arc::clone(&binding.pending_release),
            on_panic,
        })
    }

    /// What a panic through a turn of the application's does with its claim: the turn
    /// failed, and is counted as a failed turn.
    fn count_a_panic(&self) -> OnPanic {
        OnPanic::CountFailure(
            self.durable
                .as_deref()
                .map(|binding| binding.options.clone())
                .unwrap_or_default(),
        )
    }

    /// Waits for the release of a dropped turn's claim, if one is under way: the chat holds
    /// no claim after it.
    async fn settle_dropped_turn(&mut self) {
        let Some(binding) = self.durable.as_deref_mut() else {
            return;
        };
        if dropped_turn::wait_for_release(&binding.pending_release).await {
            binding.run_token = None;
        }
    }

    /// The loop of an `ask`/`complete` under the held claim, then the turn's end.
    async fn complete_under(
        &mut self,
        heartbeat: Heartbeat,
        message: Option<Message>,
        sink: Option<&Sink>,
    ) -> Result<Outcome, Error> {
        if let Some(message) = message
            && let Err(refused) = self.add_message(message)
        {
            // The application's mistake (a message while calls wait): nothing ran, and it
            // counts toward no parking of the chat.
            drop(heartbeat);
            self.release().await;
            return Err(refused);
        }
        let ran = heartbeat.race(self.run(sink)).await;
        self.end_turn(ran).await
    }

    /// The end of a turn that held the run claim: a lost claim writes nothing more; otherwise
    /// a cancel another process asked for is carried out, the turn's last write and the
    /// claim's release go as one commit, and a failed turn's release counts the failure after
    /// the write (a cancelled one's does not).
    async fn end_turn<T: TurnEnd>(&mut self, ran: Ran<T>) -> Result<T, Error> {
        if ran.lost {
            self.claim_lost().await;
            return ran.result;
        }
        self.after_cancel_request(&ran.cancel_seen).await;
        let result = match ran.result {
            Ok(end) => {
                let release = if end.busy_on_a_call() {
                    self.release_past_call_claims()
                } else {
                    end.release()
                };
                self.persist_and_release(release).await.map(|()| end)
            }
            Err(e) => {
                if matches!(e, Error::Cancelled) {
                    self.rest_after_cancel();
                }
                if let Err(write) = self.persist().await {
                    tracing::warn!(error = %write, "could not write the chat after an error");
                }
                Err(e)
            }
        };
        match &result {
            Ok(_) => {}
            Err(Error::Cancelled) => self.release().await,
            Err(e) => self.release_for_retry(e).await,
        }
        result
    }

    /// How a turn that stopped at a call another holder has claimed gives the run claim up:
    /// the chat is not due again before the earliest such claim ends (by the store's clock,
    /// read from the round as the turn's settle did), so no worker picks it, and reads it
    /// whole, at every poll meanwhile. [`Release::Unchanged`] when no such claim is left (it
    /// ended since: the call is due now).
    fn release_past_call_claims(&self) -> Release {
        let Some(binding) = self.durable.as_deref() else {
            return Release::Unchanged;
        };
        let now = binding.store.now_ms();
        match self
            .state
            .round
            .as_ref()
            .and_then(|round| round.claimed_elsewhere(now, &self.turn_holder))
        {
            Some((_, until)) => Release::CallClaimedElsewhere { until },
            None => Release::Unchanged,
        }
    }

    /// Loads a chat a worker picked, with the run claim it took for `holder`.
    pub(crate) async fn load_claimed(
        store: Arc<dyn Store>,
        due: &crate::store::contract::DueChat,
        provider: Arc<dyn Provider>,
        worker: &str,
        options: DurableOptions,
    ) -> Result<Self, Error> {
        let mut chat = Self::load_shared(store, due.chat_id.as_str(), provider).await?;
        // The worker's name, then this chat value's own part: a turn's id is unique even
        // among the worker's turns at once.
        chat.holder = format!("{worker}/{}", chat.holder).into();
        chat.turn_holder = turn_holder(&chat.holder);
        if let Some(binding) = chat.durable.as_deref_mut() {
            binding.run_token = Some(due.token);
            binding.options = options;
        }
        Ok(chat)
    }

    /// `complete` on a chat whose run claim is already held (a worker's pick, asked for at
    /// `picked_at`).
    pub(crate) async fn complete_claimed(&mut self, picked_at: Instant) -> Result<Outcome, Error> {
        let Some(binding) = self.durable.as_deref() else {
            return self.complete().await;
        };
        let Some(token) = binding.run_token else {
            return self.complete().await;
        };
        let heartbeat = Heartbeat::new(binding, token, picked_at, self.cancel.clone());
        if self.carry_out_requested_cancel().await {
            // Cancelled from elsewhere while no one held the chat: the calls are closed, the
            // chat rests; the model is not asked.
            let written = self.persist().await;
            self.release().await;
            written?;
            return Err(Error::Cancelled);
        }
        // The worker catches a panic of the turn and counts it, with the panic's message.
        let claim = self.held_claim(OnPanic::LeaveToCaller);
        dropped_turn::giving_up_if_dropped(claim, self.complete_under(heartbeat, None, None)).await
    }

    /// Gives a picked chat's run claim back without running it, after `error` (the worker's
    /// setup failed): a failed turn, due again after the backoff.
    pub(crate) async fn hand_back(&mut self, error: &Error) {
        self.release_for_retry(error).await;
    }

    /// [`cancel`](Self::cancel): closes the round, under the run claim for a durable chat.
    pub(crate) async fn cancel_round(&mut self) -> Result<(), Error> {
        let text = super::calls::CANCELLED_BEFORE_RUN;
        if self.durable.is_none() {
            self.tasks_cancellable()?;
            self.close_round(text, None).await;
            return Ok(());
        }
        match self.acquire(false).await? {
            Acquired::Held(_) => {
                if let Err(error) = self.tasks_cancellable() {
                    self.release().await;
                    return Err(error);
                }
            }
            Acquired::Busy(_) => {
                // The holder carries it out at its next heartbeat; a worker, if it lets go.
                let Some(binding) = self.durable.as_deref() else {
                    return Ok(());
                };
                binding
                    .store
                    .request_cancel(&binding.chat_id, binding.store.now_ms())
                    .await?;
                tracing::info!(
                    chat_id = &*binding.chat_id,
                    "another process holds the chat; asked it to cancel the calls"
                );
                return Ok(());
            }
        }
        self.close_round(text, None).await;
        self.rest_after_cancel();
        let written = self.persist().await;
        self.release().await;
        written
    }

    /// Has the next commit leave the chat at rest, as a cancel asked from another process does:
    /// the calls the application cancelled here (`cancel`, a cancelled turn) are closed, and
    /// no worker carries the model on from their results until someone acts (a message, an
    /// answer, `complete`). A cancel someone else asked for is carried out with it.
    fn rest_after_cancel(&mut self) {
        if let Some(binding) = self.durable.as_deref_mut() {
            // 0: a request of no time, so a request made since stays for the holder to see.
            binding.cancel_handled = Some(
                binding
                    .cancel_handled
                    .or(binding.cancel_requested.take())
                    .unwrap_or(0),
            );
        }
    }

    /// Carries out a cancel another process asked for, read with the chat: each paused task
    /// is cancelled through its tool and every call without a result is closed; the next
    /// commit clears the request. Returns whether there was one.
    async fn carry_out_requested_cancel(&mut self) -> bool {
        if self.tasks_cancellable().is_err() {
            // A paused task whose tool this handle lacks: closing its call would leave the work
            // running. The request stays for a handle, or a worker, that has the tool.
            return false;
        }
        let Some(requested) = self
            .durable
            .as_deref_mut()
            .and_then(|b| b.cancel_requested.take())
        else {
            return false;
        };
        self.close_round(super::calls::CANCELLED_BEFORE_RUN, None)
            .await;
        if let Some(binding) = self.durable.as_deref_mut() {
            binding.cancel_handled = Some(requested);
        }
        true
    }

    /// After a turn whose heartbeat saw a cancel request (and cancelled the turn): closes what
    /// is still open, and has the next commit clear the request.
    async fn after_cancel_request(&mut self, seen: &std::sync::atomic::AtomicU64) {
        let at = seen.load(std::sync::atomic::Ordering::SeqCst);
        if at == 0 {
            return;
        }
        // The turn may have ended before it used the cancellation: none is left for the next.
        let _ = self.cancel.take();
        self.close_round(super::calls::CANCELLED, None).await;
        if let Some(binding) = self.durable.as_deref_mut() {
            binding.cancel_requested = None;
            binding.cancel_handled = Some(at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_used_up_round_budget_parks_at_once() {
        assert_eq!(
            parks_at_once(&Error::RoundsExceeded { rounds: 1 }),
            Some(ParkReason::RoundsExceeded)
        );
        assert_eq!(parks_at_once(&Error::Cancelled), None);
    }
}
