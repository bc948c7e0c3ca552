//! What a tool that runs a chat of its own (a sub-agent, see [`agent`](crate::agent)) reaches
//! of the chat that calls it: the stream its events go to, where its usage adds up, changes it
//! makes to the calling chat after the round (a handoff), and the task of a paused call.

use std::sync::{Arc, Mutex};

use super::Chat;
use super::ledger::CallState;
use super::round::Settled;
use super::stream::{ChatEvent, Sink, emit};
use crate::{error::Error, message::Usage, task::Task};

/// A change a call asks of its chat, made once the round's calls have run.
pub(crate) type ChatChange = Box<dyn FnOnce(&mut Chat) -> Result<(), Error> + Send>;

/// What the calls of one settle share with the chat that runs them.
#[derive(Clone)]
pub(crate) struct Caller {
    sink: Option<Sink>,
    shared: Arc<Mutex<Shared>>,
}

/// What the calls add up while they run: usage, and the changes they ask for.
#[derive(Default)]
struct Shared {
    usage: Usage,
    changes: Vec<ChatChange>,
}

tokio::task_local! {
    static CALLER: Caller;
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Caller {
    /// The chat whose calls run now, when a call runs inside a chat.
    pub(crate) fn current() -> Option<Self> {
        CALLER.try_with(Clone::clone).ok()
    }

    /// Whether the calling chat streams its turn.
    pub(crate) fn streaming(&self) -> bool {
        self.sink.is_some()
    }

    /// Puts an event on the calling chat's stream (nothing when it does not stream).
    pub(crate) fn emit(&self, event: impl FnOnce() -> ChatEvent) {
        emit(self.sink.as_ref(), event);
    }

    /// Adds tokens used on the chat's behalf (a sub-agent's requests) to its usage.
    pub(crate) fn add_usage(&self, usage: Usage) {
        lock(&self.shared).usage += usage;
    }

    /// Asks for a change to the calling chat once the round's calls have run.
    pub(crate) fn change(&self, change: ChatChange) {
        lock(&self.shared).changes.push(change);
    }
}

impl Chat {
    /// Settles the round with a [`Caller`] its calls can reach, then adds what they used and
    /// makes the changes they asked for.
    pub(crate) async fn settle(&mut self, sink: Option<&Sink>) -> Result<Settled, Error> {
        let caller = Caller {
            sink: sink.cloned(),
            shared: Arc::default(),
        };
        let settled = CALLER.scope(caller.clone(), self.settle_calls(sink)).await;
        let Shared { usage, changes } = std::mem::take(&mut *lock(&caller.shared));
        self.state.usage += usage;
        for change in changes {
            change(self)?;
        }
        settled
    }

    /// Changes the provider from the next request on (a handoff to an agent on another model).
    pub(crate) fn set_provider(&mut self, provider: Arc<dyn crate::provider::Provider>) {
        self.provider = provider;
    }

    /// The task of a call paused on one, to change its data before
    /// [`complete`](Self::complete) resumes it (a sub-agent's tool keeps the sub-agent's
    /// state there; [`agent`](crate::agent) settles its pauses this way). The change is part
    /// of the chat's state, so a durable chat writes it at its next write. Fails with
    /// [`Error::NotWaiting`] when no call with this id waits on a task.
    pub fn task_mut(&mut self, call_id: &str) -> Result<&mut Task, Error> {
        let not_waiting = || Error::NotWaiting {
            call_id: call_id.to_owned(),
            waiting_for: "a task",
        };
        let round = self.state.round.as_mut().ok_or_else(not_waiting)?;
        let entry = round
            .calls
            .iter_mut()
            .find(|entry| entry.id == call_id)
            .ok_or_else(not_waiting)?;
        if !matches!(entry.state, CallState::Task { .. }) {
            return Err(not_waiting());
        }
        entry.dirty = true;
        match &mut entry.state {
            CallState::Task { task, .. } => Ok(task),
            _ => Err(not_waiting()),
        }
    }
}
