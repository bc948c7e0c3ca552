//! What a turn ends with: an answer, or a pause that says what it waits for.

use crate::{
    message::{Message, ToolCall},
    question::Question,
    task::Task,
};

/// How `ask` and `complete` end: the model's answer, or a pause. A paused chat cannot be
/// mistaken for a finished one: there is no answer to read until the pause is settled.
///
/// ```
/// use llm_tools_core::chat::{Chat, Outcome};
/// use llm_tools_core::testing::ScriptedProvider;
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let mut chat = Chat::new(ScriptedProvider::new().then_text("Hello!"));
/// match chat.ask("Hi").await? {
///     Outcome::Done(answer) => assert_eq!(answer.text(), "Hello!"),
///     Outcome::Paused(pause) => println!("waiting on {} call(s)", pause.calls().len()),
///     _ => unreachable!(),
/// }
/// # Ok::<_, llm_tools_core::Error>(())
/// # }).unwrap();
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
#[must_use = "a paused chat has no answer yet; check the outcome"]
#[allow(clippy::large_enum_variant)] // one per turn; the answer is read far more than moved
pub enum Outcome {
    /// The model answered without asking for tools.
    Done(Message),
    /// Tool calls wait on tasks, questions or approvals; settle them and call `complete`.
    Paused(Pause),
    /// A durable chat is driven by another process, or one of its calls is claimed by one:
    /// nothing ran here. Try again after [`Busy::until`]. (A chat with changes made here that
    /// its store lacks, a decision say, gets an error instead: they are not stored yet.)
    Busy(Busy),
    /// A stop condition ([`StopWhen`](crate::chat::StopWhen)) ended the turn before the model
    /// answered; every call of the last round has its result. `complete` carries on.
    Stopped(crate::chat::stop::StopReason),
}

impl Outcome {
    /// The answer, if the turn is done.
    pub fn message(&self) -> Option<&Message> {
        match self {
            Outcome::Done(m) => Some(m),
            Outcome::Paused(_) | Outcome::Busy(_) | Outcome::Stopped(_) => None,
        }
    }

    /// The answer's text, if the turn is done.
    pub fn text(&self) -> Option<String> {
        self.message().map(Message::text)
    }

    /// The answer decoded as `T` (see [`Message::parsed`]), for a chat with structured output
    /// ([`Chat::with_output`](crate::Chat::with_output)). A turn that did not end with an
    /// answer is [`Error::NoAnswer`](crate::Error::NoAnswer).
    pub fn parsed<T: serde::de::DeserializeOwned>(&self) -> Result<T, crate::error::Error> {
        match self {
            Outcome::Done(m) => m.parsed(),
            Outcome::Paused(p) => Err(crate::error::Error::NoAnswer(format!(
                "the turn is paused on {} tool call(s); settle them and call `complete`",
                p.calls().len()
            ))),
            Outcome::Busy(_) => Err(crate::error::Error::NoAnswer(
                "another process holds the chat; try again later".to_owned(),
            )),
            Outcome::Stopped(reason) => Err(crate::error::Error::NoAnswer(format!(
                "the turn stopped before the model answered ({reason}); call `complete` to go on"
            ))),
        }
    }

    /// The pause, if the turn is paused.
    pub fn pause(&self) -> Option<&Pause> {
        match self {
            Outcome::Paused(p) => Some(p),
            Outcome::Done(_) | Outcome::Busy(_) | Outcome::Stopped(_) => None,
        }
    }

    /// Whether another process holds the chat (durable chats).
    pub fn is_busy(&self) -> bool {
        matches!(self, Outcome::Busy(_))
    }

    /// Why a stop condition ended the turn, if one did.
    pub fn stopped(&self) -> Option<&crate::chat::stop::StopReason> {
        match self {
            Outcome::Stopped(reason) => Some(reason),
            _ => None,
        }
    }

    /// Whether the turn is paused.
    pub fn is_paused(&self) -> bool {
        matches!(self, Outcome::Paused(_))
    }

    /// The answer, if the turn is done.
    pub fn into_message(self) -> Option<Message> {
        match self {
            Outcome::Done(m) => Some(m),
            Outcome::Paused(_) | Outcome::Busy(_) | Outcome::Stopped(_) => None,
        }
    }
}

/// Why a durable chat did not run: another process holds its run claim, or a claim on one of
/// its calls, until [`until`](Self::until).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Busy {
    call_id: Option<String>,
    /// When the claim ends, by this machine's clock.
    until_ms: u64,
}

/// A claim's end by the store's clock (`until_ms`, read when the store's clock said `now_ms`)
/// as a time of this machine's clock.
fn on_this_clock(until_ms: u64, now_ms: u64) -> u64 {
    crate::clock::now_ms().saturating_add(until_ms.saturating_sub(now_ms))
}

impl Busy {
    /// The run claim is held until `until_ms`, by the store's clock, which read `now_ms`.
    pub(crate) fn chat(until_ms: u64, now_ms: u64) -> Self {
        Self {
            call_id: None,
            until_ms: on_this_clock(until_ms, now_ms),
        }
    }

    /// A claim on `call_id` is held until `until_ms`, by the store's clock, which read
    /// `now_ms`.
    pub(crate) fn call(call_id: String, until_ms: u64, now_ms: u64) -> Self {
        Self {
            call_id: Some(call_id),
            until_ms: on_this_clock(until_ms, now_ms),
        }
    }

    /// The call claimed elsewhere, when the holder is running a call (`None`: another process
    /// drives the chat).
    pub fn call_id(&self) -> Option<&str> {
        self.call_id.as_deref()
    }

    /// When the claim ends, unless its holder renews it (by this machine's clock: a store
    /// that keeps its own clock, as PostgreSQL's, is read in it, and the time converted).
    pub fn until(&self) -> std::time::SystemTime {
        std::time::UNIX_EPOCH + std::time::Duration::from_millis(self.until_ms)
    }

    /// How long until the claim ends (zero when it has).
    pub fn remaining(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.until_ms.saturating_sub(crate::clock::now_ms()))
    }
}

/// What one [`Chat::step`](super::Chat::step) did.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
#[must_use = "a step may have paused the chat; check it"]
#[allow(clippy::large_enum_variant)] // one per step; the answer is read far more than moved
pub enum Step {
    /// The model asked for tools and they ran; the next step sends their results.
    Continue,
    /// The model answered without asking for tools (or had already): the turn is done.
    Done(Message),
    /// Tool calls wait on tasks, questions or approvals.
    Paused(Pause),
    /// A durable chat is held by another process; nothing ran.
    Busy(Busy),
    /// A hook stopped the turn; every call of the round has its result.
    Stopped(crate::chat::stop::StopReason),
}

/// The calls a paused chat waits on, in call order.
#[derive(Clone, Debug, PartialEq)]
pub struct Pause {
    pub(crate) calls: Vec<PausedCall>,
}

impl Pause {
    /// The paused calls.
    pub fn calls(&self) -> &[PausedCall] {
        &self.calls
    }

    /// The calls waiting for an approval.
    pub fn approvals(&self) -> impl Iterator<Item = &ToolCall> {
        self.calls
            .iter()
            .filter(|c| matches!(c.reason, PauseReason::Approval))
            .map(|c| &c.call)
    }

    /// The calls paused on a task, with their tasks.
    pub fn tasks(&self) -> impl Iterator<Item = (&ToolCall, &Task)> {
        self.calls.iter().filter_map(|c| match &c.reason {
            PauseReason::Task(t) => Some((&c.call, t)),
            _ => None,
        })
    }

    /// The calls waiting for an answer, with their questions.
    pub fn questions(&self) -> impl Iterator<Item = (&ToolCall, &Question)> {
        self.calls.iter().filter_map(|c| match &c.reason {
            PauseReason::Question(q) => Some((&c.call, q)),
            _ => None,
        })
    }
}

/// One paused call and what it waits for.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct PausedCall {
    /// The call.
    pub call: ToolCall,
    /// What it waits for.
    pub reason: PauseReason,
}

/// What a paused call waits for.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum PauseReason {
    /// An approval: `approve` or `deny`.
    Approval,
    /// The tool's task: `complete` calls `resume`.
    Task(Task),
    /// An answer to the tool's question: `answer` or `decline`, then `complete`.
    Question(Question),
}

/// A call paused on a task, from [`Chat::pending_tasks`](super::Chat::pending_tasks).
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct PendingTask<'a> {
    /// The call.
    pub call: &'a ToolCall,
    /// Its task.
    pub task: &'a Task,
}

/// A call paused on a question, from
/// [`Chat::pending_questions`](super::Chat::pending_questions).
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct PendingQuestion<'a> {
    /// The call.
    pub call: &'a ToolCall,
    /// Its question.
    pub question: &'a Question,
}
