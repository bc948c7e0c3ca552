//! Agents: a reusable definition that makes chats ([`Agent`]), sub-agents that are tools
//! ([`Agent::as_tool`]), and handoffs between agents ([`Agent::with_handoffs`]).
//!
//! An [`Agent`] is declared once (a provider, instructions, tools, tool options, an output
//! schema, provider tools) and makes as many [`Chat`](crate::chat::Chat)s as the application
//! needs: [`Agent::chat`] in a web handler or a test, [`Agent::configure`] in a worker's
//! per-chat setup.
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
//!   model reads. Every request a sub-agent sends counts, as it is sent, in the turn of each
//!   chat above it, against its request budget
//!   ([`DEFAULT_MAX_REQUESTS_PER_TURN`](crate::chat::DEFAULT_MAX_REQUESTS_PER_TURN), 256, by
//!   default), taken from it before it goes, so none past it is sent: a model fanning out to
//!   sub-agents without end is stopped with
//!   [`StopReason::Requests`](crate::chat::StopReason::Requests) at the budget.
//!
//! # Handoffs
//!
//! [`Agent::with_handoffs`] gives the agent's chats a `transfer_to_<name>` tool per target.
//! When the model calls one, the chat takes the target's instructions, tools, options and
//! provider once the round's calls have run, for the rest of the turn and of the chat; the
//! target gets a `transfer_to_<name>` tool back to the agent that handed over, unless it
//! already hands off to it. The transfers are tool calls in the transcript, and the chat's
//! state records the agent it was last handed to and the one that handed over (a durable
//! chat's store too), so a chat loaded from its state is put back on the right agent by
//! [`Agent::configure`], also once compaction has summarised the transfers.
//!
//! # Where things are
//!
//! `definition.rs` holds [`Agent`] and its builder; `configure.rs` makes and configures an
//! agent's chats and holds the handoffs (a chat's switch to another agent is a configuration);
//! `subagent.rs` is the agent as a tool ([`AgentTool`]); `pauses.rs` lists and settles the
//! paused calls of a tree of sub-agents and holds what a paused sub-agent call keeps.

mod configure;
mod definition;
mod pauses;
mod subagent;

pub use definition::{Agent, DEFAULT_MAX_DEPTH};
pub use pauses::{AGENT_TASK_KEY, AgentPause, AgentPauses, PATH_SEPARATOR};
pub use subagent::AgentTool;
