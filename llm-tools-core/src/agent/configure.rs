//! An agent's chats: making them ([`Agent::chat`], [`Agent::chat_from_state`]) and configuring
//! a chat as the agent's ([`Agent::configure`]); and handoffs, which configure a chat as
//! another agent's: a transfer tool per target, and which agent a chat was last handed to.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::definition::Agent;
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

impl Agent {
    /// A new chat of this agent: its provider, configured by [`configure`](Self::configure).
    /// Fails when two of its tools share a name, a tool name no provider accepts, its tool
    /// options or parameters are invalid.
    pub fn chat(&self) -> Result<Chat, Error> {
        let mut chat = Chat::with_shared_provider(self.provider());
        self.configure(&mut chat)?;
        Ok(chat)
    }

    /// A chat of this agent carrying on from a saved state (see [`Chat::from_state`]).
    pub fn chat_from_state(&self, state: crate::chat::ChatState) -> Result<Chat, Error> {
        let mut chat = Chat::from_state(self.provider(), state)?;
        self.configure(&mut chat)?;
        Ok(chat)
    }

    /// Configures a chat made elsewhere (a worker's per-chat setup, a durable chat just
    /// loaded) as this agent's: instructions, tools and tool sources, tool options, output
    /// schema, provider tools, parameters and transfer tools. A chat whose transcript has
    /// handoffs is configured as the agent it was last handed to (with that agent's provider).
    ///
    /// A [`Worker`](crate::store::Worker)'s setup is one line:
    /// `.with_setup(move |_chat_id, chat| agent.configure(chat))`.
    ///
    /// ```
    /// use llm_tools_core::agent::Agent;
    /// use llm_tools_core::chat::Chat;
    /// use llm_tools_core::testing::ScriptedProvider;
    ///
    /// let support = Agent::new("support", ScriptedProvider::new()).with_instructions("Be kind.");
    /// // What a worker does with each chat it picks:
    /// let setup = move |_chat_id: &str, chat: &mut Chat| support.configure(chat);
    /// let mut chat = Chat::new(ScriptedProvider::new());
    /// setup("support-42", &mut chat)?;
    /// assert_eq!(chat.messages()[0].text(), "Be kind.");
    /// # Ok::<_, llm_tools_core::Error>(())
    /// ```
    pub fn configure(&self, chat: &mut Chat) -> Result<(), Error> {
        match active(self, chat.messages()) {
            Some((active, from)) => switch(chat, &active, from.as_ref()),
            None => self.apply(chat, None),
        }
    }

    /// The name of the agent a chat was last handed to, when its transcript has a handoff.
    pub fn active_agent(chat: &Chat) -> Option<String> {
        last_target(chat.messages())
    }

    /// Sets the chat up as this agent's; `from` is the agent that handed over (it gets a
    /// transfer tool back).
    fn apply(&self, chat: &mut Chat, from: Option<&Agent>) -> Result<(), Error> {
        let d = &self.inner;
        match &d.instructions {
            Some(instructions) => {
                chat.with_instructions(instructions.clone());
            }
            // An agent without instructions: none of another agent's stay.
            None if chat
                .messages()
                .first()
                .is_some_and(|m| m.role == Role::System) =>
            {
                chat.with_instructions("");
            }
            None => {}
        }
        let mut tools = d.tools.clone();
        for target in &d.handoffs {
            tools.push(Arc::new(TransferTool::new(self, target)));
        }
        if let Some(from) = from
            && from.name() != self.name()
            && !d.handoffs.iter().any(|h| h.name() == from.name())
        {
            tools.push(Arc::new(TransferTool::new(self, from)));
        }
        chat.replace_tools(tools)?;
        for source in &d.sources {
            chat.with_tool_source(Arc::clone(source))?;
        }
        chat.with_tool_options(d.options.clone().unwrap_or_default())?;
        match &d.output {
            Some(schema) => chat.with_output_schema(schema.clone()),
            None => chat.without_output(),
        };
        chat.clear_provider_tools();
        for tool in &d.provider_tools {
            chat.with_provider_tool(tool.clone());
        }
        chat.with_params(
            d.params
                .clone()
                .unwrap_or_else(|| Value::Object(Default::default())),
        )?;
        Ok(())
    }
}

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
                switch(chat, &target, Some(&from))?;
                // The approvals given "always" were for the tools of the agent handing over:
                // a tool of the same name here is another tool. Denials stay.
                chat.forget_remembered_approvals();
                Ok(())
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
