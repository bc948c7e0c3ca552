//! Settling a round: the driver side of the ledger. It runs every call that can run, in
//! segments (a `sequential` tool is a barrier), with the chat's concurrency; carries each call's
//! transitions out (callbacks, tool runs, tracing); appends results in call order; and, in a
//! durable chat, writes each transition to the store before acting on it (a call's claim is
//! written before the tool starts, its result as soon as it finishes).

use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt as _;
use futures::stream::FuturesUnordered;

use super::Chat;
use super::callbacks::ToolCallAction;
use super::calls::{self, Job, Planned, Ran};
use super::ledger::CallState;
use super::options::RetriesExhausted;
use super::retries;
use super::search;
use super::spill;
use super::stream::{ChatEvent, Sink, emit};
use crate::context::ProgressFn;
use crate::{Error, Message, ToolFailure, ToolProgress};

/// How a settle ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Settled {
    /// Every call has its result in the transcript.
    Done,
    /// Some calls wait on tasks, questions or approvals.
    Paused,
    /// A call is claimed by another process until `until` (milliseconds since the Unix epoch).
    ClaimedElsewhere { call_id: String, until: u64 },
}

/// Why a settle stopped early.
enum Failure {
    Fatal {
        tool: String,
        call_id: String,
        error: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    Cancelled,
}

impl Chat {
    /// Runs every call of the round that can run now: new calls (after their `on_tool_call`
    /// callbacks), approved calls, tasks (resumed once) and answered questions (run again).
    /// Appends the results in call order. A fatal error or a cancellation closes every call
    /// still without a result, so the transcript stays valid and nothing runs twice.
    pub(crate) async fn settle_calls(&mut self, sink: Option<&Sink>) -> Result<Settled, Error> {
        if let Some(round) = self.state.round.as_mut() {
            round.release_expired(crate::clock::now_ms(), &self.holder);
        }
        self.needed_tools_registered()?;
        self.file_reads.reset(&self.state.file_reads);
        let planned = self.plan_jobs();
        self.flush(sink);
        if planned.is_empty() {
            self.persist().await?;
        }
        // Otherwise the first calls' claims open the round in one commit with what came before.
        if !planned.is_empty() && tokio::runtime::Handle::try_current().is_err() {
            return Err(crate::ConfigError::NoRuntime.into());
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
                Failure::Cancelled => (calls::CANCELLED.to_owned(), Error::Cancelled),
            };
            self.close_round(&text, sink).await;
            self.persist().await?;
            return Err(error);
        }
        Ok(match &self.state.round {
            None => Settled::Done,
            Some(round) => match round.claimed_elsewhere(crate::clock::now_ms(), &self.turn_holder)
            {
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
    fn needed_tools_registered(&self) -> Result<(), Error> {
        let Some(round) = self.state.round.as_ref() else {
            return Ok(());
        };
        let local_search = search::is_local(&self.registry, self.provider.native_tool_search());
        let calls = &self.state.messages[round.message].tool_calls;
        for (entry, call) in round.calls.iter().zip(calls) {
            let waited = match entry.state {
                CallState::Task { .. } | CallState::Answered { .. } => true,
                CallState::Ready => entry.stored_token.is_some() && self.durable.is_some(),
                _ => false,
            };
            if waited
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
    /// cannot run (denied, vetoed, unknown tool).
    fn plan_jobs(&mut self) -> Vec<Planned> {
        let local_search = search::is_local(&self.registry, self.provider.native_tool_search());
        let Some(round) = self.state.round.as_mut() else {
            return Vec::new();
        };
        let message = round.message;
        let calls = &mut self.state.messages[message].tool_calls;
        let default_limit = self.state.options.max_run_time();
        let spill_after = self.state.options.spill_after();
        let mut rewritten_any = false;
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
                CallState::Ready if self.retries.is_exhausted(&call.joined_name()) => {
                    let text = retries::unavailable(&call.joined_name());
                    round.set_result(index, result(text, true));
                    continue;
                }
                CallState::Ready => {
                    if self.registry.find(call).is_some() {
                        match self.callbacks.on_tool_call(call) {
                            ToolCallAction::Run => {}
                            ToolCallAction::Veto(reason) => {
                                round.set_result(index, result(reason, true));
                                continue;
                            }
                            ToolCallAction::Rewrite(arguments) => {
                                let mut rewritten = call.clone();
                                rewritten.arguments = arguments;
                                if calls::check_arguments(&mut rewritten).is_err() {
                                    let text = calls::REWRITE_INVALID.into();
                                    round.set_result(index, result(text, true));
                                    continue;
                                }
                                call.arguments = rewritten.arguments;
                                rewritten_any = true;
                            }
                        }
                    }
                }
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
        if rewritten_any {
            self.message_changed(message);
        }
        planned
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
            emit(sink.as_ref(), || ChatEvent::ToolProgress(progress.clone()));
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
        let Some(round) = self.state.round.as_mut().filter(|_| !planned.is_empty()) else {
            return Ok(Vec::new());
        };
        let now = crate::clock::now_ms();
        let calls = &self.state.messages[round.message].tool_calls;
        let mut jobs = Vec::with_capacity(planned.len());
        for planned in planned {
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
                planned,
            });
        }
        self.persist().await?;
        Ok(jobs)
    }

    /// Runs one segment's calls, up to the chat's workers at a time. Each result lands in the
    /// ledger (and the store) as it comes. On a fatal error or a cancellation the calls still
    /// running are dropped and closed; the calls not started keep their state for the caller to
    /// close.
    async fn run_segment(
        &mut self,
        segment: Vec<Planned>,
        sink: Option<&Sink>,
    ) -> Result<Option<Failure>, Error> {
        let workers = self.state.options.workers();
        let write_after = self.write_result_after();
        let mut waiting = segment.into_iter();
        let mut running = FuturesUnordered::new();
        // Each running call's position and when it started.
        let mut in_flight: Vec<(usize, Instant)> = Vec::with_capacity(workers.min(8));
        for job in self
            .start(waiting.by_ref().take(workers).collect(), sink)
            .await?
        {
            in_flight.push((job.planned.index, Instant::now()));
            running.push(calls::run(job));
        }
        let cancel = self.cancel.clone();
        let mut cancelled = std::pin::pin!(cancel.cancelled());
        let mut failure = None;
        loop {
            let next = tokio::select! {
                biased;
                () = &mut cancelled => Err(()),
                next = running.next() => Ok(next),
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
                .find(|(i, _)| *i == index)
                .map(|(_, at)| at.elapsed());
            in_flight.retain(|(i, _)| *i != index);
            let fatal = self.apply(index, token, ran);
            self.flush(sink);
            if let Some(fatal) = fatal {
                failure = Some(fatal);
                break;
            }
            let next = waiting.next();
            // A long call's result is written at once while others still run; quick ones go
            // with the next claims (`start`) or the round's closing commit.
            if next.is_none()
                && !running.is_empty()
                && write_after.is_some_and(|after| ran_for.is_some_and(|ran| ran >= after))
            {
                self.persist().await?;
            }
            for job in self.start(next.into_iter().collect(), sink).await? {
                in_flight.push((job.planned.index, Instant::now()));
                running.push(calls::run(job));
            }
        }
        drop(running);
        if let (Some(failure), Some(round)) = (&failure, self.state.round.as_mut()) {
            let text = match failure {
                Failure::Fatal { tool, .. } => calls::stopped(tool),
                Failure::Cancelled => calls::CANCELLED.to_owned(),
            };
            let calls = &self.state.messages[round.message].tool_calls;
            for (index, _) in in_flight {
                if let Some(call) = calls.get(index) {
                    let result = Message::tool_result(call.id.as_str(), text.clone(), true);
                    round.set_result(index, result);
                }
            }
            self.flush(sink);
        }
        Ok(failure)
    }

    /// Moves a call's state on with what its run produced; returns the failure of a fatal
    /// error. A run whose claim was taken over in the meantime changes nothing.
    fn apply(&mut self, index: usize, token: u64, ran: Ran) -> Option<Failure> {
        self.keep_file_reads();
        let round = self.state.round.as_mut()?;
        let call = self.state.messages[round.message].tool_calls.get(index)?;
        let id = call.id.as_str();
        let mut fatal = None;
        let action = self.state.options.on_retries_exhausted();
        // A failed call counts against its tool's budget; the one that uses it up tells the
        // model the tool is unavailable for the rest of the turn (unless the turn stops).
        let mut failed = |text: String| {
            let tool = call.joined_name();
            let limit = self
                .registry
                .find(call)
                .and_then(|tool| tool.spec().max_retries())
                .or(self.state.options.max_retries());
            let mut text = text;
            if let retries::Spent::Exhausted { failures } =
                self.retries.failed(&tool, limit, action)
                && action == RetriesExhausted::Unavailable
            {
                text.push_str(&retries::exhausted_notice(&tool, failures));
            }
            CallState::Finished {
                result: Message::tool_result(id, text, true),
            }
        };
        let state = match ran {
            Ran::Output(output) => {
                self.retries.succeeded(&call.joined_name());
                CallState::Finished {
                    result: Message::tool_result_parts(id, output.into_parts(), false),
                }
            }
            Ran::Recoverable(text) => failed(text),
            Ran::TimedOut(limit) => failed(calls::timed_out(limit)),
            Ran::Task(task) => CallState::Task {
                task,
                since: crate::clock::now_ms(),
            },
            Ran::Question { question, resumed } => CallState::Question {
                question,
                task: resumed,
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
        let results = round.take_appendable();
        let complete = round.is_complete();
        let message = round.message;
        for (index, result) in results {
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
        if complete && let Some(round) = self.state.round.take() {
            self.retire_round(round);
        }
    }

    /// Closes every call of the round that has no result: tasks are cancelled through their
    /// tool, calls that had started are told they were stopped, the others that they did not
    /// run (`not_run_text`). Then everything is appended and the round ends.
    pub(crate) async fn close_round(&mut self, not_run_text: &str, sink: Option<&Sink>) {
        let Some(round) = self.state.round.as_ref() else {
            return;
        };
        let calls = &self.state.messages[round.message].tool_calls;
        let mut results = Vec::new();
        for (index, (entry, call)) in round.calls.iter().zip(calls).enumerate() {
            if entry.state.has_result() {
                continue;
            }
            if let (Some(task), Some(tool)) = (round.task_of(index), self.registry.find(call)) {
                let spec = tool.spec();
                let ctx = crate::ToolContext::builder(call.id.as_str())
                    .tool(spec.name(), spec.namespace().map(|n| n.name().to_owned()))
                    .attempt(entry.attempt)
                    .files(self.files.clone())
                    .build();
                let cancel = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    tool.cancel(task.clone(), crate::RawArgs::new(&call.arguments), ctx)
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
                CallState::Ready | CallState::AwaitingApproval => not_run_text.to_owned(),
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
