//! A [`ToolServer`](crate::ToolServer) on Streamable HTTP, and who may reach it: [`HttpOptions`].
//!
//! Every request is checked before MCP sees it, in this order:
//!
//! 1. **Host** (against DNS rebinding): loopback names (`localhost`, `127.0.0.1`, `::1`) from
//!    a client on this machine, and the listener's own address, are allowed; a server bound to
//!    `0.0.0.0` serves the LAN only for the hosts the application names
//!    ([`HttpOptions::allow_host`]) or with [`HttpOptions::allow_any_host`]. Others get `403`,
//!    a client elsewhere naming a loopback name among them (it reached the server through
//!    another address).
//! 2. **Origin**: a request carrying an `Origin` header (a browser's) gets `403` unless the
//!    origin is allowed ([`HttpOptions::allow_origin`]); none is by default.
//! 3. **Path**: the one MCP endpoint (`/mcp` unless [`HttpOptions::with_path`]); `404`
//!    elsewhere.
//! 4. **Authorization**, when configured: bearer tokens ([`HttpOptions::with_bearer_token`])
//!    and/or the application's hook over the request's headers
//!    ([`HttpOptions::with_authorization`]). Refused requests get `401` with
//!    `WWW-Authenticate: Bearer …` (with `resource_metadata="…"` when
//!    [`HttpOptions::with_resource_metadata`] names the protected-resource metadata, as the
//!    MCP authorization spec describes), or `403` with `error="insufficient_scope"`; a hook
//!    that decides nothing (past its time, or panicking) gets `503` with `Retry-After`. The
//!    principal a request is granted as owns the tasks and call states it creates.
//!
//! The connections and sessions are bounded as the `connections` module describes (a
//! connection limit, header and idle timeouts, a session limit; accept errors never end
//! serving).

use std::future::Future;
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::FutureExt as _;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::http::{HeaderMap, HeaderValue, Request, Response, StatusCode, header};
use llm_tools_core::BoxFuture;
use rmcp::ServerHandler;
use rmcp::transport::streamable_http_server::session::SessionManager as _;

use super::connections::{
    Activity, CappedSessions, ConnectionLimits, DEFAULT_BODY_READ_TIMEOUT,
    DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_EVENT_STREAM_LIFETIME, DEFAULT_MAX_SESSIONS, DEFAULT_RESUME_WINDOW,
    DEFAULT_SESSION_IDLE_TIMEOUT, DEFAULT_WRITE_STALL_TIMEOUT, Opener, Place, Timeouts, Tracked,
    Watched, accept_forever, as_opener, share_of,
};
use super::state::same_secret;
use crate::error::McpError;

/// The path of the MCP endpoint unless [`HttpOptions::with_path`] says otherwise.
pub const DEFAULT_MCP_PATH: &str = "/mcp";

/// The largest request body a client may send unless
/// [`HttpOptions::with_max_request_body_bytes`] says otherwise: 4 MiB (larger ones get `413`).
pub const DEFAULT_MAX_REQUEST_BODY_BYTES: usize = 4 * 1024 * 1024;

/// The most JSON values (objects, arrays, strings, numbers, …, each counted) a request may hold
/// unless [`HttpOptions::with_max_request_json_values`] says otherwise: 262,144, one for each
/// 16 bytes of [`DEFAULT_MAX_REQUEST_BODY_BYTES`]. A parsed value costs some 70 bytes, so a
/// body of `[0,0,…]` would otherwise take 35 times its size in memory; past the limit the
/// request gets `413` unparsed. Only bodies at least as long as the limit are counted.
pub const DEFAULT_MAX_REQUEST_JSON_VALUES: usize = 1 << 18;

/// How long the application's authorization hook
/// ([`HttpOptions::with_authorization`]) may take to decide about a request unless
/// [`HttpOptions::with_authorization_timeout`] says otherwise: 30 s. Past it the request gets
/// `503` (with `Retry-After`), as when the hook panics, and the connection's timeouts count
/// again.
pub const DEFAULT_AUTHORIZATION_TIMEOUT: Duration = Duration::from_secs(30);

/// What the application's authorization decides about a request.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Access {
    /// The request goes on, from `principal` (who owns the tasks and calls it starts).
    Granted {
        /// Who the request comes from (a user or client id; never a secret).
        principal: String,
    },
    /// `401`: no credentials, or credentials that are not valid.
    Unauthorized,
    /// `403`: valid credentials without the scope the server needs.
    InsufficientScope {
        /// The scope the request needs (sent in `WWW-Authenticate`).
        scope: String,
    },
}

impl Access {
    /// The request goes on, from `principal`.
    pub fn granted(principal: impl Into<String>) -> Self {
        Access::Granted {
            principal: principal.into(),
        }
    }

    /// The request lacks `scope`.
    pub fn insufficient_scope(scope: impl Into<String>) -> Self {
        Access::InsufficientScope {
            scope: scope.into(),
        }
    }
}

/// The application's authorization hook, boxed.
type Authorizer = Arc<dyn Fn(&HeaderMap) -> BoxFuture<'static, Access> + Send + Sync>;

/// Who a request was granted as; the request's extensions carry it to the MCP handlers.
#[derive(Clone, Debug)]
pub(super) struct Principal(pub(super) String);

/// Which values of a header a check lets through.
#[derive(Clone, Debug)]
enum Allowed {
    Listed(Vec<String>),
    Any,
}

/// How a [`ToolServer`](crate::ToolServer) is served over HTTP: the endpoint's path, the
/// hosts and origins allowed, authorization, and the limits on requests. The defaults serve
/// loopback clients only, with no browser origin, at `/mcp`, without authorization.
///
/// ```no_run
/// use llm_tools_core::tool;
/// use llm_tools_mcp::{HttpOptions, ToolServer};
///
/// /// Gets current weather for a location
/// #[tool]
/// async fn weather(city: String) -> String {
///     format!("15°C in {city}")
/// }
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// // On every interface, reached as `tools.lan`, for clients holding the token.
/// let options = HttpOptions::new()
///     .allow_host("tools.lan")
///     .with_bearer_token("ci", std::env::var("TOOLS_TOKEN")?);
/// let listener = tokio::net::TcpListener::bind("0.0.0.0:8080").await?;
/// ToolServer::new("weather").with_tools(Weather)?.serve_http_with(listener, options).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct HttpOptions {
    path: String,
    hosts: Allowed,
    origins: Allowed,
    /// Principals and their tokens.
    tokens: Vec<(String, String)>,
    authorizer: Option<Authorizer>,
    authorization_timeout: Duration,
    resource_metadata: Option<String>,
    max_request_body_bytes: usize,
    max_request_json_values: usize,
    max_connections: usize,
    /// `None`: one client's share of the connection limit (`share_of`).
    max_connections_per_peer: Option<usize>,
    header_read_timeout: Duration,
    body_read_timeout: Duration,
    idle_timeout: Duration,
    write_stall_timeout: Duration,
    max_sessions: usize,
    /// `None`: one principal's share of the session limit (`share_of`).
    max_sessions_per_principal: Option<usize>,
    session_idle_timeout: Duration,
    max_event_stream_lifetime: Duration,
    resume_window: Duration,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Tokens are secrets: only whose they are shows.
        let principals: Vec<&str> = self.tokens.iter().map(|(p, _)| p.as_str()).collect();
        f.debug_struct("HttpOptions")
            .field("path", &self.path)
            .field("hosts", &self.hosts)
            .field("origins", &self.origins)
            .field("bearer_tokens_of", &principals)
            .field("authorization_hook", &self.authorizer.is_some())
            .field("authorization_timeout", &self.authorization_timeout)
            .field("resource_metadata", &self.resource_metadata)
            .field("max_request_body_bytes", &self.max_request_body_bytes)
            .field("max_request_json_values", &self.max_request_json_values)
            .field("max_connections", &self.max_connections)
            .field("max_connections_per_peer", &self.connections_per_peer())
            .field("header_read_timeout", &self.header_read_timeout)
            .field("body_read_timeout", &self.body_read_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("write_stall_timeout", &self.write_stall_timeout)
            .field("max_sessions", &self.max_sessions)
            .field("max_sessions_per_principal", &self.sessions_per_principal())
            .field("session_idle_timeout", &self.session_idle_timeout)
            .field("max_event_stream_lifetime", &self.max_event_stream_lifetime)
            .field("resume_window", &self.resume_window)
            .finish()
    }
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl HttpOptions {
    /// The defaults: `/mcp`, loopback hosts, no browser origin, no authorization, the limits'
    /// defaults.
    pub fn new() -> Self {
        Self {
            path: DEFAULT_MCP_PATH.to_owned(),
            hosts: Allowed::Listed(Vec::new()),
            origins: Allowed::Listed(Vec::new()),
            tokens: Vec::new(),
            authorizer: None,
            authorization_timeout: DEFAULT_AUTHORIZATION_TIMEOUT,
            resource_metadata: None,
            max_request_body_bytes: DEFAULT_MAX_REQUEST_BODY_BYTES,
            max_request_json_values: DEFAULT_MAX_REQUEST_JSON_VALUES,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_connections_per_peer: None,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            write_stall_timeout: DEFAULT_WRITE_STALL_TIMEOUT,
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_sessions_per_principal: None,
            session_idle_timeout: DEFAULT_SESSION_IDLE_TIMEOUT,
            max_event_stream_lifetime: DEFAULT_MAX_EVENT_STREAM_LIFETIME,
            resume_window: DEFAULT_RESUME_WINDOW,
        }
    }

    /// The MCP endpoint's path (`/mcp` by default); every other path gets `404`.
    #[must_use]
    pub fn with_path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// Allows a `Host` header value, from any client, besides the loopback names (from
    /// clients on this machine) and the listener's address:
    /// a name (`tools.lan`) or an address (`192.168.1.20`), with a port to allow only that
    /// port (`tools.lan:8080`). A server bound to `0.0.0.0` needs it to serve its LAN.
    #[must_use]
    pub fn allow_host(mut self, host: impl Into<String>) -> Self {
        if let Allowed::Listed(hosts) = &mut self.hosts {
            hosts.push(host.into());
        }
        self
    }

    /// Accepts any `Host` header. Only behind a proxy that checks it: without the check a
    /// web page can reach the server through DNS rebinding.
    #[must_use]
    pub fn allow_any_host(mut self) -> Self {
        self.hosts = Allowed::Any;
        self
    }

    /// Lets browsers on `origin` (`https://app.example.com`, exactly as browsers send the
    /// `Origin` header; `null` for `Origin: null`) reach the server. No origin is allowed by
    /// default: a request with an `Origin` header gets `403`.
    #[must_use]
    pub fn allow_origin(mut self, origin: impl Into<String>) -> Self {
        if let Allowed::Listed(origins) = &mut self.origins {
            origins.push(origin.into());
        }
        self
    }

    /// Lets a web page on any origin reach the server (with authorization, say).
    #[must_use]
    pub fn allow_any_origin(mut self) -> Self {
        self.origins = Allowed::Any;
        self
    }

    /// Requires authorization, and grants requests that send `Authorization: Bearer {token}`
    /// as `principal`. Give one per client; tokens are compared in constant time and never
    /// shown (`Debug` lists the principals only).
    #[must_use]
    pub fn with_bearer_token(
        mut self,
        principal: impl Into<String>,
        token: impl Into<String>,
    ) -> Self {
        self.tokens.push((principal.into(), token.into()));
        self
    }

    /// Requires authorization, decided by `authorize` over the request's headers (after the
    /// bearer tokens, when a request's token is none of them): an OAuth access token checked
    /// against its issuer, a client certificate's header from a proxy, … A hook that panics
    /// (making its future, or while the future runs) decides nothing: the request gets `503`
    /// with `Retry-After`, as past the hook's time
    /// ([`with_authorization_timeout`](Self::with_authorization_timeout)), never a `401` that
    /// would send the client to log in again; the panic is logged and the server goes on.
    ///
    /// ```
    /// use llm_tools_mcp::{Access, HttpOptions};
    ///
    /// let options = HttpOptions::new()
    ///     .with_resource_metadata("https://tools.example.com/.well-known/oauth-protected-resource")
    ///     .with_authorization(|headers| {
    ///         let user = headers
    ///             .get("x-authenticated-user")
    ///             .and_then(|v| v.to_str().ok())
    ///             .map(str::to_owned);
    ///         async move { user.map_or(Access::Unauthorized, Access::granted) }
    ///     });
    /// # let _ = options;
    /// ```
    #[must_use]
    pub fn with_authorization<F, Fut>(mut self, authorize: F) -> Self
    where
        F: Fn(&HeaderMap) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Access> + Send + 'static,
    {
        self.authorizer = Some(Arc::new(move |headers: &HeaderMap| {
            Box::pin(authorize(headers)) as BoxFuture<'static, Access>
        }));
        self
    }

    /// How long the authorization hook may take to decide about a request
    /// ([`DEFAULT_AUTHORIZATION_TIMEOUT`]); past it the request gets `503`.
    #[must_use]
    pub fn with_authorization_timeout(mut self, timeout: Duration) -> Self {
        self.authorization_timeout = timeout;
        self
    }

    /// The URL of the server's OAuth protected-resource metadata (RFC 9728), sent as
    /// `resource_metadata` in `WWW-Authenticate` when authorization fails, so clients find
    /// the authorization server.
    #[must_use]
    pub fn with_resource_metadata(mut self, url: impl Into<String>) -> Self {
        self.resource_metadata = Some(url.into());
        self
    }

    /// The largest request body a client may send ([`DEFAULT_MAX_REQUEST_BODY_BYTES`]); a
    /// larger one gets `413`. A call's arguments also count toward the bytes of arguments its
    /// client's calls running may hold
    /// ([`ToolServer::with_max_argument_bytes_in_flight_per_client`](crate::ToolServer::with_max_argument_bytes_in_flight_per_client),
    /// 16 MiB): raise that too for calls whose arguments alone are larger.
    #[must_use]
    pub fn with_max_request_body_bytes(mut self, bytes: usize) -> Self {
        self.max_request_body_bytes = bytes;
        self
    }

    /// The most JSON values a request may hold ([`DEFAULT_MAX_REQUEST_JSON_VALUES`]); one
    /// holding more gets `413` without being parsed.
    #[must_use]
    pub fn with_max_request_json_values(mut self, values: usize) -> Self {
        self.max_request_json_values = values;
        self
    }

    /// How many connections are open at once ([`DEFAULT_MAX_CONNECTIONS`]); one more is
    /// answered `503` and closed, and those open go on.
    #[must_use]
    pub fn with_max_connections(mut self, max_connections: usize) -> Self {
        self.max_connections = max_connections;
        self
    }

    /// How many connections one client address (an IPv6 client: its /64 network) keeps open
    /// at once ([`DEFAULT_MAX_CONNECTIONS_PER_PEER`](crate::DEFAULT_MAX_CONNECTIONS_PER_PEER);
    /// unset, a quarter of the connection limit, at least 8 or the limit); one more is
    /// answered `503` and closed. Behind a reverse proxy every client has the proxy's
    /// address: give the connection limit there.
    #[must_use]
    pub fn with_max_connections_per_peer(mut self, max_connections: usize) -> Self {
        self.max_connections_per_peer = Some(max_connections);
        self
    }

    fn connections_per_peer(&self) -> usize {
        self.max_connections_per_peer
            .unwrap_or_else(|| share_of(self.max_connections))
    }

    fn sessions_per_principal(&self) -> usize {
        self.max_sessions_per_principal
            .unwrap_or_else(|| share_of(self.max_sessions))
    }

    /// How long a write to a client may wait without a byte going out
    /// ([`DEFAULT_WRITE_STALL_TIMEOUT`]); then the connection is closed, whatever runs on it.
    /// A running request (an event stream, a large result) keeps its connection past the idle
    /// timeout, so without this a client that stops reading would hold its connection for good.
    #[must_use]
    pub fn with_write_stall_timeout(mut self, timeout: Duration) -> Self {
        self.write_stall_timeout = timeout;
        self
    }

    /// How long a client may take to send a request's head, from the connection's start or
    /// from its first byte after a response ([`DEFAULT_HEADER_READ_TIMEOUT`]); then the
    /// connection is closed.
    #[must_use]
    pub fn with_header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// How long a client may take to send a request's whole body once its head has come
    /// ([`DEFAULT_BODY_READ_TIMEOUT`]); then the request fails and the connection is closed.
    /// A running request keeps its connection past the idle timeout, so without this a body
    /// that never came would hold its connection for good.
    #[must_use]
    pub fn with_body_read_timeout(mut self, timeout: Duration) -> Self {
        self.body_read_timeout = timeout;
        self
    }

    /// How long a connection may stay idle, no request running and nothing read
    /// ([`DEFAULT_IDLE_TIMEOUT`]); then it is closed. A running request (a long tool call, an
    /// event stream) keeps its connection open.
    #[must_use]
    pub fn with_idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// How many live sessions opened with `initialize` one authorized principal keeps
    /// ([`DEFAULT_MAX_SESSIONS_PER_PRINCIPAL`](crate::DEFAULT_MAX_SESSIONS_PER_PRINCIPAL);
    /// unset, a quarter of the session limit, at least 8 or the limit), counting those being
    /// opened; one more `initialize` gets `429` before a session is made for it, so a
    /// principal at its share never takes one of the server's places, even for a moment.
    #[must_use]
    pub fn with_max_sessions_per_principal(mut self, max_sessions: usize) -> Self {
        self.max_sessions_per_principal = Some(max_sessions);
        self
    }

    /// How many sessions opened with `initialize` live at once ([`DEFAULT_MAX_SESSIONS`]);
    /// one more `initialize` is refused.
    #[must_use]
    pub fn with_max_sessions(mut self, max_sessions: usize) -> Self {
        self.max_sessions = max_sessions;
        self
    }

    /// How long a session opened with `initialize` lives without a request
    /// ([`DEFAULT_SESSION_IDLE_TIMEOUT`]).
    #[must_use]
    pub fn with_session_idle_timeout(mut self, timeout: Duration) -> Self {
        self.session_idle_timeout = timeout;
        self
    }

    /// How long one event stream stays open ([`DEFAULT_MAX_EVENT_STREAM_LIFETIME`]); then it
    /// ends, and the client opens another. So do the streams of a session's responses (a
    /// `POST`'s answer in a session opened with `initialize`): the client takes one up again
    /// with `Last-Event-ID` within the resume window ([`HttpOptions::with_resume_window`]), or
    /// its request is cancelled. A 2026-07-28 response stream, which has no session to take it
    /// up again in, lasts at least as long as the server's longest call may (twice its longest
    /// `max_run_time`, for the approval and the run, and a minute).
    #[must_use]
    pub fn with_max_event_stream_lifetime(mut self, lifetime: Duration) -> Self {
        self.max_event_stream_lifetime = lifetime;
        self
    }

    /// How long a call of a session opened with `initialize` keeps running after its client
    /// dropped the response's stream before the response came
    /// ([`DEFAULT_RESUME_WINDOW`](crate::DEFAULT_RESUME_WINDOW)), for the client to take the
    /// stream up again with `Last-Event-ID`; then the call is cancelled, as if the client had
    /// sent `notifications/cancelled`.
    #[must_use]
    pub fn with_resume_window(mut self, window: Duration) -> Self {
        self.resume_window = window;
        self
    }

    /// Whether a request needs authorization.
    fn authorizes(&self) -> bool {
        !self.tokens.is_empty() || self.authorizer.is_some()
    }

    /// The rmcp configuration: the checks above are made here, before rmcp sees a request.
    pub(super) fn rmcp_config(
        &self,
    ) -> rmcp::transport::streamable_http_server::StreamableHttpServerConfig {
        rmcp::transport::streamable_http_server::StreamableHttpServerConfig::default()
            .disable_allowed_hosts()
            .disable_allowed_origins()
            .with_max_request_body_bytes(self.max_request_body_bytes)
    }

    /// The checks for a listener on `local`: its own address is an allowed host (unless it
    /// is every interface's).
    pub(super) fn for_listener(mut self, local: SocketAddr) -> Self {
        if let Allowed::Listed(hosts) = &mut self.hosts
            && !local.ip().is_unspecified()
        {
            hosts.push(local.ip().to_string());
        }
        self
    }

    /// Checks a request; the response refusing it, or the principal it is granted as.
    pub(super) async fn check(
        &self,
        request: &Request<Incoming>,
        peer_on_this_machine: bool,
    ) -> Result<Option<Principal>, Response<BoxBody>> {
        if !self.host_allowed(request, peer_on_this_machine) {
            let host = request.headers().get(header::HOST).map(shown_header);
            tracing::warn!(target: "llm_tools::mcp", host = ?host, "refused a request for a host that is not allowed (possible DNS rebinding)");
            return Err(plain(
                StatusCode::FORBIDDEN,
                "Forbidden: Host header is not allowed",
            ));
        }
        if let Some(origin) = request.headers().get(header::ORIGIN)
            && !allowed(
                &self.origins,
                origin.to_str().unwrap_or("\u{0}"),
                same_origin,
            )
        {
            tracing::warn!(target: "llm_tools::mcp", origin = ?shown_header(origin), "refused a cross-origin request");
            return Err(plain(
                StatusCode::FORBIDDEN,
                "Forbidden: Origin is not allowed",
            ));
        }
        if request.uri().path() != self.path {
            return Err(plain(StatusCode::NOT_FOUND, "Not Found"));
        }
        if !self.authorizes() {
            return Ok(None);
        }
        let headers = request.headers();
        let presented = bearer_token(headers);
        if let Some(token) = presented
            && let Some((principal, _)) = self
                .tokens
                .iter()
                .find(|(_, t)| same_secret(t.as_bytes(), token.as_bytes()))
        {
            return Ok(Some(Principal(principal.clone())));
        }
        let access = match &self.authorizer {
            Some(authorize) => match self.decide(authorize, headers).await {
                Ok(access) => access,
                Err(why) => {
                    let mut busy = plain(StatusCode::SERVICE_UNAVAILABLE, why);
                    busy.headers_mut()
                        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
                    return Err(busy);
                }
            },
            None => Access::Unauthorized,
        };
        match access {
            Access::Granted { principal } => Ok(Some(Principal(principal))),
            Access::InsufficientScope { scope } => Err(self.challenge(
                StatusCode::FORBIDDEN,
                &[("error", "insufficient_scope"), ("scope", &scope)],
            )),
            _ if presented.is_some() => {
                Err(self.challenge(StatusCode::UNAUTHORIZED, &[("error", "invalid_token")]))
            }
            _ => Err(self.challenge(StatusCode::UNAUTHORIZED, &[])),
        }
    }

    /// What the application's hook decides about a request with `headers`, or why it decided
    /// nothing (for the client): it ran past its time, or it panicked, making its future or
    /// while the future ran (logged; the connection goes on).
    async fn decide(
        &self,
        authorize: &Authorizer,
        headers: &HeaderMap,
    ) -> Result<Access, &'static str> {
        const PANICKED: &str = "the authorization failed to decide (the server's log says so); \
                                try again";
        let Ok(deciding) = std::panic::catch_unwind(AssertUnwindSafe(|| authorize(headers))) else {
            tracing::error!(target: "llm_tools::mcp", "the authorization hook panicked; the request was refused with 503");
            return Err(PANICKED);
        };
        let decided = AssertUnwindSafe(deciding).catch_unwind();
        match tokio::time::timeout(self.authorization_timeout, decided).await {
            Ok(Ok(access)) => Ok(access),
            Ok(Err(_)) => {
                tracing::error!(target: "llm_tools::mcp", "the authorization hook panicked; the request was refused with 503");
                Err(PANICKED)
            }
            Err(_) => {
                tracing::warn!(target: "llm_tools::mcp", timeout = ?self.authorization_timeout, "the authorization hook did not decide about a request within its time");
                Err("the authorization did not decide within its time \
                     (HttpOptions::with_authorization_timeout); try again")
            }
        }
    }

    /// A `401`/`403` with `WWW-Authenticate: Bearer` and its parameters (RFC 6750, RFC 9728).
    fn challenge(&self, status: StatusCode, parameters: &[(&str, &str)]) -> Response<BoxBody> {
        let mut parts: Vec<String> = parameters
            .iter()
            .map(|(name, value)| format!("{name}=\"{}\"", quoted(value)))
            .collect();
        if let Some(url) = &self.resource_metadata {
            parts.push(format!("resource_metadata=\"{}\"", quoted(url)));
        }
        let value = if parts.is_empty() {
            "Bearer".to_owned()
        } else {
            format!("Bearer {}", parts.join(", "))
        };
        let text = if status == StatusCode::FORBIDDEN {
            "Forbidden: insufficient scope"
        } else {
            "Unauthorized"
        };
        let mut response = plain(status, text);
        if let Ok(value) = HeaderValue::from_str(&value) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }

    /// Whether the request's `Host` is allowed: a loopback name from a client on this machine
    /// (a client elsewhere naming `localhost` is not one: it reached the server through
    /// another address), the listener's address, or a host the application allowed.
    fn host_allowed(&self, request: &Request<Incoming>, peer_on_this_machine: bool) -> bool {
        let host = request
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .map(str::to_owned)
            .or_else(|| request.uri().authority().map(|a| a.to_string()));
        match host {
            Some(host) => {
                (peer_on_this_machine && LOOPBACK_HOSTS.iter().any(|name| same_host(name, &host)))
                    || allowed(&self.hosts, &host, same_host)
            }
            None => false,
        }
    }
}

/// A response body, as rmcp's.
pub(super) type BoxBody = http_body_util::combinators::BoxBody<Bytes, std::convert::Infallible>;

/// A plain-text response.
fn plain(status: StatusCode, text: &'static str) -> Response<BoxBody> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// A client's header value as a log line shows it: cut to [`MAX_SHOWN_HEADER`] bytes, its
/// control characters escaped (a request's head may carry some 400 KB of one header).
fn shown_header(value: &HeaderValue) -> String {
    crate::error::cut(&String::from_utf8_lossy(value.as_bytes()), MAX_SHOWN_HEADER).into_owned()
}

/// The most of a client's `Host` or `Origin` a log line shows.
const MAX_SHOWN_HEADER: usize = 256;

/// `value` inside a quoted string.
fn quoted(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"")
}

/// The token of `Authorization: Bearer …`.
fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// The `Host` names of this machine, allowed from clients on this machine.
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

fn allowed(rule: &Allowed, value: &str, same: fn(&str, &str) -> bool) -> bool {
    match rule {
        Allowed::Any => true,
        Allowed::Listed(list) => list.iter().any(|entry| same(entry, value)),
    }
}

fn same_origin(entry: &str, origin: &str) -> bool {
    entry.trim_end_matches('/').eq_ignore_ascii_case(origin)
}

/// Whether a `Host` value matches an allowed entry: the same host (names compared without
/// case, IPv6 with or without brackets), and the same port when the entry gives one.
fn same_host(entry: &str, host: &str) -> bool {
    match (split_authority(entry), split_authority(host)) {
        (Some((entry_host, entry_port)), Some((host, port))) => {
            entry_host.eq_ignore_ascii_case(&host) && entry_port.is_none_or(|p| Some(p) == port)
        }
        _ => false,
    }
}

/// `host[:port]`, `[v6][:port]` or a bare IPv6 address, as the host and the port.
fn split_authority(value: &str) -> Option<(String, Option<u16>)> {
    let value = value.trim();
    if let Some(rest) = value.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(port) => Some(port.parse().ok()?),
            None if after.is_empty() => None,
            None => return None,
        };
        return Some((host.to_owned(), port));
    }
    if value.matches(':').count() > 1 {
        return Some((value.to_owned(), None));
    }
    match value.split_once(':') {
        Some((host, port)) => Some((host.to_owned(), Some(port.parse().ok()?))),
        None => Some((value.to_owned(), None)),
    }
}

/// The rmcp service serving MCP (`S`, a [`ToolServer`](crate::ToolServer)) behind the checks.
type McpService<S> =
    rmcp::transport::streamable_http_server::StreamableHttpService<S, CappedSessions>;

/// Serves `server` (a [`ToolServer`](crate::ToolServer)) on every connection `listener`
/// accepts, for as long as the process runs; a 2026-07-28 response stream lasts at least
/// `longest_call`.
pub(super) async fn serve<S>(
    server: S,
    listener: tokio::net::TcpListener,
    options: HttpOptions,
    longest_call: Duration,
) -> Result<(), McpError>
where
    S: ServerHandler + Clone + Send + Sync + 'static,
{
    let local = listener
        .local_addr()
        .map_err(|e| McpError::InvalidConfig(e.to_string()))?;
    let options = Arc::new(options.for_listener(local));
    let sessions = Arc::new(CappedSessions::new(
        options.max_sessions,
        options.session_idle_timeout,
        options.resume_window,
    ));
    let factory = server.clone();
    let service: McpService<S> = McpService::new(
        move || Ok(factory.clone()),
        Arc::clone(&sessions),
        options.rmcp_config(),
    );
    let limits = ConnectionLimits {
        max: options.max_connections,
        max_per_peer: options.connections_per_peer(),
    };
    accept_forever(listener, limits, move |stream, place| {
        let served = Served {
            options: Arc::clone(&options),
            service: service.clone(),
            sessions: Arc::clone(&sessions),
            longest_call,
        };
        serve_connection(stream, place, served)
    })
    .await;
    Ok(())
}

/// What every connection of a server serves with: its options, rmcp's service, its sessions,
/// and how long its longest call may take.
struct Served<S> {
    options: Arc<HttpOptions>,
    service: McpService<S>,
    sessions: Arc<CappedSessions>,
    longest_call: Duration,
}

impl<S> Clone for Served<S> {
    fn clone(&self) -> Self {
        Self {
            options: Arc::clone(&self.options),
            service: self.service.clone(),
            sessions: Arc::clone(&self.sessions),
            longest_call: self.longest_call,
        }
    }
}

/// One connection, until the client closes it or it times out.
async fn serve_connection<S>(stream: tokio::net::TcpStream, _place: Place, served: Served<S>)
where
    S: ServerHandler + Send + 'static,
{
    // An IPv4 client of a dual-stack listener shows as `::ffff:127.0.0.1`.
    let peer_on_this_machine = stream
        .peer_addr()
        .is_ok_and(|peer| peer.ip().to_canonical().is_loopback());
    let options = Arc::clone(&served.options);
    let activity = Activity::new(Timeouts {
        header_read: options.header_read_timeout,
        idle: options.idle_timeout,
        write_stall: options.write_stall_timeout,
    });
    let io = hyper_util::rt::TokioIo::new(Watched::new(stream, Arc::clone(&activity)));
    let requests = Arc::clone(&activity);
    let respond = hyper::service::service_fn(move |request| {
        let served = served.clone();
        // The request runs until its response's body is dropped (sent, or the client gone).
        let running = requests.request_started();
        async move {
            let response = respond(&served, request, peer_on_this_machine).await;
            Ok::<_, std::convert::Infallible>(response.map(|body| Tracked::new(body, running)))
        }
    });
    let connection = hyper::server::conn::http1::Builder::new().serve_connection(io, respond);
    tokio::select! {
        _ = connection => {}
        () = activity.expired() => {
            tracing::debug!(target: "llm_tools::mcp", "closed a connection: idle, slow to send a request's head, or not reading what it is sent");
        }
    }
}

/// The header naming a request's session (legacy, 2025 sessions).
const SESSION_ID: &str = "mcp-session-id";

/// One request: refused by the checks, or served by rmcp with the principal it was granted as.
/// A session is its opener's: another principal naming it is told there is no such session.
async fn respond<S>(
    served: &Served<S>,
    mut request: Request<Incoming>,
    peer_on_this_machine: bool,
) -> Response<BoxBody>
where
    S: ServerHandler + Send + 'static,
{
    let options = &served.options;
    let principal = match options.check(&request, peer_on_this_machine).await {
        Ok(principal) => principal,
        Err(refused) => return refused,
    };
    let name = principal.as_ref().map(|p| p.0.clone());
    let session = request
        .headers()
        .get(SESSION_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if let Some(session) = &session
        && served.sessions.opened_by_another(session, name.as_deref())
    {
        tracing::warn!(target: "llm_tools::mcp", "a client named a session another principal opened");
        return plain(StatusCode::NOT_FOUND, "Session not found");
    }
    if let Some(principal) = principal {
        request.extensions_mut().insert(principal);
    }
    let opens_stream = request.method() == hyper::http::Method::GET;
    let (parts, body) = match whole_body(request, options).await {
        Ok(read) => read,
        Err(refused) => return refused,
    };
    let max = options.sessions_per_principal();
    // An authorized principal's `initialize` holds a place among its sessions before the
    // server makes the session.
    let place = match &name {
        Some(principal)
            if session.is_none()
                && parts.method == hyper::http::Method::POST
                && is_initialize(&body) =>
        {
            match served.sessions.hold_place(principal, max).await {
                Some(place) => Some(place),
                None => return principal_full(max),
            }
        }
        _ => None,
    };
    let request = Request::from_parts(parts, Full::new(body));
    let opener = Opener::new(name.clone(), place);
    let mut response = as_opener(opener, served.service.handle(request)).await;
    if response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
    {
        // Every event stream ends. A session's (its own, or a response's) is taken up again
        // with `Last-Event-ID`; a 2026-07-28 response's cannot be, and lasts as long as its
        // call may. A session id the request names counts only when it is a live session: a
        // 2026-07-28 request is served without one whatever id it names, and a made-up or
        // left-over id must not cut its stream short.
        let in_session = match &session {
            Some(id) => served
                .sessions
                .has_session(&id.as_str().into())
                .await
                .unwrap_or(false),
            None => false,
        };
        let lifetime = if opens_stream || in_session {
            options.max_event_stream_lifetime
        } else {
            options.max_event_stream_lifetime.max(served.longest_call)
        };
        let end = after(lifetime);
        response = response.map(|body| BoxBody::new(EndsAt::new(body, end)));
    }
    if session.is_none()
        && let Some(opened) = response
            .headers()
            .get(SESSION_ID)
            .and_then(|v| v.to_str().ok())
    {
        let opened = opened.to_owned();
        let noted = served
            .sessions
            .settle_opened(&opened, name.as_deref(), max)
            .await;
        if !noted {
            let _ = served.sessions.close_session(&opened.into()).await;
            return principal_full(max);
        }
    }
    response
}

/// The answer to a principal's `initialize` past its share of sessions.
fn principal_full(max: usize) -> Response<BoxBody> {
    tracing::warn!(target: "llm_tools::mcp", max, "refused a session: its principal has its maximum of sessions");
    plain(
        StatusCode::TOO_MANY_REQUESTS,
        "the principal has its maximum of sessions open; close one \
         (HttpOptions::with_max_sessions_per_principal)",
    )
}

/// Whether a request's body is one JSON-RPC `initialize` request (the request that opens a
/// session). Read without allocating for the other fields; a body that is not one JSON object
/// is not.
fn is_initialize(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Method<'a> {
        #[serde(borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
    }
    serde_json::from_slice::<Method<'_>>(body)
        .is_ok_and(|message| message.method.as_deref() == Some("initialize"))
}

/// The request's head and its whole body, read within the body's deadline and size limit, its
/// JSON values counted; or the response refusing it (the connection is closed after it when
/// the body was not read to its end).
async fn whole_body(
    request: Request<Incoming>,
    options: &HttpOptions,
) -> Result<(hyper::http::request::Parts, Bytes), Response<BoxBody>> {
    let (parts, body) = request.into_parts();
    let deadline = after(options.body_read_timeout);
    let body = http_body_util::Limited::new(
        DeadlineBody::new(body, deadline),
        options.max_request_body_bytes,
    );
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(error) => {
            let (status, text) = if error.is::<http_body_util::LengthLimitError>() {
                (
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "the request body is larger than the server takes \
                     (HttpOptions::with_max_request_body_bytes)",
                )
            } else if matches!(error.downcast_ref(), Some(BodyError::TooSlow)) {
                (
                    StatusCode::REQUEST_TIMEOUT,
                    "the request body did not come within its time \
                     (HttpOptions::with_body_read_timeout)",
                )
            } else {
                (
                    StatusCode::BAD_REQUEST,
                    "the request body could not be read",
                )
            };
            return Err(closing(plain(status, text)));
        }
    };
    if llm_tools_core::json_values::too_many_values_of(&bytes, options.max_request_json_values)
        .is_some()
    {
        tracing::warn!(target: "llm_tools::mcp", max = options.max_request_json_values, "refused a request holding too many JSON values");
        return Err(plain(
            StatusCode::PAYLOAD_TOO_LARGE,
            "the request holds more JSON values than the server takes \
             (HttpOptions::with_max_request_json_values)",
        ));
    }
    Ok((parts, bytes))
}

/// `response`, telling the client the connection closes after it.
fn closing(mut response: Response<BoxBody>) -> Response<BoxBody> {
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// The instant `duration` from now; a duration too long to add is a day, as good as none for
/// a body or a stream.
fn after(duration: Duration) -> tokio::time::Instant {
    let now = tokio::time::Instant::now();
    now.checked_add(duration)
        .unwrap_or(now + Duration::from_secs(86_400))
}

/// A response's body that ends at `end`, however much more it had to send: an event stream
/// held no longer than its lifetime.
struct EndsAt {
    inner: BoxBody,
    end: std::pin::Pin<Box<tokio::time::Sleep>>,
}

impl EndsAt {
    fn new(inner: BoxBody, end: tokio::time::Instant) -> Self {
        Self {
            inner,
            end: Box::pin(tokio::time::sleep_until(end)),
        }
    }
}

impl hyper::body::Body for EndsAt {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Self::Error>>> {
        if self.end.as_mut().poll(cx).is_ready() {
            return std::task::Poll::Ready(None);
        }
        std::pin::Pin::new(&mut self.inner).poll_frame(cx)
    }
}

/// A request's body that fails once its deadline has passed before it ended, so a client
/// that sends a head and then too little of its body cannot hold the connection.
struct DeadlineBody {
    inner: Incoming,
    deadline: std::pin::Pin<Box<tokio::time::Sleep>>,
}

impl DeadlineBody {
    fn new(inner: Incoming, deadline: tokio::time::Instant) -> Self {
        Self {
            inner,
            deadline: Box::pin(tokio::time::sleep_until(deadline)),
        }
    }
}

/// Why a request's body could not be read.
#[derive(Debug)]
enum BodyError {
    Transport(hyper::Error),
    TooSlow,
}

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Transport(e) => write!(f, "the request body could not be read: {e}"),
            Self::TooSlow => f.write_str("the request body did not come within its time"),
        }
    }
}

impl std::error::Error for BodyError {}

impl hyper::body::Body for DeadlineBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, BodyError>>> {
        use std::task::Poll;
        match std::pin::Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(frame) => Poll::Ready(frame.map(|f| f.map_err(BodyError::Transport))),
            Poll::Pending => match self.deadline.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Some(Err(BodyError::TooSlow))),
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_match_with_and_without_ports() {
        assert!(same_host("localhost", "localhost:8080"));
        assert!(same_host("localhost", "LOCALHOST"));
        assert!(same_host("::1", "[::1]:8080"));
        assert!(same_host("tools.lan:8080", "tools.lan:8080"));
        assert!(!same_host("tools.lan:8080", "tools.lan:9090"));
        assert!(!same_host("tools.lan", "tools.lan.evil.com"));
        assert!(!same_host("127.0.0.1", "127.0.0.1.nip.io:80"));
        assert!(!same_host("localhost", "localhost:notaport"));
    }

    #[test]
    fn bearer_tokens_are_read_from_the_authorization_header() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer abc"),
        );
        assert_eq!(bearer_token(&headers), Some("abc"));
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic abc"));
        assert_eq!(bearer_token(&headers), None);
    }

    #[test]
    fn debug_never_shows_a_token() {
        let options = HttpOptions::new().with_bearer_token("ci", "sk-canary-7f3a");
        let shown = format!("{options:?}");
        assert!(!shown.contains("sk-canary-7f3a"), "{shown}");
        assert!(shown.contains("ci"), "{shown}");
    }
}
