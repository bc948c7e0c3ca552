//! [`McpError`]: what can go wrong connecting to an MCP server or listing its tools.

use std::time::Duration;

/// An MCP server could not be reached, refused the connection or answered a request with an
/// error. Failures of single tool calls are not `McpError`s: the model gets them as error
/// results, and the chat goes on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The server's configuration is unusable (an invalid name, header or URL); nothing was
    /// started.
    #[error("invalid MCP server configuration: {0}")]
    InvalidConfig(String),
    /// The server's command could not be started.
    #[error("the MCP server `{server}` could not be started (`{command}`): {source}")]
    Spawn {
        /// The name given to the server.
        server: String,
        /// The command that was run.
        command: String,
        /// Why it failed.
        source: std::io::Error,
    },
    /// The connection or its handshake (`server/discover` or `initialize`) failed.
    #[error("the MCP server `{server}` did not complete the handshake: {message}")]
    Handshake {
        /// The name given to the server.
        server: String,
        /// What the client saw.
        message: String,
    },
    /// The server did not answer in time.
    #[error("the MCP server `{server}` did not answer {what} within {after:?}")]
    Timeout {
        /// The name given to the server.
        server: String,
        /// What it was asked.
        what: &'static str,
        /// How long the client waited.
        after: Duration,
    },
    /// A request failed: the server answered with a JSON-RPC error or the connection closed.
    #[error("the MCP server `{server}` failed {what}: {source}")]
    Request {
        /// The name given to the server.
        server: String,
        /// What it was asked.
        what: &'static str,
        /// The error.
        source: rmcp::ServiceError,
    },
}
