//! An agent's chats: making them ([`Agent::chat`], [`Agent::chat_from_state`]) and configuring
//! a chat as the agent's ([`Agent::configure`]); and handoffs, which configure a chat as
//! another agent's: a transfer tool per target, and which agent a chat was last handed to
//! ([`ActiveAgent`], kept with the chat's state; a state written without it is read from its
//! transcript's transfers).

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::definition::Agent;
use crate::chat::nested::Caller;
use crate::chat::{ActiveAgent, Chat};
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
    /// schema, provider tools, parameters and transfer tools. A chat that was handed over is
    /// configured as the agent it was last handed to (with that agent's provider and its
    /// transfer tool back), as its state records it, however much of its history compaction
    /// summarised since; a state that does not record it (written by an earlier version) is read
    /// from the transfers in its transcript.
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
        match active(self, chat) {
            Some(active) => {
                switch(chat, &active.agent, active.from.as_ref(), active.call)?;
                if active.read_from_transcript {
                    // A handoff the state does not record yet (its turn ended before the
                    // switch was kept): the approvals given "always" were for the tools of
                    // the agent that handed over, as when the transfer runs.
                    chat.forget_remembered_approvals();
                }
                Ok(())
            }
            None => self.apply(chat, None),
        }
    }

    /// The name of the agent a chat was last handed to, when it was handed over: as its state
    /// records it, or the target of a later transfer in its transcript (in a state that does
    /// not record it, the last). A call in a namespace is no transfer; without the agents,
    /// this cannot tell whether the agent that made an unrecorded call offered that transfer
    /// ([`configure`](Self::configure) does).
    pub fn active_agent(chat: &Chat) -> Option<String> {
        let recorded = chat.state().agent.as_ref();
        let newer = newer_transfers(recorded, chat.messages());
        match newer.last() {
            Some(transfer) => Some(transfer.target.to_owned()),
            None => recorded.map(|r| r.name.clone()),
        }
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
            None if chat.messages().first().is_some_and(|m| {
                m.role == Role::System && !crate::chat::is_compaction_summary(m)
            }) =>
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

    fn call<'a>(&'a self, _args: RawArgs<'a>, ctx: ToolContext) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let Some(caller) = Caller::current() else {
                return ToolOutcome::Error(ToolError::recoverable(
                    "a transfer works only inside a chat",
                ));
            };
            let target = self.target.clone();
            let from = self.owner.clone();
            let call = ctx.call_id().to_owned();
            caller.change(Box::new(move |chat: &mut Chat| {
                switch(chat, &target, Some(&from), Some(call))?;
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
/// transfer tool back. The chat's state records both, with `call`, the transfer call that
/// handed over.
pub(crate) fn switch(
    chat: &mut Chat,
    target: &Agent,
    from: Option<&Agent>,
    call: Option<String>,
) -> Result<(), Error> {
    target.apply(chat, from)?;
    chat.set_provider(target.provider());
    chat.set_active_agent(ActiveAgent {
        name: target.name().to_owned(),
        from: from.map(|f| f.name().to_owned()),
        call,
    });
    Ok(())
}

/// A successful transfer in the transcript.
struct Transfer<'a> {
    /// The agent it went to.
    target: &'a str,
    /// The call's id.
    call: &'a str,
    /// The place of the answer that made the call (the transfers of one answer were all made
    /// by the agent that answered), and the call's place among the answer's calls.
    at: (usize, usize),
}

/// The transcript's successful calls of transfer tools, in order: calls without a namespace
/// whose name starts with `transfer_to_` (whether the agent that made one offered that
/// transfer is for [`active`] to tell).
fn transfers(messages: &[Message]) -> Vec<Transfer<'_>> {
    let mut calls: HashMap<&str, Transfer<'_>> = HashMap::new();
    let mut out = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        if message.role == Role::Assistant {
            for (position, call) in message.tool_calls.iter().enumerate() {
                if call.namespace.is_none()
                    && let Some(target) = call.name.strip_prefix(PREFIX)
                {
                    calls.insert(
                        call.id.as_str(),
                        Transfer {
                            target,
                            call: call.id.as_str(),
                            at: (index, position),
                        },
                    );
                }
            }
        } else if message.role == Role::Tool
            && !message.is_error
            && let Some(transfer) = message
                .tool_call_id
                .as_deref()
                .and_then(|id| calls.remove(id))
        {
            out.push(transfer);
        }
    }
    out
}

/// The transcript's transfers newer than `recorded`: those after its call; all of them when
/// its call is no longer in the transcript (compaction summarises the older messages, so a
/// transfer still there came after it) or when nothing is recorded; none when the record
/// names no call.
fn newer_transfers<'a>(
    recorded: Option<&ActiveAgent>,
    messages: &'a [Message],
) -> Vec<Transfer<'a>> {
    let mut transfers = transfers(messages);
    let Some(recorded) = recorded else {
        return transfers;
    };
    let Some(id) = recorded.call.as_deref() else {
        return Vec::new();
    };
    // The last call of that id (an id the model gave twice: the later is the newer).
    let recorded_at = messages.iter().enumerate().rev().find_map(|(index, m)| {
        (m.role == Role::Assistant)
            .then(|| m.tool_calls.iter().position(|c| c.id == id))
            .flatten()
            .map(|position| (index, position))
    });
    if let Some(recorded_at) = recorded_at {
        transfers.retain(|t| t.at > recorded_at);
    }
    transfers
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

/// The agent a chat is on after its handoffs.
struct Active {
    agent: Agent,
    /// The agent that handed over.
    from: Option<Agent>,
    /// The transfer call that handed over.
    call: Option<String>,
    /// Whether a transfer of the transcript, newer than what the state records, handed over.
    read_from_transcript: bool,
}

/// The agent `chat` was last handed to, and the one that handed it over, when it was handed
/// over (to an agent reachable from `root`): as its state records it, then as the transfers
/// of its transcript newer than the record tell (all of them from `root`, in a state that
/// records none), each handed over by the agent that made the answer with the transfer, as
/// when the transfer ran. A call named like a transfer that agent did not offer (another
/// tool of that name, in a namespace or not) hands nothing over.
fn active(root: &Agent, chat: &Chat) -> Option<Active> {
    let messages = chat.messages();
    let recorded = chat.state().agent.as_ref();
    if recorded.is_none() && !messages.iter().any(|m| m.has_tool_calls()) {
        return None;
    }
    let agents = reachable(root);
    let recorded = recorded.and_then(|r| match agents.get(&r.name) {
        Some(agent) => Some((r, agent)),
        None => {
            tracing::warn!(
                agent = r.name.as_str(),
                "the chat was handed to an agent this one cannot reach; its transcript is read instead"
            );
            None
        }
    });
    let transfers = newer_transfers(recorded.map(|(r, _)| r), messages);
    let compacted =
        chat.state().compacted_away > 0 || messages.iter().any(crate::chat::is_compaction_summary);
    let mut active = match recorded {
        Some((r, agent)) => Active {
            agent: agent.clone(),
            from: r.from.as_ref().and_then(|name| agents.get(name)).cloned(),
            call: r.call.clone(),
            read_from_transcript: false,
        },
        None if transfers.is_empty() => return None,
        None => Active {
            agent: root.clone(),
            from: None,
            call: None,
            read_from_transcript: false,
        },
    };
    // The agent that made the answer of the transfers being read, with that answer's place
    // and the agent that had handed over to it (which it could transfer back to).
    let mut answering: Option<(usize, Agent, Option<Agent>)> = None;
    let mut handed_over = false;
    for transfer in transfers {
        let Some(next) = agents.get(transfer.target) else {
            tracing::warn!(
                agent = transfer.target,
                "a handoff in the transcript names an agent this one cannot reach"
            );
            continue;
        };
        let (mut owner, owner_from) = match &answering {
            Some((answer, owner, from)) if *answer == transfer.at.0 => {
                (owner.clone(), from.clone())
            }
            _ => {
                let owner = (active.agent.clone(), active.from.clone());
                answering = Some((transfer.at.0, owner.0.clone(), owner.1.clone()));
                owner
            }
        };
        let offers = |agent: &Agent, from: Option<&Agent>| {
            agent.handoffs().iter().any(|h| h.name() == next.name())
                || from.is_some_and(|f| f.name() == next.name())
        };
        let mut offered = offers(&owner, owner_from.as_ref());
        if !offered && recorded.is_none() && !handed_over && compacted {
            // A state that records no handoff, whose earlier transfers compaction summarised:
            // the agent that made this one is not known (it need not be the root), and any
            // reachable agent offering it may have.
            // (The first by name, when several do: the same every time.)
            let maker = agents
                .values()
                .filter(|a| offers(a, None))
                .min_by(|a, b| a.name().cmp(b.name()));
            if let Some(agent) = maker {
                owner = agent.clone();
                offered = true;
                // The other transfers of the same answer were made by the same agent.
                answering = Some((transfer.at.0, owner.clone(), None));
            }
        }
        if !offered {
            tracing::warn!(
                agent = owner.name(),
                target = transfer.target,
                "a call in the transcript is named like a transfer its agent did not offer; it handed nothing over"
            );
            continue;
        }
        handed_over = true;
        active = Active {
            agent: next.clone(),
            from: Some(owner),
            call: Some(transfer.call.to_owned()),
            read_from_transcript: true,
        };
    }
    if recorded.is_none() && !handed_over {
        return None;
    }
    Some(active)
}
