//! What a tool that runs a chat of its own (a sub-agent, see [`agent`](crate::agent)) reaches
//! of the chat that calls it: the stream its events go to, where its usage adds up, the
//! budgets of every chat above it, changes it makes to the calling chat after the round (a
//! handoff), and the task of a paused call.
//!
//! **Budgets hold across levels, live.** A chat with stop conditions ([`StopWhen`]) or a request
//! budget of a turn (`ToolOptions::max_requests_per_turn`, on by default) hands its calls a
//! [`Budget`]: what it had used when the round started and what the chats below have spent
//! since, request by request. A chat running inside a call checks, before each of its
//! requests, its own conditions and then every budget above it, so the top chat's token, cost
//! and request budgets (turn and chat alike) stop the sub-agents of one answer as they spend,
//! however many run at once and however deep, and a paused sub-agent resumed in a later turn
//! stops at the chat's budget before its first request.
//!
//! **Requests count as they are sent.** A chat running inside a call takes each request from
//! the budgets above it just before sending it ([`Caller::take_request`]): every level, the top
//! one first, is locked and checked, and the request counted in each, all at once, so the
//! chats below sending together never send more requests than a request budget above leaves,
//! and a request in flight counts already. A request sent counts in the turn of every chat
//! above (`StopWhen::requests`, `StopReason::Requests::used`) whatever becomes of it: answered,
//! failed, or cut off with its sub-agent (its time limit, a fatal error beside it, a stop, a
//! cancel).
//!
//! **Usage adds up as it is spent.** The tokens of a request a chat below sent are added to what
//! every chat above has spent in its round the moment its answer comes, so a sub-agent whose
//! call is cut off has the tokens it was answered counted all the same.

use std::sync::{Arc, Mutex};

use super::Chat;
use super::ledger::CallState;
use super::round::Settled;
use super::stop::{StopReason, StopWhen, before_request, request_cap_reached};
use super::stream::{ChatEvent, Sink, emit};
use crate::{error::Error, message::Usage, task::Task};

/// The result of a call of the round left waiting when the chat was handed to another agent.
const HANDED_OVER: &str =
    "This call did not run: the chat was handed to another agent, whose tools it was not asked of.";

/// A change a call asks of its chat, made once the round's calls have run.
pub(crate) type ChatChange = Box<dyn FnOnce(&mut Chat) -> Result<(), Error> + Send>;

/// What the calls of one settle share with the chat that runs them.
#[derive(Clone)]
pub(crate) struct Caller {
    sink: Option<Sink>,
    shared: Arc<Mutex<Shared>>,
    /// What the rounds of the chats above the calling one share, nearest first: a request
    /// below counts in each.
    above: Arc<[Arc<Mutex<Shared>>]>,
    /// The budgets of the calling chat and those above it (none when no chat above has stop
    /// conditions).
    budget: Option<Arc<Budget>>,
}

/// What the calls add up while they run: usage, requests sent on the chat's behalf, and the
/// changes they ask for.
#[derive(Default)]
struct Shared {
    usage: Usage,
    requests: usize,
    changes: Vec<ChatChange>,
}

/// A calling chat's stop conditions and request budget, what it had used when its round
/// started, and what the chats below have spent since (see the [module docs](self)).
pub(crate) struct Budget {
    conditions: Vec<StopWhen>,
    /// The calling chat's default request budget of a turn, where no request condition of its
    /// own replaces it.
    max_requests: Option<usize>,
    /// The calling chat's turn usage, turn requests and chat usage when the round started.
    turn_usage: Usage,
    requests: usize,
    chat_usage: Usage,
    /// What the chats below have spent since: tokens, and requests.
    spent: Mutex<(Usage, usize)>,
    /// The budget of the chat above the calling one, if it runs inside a call too.
    above: Option<Arc<Budget>>,
}

impl Budget {
    /// Adds the tokens of a request of a chat below here and in every budget above.
    fn record_usage(&self, usage: Usage) {
        lock(&self.spent).0 += usage;
        if let Some(above) = &self.above {
            above.record_usage(usage);
        }
    }

    /// The first condition of this level alone that `spent` (what the chats below have spent
    /// since the round started) reaches.
    fn reached_here(&self, spent: &(Usage, usize)) -> Option<StopReason> {
        let requests = self.requests.saturating_add(spent.1);
        before_request(
            &self.conditions,
            &(self.turn_usage + spent.0),
            requests,
            &(self.chat_usage + spent.0),
        )
        .or_else(|| request_cap_reached(self.max_requests, requests))
    }

    /// The first condition, here or above, that a chat below has reached.
    fn reached(&self) -> Option<StopReason> {
        let spent = *lock(&self.spent);
        self.reached_here(&spent)
            .or_else(|| self.above.as_ref()?.reached())
    }

    /// Takes one request of a chat below from this budget and every one above it; when one of
    /// them is used up, nothing is taken and the first reached (the top one first) is returned.
    /// Every level is locked, top first, and stays locked until all are checked and counted,
    /// so two chats below never both take a budget's last request. Every chat locks the levels
    /// above it in that order, the top's first, so none waits on another in a cycle.
    fn reserve(&self) -> Option<StopReason> {
        self.reserve_with(&mut || None)
    }

    /// [`reserve`](Self::reserve) from this level up, taking the levels below (`below`, called
    /// with this level locked and checked) with it.
    fn reserve_with(&self, below: &mut dyn FnMut() -> Option<StopReason>) -> Option<StopReason> {
        let mut here = || {
            let mut spent = lock(&self.spent);
            if let Some(reason) = self.reached_here(&spent).or_else(&mut *below) {
                return Some(reason);
            }
            spent.1 = spent.1.saturating_add(1);
            None
        };
        match &self.above {
            Some(above) => above.reserve_with(&mut here),
            None => here(),
        }
    }

    /// Counts one request of a chat below here and in every budget above, whatever they say.
    fn count(&self) {
        {
            let mut spent = lock(&self.spent);
            spent.1 = spent.1.saturating_add(1);
        }
        if let Some(above) = &self.above {
            above.count();
        }
    }
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

    /// Takes the request a chat running inside this call is about to send from the budgets of
    /// the calling chat and of every chat above it, and counts it in their turns' requests (see
    /// the [module docs](self)); the first budget used up, when it is not taken. Unchecked
    /// (`checked` false: a summary asked for outside a turn) it is counted whatever the budgets.
    /// Nothing when no call runs.
    pub(crate) fn take_request(checked: bool) -> Option<StopReason> {
        CALLER
            .try_with(|caller| caller.take(checked))
            .ok()
            .flatten()
    }

    fn take(&self, checked: bool) -> Option<StopReason> {
        match &self.budget {
            Some(budget) if checked => {
                if let Some(reason) = budget.reserve() {
                    return Some(reason);
                }
            }
            Some(budget) => budget.count(),
            None => {}
        }
        for shared in std::iter::once(&self.shared).chain(self.above.iter()) {
            let mut shared = lock(shared);
            shared.requests = shared.requests.saturating_add(1);
        }
        None
    }

    /// Adds the usage of a request a chat running inside this call sent (counted when it was
    /// sent, [`take_request`](Self::take_request)) to the usage of the calling chat and of
    /// every chat above it, and against their budgets. Nothing when no call runs.
    pub(crate) fn record_usage(usage: Usage) {
        let _ = CALLER.try_with(|caller| {
            for shared in std::iter::once(&caller.shared).chain(caller.above.iter()) {
                lock(shared).usage += usage;
            }
            if let Some(budget) = &caller.budget {
                budget.record_usage(usage);
            }
        });
    }

    /// The first stop condition of a chat above that its calls' chats have reached.
    pub(crate) fn budget_reached(&self) -> Option<StopReason> {
        self.budget.as_ref()?.reached()
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
        let outer = Caller::current();
        let above = outer.as_ref().and_then(|c| c.budget.clone());
        let max_requests = self.request_cap();
        let budget =
            (!self.stops.is_empty() || max_requests.is_some() || above.is_some()).then(|| {
                Arc::new(Budget {
                    conditions: self.stops.clone(),
                    max_requests,
                    turn_usage: self.state.usage.since(&self.turn.usage_before),
                    requests: self.turn.requests,
                    chat_usage: self.state.usage,
                    spent: Mutex::default(),
                    above,
                })
            });
        let above: Arc<[Arc<Mutex<Shared>>]> = match &outer {
            Some(outer) => std::iter::once(Arc::clone(&outer.shared))
                .chain(outer.above.iter().cloned())
                .collect(),
            None => Arc::new([]),
        };
        let caller = Caller {
            sink: sink.cloned(),
            shared: Arc::default(),
            above,
            budget,
        };
        let mut settled = CALLER.scope(caller.clone(), self.settle_calls(sink)).await;
        let Shared {
            usage,
            requests,
            changes,
        } = std::mem::take(&mut *lock(&caller.shared));
        // What the chats below spent (the chats above counted it as it was spent).
        self.state.usage += usage;
        // Requests sent on the turn's behalf count as the turn's (`StopWhen::requests`).
        self.turn.requests = self.turn.requests.saturating_add(requests);
        if !changes.is_empty() {
            // The chat changes hands (a handoff) while calls of the round wait (an approval, a
            // question, a task): they were the agent handing over's, and an approval or answer
            // given now would run them with the next agent's tools. They are closed (a task
            // cancelled through its tool) before the change; with nothing else running, the
            // round ends and the turn goes on.
            match settled {
                Ok(Settled::Paused) => {
                    self.close_round(HANDED_OVER, sink).await;
                    self.persist().await?;
                    settled = Ok(Settled::Done);
                }
                Ok(Settled::ClaimedElsewhere { .. }) => {
                    self.close_waiting_calls(HANDED_OVER, sink).await;
                    self.persist().await?;
                }
                _ => {}
            }
        }
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
