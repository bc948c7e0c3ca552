//! [`McpClient`]: a session with a server (a new one after a reconnect), its tools as a [`ToolSource`].

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use llm_tools_core::{
    Answer, BoxFuture, Namespace, Tool, ToolContext, ToolSource, is_valid_tool_name,
};
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    Implementation, ProgressNotificationParam, ProgressToken, ProtocolVersion, ServerNotification,
    ServerPeerInfo, SubscriptionFilter,
};
use rmcp::model::{JsonRpcMessage, JsonRpcNotification};
use rmcp::service::ClientInitializeError;
use rmcp::service::{RequestContext, RunningService, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt as _, Peer, RoleClient};

use super::config::{Lifecycle, McpServer, Transport as Endpoint};
use super::reconnect::ToolChanges;
use super::stdio::{self, ChildProcess, EXIT_GRACE, HandedOver, StderrTail};
use super::tool::McpTool;
use super::{http, names};
use crate::elicitation::{self, ElicitationHandler};
use crate::error::{self, McpError};

/// The longest server name: the namespace leaves room for the tools' own names.
const MAX_SERVER_NAME_LEN: usize = 32;

/// What the session's notification handler shares with the client and its tools.
pub(crate) struct Events {
    pub(crate) server: Arc<str>,
    /// The running calls and the progress that came before its call was tracked.
    pub(crate) progress: Mutex<Calls>,
    /// Set when the server announced `notifications/tools/list_changed`.
    list_changed: AtomicBool,
}

/// The running calls by their progress token. A call leaves when it ends, so progress that
/// arrives later (servers keep sending it after a cancellation) is dropped. A fast server can
/// report progress before the client has tracked the call it just sent (the token is known
/// only once the request is on its way): that progress waits in `early`, bounded, and is
/// reported when the call is tracked.
#[derive(Default)]
pub(crate) struct Calls {
    running: HashMap<ProgressToken, Arc<Running>>,
    /// Calls on their way whose token is not known yet: a server may ask its question
    /// (elicitation) before the client has the token, and the question is still theirs.
    sending: Vec<Arc<Running>>,
    early: std::collections::VecDeque<ProgressNotificationParam>,
}

/// How many progress reports for untracked calls are kept.
const EARLY_PROGRESS: usize = 256;

/// One `tools/call` on the wire.
pub(crate) struct Running {
    pub(crate) ctx: ToolContext,
    /// Signalled when the call asked the user something the chat has no answer for yet: the
    /// call stops waiting, and the chat pauses it on the question.
    pub(crate) paused: tokio::sync::Notify,
}

impl Events {
    /// Notes a call about to be sent (see [`Calls::sending`]).
    pub(crate) fn sending(&self, running: &Arc<Running>) {
        self.progress
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .sending
            .push(Arc::clone(running));
    }

    /// Forgets a call that could not be sent.
    pub(crate) fn not_sent(&self, running: &Arc<Running>) {
        self.progress
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .sending
            .retain(|r| !Arc::ptr_eq(r, running));
    }

    pub(crate) fn track(&self, token: ProgressToken, running: Arc<Running>) {
        let early: std::collections::VecDeque<ProgressNotificationParam> = {
            let mut calls = self
                .progress
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            calls.sending.retain(|r| !Arc::ptr_eq(r, &running));
            calls.running.insert(token.clone(), Arc::clone(&running));
            let (mine, others) = std::mem::take(&mut calls.early)
                .into_iter()
                .partition(|p| p.progress_token == token);
            calls.early = others;
            mine
        };
        for params in early {
            running
                .ctx
                .report_progress(params.progress, params.total, params.message.as_deref());
        }
    }

    /// The call an elicitation belongs to: the session's only running call. A server that
    /// asks while several calls run cannot say for which (MCP before 2026-07-28 has no link),
    /// so that request is declined.
    fn only_running(&self) -> Option<Arc<Running>> {
        let calls = self
            .progress
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if calls.running.len() + calls.sending.len() == 1 {
            calls
                .running
                .values()
                .next()
                .or_else(|| calls.sending.first())
                .cloned()
        } else {
            None
        }
    }

    pub(crate) fn untrack(&self, token: &ProgressToken) {
        self.progress
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .running
            .remove(token);
    }
}

impl Events {
    /// Looks at a message from the server before the session handles it. The session reads
    /// messages in order and runs notification handlers on tasks of their own, so watching
    /// here is what guarantees that a call's progress is reported before its result, and that
    /// a list change announced before a result is seen by the next request.
    fn observe(&self, message: &RxJsonRpcMessage<RoleClient>) {
        let JsonRpcMessage::Notification(JsonRpcNotification { notification, .. }) = message else {
            return;
        };
        match notification {
            ServerNotification::ProgressNotification(progress) => {
                let params = &progress.params;
                let ctx = {
                    let mut calls = self
                        .progress
                        .lock()
                        .unwrap_or_else(|poisoned| poisoned.into_inner());
                    let ctx = calls
                        .running
                        .get(&params.progress_token)
                        .map(|running| running.ctx.clone());
                    if ctx.is_none() {
                        // Not tracked yet, or no longer running (then it is never claimed).
                        if calls.early.len() == EARLY_PROGRESS {
                            calls.early.pop_front();
                        }
                        calls.early.push_back(params.clone());
                    }
                    ctx
                };
                if let Some(ctx) = ctx {
                    ctx.report_progress(params.progress, params.total, params.message.as_deref());
                }
            }
            ServerNotification::ToolListChangedNotification(_) => {
                tracing::debug!(target: "llm_tools::mcp", server = &*self.server, "the server's tool list changed");
                self.list_changed.store(true, Ordering::Release);
            }
            _ => {}
        }
    }
}

/// A transport whose incoming messages [`Events::observe`] sees first.
struct Observed<T> {
    inner: T,
    events: Arc<Events>,
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Observed<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await;
        if let Some(message) = &message {
            self.events.observe(message);
        }
        message
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// The client side of the session: what it tells the server about itself. Notifications are
/// watched on the transport (see [`Events::observe`]).
struct Handler {
    events: Arc<Events>,
    info: ClientConfig,
    /// Answers questions in place ([`McpServer::on_elicitation`]).
    in_place: Option<ElicitationHandler>,
}

impl ClientHandler for Handler {
    /// A server asking the user during a call (before 2026-07-28; later servers ask through
    /// the call's result, see `McpTool`): the question goes to the chat through the call's
    /// context. Answered already (the call runs again after the user answered), the answer goes
    /// back; not yet, the call pauses on the question and the server is told `cancel`.
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let question = match elicitation::question_of(&request) {
            Ok(question) => question,
            Err(unasked) => {
                unasked.log(&self.events.server);
                return Ok(elicitation::declined());
            }
        };
        if let Some(handler) = &self.in_place {
            let mut answer = (handler.0)(question.clone()).await;
            if let Answer::Accept { values } = &mut answer {
                question.fill_defaults(values);
            }
            return Ok(elicitation::result_of(&answer));
        }
        let Some(running) = self.events.only_running() else {
            tracing::warn!(
                target: "llm_tools::mcp",
                server = &*self.events.server,
                "an elicitation request that no single running call can take; declined"
            );
            return Ok(elicitation::declined());
        };
        match running.ctx.ask(question).await {
            Ok(answer) => Ok(elicitation::result_of(&answer)),
            Err(_) => {
                running.paused.notify_one();
                Ok(ElicitResult::new(ElicitationAction::Cancel))
            }
        }
    }

    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }
}

/// What every tool of the server gets, from the [`McpServer`] settings.
struct ToolSettings {
    namespace: Namespace,
    allow: Option<Vec<String>>,
    deny: Vec<String>,
    defer: bool,
    needs_approval: bool,
    max_run_time: Option<Duration>,
}

/// One open session with the server: what a reconnect replaces. The client's tools reach the
/// server through the client's current session, so they stay valid across reconnects.
pub(crate) struct Session {
    pub(crate) peer: Peer<RoleClient>,
    service: Mutex<Option<RunningService<RoleClient, Handler>>>,
    pub(crate) events: Arc<Events>,
    /// The server's last stderr lines (stdio).
    stderr: Option<Arc<StderrTail>>,
    /// The server's process id (stdio).
    pid: Option<u32>,
}

impl Session {
    /// Starts (stdio) or reaches (HTTP) the server and opens a session with it.
    async fn open(server: &McpServer, name: &str) -> Result<Self, McpError> {
        let events = Arc::new(Events {
            server: Arc::from(name),
            progress: Mutex::default(),
            list_changed: AtomicBool::new(false),
        });
        let handler = Handler {
            events: Arc::clone(&events),
            info: client_info(),
            in_place: server.on_elicitation.clone(),
        };
        let lifecycle = match server.lifecycle {
            Lifecycle::Auto => ClientLifecycleMode::Auto {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                legacy_version: Some(ProtocolVersion::V_2025_11_25),
            },
            Lifecycle::Initialize => ClientLifecycleMode::Initialize,
            Lifecycle::Discover => ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        };
        let timeout = server.timeout;
        let (service, stderr, pid) = match &server.transport {
            Endpoint::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args).envs(env.iter().map(|(k, v)| (k, v)));
                if let Some(dir) = cwd {
                    cmd.current_dir(dir);
                }
                let (process, stderr) = TokioChildProcess::builder(cmd)
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .map_err(|source| McpError::Spawn {
                        server: name.to_owned(),
                        command: command.to_string_lossy().into_owned(),
                        source,
                    })?;
                let tail = Arc::new(StderrTail::new(
                    Arc::clone(&events.server),
                    server.max_stderr_line,
                    server.stderr_tail_lines,
                ));
                if let Some(stderr) = stderr {
                    tokio::spawn(Arc::clone(&tail).read(stderr));
                }
                let pid = process.id();
                let (process, handed_over) = ChildProcess::new(process);
                let transport = Observed {
                    inner: process,
                    events: Arc::clone(&events),
                };
                let started = tokio::time::timeout(
                    timeout,
                    handler.serve_with_lifecycle(transport, lifecycle),
                )
                .await;
                let service = match started {
                    Ok(Ok(service)) => service,
                    Err(_) => {
                        return Err(McpError::Timeout {
                            server: name.to_owned(),
                            what: "the handshake",
                            after: timeout,
                        });
                    }
                    Ok(Err(error)) => {
                        return Err(stdio_failed(
                            name.to_owned(),
                            &error,
                            handed_over,
                            &tail,
                            timeout,
                        )
                        .await);
                    }
                };
                (service, Some(tail), pid)
            }
            Endpoint::Http {
                url,
                headers,
                bearer,
            } => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                if let Some(token) = bearer {
                    config = config.auth_header(token.clone());
                }
                let mut map = HashMap::new();
                for (key, value) in headers {
                    let key =
                        reqwest::header::HeaderName::from_bytes(key.as_bytes()).map_err(|e| {
                            McpError::InvalidConfig(format!(
                                "the header name `{key}` is invalid: {e}"
                            ))
                        })?;
                    let value = reqwest::header::HeaderValue::from_str(value).map_err(|e| {
                        McpError::InvalidConfig(format!(
                            "the value of the header `{key}` is invalid: {e}"
                        ))
                    })?;
                    map.insert(key, value);
                }
                config = config.custom_headers(map);
                let transport = Observed {
                    inner: StreamableHttpClientTransport::with_client(
                        http::client(server.max_redirects).map_err(McpError::InvalidConfig)?,
                        config,
                    ),
                    events: Arc::clone(&events),
                };
                let started = tokio::time::timeout(
                    timeout,
                    handler.serve_with_lifecycle(transport, lifecycle),
                )
                .await;
                let service = match started {
                    Ok(Ok(service)) => service,
                    Err(_) => {
                        return Err(McpError::Timeout {
                            server: name.to_owned(),
                            what: "the handshake",
                            after: timeout,
                        });
                    }
                    Ok(Err(error)) => {
                        if let Some(refused) = error::refused_redirect(&error) {
                            return Err(McpError::CrossOriginRedirect {
                                server: name.to_owned(),
                                from: refused.from.clone(),
                                to: refused.to.clone(),
                            });
                        }
                        return Err(McpError::Handshake {
                            server: name.to_owned(),
                            message: format!(
                                "{}: {}",
                                http::redacted_url(url),
                                error::describe_handshake(&error)
                            ),
                        });
                    }
                };
                (service, None, None)
            }
        };
        Ok(Self {
            peer: service.peer().clone(),
            service: Mutex::new(Some(service)),
            events,
            stderr,
            pid,
        })
    }

    /// Whether the session is still open: not closed, its connection not ended (a stdio
    /// server's process that exited ends it).
    pub(crate) fn is_open(&self) -> bool {
        !self.peer.is_transport_closed()
            && self
                .service
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .as_ref()
                .is_some_and(|service| !service.is_closed())
    }

    /// Ends the session: a stdio server's process is stopped.
    async fn close(&self) {
        let service = self
            .service
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(service) = service {
            let _ = service.cancel().await;
        }
    }
}

/// The tools of the current listing, with the server's definitions they came from.
#[derive(Default)]
struct Listed {
    tools: Vec<Arc<dyn Tool>>,
    /// Each offered tool's definition as the server sent it, by the server's name.
    offered: HashMap<String, serde_json::Value>,
}

/// The outcome of the last sequence of reconnect attempts, which calls that waited for it
/// share.
#[derive(Default)]
struct Attempts {
    last: Option<Result<(), String>>,
}

pub(crate) struct Inner {
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
}

impl Inner {
    /// The current session.
    pub(crate) fn session(&self) -> Arc<Session> {
        Arc::clone(
            &self
                .session
                .read()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        )
    }

    /// Whether the current listing has the server's tool `remote`.
    pub(crate) fn offers(&self, remote: &str) -> bool {
        self.tools
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .offered
            .contains_key(remote)
    }

    /// Whether a call on an ended session reconnects by itself.
    pub(crate) fn reconnects_automatically(&self) -> bool {
        self.server.reconnect.is_automatic() && !self.closed.load(Ordering::Acquire)
    }

    /// A session to call on: the current one when open; when it ended, a new one if the
    /// policy reconnects by itself. The error is text for the model.
    pub(crate) async fn live_session(&self) -> Result<Arc<Session>, String> {
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
    pub(crate) async fn reconnect_after(&self, seen: &Arc<Session>) -> Result<(), McpError> {
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
        let session = Arc::new(Session::open(&self.server, &self.name).await?);
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
        self.list(&session, true).await
    }

    /// Reads every page of `tools/list` on `session` and installs the result; returns how it
    /// differs from the list before. `reconnected`: removed and changed tools are warned about
    /// (after a server's own list change they are expected, and logged at debug).
    async fn list(&self, session: &Session, reconnected: bool) -> Result<ToolChanges, McpError> {
        let _one_at_a_time = self.listing.lock().await;
        // A change announced while this listing runs is seen by the next one.
        session.events.list_changed.store(false, Ordering::Release);
        let listed = tokio::time::timeout(self.timeout, session.peer.list_all_tools()).await;
        let remote = match listed {
            Err(_) => {
                session.events.list_changed.store(true, Ordering::Release);
                return Err(McpError::Timeout {
                    server: self.name.to_string(),
                    what: "tools/list",
                    after: self.timeout,
                });
            }
            Ok(Err(source)) => {
                session.events.list_changed.store(true, Ordering::Release);
                return Err(McpError::Request {
                    server: self.name.to_string(),
                    what: "tools/list",
                    source,
                });
            }
            Ok(Ok(tools)) => tools,
        };
        let settings = &self.settings;
        let mut taken = HashSet::new();
        let mut tools: Vec<Arc<dyn Tool>> = Vec::with_capacity(remote.len());
        let mut offered = HashMap::with_capacity(remote.len());
        for tool in remote {
            let remote_name = tool.name.to_string();
            if settings.deny.contains(&remote_name)
                || settings
                    .allow
                    .as_ref()
                    .is_some_and(|allow| !allow.contains(&remote_name))
            {
                continue;
            }
            let Some(local) = names::local_name(&self.name, &remote_name, &mut taken) else {
                tracing::warn!(
                    target: "llm_tools::mcp",
                    server = &*self.name,
                    tool = remote_name.as_str(),
                    "two tools of the server map to the same name; the later one is left out"
                );
                continue;
            };
            let definition = serde_json::to_value(&tool).unwrap_or_default();
            match McpTool::new(
                tool,
                local,
                settings.namespace.clone(),
                settings.defer,
                settings.needs_approval,
                settings.max_run_time,
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
            *listed = Listed { tools, offered };
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

/// How `after` differs from `before`, by the server's tool names, each list sorted.
fn changes_between(
    before: &HashMap<String, serde_json::Value>,
    after: &HashMap<String, serde_json::Value>,
) -> ToolChanges {
    let mut changes = ToolChanges::default();
    for (name, definition) in after {
        match before.get(name) {
            None => changes.added.push(name.clone()),
            Some(previous) if previous != definition => changes.changed.push(name.clone()),
            Some(_) => {}
        }
    }
    changes.removed = before
        .keys()
        .filter(|name| !after.contains_key(*name))
        .cloned()
        .collect();
    changes.added.sort();
    changes.removed.sort();
    changes.changed.sort();
    changes
}

/// Logs how a listing changed the tools: after a reconnect, tools that left or changed are a
/// warning (a chat's history may hold calls made with the old definitions).
fn report(server: &str, changes: &ToolChanges, reconnected: bool) {
    if changes.is_empty() {
        return;
    }
    if reconnected && (!changes.removed.is_empty() || !changes.changed.is_empty()) {
        tracing::warn!(
            target: "llm_tools::mcp",
            server,
            added = ?changes.added,
            removed = ?changes.removed,
            changed = ?changes.changed,
            "the server's tools differ after reconnecting; calls of removed tools are refused"
        );
    } else {
        tracing::debug!(
            target: "llm_tools::mcp",
            server,
            added = ?changes.added,
            removed = ?changes.removed,
            changed = ?changes.changed,
            "the server's tool list changed"
        );
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
        McpClient::connect(self, name.into()).await
    }
}

fn client_info() -> ClientConfig {
    // Elicitation in both modes, through the chat's questions; no sampling, no roots. (The
    // capability builder needs rmcp's server features, so the set is read from its JSON.)
    // The 2026-07-28 tasks extension too: a server may run a call as a task, which the chat
    // polls (`McpTool::resume`).
    let capabilities: ClientCapabilities = serde_json::from_value(serde_json::json!({
        "elicitation": {"form": {}, "url": {}},
        "extensions": {rmcp::model::TASKS_EXTENSION_ID: {}},
    }))
    .unwrap_or_default();
    ClientConfig::new(
        capabilities,
        Implementation::new("llm-tools", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(ProtocolVersion::V_2025_11_25)
}

impl McpClient {
    pub(crate) async fn connect(server: McpServer, name: String) -> Result<Self, McpError> {
        if name.len() > MAX_SERVER_NAME_LEN || !is_valid_tool_name(&name) {
            return Err(McpError::InvalidConfig(format!(
                "the server name `{name}` must match ^[A-Za-z_][A-Za-z0-9_-]*$ and have at most \
                 {MAX_SERVER_NAME_LEN} characters: it is the namespace of its tools"
            )));
        }
        let session = Arc::new(Session::open(&server, &name).await?);
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
        });
        listen_for_changes(&inner.name, &session, timeout).await;
        inner.list(&session, false).await?;
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
        let session = self.inner.session();
        self.inner.list(&session, false).await.map(|_| ())
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
        let mut attempts = self.inner.reconnecting.lock().await;
        let replaced = self.inner.replace_session(false).await;
        attempts.last = Some(replaced.as_ref().map(|_| ()).map_err(ToString::to_string));
        self.inner.reconnects.fetch_add(1, Ordering::AcqRel);
        replaced
    }

    /// Ends the session: a stdio server's process is stopped. Calls still running fail, and
    /// the tools a chat took from this client fail from then on (a closed client does not
    /// reconnect by itself), until [`reconnect`](Self::reconnect).
    pub async fn close(&self) {
        self.inner.closed.store(true, Ordering::Release);
        self.inner.session().close().await;
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

/// On 2026-07-28 a server announces list changes only on a `subscriptions/listen` stream:
/// open one for `tools/list_changed` when the server says its list can change, and mark the
/// list stale on each announcement. Servers of older versions send the notification on the
/// session itself (see `Handler`).
async fn listen_for_changes(name: &str, session: &Session, timeout: Duration) {
    let Some(info) = session.peer.peer_info() else {
        return;
    };
    let modern = info.protocol_version.as_str() >= ProtocolVersion::V_2026_07_28.as_str();
    let changes = info
        .capabilities
        .tools
        .as_ref()
        .and_then(|tools| tools.list_changed)
        .unwrap_or(false);
    if !modern || !changes {
        return;
    }
    let filter = SubscriptionFilter::builder().tools_list_changed().build();
    let listening = tokio::time::timeout(timeout, session.peer.listen(filter)).await;
    let mut subscription = match listening {
        Ok(Ok(subscription)) => subscription,
        Ok(Err(error)) => {
            tracing::warn!(target: "llm_tools::mcp", server = name, error = error::describe_request(&error).as_str(), "subscriptions/listen failed; tool list changes will not be seen");
            return;
        }
        Err(_) => {
            tracing::warn!(target: "llm_tools::mcp", server = name, "subscriptions/listen timed out; tool list changes will not be seen");
            return;
        }
    };
    // The transport saw each notification already (`Events::observe`); the stream only has to
    // be read so it stays open, until the session ends.
    tokio::spawn(async move { while let Ok(Some(_)) = subscription.next().await {} });
}

/// The namespace description from the handshake: the instructions, else the description.
fn describe(info: &ServerPeerInfo) -> Option<String> {
    let nonempty = |s: &String| !s.trim().is_empty();
    info.instructions.clone().filter(nonempty).or_else(|| {
        info.server_info
            .as_ref()
            .and_then(|i| i.description.clone())
            .filter(nonempty)
    })
}

/// The error for a stdio server whose handshake failed: when the connection ended, how its
/// process exited (waited for up to [`EXIT_GRACE`], at most the handshake's timeout) with its
/// last stderr lines; otherwise what went wrong, with those lines.
async fn stdio_failed(
    server: String,
    error: &ClientInitializeError,
    handed_over: HandedOver,
    tail: &StderrTail,
    timeout: Duration,
) -> McpError {
    if error::connection_ended(error) {
        let deadline = tokio::time::Instant::now() + EXIT_GRACE.min(timeout);
        if let Some(status) = stdio::exit_status(handed_over, tail, deadline).await {
            return McpError::Exited {
                server,
                status,
                stderr: tail.lines(),
            };
        }
    } else {
        drop(handed_over);
    }
    let mut message = error::describe_handshake(error);
    let lines = tail.lines();
    if !lines.is_empty() {
        message.push_str(&error::stderr_lines(&lines));
    }
    McpError::Handshake { server, message }
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
            if !session.events.list_changed.load(Ordering::Acquire) {
                return;
            }
            if let Err(error) = self.inner.list(&session, false).await {
                tracing::warn!(
                    target: "llm_tools::mcp",
                    server = &*self.inner.name,
                    error = %error,
                    "listing the changed tools failed; the chat keeps the previous list"
                );
            }
        })
    }

    fn source_name(&self) -> &str {
        &self.inner.name
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}
