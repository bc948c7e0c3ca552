//! Settling a round: the driver side of the ledger. It runs every call that can run, in
//! segments (a `sequential` tool is a barrier), with the chat's concurrency; carries each call's
//! transitions out (callbacks, tool runs, tracing); appends results in call order; and, in a
//! durable chat, writes each transition to the store before acting on it (a call's claim is
//! written before the tool starts, its result as soon as it finishes).

use std::collections::VecDeque;
use std::sync::Arc;
use std::task::Poll;
use std::time::Instant;

use futures::StreamExt as _;
use futures::stream::FuturesUnordered;

use super::Chat;
use super::approvals::{self, Gate};
use super::attachment_room;
use super::calls::{self, Job, JobKind, Planned, Ran};
use super::hooks::ToolCallAction;
use super::hooks::{self, Decision};
use super::ledger::{CallState, Entry, Ledger};
use super::retries;
use super::search;
use super::spill;
use super::stream::{ChatEvent, Sink, emit, emit_progress};
use crate::context::ProgressFn;
use crate::{
    context::ToolProgress,
    error::{Error, ToolFailure},
    message::Message,
};

/// How a settle ended.
#[derive(Debug, PartialEq)]
pub(crate) enum Settled {
    /// Every call has its result in the transcript.
    Done,
    /// Some calls wait on tasks, questions or approvals.
    Paused,
    /// A call is claimed by another process until `until` (milliseconds since the Unix epoch).
    ClaimedElsewhere { call_id: String, until: u64 },
    /// A hook stopped the turn; every call of the round has its result.
    Stopped(super::stop::StopReason),
}

/// Why a settle stopped early.
enum Failure {
    Fatal {
        tool: String,
        call_id: String,
        error: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    Cancelled,
    Stopped(super::stop::StopReason),
}

/// The result of a call not run because a hook stopped the turn.
const TURN_STOPPED: &str = "This call did not run: the turn was stopped.";

/// Which run of its call a job is, for what its call is told when the turn ends before it
/// finished.
#[derive(Clone, Copy, PartialEq, Eq)]
enum RunOf {
    /// The call's first run: no answers, no earlier claim.
    First,
    /// Its task resumed: `close_round` closes it, cancelling the task through its tool.
    Task,
    /// Run again, with its answers or after a lost claim.
    Again,
}

impl RunOf {
    fn of(job: &Job) -> Self {
        match job.kind {
            JobKind::Resume(_) => Self::Task,
            JobKind::Call if job.answers.is_empty() && job.attempt <= 1 => Self::First,
            JobKind::Call => Self::Again,
        }
    }
}

/// Whether `job` is its call's first run.
fn first_run(job: &Job) -> bool {
    RunOf::of(job) == RunOf::First
}

impl Chat {
    /// Runs every call of the round that can run now: new calls (after their `on_tool_call`
    /// callbacks), approved calls, tasks (resumed once) and answered questions (run again).
    /// Appends the results in call order. A fatal error or a cancellation closes every call
    /// still without a result, so the transcript stays valid and nothing runs twice.
    pub(crate) async fn settle_calls(&mut self, sink: Option<&Sink>) -> Result<Settled, Error> {
        let now = self.now_ms();
        if let Some(round) = self.state.round.as_mut() {
            round.release_expired(now, &self.holder);
        }
        self.needed_tools_registered()?;
        if self.callbacks.resolver.is_some() {
            Box::pin(self.resolve_approvals(None)).await;
        }
        self.file_reads.reset(&self.state.file_reads);
        let (mut planned, regated) = self.plan_jobs();
        if !regated.is_empty() && self.callbacks.resolver.is_some() {
            // Calls that need approval only now go to the resolver too (they alone), then the
            // round is planned again (nothing of it started yet).
            Box::pin(self.resolve_approvals(Some(&regated))).await;
            planned = self.plan_jobs().0;
        }
        self.flush(sink);
        if planned.is_empty() {
            self.persist().await?;
        }
        // Otherwise the first calls' claims open the round in one commit with what came before.
        if !planned.is_empty() && tokio::runtime::Handle::try_current().is_err() {
            return Err(crate::error::ConfigError::NoRuntime.into());
        }
        let mut failure = None;
        let mut planned = planned.into_iter().peekable();
        while failure.is_none() && planned.peek().is_some() {
            let mut segment = Vec::new();
            while let Some(job) = planned.next_if(|j| !j.tool.spec().sequential()) {
                segment.push(job);
            }
            if segment.is_empty() {
                segment.extend(planned.next());
            }
            failure = self.run_segment(segment, sink).await?;
            self.keep_file_reads();
        }
        if let Some(failure) = failure {
            let (text, error) = match failure {
                Failure::Stopped(reason) => {
                    self.close_round(TURN_STOPPED, sink).await;
                    // Kept with the state (and in the store) until the next turn starts.
                    self.state.stopped = Some(reason.clone());
                    self.persist().await?;
                    return Ok(Settled::Stopped(reason));
                }
                Failure::Fatal {
                    tool,
                    call_id,
                    error,
                } => (
                    calls::not_run(&tool),
                    Error::ToolFailed {
                        tool,
                        call_id,
                        source: ToolFailure(error),
                    },
                ),
                Failure::Cancelled => (calls::CANCELLED_BEFORE_RUN.to_owned(), Error::Cancelled),
            };
            self.close_round(&text, sink).await;
            self.persist().await?;
            return Err(error);
        }
        Ok(match &self.state.round {
            None => Settled::Done,
            Some(round) => match round.claimed_elsewhere(self.now_ms(), &self.turn_holder) {
                Some((index, until)) => Settled::ClaimedElsewhere {
                    call_id: round.calls[index].id.clone(),
                    until,
                },
                None => Settled::Paused,
            },
        })
    }

    /// Fails with [`Error::ToolNotRegistered`] when a call that waited for this chat to run it
    /// needs a tool the chat does not have: a paused task, an answered question, or (in a
    /// durable chat) an approved or interrupted call read from the store. Such a call is not
    /// the model's mistake, so it is not answered "no such tool": it stays as it is until the
    /// tool is registered. (A new call of an unknown tool gets that answer.)
    pub(super) fn needed_tools_registered(&self) -> Result<(), Error> {
        let keeps_stored = self.keeps_stored_calls();
        self.tools_registered_for(|_, _, entry| match entry.state {
            CallState::Task { .. } | CallState::Answered { .. } => true,
            CallState::Ready => entry.stored_token.is_some() && keeps_stored,
            _ => false,
        })
    }

    /// Fails with [`Error::ToolNotRegistered`] when a paused task's tool is not registered: the
    /// task is cancelled through its tool (a job, a server's task, a sub-agent's run), and
    /// closing its call without would leave the work running with no one to stop it. (A chat
    /// loaded without its tools refuses a decision the same way.)
    pub(super) fn tasks_cancellable(&self) -> Result<(), Error> {
        self.tools_registered_for(|round, index, _| round.task_of(index).is_some())
    }

    /// [`Error::ToolNotRegistered`] for the first call of the round that `needs_tool` picks and
    /// whose tool the chat lacks (the chat's own search, when local, is always there).
    fn tools_registered_for(
        &self,
        needs_tool: impl Fn(&Ledger, usize, &Entry) -> bool,
    ) -> Result<(), Error> {
        let Some(round) = self.state.round.as_ref() else {
            return Ok(());
        };
        let Some(message) = self.state.messages.get(round.message) else {
            return Ok(());
        };
        let local_search = search::is_local(&self.registry, self.provider.native_tool_search());
        for (index, (entry, call)) in round.calls.iter().zip(&message.tool_calls).enumerate() {
            if needs_tool(round, index, entry)
                && self.registry.find(call).is_none()
                && !(local_search && search::is_search(call))
            {
                return Err(Error::ToolNotRegistered {
                    call_id: call.id.clone(),
                    tool: call.joined_name(),
                });
            }
        }
        Ok(())
    }

    /// Decides, for each call, whether it runs in this settle; writes the results of calls that
    /// cannot run (denied, vetoed, unknown tool). Also gives the calls found to need an
    /// approval they do not have only now (their tool says so for the arguments as they stand,
    /// or the arguments changed since they were approved): they wait for one.
    fn plan_jobs(&mut self) -> (Vec<Planned>, Vec<usize>) {
        let local_search = search::is_local(&self.registry, self.provider.native_tool_search());
        let Some(round) = self.state.round.as_mut() else {
            return (Vec::new(), Vec::new());
        };
        let mut regated = Vec::new();
        let calls = &mut self.state.messages[round.message].tool_calls;
        let default_limit = self.state.options.max_run_time();
        let spill_after = self.state.options.spill_after();
        let mut planned = Vec::new();
        // Whether an earlier call is running under a live claim (another turn's, maybe in
        // another process): a `sequential` tool is a barrier, so no sequential call starts
        // after it, and nothing starts after a sequential one that is still running.
        let mut running_before = false;
        for index in 0..round.calls.len() {
            let Some(call) = calls.get_mut(index) else {
                break;
            };
            if matches!(round.calls[index].state, CallState::Running { .. }) {
                let sequential = self
                    .registry
                    .find(call)
                    .is_none_or(|tool| tool.spec().sequential());
                if sequential {
                    break;
                }
                running_before = true;
                continue;
            }
            let result = |text: String, is_error: bool| {
                Message::tool_result(call.id.as_str(), text, is_error)
            };
            let state = &round.calls[index].state;
            if matches!(state, CallState::Ready) && search::is_search(call) && local_search {
                let (text, is_error) =
                    search::answer(&self.registry, &mut self.state.found_tools, call);
                round.set_result(index, result(text, is_error));
                continue;
            }
            match state {
                CallState::Denied { reason } => {
                    let text = calls::denied(&call.joined_name(), reason.as_deref());
                    round.set_result(index, result(text, true));
                    continue;
                }
                CallState::Ready if self.retries.call_exhausted(call) => {
                    let text = retries::unavailable(&call.joined_name());
                    round.set_result(index, result(text, true));
                    continue;
                }
                CallState::Ready if round.calls[index].gated => {
                    let gate = approvals::gate(
                        &mut round.calls[index],
                        call,
                        &self.state.decisions,
                        &self.callbacks.approval_predicates,
                        &self.registry,
                    );
                    if !gated_call_runs(round, index, gate, &mut regated, |t| result(t, true)) {
                        continue;
                    }
                }
                CallState::Ready => {}
                CallState::Task { .. } | CallState::Answered { .. } => {}
                CallState::AwaitingApproval
                | CallState::Running { .. }
                | CallState::Question { .. }
                | CallState::Finished { .. }
                | CallState::Appended => continue,
            }
            let Some(tool) = self.registry.find(call) else {
                let similar = self.registry.similar(&call.joined_name());
                let text = calls::unknown_tool(&call.joined_name(), &similar);
                round.set_result(index, result(text, true));
                continue;
            };
            // A call that needed no approval when it came may need it now: its tool was
            // registered since, or the tool decides by arguments that were changed.
            let entry = &mut round.calls[index];
            if matches!(entry.state, CallState::Ready)
                && !entry.gated
                && approvals::is_gated(
                    tool.as_ref(),
                    call,
                    &self.state.decisions,
                    &self.callbacks.approval_predicates,
                    &self.registry,
                )
            {
                entry.gated = true;
                entry.dirty = true;
                let gate = approvals::gate(
                    entry,
                    call,
                    &self.state.decisions,
                    &self.callbacks.approval_predicates,
                    &self.registry,
                );
                if !gated_call_runs(round, index, gate, &mut regated, |t| result(t, true)) {
                    continue;
                }
            }
            if running_before && tool.spec().sequential() {
                break;
            }
            let spill = self
                .files
                .as_ref()
                .and_then(|_| spill::limit(tool.spec(), spill_after));
            planned.push(Planned {
                index,
                spill,
                limit: tool.spec().max_run_time().unwrap_or(default_limit),
                tool: Arc::clone(tool),
            });
        }
        (planned, regated)
    }

    /// Where this settle's progress reports go: the stream and the `on_tool_progress`
    /// callbacks, or nowhere when neither listens.
    fn progress_fn(&self, sink: Option<&Sink>) -> Option<ProgressFn> {
        let callbacks = self.callbacks.on_tool_progress.clone();
        if sink.is_none() && callbacks.is_empty() {
            return None;
        }
        let sink = sink.cloned();
        Some(Arc::new(move |progress: &ToolProgress| {
            for f in &callbacks {
                f(progress);
            }
            emit_progress(sink.as_ref(), progress);
        }))
    }

    /// Starts planned calls: each gets its claim in the ledger (written to the store, in a
    /// durable chat, before any of them runs) and becomes a job.
    async fn start(
        &mut self,
        planned: Vec<Planned>,
        sink: Option<&Sink>,
    ) -> Result<Vec<Job>, Error> {
        let progress = self.progress_fn(sink);
        let files = self.turn_files();
        let now = self.now_ms();
        // The runs' deadlines count from the claims, as their leases do.
        let claimed = tokio::time::Instant::now();
        let Some(round) = self.state.round.as_mut().filter(|_| !planned.is_empty()) else {
            return Ok(Vec::new());
        };
        let calls = &self.state.messages[round.message].tool_calls;
        let mut jobs = Vec::with_capacity(planned.len());
        let mut answered = false;
        for planned in planned {
            // A tool that used up its retries since the call was planned (a call before it in
            // the round failed the last time it may): the call does not run.
            if let Some(call) = calls.get(planned.index)
                && round
                    .calls
                    .get(planned.index)
                    .is_some_and(|e| matches!(e.state, CallState::Ready))
                && self.retries.call_exhausted(call)
            {
                let text = retries::unavailable(&call.joined_name());
                round.set_result(
                    planned.index,
                    Message::tool_result(call.id.as_str(), text, true),
                );
                answered = true;
                continue;
            }
            let (Some(call), Some(started)) = (
                calls.get(planned.index),
                round.start(planned.index, &self.turn_holder, now, planned.limit),
            ) else {
                continue;
            };
            jobs.push(Job {
                call: call.clone(),
                kind: started.kind,
                answers: started.answers,
                attempt: started.attempt,
                token: started.token,
                files: files.clone(),
                file_reads: self.files.as_ref().map(|_| self.file_reads.clone()),
                progress: progress.clone(),
                deadline: calls::deadline(claimed, planned.limit),
                planned,
            });
        }
        if answered {
            self.flush(sink);
        }
        if let Err(error) = self.persist().await {
            // None of these calls ran, and the store did not take their claims: they go back
            // to what they were, so the turn's error writes them so, not as running under a
            // turn that has ended (which the next turn, of any process, would wait out).
            if let Some(round) = self.state.round.as_mut() {
                for job in &jobs {
                    round.unstart(job.planned.index);
                }
            }
            return Err(error);
        }
        Ok(jobs)
    }

    /// Runs one segment's calls, up to the chat's workers at a time. Each result lands in the
    /// ledger (and the store) as it comes. On a fatal error or a cancellation the calls still
    /// running are dropped and closed; the calls not started keep their state for the caller to
    /// close.
    ///
    /// A started call is polled once on its own first: one that finishes at once (most tools
    /// that do not wait on I/O) has its result taken in before the next call is polled, and
    /// only a call still waiting joins the others in a `FuturesUnordered`. A waiting call that
    /// has finished is taken in before the next new call is polled, so its result (a fatal
    /// error, say) comes first.
    async fn run_segment(
        &mut self,
        segment: Vec<Planned>,
        sink: Option<&Sink>,
    ) -> Result<Option<Failure>, Error> {
        let workers = self.state.options.workers();
        let write_after = self.write_result_after();
        let mut waiting = segment.into_iter();
        // Made when a call first waits: the calls of most rounds finish on their first poll.
        let mut running: Option<FuturesUnordered<_>> = None;
        // Started calls not polled yet, in call order.
        let mut fresh = VecDeque::new();
        // Each running call's position, when it started (when a long call's result is written
        // on its own), and which run of its call it is.
        let mut in_flight: Vec<(usize, Option<Instant>, RunOf)> =
            Vec::with_capacity(workers.min(8));
        let started = || write_after.is_some().then(Instant::now);
        let (jobs, mut failure) = self.start_up_to(&mut waiting, workers, sink).await?;
        for job in jobs {
            in_flight.push((job.planned.index, started(), RunOf::of(&job)));
            fresh.push_back((job.planned.index, Box::pin(calls::run(job))));
        }
        let cancel = self.cancel.clone();
        let mut cancelled = std::pin::pin!(cancel.cancelled());
        // (A hook that stopped the turn before anything ran skips the loop: the calls it let
        // start are closed below as not run, the others by the caller.)
        while failure.is_none() {
            let waiting_runs = running.as_mut().filter(|r| !r.is_empty());
            let next = if fresh.is_empty() {
                match waiting_runs {
                    Some(waiting_runs) => tokio::select! {
                        biased;
                        () = &mut cancelled => Err(()),
                        next = waiting_runs.next() => Ok(next),
                    },
                    // A cancellation is used once: taken here as the select takes it.
                    None if cancel.take() => Err(()),
                    None => Ok(None),
                }
            } else if cancel.take() {
                Err(())
            } else if let Some(waiting_runs) = waiting_runs
                // A waiting call that has finished is taken in before a new one runs: its
                // result may be the fatal error that stops the new one.
                && let Poll::Ready(Some(done)) = futures::poll!(waiting_runs.next())
            {
                Ok(Some(done))
            } else if let Some((_, mut run)) = fresh.pop_front() {
                match futures::poll!(run.as_mut()) {
                    Poll::Ready(done) => Ok(Some(done)),
                    Poll::Pending => {
                        running.get_or_insert_with(FuturesUnordered::new).push(run);
                        continue;
                    }
                }
            } else {
                continue;
            };
            let (index, token, ran) = match next {
                Err(()) => {
                    failure = Some(Failure::Cancelled);
                    break;
                }
                Ok(None) => break,
                Ok(Some(done)) => done,
            };
            let ran_for = in_flight
                .iter()
                .find(|(i, ..)| *i == index)
                .and_then(|(_, at, _)| at.map(|at| at.elapsed()));
            in_flight.retain(|(i, ..)| *i != index);
            let mut fatal = self.apply(index, token, ran);
            if fatal.is_none() && !self.callbacks.on_tool_result_async.is_empty() {
                fatal = Box::pin(self.hook_result(index)).await;
            }
            self.flush(sink);
            if let Some(fatal) = fatal {
                failure = Some(fatal);
                break;
            }
            // A long call's result is written at once while others still run; quick ones go
            // with the next claims (`start`) or the round's closing commit.
            if waiting.len() == 0
                && !(running.as_ref().is_none_or(FuturesUnordered::is_empty) && fresh.is_empty())
                && write_after.is_some_and(|after| ran_for.is_some_and(|ran| ran >= after))
            {
                self.persist().await?;
            }
            let room = workers
                .saturating_sub(running.as_ref().map_or(0, FuturesUnordered::len) + fresh.len());
            let (jobs, stopped) = self.start_up_to(&mut waiting, room, sink).await?;
            for job in jobs {
                in_flight.push((job.planned.index, started(), RunOf::of(&job)));
                fresh.push_back((job.planned.index, Box::pin(calls::run(job))));
            }
            if stopped.is_some() {
                failure = stopped;
                break;
            }
        }
        drop(running);
        if let (Some(failure), Some(round)) = (&failure, self.state.round.as_mut()) {
            // Started but never polled: nothing of them ran this time.
            let never_polled: Vec<usize> = fresh.iter().map(|(index, _)| *index).collect();
            let (stopped, not_run) = match failure {
                Failure::Fatal { tool, .. } => (calls::stopped(tool), calls::not_run(tool)),
                Failure::Cancelled => (
                    calls::CANCELLED.to_owned(),
                    calls::CANCELLED_BEFORE_RUN.to_owned(),
                ),
                Failure::Stopped(_) => (calls::CANCELLED.to_owned(), TURN_STOPPED.to_owned()),
            };
            let calls = &self.state.messages[round.message].tool_calls;
            for (index, _, run) in in_flight {
                let text = match (run, never_polled.contains(&index)) {
                    // Left to `close_round`, which closes them as every call still running,
                    // a task cancelled through its tool.
                    (RunOf::Task, _) | (RunOf::Again, true) => continue,
                    (RunOf::First, true) => &not_run,
                    _ => &stopped,
                };
                if let Some(call) = calls.get(index) {
                    let result = Message::tool_result(call.id.as_str(), text.clone(), true);
                    round.set_result(index, result);
                }
            }
            self.flush(sink);
        }
        drop(fresh);
        Ok(failure)
    }

    /// Starts calls from `waiting` until `room` of them are to run or none is left. A call
    /// that could not start, or that a hook vetoed, makes room for the next one, so a segment
    /// never ends with calls not started while none runs. Stops at a hook that stops the turn.
    async fn start_up_to(
        &mut self,
        waiting: &mut std::vec::IntoIter<Planned>,
        room: usize,
        sink: Option<&Sink>,
    ) -> Result<(Vec<Job>, Option<Failure>), Error> {
        let mut jobs = Vec::new();
        while jobs.len() < room {
            let batch: Vec<Planned> = waiting.by_ref().take(room - jobs.len()).collect();
            if batch.is_empty() {
                break;
            }
            let started = self.start(batch, sink).await?;
            let (started, stopped) = if self.callbacks.on_tool_call.is_empty() {
                (started, None)
            } else {
                // Boxed: a chat without hooks keeps its settle future small.
                Box::pin(self.hook_calls(started, sink)).await?
            };
            if jobs.is_empty() {
                jobs = started;
            } else {
                jobs.extend(started);
            }
            if stopped.is_some() {
                return Ok((jobs, stopped));
            }
        }
        Ok((jobs, None))
    }

    /// Moves a call's state on with what its run produced; returns the failure of a fatal
    /// error. A run whose claim was taken over in the meantime changes nothing.
    fn apply(&mut self, index: usize, token: u64, ran: Ran) -> Option<Failure> {
        self.keep_file_reads();
        let task_since = matches!(ran, Ran::Task(_)).then(|| self.now_ms());
        let round = self.state.round.as_mut()?;
        let call = self.state.messages[round.message].tool_calls.get(index)?;
        let id = call.id.as_str();
        let mut fatal = None;
        let action = self.state.options.on_retries_exhausted();
        // A failed call counts against its tool's budget; the one that uses it up tells the
        // model the tool is unavailable for the rest of the turn (unless the turn stops).
        let mut failed = |mut text: String| {
            let limit = retries::limit_of(&self.registry, &self.state.options, call);
            self.retries
                .count_failure(&call.joined_name(), limit, action, &mut text);
            CallState::Finished {
                result: Message::tool_result(id, text, true),
            }
        };
        let state = match ran {
            Ran::Output(mut output) => {
                if let Some(limit) = self.state.options.max_chat_attachment_bytes()
                    && !output.attachments().is_empty()
                {
                    let held = attachment_room::held(&self.state.messages, Some(round));
                    attachment_room::fit(&mut output, limit.saturating_sub(held), limit);
                }
                self.retries.call_succeeded(call);
                CallState::Finished {
                    result: Message::tool_result_parts(id, output.into_parts(), false),
                }
            }
            Ran::Recoverable(text) => failed(text),
            Ran::TimedOut(limit) => failed(calls::timed_out(limit)),
            Ran::Task(task) => CallState::Task {
                task: *task,
                since: task_since.unwrap_or_default(),
            },
            Ran::Question { question, resumed } => CallState::Question {
                question: *question,
                task: resumed.map(|task| *task),
            },
            Ran::Fatal(error) => {
                fatal = Some(Failure::Fatal {
                    tool: call.joined_name(),
                    call_id: call.id.clone(),
                    error,
                });
                CallState::Finished {
                    result: Message::tool_result(id, calls::FAILED, true),
                }
            }
        };
        if round.finish(index, token, state).is_err() {
            tracing::warn!(
                call_id = id,
                "a call's result came after its claim ended; dropped"
            );
            return None;
        }
        fatal
    }

    /// Copies what the file tools learned of the model's reads into the chat's state (written
    /// with the next commit of a durable chat).
    fn keep_file_reads(&mut self) {
        if let Some(reads) = self.file_reads.take_changed() {
            self.state.file_reads = reads;
        }
    }

    /// Appends the results that are next in call order; ends the round when every call has its
    /// result in the transcript.
    pub(crate) fn flush(&mut self, sink: Option<&Sink>) {
        let Some(round) = self.state.round.as_mut() else {
            return;
        };
        let message = round.message;
        while let Some((index, result)) = round.take_next_appendable() {
            let messages = &mut self.state.messages;
            let call = &messages[message].tool_calls[index];
            self.callbacks.on_tool_result(call, &result);
            emit(sink, || ChatEvent::ToolResult {
                call: call.clone(),
                result: result.clone(),
            });
            messages.push(result);
            if let Some(appended) = messages.last() {
                self.callbacks.after_message(appended);
            }
        }
        if round.is_complete()
            && let Some(round) = self.state.round.take()
        {
            self.retire_round(round);
        }
    }

    /// Closes every call of the round that has no result: tasks are cancelled through their
    /// tool, calls that had started are told they were stopped, the others that they did not
    /// run (`not_run_text`). Then everything is appended and the round ends.
    pub(crate) async fn close_round(&mut self, not_run_text: &str, sink: Option<&Sink>) {
        self.close_calls(not_run_text, sink, false).await;
    }

    /// Closes the calls of the round that wait on the application (for an approval, an answer
    /// or a task), as [`close_round`](Self::close_round) does; calls running (here or in
    /// another process) are left to finish.
    pub(crate) async fn close_waiting_calls(&mut self, not_run_text: &str, sink: Option<&Sink>) {
        self.close_calls(not_run_text, sink, true).await;
    }

    async fn close_calls(&mut self, not_run_text: &str, sink: Option<&Sink>, waiting_only: bool) {
        let Some(round) = self.state.round.as_ref() else {
            return;
        };
        let calls = &self.state.messages[round.message].tool_calls;
        let mut results = Vec::new();
        for (index, (entry, call)) in round.calls.iter().zip(calls).enumerate() {
            if entry.state.has_result() {
                continue;
            }
            let waits = matches!(
                entry.state,
                CallState::AwaitingApproval | CallState::Question { .. } | CallState::Task { .. }
            );
            if waiting_only && !waits {
                continue;
            }
            if let (Some(task), Some(tool)) = (round.task_of(index), self.registry.find(call)) {
                let spec = tool.spec();
                // The store fenced by the run claim, as the call's own runs had.
                let ctx = crate::context::ToolContext::builder(call.id.as_str())
                    .tool_of(spec)
                    .attempt(entry.attempt)
                    .files(self.turn_files())
                    .build();
                let cancel = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    tool.cancel(
                        task.clone(),
                        crate::tool::RawArgs::new(&call.arguments),
                        ctx,
                    )
                }));
                if let Ok(cancel) = cancel {
                    // Bounded like a call, so a hanging `cancel` cannot hang the chat.
                    let limit = spec
                        .max_run_time()
                        .unwrap_or(self.state.options.max_run_time());
                    let cancel =
                        futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(cancel));
                    if tokio::runtime::Handle::try_current().is_ok() {
                        let _ = tokio::time::timeout(limit, cancel).await;
                    } else {
                        let _ = cancel.await;
                    }
                }
            }
            let text = match &entry.state {
                CallState::Denied { reason } => {
                    calls::denied(&call.joined_name(), reason.as_deref())
                }
                // Never started: it did not run. (A call back to ready after a lost claim had
                // started once.)
                CallState::Ready | CallState::AwaitingApproval if entry.attempt == 0 => {
                    not_run_text.to_owned()
                }
                _ => calls::CANCELLED.to_owned(),
            };
            results.push((index, Message::tool_result(call.id.as_str(), text, true)));
        }
        if let Some(round) = self.state.round.as_mut() {
            for (index, result) in results {
                round.set_result(index, result);
            }
        }
        self.flush(sink);
    }
}

impl Chat {
    /// Runs the `on_tool_call` hooks of the calls just started, inside their claims (written
    /// to the store first, in a durable chat). A veto gives the call its result; a rewrite
    /// changes the call in the transcript and is written to the store before the tool runs; a
    /// rewritten call that needed approval needs it again unless a remembered rule or the
    /// resolver approves the new arguments; a stop closes every call just started. Returns the
    /// jobs to run, and the stop.
    async fn hook_calls(
        &mut self,
        jobs: Vec<Job>,
        sink: Option<&Sink>,
    ) -> Result<(Vec<Job>, Option<Failure>), Error> {
        if self.callbacks.on_tool_call.is_empty() || jobs.is_empty() {
            return Ok((jobs, None));
        }
        let hooks = self.callbacks.on_tool_call.clone();
        let limit = self.callbacks.hook_timeout();
        // The hooks see new calls (and calls run again after a lost claim), not resumed tasks
        // or answered calls run again.
        let hooked = |job: &Job| matches!(job.kind, JobKind::Call) && job.answers.is_empty();
        let actions = futures::future::join_all(jobs.iter().map(|job| {
            let hooks = &hooks;
            async move {
                if hooked(job) {
                    hooks::on_tool_call(hooks, &job.call, limit).await
                } else {
                    ToolCallAction::Run
                }
            }
        }))
        .await;
        let mut kept = Vec::with_capacity(jobs.len());
        let mut stop = None;
        let mut changed = false;
        for (mut job, action) in jobs.into_iter().zip(actions) {
            let index = job.planned.index;
            let id = job.call.id.clone();
            let result = |text: String| Message::tool_result(id.as_str(), text, true);
            if stop.is_some() {
                // A first run only: a resumed task or a call run again is closed (its task
                // cancelled through its tool) by `close_round`.
                if first_run(&job) {
                    self.set_result(index, result(TURN_STOPPED.to_owned()));
                }
                continue;
            }
            match action {
                ToolCallAction::Run => kept.push(job),
                ToolCallAction::Veto(reason) => {
                    self.set_result(index, result(reason));
                    changed = true;
                }
                ToolCallAction::Stop(reason) => {
                    self.set_result(index, result(reason.clone()));
                    stop = Some(Failure::Stopped(super::stop::StopReason::Hook {
                        tool: job.call.joined_name(),
                        call_id: job.call.id.clone(),
                        reason,
                    }));
                    changed = true;
                }
                ToolCallAction::Rewrite(arguments) => {
                    changed = true;
                    let mut rewritten = job.call.clone();
                    rewritten.arguments = arguments;
                    if calls::check_arguments(&mut rewritten).is_err() {
                        self.set_result(index, result(calls::REWRITE_INVALID.into()));
                        continue;
                    }
                    let Some(round) = self.state.round.as_mut() else {
                        continue;
                    };
                    let message = round.message;
                    if let Some(call) = self.state.messages[message].tool_calls.get_mut(index) {
                        call.arguments.clone_from(&rewritten.arguments);
                    }
                    self.message_changed(message);
                    job.call = rewritten;
                    match self.rebind(index, &job.call).await {
                        None => kept.push(job),
                        Some(Decision::Deny(reason)) => {
                            let reason = Some(reason.as_str()).filter(|r| !r.trim().is_empty());
                            let text = calls::denied(&job.call.joined_name(), reason);
                            self.set_result(index, result(text));
                        }
                        Some(_) => {
                            if let Some(round) = self.state.round.as_mut() {
                                round.reapprove(index);
                            }
                        }
                    }
                }
            }
        }
        if stop.is_some() {
            // Nothing of this batch runs once a hook stopped the turn.
            for job in kept.drain(..).filter(first_run) {
                let result = Message::tool_result(job.call.id.as_str(), TURN_STOPPED, true);
                self.set_result(job.planned.index, result);
            }
        }
        if changed {
            self.flush(sink);
            self.persist().await?;
        }
        Ok((kept, stop))
    }

    /// Checks the approval of a gated call whose arguments changed: `None` when it may run
    /// (not gated, its approval covers the arguments, or a remembered rule or the resolver
    /// approves them: the approval is bound to them now); else the denial, or `Ask`.
    async fn rebind(&mut self, index: usize, call: &crate::message::ToolCall) -> Option<Decision> {
        let entry = self.state.round.as_ref()?.calls.get(index)?;
        // A tool that decides by arguments may need approval for the new ones.
        let gated = entry.gated
            || self.registry.find(call).is_some_and(|tool| {
                approvals::is_gated(
                    tool.as_ref(),
                    call,
                    &self.state.decisions,
                    &self.callbacks.approval_predicates,
                    &self.registry,
                )
            });
        if !gated
            || entry
                .approved
                .as_deref()
                .is_some_and(|a| approvals::same_arguments(a, &call.arguments))
        {
            return None;
        }
        if !entry.gated {
            let entry = self.state.round.as_mut()?.calls.get_mut(index)?;
            entry.gated = true;
            entry.dirty = true;
        }
        let decision = match approvals::remembered(
            &self.state.decisions,
            &self.callbacks.approval_predicates,
            &self.registry,
            call,
        ) {
            Some(d) if d.approved => Decision::Approve,
            Some(d) => Decision::Deny(d.reason.clone().unwrap_or_default()),
            None => match self.callbacks.resolver.clone() {
                Some(resolver) => {
                    hooks::resolve(&resolver, call, self.callbacks.hook_timeout()).await
                }
                None => Decision::Ask,
            },
        };
        if decision == Decision::Approve {
            let entry = self.state.round.as_mut()?.calls.get_mut(index)?;
            entry.approved = Some(call.arguments.clone());
            entry.dirty = true;
            return None;
        }
        Some(decision)
    }

    fn set_result(&mut self, index: usize, result: Message) {
        if let Some(round) = self.state.round.as_mut() {
            round.set_result(index, result);
        }
    }

    /// Runs the `on_tool_result_async` hooks on the result a run just gave the call at
    /// `index` (before it is appended or written to the store); returns the stop, if a hook
    /// stopped the turn or failed.
    async fn hook_result(&mut self, index: usize) -> Option<Failure> {
        let round = self.state.round.as_ref()?;
        let call = self.state.messages[round.message]
            .tool_calls
            .get(index)?
            .clone();
        let CallState::Finished { result } = &round.calls.get(index)?.state else {
            return None;
        };
        let hooks = self.callbacks.on_tool_result_async.clone();
        let limit = self.callbacks.hook_timeout();
        let (mut result, stop) = hooks::on_tool_result(&hooks, &call, result.clone(), limit).await;
        let round = self.state.round.as_ref()?;
        let CallState::Finished { result: kept } = &round.calls.get(index)?.state else {
            return None;
        };
        if *kept != result {
            // What a hook put in the result fits in the chat's room for attachments as a
            // tool's output does: the room left without the result it replaces.
            if let Some(room_limit) = self.state.options.max_chat_attachment_bytes() {
                let held = attachment_room::held(&self.state.messages, Some(round))
                    .saturating_sub(attachment_room::held_by(kept));
                attachment_room::fit_result(
                    &mut result,
                    room_limit.saturating_sub(held),
                    room_limit,
                );
            }
            let entry = self.state.round.as_mut()?.calls.get_mut(index)?;
            entry.state = CallState::Finished { result };
            entry.dirty = true;
        }
        stop.map(|reason| {
            Failure::Stopped(super::stop::StopReason::Hook {
                tool: call.joined_name(),
                call_id: call.id.clone(),
                reason,
            })
        })
    }

    /// Asks the approval resolver about every call waiting for approval (`only` those at these
    /// positions, when given): an approval is bound to the call's arguments, a denial gives it
    /// its result at this settle, `Ask` leaves it for a person.
    async fn resolve_approvals(&mut self, only: Option<&[usize]>) {
        let (Some(resolver), Some(round)) = (self.callbacks.resolver.clone(), &self.state.round)
        else {
            return;
        };
        let calls = &self.state.messages[round.message].tool_calls;
        let waiting: Vec<(usize, crate::message::ToolCall)> = round
            .calls
            .iter()
            .enumerate()
            .filter(|(i, e)| {
                matches!(e.state, CallState::AwaitingApproval)
                    && only.is_none_or(|only| only.contains(i))
            })
            .filter_map(|(i, _)| Some((i, calls.get(i)?.clone())))
            .filter(|(_, call)| self.registry.find(call).is_some())
            .collect();
        if waiting.is_empty() {
            return;
        }
        let limit = self.callbacks.hook_timeout();
        let decisions = futures::future::join_all(
            waiting
                .iter()
                .map(|(_, call)| hooks::resolve(&resolver, call, limit)),
        )
        .await;
        let Some(round) = self.state.round.as_mut() else {
            return;
        };
        for ((index, call), decision) in waiting.into_iter().zip(decisions) {
            match decision {
                Decision::Approve => round.decide(index, None, &call.arguments),
                Decision::Deny(reason) => round.decide(index, Some(&reason), &call.arguments),
                _ => {}
            }
        }
    }
}

/// Carries out what a gated call's [`Gate`] says: whether it runs now. A denied call gets its
/// result (`denied` makes it from the denial's text); a call waiting for approval is noted in
/// `regated`, for the resolver.
fn gated_call_runs(
    round: &mut Ledger,
    index: usize,
    gate: Gate,
    regated: &mut Vec<usize>,
    denied: impl FnOnce(String) -> Message,
) -> bool {
    match gate {
        Gate::Runs => true,
        Gate::Denied(text) => {
            round.set_result(index, denied(text));
            false
        }
        Gate::Waits => {
            round.reapprove(index);
            regated.push(index);
            false
        }
    }
}
