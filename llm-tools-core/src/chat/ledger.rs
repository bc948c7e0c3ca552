//! The ledger of a round: the tool calls of the latest answer, one state per call, and every
//! transition a call goes through. It does no I/O: each transition is one method here that
//! changes the call's state and returns what the driver ([`Chat`](super::Chat)) must do next
//! (run a job, cancel a task, append results). A durable chat writes each changed call to its
//! store (see [`crate::store`]).
//!
//! ```text
//! opened ─┬─> awaiting approval ─approve─> ready ──start──> running ─finish─┬─> finished ─> appended
//!         │          └──────deny──> denied ───────────────────────────────────┤
//!         ├─> ready                  (expired claim: back to where it was) ◄─┤
//!         │                                   running ─finish─> task ──start (resume)──> running
//!         │                                   running ─finish─> question ─answer─> answered ─start─> running
//!         └─> finished (unknown tool, bad arguments, over the calls cap)
//! close / cancel: any call without a result ─> finished (an error result)
//! ```
//!
//! Every start grants the call a new claim: its attempt number and its fencing token grow by
//! one, and its lease runs until the start plus the call's `max_run_time`. A finish is accepted
//! only under the call's current token, so a run whose claim was taken over cannot write its
//! result. Results are appended to the transcript in call order, as soon as every earlier call
//! has its result, so the transcript is always a valid conversation.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::calls::JobKind;
use crate::{
    message::Message,
    question::{Answer, Question},
    task::Task,
};

/// The tool calls of the latest answer, while any of them has no result in the transcript.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Ledger {
    /// Position of the assistant message whose calls this round answers.
    pub(crate) message: usize,
    /// One entry per call, in call order (the order of the message's `tool_calls`).
    #[serde(alias = "slots")]
    pub(crate) calls: Vec<Entry>,
    /// How many results are in the transcript: always a prefix of the calls.
    pub(crate) appended: usize,
    /// The key of the round's stored calls: the place of its message in the whole history
    /// (with the messages compaction took out before it, see `ChatState::compacted_away`);
    /// `None`: the message's place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) key: Option<u64>,
}

/// One call of the round.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Entry {
    /// The call's id (as in the assistant message).
    #[serde(default)]
    pub(crate) id: String,
    pub(crate) state: CallState,
    /// The answers to the questions the call asked, in the order it asked them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) answers: Vec<Answer>,
    /// How many times the call has started (its `execute` or `resume` began).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) attempt: u32,
    /// Whether the tool ran for the call and gave its outcome (a result, an error, a task, a
    /// question): a call refused, vetoed or closed before it ran has none.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) ran: bool,
    /// The fencing token of the call's latest claim; grows with every start.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) token: u64,
    /// Whether the call needs approval (its tool said so when the call came).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) gated: bool,
    /// The arguments the call's approval was given for, as JSON: a gated call whose arguments
    /// are no longer these needs approval again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) approved: Option<String>,
    /// Whether the entry changed since it was last written to the chat's store.
    #[serde(skip)]
    pub(crate) dirty: bool,
    /// The token the store holds for this call; `None` while the store has no row for it.
    #[serde(skip)]
    pub(crate) stored_token: Option<u64>,
}

fn is_zero<T: Default + PartialEq>(n: &T) -> bool {
    *n == T::default()
}

/// Where one call stands.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub(crate) enum CallState {
    /// Starts at the next settle (its `on_tool_call` callbacks first).
    Ready,
    /// Paused until `approve` or `deny`.
    AwaitingApproval,
    /// Denied; its result is the denial, written at the next settle.
    Denied {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Running under a claim held by `holder` until `lease_until` (milliseconds since the Unix
    /// epoch). `run` is what runs, so an expired claim puts the call back where it was.
    Running {
        run: Pending,
        /// Shared with the turn that holds the claim: starting a call copies no id.
        #[serde(with = "shared_str")]
        holder: Arc<str>,
        lease_until: u64,
    },
    /// Paused on a task since `since` (milliseconds since the Unix epoch); the next settle
    /// calls `resume`.
    Task {
        task: Task,
        #[serde(default, skip_serializing_if = "is_zero")]
        since: u64,
    },
    /// Paused on a question until `answer` or `decline`. `task` is set when the question was
    /// asked while resuming a task, which is then resumed again.
    Question {
        question: Question,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        task: Option<Task>,
    },
    /// The question is answered; the next settle runs the call again from the start (or
    /// resumes its task).
    Answered {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        task: Option<Task>,
    },
    /// The result, waiting for the earlier calls' results to be appended.
    Finished { result: Message },
    /// The result is in the transcript.
    Appended,
}

/// What a started call runs, and what it goes back to when its claim expires.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Pending {
    /// A first run (or, after an answer, a run from the start).
    Call {
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        answered: bool,
    },
    /// Resuming a task.
    Resume {
        task: Task,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        answered: bool,
    },
}

impl Pending {
    /// The state the call goes back to when its claim expires before it finished.
    fn back(self) -> CallState {
        match self {
            Pending::Call { answered: false } => CallState::Ready,
            Pending::Resume {
                task,
                answered: false,
            } => CallState::Task { task, since: 0 },
            Pending::Call { answered: true } => CallState::Answered { task: None },
            Pending::Resume {
                task,
                answered: true,
            } => CallState::Answered { task: Some(task) },
        }
    }
}

impl CallState {
    pub(crate) fn has_result(&self) -> bool {
        matches!(self, CallState::Finished { .. } | CallState::Appended)
    }

    /// A short name of the state, as stored beside it (for queries and messages).
    pub(crate) fn name(&self) -> &'static str {
        match self {
            CallState::Ready => "ready",
            CallState::AwaitingApproval => "awaiting_approval",
            CallState::Denied { .. } => "denied",
            CallState::Running { .. } => "running",
            CallState::Task { .. } => "task",
            CallState::Question { .. } => "question",
            CallState::Answered { .. } => "answered",
            CallState::Finished { .. } => "finished",
            CallState::Appended => "appended",
        }
    }
}

impl Entry {
    pub(crate) fn new(id: impl Into<String>, state: CallState) -> Self {
        Self {
            id: id.into(),
            state,
            answers: Vec::new(),
            attempt: 0,
            ran: false,
            token: 0,
            gated: false,
            approved: None,
            dirty: true,
            stored_token: None,
        }
    }

    /// Takes a running call's claim back: the call is as it was before it started (its
    /// attempt counted). Returns whether it was running.
    fn take_back_claim(&mut self) -> bool {
        if !matches!(self.state, CallState::Running { .. }) {
            return false;
        }
        let CallState::Running { run, .. } = std::mem::replace(&mut self.state, CallState::Ready)
        else {
            return false;
        };
        self.set(run.back());
        true
    }

    fn set(&mut self, state: CallState) {
        self.state = state;
        self.dirty = true;
    }

    /// When a running call's claim ends, in milliseconds since the Unix epoch.
    pub(crate) fn lease_until(&self) -> Option<u64> {
        match &self.state {
            CallState::Running { lease_until, .. } => Some(*lease_until),
            _ => None,
        }
    }
}

/// A call the driver must run: the job the start transition granted.
pub(crate) struct Started {
    pub(crate) kind: JobKind,
    pub(crate) answers: Vec<Answer>,
    pub(crate) attempt: u32,
    pub(crate) token: u64,
}

/// A finish the ledger refused: the call is no longer running under that token (its claim
/// expired and was granted again, or the call was closed).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct StaleClaim;

impl Ledger {
    /// Opens a round over the calls of the assistant message at `message`: one entry per call,
    /// in call order, each in its first state.
    pub(crate) fn open(message: usize, calls: Vec<Entry>) -> Self {
        Self {
            message,
            calls,
            appended: 0,
            key: None,
        }
    }

    /// The key of the round's stored calls.
    pub(crate) fn key(&self) -> u64 {
        self.key
            .unwrap_or_else(|| u64::try_from(self.message).unwrap_or(u64::MAX))
    }

    /// The position of the call with this id.
    pub(crate) fn position(&self, call_id: &str) -> Option<usize> {
        self.calls.iter().position(|e| e.id == call_id)
    }

    /// The entry of the call with this id, if its state matches.
    pub(crate) fn waiting(
        &mut self,
        call_id: &str,
        matches: impl Fn(&CallState) -> bool,
    ) -> Option<&mut Entry> {
        self.calls
            .iter_mut()
            .find(|e| e.id == call_id)
            .filter(|e| matches(&e.state))
    }

    /// Decides an approval: an approved call becomes ready, bound to `arguments` (the
    /// arguments approved), a denied one gets its denial as a result at the next settle. Only a
    /// call awaiting approval changes.
    pub(crate) fn decide(&mut self, index: usize, denial: Option<&str>, arguments: &str) {
        if let Some(entry) = self.calls.get_mut(index)
            && matches!(entry.state, CallState::AwaitingApproval)
        {
            entry.approved = denial.is_none().then(|| arguments.to_owned());
            entry.set(match denial {
                None => CallState::Ready,
                Some(reason) => CallState::Denied {
                    reason: (!reason.trim().is_empty()).then(|| reason.to_owned()),
                },
            });
        }
    }

    /// Puts a call without a result back to waiting for approval (its arguments changed since
    /// it was approved). A running call's claim ends: its token grows.
    pub(crate) fn reapprove(&mut self, index: usize) {
        if let Some(entry) = self.calls.get_mut(index)
            && !entry.state.has_result()
        {
            if matches!(entry.state, CallState::Running { .. }) {
                entry.token = entry.token.saturating_add(1);
            }
            entry.approved = None;
            entry.set(CallState::AwaitingApproval);
        }
    }

    /// Answers (or declines) a call's question: the call runs again at the next settle.
    pub(crate) fn answer(&mut self, index: usize, answer: Answer) {
        let Some(entry) = self.calls.get_mut(index) else {
            return;
        };
        if let CallState::Question { task, .. } = &mut entry.state {
            let task = task.take();
            entry.answers.push(answer);
            entry.set(CallState::Answered { task });
        }
    }

    /// Starts a call that can run (ready, paused on a task, or answered): grants it a new
    /// claim held by `holder` for `limit` from `now_ms`, and returns the job to run. `None`
    /// when the call cannot start.
    pub(crate) fn start(
        &mut self,
        index: usize,
        holder: &Arc<str>,
        now_ms: u64,
        limit: Duration,
    ) -> Option<Started> {
        let entry = self.calls.get_mut(index)?;
        let run = match &entry.state {
            CallState::Ready => Pending::Call { answered: false },
            CallState::Task { task, .. } => Pending::Resume {
                task: task.clone(),
                answered: false,
            },
            CallState::Answered { task: None } => Pending::Call { answered: true },
            CallState::Answered { task: Some(task) } => Pending::Resume {
                task: task.clone(),
                answered: true,
            },
            _ => return None,
        };
        let kind = match &run {
            Pending::Call { .. } => JobKind::Call,
            Pending::Resume { task, .. } => JobKind::Resume(Box::new(task.clone())),
        };
        entry.attempt = entry.attempt.saturating_add(1);
        entry.token = entry.token.saturating_add(1);
        let limit_ms = u64::try_from(limit.as_millis()).unwrap_or(u64::MAX);
        entry.set(CallState::Running {
            run,
            holder: Arc::clone(holder),
            lease_until: now_ms.saturating_add(limit_ms),
        });
        Some(Started {
            kind,
            answers: entry.answers.clone(),
            attempt: entry.attempt,
            token: entry.token,
        })
    }

    /// Finishes a running call with what its run produced (a result, a task, a question).
    /// Refused unless the call is running under `token`.
    pub(crate) fn finish(
        &mut self,
        index: usize,
        token: u64,
        state: CallState,
    ) -> Result<(), StaleClaim> {
        let entry = self.calls.get_mut(index).ok_or(StaleClaim)?;
        if !matches!(entry.state, CallState::Running { .. }) || entry.token != token {
            return Err(StaleClaim);
        }
        entry.ran = true;
        entry.set(state);
        Ok(())
    }

    /// Gives a call its result now, without a run of its own (denied, vetoed, unknown tool,
    /// closed). Closing a running call ends its claim: the token grows, so the run cannot
    /// write its own result later.
    pub(crate) fn set_result(&mut self, index: usize, result: Message) {
        if let Some(entry) = self.calls.get_mut(index)
            && !entry.state.has_result()
        {
            if matches!(entry.state, CallState::Running { .. }) {
                entry.token = entry.token.saturating_add(1);
            }
            entry.set(CallState::Finished { result });
        }
    }

    /// Puts every running call whose claim has ended back where it was before it started:
    /// claims that expired by `now_ms`, and claims an earlier turn of this same chat value
    /// took (holder `own` or `own#…`), whose runs cannot still be going (a chat value runs one
    /// turn at a time, and its tools run inside the turn). Any other live claim stays, even
    /// one from this process: each turn has a holder id of its own, so it may be a run still
    /// going. Returns how many.
    pub(crate) fn release_expired(&mut self, now_ms: u64, own: &str) -> usize {
        let mut released = 0;
        for entry in &mut self.calls {
            let expired = match &entry.state {
                CallState::Running {
                    holder,
                    lease_until,
                    ..
                } => *lease_until <= now_ms || turn_of(holder, own),
                _ => false,
            };
            if expired && entry.take_back_claim() {
                released += 1;
            }
        }
        released
    }

    /// Takes back the claim [`start`](Self::start) gave the call at `index`, which never ran
    /// (the commit of its claim failed): it is as it was before, its attempt counted.
    pub(crate) fn unstart(&mut self, index: usize) {
        if let Some(entry) = self.calls.get_mut(index) {
            entry.take_back_claim();
        }
    }

    /// The earliest end of a claim another holder still has on a call, if any: until then the
    /// call may be running elsewhere and must not start here.
    pub(crate) fn claimed_elsewhere(&self, now_ms: u64, own_holder: &str) -> Option<(usize, u64)> {
        self.calls
            .iter()
            .enumerate()
            .filter_map(|(i, e)| match &e.state {
                CallState::Running {
                    holder,
                    lease_until,
                    ..
                } if **holder != *own_holder && *lease_until > now_ms => Some((i, *lease_until)),
                _ => None,
            })
            .min_by_key(|&(_, until)| until)
    }

    /// The task a call without a result waits on or was resuming (to cancel it), if any.
    pub(crate) fn task_of(&self, index: usize) -> Option<&Task> {
        match &self.calls.get(index)?.state {
            CallState::Task { task, .. } => Some(task),
            CallState::Question { task, .. } | CallState::Answered { task } => task.as_ref(),
            CallState::Running {
                run: Pending::Resume { task, .. },
                ..
            } => Some(task),
            _ => None,
        }
    }

    /// Takes the results that are next in call order, for the driver to append; marks them
    /// appended.
    #[cfg(test)]
    pub(crate) fn take_appendable(&mut self) -> Vec<(usize, Message)> {
        std::iter::from_fn(|| self.take_next_appendable()).collect()
    }

    /// The next result in call order, if its call has one: marked appended.
    pub(crate) fn take_next_appendable(&mut self) -> Option<(usize, Message)> {
        let entry = self.calls.get_mut(self.appended)?;
        if !matches!(entry.state, CallState::Finished { .. }) {
            return None;
        }
        let CallState::Finished { result } =
            std::mem::replace(&mut entry.state, CallState::Appended)
        else {
            return None;
        };
        entry.dirty = true;
        let index = self.appended;
        self.appended += 1;
        Some((index, result))
    }

    /// When the round has work to do without a person: now for calls that can start or
    /// results to write, when a working task's poll interval has passed (`task_poll` for a task
    /// that gave none), when a running call's claim ends. `None` while every call without a
    /// result waits on a person (an approval, a question, an input-required task).
    ///
    /// A call after a running one is due when that run's claim ends, not now: the holder
    /// running the round starts it itself, and no one else may before the claim ends (a
    /// `sequential` call is a barrier; and the round cannot end before the running call has
    /// its result anyway).
    pub(crate) fn wake_at(&self, now_ms: u64, task_poll: Duration) -> Option<u64> {
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let mut running_until: Option<u64> = None;
        self.calls
            .iter()
            .filter_map(|e| match &e.state {
                // (A finished call waits for the earlier calls' results, not for a worker.)
                CallState::Ready | CallState::Denied { .. } | CallState::Answered { .. } => {
                    Some(running_until.map_or(now_ms, |until| until.max(now_ms)))
                }
                CallState::Running { lease_until, .. } => {
                    running_until =
                        Some(running_until.map_or(*lease_until, |u| u.min(*lease_until)));
                    Some(*lease_until)
                }
                CallState::Task { task, since } if !task.is_input_required() => {
                    Some(since.saturating_add(ms(task.poll_interval().unwrap_or(task_poll))))
                }
                _ => None,
            })
            .min()
    }

    /// Whether every call's result is in the transcript.
    pub(crate) fn is_complete(&self) -> bool {
        self.appended == self.calls.len()
    }
}

/// Whether `holder` is the holder id of a turn of the chat value whose holder base is `base`:
/// the base itself, or `base#n`.
pub(crate) fn turn_of(holder: &str, base: &str) -> bool {
    holder
        .strip_prefix(base)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('#'))
}

/// An `Arc<str>` stored as the string it holds.
mod shared_str {
    use std::sync::Arc;

    use serde::{Deserialize as _, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(value: &Arc<str>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(value)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Arc<str>, D::Error> {
        String::deserialize(d).map(Arc::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ledger(states: Vec<CallState>) -> Ledger {
        Ledger::open(
            1,
            states
                .into_iter()
                .enumerate()
                .map(|(i, s)| Entry::new(format!("c{i}"), s))
                .collect(),
        )
    }

    fn ok(id: &str) -> CallState {
        CallState::Finished {
            result: Message::tool_result(id, "ok", false),
        }
    }

    #[test]
    fn a_start_grants_a_new_token_and_a_lease_from_now() {
        let mut l = ledger(vec![CallState::Ready]);
        let started = l
            .start(0, &Arc::from("me"), 1_000, Duration::from_secs(2))
            .expect("ready starts");
        assert_eq!((started.attempt, started.token), (1, 1));
        assert_eq!(l.calls[0].lease_until(), Some(3_000));
        assert!(
            l.start(0, &Arc::from("me"), 1_000, Duration::from_secs(2))
                .is_none()
        );
    }

    #[test]
    fn a_finish_under_a_stale_token_is_refused() {
        let mut l = ledger(vec![CallState::Ready]);
        let first = l
            .start(0, &Arc::from("a"), 0, Duration::from_millis(10))
            .expect("starts");
        assert_eq!(l.release_expired(10, "b"), 1);
        assert_eq!(l.calls[0].state, CallState::Ready);
        let second = l
            .start(0, &Arc::from("b"), 10, Duration::from_millis(10))
            .expect("again");
        assert_eq!(second.attempt, 2);
        assert_eq!(l.finish(0, first.token, ok("c0")), Err(StaleClaim));
        assert_eq!(l.finish(0, second.token, ok("c0")), Ok(()));
        assert_eq!(l.finish(0, second.token, ok("c0")), Err(StaleClaim));
    }

    #[test]
    fn a_live_claim_elsewhere_is_kept_and_reported() {
        let mut l = ledger(vec![CallState::Ready, CallState::Ready]);
        l.start(1, &Arc::from("a"), 0, Duration::from_millis(100))
            .expect("starts");
        assert_eq!(l.release_expired(50, "b"), 0);
        assert_eq!(l.claimed_elsewhere(50, "b"), Some((1, 100)));
        assert_eq!(l.claimed_elsewhere(50, "a"), None);
        // another chat value's live claim stays, even one of this process
        assert_eq!(l.release_expired(50, "a#2"), 0);
        assert_eq!(l.release_expired(50, "aa"), 0);
        // an earlier turn of this chat value cannot still be running in a new turn
        assert_eq!(l.release_expired(50, "a"), 1);
        assert!(turn_of("w-1#3", "w-1") && turn_of("local", "local"));
        assert!(!turn_of("w-12#3", "w-1") && !turn_of("w-1", "w-1#3"));
    }

    #[test]
    fn an_expired_resume_goes_back_to_its_task_and_keeps_its_answers() {
        let task = Task::working("w");
        let mut l = ledger(vec![CallState::Question {
            question: Question::new("q"),
            task: Some(task.clone()),
        }]);
        l.answer(0, Answer::decline(None));
        l.start(0, &Arc::from("a"), 0, Duration::from_millis(1))
            .expect("starts");
        assert_eq!(l.task_of(0), Some(&task));
        l.release_expired(5, "b");
        assert_eq!(l.calls[0].state, CallState::Answered { task: Some(task) });
        assert_eq!(l.calls[0].answers.len(), 1);
    }

    #[test]
    fn results_are_appended_in_call_order_only() {
        let mut l = ledger(vec![CallState::Ready, ok("c1")]);
        assert!(l.take_appendable().is_empty());
        l.set_result(0, Message::tool_result("c0", "denied", true));
        let appended: Vec<usize> = l.take_appendable().into_iter().map(|(i, _)| i).collect();
        assert_eq!(appended, [0, 1]);
        assert!(l.is_complete());
    }

    #[test]
    fn only_waiting_calls_are_decided() {
        let mut l = ledger(vec![CallState::AwaitingApproval, CallState::Ready]);
        l.decide(0, Some("  "), "{}");
        l.decide(1, Some("no"), "{}");
        assert_eq!(l.calls[0].state, CallState::Denied { reason: None });
        assert_eq!(l.calls[1].state, CallState::Ready);
    }
}
