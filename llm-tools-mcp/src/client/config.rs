//! [`McpServer`], the client's settings for one server: how to reach it (a command over stdio,
//! or a Streamable HTTP URL), how the session opens ([`Lifecycle`]), which of its tools a chat
//! sees and how, how questions are answered, and the limits (timeouts, stderr, redirects,
//! reconnects, attachments of a result). `McpServer::connect` (next to `McpClient::connect`) turns it into a client.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use llm_tools_core::{Answer, Question};

use super::content::AttachmentLimits;
use super::drift::{DriftDecision, DriftHandler, ToolDrift};
use super::http::{self, DEFAULT_MAX_REDIRECTS};
use super::reconnect::ReconnectPolicy;
use super::roots::Root;
use super::sampling::Sampling;
use super::stdio::{DEFAULT_MAX_STDERR_LINE, DEFAULT_STDERR_TAIL_LINES};
use crate::elicitation::ElicitationHandler;

/// How the client opens a session.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Lifecycle {
    /// Try the 2026-07-28 `server/discover` first and fall back to the `initialize` handshake
    /// (2025-11-25 and older) when the server does not know it: works with every server.
    #[default]
    Auto,
    /// Only the `initialize` handshake, for servers up to 2025-11-25.
    Initialize,
    /// Only the 2026-07-28 stateless protocol (`server/discover`).
    Discover,
}

/// Its `Debug` shows no secret: environment variables and headers by name only, the bearer
/// token as `<redacted>`, the URL with its query values and password redacted. Equal
/// transports reach the same server the same way.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum Transport {
    Stdio {
        command: OsString,
        args: Vec<OsString>,
        env: Vec<(OsString, OsString)>,
        cwd: Option<PathBuf>,
    },
    Http {
        url: String,
        headers: Vec<(String, String)>,
        bearer: Option<String>,
    },
}

/// A stdio server's arguments as `Debug` shows them: a secret passed on the command line
/// (`--api-key=…`, `-psecret`, or the word after a flag) must not show, so only plain flags
/// (`-y`, `--read-only`) show, a flag's `=value` shows as `<redacted>`, and every other
/// argument shows as `<redacted>`.
fn shown_args(args: &[OsString]) -> Vec<String> {
    let plain_flag = |flag: &str| {
        let name = flag.strip_prefix("--").or_else(|| flag.strip_prefix('-'));
        name.is_some_and(|name| {
            name.starts_with(|c: char| c.is_ascii_alphabetic())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && (flag.starts_with("--") || name.len() == 1)
        })
    };
    args.iter()
        .map(|arg| {
            let arg = arg.to_string_lossy();
            match arg.split_once('=') {
                Some((flag, _)) if plain_flag(flag) => format!("{flag}=<redacted>"),
                None if plain_flag(&arg) => arg.into_owned(),
                _ => "<redacted>".to_owned(),
            }
        })
        .collect()
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let redacted = |name: String| format!("{name}=<redacted>");
        match self {
            Self::Stdio {
                command,
                args,
                env,
                cwd,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", &shown_args(args))
                .field(
                    "env",
                    &env.iter()
                        .map(|(key, _)| redacted(key.to_string_lossy().into_owned()))
                        .collect::<Vec<_>>(),
                )
                .field("cwd", cwd)
                .finish(),
            Self::Http {
                url,
                headers,
                bearer,
            } => f
                .debug_struct("Http")
                .field("url", &http::redacted_url(url))
                .field(
                    "headers",
                    &headers
                        .iter()
                        .map(|(name, _)| redacted(name.clone()))
                        .collect::<Vec<_>>(),
                )
                .field("bearer", &bearer.as_ref().map(|_| "<redacted>"))
                .finish(),
        }
    }
}

/// An MCP server to connect to: the transport, and what its tools look like in a chat.
///
/// ```no_run
/// use llm_tools_mcp::McpServer;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// // A local server, started as a child process and spoken to over stdio.
/// let files = McpServer::stdio("npx")
///     .args(["-y", "@modelcontextprotocol/server-filesystem", "/srv/docs"])
///     .deny(["write_file", "move_file"])
///     .connect("files")
///     .await?;
///
/// // A remote one over Streamable HTTP.
/// let tickets = McpServer::http("https://mcp.example.com/mcp")
///     .bearer_token(std::env::var("TICKETS_TOKEN")?)
///     .needs_approval(true)
///     .connect("tickets")
///     .await?;
/// # let _ = (files, tickets);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
#[must_use = "an McpServer does nothing until `connect` is awaited"]
pub struct McpServer {
    pub(crate) transport: Transport,
    pub(crate) lifecycle: Lifecycle,
    pub(crate) description: Option<String>,
    pub(crate) allow: Option<Vec<String>>,
    pub(crate) deny: Vec<String>,
    pub(crate) defer: bool,
    pub(crate) needs_approval: bool,
    pub(crate) max_run_time: Option<Duration>,
    pub(crate) timeout: Duration,
    pub(crate) on_elicitation: Option<ElicitationHandler>,
    pub(crate) max_stderr_line: usize,
    pub(crate) stderr_tail_lines: usize,
    pub(crate) max_redirects: usize,
    pub(crate) attachments: AttachmentLimits,
    pub(crate) reconnect: ReconnectPolicy,
    pub(crate) on_tool_drift: Option<DriftHandler>,
    /// The roots declared at connect (`None`: the client declares no roots capability).
    pub(crate) roots: Option<Vec<Root>>,
    pub(crate) sampling: Option<Sampling>,
    pub(crate) on_resource_updated: Option<ResourceUpdatedHandler>,
    #[cfg(feature = "auth")]
    pub(crate) oauth: Option<super::auth::OAuth>,
    /// Whether credentials may go over plain http to a host that is not loopback.
    pub(crate) allow_plain_http: bool,
}

/// What the application does when a subscribed resource changed.
#[derive(Clone)]
pub(crate) struct ResourceUpdatedHandler(pub(crate) Arc<dyn Fn(&str) + Send + Sync>);

impl fmt::Debug for ResourceUpdatedHandler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ResourceUpdatedHandler")
    }
}

impl McpServer {
    fn new(transport: Transport) -> Self {
        Self {
            transport,
            lifecycle: Lifecycle::Auto,
            description: None,
            allow: None,
            deny: Vec::new(),
            defer: false,
            needs_approval: false,
            max_run_time: None,
            timeout: Duration::from_secs(30),
            on_elicitation: None,
            max_stderr_line: DEFAULT_MAX_STDERR_LINE,
            stderr_tail_lines: DEFAULT_STDERR_TAIL_LINES,
            max_redirects: DEFAULT_MAX_REDIRECTS,
            attachments: AttachmentLimits::default(),
            reconnect: ReconnectPolicy::never(),
            on_tool_drift: None,
            roots: None,
            sampling: None,
            on_resource_updated: None,
            allow_plain_http: false,
            #[cfg(feature = "auth")]
            oauth: None,
        }
    }

    /// A server started as `command` (looked up on `PATH`), spoken to over its stdin and stdout.
    /// Its stderr goes to the `llm_tools::mcp` tracing target at debug level, line by line, each
    /// cut at [`max_stderr_line`](Self::max_stderr_line); the last
    /// [`stderr_tail_lines`](Self::stderr_tail_lines) are kept for errors and
    /// [`McpClient::stderr_tail`](crate::McpClient::stderr_tail). The process is stopped when the
    /// last handle on the client is dropped (or on [`McpClient::close`](crate::McpClient::close));
    /// a process that exits before the session opens is an
    /// [`McpError::Exited`](crate::McpError::Exited) with its exit status and those last lines.
    pub fn stdio(command: impl Into<OsString>) -> Self {
        Self::new(Transport::Stdio {
            command: command.into(),
            args: Vec::new(),
            env: Vec::new(),
            cwd: None,
        })
    }

    /// A server at a Streamable HTTP endpoint (`https://host/mcp`). Redirects are followed only
    /// within the URL's origin (at most [`max_redirects`](Self::max_redirects)): one to another
    /// origin is an [`McpError::CrossOriginRedirect`](crate::McpError::CrossOriginRedirect) at
    /// connect (an error result for a call), and nothing, neither the bearer token, the headers nor
    /// the body, goes there. Errors and `Debug` show the URL with its query values and password
    /// redacted.
    pub fn http(url: impl Into<String>) -> Self {
        Self::new(Transport::Http {
            url: url.into(),
            headers: Vec::new(),
            bearer: None,
        })
    }

    /// Adds an argument to the command (stdio).
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        if let Transport::Stdio { args, .. } = &mut self.transport {
            args.push(arg.into());
        }
        self
    }

    /// Adds arguments to the command (stdio).
    pub fn args<I, A>(mut self, more: I) -> Self
    where
        I: IntoIterator<Item = A>,
        A: Into<OsString>,
    {
        if let Transport::Stdio { args, .. } = &mut self.transport {
            args.extend(more.into_iter().map(Into::into));
        }
        self
    }

    /// Sets an environment variable for the command (stdio); the rest of the environment is
    /// inherited.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        if let Transport::Stdio { env, .. } = &mut self.transport {
            env.push((key.into(), value.into()));
        }
        self
    }

    /// Sets the command's working directory (stdio).
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        if let Transport::Stdio { cwd, .. } = &mut self.transport {
            *cwd = Some(dir.into());
        }
        self
    }

    /// Adds a header to every HTTP request (Streamable HTTP).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let Transport::Http { headers, .. } = &mut self.transport {
            headers.push((name.into(), value.into()));
        }
        self
    }

    /// Sends `Authorization: Bearer <token>` with every HTTP request (Streamable HTTP). The
    /// token never appears in logs or errors.
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        if let Transport::Http { bearer, .. } = &mut self.transport {
            *bearer = Some(token.into());
        }
        self
    }

    /// Lets credentials (a bearer token, an `Authorization` header, OAuth's tokens) go over
    /// plain `http://` to a server whose host is not loopback (one on a network the
    /// application trusts, which serves no TLS). Without it such a server is not reached: the
    /// token would cross the network readable by anyone on the path. https, and http to
    /// `localhost` or a loopback address, need nothing.
    pub fn allow_plain_http(mut self) -> Self {
        self.allow_plain_http = true;
        self
    }

    /// Refuses credentials over plain http to a host that is not loopback, unless allowed.
    pub(crate) fn check_plain_http(&self) -> Result<(), Box<crate::error::McpError>> {
        let Transport::Http {
            url,
            headers,
            bearer,
        } = &self.transport
        else {
            return Ok(());
        };
        #[cfg(feature = "auth")]
        let oauth = self.oauth.is_some();
        #[cfg(not(feature = "auth"))]
        let oauth = false;
        let credentials = bearer.is_some()
            || oauth
            || headers
                .iter()
                .any(|(name, _)| name.eq_ignore_ascii_case("authorization"));
        let plain_off_loopback = reqwest::Url::parse(url).is_ok_and(|parsed| {
            parsed.scheme() == "http"
                && !parsed
                    .host_str()
                    .is_some_and(crate::elicitation::is_loopback)
        });
        if credentials && plain_off_loopback && !self.allow_plain_http {
            return Err(Box::new(crate::error::McpError::InvalidConfig(format!(
                "the server's URL `{}` is plain http to a host that is not loopback, and its \
                 token would cross the network readable by anyone on the path: use https, or \
                 allow it for a trusted network (`McpServer::allow_plain_http`)",
                http::redacted_url(url)
            ))));
        }
        Ok(())
    }

    /// How the session is opened ([`Lifecycle::Auto`] by default).
    pub fn lifecycle(mut self, lifecycle: Lifecycle) -> Self {
        self.lifecycle = lifecycle;
        self
    }

    /// The description of the server's namespace the model sees; by default the server's
    /// instructions, else its own description, else "Tools of the MCP server `name`".
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Only these tools (by the server's names) join the chat.
    pub fn allow<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allow = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// These tools (by the server's names) never join the chat.
    pub fn deny<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.deny.extend(names.into_iter().map(Into::into));
        self
    }

    /// Defers every tool of the server: the model finds them through the chat's tool search
    /// instead of seeing them all in every request.
    pub fn defer(mut self, defer: bool) -> Self {
        self.defer = defer;
        self
    }

    /// Makes every call to the server's tools wait for the user's approval.
    pub fn needs_approval(mut self, needs_approval: bool) -> Self {
        self.needs_approval = needs_approval;
        self
    }

    /// The longest a call may run before the chat cancels it (and the server is sent
    /// `notifications/cancelled`); by default the chat's own `max_run_time`.
    pub fn max_run_time(mut self, max_run_time: Duration) -> Self {
        self.max_run_time = Some(max_run_time);
        self
    }

    /// Answers the server's questions (elicitations) in place, with `handler`, while the call
    /// that asked waits: for an application that can ask its user at once (a terminal, an
    /// open UI) or answer by rule. Without it, a question pauses the chat like any other
    /// (`pending_questions`, `answer`, `complete`) and the server's call is run again once it
    /// is answered. Fields the answer leaves out take their schema's `default`.
    ///
    /// The handler sees one question at a time per session: another question from the server
    /// while one waits is answered `cancel` without reaching the handler. A question the server
    /// cancels, or whose session ends, drops the handler's future.
    ///
    /// ```no_run
    /// use llm_tools_core::Answer;
    /// use llm_tools_mcp::McpServer;
    /// use serde_json::json;
    ///
    /// # async fn run() -> Result<(), llm_tools_mcp::McpError> {
    /// let deploys = McpServer::http("https://mcp.example.com/mcp")
    ///     .on_elicitation(|question| async move {
    ///         println!("{}", question.message());
    ///         Answer::accept(json!({})) // the form's defaults
    ///     })
    ///     .connect("deploys")
    ///     .await?;
    /// # let _ = deploys;
    /// # Ok(()) }
    /// ```
    pub fn on_elicitation<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(Question) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Answer> + Send + 'static,
    {
        self.on_elicitation = Some(ElicitationHandler(Arc::new(move |question| {
            Box::pin(handler(question))
        })));
        self
    }

    /// How long the handshake and each listing of the tools may take (30 s by default).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The longest line of the server's stderr (stdio) the client keeps and logs, in bytes
    /// ([`DEFAULT_MAX_STDERR_LINE`], 4 KiB, by default). A longer line is cut there and says how
    /// many bytes were cut; the rest is read and dropped, so a server that writes without
    /// newlines costs no more memory than this.
    ///
    /// ```
    /// use llm_tools_mcp::McpServer;
    ///
    /// let server = McpServer::stdio("my-mcp-server")
    ///     .max_stderr_line(16 * 1024)
    ///     .stderr_tail_lines(50);
    /// # let _ = server;
    /// ```
    pub fn max_stderr_line(mut self, bytes: usize) -> Self {
        self.max_stderr_line = bytes;
        self
    }

    /// How many of the last stderr lines (stdio) the client keeps for
    /// [`McpError::Exited`](crate::McpError::Exited), handshake errors and
    /// [`McpClient::stderr_tail`](crate::McpClient::stderr_tail) ([`DEFAULT_STDERR_TAIL_LINES`],
    /// 16, by default). Every line goes to the log either way.
    pub fn stderr_tail_lines(mut self, lines: usize) -> Self {
        self.stderr_tail_lines = lines;
        self
    }

    /// How many redirects within the server's origin a request follows (Streamable HTTP;
    /// [`DEFAULT_MAX_REDIRECTS`], 10, by default). A redirect to another origin is never
    /// followed.
    pub fn max_redirects(mut self, redirects: usize) -> Self {
        self.max_redirects = redirects;
        self
    }

    /// The most attachments (images, audio, blobs of embedded resources) one result of the
    /// server's tools keeps ([`DEFAULT_MAX_ATTACHMENTS`](crate::DEFAULT_MAX_ATTACHMENTS), 8, by default), and one of its
    /// prompts, over all its messages ([`McpClient::get_prompt`](crate::McpClient::get_prompt)). Each attachment stays
    /// in the chat's history and is sent to the model with every later request, so a server
    /// that returns many would have each of them carry all of them. One past it is never
    /// decoded: it is left out, the result's text tells the model so (its kind, media type and
    /// size, the limit and this option), and a warning is logged on the `llm_tools::mcp`
    /// target. The rest of the result (its text, the attachments within the limits) is kept.
    ///
    /// ```
    /// use llm_tools_mcp::McpServer;
    ///
    /// // A document server that returns every page of a PDF as an image.
    /// let pages = McpServer::stdio("pdf-pages-server")
    ///     .max_attachments(32)
    ///     .max_attachment_bytes(16 * 1024 * 1024);
    /// # let _ = pages;
    /// ```
    pub fn max_attachments(mut self, count: usize) -> Self {
        self.attachments.count = count;
        self
    }

    /// The most bytes of attachments, decoded, one result of the server's tools keeps (one of
    /// its prompts too), over all its attachments ([`DEFAULT_MAX_ATTACHMENT_BYTES`](crate::DEFAULT_MAX_ATTACHMENT_BYTES), 5 MiB, by default). The size is
    /// read from the base64 text before anything is decoded, so an attachment that would pass
    /// it is never decoded: it is left out, as one past
    /// [`max_attachments`](Self::max_attachments) is (the model reads a line saying so, and a
    /// warning is logged). Attachments are kept in the order the server sent them, while they
    /// fit. The chat then holds at most
    /// [`ToolOptions::max_chat_attachment_bytes`](llm_tools_core::chat::ToolOptions::max_chat_attachment_bytes)
    /// (16 MiB by default) of attachments over all its tool results; a server allowed more
    /// than that per result needs the chat's limit raised too.
    pub fn max_attachment_bytes(mut self, bytes: usize) -> Self {
        self.attachments.bytes = bytes;
        self
    }

    /// Whether a call that finds the session ended reconnects by itself ([`ReconnectPolicy::never`]
    /// by default: the call is an error result for the model, and
    /// [`McpClient::reconnect`](crate::McpClient::reconnect) reconnects). See [`ReconnectPolicy`]
    /// for the backoff, the bounded attempts and what calls see meanwhile.
    ///
    /// ```
    /// use llm_tools_mcp::{McpServer, ReconnectPolicy};
    ///
    /// let server = McpServer::stdio("my-mcp-server").reconnect(ReconnectPolicy::backoff());
    /// # let _ = server;
    /// ```
    pub fn reconnect(mut self, policy: ReconnectPolicy) -> Self {
        self.reconnect = policy;
        self
    }

    /// Decides what becomes of a tool whose definition (description, input or output schema,
    /// annotations, …) the server changes during the session, after it announced a change of
    /// its list: a rewritten description is a known way for a server to slip instructions to
    /// the model, so a change is never adopted silently. Without a handler every such change is
    /// refused ([`DriftDecision::Refuse`]): the tool leaves the chat, and a warning on the
    /// `llm_tools::mcp` target names the tool and the fields that changed. Tools the server
    /// adds are offered as usual. After a reconnect the client makes by itself (the connection
    /// ended) the session's trust carries over and a changed tool is drift as well, so a
    /// server cannot swap a tool by dropping its connection; after one the application asks
    /// for, the new session's list is adopted (changed tools are warned about, see
    /// [`McpClient::reconnect`](crate::McpClient::reconnect)).
    ///
    /// ```
    /// use llm_tools_mcp::{DriftDecision, McpServer};
    ///
    /// let server = McpServer::stdio("my-mcp-server").on_tool_drift(|drift| {
    ///     // A new title is harmless; anything else waits for a person.
    ///     if drift.changed == ["title"] { DriftDecision::Accept } else { DriftDecision::Ask }
    /// });
    /// # let _ = server;
    /// ```
    pub fn on_tool_drift<F>(mut self, decide: F) -> Self
    where
        F: Fn(&ToolDrift) -> DriftDecision + Send + Sync + 'static,
    {
        self.on_tool_drift = Some(DriftHandler(Arc::new(decide)));
        self
    }

    /// Declares the roots capability with these roots (`file://` URIs of the folders the
    /// server may work in, each with an optional name): the server asks for them with
    /// `roots/list`, and [`McpClient::set_roots`](crate::McpClient::set_roots) changes them
    /// and tells the server (`notifications/roots/list_changed`). Without it the client
    /// declares no roots. (2026-07-28 deprecates roots; servers of that version do not ask.)
    ///
    /// ```
    /// use llm_tools_mcp::{McpServer, Root};
    ///
    /// let server = McpServer::stdio("my-mcp-server")
    ///     .roots([Root::new("file:///srv/project").with_name("project")]);
    /// # let _ = server;
    /// ```
    pub fn roots<I>(mut self, roots: I) -> Self
    where
        I: IntoIterator<Item = Root>,
    {
        self.roots = Some(roots.into_iter().collect());
        self
    }

    /// Declares the sampling capability: the server's `sampling/createMessage` requests are
    /// answered by a model, behind the approval hook and the token limit of `sampling` (see
    /// [`Sampling`]). Without it the client declares no sampling and servers cannot ask.
    pub fn sampling(mut self, sampling: Sampling) -> Self {
        self.sampling = Some(sampling);
        self
    }

    /// Called with a resource's URI when the server says a resource the client subscribed to
    /// ([`McpClient::subscribe`](crate::McpClient::subscribe)) changed
    /// (`notifications/resources/updated`); an update of any other URI is dropped (a server's
    /// URI may be of any scheme). It runs on the session's reading task: keep it short (send
    /// the URI to a channel, say).
    pub fn on_resource_updated<F>(mut self, updated: F) -> Self
    where
        F: Fn(&str) + Send + Sync + 'static,
    {
        self.on_resource_updated = Some(ResourceUpdatedHandler(Arc::new(updated)));
        self
    }

    /// Authorizes with OAuth 2.1, as the MCP authorization spec describes (Streamable HTTP;
    /// feature `auth`): see [`OAuth`](crate::OAuth). Replaces a
    /// [`bearer_token`](Self::bearer_token).
    #[cfg(feature = "auth")]
    pub fn oauth(mut self, oauth: super::auth::OAuth) -> Self {
        self.oauth = Some(oauth);
        if let Transport::Http { bearer, .. } = &mut self.transport {
            *bearer = None;
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A token never goes over plain http to a host that is not loopback unless the
    /// application allows it: such a server is refused before anything is sent.
    #[test]
    fn a_token_over_plain_http_off_loopback_is_refused_unless_allowed() {
        let lan = "http://10.1.2.3:8080/mcp";
        let refused = McpServer::http(lan)
            .bearer_token("tok-canary")
            .check_plain_http()
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("plain http") && refused.contains("allow_plain_http"),
            "{refused}"
        );
        assert!(!refused.contains("tok-canary"), "{refused}");
        assert!(
            McpServer::http(lan)
                .header("Authorization", "Basic dXNlcjpwdw==")
                .check_plain_http()
                .is_err()
        );
        for allowed in [
            McpServer::http(lan).bearer_token("t").allow_plain_http(),
            McpServer::http("https://mcp.example.com/mcp").bearer_token("t"),
            McpServer::http("http://127.0.0.1:8080/mcp").bearer_token("t"),
            McpServer::http("http://localhost:8080/mcp").bearer_token("t"),
            McpServer::http(lan),
        ] {
            assert!(allowed.check_plain_http().is_ok());
        }
    }

    /// A secret given on a stdio server's command line, as a flag's value or as a word of
    /// its own, or in its environment, never shows in `Debug`.
    #[test]
    fn debug_shows_no_secret_of_the_command_line() {
        let server = McpServer::stdio("server")
            .args([
                "--api-key=sk-canary-1",
                "--token",
                "sk-canary-2",
                "-y",
                "-psk-canary-4",
                "-HAuthorization:sk-canary-5",
                "--token:sk-canary-6",
            ])
            .env("API_KEY", "sk-canary-3");
        let shown = format!("{server:?}");
        assert!(!shown.contains("sk-canary"), "{shown}");
        assert!(shown.contains("--api-key=<redacted>"), "{shown}");
        assert!(shown.contains("\"-y\""), "{shown}");
    }
}
