//! The client side: connecting to MCP servers and using their tools in a chat (rmcp's
//! `RoleClient`).
//!
//! - `config`: [`McpServer`], the client's settings for one server (how to reach it, which of
//!   its tools a chat sees), and [`Lifecycle`];
//! - `mcp_client`: [`McpClient`], the open connection and its tools as a `ToolSource`;
//! - `session`: one session with the server (what a reconnect replaces), its rmcp handler
//!   and the notifications it reads;
//! - `tool`: one tool of a server as a chat `Tool` (a call is one `tools/call`);
//! - `content`: a `tools/call` result as the model reads it, its attachments within
//!   [`McpServer::max_attachments`] and [`McpServer::max_attachment_bytes`];
//! - `names`: local names for the server's tools; `listing`: the bounds of every listing, and
//!   the tools listing;
//! - `reconnect`: [`ReconnectPolicy`] and [`ToolChanges`];
//! - `drift`: a changed definition of a tool already offered ([`ToolDrift`], [`DriftDecision`]);
//! - `resources`: resources, prompts and roots on a client; `roots`: [`Root`];
//! - `sampling`: a server's sampling requests answered by the application's model
//!   ([`Sampling`]);
//! - `stdio` and `http`: the two transports (a child process; Streamable HTTP);
//!   `message_bound`: the JSON values one message from a server may hold;
//! - `chat`: [`McpChat`], `chat.with_mcp(&client)`.

#[cfg(feature = "auth")]
mod auth;
#[cfg(feature = "auth")]
mod auth_logs;
mod chat;
mod config;
mod content;
mod drift;
pub(crate) mod http;
mod http_post;
mod listing;
mod mcp_client;
mod message_bound;
mod names;
mod reconnect;
mod resources;
mod roots;
mod sampling;
mod session;
mod stdio;
mod stream_opens;
#[cfg(feature = "auth")]
mod token_store;
mod tool;

#[cfg(feature = "auth")]
pub use auth::{
    DEFAULT_LOGIN_TIMEOUT, LoopbackRedirect, MAX_LOGINS_UNANSWERED, MAX_STEP_UPS, MemoryTokenStore,
    OAuth, StoredTokens, TokenStore,
};
pub use chat::McpChat;
pub use config::{Lifecycle, McpServer};
pub use content::{DEFAULT_MAX_ATTACHMENT_BYTES, DEFAULT_MAX_ATTACHMENTS};
pub use drift::{DriftDecision, ToolDrift};
pub use http::DEFAULT_MAX_REDIRECTS;
pub use listing::{MAX_LIST_PAGES, MAX_LISTED, MAX_LISTING_BYTES};
pub use mcp_client::McpClient;
pub use reconnect::{
    DEFAULT_RECONNECT_ATTEMPTS, DEFAULT_RECONNECT_FIRST_DELAY, DEFAULT_RECONNECT_MAX_DELAY,
    ReconnectPolicy, ToolChanges,
};
pub use roots::Root;
pub use sampling::{
    DEFAULT_SAMPLING_MAX_CONCURRENT, DEFAULT_SAMPLING_MAX_INPUT_BYTES,
    DEFAULT_SAMPLING_MAX_REQUESTS, DEFAULT_SAMPLING_MAX_TOKENS, DEFAULT_SAMPLING_TIMEOUT,
    MAX_SAMPLING_MESSAGES, Sampling, SamplingDecision, SamplingRequest,
};
pub use session::MAX_PENDING_SERVER_REQUESTS;
pub use stdio::{DEFAULT_MAX_STDERR_LINE, DEFAULT_STDERR_TAIL_LINES};
pub use stream_opens::{MAX_STREAM_OPENS_PER_MINUTE, QUIET_STREAM_LIMIT};
#[cfg(feature = "auth")]
pub use token_store::StoreTokenStore;
pub use tool::{MAX_REMOTE_TOOL_NAME_BYTES, MAX_TOOL_DESCRIPTION_BYTES, MAX_TOOL_SCHEMA_BYTES};
