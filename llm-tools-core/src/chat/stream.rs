//! Streaming a turn: [`ChatEvent`]s while the loop runs, tools included.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures::Stream;

use super::outcome::{Busy, Outcome, Pause};
use crate::{BoxFuture, Error, Message, ToolCall, ToolProgress, Usage};

/// One event of a streamed turn. The stream ends after [`Done`](ChatEvent::Done),
/// [`Paused`](ChatEvent::Paused) or an error.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ChatEvent {
    /// A piece of the model's text.
    TextDelta(String),
    /// A piece of the model's visible reasoning.
    ReasoningDelta(String),
    /// The model started a tool call.
    ToolCallStarted {
        /// The call's position in the answer.
        index: usize,
        /// The call's id.
        id: String,
        /// The tool's own name.
        name: String,
        /// The tool's namespace.
        namespace: Option<String>,
    },
    /// A fragment of a tool call's JSON arguments.
    ToolCallDelta {
        /// The call's position in the answer.
        index: usize,
        /// The fragment.
        fragment: String,
    },
    /// A tool call's arguments are complete.
    ToolCallReady {
        /// The call's position in the answer.
        index: usize,
    },
    /// Tokens used by the request in flight.
    Usage(Usage),
    /// A running call reported how far it has got (an MCP server's progress notification, or
    /// [`ToolContext::report_progress`](crate::ToolContext::report_progress)).
    ToolProgress(ToolProgress),
    /// A call's result was added to the transcript.
    ToolResult {
        /// The call.
        call: ToolCall,
        /// Its result message.
        result: Message,
    },
    /// The turn paused: tool calls wait on tasks, questions or approvals.
    Paused(Pause),
    /// A durable chat is held by another process; nothing ran (the last event).
    Busy(Busy),
    /// The turn is done: the model's answer.
    Done(Message),
    /// A stop condition ended the turn before the model answered (the last event).
    Stopped(super::StopReason),
    /// An event of a sub-agent this chat's call runs (see [`agent`](crate::agent)): `path`
    /// names the sub-agent tools from this chat down (`["researcher"]`, or
    /// `["researcher", "fact_checker"]` for the researcher's own sub-agent).
    Agent {
        /// The sub-agent tools' names, outermost first.
        path: Vec<String>,
        /// The sub-agent's event.
        event: Box<ChatEvent>,
    },
}

/// Where the loop puts events while a stream consumes them. The loop only runs while the stream
/// polls it, so no waker is needed: the stream drains the queue after each poll.
pub(crate) type Sink = Arc<Mutex<VecDeque<ChatEvent>>>;

pub(crate) fn emit(sink: Option<&Sink>, event: impl FnOnce() -> ChatEvent) {
    if let Some(sink) = sink {
        sink.lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push_back(event());
    }
}

/// The events of a streamed turn, from [`Chat::ask_stream`](super::Chat::ask_stream) or
/// [`Chat::complete_stream`](super::Chat::complete_stream). The loop runs as the stream is
/// polled: tools run between the model's answers exactly as with `ask`.
#[must_use = "a stream does nothing unless polled"]
pub struct ChatStream<'a> {
    run: Option<BoxFuture<'a, Result<Outcome, Error>>>,
    sink: Sink,
    error: Option<Error>,
}

impl<'a> ChatStream<'a> {
    pub(crate) fn new(
        sink: Sink,
        run: impl Future<Output = Result<Outcome, Error>> + Send + 'a,
    ) -> Self {
        Self {
            run: Some(Box::pin(run)),
            sink,
            error: None,
        }
    }

    fn pop(&self) -> Option<ChatEvent> {
        self.sink
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .pop_front()
    }
}

impl Stream for ChatStream<'_> {
    type Item = Result<ChatEvent, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if let Some(event) = self.pop() {
            return Poll::Ready(Some(Ok(event)));
        }
        let Some(run) = self.run.as_mut() else {
            return Poll::Ready(self.error.take().map(Err));
        };
        match run.as_mut().poll(cx) {
            Poll::Pending => match self.pop() {
                Some(event) => Poll::Ready(Some(Ok(event))),
                None => Poll::Pending,
            },
            Poll::Ready(result) => {
                self.run = None;
                let last = match result {
                    Ok(Outcome::Done(message)) => Ok(ChatEvent::Done(message)),
                    Ok(Outcome::Paused(pause)) => Ok(ChatEvent::Paused(pause)),
                    Ok(Outcome::Busy(busy)) => Ok(ChatEvent::Busy(busy)),
                    Ok(Outcome::Stopped(reason)) => Ok(ChatEvent::Stopped(reason)),
                    Err(e) => Err(e),
                };
                match last {
                    Ok(event) => emit(Some(&self.sink), || event),
                    Err(e) => self.error = Some(e),
                }
                match self.pop() {
                    Some(event) => Poll::Ready(Some(Ok(event))),
                    None => Poll::Ready(self.error.take().map(Err)),
                }
            }
        }
    }
}

impl std::fmt::Debug for ChatStream<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatStream")
            .field("running", &self.run.is_some())
            .finish_non_exhaustive()
    }
}
