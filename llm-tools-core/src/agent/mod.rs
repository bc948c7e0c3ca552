//! Agents: a reusable definition that makes chats ([`Agent`]), sub-agents that are tools
//! ([`Agent::as_tool`]), and handoffs between agents ([`Agent::with_handoffs`]).
//!
//! An [`Agent`] is declared once (a provider, instructions, tools, tool options, an output
//! schema, provider tools) and makes as many [`Chat`]s as the application needs:
//! [`Agent::chat`] in a web handler or a test, [`Agent::configure`] in a worker's per-chat
//! setup.
//!
//! ```
//! use llm_tools_core::agent::Agent;
//! use llm_tools_core::testing::ScriptedProvider;
//! use llm_tools_core::tool;
//!
//! /// Returns the current time
//! #[tool]
//! async fn current_time() -> String { "12:00".into() }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
//! let assistant = Agent::new("assistant", ScriptedProvider::new().then_text("It is noon."))
//!     .with_instructions("Answer in one sentence.")
//!     .with_tools(CurrentTime);
//! let mut chat = assistant.chat()?;
//! assert_eq!(chat.ask("What time is it?").await?.text().as_deref(), Some("It is noon."));
//! # Ok::<_, llm_tools_core::Error>(())
//! # }).unwrap();
//! ```
//!
//! # Sub-agents
//!
//! [`Agent::as_tool`] gives a tool whose call runs the agent in a chat of its own on the
//! model's input and returns its answer (its text, or its structured output as JSON). The
//! sub-agent's chat lives inside the call:
//!
//! - **Pauses go up, answers come down.** When the sub-agent pauses on a question, an approval
//!   or a task, the parent's call pauses on a [`Task`](crate::Task) that holds the sub-agent's
//!   whole state. [`AgentPauses::paused_calls`] lists every paused call of the tree with its
//!   path (`researcher › delete_file`); [`AgentPauses::approve_at`],
//!   [`answer_at`](AgentPauses::answer_at), … settle one through the parent, and the parent's
//!   `complete` resumes the sub-agent where it stopped. The parent's `cancel` cancels the
//!   sub-agent's own tasks.
//! - **Durable.** The sub-agent's state is the paused call's task data, part of the parent's
//!   [`ChatState`](crate::ChatState): a durable parent paused in one process resumes in another.
//! - **Streamed.** While the parent streams, the sub-agent's events come as
//!   [`ChatEvent::Agent`](crate::chat::ChatEvent::Agent) with the path of sub-agent tools; the
//!   tokens the sub-agent used are added to the parent's [`usage`](crate::Chat::usage).
//! - **Bounded.** An agent runs as a sub-agent at most [`Agent::with_max_depth`] levels deep
//!   (deeper calls get an error result); its own tool options bound its rounds. A fatal error
//!   of the sub-agent (its provider failed, one of its tools failed fatally) is the parent
//!   call's fatal error; a sub-agent that used its round budget is an error result the parent's
//!   model reads.
//!
//! # Handoffs
//!
//! [`Agent::with_handoffs`] gives the agent's chats a `transfer_to_<name>` tool per target.
//! When the model calls one, the chat takes the target's instructions, tools, options and
//! provider once the round's calls have run, for the rest of the turn and of the chat; the
//! target gets a `transfer_to_<name>` tool back to the agent that handed over, unless it
//! already hands off to it. The transfers are tool calls in the transcript, so a chat loaded
//! from its state is put back on the right agent by [`Agent::configure`].

mod handoff;
mod pauses;
mod subagent;

use std::sync::Arc;

use serde_json::Value;

use crate::chat::{Chat, ToolOptions};
use crate::{
    error::Error,
    provider::Provider,
    provider_tools::ProviderTool,
    structured::OutputSchema,
    tool::{IntoTools, Tool, ToolSource},
};

pub use pauses::{AgentPause, AgentPauses, PATH_SEPARATOR};
pub use subagent::{AGENT_TASK_KEY, AgentTool, DEFAULT_MAX_DEPTH};

/// Where an agent's chats get their provider.
#[derive(Clone)]
enum ProviderSource {
    Shared(Arc<dyn Provider>),
    Factory(Arc<dyn Fn() -> Arc<dyn Provider> + Send + Sync>),
}

#[derive(Clone)]
struct Definition {
    name: String,
    description: String,
    provider: ProviderSource,
    instructions: Option<String>,
    tools: Vec<Arc<dyn Tool>>,
    sources: Vec<Arc<dyn ToolSource>>,
    options: Option<ToolOptions>,
    output: Option<OutputSchema>,
    provider_tools: Vec<ProviderTool>,
    params: Option<Value>,
    handoffs: Vec<Agent>,
    max_depth: usize,
}

/// A reusable agent definition: a provider (or a factory of providers), instructions, tools
/// and tool sources (an MCP server's client, say), tool options, an output schema, provider
/// tools, request parameters and handoffs. It makes chats ([`chat`](Self::chat)), configures
/// chats made elsewhere ([`configure`](Self::configure), for a worker's setup or a loaded
/// durable chat) and becomes a tool ([`as_tool`](Self::as_tool)).
///
/// Cloning is cheap (the definition is shared); the builder methods change the clone they are
/// called on.
///
/// ```
/// use llm_tools_core::agent::Agent;
/// use llm_tools_core::chat::ToolOptions;
/// use llm_tools_core::testing::ScriptedProvider;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// # #[allow(dead_code)]
/// struct Verdict { spam: bool }
///
/// let classifier = Agent::new("classifier", ScriptedProvider::new())
///     .with_description("Tells spam from mail")
///     .with_instructions("Classify the message.")
///     .with_tool_options(ToolOptions::default().with_rounds(3))
///     .with_output::<Verdict>()?;
/// let chat = classifier.chat()?;
/// assert!(chat.output_schema().is_some());
/// assert_eq!(chat.tool_options().rounds(), 3);
/// # Ok::<_, llm_tools_core::Error>(())
/// ```
#[derive(Clone)]
pub struct Agent {
    inner: Arc<Definition>,
}

impl Agent {
    /// An agent named `name` (the name of its transfer tool, `transfer_to_<name>`, and of its
    /// path in a tree of sub-agents) on `provider`.
    pub fn new(name: impl Into<String>, provider: impl Provider) -> Self {
        Self::with_shared_provider(name, Arc::new(provider))
    }

    /// An agent on a provider shared with other chats and agents.
    pub fn with_shared_provider(name: impl Into<String>, provider: Arc<dyn Provider>) -> Self {
        Self::from_source(name.into(), ProviderSource::Shared(provider))
    }

    /// An agent whose every chat gets a provider from `factory` (a client per chat, say).
    pub fn with_provider_factory(
        name: impl Into<String>,
        factory: impl Fn() -> Arc<dyn Provider> + Send + Sync + 'static,
    ) -> Self {
        Self::from_source(name.into(), ProviderSource::Factory(Arc::new(factory)))
    }

    fn from_source(name: String, provider: ProviderSource) -> Self {
        Self {
            inner: Arc::new(Definition {
                description: String::new(),
                name,
                provider,
                instructions: None,
                tools: Vec::new(),
                sources: Vec::new(),
                options: None,
                output: None,
                provider_tools: Vec::new(),
                params: None,
                handoffs: Vec::new(),
                max_depth: DEFAULT_MAX_DEPTH,
            }),
        }
    }

    fn edit(mut self, f: impl FnOnce(&mut Definition)) -> Self {
        f(Arc::make_mut(&mut self.inner));
        self
    }

    /// What the agent does, in one sentence: the description of its transfer tool (and of its
    /// sub-agent tool when [`as_tool`](Self::as_tool) is given an empty one).
    #[must_use]
    pub fn with_description(self, description: impl Into<String>) -> Self {
        let description = description.into();
        self.edit(|d| d.description = description)
    }

    /// The instructions (the system message of its chats).
    #[must_use]
    pub fn with_instructions(self, instructions: impl Into<String>) -> Self {
        let instructions = instructions.into();
        self.edit(|d| d.instructions = Some(instructions))
    }

    /// Adds tools: anything a chat's `with_tools` takes (a tool, a `#[toolset]`, a sub-agent
    /// tool, a `Vec` or tuple of them). Two tools with one name are an error when a chat is
    /// made.
    #[must_use]
    pub fn with_tools(self, tools: impl IntoTools) -> Self {
        let mut new = Vec::new();
        tools.into_tools(&mut new);
        self.edit(|d| d.tools.extend(new))
    }

    /// Adds a source of tools that may change (an MCP server's client): each chat takes it
    /// with [`Chat::with_tool_source`].
    #[must_use]
    pub fn with_tool_source(self, source: impl ToolSource) -> Self {
        let source: Arc<dyn ToolSource> = Arc::new(source);
        self.edit(|d| d.sources.push(source))
    }

    /// The tool options of its chats (its round budget, concurrency, …).
    #[must_use]
    pub fn with_tool_options(self, options: ToolOptions) -> Self {
        self.edit(|d| d.options = Some(options))
    }

    /// Answers shaped as `T` (see [`Chat::with_output`]); as a sub-agent, its answer is the
    /// tool's result as JSON and the schema is the tool's output schema.
    pub fn with_output<T>(self) -> Result<Self, Error>
    where
        T: schemars::JsonSchema + serde::de::DeserializeOwned,
    {
        let schema = OutputSchema::of::<T>()?;
        Ok(self.with_output_schema(schema))
    }

    /// Answers shaped by `schema` (see [`Chat::with_output_schema`]).
    #[must_use]
    pub fn with_output_schema(self, schema: OutputSchema) -> Self {
        self.edit(|d| d.output = Some(schema))
    }

    /// Offers a tool the provider runs itself (see [`Chat::with_provider_tool`]).
    #[must_use]
    pub fn with_provider_tool(self, tool: ProviderTool) -> Self {
        self.edit(|d| d.provider_tools.push(tool))
    }

    /// Raw JSON merged into every request body (see [`Chat::with_params`]; must be an object,
    /// checked when a chat is made).
    #[must_use]
    pub fn with_params(self, params: Value) -> Self {
        self.edit(|d| d.params = Some(params))
    }

    /// The agents this one can hand the conversation to: its chats get a
    /// `transfer_to_<name>` tool per target (see [handoffs](self#handoffs)).
    ///
    /// ```
    /// use llm_tools_core::agent::Agent;
    /// use llm_tools_core::testing::ScriptedProvider;
    /// use serde_json::json;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let model = ScriptedProvider::new()
    ///     .then_call("transfer_to_billing", json!({}))
    ///     .then_text("Billing here: your invoice is paid.");
    /// let billing = Agent::new("billing", model.clone())
    ///     .with_description("Invoices and payments")
    ///     .with_instructions("You handle invoices.");
    /// let triage = Agent::new("triage", model.clone())
    ///     .with_instructions("Route the customer.")
    ///     .with_handoffs([billing]);
    ///
    /// let mut chat = triage.chat()?;
    /// let answer = chat.ask("Is my invoice paid?").await?;
    /// assert_eq!(answer.text().as_deref(), Some("Billing here: your invoice is paid."));
    /// assert_eq!(chat.messages()[0].text(), "You handle invoices.");
    /// assert_eq!(Agent::active_agent(&chat).as_deref(), Some("billing"));
    /// // The second request went out with billing's tools: the way back to triage.
    /// assert_eq!(model.requests()[1].tools, ["transfer_to_triage"]);
    /// # Ok::<_, llm_tools_core::Error>(())
    /// # }).unwrap();
    /// ```
    #[must_use]
    pub fn with_handoffs(self, agents: impl IntoIterator<Item = Agent>) -> Self {
        let agents: Vec<Agent> = agents.into_iter().collect();
        self.edit(|d| d.handoffs.extend(agents))
    }

    /// How deep this agent may run as a sub-agent: 1 lets a chat's call run it, 2 lets that
    /// agent's own sub-agent call it too, and so on ([`DEFAULT_MAX_DEPTH`] by default). A call
    /// deeper than this gets an error result and the agent does not run.
    #[must_use]
    pub fn with_max_depth(self, depth: usize) -> Self {
        self.edit(|d| d.max_depth = depth)
    }

    /// The agent's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// What the agent does.
    pub fn description(&self) -> &str {
        &self.inner.description
    }

    /// The instructions.
    pub fn instructions(&self) -> Option<&str> {
        self.inner.instructions.as_deref()
    }

    /// The agents it hands off to.
    pub fn handoffs(&self) -> &[Agent] {
        &self.inner.handoffs
    }

    /// How deep it may run as a sub-agent.
    pub fn max_depth(&self) -> usize {
        self.inner.max_depth
    }

    /// A provider for a new chat: the shared one, or a new one from the factory.
    pub fn provider(&self) -> Arc<dyn Provider> {
        match &self.inner.provider {
            ProviderSource::Shared(p) => Arc::clone(p),
            ProviderSource::Factory(f) => f(),
        }
    }

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
        match handoff::active(self, chat.messages()) {
            Some((active, from)) => handoff::switch(chat, &active, from.as_ref()),
            None => self.apply(chat, None),
        }
    }

    /// The name of the agent a chat was last handed to, when its transcript has a handoff.
    pub fn active_agent(chat: &Chat) -> Option<String> {
        handoff::last_target(chat.messages())
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
                .is_some_and(|m| m.role == crate::message::Role::System) =>
            {
                chat.with_instructions("");
            }
            None => {}
        }
        let mut tools = d.tools.clone();
        for target in &d.handoffs {
            tools.push(Arc::new(handoff::TransferTool::new(self, target)));
        }
        if let Some(from) = from
            && from.name() != self.name()
            && !d.handoffs.iter().any(|h| h.name() == from.name())
        {
            tools.push(Arc::new(handoff::TransferTool::new(self, from)));
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

    /// This agent as a tool named `name`: its call runs the agent on the model's `input` (a
    /// string) and returns its answer. An empty `description` takes the agent's.
    ///
    /// ```
    /// use llm_tools_core::agent::Agent;
    /// use llm_tools_core::testing::ScriptedProvider;
    /// use serde_json::json;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let researcher = Agent::new("researcher", ScriptedProvider::new().then_text("Ruby dates from 1995."))
    ///     .with_instructions("Research the topic; answer in one paragraph.");
    /// let model = ScriptedProvider::new()
    ///     .then_call("researcher", json!({"input": "When was Ruby made?"}))
    ///     .then_text("1995.");
    /// let mut chat = Agent::new("lead", model)
    ///     .with_tools(researcher.as_tool("researcher", "Researches a topic"))
    ///     .chat()?;
    /// assert_eq!(chat.ask("When was Ruby made?").await?.text().as_deref(), Some("1995."));
    /// assert_eq!(chat.messages()[2].text(), "Ruby dates from 1995.");
    /// # Ok::<_, llm_tools_core::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn as_tool(&self, name: impl Into<String>, description: impl Into<String>) -> AgentTool {
        AgentTool::text(self.clone(), name.into(), description.into())
    }

    /// This agent as a tool whose arguments are `A` (its JSON Schema is the tool's): the
    /// arguments, checked against `A`, are the sub-agent's message as JSON.
    pub fn as_tool_with<A>(
        &self,
        name: impl Into<String>,
        description: impl Into<String>,
    ) -> AgentTool
    where
        A: schemars::JsonSchema + serde::de::DeserializeOwned,
    {
        AgentTool::typed::<A>(self.clone(), name.into(), description.into())
    }
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let d = &self.inner;
        f.debug_struct("Agent")
            .field("name", &d.name)
            .field("instructions", &d.instructions)
            .field(
                "tools",
                &d.tools
                    .iter()
                    .map(|t| t.spec().joined_name())
                    .collect::<Vec<_>>(),
            )
            .field(
                "handoffs",
                &d.handoffs.iter().map(Agent::name).collect::<Vec<_>>(),
            )
            .field("max_depth", &d.max_depth)
            .finish_non_exhaustive()
    }
}
