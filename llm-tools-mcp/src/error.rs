//! [`McpError`], shared by both sides: what can go wrong connecting to an MCP server or listing
//! its tools (and starting to serve, for a `ToolServer`), and the SDK's errors described as
//! text a user can read (no Rust types, no URL queries).

use std::fmt;
use std::time::Duration;

use rmcp::service::ClientInitializeError;

use crate::client::http;

/// An MCP server could not be reached, refused the connection or answered a request with an
/// error. Failures of single tool calls are not `McpError`s: the model gets them as error
/// results, and the chat goes on.
///
/// No variant shows a secret: URLs appear with their query values and passwords redacted, and
/// the `Debug` output describes the SDK's errors instead of printing them.
#[derive(thiserror::Error)]
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
        /// What the client saw: for HTTP the URL (redacted) and the cause, for stdio also the
        /// last lines of the server's stderr.
        message: String,
    },
    /// The server's process (stdio) ended before the session was open.
    #[error(
        "the MCP server `{server}` exited before the session opened ({status}){}",
        stderr_lines(stderr)
    )]
    Exited {
        /// The name given to the server.
        server: String,
        /// How it ended.
        status: std::process::ExitStatus,
        /// The last lines it wrote to stderr (see
        /// [`McpServer::stderr_tail_lines`](crate::McpServer::stderr_tail_lines)), each cut at
        /// [`McpServer::max_stderr_line`](crate::McpServer::max_stderr_line).
        stderr: Vec<String>,
    },
    /// The server (Streamable HTTP) redirected a request to another origin. The redirect was
    /// not followed, so neither the bearer token, the custom headers nor the request's body
    /// went there.
    #[error(
        "the MCP server `{server}` redirected a request from {from} to another origin, {to}; \
         it was not followed, so no credential went there"
    )]
    CrossOriginRedirect {
        /// The name given to the server.
        server: String,
        /// The origin that answered with the redirect (`https://host:port`).
        from: String,
        /// The origin it pointed to.
        to: String,
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
    /// Reconnecting a session that ended failed: every attempt of the
    /// [`ReconnectPolicy`](crate::ReconnectPolicy) (one for
    /// [`McpClient::reconnect`](crate::McpClient::reconnect) called while an automatic
    /// reconnect ran) failed. The client keeps its ended session and can be reconnected later.
    #[error(
        "the MCP server `{server}` could not be reconnected ({attempts} attempt(s)); the last \
         one failed: {last}"
    )]
    ReconnectFailed {
        /// The name given to the server.
        server: String,
        /// How many attempts were made.
        attempts: u32,
        /// Why the last one failed (the text of its [`McpError`]).
        last: String,
    },
    /// A request failed: the server answered with a JSON-RPC error or the connection closed.
    #[error("the MCP server `{server}` failed {what}: {}", describe_request(.source))]
    Request {
        /// The name given to the server.
        server: String,
        /// What it was asked.
        what: &'static str,
        /// The error.
        source: rmcp::ServiceError,
    },
    /// The server's answer went past a bound the client keeps (pages of a listing, entries).
    #[error("the MCP server `{server}` sent {what} past the client's limit of {limit}")]
    OverLimit {
        /// The name given to the server.
        server: String,
        /// What it sent.
        what: &'static str,
        /// The bound.
        limit: usize,
    },
    /// The OAuth flow failed (feature `auth`): discovery, registration, the login, the token
    /// exchange or the token store. The message holds no token.
    #[error("authorizing with the MCP server `{server}` failed: {message}")]
    Authorization {
        /// The name given to the server.
        server: String,
        /// What failed.
        message: String,
    },
    /// The request needs a capability the server or this session lacks (subscribing to a
    /// resource the server does not offer subscriptions for, roots not declared at connect).
    #[error("the MCP server `{server}`: {what}")]
    Unsupported {
        /// The name given to the server.
        server: String,
        /// What is not supported, and why.
        what: String,
    },
}

impl fmt::Debug for McpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidConfig(message) => f.debug_tuple("InvalidConfig").field(message).finish(),
            Self::Spawn {
                server,
                command,
                source,
            } => f
                .debug_struct("Spawn")
                .field("server", server)
                .field("command", command)
                .field("source", source)
                .finish(),
            Self::Handshake { server, message } => f
                .debug_struct("Handshake")
                .field("server", server)
                .field("message", message)
                .finish(),
            Self::Exited {
                server,
                status,
                stderr,
            } => f
                .debug_struct("Exited")
                .field("server", server)
                .field("status", status)
                .field("stderr", stderr)
                .finish(),
            Self::CrossOriginRedirect { server, from, to } => f
                .debug_struct("CrossOriginRedirect")
                .field("server", server)
                .field("from", from)
                .field("to", to)
                .finish(),
            Self::Timeout {
                server,
                what,
                after,
            } => f
                .debug_struct("Timeout")
                .field("server", server)
                .field("what", what)
                .field("after", after)
                .finish(),
            Self::ReconnectFailed {
                server,
                attempts,
                last,
            } => f
                .debug_struct("ReconnectFailed")
                .field("server", server)
                .field("attempts", attempts)
                .field("last", last)
                .finish(),
            // The SDK's error may hold a reqwest error, whose `Debug` prints the URL.
            Self::Request {
                server,
                what,
                source,
            } => f
                .debug_struct("Request")
                .field("server", server)
                .field("what", what)
                .field("source", &describe_request(source))
                .finish(),
            Self::OverLimit {
                server,
                what,
                limit,
            } => f
                .debug_struct("OverLimit")
                .field("server", server)
                .field("what", what)
                .field("limit", limit)
                .finish(),
            Self::Authorization { server, message } => f
                .debug_struct("Authorization")
                .field("server", server)
                .field("message", message)
                .finish(),
            Self::Unsupported { server, what } => f
                .debug_struct("Unsupported")
                .field("server", server)
                .field("what", what)
                .finish(),
        }
    }
}

/// The stderr lines of an error message, indented under it.
pub(crate) fn stderr_lines(lines: &[String]) -> String {
    if lines.is_empty() {
        return "; it wrote nothing to stderr".to_owned();
    }
    let mut text = "; the last lines of its stderr:".to_owned();
    for line in lines {
        text.push_str("\n  ");
        text.push_str(line);
    }
    text
}

/// The `WWW-Authenticate` challenge of a request the server refused for want of a scope (403,
/// `insufficient_scope`), if that is why it failed.
#[cfg(feature = "auth")]
pub(crate) fn insufficient_scope(error: &rmcp::ServiceError) -> Option<String> {
    use rmcp::transport::streamable_http_client::InsufficientScopeError;
    let rmcp::ServiceError::TransportSend(error) = error else {
        return None;
    };
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error.error.as_ref());
    while let Some(current) = source {
        if let Some(insufficient) = current.downcast_ref::<InsufficientScopeError>() {
            return Some(insufficient.www_authenticate_header.clone());
        }
        source = current.source();
    }
    None
}

/// The `WWW-Authenticate` challenge of a request the server refused for want of authorization
/// (401 after the session opened: a server that lets the handshake through), if that is why
/// it failed.
#[cfg(feature = "auth")]
pub(crate) fn authorization_required(error: &rmcp::ServiceError) -> Option<String> {
    use rmcp::transport::streamable_http_client::AuthRequiredError;
    let rmcp::ServiceError::TransportSend(error) = error else {
        return None;
    };
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error.error.as_ref());
    while let Some(current) = source {
        if let Some(required) = current.downcast_ref::<AuthRequiredError>() {
            return Some(required.www_authenticate_header.clone());
        }
        source = current.source();
    }
    None
}

/// A failed request as text: the JSON-RPC error's code and message, or the transport's cause.
pub(crate) fn describe_request(error: &rmcp::ServiceError) -> String {
    match error {
        rmcp::ServiceError::McpError(data) => format!(
            "error {}: {}",
            data.code.0,
            cut(&data.message, MAX_SERVER_TEXT)
        ),
        rmcp::ServiceError::TransportSend(error) => chain(error),
        rmcp::ServiceError::TransportClosed => "the connection to the server is closed".to_owned(),
        rmcp::ServiceError::UnexpectedResponse => {
            "the server answered with another kind of result".to_owned()
        }
        rmcp::ServiceError::Cancelled { reason } => match reason {
            Some(reason) => format!(
                "the request was cancelled: {}",
                cut(reason, MAX_SERVER_TEXT)
            ),
            None => "the request was cancelled".to_owned(),
        },
        rmcp::ServiceError::Timeout { timeout } => format!("no answer within {timeout:?}"),
        other => chain(other),
    }
}

/// An error and its causes as text ([`http::describe_chain`]), cut to [`MAX_SERVER_TEXT`]
/// with control characters shown escaped: a cause may quote the server (an HTTP error's body).
fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    cut(&http::describe_chain(error), MAX_SERVER_TEXT).into_owned()
}

/// The longest text of a server's own words (an error's message, a task's status) passed on
/// to the model, the user or a log: 8 KiB. A server can send 16 MiB in one message.
pub(crate) const MAX_SERVER_TEXT: usize = 8 * 1024;

/// A server's `text` as it may be shown: control characters but line breaks and tabs escaped,
/// cut to at most `max` bytes ([`llm_tools_core::untrusted::shown`]).
pub(crate) fn cut(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    llm_tools_core::untrusted::shown(text, max)
}

/// A failed handshake as text.
pub(crate) fn describe_handshake(error: &ClientInitializeError) -> String {
    match error {
        ClientInitializeError::ConnectionClosed(_) => {
            "the connection closed before the handshake finished".to_owned()
        }
        ClientInitializeError::TransportError { error, context } => {
            format!("{context}: {}", chain(error))
        }
        ClientInitializeError::JsonRpcError(data) => format!(
            "the server answered with error {}: {}",
            data.code.0,
            cut(&data.message, MAX_SERVER_TEXT)
        ),
        // The discover probe failing is how a server of 2025-11-25 or older answers; the
        // fallback's failure is the one to tell.
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => {
            describe_handshake(fallback)
        }
        ClientInitializeError::NoCompatibleProtocolVersion {
            client_supported,
            server_supported,
        } => {
            // The server's list is its own text: a few versions shown, cut and escaped.
            let list = |versions: &[rmcp::model::ProtocolVersion]| {
                const SHOWN: usize = 8;
                let mut shown = versions
                    .iter()
                    .take(SHOWN)
                    .map(|v| cut(&v.to_string(), 64).into_owned())
                    .collect::<Vec<_>>()
                    .join(", ");
                if versions.len() > SHOWN {
                    shown.push_str(&format!(" and {} more", versions.len() - SHOWN));
                }
                shown
            };
            format!(
                "no protocol version in common (this client: {}; the server: {})",
                list(client_supported),
                list(server_supported)
            )
        }
        ClientInitializeError::ExpectedInitResponse(_)
        | ClientInitializeError::ExpectedInitResult(_) => {
            "the server answered the handshake with another message than its result".to_owned()
        }
        ClientInitializeError::ConflictInitResponseId(..)
        | ClientInitializeError::UncorrelatedErrorResponse { .. } => {
            "the server answered the handshake under another request id".to_owned()
        }
        ClientInitializeError::Cancelled => "the handshake was cancelled".to_owned(),
        other => chain(other),
    }
}

/// Whether the handshake failed because the connection ended (the server's output closed, or
/// writing to it failed): for a stdio server, its exit is the cause.
pub(crate) fn connection_ended(error: &ClientInitializeError) -> bool {
    match error {
        ClientInitializeError::ConnectionClosed(_)
        | ClientInitializeError::TransportError { .. } => true,
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => connection_ended(fallback),
        _ => false,
    }
}

/// The refused cross-origin redirect behind a failed handshake, if that is why it failed.
pub(crate) fn refused_redirect(
    error: &ClientInitializeError,
) -> Option<&http::CrossOriginRedirect> {
    match error {
        ClientInitializeError::TransportError { error, .. } => http::refused_redirect(error),
        ClientInitializeError::LegacyFallbackFailed { discover, fallback } => {
            refused_redirect(fallback).or_else(|| refused_redirect(discover))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exit_shows_its_stderr_lines_indented() {
        assert_eq!(
            stderr_lines(&["one".into(), "two".into()]),
            "; the last lines of its stderr:\n  one\n  two"
        );
        assert_eq!(stderr_lines(&[]), "; it wrote nothing to stderr");
    }

    #[test]
    fn handshake_failures_read_without_rust_types() {
        let closed = ClientInitializeError::ConnectionClosed("discover response".into());
        assert_eq!(
            describe_handshake(&closed),
            "the connection closed before the handshake finished"
        );
        let both = ClientInitializeError::LegacyFallbackFailed {
            discover: Box::new(ClientInitializeError::Cancelled),
            fallback: Box::new(closed),
        };
        assert!(connection_ended(&both));
        assert_eq!(
            describe_handshake(&both),
            "the connection closed before the handshake finished"
        );
        let transport = ClientInitializeError::TransportError {
            error: rmcp::transport::DynamicTransportError::from_parts(
                "llm_tools_mcp::Observed<rmcp::transport::Worker<X>>",
                std::any::TypeId::of::<()>(),
                Box::new(std::io::Error::other("broken pipe")),
            ),
            context: "send initialize request".into(),
        };
        assert_eq!(
            describe_handshake(&transport),
            "send initialize request: broken pipe"
        );
    }
}
