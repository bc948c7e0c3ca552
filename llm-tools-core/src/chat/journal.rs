//! The chat loop's journal: what the loop ([`driver`](super::driver), [`round`](super::round))
//! says at its transitions, for whatever keeps the chat to write down.
//!
//! The loop calls only the [`Chat`] methods below (`message_changed`, `retire_round`,
//! `persist`, `turn_files`, `write_result_after`, `keeps_stored_calls`); each hands the
//! transition to the chat's [`Journal`]. A chat in memory has [`InMemory`], whose methods do
//! nothing (and cost nothing: no allocation, no store); a durable chat's journal is its binding
//! to a store ([`durable`](super::durable)), which writes commits. The run claim of a durable
//! chat is taken around a turn, never inside it: [`Chat::turn`] and [`Chat::step_turn`] run
//! the loop alone for a chat in memory, and inside the claim
//! ([`durable`](super::durable)'s `acquire` … `end_turn`) for a durable one.
//!
//! The loop reaches the durable chat's turn, step and commit through the chat's
//! [`DurableEntry`](super::DurableEntry), a table of function pointers binding the chat to a
//! store puts in place, never by name: a program that binds no chat to a store links none of the durable code (the
//! commits, the run claim, the heartbeat, the file tools a reload brings back), and the
//! loop's futures hold none of its state, only a box while a commit runs.
//!
//! Where things are: the loop in `driver.rs` (requests, answers, the turn) and `round.rs` (a
//! round's calls); this seam in `journal.rs`; the durable chat (binding, commits, the run
//! claim and its heartbeat, the [`Worker`](crate::store::Worker)) in `durable/`; the stores
//! themselves (the [`Store`](crate::store::Store) trait, SQLite, PostgreSQL, their shared
//! claim and lease code) in [`crate::store`].

use std::sync::Arc;
use std::time::Duration;

use super::Chat;
use super::ledger::Ledger;
use super::outcome::{Outcome, Step};
use super::stream::Sink;
use crate::files::FileStore;
use crate::{error::Error, future::BoxFuture, message::Message};

/// What the chat loop tells at its transitions. Every method does nothing by default: a
/// journal overrides the transitions it keeps.
pub(crate) trait Journal: Send {
    /// The message at `index`, already kept, changed in place (rewritten arguments, new
    /// instructions, a compacted history).
    fn message_changed(&mut self, index: usize) {
        let _ = index;
    }

    /// A round ended (every call has its result appended); its last transitions are kept with
    /// the next commit.
    fn round_retired(&mut self, round: Ledger) {
        let _ = round;
    }

    /// The file store a call of the turn saves through, in place of `files`; `None` keeps
    /// `files`.
    fn turn_files(&self, files: &Arc<dyn FileStore>) -> Option<Arc<dyn FileStore>> {
        let _ = files;
        None
    }

    /// How long a call must have run for its result to be kept the moment it ends; `None`:
    /// results are kept at the next commit point only.
    fn write_result_after(&self) -> Option<Duration> {
        None
    }

    /// Whether the round's calls come from a journal that kept them (a call read back ready
    /// waited for this chat to run it).
    fn keeps_calls(&self) -> bool {
        false
    }

    /// The clock the round's claims and leases are written in (milliseconds since the Unix
    /// epoch): the store's, for a chat other processes may share.
    fn now_ms(&self) -> u64 {
        crate::clock::now_ms()
    }
}

/// The journal of a chat without a store: it keeps nothing.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct InMemory;

impl Journal for InMemory {}

/// Calls `$call` on the chat's journal: its store binding, or [`InMemory`].
macro_rules! journal {
    ($chat:expr, $journal:ident => $call:expr) => {
        match $chat.durable.as_deref_mut() {
            Some($journal) => $call,
            None => {
                let $journal = &mut InMemory;
                $call
            }
        }
    };
    (ref $chat:expr, $journal:ident => $call:expr) => {
        match $chat.durable.as_deref() {
            Some($journal) => $call,
            None => {
                let $journal = &InMemory;
                $call
            }
        }
    };
}

impl Chat {
    /// Notes that the message at `index` changed in place, so the journal keeps it again.
    pub(crate) fn message_changed(&mut self, index: usize) {
        journal!(self, journal => journal.message_changed(index));
    }

    /// Hands an ended round to the journal, which keeps its last transitions with the next
    /// commit.
    pub(crate) fn retire_round(&mut self, round: Ledger) {
        self.turn.ran_in_last_round.clear();
        self.turn.ran_in_last_round.extend(
            round
                .calls
                .iter()
                .enumerate()
                .filter(|(_, entry)| entry.ran)
                .map(|(index, _)| index),
        );
        journal!(self, journal => journal.round_retired(round));
    }

    /// A commit point of the loop: the journal keeps what changed since the last one (for a
    /// durable chat: one commit under the run claim; nothing outside a turn, where `save`
    /// writes).
    pub(crate) async fn persist(&mut self) -> Result<(), Error> {
        match (self.durable.as_deref_mut(), self.durable_entry) {
            (Some(binding), Some(entry)) => (entry.commit)(binding, &mut self.state).await,
            _ => Ok(()),
        }
    }

    /// The time claims and leases are written in: the store's clock for a durable chat (every
    /// machine sharing it reads the same), this machine's otherwise.
    pub(crate) fn now_ms(&self) -> u64 {
        journal!(ref self, journal => journal.now_ms())
    }

    /// The file store a call of this turn saves through: the chat's, or what the journal puts
    /// in its place (for a durable chat holding its run claim, the store fenced by the claim,
    /// so a turn that lost the chat cannot overwrite the new holder's files).
    pub(crate) fn turn_files(&self) -> Option<Arc<dyn FileStore>> {
        let files = self.files.as_ref()?;
        let fenced = journal!(ref self, journal => journal.turn_files(files));
        Some(fenced.unwrap_or_else(|| Arc::clone(files)))
    }

    /// How long a call must have run for its result to be kept the moment it ends (a durable
    /// chat's [`DurableOptions::write_result_after`](crate::store::DurableOptions::write_result_after)).
    pub(crate) fn write_result_after(&self) -> Option<Duration> {
        journal!(ref self, journal => journal.write_result_after())
    }

    /// Whether the round's calls come from a journal that kept them.
    pub(crate) fn keeps_stored_calls(&self) -> bool {
        journal!(ref self, journal => journal.keeps_calls())
    }

    /// [`turn`](Self::turn) as a boxed future, for the public entry points (`ask`, `complete`
    /// and their streams). Rustc can copy an async body into every codegen unit that polls it,
    /// the caller's crate included; behind this plain function the loop's code is compiled
    /// once, in this crate, whatever calls it.
    #[inline(never)]
    pub(crate) fn boxed_turn(
        &mut self,
        message: Option<Message>,
        sink: Option<Sink>,
    ) -> BoxFuture<'_, Result<Outcome, Error>> {
        Box::pin(async move { self.turn(message, sink.as_ref()).await })
    }

    /// [`cancel_round`](Self::cancel_round) as a boxed future, for [`Chat::cancel`] (see
    /// [`boxed_turn`](Self::boxed_turn)).
    #[inline(never)]
    pub(crate) fn boxed_cancel(&mut self) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(self.cancel_round())
    }

    /// [`step_turn`](Self::step_turn) as a boxed future, for [`Chat::step`] (see
    /// [`boxed_turn`](Self::boxed_turn)).
    #[inline(never)]
    pub(crate) fn boxed_step(&mut self) -> BoxFuture<'_, Result<Step, Error>> {
        Box::pin(self.step_turn(None))
    }

    /// One `ask`/`complete`: the loop alone for a chat in memory; for a durable chat, inside
    /// its run claim (renewed while the loop runs), with the turn's last commit and the
    /// claim's release after it.
    pub(crate) async fn turn(
        &mut self,
        message: Option<Message>,
        sink: Option<&Sink>,
    ) -> Result<Outcome, Error> {
        if let Some(entry) = self.durable_entry {
            return (entry.turn)(self, message, sink).await;
        }
        if let Some(message) = message {
            self.add_message(message)?;
        }
        self.run(sink).await
    }

    /// One `step`: the loop's one step alone for a chat in memory, inside the run claim for
    /// a durable chat.
    pub(crate) async fn step_turn(&mut self, sink: Option<&Sink>) -> Result<Step, Error> {
        if let Some(entry) = self.durable_entry {
            return (entry.step)(self, sink).await;
        }
        self.step_with(sink).await
    }
}
