//! The paused calls of a tree of sub-agents, listed with their paths and settled through the
//! chat at the top; and what a paused sub-agent call keeps in its task ([`Paused`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::chat::ChatState;
use crate::chat::{Chat, PauseReason};
use crate::testing::ScriptedProvider;
use crate::{
    error::Error,
    message::ToolCall,
    task::{Task, TaskStatus},
};

/// What joins the call ids of an [`AgentPause::id`]: the id of the top chat's call, then the
/// sub-agent's call, and so on.
pub const PATH_SEPARATOR: char = '/';

/// The key of a paused sub-agent call's [`Task`] data that holds the sub-agent's state.
pub const AGENT_TASK_KEY: &str = "sub_agent";

/// What a paused sub-agent call keeps in its task: the sub-agent's chat state and the
/// settlements given through the parent, applied when the call resumes.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Paused {
    pub(crate) agent: String,
    pub(crate) depth: usize,
    pub(crate) chat: ChatState,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) settle: Vec<Settlement>,
}

impl Paused {
    /// The sub-agent state in a task, when the task is a sub-agent's.
    pub(crate) fn of(task: &Task) -> Option<Result<Self, serde_json::Error>> {
        task.get(AGENT_TASK_KEY)
            .map(|value| serde_json::from_value(value.clone()))
    }

    pub(crate) fn store(&self, task: &mut Task) -> Result<(), serde_json::Error> {
        let value = serde_json::to_value(self)?;
        task.data_mut().insert(AGENT_TASK_KEY.to_owned(), value);
        Ok(())
    }
}

/// One paused call of a chat or of one of its sub-agents, from
/// [`AgentPauses::paused_calls`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct AgentPause {
    /// The id to settle it with ([`AgentPauses::approve_at`], …): the call ids from the top
    /// chat down, joined by [`PATH_SEPARATOR`] (just the call's id for the top chat's own).
    pub id: String,
    /// The tools from the top chat down: the sub-agent tools' names, then the paused call's
    /// tool (`["researcher", "delete_file"]`).
    pub path: Vec<String>,
    /// The paused call, as the (sub-)agent's model made it.
    pub call: ToolCall,
    /// What it waits for.
    pub reason: PauseReason,
    pub(crate) ids: Vec<String>,
}

impl AgentPause {
    /// The path for people: `researcher › delete_file`.
    pub fn path_string(&self) -> String {
        self.path.join(" › ")
    }

    /// How many sub-agents down the call is (0: the top chat's own call).
    pub fn depth(&self) -> usize {
        self.path.len().saturating_sub(1)
    }
}

/// A decision given through the parent for a call of a paused sub-agent, kept in the parent
/// call's task until it resumes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Settlement {
    /// The call ids from the sub-agent's chat down.
    pub(crate) path: Vec<String>,
    pub(crate) action: Action,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Action {
    Answer { values: Value },
    Decline,
    Approve,
    Deny { reason: String },
}

/// Pauses through a tree of sub-agents, for a [`Chat`] (import the trait to call them): the
/// paused calls of the chat and of every paused sub-agent below it, with their paths, and
/// the decisions that settle them. The sub-agent's call resumes it with the decisions at the
/// chat's next [`complete`](Chat::complete).
///
/// ```
/// use llm_tools_core::agent::{Agent, AgentPauses};
/// use llm_tools_core::testing::ScriptedProvider;
/// use llm_tools_core::tool;
/// use serde_json::json;
///
/// /// Deletes a file
/// #[tool(needs_approval)]
/// async fn delete_file(path: String) -> String { format!("deleted {path}") }
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let janitor = Agent::new("janitor", ScriptedProvider::new()
///     .then_call("delete_file", json!({"path": "/tmp/old.log"}))
///     .then_text("Deleted the old log."))
///     .with_tools(DeleteFile);
/// let lead = Agent::new("lead", ScriptedProvider::new()
///     .then_call("janitor", json!({"input": "Clean up /tmp"}))
///     .then_text("/tmp is clean."))
///     .with_tools(janitor.as_tool("janitor", "Cleans up folders"));
///
/// let mut chat = lead.chat()?;
/// assert!(chat.ask("Clean up /tmp").await?.is_paused());
/// let pauses = chat.paused_calls();
/// assert_eq!(pauses[0].path_string(), "janitor › delete_file");
/// chat.approve_at(&pauses[0].id)?;
/// assert_eq!(chat.complete().await?.text().as_deref(), Some("/tmp is clean."));
/// assert_eq!(chat.messages()[2].text(), "Deleted the old log.");
/// # Ok::<_, llm_tools_core::Error>(())
/// # }).unwrap();
/// ```
pub trait AgentPauses {
    /// Every paused call of the chat and of its paused sub-agents, depth first in call order;
    /// a sub-agent's call is listed by what it waits on, not as a task of its own. Calls
    /// already settled through [`approve_at`](Self::approve_at) and the like are left out.
    fn paused_calls(&self) -> Vec<AgentPause>;

    /// Answers a question (see [`Chat::answer`]) of the call with this [`AgentPause::id`].
    fn answer_at(&mut self, id: &str, values: Value) -> Result<(), Error>;

    /// Declines a question (see [`Chat::decline`]).
    fn decline_at(&mut self, id: &str) -> Result<(), Error>;

    /// Approves a call (see [`Chat::approve`]).
    fn approve_at(&mut self, id: &str) -> Result<(), Error>;

    /// Denies a call (see [`Chat::deny`]).
    fn deny_at(&mut self, id: &str, reason: &str) -> Result<(), Error>;
}

impl AgentPauses for Chat {
    fn paused_calls(&self) -> Vec<AgentPause> {
        list(self, &[], &[])
    }

    fn answer_at(&mut self, id: &str, values: Value) -> Result<(), Error> {
        settle(self, &split(id), Action::Answer { values })
    }

    fn decline_at(&mut self, id: &str) -> Result<(), Error> {
        settle(self, &split(id), Action::Decline)
    }

    fn approve_at(&mut self, id: &str) -> Result<(), Error> {
        settle(self, &split(id), Action::Approve)
    }

    fn deny_at(&mut self, id: &str, reason: &str) -> Result<(), Error> {
        settle(
            self,
            &split(id),
            Action::Deny {
                reason: reason.to_owned(),
            },
        )
    }
}

fn split(id: &str) -> Vec<String> {
    id.split(PATH_SEPARATOR).map(str::to_owned).collect()
}

/// A short name of what a call waits for.
pub(crate) fn reason_name(reason: &PauseReason) -> &'static str {
    match reason {
        PauseReason::Approval => "an approval",
        PauseReason::Question(_) => "an answer",
        PauseReason::Task(_) => "a task",
    }
}

/// A chat for reading a stored sub-agent state: it never sends a request.
fn inert(state: ChatState) -> Option<Chat> {
    match Chat::from_state(ScriptedProvider::new().without_recording(), state) {
        Ok(chat) => Some(chat),
        Err(e) => {
            tracing::warn!(error = %e, "a paused sub-agent's state does not load");
            None
        }
    }
}

/// The paused calls of `chat` and below, leaving out those `queued` (call-id paths relative to
/// `chat`) already settles.
pub(crate) fn list(chat: &Chat, ids: &[String], names: &[String]) -> Vec<AgentPause> {
    list_queued(chat, ids, names, &[])
}

fn list_queued(
    chat: &Chat,
    ids: &[String],
    names: &[String],
    queued: &[Vec<String>],
) -> Vec<AgentPause> {
    let Some(pause) = chat.pause() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for paused in pause.calls() {
        let call = &paused.call;
        let mut call_ids = ids.to_vec();
        call_ids.push(call.id.clone());
        let mut path = names.to_vec();
        path.push(call.joined_name());
        if let PauseReason::Task(task) = &paused.reason
            && let Some(Ok(sub)) = Paused::of(task)
        {
            let mut below: Vec<Vec<String>> = sub.settle.iter().map(|s| s.path.clone()).collect();
            below.extend(
                queued
                    .iter()
                    .filter(|q| q.len() > 1 && q[0] == call.id)
                    .map(|q| q[1..].to_vec()),
            );
            if let Some(child) = inert(sub.chat) {
                out.extend(list_queued(&child, &call_ids, &path, &below));
            }
            continue;
        }
        if queued.iter().any(|q| q.len() == 1 && q[0] == call.id) {
            continue;
        }
        out.push(AgentPause {
            id: call_ids.join(&PATH_SEPARATOR.to_string()),
            path,
            call: call.clone(),
            reason: paused.reason.clone(),
            ids: call_ids,
        });
    }
    out
}

/// Applies a settlement kept in a sub-agent's task, once the sub-agent's chat is back.
pub(crate) fn apply(chat: &mut Chat, settlement: &Settlement) -> Result<(), Error> {
    settle(chat, &settlement.path, settlement.action.clone())
}

fn settle(chat: &mut Chat, ids: &[String], action: Action) -> Result<(), Error> {
    let waiting_for = match action {
        Action::Answer { .. } | Action::Decline => "an answer",
        Action::Approve | Action::Deny { .. } => "an approval",
    };
    let (first, rest) = match ids {
        [] => {
            return Err(Error::NotWaiting {
                call_id: String::new(),
                waiting_for,
            });
        }
        [only] => {
            return match action {
                Action::Answer { values } => chat.answer(only, values).map(drop),
                Action::Decline => chat.decline(only).map(drop),
                Action::Approve => chat.approve(only).map(drop),
                Action::Deny { reason } => chat.deny(only, reason).map(drop),
            };
        }
        [first, rest @ ..] => (first, rest),
    };
    let joined = ids.join(&PATH_SEPARATOR.to_string());
    let not_waiting = || Error::NotWaiting {
        call_id: joined.clone(),
        waiting_for,
    };
    let leaves = list(chat, &[], &[]);
    let leaf = leaves
        .iter()
        .find(|l| l.ids == ids)
        .ok_or_else(not_waiting)?;
    let mut action = action;
    match (&leaf.reason, &mut action) {
        (PauseReason::Question(question), Action::Answer { values }) => {
            if let Value::Object(given) = values {
                question.fill_defaults(given);
                question
                    .check_answer(given)
                    .map_err(|message| Error::InvalidAnswer {
                        call_id: joined.clone(),
                        message,
                    })?;
            }
        }
        (PauseReason::Question(_), Action::Decline)
        | (PauseReason::Approval, Action::Approve | Action::Deny { .. }) => {}
        _ => return Err(not_waiting()),
    }
    let people_left = leaves
        .iter()
        .filter(|l| l.ids[0] == *first && l.ids != ids)
        .filter(|l| !matches!(&l.reason, PauseReason::Task(t) if !t.is_input_required()))
        .count();
    let task = chat.task_mut(first)?;
    let mut paused = match Paused::of(task) {
        Some(Ok(paused)) => paused,
        _ => return Err(not_waiting()),
    };
    paused.settle.push(Settlement {
        path: rest.to_vec(),
        action,
    });
    if people_left == 0 {
        // Nothing below waits on a person any more: a worker may resume the call.
        let message = format!("{} resumes", paused.agent);
        *task = task.clone().with_status(TaskStatus::Working, Some(message));
    }
    paused.store(task).map_err(|e| {
        Error::from(crate::error::ConfigError::InvalidOption {
            option: "sub-agent state",
            reason: format!("does not serialize: {e}"),
        })
    })?;
    // A person decided, down in a sub-agent: this chat's rounds in a row count afresh too.
    chat.person_decided();
    Ok(())
}
