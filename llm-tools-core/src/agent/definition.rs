//! The agent's definition: what an [`Agent`] is made of, its builder methods and accessors.

use std::sync::Arc;

use serde_json::Value;

use crate::chat::ToolOptions;
use crate::{
    error::Error,
    provider::Provider,
    provider_tools::ProviderTool,
    structured::OutputSchema,
    tool::{IntoTools, Tool, ToolSource},
};

/// How deep an agent may run as a sub-agent unless [`Agent::with_max_depth`] says otherwise.
pub const DEFAULT_MAX_DEPTH: usize = 3;

/// Where an agent's chats get their provider.
#[derive(Clone)]
pub(super) enum ProviderSource {
    Shared(Arc<dyn Provider>),
    Factory(Arc<dyn Fn() -> Arc<dyn Provider> + Send + Sync>),
}

#[derive(Clone)]
pub(super) struct Definition {
    pub(super) name: String,
    pub(super) description: String,
    pub(super) provider: ProviderSource,
    pub(super) instructions: Option<String>,
    pub(super) tools: Vec<Arc<dyn Tool>>,
    pub(super) sources: Vec<Arc<dyn ToolSource>>,
    pub(super) options: Option<ToolOptions>,
    pub(super) output: Option<OutputSchema>,
    pub(super) provider_tools: Vec<ProviderTool>,
    pub(super) params: Option<Value>,
    pub(super) handoffs: Vec<Agent>,
    pub(super) max_depth: usize,
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
    pub(super) inner: Arc<Definition>,
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
    /// with [`Chat::with_tool_source`](crate::chat::Chat::with_tool_source).
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

    /// Answers shaped as `T` (see [`Chat::with_output`](crate::chat::Chat::with_output)); as a sub-agent, its answer is the
    /// tool's result as JSON and the schema is the tool's output schema.
    pub fn with_output<T>(self) -> Result<Self, Error>
    where
        T: schemars::JsonSchema + serde::de::DeserializeOwned,
    {
        let schema = OutputSchema::of::<T>()?;
        Ok(self.with_output_schema(schema))
    }

    /// Answers shaped by `schema` (see [`Chat::with_output_schema`](crate::chat::Chat::with_output_schema)).
    #[must_use]
    pub fn with_output_schema(self, schema: OutputSchema) -> Self {
        self.edit(|d| d.output = Some(schema))
    }

    /// Offers a tool the provider runs itself (see [`Chat::with_provider_tool`](crate::chat::Chat::with_provider_tool)).
    #[must_use]
    pub fn with_provider_tool(self, tool: ProviderTool) -> Self {
        self.edit(|d| d.provider_tools.push(tool))
    }

    /// Raw JSON merged into every request body (see [`Chat::with_params`](crate::chat::Chat::with_params); must be an object,
    /// checked when a chat is made).
    #[must_use]
    pub fn with_params(self, params: Value) -> Self {
        self.edit(|d| d.params = Some(params))
    }

    /// The agents this one can hand the conversation to: its chats get a
    /// `transfer_to_<name>` tool per target (see [handoffs](crate::agent#handoffs)).
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
