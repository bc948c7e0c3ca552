//! [`McpClient`]: a connection to one server, across its sessions (a new one after a
//! reconnect), and its tools as a [`ToolSource`]: connecting (`McpServer::connect`), listing
//! the tools (every page, filtered, named for the chat), and reconnecting, by hand or by
//! itself as the [`ReconnectPolicy`](crate::ReconnectPolicy) says.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

use llm_tools_core::{BoxFuture, Namespace, Tool, ToolSource, is_valid_tool_name};
use rmcp::model::ServerPeerInfo;
use rmcp::{Peer, RoleClient};

use super::config::McpServer;
use super::content::AttachmentLimits;
use super::drift::{self, DriftDecision, ToolDrift};
use super::listing::{ListingFailed, MAX_LISTING_BYTES, all_tools};
use super::names;
use super::reconnect::{ToolChanges, changes_between, report};
use super::session::{Session, Shared, listen_for_changes};
use super::tool::{MAX_REMOTE_TOOL_NAME_BYTES, McpTool, Offer, ToolClient};
use crate::error::{McpError, cut};
use crate::json_len::json_len;

/// The most tool definitions a session remembers as trusted (tools that left included, so
/// that one coming back changed is drift): a server that invents new names at each change
/// cannot grow the client's memory past this.
const MAX_TRUSTED_TOOLS: usize = 10_000;

/// The most bytes of tool definitions (measured as JSON) a session remembers as trusted: what
/// one listing may hold ([`MAX_LISTING_BYTES`]). A server that names a new, large tool at each
/// change cannot grow the client's memory past this either: a new tool past it is left out, as
/// one past [`MAX_TRUSTED_TOOLS`] is.
const MAX_TRUSTED_BYTES: usize = MAX_LISTING_BYTES;

/// A tool definition the session trusts, shared (a listing copies the trusted set it starts
/// from), and its size as JSON.
#[derive(Clone)]
struct Trusted {
    definition: Arc<serde_json::Value>,
    bytes: usize,
}

impl Trusted {
    fn new(definition: serde_json::Value) -> Self {
        let bytes = json_len(&definition, usize::MAX).unwrap_or(usize::MAX);
        Self {
            definition: Arc::new(definition),
            bytes,
        }
    }
}

/// The longest server name: the namespace leaves room for the tools' own names.
const MAX_SERVER_NAME_LEN: usize = 32;

/// What every tool of the server gets, from the [`McpServer`] settings.
struct ToolSettings {
    namespace: Namespace,
    allow: Option<Vec<String>>,
    deny: Vec<String>,
    defer: bool,
    needs_approval: bool,
    max_run_time: Option<Duration>,
    /// What one result of a tool keeps of attachments.
    attachments: AttachmentLimits,
}

/// The tools of the current listing, with the server's definitions they came from.
#[derive(Default)]
struct Listed {
    tools: Vec<Arc<dyn Tool>>,
    /// Each offered tool's definition as the server sent it, by the server's name.
    offered: HashMap<String, serde_json::Value>,
    /// The definitions the application trusts in this session, by the server's name: those of
    /// the session's first listing, tools added later, and accepted changes. A tool that left
    /// keeps its entry, so leaving and coming back changed is drift too.
    trusted: HashMap<String, Trusted>,
    /// Changes the application was asked about ([`DriftDecision::Ask`]), by the server's name.
    pending: HashMap<String, ToolDrift>,
    /// The server's names of tools listed changed and left out: asked about, or refused.
    withheld: HashSet<String>,
}

/// Which listing of a session this is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Listing {
    /// The first one of a connection.
    First,
    /// The first one after a reconnect the application asked for: its list is adopted
    /// (changes are warned about).
    Reconnected,
    /// The first one after a reconnect the client made by itself (the connection ended): the
    /// session's trust carries over, and a changed definition of a trusted tool is drift, as
    /// in [`Again`](Self::Again): a server cannot swap a tool by dropping its connection.
    Resumed,
    /// A later one in the same session (the server announced a change, or the application
    /// asked): changed definitions of tools already trusted are drift.
    Again,
    /// [`Again`](Self::Again) because the server announced a change, before a chat's request:
    /// skipped when another listing took the change in while this one waited for its turn, or
    /// while the wait after a failed one runs ([`Relisting`]).
    Announced,
}

/// The first wait after a listing of an announced change failed; each failure in a row
/// doubles it, up to [`MAX_RELIST_WAIT`].
const FIRST_RELIST_WAIT: Duration = Duration::from_secs(5);

/// The longest wait between listings of an announced change that keep failing.
const MAX_RELIST_WAIT: Duration = Duration::from_secs(300);

/// Failed listings of an announced change, in a row. A failed listing keeps the change
/// announced, so without a wait every later request of every chat holding the client would
/// wait on the server again (up to its timeout each, when the server never answers).
#[derive(Default)]
struct Relisting {
    failures: u32,
    not_before: Option<tokio::time::Instant>,
}

impl Relisting {
    /// Whether a listing of an announced change waits still.
    fn waits(&self) -> bool {
        self.not_before
            .is_some_and(|not_before| tokio::time::Instant::now() < not_before)
    }

    /// Notes how a listing of an announced change went; returns the wait before the next one
    /// after a failure.
    fn listed(&mut self, ok: bool) -> Option<Duration> {
        if ok {
            *self = Self::default();
            return None;
        }
        let wait = FIRST_RELIST_WAIT
            .saturating_mul(1 << self.failures.min(16))
            .min(MAX_RELIST_WAIT);
        self.failures = self.failures.saturating_add(1);
        self.not_before = Some(tokio::time::Instant::now() + wait);
        Some(wait)
    }
}

/// The outcome of the last sequence of reconnect attempts, which calls that waited for it
/// share.
#[derive(Default)]
struct Attempts {
    last: Option<Result<(), String>>,
}

struct Inner {
    /// This client, for the tools it makes.
    this: Weak<Inner>,
    name: Arc<str>,
    /// How to reach the server again.
    server: McpServer,
    settings: ToolSettings,
    timeout: Duration,
    /// The session calls go through; a reconnect swaps it.
    session: RwLock<Arc<Session>>,
    /// Set by [`McpClient::close`], cleared by a reconnect: a closed client does not reconnect
    /// by itself.
    closed: AtomicBool,
    /// Set when a chat took the client while its session had ended: the chat's next refresh
    /// reconnects.
    reconnect_pending: AtomicBool,
    /// One reconnect at a time; calls that waited share the outcome.
    reconnecting: tokio::sync::Mutex<Attempts>,
    /// How many reconnects finished (a caller that saw this change while it waited shares that
    /// reconnect's outcome instead of starting another).
    reconnects: AtomicU64,
    tools: RwLock<Listed>,
    generation: AtomicU64,
    /// One listing at a time.
    listing: tokio::sync::Mutex<()>,
    /// The wait after failed listings of an announced change.
    relisting: std::sync::Mutex<Relisting>,
    /// The roots and the chat's provider, which every session's handler reads.
    shared: Arc<Shared>,
}

impl Inner {
    /// The wait after failed listings of an announced change.
    fn relisting(&self) -> std::sync::MutexGuard<'_, Relisting> {
        self.relisting
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The current session.
    fn session(&self) -> Arc<Session> {
        Arc::clone(
            &self
                .session
                .read()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        )
    }

    /// Whether the current listing offers the server's tool `remote`.
    fn offers(&self, remote: &str) -> Offer {
        let listed = self
            .tools
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if listed.offered.contains_key(remote) {
            Offer::Offered
        } else if listed.withheld.contains(remote) {
            Offer::Withheld
        } else {
            Offer::Gone
        }
    }

    /// Whether a call on an ended session reconnects by itself.
    fn reconnects_automatically(&self) -> bool {
        self.server.reconnect.is_automatic() && !self.closed.load(Ordering::Acquire)
    }

    /// A session to call on: the current one when open; when it ended, a new one if the
    /// policy reconnects by itself. The error is text for the model.
    async fn live_session(&self) -> Result<Arc<Session>, String> {
        let session = self.session();
        if session.is_open() {
            return Ok(session);
        }
        if self.closed.load(Ordering::Acquire) {
            return Err(format!(
                "the session with the MCP server `{}` was closed",
                self.name
            ));
        }
        if !self.reconnects_automatically() {
            return Err(format!(
                "the connection to the MCP server `{}` has ended (the server stopped or the \
                 connection was lost); the application can reconnect it",
                self.name
            ));
        }
        match self.reconnect_after(&session).await {
            Ok(()) => Ok(self.session()),
            Err(error) => Err(format!(
                "the connection to the MCP server `{}` has ended and reconnecting failed: \
                 {error}; try again later",
                self.name
            )),
        }
    }

    /// Reconnects a session that ended, as the policy says; calls that come while it runs
    /// wait and share its outcome. Nothing to do when another caller replaced `seen` already.
    async fn reconnect_after(&self, seen: &Arc<Session>) -> Result<(), McpError> {
        let ticket = self.reconnects.load(Ordering::Acquire);
        let mut attempts = self.reconnecting.lock().await;
        let current = self.session();
        if !Arc::ptr_eq(&current, seen) && current.is_open() {
            return Ok(());
        }
        if self.reconnects.load(Ordering::Acquire) != ticket
            && let Some(last) = &attempts.last
        {
            // A reconnect finished while this caller waited: its outcome is this one's.
            return last.clone().map_err(|last| McpError::ReconnectFailed {
                server: self.name.to_string(),
                attempts: self.server.reconnect.max_attempts().max(1),
                last,
            });
        }
        let policy = self.server.reconnect;
        let mut last = String::new();
        let mut outcome = Err(());
        for attempt in 1..=policy.max_attempts().max(1) {
            let wait = policy.delay_before(attempt);
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
            match self.replace_session(true).await {
                Ok(_) => {
                    outcome = Ok(());
                    break;
                }
                Err(error) => {
                    tracing::warn!(
                        target: "llm_tools::mcp",
                        server = &*self.name,
                        attempt,
                        error = %error,
                        "reconnecting failed"
                    );
                    last = error.to_string();
                }
            }
        }
        let result = outcome.map_err(|()| last);
        attempts.last = Some(result.clone());
        self.reconnects.fetch_add(1, Ordering::AcqRel);
        result.map_err(|last| McpError::ReconnectFailed {
            server: self.name.to_string(),
            attempts: policy.max_attempts().max(1),
            last,
        })
    }

    /// Opens a new session, swaps it in (the old one is closed) and lists the tools on it.
    async fn replace_session(&self, automatic: bool) -> Result<ToolChanges, McpError> {
        let session = Arc::new(Session::open(&self.server, &self.name, &self.shared).await?);
        let old = std::mem::replace(
            &mut *self
                .session
                .write()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
            Arc::clone(&session),
        );
        self.closed.store(false, Ordering::Release);
        self.reconnect_pending.store(false, Ordering::Release);
        old.close().await;
        tracing::info!(
            target: "llm_tools::mcp",
            server = &*self.name,
            automatic,
            "reconnected"
        );
        listen_for_changes(&self.name, &session, self.timeout).await;
        let listing = if automatic {
            Listing::Resumed
        } else {
            Listing::Reconnected
        };
        self.list(&session, listing).await
    }

    /// Reads every page of `tools/list` on `session` and installs the result; returns how it
    /// differs from the list before. After a reconnect, removed and changed tools are warned
    /// about (after a server's own list change they are expected, and logged at debug); in a
    /// session's later listings a changed definition of a trusted tool is drift, which the
    /// application's [`DriftHandler`](super::drift::DriftHandler) decides on.
    ///
    /// A listing of an announced change ([`Listing::Announced`]) that fails is tried again
    /// only after a wait ([`Relisting`]), and is logged here.
    async fn list(&self, session: &Session, listing: Listing) -> Result<ToolChanges, McpError> {
        let _one_at_a_time = self.listing.lock().await;
        if listing != Listing::Announced {
            let listed = self.list_locked(session, listing).await;
            if listed.is_ok() {
                // The server lists again: an announced change is listed at once again.
                self.relisting().listed(true);
            }
            return listed;
        }
        // Another listing took the change in while this one waited, the wait after a failed
        // one runs, or a reconnect replaced the session meanwhile: nothing to list here.
        let current = std::ptr::eq(session, Arc::as_ptr(&self.session())) && session.is_open();
        if !current
            || !session.events.list_changed.load(Ordering::Acquire)
            || self.relisting().waits()
        {
            return Ok(ToolChanges::default());
        }
        let listed = self.list_locked(session, listing).await;
        let retry_in = self.relisting().listed(listed.is_ok());
        if let Err(error) = &listed {
            tracing::warn!(
                target: "llm_tools::mcp",
                server = &*self.name,
                error = %error,
                retry_in = ?retry_in,
                "listing the changed tools failed; the chats keep the previous list, and the \
                 next try waits"
            );
        }
        listed
    }

    /// [`list`](Self::list), under its lock.
    async fn list_locked(
        &self,
        session: &Session,
        listing: Listing,
    ) -> Result<ToolChanges, McpError> {
        let reconnected = matches!(listing, Listing::Reconnected | Listing::Resumed);
        // A change announced while this listing runs is seen by the next one.
        session.events.list_changed.store(false, Ordering::Release);
        let listed = tokio::time::timeout(self.timeout, all_tools(&session.peer)).await;
        let remote = match listed {
            Err(_) => {
                session.events.list_changed.store(true, Ordering::Release);
                return Err(McpError::Timeout {
                    server: self.name.to_string(),
                    what: "tools/list",
                    after: self.timeout,
                });
            }
            Ok(Err(ListingFailed::Failed(source))) => {
                session.events.list_changed.store(true, Ordering::Release);
                return Err(McpError::Request {
                    server: self.name.to_string(),
                    what: "tools/list",
                    source,
                });
            }
            Ok(Err(ListingFailed::Over { what, limit })) => {
                session.events.list_changed.store(true, Ordering::Release);
                return Err(McpError::OverLimit {
                    server: self.name.to_string(),
                    what,
                    limit,
                });
            }
            Ok(Ok(tools)) => tools,
        };
        let settings = &self.settings;
        let (mut trusted, mut pending) = if matches!(
            listing,
            Listing::Again | Listing::Announced | Listing::Resumed
        ) {
            let listed = self
                .tools
                .read()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            (listed.trusted.clone(), listed.pending.clone())
        } else {
            (HashMap::new(), HashMap::new())
        };
        let mut trusted_bytes = trusted
            .values()
            .map(|t| t.bytes)
            .fold(0, usize::saturating_add);
        // Changes waiting for the application count too: each keeps its new definition. What
        // is trusted and what waits stay within `MAX_TRUSTED_BYTES` together, so adopting a
        // waiting change (`accept_drift`) keeps within it too.
        let mut pending_bytes = pending
            .values()
            .map(drift_bytes)
            .fold(0, usize::saturating_add);
        let reserved = reserved_names(&self.name, &trusted);
        let mut taken = HashSet::new();
        let mut withheld = HashSet::new();
        let mut tools: Vec<Arc<dyn Tool>> = Vec::with_capacity(remote.len());
        let mut offered = HashMap::with_capacity(remote.len());
        for tool in remote {
            if tool.name.len() > MAX_REMOTE_TOOL_NAME_BYTES {
                // Left out before it is named anywhere: not trusted, not in a log line whole.
                tracing::warn!(
                    target: "llm_tools::mcp",
                    server = &*self.name,
                    tool = &*cut(&tool.name, MAX_REMOTE_TOOL_NAME_BYTES),
                    bytes = tool.name.len(),
                    limit = MAX_REMOTE_TOOL_NAME_BYTES,
                    "a tool of the server is left out: its name is longer than a tool name may be"
                );
                continue;
            }
            let remote_name = tool.name.to_string();
            if settings.deny.contains(&remote_name)
                || settings
                    .allow
                    .as_ref()
                    .is_some_and(|allow| !allow.contains(&remote_name))
            {
                continue;
            }
            let Some(local) = local_name_of(&self.name, &remote_name, &reserved, &mut taken) else {
                tracing::warn!(
                    target: "llm_tools::mcp",
                    server = &*self.name,
                    tool = remote_name.as_str(),
                    "two tools of the server map to the same name; the later one is left out"
                );
                continue;
            };
            let definition = serde_json::to_value(&tool).unwrap_or_default();
            match trusted.get(&remote_name) {
                Some(before) if *before.definition != definition => {
                    let drift = ToolDrift {
                        server: self.name.to_string(),
                        tool: remote_name.clone(),
                        changed: drift::changed_fields(&before.definition, &definition),
                        before: (*before.definition).clone(),
                        after: definition.clone(),
                    };
                    let without_before = trusted_bytes.saturating_sub(before.bytes);
                    match drift::decide(self.server.on_tool_drift.as_ref(), &drift) {
                        DriftDecision::Accept => {
                            unpend(&mut pending, &remote_name, &mut pending_bytes);
                            let accepted = Trusted::new(definition.clone());
                            let after = without_before.saturating_add(accepted.bytes);
                            if after.saturating_add(pending_bytes) > MAX_TRUSTED_BYTES {
                                tracing::warn!(
                                    target: "llm_tools::mcp",
                                    server = &*self.name,
                                    tool = remote_name.as_str(),
                                    limit = MAX_TRUSTED_BYTES,
                                    "the accepted definition would take the session's trusted \
                                     definitions past their limit; the tool leaves the chat"
                                );
                                withheld.insert(remote_name);
                                continue;
                            }
                            trusted_bytes = after;
                            trusted.insert(remote_name.clone(), accepted);
                        }
                        DriftDecision::Ask => {
                            withheld.insert(remote_name.clone());
                            unpend(&mut pending, &remote_name, &mut pending_bytes);
                            let bytes = drift_bytes(&drift);
                            let waiting = pending_bytes.saturating_add(bytes);
                            if trusted_bytes.saturating_add(waiting) > MAX_TRUSTED_BYTES {
                                tracing::warn!(
                                    target: "llm_tools::mcp",
                                    server = &*self.name,
                                    tool = remote_name.as_str(),
                                    limit = MAX_TRUSTED_BYTES,
                                    "the changed definition would take the session's trusted and \
                                     waiting definitions past their limit; refused"
                                );
                                continue;
                            }
                            pending_bytes = waiting;
                            pending.insert(remote_name, drift);
                            continue;
                        }
                        DriftDecision::Refuse => {
                            unpend(&mut pending, &remote_name, &mut pending_bytes);
                            withheld.insert(remote_name);
                            continue;
                        }
                    }
                }
                Some(_) => {
                    // The trusted definition (again): nothing waits for a decision.
                    unpend(&mut pending, &remote_name, &mut pending_bytes);
                }
                None => {
                    let new = Trusted::new(definition.clone());
                    let kept = trusted_bytes.saturating_add(pending_bytes);
                    if trusted.len() >= MAX_TRUSTED_TOOLS
                        || kept.saturating_add(new.bytes) > MAX_TRUSTED_BYTES
                    {
                        tracing::warn!(
                            target: "llm_tools::mcp",
                            server = &*self.name,
                            tool = remote_name.as_str(),
                            bytes = new.bytes,
                            limit_tools = MAX_TRUSTED_TOOLS,
                            limit_bytes = MAX_TRUSTED_BYTES,
                            "the server has named more tools, or larger ones, in this session \
                             than the client keeps; a new one is left out"
                        );
                        continue;
                    }
                    trusted_bytes = trusted_bytes.saturating_add(new.bytes);
                    trusted.insert(remote_name.clone(), new);
                }
            }
            match McpTool::new(
                tool,
                local,
                settings.namespace.clone(),
                settings.defer,
                settings.needs_approval,
                settings.max_run_time,
                settings.attachments,
                Arc::clone(&self.name),
                self.me(),
            ) {
                Ok(tool) => {
                    tools.push(Arc::new(tool));
                    offered.insert(remote_name, definition);
                }
                Err(reason) => tracing::warn!(
                    target: "llm_tools::mcp",
                    server = &*self.name,
                    reason = reason.as_str(),
                    "a tool of the server is left out"
                ),
            }
        }
        let changes = {
            let mut listed = self
                .tools
                .write()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let changes = changes_between(&listed.offered, &offered);
            *listed = Listed {
                tools,
                offered,
                trusted,
                pending,
                withheld,
            };
            changes
        };
        self.generation.fetch_add(1, Ordering::AcqRel);
        report(&self.name, &changes, reconnected);
        Ok(changes)
    }

    /// A handle the client's tools keep: weak, so tools a chat holds do not keep the session
    /// open after the last client handle is dropped.
    fn me(&self) -> Weak<Inner> {
        self.this.clone()
    }
}

impl ToolClient for Inner {
    fn session(&self) -> Arc<Session> {
        Inner::session(self)
    }

    fn offers(&self, remote: &str) -> Offer {
        Inner::offers(self, remote)
    }

    fn reconnects_automatically(&self) -> bool {
        Inner::reconnects_automatically(self)
    }

    fn live_session(&self) -> BoxFuture<'_, Result<Arc<Session>, String>> {
        Box::pin(Inner::live_session(self))
    }

    fn reconnect_after<'a>(
        &'a self,
        seen: &'a Arc<Session>,
    ) -> BoxFuture<'a, Result<(), McpError>> {
        Box::pin(Inner::reconnect_after(self, seen))
    }
}

/// An open session with an MCP server and its tools, as [`McpServer::connect`] returns it.
///
/// It is a [`ToolSource`]: give it to a chat with
/// [`McpChat::with_mcp`](crate::McpChat::with_mcp) (or `Chat::with_tool_source`) and the
/// server's tools join the chat under the server's name as their namespace; when the server
/// announces a change of its list, the chat offers the new list from its next request on. A
/// client is a cheap handle (clone it for each chat); the session ends when the last handle is
/// dropped or on [`close`](Self::close).
///
/// When the session ends (a stdio server's process exits, an HTTP server goes away),
/// [`reconnect`](Self::reconnect) opens a new one, starting the command again or repeating
/// the HTTP handshake, and the chats that have the client keep its tools: they call through
/// whichever session is current. With [`McpServer::reconnect`] a call that finds the session
/// ended reconnects by itself.
#[derive(Clone)]
pub struct McpClient {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("name", &self.inner.name)
            .field("tools", &self.tool_names())
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// Starts (stdio) or reaches (HTTP) the server, opens the session and lists its tools,
    /// every page of them. `name` is the namespace its tools get in a chat, so it must be a
    /// valid tool name of at most 32 characters (`files`, `github`).
    pub async fn connect(self, name: impl Into<String>) -> Result<McpClient, McpError> {
        McpClient::boxed_connect(self, name.into()).await
    }
}

impl McpClient {
    /// [`connect`](Self::connect) as a boxed future. The public `async fn`s that reach the
    /// session's code go through plain functions like this one: rustc can copy an async body
    /// into every codegen unit that polls it, the application's crate included; behind a box
    /// it is compiled once, in this crate.
    #[inline(never)]
    fn boxed_connect(
        server: McpServer,
        name: String,
    ) -> BoxFuture<'static, Result<Self, McpError>> {
        Box::pin(Self::connect(server, name))
    }

    pub(crate) async fn connect(server: McpServer, name: String) -> Result<Self, McpError> {
        server.check_plain_http().map_err(|e| *e)?;
        if name.len() > MAX_SERVER_NAME_LEN || !is_valid_tool_name(&name) {
            return Err(McpError::InvalidConfig(format!(
                "the server name `{name}` must match ^[A-Za-z_][A-Za-z0-9_-]*$ and have at most \
                 {MAX_SERVER_NAME_LEN} characters: it is the namespace of its tools"
            )));
        }
        let shared = Arc::new(Shared {
            roots: RwLock::new(server.roots.clone().unwrap_or_default()),
            chat_provider: RwLock::default(),
        });
        let session = Arc::new(Session::open(&server, &name, &shared).await?);
        let description = server
            .description
            .clone()
            .or_else(|| session.peer.peer_info().and_then(|info| describe(&info)))
            .unwrap_or_else(|| format!("Tools of the MCP server `{name}`"));
        let settings = ToolSettings {
            namespace: Namespace::owned(name.clone()).with_description(description),
            allow: server.allow.clone(),
            deny: server.deny.clone(),
            defer: server.defer,
            needs_approval: server.needs_approval,
            max_run_time: server.max_run_time,
            attachments: server.attachments,
        };
        let timeout = server.timeout;
        let name: Arc<str> = Arc::from(name);
        let inner = Arc::new_cyclic(|this| Inner {
            this: this.clone(),
            name,
            server,
            settings,
            timeout,
            session: RwLock::new(Arc::clone(&session)),
            closed: AtomicBool::new(false),
            reconnect_pending: AtomicBool::new(false),
            reconnecting: tokio::sync::Mutex::default(),
            reconnects: AtomicU64::new(0),
            tools: RwLock::default(),
            generation: AtomicU64::new(0),
            listing: tokio::sync::Mutex::new(()),
            relisting: std::sync::Mutex::default(),
            shared,
        });
        listen_for_changes(&inner.name, &session, timeout).await;
        let listed = inner.list(&session, Listing::First).await;
        // A server that lets the handshake through and wants authorization for its tools:
        // the flow runs, and a new session takes the new tokens.
        #[cfg(feature = "auth")]
        if let Err(McpError::Request { source, .. }) = &listed
            && let Some(auth) = &session.auth
            && let Some(recovered) = auth.recover(&inner.name, source).await
        {
            recovered?;
            inner.replace_session(false).await?;
            return Ok(Self { inner });
        }
        listed?;
        Ok(Self { inner })
    }

    /// The name given to the server: the namespace of its tools.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The joined names of the server's tools as a chat sees them (`files_read_file`).
    pub fn tool_names(&self) -> Vec<String> {
        self.tools()
            .iter()
            .map(|t| t.spec().joined_name().to_owned())
            .collect()
    }

    /// What the server said about itself in the handshake of the current session: its name,
    /// version, instructions, capabilities and the protocol version agreed on.
    pub fn server_info(&self) -> Option<Arc<ServerPeerInfo>> {
        self.inner.session().peer.peer_info()
    }

    /// The protocol version agreed on (`2025-11-25`, `2026-07-28`, …).
    pub fn protocol_version(&self) -> Option<String> {
        self.server_info()
            .map(|info| info.protocol_version.to_string())
    }

    /// The last lines the server wrote to its stderr (stdio; empty for Streamable HTTP), oldest
    /// first, the line being written included: at most
    /// [`McpServer::stderr_tail_lines`] of them, each cut at [`McpServer::max_stderr_line`]
    /// bytes (a cut line ends with `… [N bytes cut]`). After a reconnect, the new process's.
    pub fn stderr_tail(&self) -> Vec<String> {
        self.inner
            .session()
            .stderr
            .as_ref()
            .map(|tail| tail.lines())
            .unwrap_or_default()
    }

    /// The process id of the server the current session runs on (stdio; `None` for Streamable
    /// HTTP): to watch it, or to stop it from outside.
    pub fn pid(&self) -> Option<u32> {
        self.inner.session().pid
    }

    /// Whether the current session is open, as far as the client knows: `false` after
    /// [`close`](Self::close), once a stdio server's process has exited, or once the HTTP
    /// connection failed for good.
    pub fn is_connected(&self) -> bool {
        self.inner.session().is_open()
    }

    /// The underlying rmcp peer of the current session, for requests this crate does not wrap
    /// (resources, prompts). After a [`reconnect`](Self::reconnect) it is another peer: take it
    /// again.
    pub fn peer(&self) -> Peer<RoleClient> {
        self.inner.session().peer.clone()
    }

    /// Lists the tools again now, whether or not the server announced a change.
    pub async fn refresh_tools(&self) -> Result<(), McpError> {
        self.boxed_refresh_tools().await
    }

    /// [`refresh_tools`](Self::refresh_tools) as a boxed future (see
    /// [`boxed_connect`](Self::boxed_connect)).
    #[inline(never)]
    fn boxed_refresh_tools(&self) -> BoxFuture<'_, Result<(), McpError>> {
        Box::pin(async move {
            let session = self.inner.session();
            self.inner.list(&session, Listing::Again).await.map(|_| ())
        })
    }

    /// The changes of tool definitions waiting for the application's decision (the handler of
    /// [`McpServer::on_tool_drift`] said [`DriftDecision::Ask`]), sorted by tool name: each
    /// tool is out of the chat until [`accept_drift`](Self::accept_drift).
    pub fn pending_drifts(&self) -> Vec<ToolDrift> {
        let mut pending: Vec<ToolDrift> = self
            .inner
            .tools
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .pending
            .values()
            .cloned()
            .collect();
        pending.sort_by(|a, b| a.tool.cmp(&b.tool));
        pending
    }

    /// Adopts the pending change of the server's tool `tool` (its name on the server): the
    /// definition in [`pending_drifts`](Self::pending_drifts) becomes the trusted one and the
    /// tools are listed again, so the chat offers the tool from its next request on (if the
    /// server changed it once more meanwhile, that is drift again). `false` when no change of
    /// that tool waits.
    pub async fn accept_drift(&self, tool: &str) -> Result<bool, McpError> {
        self.boxed_accept_drift(tool).await
    }

    /// [`accept_drift`](Self::accept_drift) as a boxed future (see
    /// [`boxed_connect`](Self::boxed_connect)).
    #[inline(never)]
    fn boxed_accept_drift<'a>(&'a self, tool: &'a str) -> BoxFuture<'a, Result<bool, McpError>> {
        Box::pin(self.accept_drift_now(tool))
    }

    /// [`accept_drift`](Self::accept_drift)'s work.
    async fn accept_drift_now(&self, tool: &str) -> Result<bool, McpError> {
        {
            let mut listed = self
                .inner
                .tools
                .write()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let Some(drift) = listed.pending.remove(tool) else {
                return Ok(false);
            };
            // Within the trusted bytes: a listing keeps what is trusted and what waits within
            // them together, and this swaps a waiting definition for a trusted one.
            listed.trusted.insert(drift.tool, Trusted::new(drift.after));
        }
        self.refresh_tools().await?;
        Ok(true)
    }

    /// Opens a new session with the server, in one attempt: a stdio server's command is started
    /// again, an HTTP server gets a new handshake; the old session is closed (its calls still
    /// running fail). The tools are listed on the new session, and every chat that has the
    /// client keeps its tools: they call through the new session, and the chat offers the new
    /// list from its next request on. A tool the server no longer offers answers the model's
    /// call with an error result saying so; tools that left or changed are logged
    /// (`llm_tools::mcp`, warn) and returned.
    ///
    /// Works on a session that ended, on one that is still open (it is replaced) and after
    /// [`close`](Self::close). On failure the client keeps its ended session and its tool
    /// list, and can be reconnected later.
    ///
    /// ```no_run
    /// # async fn run(files: llm_tools_mcp::McpClient) -> Result<(), llm_tools_mcp::McpError> {
    /// if !files.is_connected() {
    ///     let changes = files.reconnect().await?;
    ///     if !changes.removed.is_empty() {
    ///         eprintln!("gone after the restart: {:?}", changes.removed);
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn reconnect(&self) -> Result<ToolChanges, McpError> {
        self.boxed_reconnect().await
    }

    /// [`reconnect`](Self::reconnect) as a boxed future (see
    /// [`boxed_connect`](Self::boxed_connect)).
    #[inline(never)]
    fn boxed_reconnect(&self) -> BoxFuture<'_, Result<ToolChanges, McpError>> {
        Box::pin(async move {
            let mut attempts = self.inner.reconnecting.lock().await;
            let replaced = self.inner.replace_session(false).await;
            attempts.last = Some(replaced.as_ref().map(|_| ()).map_err(ToString::to_string));
            self.inner.reconnects.fetch_add(1, Ordering::AcqRel);
            replaced
        })
    }

    /// Ends the session: a stdio server's process is stopped. Calls still running fail, and
    /// the tools a chat took from this client fail from then on (a closed client does not
    /// reconnect by itself), until [`reconnect`](Self::reconnect).
    pub async fn close(&self) {
        self.boxed_close().await;
    }

    /// [`close`](Self::close) as a boxed future (see [`boxed_connect`](Self::boxed_connect)).
    #[inline(never)]
    fn boxed_close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.inner.closed.store(true, Ordering::Release);
            self.inner.session().close().await;
        })
    }

    /// The current session (another after a reconnect).
    pub(super) fn current_session(&self) -> Arc<Session> {
        self.inner.session()
    }

    /// The roots and the chat's provider the sessions' handlers read.
    pub(super) fn shared(&self) -> &Arc<Shared> {
        &self.inner.shared
    }

    /// How long one request may take.
    pub(super) fn timeout(&self) -> Duration {
        self.inner.timeout
    }

    /// Whether the application declared roots at connect ([`McpServer::roots`]).
    pub(super) fn declares_roots(&self) -> bool {
        self.inner.server.roots.is_some()
    }

    /// What one result of a tool keeps of attachments.
    pub(super) fn attachment_limits(&self) -> AttachmentLimits {
        self.inner.settings.attachments
    }

    /// The namespace of the client's tools.
    pub(super) fn namespace(&self) -> &Namespace {
        &self.inner.settings.namespace
    }

    /// Whether `other` is a handle on the same client (a clone of this one).
    pub(crate) fn same_client(&self, other: &McpClient) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Whether `other` reaches the same server the same way (the same command, arguments,
    /// environment and folder; or the same URL, headers and token) and gives it the same name.
    pub(crate) fn same_server(&self, other: &McpClient) -> bool {
        self.inner.name == other.inner.name
            && self.inner.server.transport == other.inner.server.transport
    }

    /// Whether the session ended, by [`close`](Self::close) or by itself.
    pub(crate) fn has_ended(&self) -> bool {
        !self.is_connected()
    }

    /// Has the next refresh of a chat reconnect the client when its session ended by itself
    /// (not by [`close`](Self::close)).
    pub(crate) fn reconnect_before_next_request(&self) {
        if !self.is_connected() && !self.inner.closed.load(Ordering::Acquire) {
            self.inner.reconnect_pending.store(true, Ordering::Release);
        }
    }
}

/// The namespace description from the handshake: the instructions, else the description.
fn describe(info: &ServerPeerInfo) -> Option<String> {
    let nonempty = |s: &String| !s.trim().is_empty();
    let text = info.instructions.clone().filter(nonempty).or_else(|| {
        info.server_info
            .as_ref()
            .and_then(|i| i.description.clone())
            .filter(nonempty)
    })?;
    // Sent to the model as the namespace's description: a server's long text is cut.
    Some(cut(&text, super::tool::MAX_TOOL_DESCRIPTION_BYTES).into_owned())
}

impl ToolSource for McpClient {
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.inner
            .tools
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .tools
            .clone()
    }

    fn generation(&self) -> u64 {
        self.inner.generation.load(Ordering::Acquire)
    }

    /// Lists the tools again when the server announced a change; reconnects first when a chat
    /// took the client after its session ended (a durable chat loaded again, say).
    fn refresh(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let session = self.inner.session();
            if self.inner.reconnect_pending.load(Ordering::Acquire) && !session.is_open() {
                if let Err(error) = self.inner.reconnect_after(&session).await {
                    tracing::warn!(
                        target: "llm_tools::mcp",
                        server = &*self.inner.name,
                        error = %error,
                        "reconnecting before the chat's request failed; its calls fail until \
                         the client reconnects"
                    );
                }
                self.inner.reconnect_pending.store(false, Ordering::Release);
                return;
            }
            if !session.events.list_changed.load(Ordering::Acquire)
                || self.inner.relisting().waits()
            {
                return;
            }
            // A failure is logged by `list`.
            let _ = self.inner.list(&session, Listing::Announced).await;
        })
    }

    fn source_name(&self) -> &str {
        &self.inner.name
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}

/// The bytes a change waiting for the application keeps: its new definition, as JSON.
fn drift_bytes(drift: &ToolDrift) -> usize {
    json_len(&drift.after, usize::MAX).unwrap_or(usize::MAX)
}

/// Takes the change of `tool` waiting for the application, if any, out of `pending` and its
/// bytes out of `pending_bytes`.
fn unpend(pending: &mut HashMap<String, ToolDrift>, tool: &str, pending_bytes: &mut usize) {
    if let Some(drift) = pending.remove(tool) {
        *pending_bytes = pending_bytes.saturating_sub(drift_bytes(&drift));
    }
}

/// The local names of every tool the session trusts, listed now or not, and whose they are.
fn reserved_names<V>(namespace: &str, trusted: &HashMap<String, V>) -> HashMap<String, String> {
    trusted
        .keys()
        .map(|remote| (names::candidate(namespace, remote), remote.clone()))
        .collect()
}

/// The local name of the server's tool `remote` in this listing ([`names::local_name`]), or
/// `None` when it is taken: by a tool listed before it, or reserved by a tool the session
/// trusts (`a_b` beside the trusted `a.b`, whatever their order), so a name the model knows
/// never changes tools without the drift check.
fn local_name_of(
    namespace: &str,
    remote: &str,
    reserved: &HashMap<String, String>,
    taken: &mut HashSet<String>,
) -> Option<String> {
    let reserved_by_another = reserved
        .get(&names::candidate(namespace, remote))
        .is_some_and(|owner| owner != remote);
    if reserved_by_another {
        return None;
    }
    names::local_name(namespace, remote, taken)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A new tool never takes the local name of one the session trusts, whatever order the
    /// server lists them in, nor while the trusted one is away.
    #[test]
    fn a_new_tool_never_takes_a_trusted_tools_name() {
        let trusted: HashMap<String, serde_json::Value> =
            [("a.b".to_owned(), serde_json::Value::Null)].into();
        let reserved = reserved_names("srv", &trusted);
        let mut taken = HashSet::new();
        let locals: Vec<Option<String>> = ["a_b", "c", "a.b"]
            .iter()
            .map(|remote| local_name_of("srv", remote, &reserved, &mut taken))
            .collect();
        assert_eq!(locals, [None, Some("c".to_owned()), Some("a_b".to_owned())]);
        let mut taken = HashSet::new();
        assert_eq!(
            local_name_of("srv", "a_b", &reserved, &mut taken),
            None,
            "a.b away"
        );
    }
}
