//! [`ChatState`]: everything a chat knows that is not code, serializable with serde.
//!
//! A chat is its transcript plus one explicit state machine over the tool calls of the latest
//! answer (the *round*):
//!
//! ```text
//! requested ─┬─> awaiting approval ─approve─> ready ─┐
//!            │          └──────deny──> denied ─────────┼─> finished ─> appended
//!            ├─> ready ──run──┬──────────────────────┘
//!            │                ├─> task ──complete: resume──┐
//!            │                └─> question ─answer/decline─> answered ─complete: run again─┘
//!            └─> finished (unknown tool, bad arguments, over the calls cap)
//! ```
//!
//! Results are appended to the transcript in call order, as soon as every earlier call of the
//! round has its result, so the transcript is always a valid conversation for every provider:
//! each call gets exactly one result, in call order, before the next request.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::options::ToolOptions;
use crate::{Answer, Message, Question, Task, Usage};

/// The version of the serialized form; a chat refuses state written by a newer version.
pub(crate) const STATE_VERSION: u32 = 1;

/// A chat's whole state: messages, tool options, request parameters, the round in progress
/// (paused calls with their tasks, questions, answers so far and approvals), remembered approval
/// decisions and the usage so far. Tools, the provider and callbacks are code and are not part
/// of it: restore a state with [`Chat::from_state`](super::Chat::from_state) and register the
/// same tools.
///
/// ```
/// use llm_tools_core::chat::{Chat, ChatState};
/// use llm_tools_core::testing::ScriptedProvider;
///
/// let mut chat = Chat::new(ScriptedProvider::new());
/// chat.with_instructions("Be brief.");
/// let json = serde_json::to_string(chat.state()).unwrap();
///
/// let state: ChatState = serde_json::from_str(&json).unwrap();
/// let restored = Chat::from_state(ScriptedProvider::new(), state).unwrap();
/// assert_eq!(restored.messages(), chat.messages());
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatState {
    pub(crate) version: u32,
    #[serde(default)]
    pub(crate) messages: Vec<Message>,
    #[serde(default)]
    pub(crate) options: ToolOptions,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) params: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) round: Option<Round>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) decisions: Vec<Remembered>,
    #[serde(default)]
    pub(crate) usage: Usage,
    /// The deferred tools the chat's own tool search loaded, by joined name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) found_tools: Vec<String>,
}

impl Default for ChatState {
    fn default() -> Self {
        Self {
            version: STATE_VERSION,
            messages: Vec::new(),
            options: ToolOptions::default(),
            params: None,
            round: None,
            decisions: Vec::new(),
            usage: Usage::default(),
            found_tools: Vec::new(),
        }
    }
}

impl ChatState {
    /// The transcript.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The tool options.
    pub fn options(&self) -> &ToolOptions {
        &self.options
    }

    /// The tokens used so far.
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// Whether tool calls of the latest answer still wait for their results.
    pub fn is_paused(&self) -> bool {
        self.round.is_some()
    }

    /// Checks what deserialization cannot: the version, and that the round in progress matches
    /// the transcript.
    pub(crate) fn check(&self) -> Result<(), crate::Error> {
        let invalid = |m: String| Err(crate::Error::InvalidConfig(m));
        if self.version > STATE_VERSION {
            return invalid(format!(
                "the chat state has version {}, newer than this library's {STATE_VERSION}",
                self.version
            ));
        }
        self.options.validate()?;
        if let Some(round) = &self.round {
            let Some(message) = self.messages.get(round.message) else {
                return invalid("the chat state's round points past its messages".into());
            };
            if message.tool_calls.len() != round.slots.len()
                || round.appended > round.slots.len()
                || self.messages.len() != round.message + 1 + round.appended
            {
                return invalid("the chat state's round does not match its messages".into());
            }
        }
        Ok(())
    }
}

/// The tool calls of the latest answer, while any of them has no result in the transcript.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Round {
    /// Position of the assistant message whose calls this round answers.
    pub(crate) message: usize,
    /// One slot per call, in call order.
    pub(crate) slots: Vec<Slot>,
    /// How many results are in the transcript: always a prefix of the calls.
    pub(crate) appended: usize,
}

/// One call of the round.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Slot {
    pub(crate) state: CallState,
    /// The answers to the questions the call asked, in the order it asked them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) answers: Vec<Answer>,
}

impl Slot {
    pub(crate) fn new(state: CallState) -> Self {
        Self {
            state,
            answers: Vec::new(),
        }
    }
}

/// Where one call stands.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub(crate) enum CallState {
    /// Runs at the next settle (its `on_tool_call` callbacks first).
    Ready,
    /// Paused until `approve` or `deny`.
    AwaitingApproval,
    /// Denied; its result is the denial, written at the next settle.
    Denied {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Paused on a task; the next settle calls `resume`.
    Task { task: Task },
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

impl CallState {
    pub(crate) fn has_result(&self) -> bool {
        matches!(self, CallState::Finished { .. } | CallState::Appended)
    }
}

/// An approval decision remembered for every later call of one tool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Remembered {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) namespace: Option<String>,
    pub(crate) name: String,
    pub(crate) approved: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reason: Option<String>,
}
