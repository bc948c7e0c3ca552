//! Settling a round: running every call that can run, in segments (a `sequential` tool is a
//! barrier), with the chat's concurrency, and appending results in call order.

use std::sync::Arc;

use futures::StreamExt as _;
use futures::stream::FuturesUnordered;

use super::Chat;
use super::callbacks::ToolCallAction;
use super::calls::{self, Job, JobKind, Ran};
use super::cancel::CancelHandle;
use super::search;
use super::spill;
use super::state::{CallState, Slot};
use super::stream::{ChatEvent, Sink, emit};
use crate::{Error, Message, ToolCall, ToolFailure};

/// How a settle ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Settled {
    /// Every call has its result in the transcript.
    Done,
    /// Some calls wait on tasks, questions or approvals.
    Paused,
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
    pub(crate) async fn settle(&mut self, sink: Option<&Sink>) -> Result<Settled, Error> {
        let jobs = self.prepare_jobs();
        self.flush(sink);
        if !jobs.is_empty() && tokio::runtime::Handle::try_current().is_err() {
            return Err(Error::InvalidConfig(
                "tools run inside a Tokio runtime (with timers enabled, for `max_run_time`); call the chat from one".into(),
            ));
        }
        let workers = self.state.options.workers();
        let mut failure = None;
        let mut jobs = jobs.into_iter().peekable();
        while failure.is_none() && jobs.peek().is_some() {
            let mut segment = Vec::new();
            while let Some(job) = jobs.next_if(|j| !j.tool.spec().sequential()) {
                segment.push(job);
            }
            if segment.is_empty() {
                segment.extend(jobs.next());
            }
            let Some(round) = self.state.round.as_mut() else {
                break;
            };
            let calls = &self.state.messages[round.message].tool_calls;
            failure = run_segment(calls, &mut round.slots, segment, workers, &self.cancel).await;
            self.flush(sink);
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
            return Err(error);
        }
        Ok(match self.state.round {
            None => Settled::Done,
            Some(_) => Settled::Paused,
        })
    }

    /// Decides, for each call, whether it runs in this settle; writes the results of calls that
    /// cannot run (denied, vetoed, unknown tool).
    fn prepare_jobs(&mut self) -> Vec<Job> {
        let local_search = search::is_local(&self.registry, self.provider.native_tool_search());
        let Some(round) = self.state.round.as_mut() else {
            return Vec::new();
        };
        let calls = &mut self.state.messages[round.message].tool_calls;
        let default_limit = self.state.options.max_run_time();
        let spill_after = self.state.options.spill_after();
        let mut jobs = Vec::new();
        for (index, (slot, call)) in round.slots.iter_mut().zip(calls.iter_mut()).enumerate() {
            if matches!(slot.state, CallState::Ready) && search::is_search(call) && local_search {
                let (text, is_error) =
                    search::answer(&self.registry, &mut self.state.found_tools, call);
                finish(slot, call, text, is_error);
                continue;
            }
            let (kind, answers) = match &slot.state {
                CallState::Denied { reason } => {
                    let text = calls::denied(&call.joined_name(), reason.as_deref());
                    finish(slot, call, text, true);
                    continue;
                }
                CallState::Ready => {
                    if self.registry.find(call).is_some() {
                        match self.callbacks.on_tool_call(call) {
                            ToolCallAction::Run => {}
                            ToolCallAction::Veto(reason) => {
                                finish(slot, call, reason, true);
                                continue;
                            }
                            ToolCallAction::Rewrite(arguments) => {
                                let mut rewritten = call.clone();
                                rewritten.arguments = arguments;
                                if calls::check_arguments(&mut rewritten).is_err() {
                                    finish(slot, call, calls::REWRITE_INVALID.into(), true);
                                    continue;
                                }
                                call.arguments = rewritten.arguments;
                            }
                        }
                    }
                    (JobKind::Call, Vec::new())
                }
                CallState::Task { task } => (JobKind::Resume(task.clone()), slot.answers.clone()),
                CallState::Answered { task } => {
                    let kind = match task {
                        Some(task) => JobKind::Resume(task.clone()),
                        None => JobKind::Call,
                    };
                    (kind, slot.answers.clone())
                }
                CallState::AwaitingApproval
                | CallState::Question { .. }
                | CallState::Finished { .. }
                | CallState::Appended => continue,
            };
            let Some(tool) = self.registry.find(call) else {
                let similar = self.registry.similar(&call.joined_name());
                let text = calls::unknown_tool(&call.joined_name(), &similar);
                finish(slot, call, text, true);
                continue;
            };
            let spill = self
                .files
                .as_ref()
                .and_then(|_| spill::limit(tool.spec(), spill_after));
            jobs.push(Job {
                index,
                spill,
                limit: tool.spec().max_run_time().unwrap_or(default_limit),
                tool: Arc::clone(tool),
                kind,
                answers,
                files: self.files.clone(),
            });
        }
        jobs
    }

    /// Appends the results that are next in call order; ends the round when every call has its
    /// result in the transcript.
    pub(crate) fn flush(&mut self, sink: Option<&Sink>) {
        let Some(round) = self.state.round.as_mut() else {
            return;
        };
        let messages = &mut self.state.messages;
        while let Some(slot) = round.slots.get_mut(round.appended) {
            if !matches!(slot.state, CallState::Finished { .. }) {
                break;
            }
            let CallState::Finished { result } =
                std::mem::replace(&mut slot.state, CallState::Appended)
            else {
                break;
            };
            let call = &messages[round.message].tool_calls[round.appended];
            self.callbacks.on_tool_result(call, &result);
            emit(sink, || ChatEvent::ToolResult {
                call: call.clone(),
                result: result.clone(),
            });
            messages.push(result);
            if let Some(appended) = messages.last() {
                self.callbacks.after_message(appended);
            }
            round.appended += 1;
        }
        if round.appended == round.slots.len() {
            self.state.round = None;
        }
    }

    /// Closes every call of the round that has no result: tasks are cancelled through their
    /// tool, calls that had started are told they were stopped, the others that they did not
    /// run (`not_run_text`). Then everything is appended and the round ends.
    pub(crate) async fn close_round(&mut self, not_run_text: &str, sink: Option<&Sink>) {
        let Some(round) = self.state.round.as_mut() else {
            return;
        };
        let calls = &self.state.messages[round.message].tool_calls;
        for (slot, call) in round.slots.iter_mut().zip(calls) {
            if slot.state.has_result() {
                continue;
            }
            let task = match &slot.state {
                CallState::Task { task } => Some(task.clone()),
                CallState::Question { task, .. } | CallState::Answered { task } => task.clone(),
                _ => None,
            };
            if let (Some(task), Some(tool)) = (task, self.registry.find(call)) {
                let spec = tool.spec();
                let ctx = crate::ToolContext::builder(call.id.as_str())
                    .tool(spec.name(), spec.namespace().map(|n| n.name().to_owned()))
                    .files(self.files.clone())
                    .build();
                let cancel = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    tool.cancel(task, crate::RawArgs::new(&call.arguments), ctx)
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
            let text = match &slot.state {
                CallState::Denied { reason } => {
                    calls::denied(&call.joined_name(), reason.as_deref())
                }
                CallState::Ready | CallState::AwaitingApproval => not_run_text.to_owned(),
                _ => calls::CANCELLED.to_owned(),
            };
            finish(slot, call, text, true);
        }
        self.flush(sink);
    }
}

fn finish(slot: &mut Slot, call: &ToolCall, text: String, is_error: bool) {
    slot.state = CallState::Finished {
        result: Message::tool_result(call.id.as_str(), text, is_error),
    };
}

/// Runs one segment's jobs, up to `workers` at a time, on this task. Each result lands in its
/// call's slot as it comes. On a fatal error or a cancellation the calls still running are
/// dropped and closed; the jobs not started keep their state for the caller to close.
async fn run_segment(
    calls: &[ToolCall],
    slots: &mut [Slot],
    jobs: Vec<Job>,
    workers: usize,
    cancel: &CancelHandle,
) -> Option<Failure> {
    let mut waiting = jobs.into_iter();
    let mut running = FuturesUnordered::new();
    let mut in_flight: Vec<usize> = Vec::with_capacity(workers.min(8));
    for job in waiting.by_ref().take(workers) {
        in_flight.push(job.index);
        let call = &calls[job.index];
        running.push(calls::run(job, call));
    }
    let mut failure = None;
    let mut cancelled = std::pin::pin!(cancel.cancelled());
    loop {
        let next = tokio::select! {
            biased;
            () = &mut cancelled => Err(()),
            next = running.next() => Ok(next),
        };
        let (index, ran) = match next {
            Err(()) => {
                failure = Some(Failure::Cancelled);
                break;
            }
            Ok(None) => break,
            Ok(Some(done)) => done,
        };
        in_flight.retain(|&i| i != index);
        if let Some(fatal) = apply(&mut slots[index], &calls[index], ran) {
            failure = Some(fatal);
            break;
        }
        if let Some(job) = waiting.next() {
            in_flight.push(job.index);
            let call = &calls[job.index];
            running.push(calls::run(job, call));
        }
    }
    drop(running);
    if let Some(failure) = &failure {
        let text = match failure {
            Failure::Fatal { tool, .. } => calls::stopped(tool),
            Failure::Cancelled => calls::CANCELLED.to_owned(),
        };
        for index in in_flight {
            finish(&mut slots[index], &calls[index], text.clone(), true);
        }
    }
    failure
}

/// Moves a call's state on with what its run produced; returns the failure of a fatal error.
fn apply(slot: &mut Slot, call: &ToolCall, ran: Ran) -> Option<Failure> {
    slot.state = match ran {
        Ran::Output(output) => CallState::Finished {
            result: Message::tool_result_parts(call.id.as_str(), output.into_parts(), false),
        },
        Ran::Recoverable(text) => CallState::Finished {
            result: Message::tool_result(call.id.as_str(), text, true),
        },
        Ran::TimedOut(limit) => CallState::Finished {
            result: Message::tool_result(call.id.as_str(), calls::timed_out(limit), true),
        },
        Ran::Task(task) => CallState::Task { task },
        Ran::Question { question, resumed } => CallState::Question {
            question,
            task: resumed,
        },
        Ran::Fatal(error) => {
            finish(slot, call, calls::FAILED.to_owned(), true);
            return Some(Failure::Fatal {
                tool: call.joined_name(),
                call_id: call.id.clone(),
                error,
            });
        }
    };
    None
}
