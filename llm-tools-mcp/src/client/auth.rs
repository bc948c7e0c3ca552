//! OAuth 2.1 for servers that require the MCP authorization flow (feature `auth`), on rmcp's
//! OAuth support: discovery (protected-resource and authorization-server metadata, from the
//! server's `WWW-Authenticate` challenge), dynamic client registration, pre-registered clients
//! and client ID metadata documents, the authorization code flow with PKCE through the
//! application's redirect handler, refresh, and client credentials. Tokens live in a
//! [`TokenStore`] the application chooses, never in chat state, and never in a `Debug`, an
//! error or a log line.
//!
//! rmcp writes the authorization code it exchanges and each token response it gets (an OpenID
//! `id_token` or a provider's own tokens whole, beside the redacted access and refresh tokens)
//! to its `debug` log. The code exchange and the client credentials grant run under
//! `auth_logs::quiet`, which keeps rmcp's `debug` and `trace` events, and any event holding the
//! code or the client secret, from the application's tracing subscriber. What it cannot keep:
//! a program that turns tracing's events into `log` records (tracing's `log-always` feature, or
//! its `log` feature without a tracing subscriber) has them reach its `log` logger from rmcp's
//! own code, before any subscriber; it keeps `rmcp` at `info` in its `log` filter.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use llm_tools_core::BoxFuture;
use rmcp::transport::auth::{
    AuthError, AuthorizationCallback, AuthorizationManager, AuthorizationMetadata,
    AuthorizationRequest, AuthorizationSession, ClientCredentialsConfig, CredentialStore,
    OAuthClientConfig, OAuthState, StoredCredentials,
};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::error::McpError;

/// The application's side of the authorization code flow: given the authorization URL, send
/// the user there and return the URL the authorization server redirected the browser to (with
/// its `code` and `state`).
type RedirectHandler =
    Arc<dyn Fn(String) -> BoxFuture<'static, Result<String, String>> + Send + Sync>;

/// A secret that shows as `<redacted>`.
#[derive(Clone, PartialEq, Eq)]
struct Secret(String);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

#[derive(Clone)]
enum Flow {
    AuthorizationCode {
        redirect_uri: String,
        redirect: RedirectHandler,
    },
    ClientCredentials,
}

impl fmt::Debug for Flow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::AuthorizationCode { redirect_uri, .. } => f
                .debug_struct("AuthorizationCode")
                .field("redirect_uri", redirect_uri)
                .finish_non_exhaustive(),
            Self::ClientCredentials => f.write_str("ClientCredentials"),
        }
    }
}

/// How a client authorizes with a server that requires the MCP authorization flow (OAuth
/// 2.1), given to [`McpServer::oauth`](crate::McpServer::oauth) (Streamable HTTP; feature
/// `auth`).
///
/// The client first reaches the server with the tokens its [`TokenStore`] holds for the
/// server's URL (none at first). When the server answers 401 (or a refresh is refused), it
/// runs the flow:
///
/// - **Discovery**: the protected-resource metadata the server's `WWW-Authenticate` names (or
///   its well-known URL), then the authorization server's metadata (OAuth or OpenID, with the
///   2025-03-26 fallbacks).
/// - **The client's identity**: a pre-registered client ([`with_client_id`](Self::with_client_id)
///   and [`with_client_secret`](Self::with_client_secret)), else a client ID metadata document
///   ([`with_client_metadata_url`](Self::with_client_metadata_url)) when the authorization
///   server supports them, else dynamic client registration.
/// - **Authorization code with PKCE** ([`authorization_code`](Self::authorization_code)): the
///   application's handler gets the authorization URL, sends the user there and returns the
///   URL the browser came back to ([`LoopbackRedirect`] receives it for a CLI); the code is
///   exchanged for tokens, checked against the issuer.
/// - **Client credentials** ([`client_credentials`](Self::client_credentials)), for machines.
///
/// The tokens go to the store; an expired access token is refreshed with the refresh token,
/// and a refused refresh (expired or revoked) runs the flow again. Scopes: those given with
/// [`with_scopes`](Self::with_scopes), else those the challenge or the metadata name.
///
/// ```
/// use llm_tools_mcp::{McpServer, MemoryTokenStore, OAuth};
///
/// let tokens = MemoryTokenStore::new();
/// let server = McpServer::http("https://mcp.example.com/mcp").oauth(
///     OAuth::authorization_code("http://127.0.0.1:8976/callback", |url| async move {
///         println!("Open {url} to sign in, then paste the address you land on:");
///         let mut line = String::new();
///         std::io::stdin().read_line(&mut line).map_err(|e| e.to_string())?;
///         Ok(line.trim().to_owned())
///     })
///     .with_scopes(["tickets:read"])
///     .with_token_store(tokens.clone()),
/// );
/// let machine = McpServer::http("https://mcp.example.com/mcp")
///     .oauth(OAuth::client_credentials("reporting-job", "its-secret"));
/// # let _ = (server, machine);
/// ```
#[derive(Clone, Debug)]
pub struct OAuth {
    flow: Flow,
    client_id: Option<String>,
    client_secret: Option<Secret>,
    client_metadata_url: Option<String>,
    client_name: String,
    scopes: Vec<String>,
    store: SharedStore,
    timeout: Duration,
    /// Step-ups run so far for this configuration, shared by its clones (each session of a
    /// client is a clone): at most [`MAX_STEP_UPS`].
    step_ups: Arc<std::sync::atomic::AtomicU32>,
    /// Logins run since the server last answered a call, shared by the clones: at most
    /// [`MAX_LOGINS_UNANSWERED`].
    logins_unanswered: Arc<std::sync::atomic::AtomicU32>,
}

/// How many logins in a row (at connect, or for a call the server refused for want of
/// authorization, 401) may give tokens before the server answers a call, over every session of
/// one [`OAuth`] configuration; a login that fails or that the user gives up counts not. A server that refuses every token, even those of the
/// login it just asked for, cannot send the user through a login on every call: past this,
/// each call (and connect) fails at once saying so, until a call is answered; a new `OAuth`
/// configuration starts the count again.
pub const MAX_LOGINS_UNANSWERED: u32 = 3;

/// How many times the user is sent through the authorization again for more scopes, over
/// every session of one [`OAuth`] configuration: a server that asks for more scopes on every
/// call cannot send the user through a login on every call.
pub const MAX_STEP_UPS: u32 = 3;

/// How long the application's redirect handler may take, unless
/// [`OAuth::with_login_timeout`] says otherwise: 5 minutes.
pub const DEFAULT_LOGIN_TIMEOUT: Duration = Duration::from_secs(300);

impl OAuth {
    fn new(flow: Flow) -> Self {
        Self {
            flow,
            client_id: None,
            client_secret: None,
            client_metadata_url: None,
            client_name: "llm-tools".to_owned(),
            scopes: Vec::new(),
            store: SharedStore(Arc::new(MemoryTokenStore::new())),
            timeout: DEFAULT_LOGIN_TIMEOUT,
            step_ups: Arc::default(),
            logins_unanswered: Arc::default(),
        }
    }

    /// The authorization code flow with PKCE, for a user: `redirect_uri` is where the
    /// authorization server sends the browser back (registered with the server), and
    /// `redirect` gets the authorization URL, sends the user there, and returns the full URL
    /// the browser was sent back to (or why not, as text). Runs at connect when the store has
    /// no usable tokens, and again when a refresh is refused.
    pub fn authorization_code<F, Fut>(redirect_uri: impl Into<String>, redirect: F) -> Self
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<String, String>> + Send + 'static,
    {
        Self::new(Flow::AuthorizationCode {
            redirect_uri: redirect_uri.into(),
            redirect: Arc::new(move |url| Box::pin(redirect(url))),
        })
    }

    /// The client credentials flow, for a machine with a client registered at the
    /// authorization server (`client_secret_post`, or `client_secret_basic` when the server
    /// offers only that).
    pub fn client_credentials(
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        let mut oauth = Self::new(Flow::ClientCredentials);
        oauth.client_id = Some(client_id.into());
        oauth.client_secret = Some(Secret(client_secret.into()));
        oauth
    }

    /// A client registered with the authorization server beforehand (no dynamic
    /// registration).
    pub fn with_client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }

    /// The pre-registered client's secret (a confidential client). Never shown in a `Debug`.
    pub fn with_client_secret(mut self, secret: impl Into<String>) -> Self {
        self.client_secret = Some(Secret(secret.into()));
        self
    }

    /// The `https` URL of the client's metadata document (a client ID metadata document),
    /// used as the client ID by authorization servers that support them.
    pub fn with_client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// The client's name in dynamic registration (`llm-tools` by default).
    pub fn with_client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// The scopes to ask for; by default those the server's challenge names, else those its
    /// metadata supports.
    pub fn with_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Where the tokens are kept, by the server's URL (a [`MemoryTokenStore`] of its own by
    /// default, so they last as long as the process). Give two clients the same store and the
    /// second reaches the server without a new login.
    pub fn with_token_store(mut self, store: impl TokenStore) -> Self {
        self.store = SharedStore(Arc::new(store));
        self
    }

    /// How long the application's redirect handler may take ([`DEFAULT_LOGIN_TIMEOUT`] by
    /// default).
    pub fn with_login_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

/// Tokens for one server as a [`TokenStore`] keeps them: the client ID, the access and refresh
/// tokens, the scopes granted and the issuer. Its `Debug` shows no token; [`to_json`] gives
/// the whole of it (secrets included) for a store that writes it somewhere.
///
/// [`to_json`]: Self::to_json
#[derive(Clone)]
pub struct StoredTokens(StoredCredentials);

impl fmt::Debug for StoredTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoredTokens")
            .field("client_id", &self.0.client_id)
            .field(
                "tokens",
                &self.0.token_response.as_ref().map(|_| "<redacted>"),
            )
            .field("granted_scopes", &self.0.granted_scopes)
            .field("issuer", &self.0.issuer)
            .finish()
    }
}

impl StoredTokens {
    /// The client ID the tokens were issued to.
    pub fn client_id(&self) -> &str {
        &self.0.client_id
    }

    /// The scopes granted.
    pub fn granted_scopes(&self) -> &[String] {
        &self.0.granted_scopes
    }

    /// Whether an access token is held (a store may keep a client ID alone).
    pub fn has_access_token(&self) -> bool {
        self.0.token_response.is_some()
    }

    /// The whole record as JSON, the tokens included: for a store that keeps it (encrypt it
    /// at rest). Never log it.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(&self.0).unwrap_or_default()
    }

    /// A record [`to_json`](Self::to_json) made.
    pub fn from_json(json: serde_json::Value) -> Result<Self, String> {
        serde_json::from_value(json)
            .map(Self)
            .map_err(|e| format!("not stored OAuth tokens: {e}"))
    }
}

/// Where a client keeps its OAuth tokens, by key (the server's URL): in memory
/// ([`MemoryTokenStore`]) or the application's own (a keychain, an encrypted table). A
/// failure is text, which reaches the application's error as it is: keep secrets out of it.
pub trait TokenStore: Send + Sync + 'static {
    /// The tokens kept under `key`, if any.
    fn load<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<StoredTokens>, String>>;
    /// Keeps `tokens` under `key`, replacing what was there.
    fn save<'a>(&'a self, key: &'a str, tokens: StoredTokens) -> BoxFuture<'a, Result<(), String>>;
    /// Forgets what is kept under `key` (the tokens were refused for good).
    fn clear<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), String>>;
}

/// A [`TokenStore`] in memory: the tokens last as long as the process. Clones share it.
#[derive(Clone, Default)]
pub struct MemoryTokenStore {
    tokens: Arc<Mutex<HashMap<String, StoredTokens>>>,
}

impl fmt::Debug for MemoryTokenStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys: Vec<String> = self
            .tokens
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .keys()
            .cloned()
            .collect();
        f.debug_struct("MemoryTokenStore")
            .field("servers", &keys)
            .finish()
    }
}

impl MemoryTokenStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl TokenStore for MemoryTokenStore {
    fn load<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<StoredTokens>, String>> {
        let found = self
            .tokens
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(key)
            .cloned();
        Box::pin(async move { Ok(found) })
    }

    fn save<'a>(&'a self, key: &'a str, tokens: StoredTokens) -> BoxFuture<'a, Result<(), String>> {
        self.tokens
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(key.to_owned(), tokens);
        Box::pin(async { Ok(()) })
    }

    fn clear<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), String>> {
        self.tokens
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .remove(key);
        Box::pin(async { Ok(()) })
    }
}

#[derive(Clone)]
struct SharedStore(Arc<dyn TokenStore>);

impl fmt::Debug for SharedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TokenStore")
    }
}

/// The application's store under one key, as rmcp's credential store.
struct Keyed {
    store: SharedStore,
    key: String,
}

type AuthFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, AuthError>> + Send + 'a>>;

impl CredentialStore for Keyed {
    fn load<'a, 'b>(&'a self) -> AuthFuture<'b, Option<StoredCredentials>>
    where
        'a: 'b,
        Self: 'b,
    {
        Box::pin(async move {
            self.store
                .0
                .load(&self.key)
                .await
                .map(|found| found.map(|tokens| tokens.0))
                .map_err(AuthError::InternalError)
        })
    }

    fn save<'a, 'b>(&'a self, credentials: StoredCredentials) -> AuthFuture<'b, ()>
    where
        'a: 'b,
        Self: 'b,
    {
        Box::pin(async move {
            self.store
                .0
                .save(&self.key, StoredTokens(credentials))
                .await
                .map_err(AuthError::InternalError)
        })
    }

    fn clear<'a, 'b>(&'a self) -> AuthFuture<'b, ()>
    where
        'a: 'b,
        Self: 'b,
    {
        Box::pin(async move {
            self.store
                .0
                .clear(&self.key)
                .await
                .map_err(AuthError::InternalError)
        })
    }
}

/// A login URL the user may be sent to: https (http only to loopback), no credentials in it.
/// The authorization server's metadata names it, and a hostile MCP server can name that
/// server: a `javascript:`, `file:` or `data:` endpoint never reaches the redirect handler
/// (a browser, the user's screen).
fn login_url(server: &str, url: &str) -> Result<String, Box<McpError>> {
    crate::elicitation::safe_url(url)
        .map_err(|why| Box::new(failed(server, "the login URL was refused", why)))
}

/// Discovers the authorization server (from the server's `challenge`, else the well-known
/// URLs), refuses it as [`checked_metadata`] says, and gives `manager` its metadata.
async fn discover_checked(
    manager: &mut AuthorizationManager,
    server: &str,
    url: &str,
    challenge: Option<&str>,
) -> Result<(), McpError> {
    let resolution = manager
        .resolve_metadata_from_challenge(challenge)
        .await
        .map_err(|e| failed(server, "discovering the authorization server", e))?;
    checked_metadata(server, url, &resolution.metadata).map_err(|e| *e)?;
    manager.set_metadata(resolution.metadata);
    Ok(())
}

/// Refuses an authorization server's metadata unless every endpoint the client sends to (the
/// token endpoint, which gets the client's secret, codes and refresh tokens; the registration
/// endpoint) or sends the user to, and its issuer, is https — http only when it and the MCP
/// server are both on loopback (a server and its authorization server on this machine). The
/// MCP server names its authorization server: a hostile or misconfigured one would otherwise
/// have the client's secret and tokens sent in plain text, or to a host of its choosing over
/// http.
fn checked_metadata(
    server: &str,
    mcp_url: &str,
    metadata: &AuthorizationMetadata,
) -> Result<(), Box<McpError>> {
    let on_loopback =
        |url: &reqwest::Url| url.host_str().is_some_and(crate::elicitation::is_loopback);
    let mcp_on_loopback = reqwest::Url::parse(mcp_url).is_ok_and(|url| on_loopback(&url));
    let endpoints = [
        ("token endpoint", Some(metadata.token_endpoint.as_str())),
        (
            "authorization endpoint",
            Some(metadata.authorization_endpoint.as_str()),
        ),
        (
            "registration endpoint",
            metadata.registration_endpoint.as_deref(),
        ),
        ("issuer", metadata.issuer.as_deref()),
    ];
    for (what, url) in endpoints {
        let Some(url) = url else { continue };
        let allowed = reqwest::Url::parse(url).is_ok_and(|parsed| match parsed.scheme() {
            "https" => parsed.host_str().is_some_and(|host| !host.is_empty()),
            "http" => mcp_on_loopback && on_loopback(&parsed),
            _ => false,
        });
        if !allowed {
            return Err(Box::new(failed(
                server,
                "the authorization server was refused",
                format!(
                    "its {what} `{}` is not https (http only when it and the MCP server are on \
                     loopback): the client's secret and tokens would cross the network in plain \
                     text; nothing was sent to it",
                    crate::error::cut(url, 256)
                ),
            )));
        }
    }
    Ok(())
}

/// An authorization error as the application reads it: rmcp's text, which holds no token.
fn failed(server: &str, what: &str, error: impl fmt::Display) -> McpError {
    McpError::Authorization {
        server: server.to_owned(),
        message: format!("{what}: {error}"),
    }
}

impl OAuth {
    /// A manager for `url` with the application's store, holding the tokens stored for it
    /// (`true`) or none yet.
    pub(crate) async fn stored(
        &self,
        server: &str,
        url: &str,
    ) -> Result<(AuthorizationManager, bool), McpError> {
        let mut manager = self.manager(server, url).await?;
        let ready = manager
            .initialize_from_store()
            .await
            .map_err(|e| failed(server, "reading the stored tokens", e))?;
        if ready {
            self.configure_known_client(&mut manager)
                .map_err(|e| failed(server, "configuring the client", e))?;
        }
        Ok((manager, ready))
    }

    async fn manager(&self, server: &str, url: &str) -> Result<AuthorizationManager, McpError> {
        let resource = resource_url(url);
        let mut manager = AuthorizationManager::new(&resource)
            .await
            .map_err(|e| failed(server, "preparing authorization", e))?;
        manager.set_credential_store(Keyed {
            store: self.store.clone(),
            key: resource,
        });
        Ok(manager)
    }

    /// A pre-registered confidential client's secret, which the store does not keep, for
    /// refreshing tokens loaded from the store.
    fn configure_known_client(&self, manager: &mut AuthorizationManager) -> Result<(), AuthError> {
        let (Some(id), Some(secret)) = (&self.client_id, &self.client_secret) else {
            return Ok(());
        };
        let redirect_uri = match &self.flow {
            Flow::AuthorizationCode { redirect_uri, .. } => redirect_uri.clone(),
            Flow::ClientCredentials => return Ok(()),
        };
        manager.configure_client(
            OAuthClientConfig::new(id.clone(), redirect_uri)
                .with_client_secret(secret.0.clone())
                .with_scopes(self.scopes.clone()),
        )
    }

    /// Runs the flow for `url` (after the server's `challenge`, its `WWW-Authenticate`
    /// value): new tokens in the store, and the manager that holds them.
    pub(crate) async fn authorize(
        &self,
        server: &str,
        url: &str,
        challenge: Option<&str>,
    ) -> Result<AuthorizationManager, McpError> {
        let mut manager = self.manager(server, url).await?;
        match &self.flow {
            Flow::ClientCredentials => {
                discover_checked(&mut manager, server, url, challenge).await?;
                let config = ClientCredentialsConfig::ClientSecret {
                    client_id: self.client_id.clone().unwrap_or_default(),
                    client_secret: self
                        .client_secret
                        .as_ref()
                        .map(|s| s.0.clone())
                        .unwrap_or_default(),
                    scopes: self.scopes.clone(),
                    resource: Some(resource_url(url)),
                };
                manager
                    .configure_client_credentials(&config)
                    .map_err(|e| failed(server, "configuring client credentials", e))?;
                let secret = self.client_secret.as_ref().map_or("", |s| s.0.as_str());
                // rmcp logs the token response (see `auth_logs`).
                super::auth_logs::quiet(&[secret], manager.exchange_client_credentials(&config))
                    .await
                    .map_err(|e| failed(server, "the client credentials grant failed", e))?;
                Ok(manager)
            }
            Flow::AuthorizationCode {
                redirect_uri,
                redirect,
            } => {
                // Refused here once enough logins gave tokens since the server last answered a
                // call (a login that fails or is given up gave none, and counts not).
                let done = self
                    .logins_unanswered
                    .load(std::sync::atomic::Ordering::Relaxed);
                if done >= MAX_LOGINS_UNANSWERED {
                    tracing::warn!(target: "llm_tools::mcp", server, logins = done, "the server refuses its tokens again; no more logins until it answers a call");
                    return Err(failed(
                        server,
                        "the server refuses the tokens again",
                        format!(
                            "the user was sent through the authorization {done} times since the \
                             server last answered a call (a new `OAuth` configuration starts \
                             the count again)"
                        ),
                    ));
                }
                let mut request = AuthorizationRequest::new(redirect_uri.clone())
                    .with_client_name(self.client_name.clone());
                if let Some(challenge) = challenge {
                    request = request.with_challenge(challenge);
                }
                if !self.scopes.is_empty() {
                    request = request.with_scopes(self.scopes.iter().cloned());
                }
                if let Some(id) = &self.client_id {
                    request = request.with_preregistered_client(id.clone());
                    if let Some(secret) = &self.client_secret {
                        request = request.with_client_secret(secret.0.clone());
                    }
                }
                if let Some(metadata_url) = &self.client_metadata_url {
                    request = request.with_client_metadata_url(metadata_url.clone());
                }
                // Discovered and checked here, then given to the session as it is: the session
                // (a client registration, the code's exchange) goes only where it was checked.
                discover_checked(&mut manager, server, url, challenge).await?;
                let session = AuthorizationSession::new(manager, request)
                    .await
                    .map_err(|(_, e)| failed(server, "starting authorization", e))?;
                let mut state = OAuthState::Session(session);
                let authorization_url = state
                    .get_authorization_url()
                    .await
                    .map_err(|e| failed(server, "making the authorization URL", e))?;
                let authorization_url = login_url(server, &authorization_url).map_err(|e| *e)?;
                let came_back = tokio::time::timeout(self.timeout, redirect(authorization_url))
                    .await
                    .map_err(|_| {
                        failed(
                            server,
                            "the login",
                            format!("no redirect within {:?}", self.timeout),
                        )
                    })?
                    .map_err(|why| failed(server, "the login", why))?;
                let callback = AuthorizationCallback::from_redirect_url(&came_back)
                    .map_err(|e| failed(server, "reading the redirect", e))?;
                // rmcp logs the code and the token response (see `auth_logs`).
                super::auth_logs::quiet(
                    &[&callback.code],
                    state.handle_callback_with_issuer(
                        &callback.code,
                        &callback.csrf_token,
                        callback.issuer.as_deref(),
                    ),
                )
                .await
                .map_err(|e| failed(server, "exchanging the code for tokens", e))?;
                let manager = state.into_authorization_manager().ok_or_else(|| {
                    failed(
                        server,
                        "authorization",
                        "no authorized session after the exchange",
                    )
                })?;
                self.logins_unanswered
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Ok(manager)
            }
        }
    }
}

/// What a session authorized with OAuth keeps, for a step-up: the manager its transport
/// takes its tokens from, and the settings.
#[derive(Clone)]
pub(crate) struct SessionAuth {
    pub(crate) manager: Arc<tokio::sync::Mutex<AuthorizationManager>>,
    pub(crate) oauth: OAuth,
    /// The server's URL: the key of its tokens.
    pub(crate) url: String,
}

/// The `scope` parameter of a `WWW-Authenticate` challenge.
fn challenged_scope(challenge: &str) -> Option<String> {
    let start = challenge.find("scope=\"")? + "scope=\"".len();
    let rest = &challenge[start..];
    let end = rest.find('"')?;
    Some(rest[..end].to_owned())
}

impl SessionAuth {
    /// After a request the server refused for want of authorization (401) or of a scope
    /// (403): the flow runs (a step-up for a scope), the new tokens go to the store, and the
    /// caller opens a new session, which takes them. `None` when the error is neither.
    pub(crate) async fn recover(
        &self,
        server: &str,
        error: &rmcp::ServiceError,
    ) -> Option<Result<(), McpError>> {
        if let Some(challenge) = crate::error::insufficient_scope(error) {
            return Some(self.step_up(server, &challenge).await);
        }
        let challenge = crate::error::authorization_required(error)?;
        tracing::info!(target: "llm_tools::mcp", server, "the server requires authorization; running the OAuth flow");
        Some(
            self.oauth
                .authorize(server, &self.url, Some(&challenge))
                .await
                .map(|_| ()),
        )
    }

    /// The server answered a call: a login may again follow a refusal (see
    /// [`MAX_LOGINS_UNANSWERED`]).
    pub(crate) fn answered(&self) {
        self.oauth
            .logins_unanswered
            .store(0, std::sync::atomic::Ordering::Relaxed);
    }

    /// A call was refused for want of a scope (403, `insufficient_scope`): the user is sent
    /// through the authorization again for the scopes granted so far and the challenged ones
    /// (at most [`MAX_STEP_UPS`] times for the `OAuth` configuration), and the new tokens go to
    /// the store, for the session the client opens next. Client credentials cannot step up.
    pub(crate) async fn step_up(&self, server: &str, challenge: &str) -> Result<(), McpError> {
        // Counted once the user is sent to the login (below); refused here once enough were.
        let done = self
            .oauth
            .step_ups
            .load(std::sync::atomic::Ordering::Relaxed);
        if done >= MAX_STEP_UPS {
            return Err(failed(
                server,
                "the server asks for more scopes again",
                format!("the user was sent through the authorization {MAX_STEP_UPS} times already"),
            ));
        }
        let Flow::AuthorizationCode { redirect, .. } = &self.oauth.flow else {
            return Err(failed(
                server,
                "the server asks for more scopes",
                "the client credentials flow cannot ask the user for them",
            ));
        };
        let scope = challenged_scope(challenge).unwrap_or_default();
        tracing::info!(target: "llm_tools::mcp", server, scope = scope.as_str(), "the server asks for more scopes; authorizing again");
        let url = self
            .manager
            .lock()
            .await
            .request_scope_upgrade(&scope)
            .await
            .map_err(|e| failed(server, "asking for more scopes", e))?;
        let url = login_url(server, &url).map_err(|e| *e)?;
        self.oauth
            .step_ups
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let came_back = tokio::time::timeout(self.oauth.timeout, redirect(url))
            .await
            .map_err(|_| {
                failed(
                    server,
                    "the login",
                    format!("no redirect within {:?}", self.oauth.timeout),
                )
            })?
            .map_err(|why| failed(server, "the login", why))?;
        let callback = AuthorizationCallback::from_redirect_url(&came_back)
            .map_err(|e| failed(server, "reading the redirect", e))?;
        let manager = self.manager.lock().await;
        // rmcp logs the code and the token response (see `auth_logs`).
        super::auth_logs::quiet(
            &[&callback.code],
            manager.exchange_code_for_token_with_issuer(
                &callback.code,
                &callback.csrf_token,
                callback.issuer.as_deref(),
            ),
        )
        .await
        .map_err(|e| failed(server, "exchanging the code for tokens", e))?;
        Ok(())
    }
}

/// The longest request line the loopback listener reads.
const MAX_REDIRECT_REQUEST: usize = 16 * 1024;

/// A small HTTP listener on a loopback port that receives the authorization server's redirect,
/// for CLIs: bind it, give [`redirect_uri`](Self::redirect_uri) to
/// [`OAuth::authorization_code`], and in the handler open the authorization URL (print it, or
/// start a browser) and return [`wait`](Self::wait)`().await`.
///
/// ```no_run
/// use llm_tools_mcp::{LoopbackRedirect, McpServer, OAuth};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let loopback = LoopbackRedirect::bind(8976).await?;
/// let oauth = OAuth::authorization_code(loopback.redirect_uri(), move |url| {
///     let loopback = loopback.clone();
///     async move {
///         println!("Sign in at {url}");
///         loopback.wait().await
///     }
/// });
/// let tickets = McpServer::http("https://mcp.example.com/mcp").oauth(oauth).connect("tickets").await?;
/// # let _ = tickets;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct LoopbackRedirect {
    listener: Arc<tokio::net::TcpListener>,
    redirect_uri: String,
}

impl LoopbackRedirect {
    /// Listens on `127.0.0.1:port` (0: a free port) for `GET /callback`.
    pub async fn bind(port: u16) -> std::io::Result<Self> {
        Self::boxed_bind(port).await
    }

    /// [`bind`](Self::bind) as a boxed future made here, so that a caller's crate compiles
    /// none of it.
    #[inline(never)]
    fn boxed_bind(port: u16) -> BoxFuture<'static, std::io::Result<Self>> {
        Box::pin(Self::bind_now(port))
    }

    async fn bind_now(port: u16) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        let port = listener.local_addr()?.port();
        Ok(Self {
            listener: Arc::new(listener),
            redirect_uri: format!("http://127.0.0.1:{port}/callback"),
        })
    }

    /// The redirect URI to register and give to [`OAuth::authorization_code`].
    pub fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    /// Waits for the browser's redirect and returns the URL it asked for, answering it with a
    /// page that says the window can be closed. Requests for other paths are answered 404
    /// and waited past; a request line longer than 16 KiB is refused.
    pub async fn wait(&self) -> Result<String, String> {
        self.boxed_wait().await
    }

    /// [`wait`](Self::wait) as a boxed future made here, so that a caller's crate compiles
    /// none of it.
    #[inline(never)]
    fn boxed_wait(&self) -> BoxFuture<'_, Result<String, String>> {
        Box::pin(self.wait_now())
    }

    async fn wait_now(&self) -> Result<String, String> {
        loop {
            let (mut stream, _) = self
                .listener
                .accept()
                .await
                .map_err(|e| format!("the loopback listener failed: {e}"))?;
            let mut buffer = Vec::with_capacity(1024);
            let mut chunk = [0u8; 1024];
            let line_end = loop {
                let read = stream
                    .read(&mut chunk)
                    .await
                    .map_err(|e| format!("reading the redirect failed: {e}"))?;
                if read == 0 {
                    break None;
                }
                buffer.extend_from_slice(&chunk[..read]);
                if let Some(end) = buffer.windows(2).position(|w| w == b"\r\n") {
                    break Some(end);
                }
                if buffer.len() > MAX_REDIRECT_REQUEST {
                    break None;
                }
            };
            let Some(end) = line_end else {
                let _ = stream
                    .write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                    .await;
                continue;
            };
            let line = String::from_utf8_lossy(&buffer[..end]).into_owned();
            let target = line.split(' ').nth(1).unwrap_or("");
            if !target.starts_with("/callback") {
                let _ = stream
                    .write_all(
                        b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                    )
                    .await;
                continue;
            }
            let page = "Signed in. You can close this window.";
            let _ = stream
                .write_all(
                    format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\n\
                         content-length: {}\r\nconnection: close\r\n\r\n{page}",
                        page.len()
                    )
                    .as_bytes(),
                )
                .await;
            let base = self.redirect_uri.trim_end_matches("/callback");
            return Ok(format!("{base}{target}"));
        }
    }
}

/// The server as OAuth names it (RFC 8707's `resource`, the token store's key): its URL
/// without credentials, query or fragment. A server's URL may carry a key in its query (or a
/// password), which only the server may see: the authorization server gets the resource, the
/// token store keeps it as a name, and either may show it. A URL with none of them stays as
/// it was written, so tokens stored under it are found as before.
fn resource_url(url: &str) -> String {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return url.to_owned();
    };
    let plain = parsed.username().is_empty()
        && parsed.password().is_none()
        && parsed.query().is_none()
        && parsed.fragment().is_none();
    if plain {
        return url.to_owned();
    }
    let mut resource = format!(
        "{}://{}",
        parsed.scheme(),
        parsed.host_str().unwrap_or_default()
    );
    if let Some(port) = parsed.port() {
        resource.push_str(&format!(":{port}"));
    }
    resource.push_str(parsed.path());
    resource
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Authorization-server metadata with these endpoints (the issuer the token endpoint's).
    fn metadata(token: &str, authorize: &str, register: Option<&str>) -> AuthorizationMetadata {
        serde_json::from_value(serde_json::json!({
            "issuer": token.trim_end_matches("/token"),
            "authorization_endpoint": authorize,
            "token_endpoint": token,
            "registration_endpoint": register,
        }))
        .unwrap()
    }

    /// A hostile MCP server names the authorization server: one whose token endpoint (which
    /// gets the client's secret and the tokens), login page or registration endpoint is plain
    /// http off loopback is refused before anything is sent to it; https is taken, and http
    /// on loopback only for an MCP server on loopback. (Unit-tested on the metadata: a real
    /// authorization server on a public host, which rmcp requires for one the server names,
    /// cannot run here.)
    #[test]
    fn authorization_servers_off_https_are_refused_before_anything_is_sent() {
        let https = "https://mcp.example.com/mcp";
        let local = "http://127.0.0.1:8080/mcp";
        let good = metadata(
            "https://as.example.com/token",
            "https://as.example.com/authorize",
            Some("https://as.example.com/register"),
        );
        assert!(checked_metadata("s", https, &good).is_ok());
        for (bad, what) in [
            (
                metadata(
                    "http://as.evil.example/token",
                    "https://as.evil.example/authorize",
                    None,
                ),
                "token endpoint",
            ),
            (
                metadata(
                    "https://as.example.com/token",
                    "https://as.example.com/authorize",
                    Some("http://as.example.com/register"),
                ),
                "registration endpoint",
            ),
            (
                metadata(
                    "ftp://as.example.com/token",
                    "https://as.example.com/authorize",
                    None,
                ),
                "token endpoint",
            ),
        ] {
            let refused = checked_metadata("s", https, &bad).unwrap_err();
            assert!(refused.to_string().contains(what), "{refused}");
            assert!(refused.to_string().contains("plain text"), "{refused}");
        }
        let loopback = metadata(
            "http://127.0.0.1:9000/token",
            "http://localhost:9000/authorize",
            None,
        );
        assert!(checked_metadata("s", local, &loopback).is_ok());
        assert!(
            checked_metadata("s", https, &loopback).is_err(),
            "an https MCP server's authorization server on plain http, even on loopback"
        );
    }

    #[test]
    fn a_resource_has_no_credentials_query_or_fragment() {
        assert_eq!(
            resource_url("https://mcp.example.com/mcp"),
            "https://mcp.example.com/mcp"
        );
        assert_eq!(
            resource_url("https://user:pw@mcp.example.com:8443/mcp?key=secret#top"),
            "https://mcp.example.com:8443/mcp"
        );
        assert_eq!(resource_url("not a url"), "not a url");
    }

    /// A server asking for more scopes on every call sends the user through the login at
    /// most [`MAX_STEP_UPS`] times, over every session of the configuration.
    #[tokio::test]
    async fn step_ups_stop_at_their_limit() {
        let oauth = OAuth::authorization_code("http://127.0.0.1:1/callback", |_| async {
            Err("no user here".to_owned())
        });
        oauth
            .step_ups
            .store(MAX_STEP_UPS, std::sync::atomic::Ordering::Relaxed);
        let manager = AuthorizationManager::new("http://127.0.0.1:1/mcp")
            .await
            .unwrap();
        let auth = SessionAuth {
            manager: Arc::new(tokio::sync::Mutex::new(manager)),
            oauth: oauth.clone(),
            url: "http://127.0.0.1:1/mcp".to_owned(),
        };
        let error = auth
            .step_up("s", r#"Bearer error="insufficient_scope", scope="more""#)
            .await
            .unwrap_err();
        assert!(error.to_string().contains("3 times already"), "{error}");
    }

    /// Login URLs of any scheme but https (or http to loopback) never reach the user.
    #[test]
    fn only_https_login_urls_reach_the_user() {
        for refused in [
            "javascript:fetch('//evil')//",
            "JavaScript:alert(1)",
            "file:///etc/passwd",
            "data:text/html,<script>x</script>",
            "http://evil.example/authorize",
            "https://user:pass@auth.example/authorize",
        ] {
            let error = login_url("s", refused).unwrap_err();
            assert!(error.to_string().contains("refused"), "{refused}: {error}");
        }
        assert!(login_url("s", "https://auth.example/authorize?x=1").is_ok());
        assert!(login_url("s", "http://127.0.0.1:9000/authorize").is_ok());
    }

    #[test]
    fn debug_shows_no_secret() {
        let oauth = OAuth::client_credentials("machine", "s3cret-value");
        let shown = format!("{oauth:?}");
        assert!(!shown.contains("s3cret-value"), "{shown}");
        assert!(shown.contains("machine"), "{shown}");
        let code = OAuth::authorization_code("http://127.0.0.1:1/callback", |_| async {
            Err("no login here".to_owned())
        })
        .with_client_id("app")
        .with_client_secret("app-s3cret");
        let server = crate::McpServer::http("https://mcp.example.com/mcp").oauth(code);
        let shown = format!("{server:?}");
        assert!(!shown.contains("app-s3cret"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
        let tokens = StoredTokens::from_json(serde_json::json!({
            "client_id": "c",
            "token_response": {"access_token": "tok-canary", "token_type": "bearer", "refresh_token": "ref-canary"},
        }))
        .unwrap();
        assert!(tokens.has_access_token());
        let shown = format!("{tokens:?}");
        assert!(!shown.contains("canary"), "{shown}");
        assert!(tokens.to_json().to_string().contains("tok-canary"));
    }

    #[tokio::test]
    async fn the_loopback_listener_returns_the_redirect_and_skips_other_paths() {
        let loopback = LoopbackRedirect::bind(0).await.unwrap();
        let uri = loopback.redirect_uri();
        let port: u16 = uri
            .trim_start_matches("http://127.0.0.1:")
            .trim_end_matches("/callback")
            .parse()
            .unwrap();
        let waiting = tokio::spawn({
            let loopback = loopback.clone();
            async move { loopback.wait().await }
        });
        for target in ["/favicon.ico", "/callback?code=abc&state=xyz"] {
            let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .unwrap();
            stream
                .write_all(format!("GET {target} HTTP/1.1\r\nhost: x\r\n\r\n").as_bytes())
                .await
                .unwrap();
            let mut answer = String::new();
            stream.read_to_string(&mut answer).await.unwrap();
            let expected = if target.starts_with("/callback") {
                "200"
            } else {
                "404"
            };
            assert!(answer.contains(expected), "{answer}");
        }
        assert_eq!(
            waiting.await.unwrap().unwrap(),
            format!("{uri}?code=abc&state=xyz")
        );
    }
}
