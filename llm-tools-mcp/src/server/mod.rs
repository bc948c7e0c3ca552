//! The server side (feature `server`): [`ToolServer`], `#[tool]`s and toolsets served to any MCP
//! client, over stdio or Streamable HTTP, with rmcp's server side (`RoleServer`). The same tools
//! that serve a chat serve Claude Desktop, an IDE or another agent.
//!
//! - `tool_server`: [`ToolServer`], its settings, and rmcp's `ServerHandler` for it;
//! - `call`: running a served tool (panics caught, working tasks carried on and stopped
//!   however the call ends, its future dropped included; the calls one client runs at once
//!   bounded);
//! - `approval`: a served call that needs approval never runs without it ([`Decision`]);
//! - `progress`: a call's progress reports, forwarded to the client in order;
//! - `results`: results and task states on the wire;
//! - `state`: what a 2026-07-28 call carries between its rounds, sealed by the server;
//! - `tasks`: calls that clients run as MCP tasks, each its client's own;
//! - `stdio`: stdio (any pair of byte streams), each message bounded before rmcp parses it;
//! - `http`: Streamable HTTP, and who may reach it ([`HttpOptions`]);
//! - `connections`: the HTTP server's connections and sessions, bounded.
//!
//! Questions asked of the client (elicitation) are in the crate's `elicitation` module, with
//! the client's side of them.

mod approval;
mod call;
mod connections;
mod http;
mod progress;
mod results;
mod state;
mod stdio;
mod tasks;
mod tool_server;

pub use approval::Decision;
pub use call::{
    DEFAULT_MAX_ARGUMENT_BYTES_IN_FLIGHT, DEFAULT_MAX_ARGUMENT_BYTES_IN_FLIGHT_PER_CLIENT,
    DEFAULT_MAX_CALLS_IN_FLIGHT, DEFAULT_MAX_CALLS_IN_FLIGHT_PER_CLIENT,
};
pub use connections::{
    DEFAULT_BODY_READ_TIMEOUT, DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_CONNECTIONS_PER_PEER, DEFAULT_MAX_EVENT_STREAM_LIFETIME,
    DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_PRINCIPAL, DEFAULT_RESUME_WINDOW,
    DEFAULT_SESSION_IDLE_TIMEOUT, DEFAULT_WRITE_STALL_TIMEOUT,
};
pub use http::{
    Access, DEFAULT_AUTHORIZATION_TIMEOUT, DEFAULT_MAX_REQUEST_BODY_BYTES,
    DEFAULT_MAX_REQUEST_JSON_VALUES, DEFAULT_MCP_PATH, HttpOptions,
};
pub use state::{DEFAULT_REQUEST_STATE_TTL, MAX_USED_STATES, MAX_USED_STATES_PER_CLIENT};
pub use tasks::{
    DEFAULT_MAX_TASK_BYTES, DEFAULT_MAX_TASK_BYTES_PER_CLIENT, DEFAULT_MAX_TASKS,
    DEFAULT_MAX_TASKS_PER_CLIENT, DEFAULT_TASK_TTL,
};
pub use tool_server::{DEFAULT_SERVE_MAX_RUN_TIME, ToolServer};
