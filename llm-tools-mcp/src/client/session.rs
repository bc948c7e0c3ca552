//! One session with a server, what a reconnect replaces: opening it over stdio or Streamable
//! HTTP (the handshake, with its timeout and its errors), the client's rmcp handler (what the
//! client says about itself, and a server's questions during a call), and the server's
//! notifications as the session reads them (progress for the running calls, tool list
//! changes).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::progress_token::{MAX_PROGRESS_TOKEN, progress_token_len};
use llm_tools_core::{Answer, Provider, ToolContext};
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    Implementation, JsonRpcMessage, JsonRpcNotification, ProgressNotificationParam, ProgressToken,
    ProtocolVersion, ServerNotification, SubscriptionFilter,
};
use rmcp::service::{
    ClientInitializeError, RequestContext, RunningService, RxJsonRpcMessage, TxJsonRpcMessage,
};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, Transport};
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt as _, Peer, RoleClient};

use super::config::{Lifecycle, McpServer, ResourceUpdatedHandler, Transport as Endpoint};
use super::http;
use super::roots::Root;
use super::sampling::Sampling;
use super::stdio::{self, ChildProcess, EXIT_GRACE, HandedOver, StderrTail};
use crate::elicitation::{self, ElicitationHandler};
use crate::error::{self, McpError};

/// What the client keeps across its sessions that the sessions' handlers read: the roots it
/// declares, and the provider of the chat it joined (sampling's default model).
#[derive(Default)]
pub(crate) struct Shared {
    pub(crate) roots: std::sync::RwLock<Vec<Root>>,
    pub(crate) chat_provider: std::sync::RwLock<Option<Arc<dyn Provider>>>,
}

/// What the session's notification handler shares with the client and its tools.
pub(crate) struct Events {
    pub(crate) server: Arc<str>,
    /// The application's callback for `notifications/resources/updated`.
    resource_updated: Option<ResourceUpdatedHandler>,
    /// The resources the session subscribed to: only their updates reach the callback.
    subscribed: Mutex<std::collections::HashSet<String>>,
    /// The running calls and the progress that came before its call was tracked.
    pub(crate) progress: Mutex<Calls>,
    /// Set when the server announced `notifications/tools/list_changed`.
    pub(super) list_changed: AtomicBool,
    /// Answers to the server's requests handed to the transport and not written yet
    /// ([`MAX_PENDING_SERVER_REQUESTS`]).
    unwritten_answers: Arc<AtomicUsize>,
}

/// The most answers to the server's requests (pings, questions, sampling, roots) the client
/// holds unwritten: 64. A server that keeps asking while it reads none of the answers (its
/// input full) would otherwise have each answer wait in memory; with this many waiting, its
/// further requests are dropped unanswered, with one warning each burst. (Each request's own
/// work is bounded where it is done: one question at a time, sampling requests at once.)
pub const MAX_PENDING_SERVER_REQUESTS: usize = 64;

/// Counts one answer out of [`Events::unwritten_answers`] when its write ends or is dropped.
struct Unwritten(Arc<AtomicUsize>);

impl Drop for Unwritten {
    fn drop(&mut self) {
        let _ = self
            .0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                Some(n.saturating_sub(1))
            });
    }
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
    early: VecDeque<ProgressNotificationParam>,
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
    /// Notes that the session subscribed to `uri` (`true`) or no longer does (`false`).
    pub(crate) fn note_subscription(&self, uri: &str, subscribed: bool) {
        let mut set = self
            .subscribed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if subscribed {
            set.insert(uri.to_owned());
        } else {
            set.remove(uri);
        }
    }

    fn is_subscribed(&self, uri: &str) -> bool {
        self.subscribed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(uri)
    }

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
        let early: VecDeque<ProgressNotificationParam> = {
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

/// The longest progress message passed on (a server can send 16 MiB in one): 1 KiB.
const MAX_PROGRESS_MESSAGE: usize = 1024;

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
                // A message is cut, and a token past the longest a client makes is none of
                // this client's: kept early reports stay small.
                if progress_token_len(&progress.params.progress_token) > MAX_PROGRESS_TOKEN {
                    return;
                }
                let mut params = progress.params.clone();
                if let Some(message) = &mut params.message
                    && let std::borrow::Cow::Owned(shown) =
                        error::cut(message, MAX_PROGRESS_MESSAGE)
                {
                    *message = shown;
                }
                let params = &params;
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
            ServerNotification::ResourceUpdatedNotification(updated) => {
                if let Some(handler) = &self.resource_updated {
                    // Only a resource the client subscribed to: the server's URI is of any
                    // scheme and size, and the callback is told it is one of those.
                    if self.is_subscribed(&updated.params.uri) {
                        (handler.0)(&updated.params.uri);
                    } else {
                        tracing::debug!(target: "llm_tools::mcp", server = &*self.server, "dropped an update of a resource the client did not subscribe to");
                    }
                }
            }
            _ => {}
        }
    }
}

/// A transport whose incoming messages [`Events::observe`] sees first, and which holds at
/// most [`MAX_PENDING_SERVER_REQUESTS`] of the server's requests unanswered.
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
        // An answer to one of the server's requests counts until its write ends.
        let unwritten = matches!(item, JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_))
            .then(|| {
                self.events.unwritten_answers.fetch_add(1, Ordering::AcqRel);
                Unwritten(Arc::clone(&self.events.unwritten_answers))
            });
        let sent = self.inner.send(item);
        async move {
            let result = sent.await;
            drop(unwritten);
            result
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let mut dropped = 0_usize;
        loop {
            let message = self.inner.receive().await;
            if let Some(JsonRpcMessage::Request(_)) = &message
                && self.events.unwritten_answers.load(Ordering::Acquire)
                    >= MAX_PENDING_SERVER_REQUESTS
            {
                if dropped == 0 {
                    tracing::warn!(target: "llm_tools::mcp", server = &*self.events.server, max = MAX_PENDING_SERVER_REQUESTS, "the server keeps asking while its answers wait to be written; its further requests are dropped unanswered");
                }
                dropped = dropped.saturating_add(1);
                continue;
            }
            if let Some(message) = &message {
                self.events.observe(message);
            }
            return message;
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// The client side of the session: what it tells the server about itself. Notifications are
/// watched on the transport (see [`Events::observe`]).
#[derive(Clone)]
struct Handler {
    events: Arc<Events>,
    info: ClientConfig,
    /// Answers questions in place ([`McpServer::on_elicitation`]).
    in_place: Option<ElicitationHandler>,
    /// One question to the application's handler at a time: a server asking many at once gets
    /// the others cancelled, not a queue of questions for the user.
    asking: Arc<tokio::sync::Semaphore>,
    shared: Arc<Shared>,
    sampling: Option<Sampling>,
}

impl ClientHandler for Handler {
    /// A server asking the user during a call (before 2026-07-28; later servers ask through
    /// the call's result, see `McpTool`): the question goes to the chat through the call's
    /// context. Answered already (the call runs again after the user answered), the answer goes
    /// back; not yet, the call pauses on the question and the server is told `cancel`.
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let question = match elicitation::question_of(&request) {
            Ok(question) => question,
            Err(unasked) => {
                unasked.log(&self.events.server);
                return Ok(elicitation::declined());
            }
        };
        if let Some(handler) = &self.in_place {
            let Ok(_asking) = self.asking.try_acquire() else {
                tracing::warn!(
                    target: "llm_tools::mcp",
                    server = &*self.events.server,
                    "an elicitation request while the user is asked another; cancelled"
                );
                return Ok(ElicitResult::new(ElicitationAction::Cancel));
            };
            // A question the server cancels (or whose session ends) is dropped, and with it
            // the place it held: the next question is asked.
            let mut answer = tokio::select! {
                answer = (handler.0)(question.clone()) => answer,
                () = context.ct.cancelled() => {
                    tracing::info!(target: "llm_tools::mcp", server = &*self.events.server, "an elicitation request ended before the user answered it");
                    return Ok(ElicitResult::new(ElicitationAction::Cancel));
                }
            };
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

    /// The roots the application gave ([`McpServer::roots`], `McpClient::set_roots`).
    #[allow(deprecated)] // 2026-07-28 deprecates roots; older servers still ask for them.
    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, rmcp::ErrorData> {
        let roots = self
            .shared
            .roots
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .iter()
            .map(Root::to_wire)
            .collect();
        Ok(rmcp::model::ListRootsResult::new(roots))
    }

    /// A server asking the client's model ([`McpServer::sampling`]); refused when the
    /// application declared no sampling.
    #[allow(deprecated)] // Sampling is deprecated by 2026-07-28; older servers still ask.
    async fn create_message(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, rmcp::ErrorData> {
        let Some(sampling) = &self.sampling else {
            return Err(rmcp::ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                "this client does not answer sampling requests",
                None,
            ));
        };
        let params = serde_json::to_value(&params)
            .map_err(|e| rmcp::ErrorData::invalid_params(e.to_string(), None))?;
        let fallback = self
            .shared
            .chat_provider
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone();
        // A request the server cancels (or whose session ends) stops here: its approval
        // hook or model call is dropped with it, and so is the model's HTTP request.
        let result = tokio::select! {
            result = sampling.answer(&self.events.server, fallback, &params) => result?,
            () = context.ct.cancelled() => {
                tracing::info!(target: "llm_tools::mcp", server = &*self.events.server, "a sampling request ended (the server cancelled it, or the session ended); its model call was stopped");
                return Err(rmcp::ErrorData::new(
                    rmcp::model::ErrorCode(-1),
                    "the sampling request was cancelled",
                    None,
                ));
            }
        };
        serde_json::from_value(result)
            .map_err(|e| rmcp::ErrorData::internal_error(e.to_string(), None))
    }
}

/// One open session with the server: what a reconnect replaces. The client's tools reach the
/// server through the client's current session, so they stay valid across reconnects.
pub(crate) struct Session {
    pub(crate) peer: Peer<RoleClient>,
    service: Mutex<Option<RunningService<RoleClient, Handler>>>,
    pub(crate) events: Arc<Events>,
    /// The server's last stderr lines (stdio).
    pub(super) stderr: Option<Arc<StderrTail>>,
    /// The server's process id (stdio).
    pub(super) pid: Option<u32>,
    /// The OAuth manager the session's requests take their tokens from (feature `auth`).
    #[cfg(feature = "auth")]
    pub(crate) auth: Option<super::auth::SessionAuth>,
}

impl Session {
    /// Starts (stdio) or reaches (HTTP) the server and opens a session with it.
    pub(super) async fn open(
        server: &McpServer,
        name: &str,
        shared: &Arc<Shared>,
    ) -> Result<Self, McpError> {
        let events = Arc::new(Events {
            server: Arc::from(name),
            resource_updated: server.on_resource_updated.clone(),
            subscribed: Mutex::default(),
            progress: Mutex::default(),
            list_changed: AtomicBool::new(false),
            unwritten_answers: Arc::default(),
        });
        let handler = Handler {
            events: Arc::clone(&events),
            info: client_info(server),
            in_place: server.on_elicitation.clone(),
            asking: Arc::new(tokio::sync::Semaphore::new(1)),
            shared: Arc::clone(shared),
            sampling: server.sampling.clone(),
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
                let (process, handed_over, stderr) =
                    ChildProcess::spawn(cmd, Arc::clone(&events.server)).map_err(|source| {
                        McpError::Spawn {
                            server: name.to_owned(),
                            command: command.to_string_lossy().into_owned(),
                            source,
                        }
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
                // The application's credentials, kept out of the errors of the server's answers.
                let secrets = bearer
                    .iter()
                    .chain(headers.iter().map(|(_, value)| value))
                    .cloned()
                    .collect();
                let client = http::client(server.max_redirects, name, secrets)
                    .map_err(McpError::InvalidConfig)?;
                let fail = |error: ClientInitializeError| {
                    if let Some(refused) = error::refused_redirect(&error) {
                        return McpError::CrossOriginRedirect {
                            server: name.to_owned(),
                            from: refused.from.clone(),
                            to: refused.to.clone(),
                        };
                    }
                    McpError::Handshake {
                        server: name.to_owned(),
                        message: format!(
                            "{}: {}",
                            http::redacted_url(url),
                            error::describe_handshake(&error)
                        ),
                    }
                };
                let timed_out = || McpError::Timeout {
                    server: name.to_owned(),
                    what: "the handshake",
                    after: timeout,
                };
                #[cfg(feature = "auth")]
                if let Some(oauth) = &server.oauth {
                    use rmcp::transport::AuthClient;
                    // The stored tokens first (none yet: the request goes without, and the
                    // server's 401 starts the flow); refreshed by rmcp when they expire.
                    let (manager, _) = oauth.stored(name, url).await?;
                    let authorized = AuthClient::new(client.clone(), manager);
                    let mut auth = super::auth::SessionAuth {
                        manager: Arc::clone(&authorized.auth_manager),
                        oauth: oauth.clone(),
                        url: url.clone(),
                    };
                    let first = serve_http(
                        handler.clone(),
                        authorized,
                        config.clone(),
                        &events,
                        lifecycle.clone(),
                        timeout,
                    )
                    .await
                    .map_err(|_| timed_out())?;
                    let service = match first {
                        Ok(service) => service,
                        Err(error)
                            if error.is_authorization_required()
                                || error.auth_challenge().is_some() =>
                        {
                            tracing::info!(target: "llm_tools::mcp", server = name, "the server requires authorization; running the OAuth flow");
                            let manager =
                                oauth.authorize(name, url, error.auth_challenge()).await?;
                            let authorized = AuthClient::new(client, manager);
                            auth.manager = Arc::clone(&authorized.auth_manager);
                            serve_http(handler, authorized, config, &events, lifecycle, timeout)
                                .await
                                .map_err(|_| timed_out())?
                                .map_err(fail)?
                        }
                        Err(error) => return Err(fail(error)),
                    };
                    without_response_cache(&service).await;
                    return Ok(Self {
                        peer: service.peer().clone(),
                        service: Mutex::new(Some(service)),
                        events,
                        stderr: None,
                        pid: None,
                        auth: Some(auth),
                    });
                }
                let service = serve_http(handler, client, config, &events, lifecycle, timeout)
                    .await
                    .map_err(|_| timed_out())?
                    .map_err(fail)?;
                (service, None, None)
            }
        };
        without_response_cache(&service).await;
        Ok(Self {
            peer: service.peer().clone(),
            service: Mutex::new(Some(service)),
            events,
            stderr,
            pid,
            #[cfg(feature = "auth")]
            auth: None,
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
    pub(super) async fn close(&self) {
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

/// Turns rmcp's response cache off for the session, before anything is listed: a server's
/// time-to-live (`ttlMs`) could keep every page it sent long after its listing, and a listing
/// after a change must see the change.
async fn without_response_cache(service: &RunningService<RoleClient, Handler>) {
    service
        .peer()
        .set_response_cache_config(rmcp::service::ClientCacheConfig::disabled())
        .await;
}

/// Opens a session over Streamable HTTP with `client`; `Err` when the handshake timed out.
async fn serve_http<C>(
    handler: Handler,
    client: C,
    config: StreamableHttpClientTransportConfig,
    events: &Arc<Events>,
    lifecycle: ClientLifecycleMode,
    timeout: Duration,
) -> Result<
    Result<RunningService<RoleClient, Handler>, ClientInitializeError>,
    tokio::time::error::Elapsed,
>
where
    C: rmcp::transport::streamable_http_client::StreamableHttpClient + Send + Sync + 'static,
{
    let transport = Observed {
        inner: StreamableHttpClientTransport::with_client(client, config),
        events: Arc::clone(events),
    };
    tokio::time::timeout(timeout, handler.serve_with_lifecycle(transport, lifecycle)).await
}

/// What the client tells the server about itself.
fn client_info(server: &McpServer) -> ClientConfig {
    // Elicitation in both modes, through the chat's questions; sampling and roots when the
    // application gave them. (The capability builder needs rmcp's server features, so the set
    // is read from its JSON.) The 2026-07-28 tasks extension too: a server may run a call as a
    // task, which the chat polls (`McpTool::resume`).
    let mut capabilities = serde_json::json!({
        "elicitation": {"form": {}, "url": {}},
        "extensions": {rmcp::model::TASKS_EXTENSION_ID: {}},
    });
    if server.roots.is_some() {
        capabilities["roots"] = serde_json::json!({"listChanged": true});
    }
    if server.sampling.is_some() {
        capabilities["sampling"] = serde_json::json!({});
    }
    let capabilities: ClientCapabilities = serde_json::from_value(capabilities).unwrap_or_default();
    ClientConfig::new(
        capabilities,
        Implementation::new("llm-tools", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(ProtocolVersion::V_2025_11_25)
}

/// On 2026-07-28 a server announces list changes only on a `subscriptions/listen` stream:
/// open one for `tools/list_changed` when the server says its list can change, and mark the
/// list stale on each announcement. Servers of older versions send the notification on the
/// session itself (see `Handler`).
pub(super) async fn listen_for_changes(name: &str, session: &Session, timeout: Duration) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn events() -> Events {
        Events {
            server: Arc::from("s"),
            resource_updated: None,
            subscribed: Mutex::default(),
            progress: Mutex::default(),
            list_changed: AtomicBool::new(false),
            unwritten_answers: Arc::default(),
        }
    }

    fn progress(token: &str, message: &str) -> RxJsonRpcMessage<RoleClient> {
        serde_json::from_value(serde_json::json!({
            "jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": token, "progress": 1, "message": message}
        }))
        .unwrap()
    }

    /// Reports for calls not tracked yet are kept small: a long message is cut, a report
    /// naming a token longer than any the client makes is dropped.
    #[test]
    fn early_progress_is_kept_small() {
        let events = events();
        events.observe(&progress("t1", &"m".repeat(1 << 20)));
        events.observe(&progress(&"t".repeat(1 << 20), "m"));
        let calls = events.progress.lock().unwrap();
        assert_eq!(calls.early.len(), 1);
        let message = calls.early[0].message.as_deref().unwrap();
        assert!(
            message.len() < 2 * MAX_PROGRESS_MESSAGE,
            "{}",
            message.len()
        );
    }

    /// Gives the messages it holds, then nothing; its writes end only if `writes_end` (a
    /// server that reads its input).
    struct Stalled {
        incoming: VecDeque<RxJsonRpcMessage<RoleClient>>,
        writes_end: bool,
    }

    impl Transport<RoleClient> for Stalled {
        type Error = std::io::Error;

        fn send(
            &mut self,
            _item: TxJsonRpcMessage<RoleClient>,
        ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
            let writes_end = self.writes_end;
            async move {
                if !writes_end {
                    std::future::pending::<()>().await;
                }
                Ok(())
            }
        }

        async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
            self.incoming.pop_front()
        }

        async fn close(&mut self) -> Result<(), Self::Error> {
            Ok(())
        }
    }

    fn ping(id: u64) -> RxJsonRpcMessage<RoleClient> {
        serde_json::from_value(serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "ping"}))
            .unwrap()
    }

    fn pong(id: u64) -> TxJsonRpcMessage<RoleClient> {
        serde_json::from_value(serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {}}))
            .unwrap()
    }

    /// An answer's write, kept while it lasts.
    type Write = std::pin::Pin<Box<dyn Future<Output = Result<(), std::io::Error>> + Send>>;

    /// Takes every message, answering each request as rmcp would (the answer handed to the
    /// transport, its write kept while it lasts); returns the ids of the requests taken.
    async fn take_all(transport: &mut Observed<Stalled>) -> (Vec<u64>, Vec<Write>) {
        let mut taken = Vec::new();
        let mut writes = Vec::new();
        while let Some(message) = transport.receive().await {
            if let JsonRpcMessage::Request(request) = message {
                let id = request.id.to_string().parse::<u64>().unwrap();
                taken.push(id);
                let write: Write = Box::pin(transport.send(pong(id)));
                writes.push(write);
            }
        }
        (taken, writes)
    }

    #[tokio::test]
    async fn a_server_that_asks_without_reading_its_answers_is_held_to_the_pending_limit() {
        let max = MAX_PENDING_SERVER_REQUESTS as u64;
        // Twice the limit of pings, the same id over and over after the first ones: ids do
        // not matter, answers waiting to be written do.
        let incoming = (0..max)
            .map(ping)
            .chain((0..max).map(|_| ping(7)))
            .collect();
        let mut transport = Observed {
            inner: Stalled {
                incoming,
                writes_end: false,
            },
            events: Arc::new(events()),
        };
        let (taken, writes) = take_all(&mut transport).await;
        assert_eq!(taken.len(), MAX_PENDING_SERVER_REQUESTS, "{taken:?}");
        // A write given up (the session closing) leaves the count too.
        drop(writes);
        assert_eq!(
            transport.events.unwritten_answers.load(Ordering::Acquire),
            0
        );
    }

    #[tokio::test]
    async fn answers_written_make_room_for_the_servers_next_requests() {
        let max = MAX_PENDING_SERVER_REQUESTS as u64;
        let mut transport = Observed {
            inner: Stalled {
                incoming: (0..3 * max).map(ping).collect(),
                writes_end: true,
            },
            events: Arc::new(events()),
        };
        let mut taken = 0;
        while let Some(message) = transport.receive().await {
            if let JsonRpcMessage::Request(request) = message {
                taken += 1;
                let id = request.id.to_string().parse::<u64>().unwrap();
                transport.send(pong(id)).await.unwrap();
            }
        }
        assert_eq!(taken, 3 * MAX_PENDING_SERVER_REQUESTS);
        assert_eq!(
            transport.events.unwritten_answers.load(Ordering::Acquire),
            0
        );
    }
}
