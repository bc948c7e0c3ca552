//! [`ChatState`]: everything a chat knows that is not code, serializable with serde.
//!
//! A chat is its transcript plus the ledger of the tool calls of the latest answer (the
//! *round*; see the `ledger` module for its states and transitions). Results are appended to
//! the transcript in call order, as soon as every earlier call of the round has its result, so
//! the transcript is always a valid conversation for every provider: each call gets exactly one
//! result, in call order, before the next request.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::ledger::Ledger;
use super::options::ToolOptions;
use crate::message::{Message, Usage};

/// The version of the serialized form; a chat refuses state written by a newer version.
/// Version 2 gave each call of the round its id, attempt and claim token (version 1 is read
/// too: the ids come from the transcript).
pub(crate) const STATE_VERSION: u32 = 2;

/// How many ids of calls compaction took out of the history a chat remembers (the newest),
/// so that a decision addressed by id late (`approve("x")`) never reaches a new call the model
/// gave the id of a call summarised away.
pub(crate) const MAX_RETIRED_CALL_IDS: usize = 10_000;

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
    pub(crate) round: Option<Ledger>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) decisions: Vec<Remembered>,
    #[serde(default)]
    pub(crate) usage: Usage,
    /// The deferred tools the chat's own tool search loaded, by joined name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) found_tools: Vec<String>,
    /// The structured output the answers must take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) output: Option<crate::structured::OutputSchema>,
    /// The tools the provider runs itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) provider_tools: Vec<crate::provider_tools::ProviderTool>,
    /// What the model last read of each file of the chat's file store, as a digest: the file
    /// tools change only a file read since it last changed.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub(crate) file_reads: std::collections::BTreeMap<String, String>,
    /// Why the last turn stopped before the model answered, until the next turn starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) stopped: Option<super::stop::StopReason>,
    /// The model's answers asking for tools in a row since the application last spoke (a
    /// message, a decision) or the round budget was last reported used: kept across turns, so
    /// turns no person starts (a worker resuming a task that finished) share one round budget.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) tool_rounds: usize,
    /// How many messages compaction has taken out of the history so far (a summary standing for
    /// several): with a message's place, its place in the whole history, which only grows, so a
    /// durable round's key is never an earlier round's.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub(crate) compacted_away: u64,
    /// The ids of the calls compaction took out of the history, the newest
    /// [`MAX_RETIRED_CALL_IDS`]: a new call is never given one of them (see
    /// `unique_call_ids`), as it is never given the id of a call the history still has.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) retired_call_ids: Vec<String>,
    /// The agent the chat was last handed to, and the one that handed it over
    /// ([`crate::agent`]): the transfer calls in the transcript may be summarised away.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) agent: Option<ActiveAgent>,
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

fn is_zero(n: &usize) -> bool {
    *n == 0
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
            output: None,
            provider_tools: Vec::new(),
            file_reads: std::collections::BTreeMap::new(),
            stopped: None,
            tool_rounds: 0,
            compacted_away: 0,
            retired_call_ids: Vec::new(),
            agent: None,
        }
    }
}

/// The agent a chat was last handed to, kept with its state: compaction may summarise the
/// transfer calls, this stays.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ActiveAgent {
    /// The agent's name.
    pub(crate) name: String,
    /// The agent that handed the chat over (the owner of the transfer tool the model called),
    /// which gets a transfer tool back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) from: Option<String>,
    /// The id of the transfer call that handed the chat over. A transfer later in the
    /// transcript is newer than this record (a durable chat's transcript is written with the
    /// round, this record with the commit after it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) call: Option<String>,
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
    /// the transcript; gives the calls of a version 1 round their ids.
    pub(crate) fn check(&mut self) -> Result<(), crate::error::Error> {
        let invalid =
            |reason: String| Err(crate::error::ConfigError::InconsistentState { reason }.into());
        if self.version > STATE_VERSION {
            return Err(crate::error::ConfigError::NewerState {
                found: self.version,
                supported: STATE_VERSION,
            }
            .into());
        }
        self.options.validate()?;
        if let Some(round) = &mut self.round {
            let Some(message) = self.messages.get(round.message) else {
                return invalid("round points past its messages".into());
            };
            if message.tool_calls.len() != round.calls.len()
                || round.appended > round.calls.len()
                || self.messages.len() != round.message + 1 + round.appended
            {
                return invalid("round does not match its messages".into());
            }
            for (entry, call) in round.calls.iter_mut().zip(&message.tool_calls) {
                if entry.id.is_empty() {
                    entry.id.clone_from(&call.id);
                } else if entry.id != call.id {
                    return invalid(format!(
                        "round has call `{}` where its message has `{}`",
                        entry.id, call.id
                    ));
                }
            }
        }
        self.version = STATE_VERSION;
        Ok(())
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
    /// An approval covers only arguments holding each of these fields with these values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) matching: Option<Value>,
    /// An approval covers only arguments the predicate registered under this name accepts
    /// (none, in a chat value where it is not registered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) predicate: Option<String>,
}
