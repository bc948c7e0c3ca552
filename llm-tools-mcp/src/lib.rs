//! MCP servers' tools in an llm-tools chat.
//!
//! Connect to a server, over stdio (a command this process starts) or Streamable HTTP, and
//! its tools join a [`Chat`](llm_tools_core::Chat) like your own: under a namespace named
//! after the server, with the server's input schemas unchanged, the chat's `max_run_time`,
//! approvals and tool search. Built on [`rmcp`], the official Rust SDK.
//!
//! ```no_run
//! use llm_tools_mcp::{McpChat as _, McpServer};
//!
//! # async fn run(provider: impl llm_tools_core::Provider) -> Result<(), Box<dyn std::error::Error>> {
//! let files = McpServer::stdio("npx")
//!     .args(["-y", "@modelcontextprotocol/server-filesystem", "/srv/docs"])
//!     .connect("files")
//!     .await?;
//! println!("{:?}", files.tool_names()); // ["files_read_file", "files_list_directory", …]
//!
//! let mut chat = llm_tools_core::Chat::new(provider);
//! chat.with_mcp(&files)?;
//! let answer = chat.ask("What is in /srv/docs/README.md?").await?;
//! # let _ = answer;
//! # Ok(()) }
//! ```
//!
//! What a session does:
//!
//! - **Lifecycle**: [`Lifecycle::Auto`] tries the 2026-07-28 `server/discover` and falls back
//!   to `initialize` for servers up to 2025-11-25.
//! - **Tools**: every page of `tools/list` is read; names models refuse are mapped to names
//!   they accept (the server still gets its own); [`McpServer::allow`] and [`McpServer::deny`]
//!   filter; [`McpServer::defer`] hands the whole server to the chat's tool search. When the
//!   server sends `notifications/tools/list_changed`, the chat lists again before its next
//!   request.
//! - **Calls**: the model's arguments go through as they are; `isError` results are error
//!   results the model can react to; text is joined, images, audio and embedded blobs become
//!   attachments, embedded text and resource links become text, `structuredContent` is kept
//!   as JSON unless a text block holds the same data (servers repeat it as text), so the
//!   model reads each result once. Progress notifications reach the chat's
//!   `on_tool_progress` callbacks and stream (and tracing). A call that runs past its
//!   `max_run_time`, or whose chat is cancelled, sends `notifications/cancelled`, and its late
//!   progress is dropped.
//! - **Questions**: a server's elicitation pauses the call on a chat question (answered with
//!   the chat's `answer` / `decline`), or is answered in place by [`McpServer::on_elicitation`].
//!   A URL reaches the user only if it is `https` (or `http` to a loopback host) without
//!   credentials; any other (`javascript:`, `file:`, …) is declined, with a warning logged.
//! - **Tasks** (2026-07-28 tasks extension): a call the server runs as a task pauses on a
//!   `Task` whose data holds the server's task id; the chat's `complete` polls it
//!   (`tasks/get`), its `cancel` cancels it (`tasks/cancel`).
//! - **Errors**: a failed connection or listing is an [`McpError`] naming the server: a stdio
//!   server that exits at start is [`McpError::Exited`] with its exit status and its last
//!   stderr lines; an HTTP failure names the URL with its query values redacted. A failed call
//!   is an error result for the model, never a panic.
//! - **HTTP**: redirects are followed within the server's origin only
//!   ([`McpError::CrossOriginRedirect`] otherwise), so the bearer token and headers stay there.
//! - **Reconnect**: when the session ends (a stdio server's process exits, an HTTP server
//!   goes away), [`McpClient::reconnect`] opens a new one and the chats that have the client
//!   keep its tools, listed again (a tool that left answers calls with an error result; tools
//!   that left or changed are logged and returned as [`ToolChanges`]). With
//!   [`McpServer::reconnect`]`(`[`ReconnectPolicy::backoff`]`())` a call on an ended session
//!   reconnects by itself: bounded attempts with exponential backoff, one sequence shared by
//!   the calls that wait for it, an error result for the model when it fails. A chat given a
//!   client whose session ended (a durable chat loaded again, say) reconnects it before its
//!   next request.
//! - **Drift**: a changed definition of a tool the chat already offers (after `list_changed`)
//!   is never adopted silently: [`McpServer::on_tool_drift`] decides ([`DriftDecision`]); by
//!   default it is refused, the tool leaves the chat and a warning names what changed.
//! - **Roots, sampling, resources, prompts**: [`McpServer::roots`] and
//!   [`McpClient::set_roots`]; [`McpServer::sampling`] answers a server's
//!   `sampling/createMessage` with the application's model behind an approval hook and a token
//!   limit ([`Sampling`]); [`McpClient::list_resources`], [`McpClient::read_resource`],
//!   [`McpClient::subscribe`], [`McpClient::resources_tool`] (a `read_resource` tool for the
//!   model), [`McpClient::list_prompts`] and [`McpClient::get_prompt`] (chat messages).
//! - **OAuth 2.1** (feature `auth`): `McpServer::oauth` with the authorization code flow (PKCE,
//!   the application's redirect handler) or client credentials, on rmcp's OAuth support; tokens
//!   in a `TokenStore` of the application's choice.
//! - **Secrets**: the `Debug` of an [`McpServer`], errors and logs show no bearer token, OAuth
//!   token or client secret, header value, environment value or URL query value.
//!
//! The server's stderr (each line cut at [`DEFAULT_MAX_STDERR_LINE`] bytes, the last
//! [`DEFAULT_STDERR_TAIL_LINES`] kept, see [`McpClient::stderr_tail`]) and the session's events
//! go to the `llm_tools::mcp` tracing target.
//!
//! With the `server` feature, `ToolServer` serves `#[tool]`s and toolsets to any MCP client,
//! over stdio or Streamable HTTP.
//!
//! The crate follows rmcp's split: `client` (the settings, the connection, its tools and
//! transports) and `server` (serving tools), with what both use at the root (`error`,
//! `bounded_lines` for the stdio streams of both, `elicitation`, both of its directions, and
//! `progress_token`, the bound on a progress token).

mod bounded_lines;
mod client;
mod elicitation;
mod error;
mod json_len;
mod progress_token;
#[cfg(feature = "server")]
mod server;

#[cfg(feature = "auth")]
pub use client::{
    DEFAULT_LOGIN_TIMEOUT, LoopbackRedirect, MAX_LOGINS_UNANSWERED, MAX_STEP_UPS, MemoryTokenStore,
    OAuth, StoreTokenStore, StoredTokens, TokenStore,
};
pub use client::{
    DEFAULT_MAX_ATTACHMENT_BYTES, DEFAULT_MAX_ATTACHMENTS, DEFAULT_MAX_REDIRECTS,
    DEFAULT_MAX_STDERR_LINE, DEFAULT_RECONNECT_ATTEMPTS, DEFAULT_RECONNECT_FIRST_DELAY,
    DEFAULT_RECONNECT_MAX_DELAY, DEFAULT_SAMPLING_MAX_CONCURRENT, DEFAULT_SAMPLING_MAX_INPUT_BYTES,
    DEFAULT_SAMPLING_MAX_REQUESTS, DEFAULT_SAMPLING_MAX_TOKENS, DEFAULT_SAMPLING_TIMEOUT,
    DEFAULT_STDERR_TAIL_LINES, DriftDecision, Lifecycle, MAX_LIST_PAGES, MAX_LISTED,
    MAX_LISTING_BYTES, MAX_PENDING_SERVER_REQUESTS, MAX_REMOTE_TOOL_NAME_BYTES,
    MAX_SAMPLING_MESSAGES, MAX_STREAM_OPENS_PER_MINUTE, MAX_TOOL_DESCRIPTION_BYTES,
    MAX_TOOL_SCHEMA_BYTES, McpChat, McpClient, McpServer, QUIET_STREAM_LIMIT, ReconnectPolicy,
    Root, Sampling, SamplingDecision, SamplingRequest, ToolChanges, ToolDrift,
};
pub use elicitation::{
    MAX_ELICITATION_FIELDS, MAX_ELICITATION_FORM_BYTES, MAX_ELICITATION_URL_BYTES,
};
pub use error::McpError;
#[cfg(feature = "server")]
pub use server::{
    Access, DEFAULT_AUTHORIZATION_TIMEOUT, DEFAULT_BODY_READ_TIMEOUT, DEFAULT_HEADER_READ_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_ARGUMENT_BYTES_IN_FLIGHT,
    DEFAULT_MAX_ARGUMENT_BYTES_IN_FLIGHT_PER_CLIENT, DEFAULT_MAX_CALLS_IN_FLIGHT,
    DEFAULT_MAX_CALLS_IN_FLIGHT_PER_CLIENT, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_CONNECTIONS_PER_PEER, DEFAULT_MAX_EVENT_STREAM_LIFETIME,
    DEFAULT_MAX_REQUEST_BODY_BYTES, DEFAULT_MAX_REQUEST_JSON_VALUES, DEFAULT_MAX_SESSIONS,
    DEFAULT_MAX_SESSIONS_PER_PRINCIPAL, DEFAULT_MAX_TASK_BYTES, DEFAULT_MAX_TASK_BYTES_PER_CLIENT,
    DEFAULT_MAX_TASKS, DEFAULT_MAX_TASKS_PER_CLIENT, DEFAULT_MCP_PATH, DEFAULT_REQUEST_STATE_TTL,
    DEFAULT_RESUME_WINDOW, DEFAULT_SERVE_MAX_RUN_TIME, DEFAULT_SESSION_IDLE_TIMEOUT,
    DEFAULT_TASK_TTL, DEFAULT_WRITE_STALL_TIMEOUT, Decision, HttpOptions, MAX_USED_STATES,
    MAX_USED_STATES_PER_CLIENT, ToolServer,
};

/// The MCP SDK this crate is built on, for requests it does not wrap.
pub use rmcp;
