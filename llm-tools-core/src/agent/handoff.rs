//! Handoffs: a transfer tool per target, and which agent a chat was last handed to.

use std::collections::HashMap;

use super::Agent;
use crate::chat::Chat;
use crate::chat::nested::Caller;
use crate::{
    context::ToolContext,
    error::{Error, ToolError},
    future::BoxFuture,
    message::{Message, Role},
    output::{ToolOutcome, ToolOutput},
    spec::ToolSpec,
    tool::{RawArgs, Tool},
};

/// The prefix of every transfer tool's name.
const PREFIX: &str = "transfer_to_";

/// The tool that hands a chat from `owner` to `target`.
pub(crate) struct TransferTool {
    owner: Agent,
    target: Agent,
    spec: ToolSpec,
}

impl TransferTool {
    pub(crate) fn new(owner: &Agent, target: &Agent) -> Self {
        let mut description = format!(
            "Hands the conversation over to {}, who answers from here on",
            target.name()
        );
        if !target.description().is_empty() {
            description = format!("{description}: {}", target.description());
        }
        Self {
            owner: owner.clone(),
            target: target.clone(),
            spec: ToolSpec::new(format!("{PREFIX}{}", target.name()), description),
        }
    }
}

impl Tool for TransferTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call<'a>(&'a self, _args: RawArgs<'a>, _ctx: ToolContext) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let Some(caller) = Caller::current() else {
                return ToolOutcome::Error(ToolError::recoverable(
                    "a transfer works only inside a chat",
                ));
            };
            let target = self.target.clone();
            let from = self.owner.clone();
            caller.change(Box::new(move |chat: &mut Chat| {
                switch(chat, &target, Some(&from))
            }));
            ToolOutcome::Output(ToolOutput::text(format!(
                "Transferred to {}.",
                self.target.name()
            )))
        })
    }
}

/// Makes the chat `target`'s: its instructions, tools, options and provider; `from` gets a
/// transfer tool back.
pub(crate) fn switch(chat: &mut Chat, target: &Agent, from: Option<&Agent>) -> Result<(), Error> {
    target.apply(chat, from)?;
    chat.set_provider(target.provider());
    Ok(())
}

/// The names of the agents the transcript's successful transfers went to, in order.
fn targets(messages: &[Message]) -> Vec<String> {
    let mut names: HashMap<&str, &str> = HashMap::new();
    let mut out = Vec::new();
    for message in messages {
        if message.role == Role::Assistant {
            for call in &message.tool_calls {
                names.insert(call.id.as_str(), call.name.as_str());
            }
        } else if message.role == Role::Tool
            && !message.is_error
            && let Some(name) = message
                .tool_call_id
                .as_deref()
                .and_then(|id| names.get(id))
                .and_then(|name| name.strip_prefix(PREFIX))
        {
            out.push(name.to_owned());
        }
    }
    out
}

/// The agent a chat was last handed to.
pub(crate) fn last_target(messages: &[Message]) -> Option<String> {
    targets(messages).pop()
}

/// Every agent reachable from `root` by handoffs, by name (the first of a name wins).
fn reachable(root: &Agent) -> HashMap<String, Agent> {
    let mut found: HashMap<String, Agent> = HashMap::new();
    let mut todo = vec![root.clone()];
    while let Some(agent) = todo.pop() {
        if found.contains_key(agent.name()) {
            continue;
        }
        todo.extend(agent.handoffs().iter().cloned());
        found.insert(agent.name().to_owned(), agent);
    }
    found
}

/// The agent the transcript last handed to, and the one that handed to it, when the
/// transcript has transfers (to agents reachable from `root`).
pub(crate) fn active(root: &Agent, messages: &[Message]) -> Option<(Agent, Option<Agent>)> {
    let targets = targets(messages);
    if targets.is_empty() {
        return None;
    }
    let agents = reachable(root);
    let mut current = root.clone();
    let mut previous: Option<Agent> = None;
    for name in targets {
        let Some(next) = agents.get(&name) else {
            tracing::warn!(
                agent = name.as_str(),
                "a handoff in the transcript names an agent this one cannot reach"
            );
            continue;
        };
        previous = Some(std::mem::replace(&mut current, next.clone()));
    }
    Some((current, previous))
}
