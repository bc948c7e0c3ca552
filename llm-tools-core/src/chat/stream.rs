//! Streaming a turn: [`ChatEvent`]s while the loop runs, tools included.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures::Stream;

use super::outcome::{Busy, Outcome, Pause};
use crate::{
    context::ToolProgress,
    error::Error,
    future::BoxFuture,
    message::{Message, ToolCall},
    provider::{Response, StreamEvent},
};

/// One event of a streamed turn. The stream ends after [`Done`](ChatEvent::Done),
/// [`Paused`](ChatEvent::Paused), [`Busy`](ChatEvent::Busy), [`Stopped`](ChatEvent::Stopped)
/// or an error.
///
/// The model's own events come as they came from the provider, in
/// [`Model`](ChatEvent::Model): text and reasoning deltas, tool calls as they are built, token
/// counts, and [`StreamEvent::Completed`] with the model's whole answer once per request (a
/// turn makes one request per round: its answer, then the tools it asked for run, then the
/// next request). The chat's own events come around them: tool progress, tool results, a
/// sub-agent's events, and the last event.
///
/// The accessors keep the common case to one line:
///
/// ```
/// use futures::StreamExt;
/// use llm_tools_core::chat::Chat;
/// use llm_tools_core::testing::ScriptedProvider;
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let mut chat = Chat::new(ScriptedProvider::new().then_text("Hello there!"));
/// let mut text = String::new();
/// let mut events = chat.ask_stream("Hi");
/// while let Some(event) = events.next().await {
///     text.push_str(event?.text_delta().unwrap_or_default());
/// }
/// assert_eq!(text, "Hello there!");
/// # Ok::<_, llm_tools_core::Error>(())
/// # }).unwrap();
/// ```
///
/// A `match` takes the rest:
///
/// ```
/// use llm_tools_core::StreamEvent;
/// use llm_tools_core::chat::ChatEvent;
///
/// fn show(event: &ChatEvent) -> String {
///     match event {
///         ChatEvent::Model(StreamEvent::TextDelta(text)) => text.clone(),
///         ChatEvent::Model(StreamEvent::ToolCallStarted { name, .. }) => format!("[{name}("),
///         ChatEvent::Model(StreamEvent::ToolCallDelta { fragment, .. }) => fragment.clone(),
///         ChatEvent::Model(StreamEvent::ToolCallReady { .. }) => ")]".into(),
///         ChatEvent::ToolResult { result, .. } => format!(" → {}", result.text()),
///         ChatEvent::Agent { path, event } => format!("{}: {}", path.join(" › "), show(event)),
///         _ => String::new(),
///     }
/// }
/// assert_eq!(show(&ChatEvent::Model(StreamEvent::TextDelta("Hi".into()))), "Hi");
/// ```
///
/// Upgrading from the events that copied the provider's: `ChatEvent::TextDelta(t)` is
/// `ChatEvent::Model(StreamEvent::TextDelta(t))` (or [`text_delta`](Self::text_delta)), and so
/// for `ReasoningDelta`, `ToolCallStarted`, `ToolCallDelta`, `ToolCallReady` and `Usage`.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ChatEvent {
    /// An event of the model's answer, as the provider streamed it.
    ///
    /// [`StreamEvent::Completed`] comes once per request, after the answer's deltas and before
    /// the tools it asked for run: the provider's whole answer (its message with the tool calls,
    /// finish reason, usage and request id), as received, before the chat checks its calls.
    /// Only an answer that came with `Completed` enters the transcript: a stream that fails
    /// before it ends the turn with the error. The last request's `Completed` carries the
    /// answer [`Done`](ChatEvent::Done) repeats (the turn's answer as added to the transcript).
    Model(StreamEvent),
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
    Stopped(super::stop::StopReason),
    /// An event of a sub-agent this chat's call runs (see [`agent`](crate::agent)): `path`
    /// names the sub-agent tools from this chat down (`["researcher"]`, or
    /// `["researcher", "fact_checker"]` for the researcher's own sub-agent). The chat puts the
    /// whole path on one `Agent` event: `event` is the sub-agent's own event, never another
    /// `Agent`. [`innermost`](Self::innermost) gives both, for this chat's events as well.
    Agent {
        /// The sub-agent tools' names, outermost first.
        path: Vec<String>,
        /// The sub-agent's event.
        event: Box<ChatEvent>,
    },
}

impl ChatEvent {
    /// The model's event, when this is one of this chat's model (not a sub-agent's: see
    /// [`innermost`](Self::innermost)).
    ///
    /// ```
    /// use llm_tools_core::StreamEvent;
    /// use llm_tools_core::chat::ChatEvent;
    ///
    /// let event = ChatEvent::Model(StreamEvent::ToolCallReady { index: 0 });
    /// assert!(matches!(event.model(), Some(StreamEvent::ToolCallReady { index: 0 })));
    /// ```
    #[must_use]
    pub fn model(&self) -> Option<&StreamEvent> {
        match self {
            Self::Model(event) => Some(event),
            _ => None,
        }
    }

    /// The model's event, owned (see [`model`](Self::model)).
    #[must_use]
    pub fn into_model(self) -> Option<StreamEvent> {
        match self {
            Self::Model(event) => Some(event),
            _ => None,
        }
    }

    /// A piece of this chat's model's text ([`StreamEvent::TextDelta`]).
    ///
    /// ```
    /// use llm_tools_core::StreamEvent;
    /// use llm_tools_core::chat::ChatEvent;
    ///
    /// let event = ChatEvent::Model(StreamEvent::TextDelta("Hel".into()));
    /// assert_eq!(event.text_delta(), Some("Hel"));
    /// // A sub-agent's text is not this chat's:
    /// let nested = ChatEvent::Agent { path: vec!["researcher".into()], event: Box::new(event) };
    /// assert_eq!(nested.text_delta(), None);
    /// assert_eq!(nested.innermost().1.text_delta(), Some("Hel"));
    /// ```
    #[must_use]
    pub fn text_delta(&self) -> Option<&str> {
        match self {
            Self::Model(StreamEvent::TextDelta(text)) => Some(text),
            _ => None,
        }
    }

    /// A piece of this chat's model's visible reasoning ([`StreamEvent::ReasoningDelta`]).
    #[must_use]
    pub fn reasoning_delta(&self) -> Option<&str> {
        match self {
            Self::Model(StreamEvent::ReasoningDelta(text)) => Some(text),
            _ => None,
        }
    }

    /// The whole answer of one of this chat's requests ([`StreamEvent::Completed`]): once per
    /// round, before its tools run.
    ///
    /// ```
    /// use futures::StreamExt;
    /// use llm_tools_core::chat::Chat;
    /// use llm_tools_core::testing::ScriptedProvider;
    /// use llm_tools_core::tool;
    ///
    /// /// Returns the current time
    /// #[tool]
    /// async fn current_time() -> String { "12:00".into() }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let provider = ScriptedProvider::new()
    ///     .then_call("current_time", serde_json::json!({}))
    ///     .then_text("It is noon.");
    /// let mut chat = Chat::new(provider);
    /// chat.with_tools(CurrentTime)?;
    /// let mut answers = Vec::new();
    /// let mut events = chat.ask_stream("What time is it?");
    /// while let Some(event) = events.next().await {
    ///     if let Some(response) = event?.completed() {
    ///         answers.push(response.message.tool_calls.len());
    ///     }
    /// }
    /// assert_eq!(answers, [1, 0]); // the call, then the answer that reads its result
    /// # Ok::<_, llm_tools_core::Error>(())
    /// # }).unwrap();
    /// ```
    #[must_use]
    pub fn completed(&self) -> Option<&Response> {
        match self {
            Self::Model(StreamEvent::Completed(response)) => Some(response),
            _ => None,
        }
    }

    /// The event under its sub-agent path: `(path, event)` for an [`Agent`](Self::Agent)
    /// event, `([], self)` for this chat's own. One line then reads every level:
    ///
    /// ```
    /// use llm_tools_core::StreamEvent;
    /// use llm_tools_core::chat::ChatEvent;
    ///
    /// let nested = ChatEvent::Agent {
    ///     path: vec!["researcher".into(), "fact_checker".into()],
    ///     event: Box::new(ChatEvent::Model(StreamEvent::TextDelta("Checked.".into()))),
    /// };
    /// let (path, event) = nested.innermost();
    /// assert_eq!(path, ["researcher", "fact_checker"]);
    /// assert_eq!(event.text_delta(), Some("Checked."));
    ///
    /// let own = ChatEvent::Model(StreamEvent::TextDelta("Hi".into()));
    /// assert!(own.innermost().0.is_empty());
    /// ```
    ///
    /// The chat never puts an `Agent` event inside another; for one built that way, the event
    /// is the innermost and the path the innermost `Agent`'s ([`into_innermost`](
    /// Self::into_innermost) joins the paths).
    #[must_use]
    pub fn innermost(&self) -> (&[String], &ChatEvent) {
        let mut path: &[String] = &[];
        let mut event = self;
        while let Self::Agent {
            path: inner,
            event: next,
        } = event
        {
            path = inner;
            event = next;
        }
        (path, event)
    }

    /// The event under its whole sub-agent path, owned (see [`innermost`](Self::innermost)).
    #[must_use]
    pub fn into_innermost(self) -> (Vec<String>, ChatEvent) {
        let mut path = Vec::new();
        let mut event = self;
        loop {
            match event {
                Self::Agent {
                    path: inner,
                    event: next,
                } => {
                    path.extend(inner);
                    event = *next;
                }
                event => return (path, event),
            }
        }
    }
}

impl From<StreamEvent> for ChatEvent {
    fn from(event: StreamEvent) -> Self {
        Self::Model(event)
    }
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

/// How many reports of one call wait for the stream at most; past it, the newest one waiting
/// is replaced by the latest.
const QUEUED_PROGRESS_PER_CALL: usize = 16;

/// Queues a progress report. A tool reports while its call runs, and the stream takes events
/// only between polls of the turn, so a tool (or an MCP server behind it) reporting without
/// pause would grow the queue for as long as the call runs: once
/// [`QUEUED_PROGRESS_PER_CALL`] reports of a call wait, the newest of them is replaced rather
/// than joined. Every report still reaches the `on_tool_progress` callbacks.
pub(crate) fn emit_progress(sink: Option<&Sink>, progress: &ToolProgress) {
    let Some(sink) = sink else {
        return;
    };
    let mut queue = sink.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    // The whole queue, newest first, until enough reports of the call are found: the queue
    // holds at most that many reports of each running call besides other events.
    let mut newest = None;
    let mut waiting = 0;
    for (at, event) in queue.iter().enumerate().rev() {
        if let ChatEvent::ToolProgress(queued) = event
            && queued.call_id == progress.call_id
        {
            newest.get_or_insert(at);
            waiting += 1;
            if waiting == QUEUED_PROGRESS_PER_CALL {
                break;
            }
        }
    }
    match newest {
        Some(at) if waiting >= QUEUED_PROGRESS_PER_CALL => {
            if let Some(ChatEvent::ToolProgress(queued)) = queue.get_mut(at) {
                queued.clone_from(progress);
            }
        }
        _ => queue.push_back(ChatEvent::ToolProgress(progress.clone())),
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
    pub(crate) fn new(sink: Sink, run: BoxFuture<'a, Result<Outcome, Error>>) -> Self {
        Self {
            run: Some(run),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A call reporting without pause while the stream takes nothing keeps a bounded number
    /// of reports waiting, the latest last; each call its own.
    #[test]
    fn progress_reports_waiting_for_the_stream_are_bounded_per_call() {
        let sink = Sink::default();
        let report = |call: &str, done: f64| ToolProgress {
            call_id: call.to_owned(),
            tool: "t".to_owned(),
            progress: done,
            total: None,
            message: None,
        };
        emit(Some(&sink), || {
            ChatEvent::Model(StreamEvent::TextDelta("a".into()))
        });
        for i in 0..100_000 {
            emit_progress(Some(&sink), &report("c1", f64::from(i)));
            emit_progress(Some(&sink), &report("c2", f64::from(i)));
        }
        let queue = sink.lock().unwrap();
        assert_eq!(queue.len(), 1 + 2 * QUEUED_PROGRESS_PER_CALL);
        let of = |call: &str| -> Vec<f64> {
            queue
                .iter()
                .filter_map(|e| match e {
                    ChatEvent::ToolProgress(p) if p.call_id == call => Some(p.progress),
                    _ => None,
                })
                .collect()
        };
        let c1 = of("c1");
        assert_eq!(
            c1[..QUEUED_PROGRESS_PER_CALL - 1],
            (0..15).map(f64::from).collect::<Vec<_>>()[..]
        );
        assert_eq!(c1.last(), Some(&99_999.0));
    }

    #[test]
    fn the_model_events_do_not_grow_the_event() {
        // `Completed` is boxed, so the provider's events are far smaller than a tool result.
        assert!(size_of::<StreamEvent>() <= 88);
        assert!(size_of::<ChatEvent>() <= size_of::<ToolCall>() + size_of::<Message>() + 8);
    }

    #[test]
    fn innermost_reads_through_hand_nested_agent_events() {
        let leaf = ChatEvent::Model(StreamEvent::TextDelta("deep".into()));
        let nested = ChatEvent::Agent {
            path: vec!["a".into()],
            event: Box::new(ChatEvent::Agent {
                path: vec!["b".into(), "c".into()],
                event: Box::new(leaf.clone()),
            }),
        };
        let (path, event) = nested.innermost();
        assert_eq!(path, ["b", "c"]);
        assert_eq!(event, &leaf);
        assert_eq!(
            nested.into_innermost(),
            (vec!["a".into(), "b".into(), "c".into()], leaf)
        );
    }

    #[test]
    fn accessors_answer_only_for_their_own_kind() {
        let usage = ChatEvent::from(StreamEvent::Usage(crate::message::Usage::new(3, 4)));
        assert_eq!(usage.text_delta(), None);
        assert_eq!(usage.reasoning_delta(), None);
        assert!(usage.completed().is_none());
        assert!(matches!(usage.model(), Some(StreamEvent::Usage(u)) if u.output_tokens == 4));
        let thinking = ChatEvent::Model(StreamEvent::ReasoningDelta("hmm".into()));
        assert_eq!(thinking.reasoning_delta(), Some("hmm"));
        assert_eq!(thinking.text_delta(), None);
        let done = ChatEvent::Done(Message::assistant("ok"));
        assert!(done.model().is_none());
        assert!(done.clone().into_model().is_none());
        assert_eq!(done.innermost(), (&[][..], &done));
    }
}
