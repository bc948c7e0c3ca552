//! The conversation loop: [`Chat`].
//!
//! A chat holds a provider, tools and a transcript. [`Chat::ask`] sends the user's message and
//! runs the loop: the model answers; if it asks for tools, the chat runs them (in parallel by
//! default, results in call order) and sends their results back; when the model answers without
//! asking for tools, `ask` returns [`Outcome::Done`] with that answer.
//!
//! ```
//! use llm_tools_core::{tool, ToolError};
//! use llm_tools_core::chat::Chat;
//! use llm_tools_core::testing::ScriptedProvider;
//! use serde_json::json;
//!
//! /// Gets current weather for a location
//! #[tool]
//! async fn weather(latitude: f64, longitude: f64) -> Result<String, ToolError> {
//!     Ok(format!("15°C and 10 km/h wind at {latitude}, {longitude}"))
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
//! // A scripted provider stands in for a model: it asks for the tool, then answers.
//! let model = ScriptedProvider::new()
//!     .then_call("weather", json!({"latitude": 52.52, "longitude": 13.40}))
//!     .then_text("It's 15°C in Berlin.");
//!
//! let mut chat = Chat::new(model);
//! chat.with_tools(Weather)?;
//! let outcome = chat.ask("What's the weather in Berlin?").await?;
//! assert_eq!(outcome.text().as_deref(), Some("It's 15°C in Berlin."));
//! // user, assistant (tool call), tool result, assistant
//! assert_eq!(chat.messages().len(), 4);
//! # Ok::<_, llm_tools_core::Error>(())
//! # }).unwrap();
//! ```
//!
//! Everything else builds on one state machine over the calls of the latest answer (see
//! [`ChatState`]): a call can pause on a [`Task`](crate::Task) the tool returned, on a question
//! it asked through [`ToolContext::ask`](crate::ToolContext::ask), or on an approval it needs.
//! While any call is paused, `ask` and `complete` return [`Outcome::Paused`] without a new
//! request; [`answer`](Chat::answer), [`decline`](Chat::decline), [`approve`](Chat::approve) and
//! [`deny`](Chat::deny) settle calls, and [`complete`](Chat::complete) carries on.
//!
//! # Hooks and approvals
//!
//! [`on_tool_call_async`](Chat::on_tool_call_async) is the primary form of a call hook: a hook
//! that asks a policy service, a database or a person must await. The sync
//! [`on_tool_call`](Chat::on_tool_call) stays as a thin adapter onto the same chain (one chain,
//! registration order, each hook seeing the arguments the one before left), called in place with
//! no future and no allocation; with no hooks set, the loop skips the hook phase entirely, so a
//! chat pays only for the hooks it has. A hook lets the call run, vetoes it with a reason the
//! model reads, rewrites its arguments or stops the turn ([`ToolCallAction`]);
//! [`on_tool_result_async`](Chat::on_tool_result_async) keeps, rewrites or stops after a result
//! ([`ToolResultAction`]). Hooks run inside the call's claim (in a durable chat the claim is
//! written first and a rewrite is written with the call before the tool starts), each bounded
//! by [`with_hook_timeout`](Chat::with_hook_timeout): a call hook that panics or hangs vetoes
//! its call, a result hook that does withholds the result and stops the turn
//! ([`StopReason::Hook`]), never bringing the chat down.
//!
//! An approval covers the arguments approved: when they change (a hook's rewrite), the call
//! waits for approval again unless a remembered rule or the
//! [resolver](Chat::with_approval_resolver) covers the new ones.
//! [`approve_with`](Chat::approve_with) approves edited arguments checked against the tool's
//! schema; [`approve_always`](Chat::approve_always) covers the tool by namespace and name,
//! [`approve_always_matching`](Chat::approve_always_matching) only arguments with given field
//! values (stored with the chat), [`approve_always_if`](Chat::approve_always_if) only arguments
//! a named predicate accepts (a closure is not stored: where it is not registered again with
//! [`with_approval_predicate`](Chat::with_approval_predicate), the rule covers nothing and calls
//! wait for a person).
//!
//! # Budgets
//!
//! A turn is bounded however the model behaves. The round budget
//! ([`ToolOptions::with_rounds`], [`DEFAULT_ROUNDS`]) bounds the answers asking for tools in a
//! row, the calls cap ([`ToolOptions::with_calls`], [`DEFAULT_MAX_CALLS`]) the calls of one
//! answer that run, and the request budget of a turn
//! ([`ToolOptions::with_max_requests_per_turn`], [`DEFAULT_MAX_REQUESTS_PER_TURN`]: 256) the
//! model requests one `ask`, `complete` or run of `step`s sends, counting those of every
//! sub-agent below it at any depth ([`agent`](crate::agent)), which each get a round budget of
//! their own. Each request is taken from the budget (and from every budget above) as it is
//! sent, before it goes, so no request past it is sent however many sub-agents send at once,
//! and every request sent counts, answered or not. At it the turn stops instead of its next
//! request with
//! [`Outcome::Stopped`]`(`[`StopReason::Requests`]`)`, as a [`StopWhen::requests`] budget stops
//! it: every call has its result, nothing is lost, and `complete` carries on with a fresh
//! budget. A chat's own [`StopWhen::requests`] replaces the default; its token and cost budgets
//! ([`StopWhen`]) apply beside it; `with_max_requests_per_turn(None)` lifts it.
//!
//! The tool results of a chat hold at most 16 MiB of inline attachments
//! ([`ToolOptions::with_max_chat_attachment_bytes`], [`DEFAULT_MAX_CHAT_ATTACHMENT_BYTES`]):
//! every request sends them all again, so a tool or an MCP server returning images without end
//! would make each request larger until the provider refuses them. An attachment past the limit
//! is left out of its result, whose text names it and the limit.
//!
//! # Long results
//!
//! A tool that returns a lot (a search with hundreds of hits) would send all of it to the model,
//! and all of it would stay in every later request. In a chat with a file store
//! ([`Chat::with_file_store`]), a result longer than the spill limit (10,000 characters,
//! [`ToolOptions::with_spill_after`]; per tool `#[tool(spill_to_file = 20_000)]`, or `false`
//! for a tool that pages its results itself) is kept whole as a file: the model gets its first
//! [`SPILL_PREVIEW`] characters, its length and the file's name, and reads or searches the rest
//! with the file tools [`READ_FILE_NAME`] and [`SEARCH_FILE_NAME`] ([`LIST_FILES_NAME`] lists
//! the files), which a chat with a file store offers.
//!
//! ```
//! use llm_tools_core::{tool, Role};
//! use llm_tools_core::chat::{Chat, ToolOptions};
//! use llm_tools_core::files::MemoryFileStore;
//! use llm_tools_core::testing::ScriptedProvider;
//! use serde_json::json;
//!
//! /// Lists every order
//! #[tool]
//! async fn all_orders() -> String {
//!     (1..=500).map(|n| format!("order {n}: shipped\n")).collect()
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
//! let model = ScriptedProvider::new()
//!     .then_call("all_orders", json!({}))
//!     .then_call("search_file", json!({"name": "tool-results/all_orders-call_1.txt", "text": "order 250:"}))
//!     .then_text("Order 250 has shipped.");
//! let mut chat = Chat::new(model);
//! chat.with_file_store(MemoryFileStore::new())
//!     .with_tools(AllOrders)?
//!     .with_tool_options(ToolOptions::default().with_spill_after(1_000))?;
//! let answer = chat.ask("Has order 250 shipped?").await?;
//! assert_eq!(answer.text().as_deref(), Some("Order 250 has shipped."));
//! let results: Vec<String> = chat.messages().iter()
//!     .filter(|m| m.role == Role::Tool).map(|m| m.text()).collect();
//! assert!(results[0].starts_with("order 1: shipped\n"));
//! assert!(results[0].contains("this result has 9392 characters; the first 1000 are above"));
//! assert_eq!(results[1], "line 250: order 250: shipped");
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! # Chat files
//!
//! Besides reading, the model can change the chat's files: [`WRITE_FILE_NAME`] creates a file or
//! replaces a whole one, [`EDIT_FILE_NAME`] replaces an exact text that occurs once (or every
//! occurrence, with `replace_all`). The model changes only what it has seen: the chat remembers
//! a digest of each file as the model last read it with [`READ_FILE_NAME`] (or wrote it), and
//! refuses to replace or edit a file the model has not read, or one that changed since, telling
//! it to read the file again. Creating a new file needs no read. The memory is part of the
//! chat's state ([`ChatState`], and a durable chat's store). The two tools run one at a time
//! (sequential), so two edits in one answer apply in order. [`Chat::with_file_editing`]`(false)`
//! offers only the tools that list, read and search.
//!
//! ```
//! use llm_tools_core::chat::Chat;
//! use llm_tools_core::files::{FileStore, MemoryFileStore};
//! use llm_tools_core::testing::ScriptedProvider;
//! use llm_tools_core::Role;
//! use serde_json::json;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
//! let store = MemoryFileStore::new();
//! store.save("notes.md", b"Ship on Friday.".to_vec()).await?;
//! let edit = json!({"name": "notes.md", "old_text": "Friday", "new_text": "Monday"});
//! let model = ScriptedProvider::new()
//!     .then_call("edit_file", edit.clone())                  // refused: not read yet
//!     .then_call("read_file", json!({"name": "notes.md"}))
//!     .then_call("edit_file", edit)
//!     .then_text("Moved to Monday.");
//! let mut chat = Chat::new(model);
//! chat.with_file_store(store.clone());
//! let answer = chat.ask("Move the release to Monday").await?;
//! assert_eq!(answer.text().as_deref(), Some("Moved to Monday."));
//! let results: Vec<String> = chat.messages().iter()
//!     .filter(|m| m.role == Role::Tool).map(|m| m.text()).collect();
//! assert!(results[0].contains("has not been read in this chat"));
//! assert_eq!(results[2], "Edited `notes.md`: replaced 1 occurrence.");
//! assert_eq!(store.load("notes.md").await?, b"Ship on Monday.");
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! # Deferred tools and tool search
//!
//! A tool marked `#[tool(defer)]` is not offered up front. With a provider that has its own
//! tool search ([`Provider::native_tool_search`]: Anthropic, and OpenAI Responses on the
//! models that have `tool_search`), the chat offers every tool and the provider sends the deferred ones for its
//! server to search. With any other provider, the chat searches itself: deferred tools stay out
//! of the requests and the model gets a [`TOOL_SEARCH_NAME`] tool; a search loads up to
//! [`MAX_FOUND`] matching tools, which the chat offers from then on (they are part of its saved
//! state). A deferred tool forced with `ToolChoice::Tool` is always offered.
//!
//! ```
//! use llm_tools_core::tool;
//! use llm_tools_core::chat::{Chat, TOOL_SEARCH_NAME};
//! use llm_tools_core::testing::ScriptedProvider;
//! use serde_json::json;
//!
//! /// Gets the weather forecast for a city
//! #[tool(defer)]
//! async fn forecast(city: String) -> String {
//!     format!("sunny in {city}")
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
//! let model = ScriptedProvider::new()
//!     .then_call(TOOL_SEARCH_NAME, json!({"query": "weather forecast"}))
//!     .then_call("forecast", json!({"city": "Berlin"}))
//!     .then_text("Sunny.");
//! let mut chat = Chat::new(model.clone());
//! chat.with_tools(Forecast)?;
//! let answer = chat.ask("Weather in Berlin?").await?;
//! assert_eq!(answer.text().as_deref(), Some("Sunny."));
//! let offered: Vec<Vec<String>> = model.requests().into_iter().map(|r| r.tools).collect();
//! assert_eq!(offered[0], ["tool_search"]);
//! assert_eq!(offered[1], ["forecast"]); // found, and nothing is left to search
//! # Ok::<_, llm_tools_core::Error>(())
//! # }).unwrap();
//! ```

mod approvals;
mod attachment_room;
mod callbacks;
mod calls;
mod cancel;
mod compaction;
mod driver;
pub(crate) mod durable;
pub(crate) mod file_reads;
pub(crate) mod file_tools;
mod hooks;
mod journal;
mod ledger;
pub(crate) mod nested;
mod options;
mod outcome;
mod prepare;
mod registry;
mod retries;
mod round;
mod search;
mod sources;
mod spill;
mod state;
mod stop;
mod stream;

use std::future::Future;
use std::sync::Arc;

use serde_json::Value;

pub use cancel::CancelHandle;
pub(crate) use compaction::is_summary as is_compaction_summary;
pub use compaction::{
    Compaction, DEFAULT_KEEP_RECENT, DEFAULT_MAX_SUMMARY_CHARS, DEFAULT_RESULT_PREVIEW,
    SUMMARY_PREFIX,
};
pub use file_tools::{
    EDIT_FILE_NAME, LIST_FILES_NAME, MAX_LISTED, MAX_MATCHES, MAX_READ, READ_FILE_NAME,
    SEARCH_FILE_NAME, WRITE_FILE_NAME,
};
pub use hooks::{Decision, ToolCallAction, ToolResultAction};

/// The longest id of a tool call a model's answer may give, in bytes: 256 (the providers' own
/// are a few dozen). A longer one is replaced by one of the chat's own (`call_{answer}_{call}`),
/// as an empty one is: a call's id is kept in the history, in every stored call and result,
/// and (once compaction took the call out) among the ids the chat never gives again.
///
/// ```
/// use llm_tools_core::chat::{Chat, MAX_CALL_ID_BYTES};
/// use llm_tools_core::testing::ScriptedProvider;
/// use llm_tools_core::{ToolCall, tool};
///
/// /// Does nothing
/// #[tool]
/// async fn noop() -> String { "done".into() }
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let long = "x".repeat(MAX_CALL_ID_BYTES + 1);
/// let model = ScriptedProvider::new()
///     .then_tool_calls(vec![ToolCall::new(long, "noop", "{}")])
///     .then_text("Done.");
/// let mut chat = Chat::new(model);
/// chat.with_tools(Noop)?;
/// assert_eq!(chat.ask("Go").await?.text().as_deref(), Some("Done."));
/// assert_eq!(chat.messages()[1].tool_calls[0].id, "call_1_0");
/// assert_eq!(chat.messages()[2].tool_call_id.as_deref(), Some("call_1_0"));
/// # Ok::<_, llm_tools_core::Error>(())
/// # }).unwrap();
/// ```
pub const MAX_CALL_ID_BYTES: usize = 256;

/// How many calls of one answer past the calls cap ([`ToolOptions::with_calls`],
/// [`DEFAULT_MAX_CALLS`]) a chat keeps, each with the error result telling the model to make
/// it again: 1,024. Every kept call and its result stay in the history and go with every later
/// request, so an answer of 100,000 calls would make a history many times its size; an answer
/// with more is refused whole, as a malformed answer ([`ProviderErrorKind::Decode`]), and
/// nothing of it is kept (the turn fails as on any provider error). Without a calls cap
/// (`with_calls(None)`) every call runs, and none is refused.
///
/// [`ProviderErrorKind::Decode`]: crate::ProviderErrorKind::Decode
pub const MAX_CALLS_PAST_CAP: usize = 1_024;
pub use options::{
    Concurrency, DEFAULT_MAX_CALLS, DEFAULT_MAX_CHAT_ATTACHMENT_BYTES,
    DEFAULT_MAX_REQUESTS_PER_TURN, DEFAULT_MAX_RETRIES, DEFAULT_MAX_RUN_TIME, DEFAULT_ROUNDS,
    DEFAULT_SPILL_AFTER, DEFAULT_WORKERS, RetriesExhausted, ToolOptions,
};
pub use outcome::{
    Busy, Outcome, Pause, PauseReason, PausedCall, PendingQuestion, PendingTask, Step,
};
pub use prepare::RequestPlan;
pub use search::{MAX_FOUND, TOOL_SEARCH_NAME};
pub use spill::SPILL_PREVIEW;
pub(crate) use state::ActiveAgent;
pub use state::ChatState;
pub use stop::{Prices, RoundSummary, StopReason, StopWhen};
pub use stream::{ChatEvent, ChatStream};

use crate::files::FileStore;
use callbacks::Callbacks;
use ledger::{CallState, Entry};
use registry::Registry;
use sources::Sources;

use crate::{
    error::Error,
    future::BoxFuture,
    message::{Message, Role, ToolCall, Usage},
    provider::{Provider, Request, ToolChoice},
    question::Answer,
    tool::{IntoTools, Tool},
};

/// A conversation with a model that can call tools.
///
/// `Chat` is `Send`; its tools live behind `Arc<dyn Tool>`, so many chats share them without
/// copying schemas, and tools can be added or removed between turns. Configuration methods take
/// `&mut self` and return `&mut Self` (or a `Result` of it) so they chain:
///
/// ```
/// use llm_tools_core::tool;
/// use llm_tools_core::chat::{Chat, Concurrency, ToolOptions};
/// use llm_tools_core::testing::ScriptedProvider;
///
/// /// Returns the current time
/// #[tool]
/// async fn current_time() -> String { "12:00".into() }
///
/// let mut chat = Chat::new(ScriptedProvider::new());
/// chat.with_instructions("Answer in one sentence.")
///     .with_tools(CurrentTime)?
///     .with_tool_options(ToolOptions::default().with_concurrency(Concurrency::Sequential))?;
/// assert_eq!(chat.tools().len(), 1);
///
/// // The same tool twice is an error naming both, never a silent overwrite.
/// assert!(chat.with_tools(CurrentTime).is_err());
/// # Ok::<_, llm_tools_core::Error>(())
/// ```
pub struct Chat {
    provider: Arc<dyn Provider>,
    registry: Registry,
    /// Where some of the tools come from, when they may change between requests.
    sources: Sources,
    callbacks: Callbacks,
    state: ChatState,
    cancel: CancelHandle,
    files: Option<Arc<dyn FileStore>>,
    /// Whether the model may change the files (`write_file`, `edit_file`).
    file_editing: bool,
    /// What the model read of the files, shared with the file tools' calls during a settle.
    file_reads: file_reads::FileReads,
    /// The holder base of this chat value: unique per durable chat value. Each turn's holder
    /// id is `holder#n` ([`turn_holder`](Self::turn_holder)).
    holder: Arc<str>,
    /// The holder id of the claims the current (or last) turn takes: a new one every turn, so
    /// two turns never pass for one, in one process or many.
    turn_holder: Arc<str>,
    /// The store a durable chat writes to.
    durable: Option<Box<durable::binding::Binding>>,
    /// The durable chat's turn, step and commit, set with `durable` (see [`DurableEntry`]).
    durable_entry: Option<&'static DurableEntry>,
    /// The current turn's failed calls in a row, per tool.
    retries: retries::TurnRetries,
    /// The stop conditions, in registration order.
    stops: Vec<StopWhen>,
    /// The hook that prepares each request.
    prepare: Option<prepare::PrepareFn>,
    /// The current turn's requests and starting usage.
    turn: prepare::Turn,
    /// When and how the history is compacted.
    compaction: Option<Compaction>,
    /// What the loop runs before each request of a chat with `compaction`, set with it
    /// (`with_compaction`): reached through this pointer, never by name, so a program that
    /// compacts no chat links none of the compaction code, and the request's future holds
    /// none of its state.
    compact_before_request: Option<CompactFn>,
}

/// A compaction the loop runs before a request; returns whether anything changed.
pub(crate) type CompactFn = for<'a> fn(&'a mut Chat) -> BoxFuture<'a, Result<bool, Error>>;

/// The durable chat's entry points: its turn (`ask`, `complete`), its step and its commit. The
/// loop reaches them through the pointers binding a chat to a store puts in place, never by
/// name: a program that binds no chat to a store links none of the durable code (the commits,
/// the run claim and its heartbeat, the file tools a reload brings back), and the loop's
/// futures hold none of its state, only a box while a commit runs.
pub(crate) struct DurableEntry {
    /// One `ask`/`complete` inside the run claim.
    pub(crate) turn: DurableTurnFn,
    /// One `step` inside the run claim.
    pub(crate) step: DurableStepFn,
    /// A commit point of the loop: what changed since the last commit, written under the run
    /// claim.
    pub(crate) commit: DurableCommitFn,
}

/// [`DurableEntry::turn`].
pub(crate) type DurableTurnFn = for<'a> fn(
    &'a mut Chat,
    Option<Message>,
    Option<&'a stream::Sink>,
) -> BoxFuture<'a, Result<Outcome, Error>>;
/// [`DurableEntry::step`].
pub(crate) type DurableStepFn =
    for<'a> fn(&'a mut Chat, Option<&'a stream::Sink>) -> BoxFuture<'a, Result<Step, Error>>;
/// [`DurableEntry::commit`].
pub(crate) type DurableCommitFn = for<'a> fn(
    &'a mut durable::binding::Binding,
    &'a mut ChatState,
) -> BoxFuture<'a, Result<(), Error>>;

/// The claim holder of every chat without a store: its claims live only in its memory.
fn local_holder() -> Arc<str> {
    static LOCAL: std::sync::LazyLock<Arc<str>> = std::sync::LazyLock::new(|| "local".into());
    Arc::clone(&LOCAL)
}

impl Chat {
    /// Records the agent the chat was handed to ([`crate::agent`]), kept with its state.
    pub(crate) fn set_active_agent(&mut self, agent: ActiveAgent) {
        self.state.agent = Some(agent);
    }
}

impl Chat {
    /// A chat with no tools and an empty transcript.
    pub fn new(provider: impl Provider) -> Self {
        Self::with_shared_provider(Arc::new(provider))
    }

    /// A chat on a provider shared with other chats.
    pub fn with_shared_provider(provider: Arc<dyn Provider>) -> Self {
        Self {
            provider,
            registry: Registry::default(),
            sources: Sources::default(),
            callbacks: Callbacks::default(),
            state: ChatState::default(),
            cancel: CancelHandle::default(),
            files: None,
            file_editing: true,
            file_reads: file_reads::FileReads::default(),
            holder: local_holder(),
            turn_holder: local_holder(),
            durable: None,
            durable_entry: None,
            retries: retries::TurnRetries::default(),
            stops: Vec::new(),
            prepare: None,
            turn: prepare::Turn::default(),
            compaction: None,
            compact_before_request: None,
        }
    }

    /// A chat carrying on from a saved [`ChatState`] (register the same tools before
    /// `complete`). Fails when the state is from a newer version of this library or does not
    /// hold together.
    pub fn from_state(provider: impl Provider, mut state: ChatState) -> Result<Self, Error> {
        state.check()?;
        let mut chat = Self::new(provider);
        chat.state = state;
        Ok(chat)
    }

    /// The chat's whole state, to save it (it is `Serialize`).
    pub fn state(&self) -> &ChatState {
        &self.state
    }

    /// The chat's state, by value.
    pub fn into_state(self) -> ChatState {
        self.state
    }

    /// The provider.
    pub fn provider(&self) -> &Arc<dyn Provider> {
        &self.provider
    }

    // ----- configuration -----

    /// Sets the instructions (the system message at the start of the transcript), replacing
    /// earlier ones.
    pub fn with_instructions(&mut self, instructions: impl Into<String>) -> &mut Self {
        let message = Message::system(instructions);
        match self.state.messages.first_mut() {
            // A summary compaction put first (a chat without instructions) stays.
            Some(first) if first.role == Role::System && !compaction::is_summary(first) => {
                *first = message;
            }
            _ => {
                self.state.messages.insert(0, message);
                if let Some(round) = &mut self.state.round {
                    round.message += 1;
                    if let Some(key) = &mut round.key {
                        *key = key.saturating_add(1);
                    }
                    // Stored rounds are keyed by their message: this one is stored anew.
                    for entry in &mut round.calls {
                        entry.dirty = true;
                        entry.stored_token = None;
                    }
                }
            }
        }
        self.message_changed(0);
        self
    }

    /// Adds tools: one tool, an `Arc` of one, or a `Vec`, array or tuple of them. A tool whose
    /// joined name is already taken is an [`Error::DuplicateTool`] naming both (nothing is
    /// added); a tool whose name no provider accepts is an [`Error::InvalidConfig`].
    pub fn with_tools(&mut self, tools: impl IntoTools) -> Result<&mut Self, Error> {
        let mut new = Vec::new();
        tools.into_tools(&mut new);
        self.registry.add(new)?;
        Ok(self)
    }

    /// Adds the tools of a [`ToolSource`](crate::ToolSource) (an MCP server's, say) and keeps
    /// them current: before every request the chat refreshes the source and, when its list
    /// changed, replaces the tools it registered from it. Checked as
    /// [`with_tools`](Self::with_tools) (all or nothing); a later list that does not fit is
    /// logged and the previous tools stay.
    pub fn with_tool_source(
        &mut self,
        source: impl crate::tool::ToolSource,
    ) -> Result<&mut Self, Error> {
        self.sources.add(&mut self.registry, Arc::new(source))?;
        Ok(self)
    }

    /// The tool source the chat holds under this name ([`ToolSource::source_name`](crate::tool::ToolSource::source_name); an MCP
    /// client's is the server's name), if any.
    pub fn tool_source(&self, name: &str) -> Option<&dyn crate::tool::ToolSource> {
        self.sources.find(name).map(|source| &**source)
    }

    /// Lets go of the tool source of this name and removes the tools the chat registered from
    /// it; returns the source. The transcript is unchanged.
    pub fn remove_tool_source(&mut self, name: &str) -> Option<Arc<dyn crate::tool::ToolSource>> {
        self.sources.remove(&mut self.registry, name)
    }

    /// Replaces every tool with these (all or nothing, as [`with_tools`](Self::with_tools));
    /// the chat lets go of its tool sources.
    pub fn replace_tools(&mut self, tools: impl IntoTools) -> Result<&mut Self, Error> {
        let mut new = Vec::new();
        tools.into_tools(&mut new);
        let mut registry = Registry::default();
        registry.add(new)?;
        if self.files.is_some() {
            registry.set_extras(file_tools::file_tools(self.file_editing));
        }
        self.registry = registry;
        self.sources.clear();
        Ok(self)
    }

    /// Removes every tool and tool source; the tool options stay.
    pub fn clear_tools(&mut self) -> &mut Self {
        self.registry.clear();
        self.sources.clear();
        self
    }

    /// Removes the tool with this joined name and returns it.
    pub fn remove_tool(&mut self, joined_name: &str) -> Option<Arc<dyn Tool>> {
        self.registry.remove(joined_name)
    }

    /// The tools, in the order they were added.
    pub fn tools(&self) -> &[Arc<dyn Tool>] {
        self.registry.tools()
    }

    /// The tool with this joined name (`crm_customer_lookup`).
    pub fn tool(&self, joined_name: &str) -> Option<&Arc<dyn Tool>> {
        self.registry.get(joined_name)
    }

    /// Sets the tool options. A choice naming a tool the chat does not have is an error (add
    /// the tools first); so are zero budgets.
    pub fn with_tool_options(&mut self, options: ToolOptions) -> Result<&mut Self, Error> {
        options.validate()?;
        self.check_choice(options.choice())?;
        self.state.options = options;
        Ok(self)
    }

    /// The tool options.
    pub fn tool_options(&self) -> &ToolOptions {
        &self.state.options
    }

    /// Attaches a file store, which every call reaches through
    /// [`ToolContext::files`](crate::ToolContext::files): [`MemoryFileStore`](crate::files::MemoryFileStore),
    /// [`FolderFileStore`](crate::files::FolderFileStore) or your own [`FileStore`]. Like the
    /// tools, it is not part of the saved [`ChatState`]: attach it again to a restored chat.
    ///
    /// With a store, results longer than the spill limit ([`ToolOptions::with_spill_after`],
    /// or the tool's `spill_to_file`) are kept as files and the model gets their start and the
    /// file's name, and the model is offered the file tools [`LIST_FILES_NAME`],
    /// [`READ_FILE_NAME`] and [`SEARCH_FILE_NAME`] to read or search them (see
    /// [long results](self#long-results)), and [`WRITE_FILE_NAME`] and [`EDIT_FILE_NAME`] to
    /// change them, unless [`with_file_editing(false)`](Self::with_file_editing) (see
    /// [chat files](self#chat-files)).
    pub fn with_file_store(&mut self, store: impl FileStore) -> &mut Self {
        self.with_shared_file_store(Arc::new(store))
    }

    /// Attaches a file store shared with other chats or with the application.
    pub fn with_shared_file_store(&mut self, store: Arc<dyn FileStore>) -> &mut Self {
        self.files = Some(store);
        self.registry
            .set_extras(file_tools::file_tools(self.file_editing));
        self
    }

    /// Whether the model may create, replace and edit the chat's files with
    /// [`WRITE_FILE_NAME`] and [`EDIT_FILE_NAME`] (on by default). Off, a chat with a file store
    /// offers only the tools that list, read and search.
    pub fn with_file_editing(&mut self, editing: bool) -> &mut Self {
        self.file_editing = editing;
        if self.files.is_some() {
            self.registry.set_extras(file_tools::file_tools(editing));
        }
        self
    }

    /// The file store, if one is attached.
    pub fn file_store(&self) -> Option<&Arc<dyn FileStore>> {
        self.files.as_ref()
    }

    /// Raw JSON merged into every request body (`{"temperature": 0.2}`, say); must be an
    /// object, and replaces earlier parameters. The HTTP providers merge it with what they
    /// write: a key they do not write is added; where both have an object, the two merge key
    /// by key, the params winning (`{"generationConfig": {"temperature": 0}}` keeps Gemini's
    /// structured-output fields beside it); the top-level `tools` array is extended with the
    /// params' entries (a provider tool the library has no type for); any other value is the
    /// params'.
    pub fn with_params(&mut self, params: Value) -> Result<&mut Self, Error> {
        match params {
            Value::Object(map) => {
                self.state.params = (!map.is_empty()).then_some(map);
                Ok(self)
            }
            other => Err(crate::error::ConfigError::InvalidOption {
                option: "with_params",
                reason: format!("takes a JSON object, not `{other}`"),
            }
            .into()),
        }
    }

    /// Asks for answers shaped as `T`: its JSON Schema goes with every request in the
    /// provider's form (see [`structured`](crate::structured)), and
    /// [`Outcome::parsed`] / [`Message::parsed`] decode the answer. Tools stay available; the
    /// turn ends when the model answers with the object. `T`'s schema must be an object.
    ///
    /// ```
    /// use llm_tools_core::chat::Chat;
    /// use llm_tools_core::testing::ScriptedProvider;
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Verdict { spam: bool, reason: String }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let mut chat = Chat::new(ScriptedProvider::new()
    ///     .then_text(r#"{"spam": true, "reason": "asks for a wire transfer"}"#)
    ///     .then_text("It asks you to wire money to a stranger."));
    /// chat.with_output::<Verdict>()?;
    /// let verdict: Verdict = chat.ask("Is this spam? …").await?.parsed()?;
    /// assert!(verdict.spam && verdict.reason.contains("wire"));
    ///
    /// // Back to prose for the rest of the conversation.
    /// chat.without_output();
    /// let why = chat.ask("Explain it to me").await?;
    /// assert_eq!(why.text().as_deref(), Some("It asks you to wire money to a stranger."));
    /// # Ok::<_, llm_tools_core::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn with_output<T>(&mut self) -> Result<&mut Self, Error>
    where
        T: schemars::JsonSchema + serde::de::DeserializeOwned,
    {
        self.state.output = Some(crate::structured::OutputSchema::of::<T>()?);
        Ok(self)
    }

    /// Asks for answers shaped by `schema`: a literal JSON Schema, or one made with
    /// [`OutputSchema::of`](crate::OutputSchema::of) and configured (strictness, retries).
    /// Replaces an earlier output schema.
    pub fn with_output_schema(&mut self, schema: crate::structured::OutputSchema) -> &mut Self {
        self.state.output = Some(schema);
        self
    }

    /// Back to free-form answers from the next request on.
    pub fn without_output(&mut self) -> &mut Self {
        self.state.output = None;
        self
    }

    /// The structured output the answers must take, if any.
    pub fn output_schema(&self) -> Option<&crate::structured::OutputSchema> {
        self.state.output.as_ref()
    }

    /// Offers a tool the provider runs itself (web search, code execution, …) beside the
    /// function tools, from the next request on (see [`provider_tools`](crate::provider_tools)).
    /// A provider that has no such tool refuses the request with an error naming it.
    pub fn with_provider_tool(&mut self, tool: crate::provider_tools::ProviderTool) -> &mut Self {
        self.state.provider_tools.push(tool);
        self
    }

    /// The provider tools offered.
    pub fn provider_tools(&self) -> &[crate::provider_tools::ProviderTool] {
        &self.state.provider_tools
    }

    /// Stops offering provider tools.
    pub fn clear_provider_tools(&mut self) -> &mut Self {
        self.state.provider_tools.clear();
        self
    }

    fn check_choice(&self, choice: &ToolChoice) -> Result<(), Error> {
        match choice {
            ToolChoice::Tool(name) if !self.registry.contains(name) => {
                let mut names: Vec<&str> = self
                    .registry
                    .tools()
                    .iter()
                    .map(|t| t.spec().joined_name())
                    .collect();
                names.sort_unstable();
                Err(crate::error::ConfigError::UnknownToolChoice {
                    name: name.clone(),
                    tools: names.into_iter().map(str::to_owned).collect(),
                }
                .into())
            }
            _ => Ok(()),
        }
    }

    // ----- callbacks -----

    /// Runs `f` before each request, with the request as sent.
    pub fn before_request(
        &mut self,
        f: impl Fn(&Request<'_>) + Send + Sync + 'static,
    ) -> &mut Self {
        self.callbacks.before_request.push(Arc::new(f));
        self
    }

    /// Runs `f` after each message is added to the transcript (the user's, the model's answers
    /// and every tool result).
    pub fn after_message(&mut self, f: impl Fn(&Message) + Send + Sync + 'static) -> &mut Self {
        self.callbacks.after_message.push(Arc::new(f));
        self
    }

    /// Runs `f` on each call right before it runs: it may let it run, veto it (the model gets
    /// the reason as an error result) or rewrite its arguments.
    ///
    /// ```
    /// use llm_tools_core::chat::{Chat, ToolCallAction};
    /// use llm_tools_core::testing::ScriptedProvider;
    ///
    /// let mut chat = Chat::new(ScriptedProvider::new());
    /// chat.on_tool_call(|call| {
    ///     if call.name == "delete_everything" {
    ///         ToolCallAction::Veto("Deleting everything is not allowed here.".into())
    ///     } else {
    ///         ToolCallAction::Run
    ///     }
    /// });
    /// ```
    pub fn on_tool_call(
        &mut self,
        f: impl Fn(&ToolCall) -> ToolCallAction + Send + Sync + 'static,
    ) -> &mut Self {
        self.callbacks
            .on_tool_call
            .push(hooks::CallHook::Sync(Arc::new(f)));
        self
    }

    /// Runs the async hook `f` on each call right before it runs, in one chain with the
    /// [`on_tool_call`](Self::on_tool_call) hooks (registration order; each sees the arguments
    /// the one before left). It may let the call run, veto it (the model reads the reason),
    /// rewrite its arguments (a call that needed approval needs it again unless the approval
    /// covers the new arguments), or stop the turn ([`ToolCallAction::Stop`]: the turn ends
    /// with [`Outcome::Stopped`] and [`StopReason::Hook`]; calls that start together with the
    /// stopped one, in parallel, do not run either).
    ///
    /// It runs inside the call's claim: in a durable chat the claim is written first, and a
    /// rewrite is written with the call before the tool starts. It is bounded by
    /// [`with_hook_timeout`](Self::with_hook_timeout); one that panics or runs out of time
    /// vetoes the call with an error the model reads. See
    /// [Hooks and approvals](self#hooks-and-approvals).
    ///
    /// ```
    /// use llm_tools_core::tool;
    /// use llm_tools_core::chat::{Chat, Outcome, StopReason, ToolCallAction};
    /// use llm_tools_core::testing::ScriptedProvider;
    /// use serde_json::json;
    ///
    /// /// Runs a shell command
    /// #[tool]
    /// async fn shell(command: String) -> String { format!("ran {command}") }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let model = ScriptedProvider::new()
    ///     .then_call("shell", json!({"command": "ls"}))
    ///     .then_call("shell", json!({"command": "rm -rf /"}));
    /// let mut chat = Chat::new(model);
    /// chat.with_tools(Shell)?;
    /// chat.on_tool_call_async(|call| async move {
    ///     // an async policy check would go here
    ///     if call.arguments.contains("rm -rf") {
    ///         ToolCallAction::Stop("a destructive command was asked for".into())
    ///     } else {
    ///         ToolCallAction::Run
    ///     }
    /// });
    /// let outcome = chat.ask("Tidy up").await?;
    /// assert!(matches!(outcome, Outcome::Stopped(StopReason::Hook { .. })));
    /// assert_eq!(chat.messages()[2].text(), "ran ls");
    /// assert!(chat.messages()[4].is_error); // the stopped call's result: the reason
    /// # Ok::<_, llm_tools_core::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn on_tool_call_async<F, Fut>(&mut self, f: F) -> &mut Self
    where
        F: Fn(ToolCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolCallAction> + Send + 'static,
    {
        self.callbacks
            .on_tool_call
            .push(hooks::CallHook::Async(hooks::boxed_call_hook(f)));
        self
    }

    /// Runs `f` on each tool result (error results included) as it is added to the transcript.
    /// It observes; to rewrite a result or stop the turn, use
    /// [`on_tool_result_async`](Self::on_tool_result_async).
    pub fn on_tool_result(
        &mut self,
        f: impl Fn(&ToolCall, &Message) + Send + Sync + 'static,
    ) -> &mut Self {
        self.callbacks.on_tool_result.push(Arc::new(f));
        self
    }

    /// Runs the async hook `f` on the result of each run of a tool, as soon as the run ends
    /// and before the result is appended, streamed or written to the store: it may keep it,
    /// rewrite it (redact a secret, shorten it) or stop the turn after it
    /// ([`ToolResultAction`]). Hooks run in registration order, each seeing the result the one
    /// before left. Results the chat writes itself (denials, vetoes, unknown tools) do not go
    /// through it. Bounded by [`with_hook_timeout`](Self::with_hook_timeout); a hook that
    /// panics or runs out of time withholds the result and stops the turn. The attachments of
    /// a rewritten result fit in the chat's room for them
    /// ([`ToolOptions::with_max_chat_attachment_bytes`]) as a tool's own do: the result it
    /// replaces counts no more, and one past the room is left out and named in its text.
    ///
    /// ```
    /// use llm_tools_core::tool;
    /// use llm_tools_core::Message;
    /// use llm_tools_core::chat::{Chat, ToolResultAction};
    /// use llm_tools_core::testing::ScriptedProvider;
    /// use serde_json::json;
    ///
    /// /// Reads the configuration
    /// #[tool]
    /// async fn config() -> String { "user=admin password=hunter2".into() }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let model = ScriptedProvider::new().then_calls([("config", json!({}))]).then_text("Done.");
    /// let mut chat = Chat::new(model);
    /// chat.with_tools(Config)?;
    /// chat.on_tool_result_async(|call, result| async move {
    ///     let text = result.text();
    ///     match text.find("password=") {
    ///         Some(at) => ToolResultAction::Rewrite(Message::tool_result(
    ///             call.id.as_str(), format!("{}password=[redacted]", &text[..at]), false)),
    ///         None => ToolResultAction::Keep,
    ///     }
    /// });
    /// assert_eq!(chat.ask("Show the config").await?.text().as_deref(), Some("Done."));
    /// assert_eq!(chat.messages()[2].text(), "user=admin password=[redacted]");
    /// # Ok::<_, llm_tools_core::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn on_tool_result_async<F, Fut>(&mut self, f: F) -> &mut Self
    where
        F: Fn(ToolCall, Message) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolResultAction> + Send + 'static,
    {
        self.callbacks
            .on_tool_result_async
            .push(hooks::boxed_result_hook(f));
        self
    }

    /// Runs `f` on each progress report of a running call (an MCP server's progress
    /// notifications, or [`ToolContext::report_progress`](crate::ToolContext::report_progress)).
    /// It runs on the task that runs the call, so it should return quickly.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use llm_tools_core::{Chat, testing::ScriptedProvider};
    ///
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let mut chat = Chat::new(ScriptedProvider::new());
    /// let sink = Arc::clone(&seen);
    /// chat.on_tool_progress(move |p| sink.lock().unwrap().push((p.call_id.clone(), p.progress)));
    /// ```
    pub fn on_tool_progress(
        &mut self,
        f: impl Fn(&crate::context::ToolProgress) + Send + Sync + 'static,
    ) -> &mut Self {
        self.callbacks.on_tool_progress.push(Arc::new(f));
        self
    }

    // ----- transcript -----

    /// The transcript: instructions, the user's messages, the model's answers, tool results.
    pub fn messages(&self) -> &[Message] {
        &self.state.messages
    }

    /// The tokens used by every request of this chat, summed.
    pub fn usage(&self) -> Usage {
        self.state.usage
    }

    /// Adds a message without running the loop (drive it with [`step`](Self::step) or
    /// [`complete`](Self::complete)). An assistant message with tool calls starts a round: its
    /// calls run at the next `step` or `complete`. Tool results are the loop's to add.
    pub fn add_message(&mut self, message: Message) -> Result<&mut Self, Error> {
        self.check_no_round()?;
        if message.role == Role::Tool {
            return Err(crate::error::ConfigError::ToolResultByHand.into());
        }
        // The application spoke: the model's rounds in a row count from here, and a stopped
        // turn is carried on (a durable chat is due again for its message).
        self.state.tool_rounds = 0;
        self.state.stopped = None;
        self.push_message(message);
        Ok(self)
    }

    fn check_no_round(&self) -> Result<(), Error> {
        match &self.state.round {
            None => Ok(()),
            Some(round) => {
                let calls = &self.state.messages[round.message].tool_calls;
                Err(Error::PendingCalls {
                    calls: round
                        .calls
                        .iter()
                        .zip(calls)
                        .filter(|(entry, _)| !entry.state.has_result())
                        .map(|(_, call)| call.joined_name())
                        .collect(),
                })
            }
        }
    }

    /// Adds a stop condition: the turn ends with [`Outcome::Stopped`] when it holds (see
    /// [`StopWhen`]); the first that holds wins. Stop conditions are configuration, like
    /// callbacks: set them again on a chat loaded from a store.
    pub fn stop_when(&mut self, condition: StopWhen) -> &mut Self {
        self.stops.push(condition);
        self
    }

    /// Runs `prepare` before each model request, with what the request would be
    /// ([`RequestPlan`]: the messages, the tools offered, the tool choice, the parameters, the
    /// provider, the round number); what it gives back is sent. It may leave tools out, force
    /// or forbid tool use, send the request to another provider, add parameters, and edit the
    /// messages sent (a history processor: the transcript keeps every message). A second call
    /// replaces the hook. Without a hook nothing is copied; with one, the messages are copied
    /// once per request.
    pub fn with_prepare_request<F, Fut>(&mut self, prepare: F) -> &mut Self
    where
        F: Fn(RequestPlan) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = RequestPlan> + Send + 'static,
    {
        self.prepare = Some(Arc::new(move |plan| Box::pin(prepare(plan))));
        self
    }

    /// Removes the preparation hook.
    pub fn without_prepare_request(&mut self) -> &mut Self {
        self.prepare = None;
        self
    }

    /// Removes every stop condition.
    pub fn clear_stop_conditions(&mut self) -> &mut Self {
        self.stops.clear();
        self
    }

    /// Why the last turn stopped before the model answered, until the next turn starts or the
    /// application adds a message ([`add_message`](Self::add_message), a durable chat's
    /// `enqueue`).
    pub fn stopped(&self) -> Option<&StopReason> {
        self.state.stopped.as_ref()
    }

    // ----- running -----

    /// Sends a message (text, or any [`Message`]) and runs the loop until the model answers
    /// without asking for tools ([`Outcome::Done`]) or a call pauses ([`Outcome::Paused`]).
    ///
    /// Fails with [`Error::PendingCalls`] while calls of the last answer wait for results,
    /// [`Error::RoundsExceeded`] when the round budget is used up (call `complete` to go on),
    /// [`Error::ToolFailed`] when a tool fails fatally, [`Error::Provider`] when the provider
    /// does.
    pub async fn ask(&mut self, message: impl Into<Message>) -> Result<Outcome, Error> {
        self.boxed_turn(Some(message.into()), None).await
    }

    /// Runs the loop from where the chat stands: runs the calls that can run (resuming tasks,
    /// running answered and approved calls again), then asks the model until it answers without
    /// tools or a call pauses. A chat that is already answered returns its answer.
    pub async fn complete(&mut self) -> Result<Outcome, Error> {
        self.boxed_turn(None, None).await
    }

    /// One step of the loop: settles the calls that can run; then, unless the chat is paused
    /// or answered, sends one request and runs the calls of its answer.
    ///
    /// The loop around the steps is the caller's, and so is its bound: the round budget
    /// ([`ToolOptions::with_rounds`](crate::chat::ToolOptions::with_rounds)) counts the rounds
    /// of `ask` and `complete`, not steps (an answer without tools a step gets starts that count
    /// afresh); a turn's [`StopWhen`] budgets do hold across its steps.
    ///
    /// ```
    /// use llm_tools_core::chat::{Chat, Step};
    /// use llm_tools_core::testing::ScriptedProvider;
    /// use llm_tools_core::Message;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let mut chat = Chat::new(ScriptedProvider::new().then_text("Hi!"));
    /// chat.add_message(Message::user("Hello"))?;
    /// for _ in 0..10 {
    ///     match chat.step().await? {
    ///         Step::Continue => continue,
    ///         Step::Done(answer) => { assert_eq!(answer.text(), "Hi!"); break }
    ///         Step::Paused(_) => break,
    ///         _ => unreachable!(),
    ///     }
    /// }
    /// # Ok::<_, llm_tools_core::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn step(&mut self) -> Result<Step, Error> {
        self.boxed_step().await
    }

    /// [`ask`](Self::ask), streamed: text and tool-call deltas as the model sends them, each
    /// tool result as it is added, and a last event saying whether the turn is done or paused.
    ///
    /// ```
    /// use futures::StreamExt;
    /// use llm_tools_core::StreamEvent;
    /// use llm_tools_core::chat::{Chat, ChatEvent};
    /// use llm_tools_core::testing::ScriptedProvider;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let mut chat = Chat::new(ScriptedProvider::new().then_text("Hello there!"));
    /// let mut text = String::new();
    /// let mut events = chat.ask_stream("Hi");
    /// while let Some(event) = events.next().await {
    ///     match event? {
    ///         ChatEvent::Model(StreamEvent::TextDelta(delta)) => text.push_str(&delta),
    ///         ChatEvent::Done(answer) => assert_eq!(answer.text(), text),
    ///         _ => {}
    ///     }
    /// }
    /// assert_eq!(text, "Hello there!");
    /// # Ok::<_, llm_tools_core::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn ask_stream(&mut self, message: impl Into<Message>) -> ChatStream<'_> {
        let sink = stream::Sink::default();
        let run = self.boxed_turn(Some(message.into()), Some(Arc::clone(&sink)));
        ChatStream::new(sink, run)
    }

    /// [`complete`](Self::complete), streamed as [`ask_stream`](Self::ask_stream).
    pub fn complete_stream(&mut self) -> ChatStream<'_> {
        let sink = stream::Sink::default();
        let run = self.boxed_turn(None, Some(Arc::clone(&sink)));
        ChatStream::new(sink, run)
    }

    /// A handle that cancels the run in progress from another task (see [`CancelHandle`]).
    pub fn cancel_handle(&self) -> CancelHandle {
        self.cancel.clone()
    }

    /// Cancels every call the chat waits on: each paused task is cancelled through its tool,
    /// and every call without a result (tasks, questions, approvals) is closed with an error
    /// result. The chat can then take a new message, or `complete` to let the model go on.
    ///
    /// A durable chat takes its run claim for this and writes the closed calls; when another
    /// process holds the chat, a cancel request is recorded in the store, and the holder (or
    /// a worker, once no one holds it) carries it out (see
    /// [the store's docs](crate::store#cancelling-from-any-process)).
    ///
    /// # Errors
    ///
    /// [`Error::ToolNotRegistered`] when a paused task's tool is not registered (a chat loaded
    /// without its tools): its task could not be cancelled, so nothing is closed. For a
    /// durable chat, the store's error when the cancel could not be written: the run
    /// claim could not be taken, the cancel request could not be recorded for the process
    /// that holds the chat, or the closed calls could not be written (the chat is then behind
    /// its store, as after any refused write). The store still holds the calls as they were,
    /// and a worker may go on with them: try again.
    pub async fn cancel(&mut self) -> Result<(), Error> {
        self.boxed_cancel().await
    }

    // ----- pauses -----

    /// Whether calls of the last answer wait for their results.
    pub fn is_paused(&self) -> bool {
        self.state.round.is_some()
    }

    /// What the chat waits on, if it is paused.
    pub fn pause(&self) -> Option<Pause> {
        let round = self.state.round.as_ref()?;
        let calls = &self.state.messages[round.message].tool_calls;
        let paused = round
            .calls
            .iter()
            .zip(calls)
            .filter_map(|(entry, call)| {
                let reason = match &entry.state {
                    CallState::AwaitingApproval => PauseReason::Approval,
                    CallState::Task { task, .. } => PauseReason::Task(task.clone()),
                    CallState::Question { question, .. } => PauseReason::Question(question.clone()),
                    _ => return None,
                };
                Some(PausedCall {
                    call: call.clone(),
                    reason,
                })
            })
            .collect();
        Some(Pause { calls: paused })
    }

    fn entries(&self) -> impl Iterator<Item = (&Entry, &ToolCall)> {
        self.state.round.iter().flat_map(|round| {
            round
                .calls
                .iter()
                .zip(&self.state.messages[round.message].tool_calls)
        })
    }

    /// Whether calls wait on tasks.
    pub fn awaiting_tasks(&self) -> bool {
        self.entries()
            .any(|(s, _)| matches!(s.state, CallState::Task { .. }))
    }

    /// The calls paused on tasks, with their tasks, in call order.
    ///
    /// ```
    /// use llm_tools_core::{tool, Task, ToolOutcome, ToolOutput};
    /// use llm_tools_core::chat::Chat;
    /// use llm_tools_core::testing::ScriptedProvider;
    /// use serde_json::json;
    ///
    /// struct RunSubAgent;
    ///
    /// #[tool]
    /// impl RunSubAgent {
    ///     /// Hands a job to a sub-agent
    ///     async fn execute(&self, job: String) -> Task {
    ///         Task::input_required("Waiting for approval")
    ///             .with_data("run_id", json!(7))
    ///             .with_data("job", json!(job))
    ///     }
    ///
    ///     async fn resume(&self, task: Task, job: String) -> ToolOutcome {
    ///         ToolOutcome::Output(ToolOutput::text(format!("{job} done (run {})", task.get("run_id").unwrap())))
    ///     }
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let model = ScriptedProvider::new()
    ///     .then_call("run_sub_agent", json!({"job": "deploy"}))
    ///     .then_text("Deployed.");
    /// let mut chat = Chat::new(model);
    /// chat.with_tools(RunSubAgent)?;
    ///
    /// assert!(chat.ask("Deploy the pricing page").await?.is_paused());
    /// let pending = chat.pending_tasks();
    /// assert_eq!(pending[0].task.status_message(), Some("Waiting for approval"));
    ///
    /// // Later, when the work may have moved on: `complete` resumes each task once.
    /// let outcome = chat.complete().await?;
    /// assert_eq!(outcome.text().as_deref(), Some("Deployed."));
    /// # Ok::<_, llm_tools_core::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn pending_tasks(&self) -> Vec<PendingTask<'_>> {
        self.entries()
            .filter_map(|(entry, call)| match &entry.state {
                CallState::Task { task, .. } => Some(PendingTask { call, task }),
                _ => None,
            })
            .collect()
    }

    /// Whether calls wait for answers to their questions.
    pub fn awaiting_input(&self) -> bool {
        self.entries()
            .any(|(s, _)| matches!(s.state, CallState::Question { .. }))
    }

    /// The calls waiting for answers, with their questions, in call order.
    pub fn pending_questions(&self) -> Vec<PendingQuestion<'_>> {
        self.entries()
            .filter_map(|(entry, call)| match &entry.state {
                CallState::Question { question, .. } => Some(PendingQuestion { call, question }),
                _ => None,
            })
            .collect()
    }

    /// Answers a call's question with the form's field values (a JSON object; for a URL
    /// question, whatever the page gave back, or `{}`). The call runs again from the start at
    /// the next `complete`, and this time `ask` returns the answer. Fields the answer leaves out
    /// take their schema's `default` ([`Question::fill_defaults`](crate::Question::fill_defaults)). Fails when no call with
    /// this id waits for an answer, or when a required field is missing.
    ///
    /// ```
    /// use llm_tools_core::{tool, Question, ToolContext, ToolError};
    /// use llm_tools_core::chat::Chat;
    /// use llm_tools_core::testing::ScriptedProvider;
    /// use serde_json::json;
    ///
    /// /// Deploys to the region the user picks
    /// #[tool]
    /// async fn deploy(ctx: &ToolContext) -> Result<String, ToolError> {
    ///     let question = Question::new("Which region?")
    ///         .required_field("region", json!({"type": "string", "enum": ["eu", "us"]}));
    ///     let answer = ctx.ask(question).await?; // the call pauses here the first time
    ///     Ok(format!("deployed to {}", answer.get_str("region").unwrap_or("nowhere")))
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let model = ScriptedProvider::new().then_call("deploy", json!({})).then_text("Done.");
    /// let mut chat = Chat::new(model);
    /// chat.with_tools(Deploy)?;
    /// assert!(chat.ask("Deploy it").await?.is_paused());
    ///
    /// let call_id = chat.pending_questions()[0].call.id.clone();
    /// assert!(chat.answer(&call_id, json!({})).is_err()); // `region` is required
    /// chat.answer(&call_id, json!({"region": "eu"}))?;
    /// let _ = chat.complete().await?;
    /// assert_eq!(chat.messages()[2].text(), "deployed to eu");
    /// # Ok::<_, llm_tools_core::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn answer(&mut self, call_id: &str, values: Value) -> Result<&mut Self, Error> {
        let index = self.waiting(call_id, "an answer", |s| {
            matches!(s, CallState::Question { .. })
        })?;
        self.tool_registered(index)?;
        let mut values = values;
        if let Some(round) = &self.state.round
            && let (CallState::Question { question, .. }, Value::Object(given)) =
                (&round.calls[index].state, &mut values)
        {
            question.fill_defaults(given);
        }
        let answer = Answer::accept(values);
        if let Some(round) = &mut self.state.round {
            if let (CallState::Question { question, .. }, Some(values)) =
                (&round.calls[index].state, answer.values())
            {
                question
                    .check_answer(values)
                    .map_err(|message| Error::InvalidAnswer {
                        call_id: call_id.to_owned(),
                        message,
                    })?;
            }
            round.answer(index, answer);
            // A person decided: the model's rounds in a row count afresh.
            self.state.tool_rounds = 0;
        }
        Ok(self)
    }

    /// Declines a call's question: at the next `complete` the call runs again and `ask`
    /// returns a declined [`Answer`].
    pub fn decline(&mut self, call_id: &str) -> Result<&mut Self, Error> {
        let index = self.waiting(call_id, "an answer", |s| {
            matches!(s, CallState::Question { .. })
        })?;
        self.tool_registered(index)?;
        if let Some(round) = &mut self.state.round {
            round.answer(index, Answer::decline(None));
            self.state.tool_rounds = 0;
        }
        Ok(self)
    }

    /// [`Error::ToolNotRegistered`] when the call at `index` of the round needs a tool this
    /// chat does not have: approving or answering it would only get it a "no such tool"
    /// result, and lose the decision.
    fn tool_registered(&self, index: usize) -> Result<(), Error> {
        let Some(call) = self
            .state
            .round
            .as_ref()
            .and_then(|round| self.state.messages[round.message].tool_calls.get(index))
        else {
            return Ok(());
        };
        if self.registry.find(call).is_some() {
            return Ok(());
        }
        Err(Error::ToolNotRegistered {
            call_id: call.id.clone(),
            tool: call.joined_name(),
        })
    }

    /// A person decided on a paused call (here or in a sub-agent's chat): the model's answers
    /// asking for tools in a row count afresh.
    pub(crate) fn person_decided(&mut self) {
        self.state.tool_rounds = 0;
    }

    /// The position of the call with this id, when its state matches; else
    /// [`Error::NotWaiting`].
    fn waiting(
        &mut self,
        call_id: &str,
        waiting_for: &'static str,
        matches: impl Fn(&CallState) -> bool,
    ) -> Result<usize, Error> {
        let index = self
            .state
            .round
            .as_mut()
            .and_then(|round| {
                round.waiting(call_id, matches)?;
                round.position(call_id)
            })
            .ok_or_else(|| Error::NotWaiting {
                call_id: call_id.to_owned(),
                waiting_for,
            })?;
        Ok(index)
    }
}

impl std::fmt::Debug for Chat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chat")
            .field("provider", &self.provider.protocol())
            .field("model", &self.provider.model())
            .field("tools", &self.registry)
            .field("messages", &self.state.messages.len())
            .field("paused", &self.is_paused())
            .field("callbacks", &self.callbacks)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chat_and_its_futures_are_send() {
        fn send<T: Send>(_: &T) {}
        let mut chat = Chat::new(crate::testing::ScriptedProvider::new());
        send(&chat);
        send(&chat.ask("hi"));
        send(&chat.complete());
        send(&chat.step());
        send(&chat.cancel());
        send(&chat.ask_stream("hi"));
    }
}
