//! [`McpClient`]: one open session with a server, its tools as a [`ToolSource`].

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
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

use crate::server::Lifecycle;
use crate::server::Transport as Endpoint;
use crate::stdio::{self, ChildProcess, EXIT_GRACE, HandedOver, StderrTail};
use crate::tool::McpTool;
use crate::{McpError, McpServer, elicitation, error, http, names};

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
    in_place: Option<crate::server::ElicitationHandler>,
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

struct Inner {
    name: String,
    peer: Peer<RoleClient>,
    service: Mutex<Option<RunningService<RoleClient, Handler>>>,
    events: Arc<Events>,
    settings: ToolSettings,
    timeout: Duration,
    /// The server's last stderr lines (stdio).
    stderr: Option<Arc<StderrTail>>,
    tools: RwLock<Vec<Arc<dyn Tool>>>,
    generation: AtomicU64,
    /// One listing at a time.
    listing: tokio::sync::Mutex<()>,
}

/// An open session with an MCP server and its tools, as [`McpServer::connect`] returns it.
///
/// It is a [`ToolSource`]: give it to a chat with
/// [`McpChat::with_mcp`](crate::McpChat::with_mcp) (or `Chat::with_tool_source`) and the
/// server's tools join the chat under the server's name as their namespace; when the server
/// announces a change of its list, the chat offers the new list from its next request on. A
/// client is a cheap handle (clone it for each chat); the session ends when the last handle is
/// dropped or on [`close`](Self::close).
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
        let events = Arc::new(Events {
            server: Arc::from(name.as_str()),
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
        let (service, stderr) = match &server.transport {
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
                        server: name.clone(),
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
                            server: name,
                            what: "the handshake",
                            after: timeout,
                        });
                    }
                    Ok(Err(error)) => {
                        return Err(stdio_failed(name, &error, handed_over, &tail, timeout).await);
                    }
                };
                (service, Some(tail))
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
                            server: name,
                            what: "the handshake",
                            after: timeout,
                        });
                    }
                    Ok(Err(error)) => {
                        if let Some(refused) = error::refused_redirect(&error) {
                            return Err(McpError::CrossOriginRedirect {
                                server: name,
                                from: refused.from.clone(),
                                to: refused.to.clone(),
                            });
                        }
                        return Err(McpError::Handshake {
                            server: name,
                            message: format!(
                                "{}: {}",
                                http::redacted_url(url),
                                error::describe_handshake(&error)
                            ),
                        });
                    }
                };
                (service, None)
            }
        };
        let peer = service.peer().clone();
        let description = server
            .description
            .clone()
            .or_else(|| peer.peer_info().and_then(|info| describe(&info)))
            .unwrap_or_else(|| format!("Tools of the MCP server `{name}`"));
        let settings = ToolSettings {
            namespace: Namespace::owned(name.clone()).with_description(description),
            allow: server.allow,
            deny: server.deny,
            defer: server.defer,
            needs_approval: server.needs_approval,
            max_run_time: server.max_run_time,
        };
        let client = Self {
            inner: Arc::new(Inner {
                name,
                peer,
                service: Mutex::new(Some(service)),
                events,
                settings,
                timeout,
                stderr,
                tools: RwLock::default(),
                generation: AtomicU64::new(0),
                listing: tokio::sync::Mutex::new(()),
            }),
        };
        client.listen_for_changes().await;
        client.list().await?;
        Ok(client)
    }

    /// On 2026-07-28 a server announces list changes only on a `subscriptions/listen` stream:
    /// open one for `tools/list_changed` when the server says its list can change, and mark
    /// the list stale on each announcement. Servers of older versions send the notification
    /// on the session itself (see `Handler`).
    async fn listen_for_changes(&self) {
        let Some(info) = self.server_info() else {
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
        let listening =
            tokio::time::timeout(self.inner.timeout, self.inner.peer.listen(filter)).await;
        let mut subscription = match listening {
            Ok(Ok(subscription)) => subscription,
            Ok(Err(error)) => {
                tracing::warn!(target: "llm_tools::mcp", server = self.inner.name.as_str(), error = error::describe_request(&error).as_str(), "subscriptions/listen failed; tool list changes will not be seen");
                return;
            }
            Err(_) => {
                tracing::warn!(target: "llm_tools::mcp", server = self.inner.name.as_str(), "subscriptions/listen timed out; tool list changes will not be seen");
                return;
            }
        };
        // The transport saw each notification already (`Events::observe`); the stream only has
        // to be read so it stays open, until the session ends.
        tokio::spawn(async move { while let Ok(Some(_)) = subscription.next().await {} });
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

    /// What the server said about itself in the handshake: its name, version, instructions,
    /// capabilities and the protocol version agreed on.
    pub fn server_info(&self) -> Option<Arc<ServerPeerInfo>> {
        self.inner.peer.peer_info()
    }

    /// The protocol version agreed on (`2025-11-25`, `2026-07-28`, …).
    pub fn protocol_version(&self) -> Option<String> {
        self.server_info()
            .map(|info| info.protocol_version.to_string())
    }

    /// The last lines the server wrote to its stderr (stdio; empty for Streamable HTTP), oldest
    /// first, the line being written included: at most
    /// [`McpServer::stderr_tail_lines`] of them, each cut at [`McpServer::max_stderr_line`]
    /// bytes (a cut line ends with `… [N bytes cut]`).
    pub fn stderr_tail(&self) -> Vec<String> {
        self.inner
            .stderr
            .as_ref()
            .map(|tail| tail.lines())
            .unwrap_or_default()
    }

    /// The underlying rmcp peer, for requests this crate does not wrap (resources, prompts).
    pub fn peer(&self) -> &Peer<RoleClient> {
        &self.inner.peer
    }

    /// Lists the tools again now, whether or not the server announced a change.
    pub async fn refresh_tools(&self) -> Result<(), McpError> {
        self.list().await
    }

    /// Ends the session: a stdio server's process is stopped. Calls still running fail, and
    /// the tools a chat took from this client fail from then on.
    pub async fn close(&self) {
        let service = self
            .inner
            .service
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(service) = service {
            let _ = service.cancel().await;
        }
    }

    /// Reads every page of `tools/list` and installs the result.
    async fn list(&self) -> Result<(), McpError> {
        let _one_at_a_time = self.inner.listing.lock().await;
        // A change announced while this listing runs is seen by the next one.
        self.inner
            .events
            .list_changed
            .store(false, Ordering::Release);
        let listed =
            tokio::time::timeout(self.inner.timeout, self.inner.peer.list_all_tools()).await;
        let remote = match listed {
            Err(_) => {
                self.inner
                    .events
                    .list_changed
                    .store(true, Ordering::Release);
                return Err(McpError::Timeout {
                    server: self.inner.name.clone(),
                    what: "tools/list",
                    after: self.inner.timeout,
                });
            }
            Ok(Err(source)) => {
                self.inner
                    .events
                    .list_changed
                    .store(true, Ordering::Release);
                return Err(McpError::Request {
                    server: self.inner.name.clone(),
                    what: "tools/list",
                    source,
                });
            }
            Ok(Ok(tools)) => tools,
        };
        let settings = &self.inner.settings;
        let mut taken = HashSet::new();
        let mut tools: Vec<Arc<dyn Tool>> = Vec::with_capacity(remote.len());
        for tool in remote {
            let remote_name = tool.name.as_ref();
            if settings.deny.iter().any(|d| d == remote_name)
                || settings
                    .allow
                    .as_ref()
                    .is_some_and(|allow| !allow.iter().any(|a| a == remote_name))
            {
                continue;
            }
            let Some(local) = names::local_name(&self.inner.name, remote_name, &mut taken) else {
                tracing::warn!(
                    target: "llm_tools::mcp",
                    server = self.inner.name.as_str(),
                    tool = remote_name,
                    "two tools of the server map to the same name; the later one is left out"
                );
                continue;
            };
            match McpTool::new(
                tool,
                local,
                settings.namespace.clone(),
                settings.defer,
                settings.needs_approval,
                settings.max_run_time,
                self.inner.peer.clone(),
                Arc::clone(&self.inner.events),
            ) {
                Ok(tool) => tools.push(Arc::new(tool)),
                Err(reason) => tracing::warn!(
                    target: "llm_tools::mcp",
                    server = self.inner.name.as_str(),
                    reason = reason.as_str(),
                    "a tool of the server is left out"
                ),
            }
        }
        *self
            .inner
            .tools
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = tools;
        self.inner.generation.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }
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
            .clone()
    }

    fn generation(&self) -> u64 {
        self.inner.generation.load(Ordering::Acquire)
    }

    fn refresh(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if !self.inner.events.list_changed.load(Ordering::Acquire) {
                return;
            }
            if let Err(error) = self.list().await {
                tracing::warn!(
                    target: "llm_tools::mcp",
                    server = self.inner.name.as_str(),
                    error = %error,
                    "listing the changed tools failed; the chat keeps the previous list"
                );
            }
        })
    }

    fn source_name(&self) -> &str {
        &self.inner.name
    }
}
