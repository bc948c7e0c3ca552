//! [`ToolServer`]: the served tools and their settings, the ways to serve them (stdio, any
//! rmcp transport, Streamable HTTP), and rmcp's `ServerHandler` for them: `tools/list`, a
//! `tools/call` from its approval to its result (questions asked through elicitation, progress
//! forwarded, a working task handed to the client or carried on here), and the `tasks/*`
//! requests.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use llm_tools_core::{
    Answer, BoxFuture, IntoTools, RawArgs, TaskStatus, Tool, ToolCall, ToolContext, ToolOutcome,
    ToolProgress,
};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, GetTaskParams, GetTaskResult,
    Implementation, ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities,
    ServerConfig, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

use super::approval::{self, Approval, Approver, Decision};
use super::call::{CallLimits, Carried, InFlight, MAX_QUESTIONS, Working, carry_on, guarded};
use super::http::{self, HttpOptions};
use super::progress::ProgressForwarder;
use super::results::{error_result, input_required, result_of};
use super::state::{self, CallState, DEFAULT_REQUEST_STATE_TTL, StateKey};
use super::stdio::BoundedStdio;
use super::tasks::{TaskLimits, Tasks};
use crate::elicitation::{self, elicit, question_requests};
use crate::error::McpError;

/// The longest a served call may run unless its tool says otherwise (as a chat's default).
pub const DEFAULT_SERVE_MAX_RUN_TIME: Duration = Duration::from_secs(600);

/// Tools served over MCP.
///
/// Each tool is listed under its joined name (`crm_customer_lookup`), with its description,
/// input schema, title, annotations (`readOnlyHint`, `destructiveHint`, `idempotentHint`,
/// `openWorldHint`, from `#[tool(title = "…", annotations(…))]`) and, for a result type that
/// derives `JsonSchema` as an object, its `outputSchema`; a call decodes the client's
/// arguments exactly as in a chat. What a call returns becomes the result: text (JSON values also as `structuredContent`), images and
/// audio as image and audio content, other files as embedded resources; a recoverable error is
/// an `isError` result. Progress reported with `ToolContext::report_progress` goes to the
/// client as `notifications/progress`; a question asked with `ToolContext::ask` becomes an
/// elicitation request (or, on 2026-07-28, an input request the client answers by sending the
/// call again), and the tool runs again from the start with the answer, as in a chat. A tool
/// that returns a working [`Task`](llm_tools_core::Task) runs as an MCP task for a 2026-07-28
/// client of the tasks extension (each `tasks/get` resumes it once, `tasks/cancel` runs its
/// `cancel`); for other clients it is resumed after the task's poll interval until it
/// finishes, and a question a resume asks is the call's, its answer given to the same task,
/// resumed again (between a 2026-07-28 client's rounds the server keeps the task among the
/// client's tasks, and cancels it once the task TTL passes without the next round). A call runs at most its tool's `max_run_time` (ten minutes by default) and stops
/// when the client cancels it. A task carried on here that the call leaves unfinished has its
/// work stopped by the tool's `cancel`, however the call ends: its limit, the client's cancel
/// (a client hanging up is one), or its future dropped outright (an application's handler
/// that gives up on it); a task handed to the client as an MCP task is the client's, and
/// outlives the call that made it.
///
/// A tool that needs approval (`#[tool(needs_approval)]`, or a per-call rule) never runs
/// unapproved: the application decides with [`ToolServer::approve_with`]; without a hook (or
/// when it answers [`Decision::AskTheClient`]) the client's user is asked through elicitation,
/// shown the tool and its arguments; a client without the elicitation capability gets a tool
/// error and the tool does not run.
///
/// ```no_run
/// use llm_tools_core::tool;
/// use llm_tools_mcp::ToolServer;
///
/// /// Gets current weather for a location
/// #[tool]
/// async fn weather(latitude: f64, longitude: f64) -> String {
///     format!("15°C at {latitude}, {longitude}")
/// }
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// // As a command an MCP client starts (`"command": "my-tools"` in its configuration):
/// ToolServer::new("weather").with_tools(Weather)?.serve_stdio().await?;
///
/// // Or on a port, at http://127.0.0.1:8080/mcp:
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// ToolServer::new("weather").with_tools(Weather)?.serve_http(listener).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct ToolServer {
    inner: Arc<Served>,
}

#[derive(Clone)]
struct Served {
    name: String,
    version: String,
    instructions: Option<String>,
    tools: Vec<Arc<dyn Tool>>,
    by_name: HashMap<String, usize>,
    /// The `tools/list` entries, built when a tool is added (schemas are computed once).
    listed: Vec<rmcp::model::Tool>,
    max_run_time: Duration,
    /// The application's approval hook.
    approver: Option<Approver>,
    /// How long a 2026-07-28 call's state stays valid between its rounds.
    request_state_ttl: Duration,
    /// Seals 2026-07-28 call states; shared by every session of the server.
    state_key: Arc<StateKey>,
    /// The calls running as tasks (the 2026-07-28 tasks extension), by task id; shared by
    /// every session of the server.
    tasks: Arc<Tasks>,
    /// How long tasks are kept, and how many at once.
    task_limits: TaskLimits,
    /// The calls running, by client; shared by every session of the server.
    in_flight: Arc<InFlight>,
    /// How many calls, holding how many bytes of arguments, one client and the server may
    /// have running at once.
    call_limits: CallLimits,
    /// The connection this copy serves, when it serves one (stdio, [`ToolServer::serve`]):
    /// the identity of its client. Over HTTP a request says who it comes from.
    connection: Option<Arc<Connection>>,
}

/// The connection a copy of the server serves: its client's identity while it lasts. When the
/// last copy serving it is dropped (the connection ended), its client's tasks end with it: no
/// request can reach them again.
#[derive(Debug)]
struct Connection {
    id: String,
    tasks: std::sync::Weak<Tasks>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        if let Some(tasks) = self.tasks.upgrade() {
            tasks.end_owner(&self.id);
        }
    }
}

impl std::fmt::Debug for ToolServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolServer")
            .field("name", &self.inner.name)
            .field("tools", &self.inner.by_name.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl ToolServer {
    /// A server named `name` (what clients show) with no tools yet.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            inner: Arc::new(Served {
                name: name.into(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
                instructions: None,
                tools: Vec::new(),
                by_name: HashMap::new(),
                listed: Vec::new(),
                max_run_time: DEFAULT_SERVE_MAX_RUN_TIME,
                approver: None,
                request_state_ttl: DEFAULT_REQUEST_STATE_TTL,
                state_key: Arc::default(),
                tasks: Arc::default(),
                task_limits: TaskLimits::default(),
                in_flight: Arc::default(),
                call_limits: CallLimits::default(),
                connection: None,
            }),
        }
    }

    fn edit(mut self, f: impl FnOnce(&mut Served)) -> Self {
        f(Arc::make_mut(&mut self.inner));
        self
    }

    /// The version clients are told (this crate's by default).
    #[must_use]
    pub fn with_version(self, version: impl Into<String>) -> Self {
        let version = version.into();
        self.edit(|s| s.version = version)
    }

    /// The instructions clients are given (models read them as the server's description).
    #[must_use]
    pub fn with_instructions(self, instructions: impl Into<String>) -> Self {
        let instructions = instructions.into();
        self.edit(|s| s.instructions = Some(instructions))
    }

    /// The longest a call may run when its tool sets no `max_run_time` (ten minutes).
    #[must_use]
    pub fn with_max_run_time(self, max_run_time: Duration) -> Self {
        self.edit(|s| s.max_run_time = max_run_time)
    }

    /// The application decides whether a call that needs approval runs, instead of the
    /// client's user. The hook gets the call (its id, the tool's name and namespace, the
    /// arguments as the client sent them) and returns a [`Decision`]:
    /// [`Decision::AskTheClient`] hands the call to the client's user as without a hook. It
    /// runs at most the call's `max_run_time`; past it, or if it panics, the call is denied.
    ///
    /// ```no_run
    /// use llm_tools_core::tool;
    /// use llm_tools_mcp::{Decision, ToolServer};
    ///
    /// /// Empties a table
    /// #[tool(needs_approval)]
    /// async fn wipe(table: String) -> String {
    ///     format!("wiped {table}")
    /// }
    ///
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = ToolServer::new("db").with_tools(Wipe)?.approve_with(|call| {
    ///     let scratch = call.arguments.contains(r#""table":"scratch""#);
    ///     async move {
    ///         if scratch { Decision::Approve } else { Decision::AskTheClient }
    ///     }
    /// });
    /// server.serve_stdio().await?;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn approve_with<F, Fut>(self, decide: F) -> Self
    where
        F: Fn(&ToolCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Decision> + Send + 'static,
    {
        let approver = approval::approver(decide);
        self.edit(|s| s.approver = Some(approver))
    }

    /// How long a 2026-07-28 call waiting for its user (an approval, a question) may take
    /// before the client's answer is refused ([`DEFAULT_REQUEST_STATE_TTL`], an hour).
    #[must_use]
    pub fn with_request_state_ttl(self, ttl: Duration) -> Self {
        self.edit(|s| s.request_state_ttl = ttl)
    }

    /// How long a task is kept after it finished, or after its client last asked about an
    /// unfinished one ([`DEFAULT_TASK_TTL`](crate::DEFAULT_TASK_TTL), an hour); then it is
    /// removed, and a `tasks/get` for it finds nothing.
    #[must_use]
    pub fn with_task_ttl(self, ttl: Duration) -> Self {
        self.edit(|s| s.task_limits.ttl = ttl)
    }

    /// How many tasks the server keeps at once, every client's
    /// ([`DEFAULT_MAX_TASKS`](crate::DEFAULT_MAX_TASKS)); a call that would start one more gets
    /// a tool error saying so.
    #[must_use]
    pub fn with_max_tasks(self, max_tasks: usize) -> Self {
        self.edit(|s| s.task_limits.max = max_tasks)
    }

    /// How many of those tasks one client may have at once
    /// ([`DEFAULT_MAX_TASKS_PER_CLIENT`](crate::DEFAULT_MAX_TASKS_PER_CLIENT)), a client being
    /// its authorization principal, else its session or connection; a call that would start
    /// one more gets a tool error saying so, and the other clients' calls still start.
    #[must_use]
    pub fn with_max_tasks_per_client(self, max_tasks: usize) -> Self {
        self.edit(|s| s.task_limits.per_client = max_tasks)
    }

    /// How many bytes the server's tasks keep at once, every client's
    /// ([`DEFAULT_MAX_TASK_BYTES`](crate::DEFAULT_MAX_TASK_BYTES)): what their clients sent (a
    /// call's arguments, the answers to its questions) while a task is unfinished, and a
    /// finished task's result until its TTL. A call whose arguments would pass it gets a tool
    /// error saying so and starts no task, an answer past it (`tasks/update`) gets a JSON-RPC
    /// error, and a result past it is replaced by an error result naming it. A task gives its
    /// arguments' bytes back when it finishes, and the rest when it is cancelled or removed at
    /// its TTL.
    #[must_use]
    pub fn with_max_task_bytes(self, bytes: usize) -> Self {
        self.edit(|s| s.task_limits.max_bytes = bytes)
    }

    /// How many of those bytes one client's tasks keep at once
    /// ([`DEFAULT_MAX_TASK_BYTES_PER_CLIENT`](crate::DEFAULT_MAX_TASK_BYTES_PER_CLIENT)), a
    /// client being its authorization principal, else its session or connection; past it the
    /// client's call gets a tool error saying so, and the other clients' calls still start
    /// tasks.
    #[must_use]
    pub fn with_max_task_bytes_per_client(self, bytes: usize) -> Self {
        self.edit(|s| s.task_limits.per_client_bytes = bytes)
    }

    /// How many calls one client may have running at once
    /// ([`DEFAULT_MAX_CALLS_IN_FLIGHT_PER_CLIENT`](crate::DEFAULT_MAX_CALLS_IN_FLIGHT_PER_CLIENT)),
    /// a client being its authorization principal (every session of it together), else its
    /// session or connection. A call counts until its response, waiting for an approval or an answer included, and a task's
    /// resume while it runs; one more call gets an error result at once and its tool does not
    /// run (a task past it is not resumed at that poll, and stays working), and the other
    /// clients' calls still run.
    #[must_use]
    pub fn with_max_calls_in_flight_per_client(self, max_calls: usize) -> Self {
        self.edit(|s| s.call_limits.per_client = max_calls)
    }

    /// How many calls the server may have running at once, of all its clients together
    /// ([`DEFAULT_MAX_CALLS_IN_FLIGHT`](crate::DEFAULT_MAX_CALLS_IN_FLIGHT)), counted as
    /// [`with_max_calls_in_flight_per_client`](Self::with_max_calls_in_flight_per_client)
    /// counts; one more call gets an error result at once and its tool does not run (a task
    /// past it is not resumed at that poll, and stays working). Without authorization every
    /// session is a client of its own: this bounds what many sessions can start.
    #[must_use]
    pub fn with_max_calls_in_flight(self, max_calls: usize) -> Self {
        self.edit(|s| s.call_limits.total = max_calls)
    }

    /// How many bytes of arguments one client's calls running at once may hold
    /// ([`DEFAULT_MAX_ARGUMENT_BYTES_IN_FLIGHT_PER_CLIENT`](crate::DEFAULT_MAX_ARGUMENT_BYTES_IN_FLIGHT_PER_CLIENT),
    /// 16 MiB), a client counted as
    /// [`with_max_calls_in_flight_per_client`](Self::with_max_calls_in_flight_per_client)
    /// counts it. A call holds its arguments (as JSON text) until its response, waiting for an
    /// approval or an answer included; one whose arguments would pass the limit gets an error
    /// result at once and its tool does not run.
    #[must_use]
    pub fn with_max_argument_bytes_in_flight_per_client(self, bytes: usize) -> Self {
        self.edit(|s| s.call_limits.per_client_bytes = bytes)
    }

    /// How many bytes of arguments the calls running at once may hold, of all clients together
    /// ([`DEFAULT_MAX_ARGUMENT_BYTES_IN_FLIGHT`](crate::DEFAULT_MAX_ARGUMENT_BYTES_IN_FLIGHT),
    /// 64 MiB), counted as
    /// [`with_max_argument_bytes_in_flight_per_client`](Self::with_max_argument_bytes_in_flight_per_client)
    /// counts; one call more that would pass it gets an error result at once.
    #[must_use]
    pub fn with_max_argument_bytes_in_flight(self, bytes: usize) -> Self {
        self.edit(|s| s.call_limits.total_bytes = bytes)
    }

    /// Adds tools (a tool, a toolset's `.tools()`, a tuple or a `Vec`), all or none: a name
    /// served already or an invalid spec is an error and adds nothing.
    pub fn with_tools(self, tools: impl IntoTools) -> Result<Self, llm_tools_core::Error> {
        let mut new = Vec::new();
        tools.into_tools(&mut new);
        let mut taken: Vec<&str> = self.inner.by_name.keys().map(String::as_str).collect();
        for tool in &new {
            let spec = tool.spec();
            spec.validate()?;
            if taken.contains(&spec.joined_name()) {
                return Err(llm_tools_core::ConfigError::NameTaken(format!(
                    "the tool name `{}` is served already",
                    spec.joined_name()
                ))
                .into());
            }
            taken.push(spec.joined_name());
        }
        let listed: Vec<rmcp::model::Tool> = new.iter().map(|t| listing(t.as_ref())).collect();
        Ok(self.edit(|s| {
            for (tool, entry) in new.into_iter().zip(listed) {
                s.by_name
                    .insert(tool.spec().joined_name().to_owned(), s.tools.len());
                s.tools.push(tool);
                s.listed.push(entry);
            }
        }))
    }

    /// Serves on this process's stdin and stdout until the client closes them (the usual way
    /// for a server an MCP client starts as a command). Nothing else may write to stdout.
    /// Each message is bounded as over HTTP (see [`Self::serve_io`]).
    pub async fn serve_stdio(self) -> Result<(), McpError> {
        self.boxed_serve_stdio().await
    }

    /// [`serve_stdio`](Self::serve_stdio) as a boxed future. The public `async fn`s that run
    /// the server go through plain functions like this one: rustc can copy an async body into
    /// every codegen unit that polls it, the application's crate included; behind a box it is
    /// compiled once, in this crate.
    #[inline(never)]
    fn boxed_serve_stdio(self) -> BoxFuture<'static, Result<(), McpError>> {
        Box::pin(self.serve_stdio_now())
    }

    async fn serve_stdio_now(self) -> Result<(), McpError> {
        let running = self
            .boxed_serve_io(Box::new(tokio::io::stdin()), Box::new(tokio::io::stdout()))
            .await
            .map_err(|message| McpError::Handshake {
                server: "stdio".into(),
                message,
            })?;
        let _ = running.waiting().await;
        Ok(())
    }

    /// Serves one connection of newline-delimited JSON-RPC, as on stdio, on `read` and `write`
    /// (a child's pipes, a socket, an in-memory duplex); returns the running service. Each
    /// message is bounded as over HTTP before it is parsed: at most
    /// [`DEFAULT_MAX_REQUEST_BODY_BYTES`](crate::DEFAULT_MAX_REQUEST_BODY_BYTES) long (a longer
    /// line is dropped, with a warning) and at most
    /// [`DEFAULT_MAX_REQUEST_JSON_VALUES`](crate::DEFAULT_MAX_REQUEST_JSON_VALUES) JSON values
    /// (a request holding more is answered with a JSON-RPC error naming the limit, unparsed).
    /// The connection goes on after either. ([`Self::serve`] with a pair of streams takes
    /// rmcp's own bound instead: 16 MiB a line, values uncounted.)
    pub async fn serve_io<R, W>(
        self,
        read: R,
        write: W,
    ) -> Result<rmcp::service::RunningService<RoleServer, Self>, String>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        self.boxed_serve_io(Box::new(read), Box::new(write)).await
    }

    /// [`serve_io`](Self::serve_io) on boxed streams, as a boxed future made here: the
    /// session's code is compiled once, in this crate, whatever streams the caller has (a
    /// dynamic call per read and write, beside a JSON parse per message).
    #[inline(never)]
    fn boxed_serve_io(
        self,
        read: Box<dyn tokio::io::AsyncRead + Send + Unpin>,
        write: Box<dyn tokio::io::AsyncWrite + Send + Unpin>,
    ) -> BoxFuture<'static, Result<rmcp::service::RunningService<RoleServer, Self>, String>> {
        Box::pin(self.serve(BoundedStdio::new(read, write)))
    }

    /// Serves one connection on any rmcp transport (a pair of async streams, a child process,
    /// an in-memory duplex); returns the running service. Each connection is a client of its
    /// own: its tasks and calls are its alone, and its tasks end with it (an unfinished one's
    /// work is cancelled), since no other connection may reach them.
    pub async fn serve<T, E, A>(
        self,
        transport: T,
    ) -> Result<rmcp::service::RunningService<RoleServer, Self>, String>
    where
        T: rmcp::transport::IntoTransport<RoleServer, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let id = state::random_id("connection")?;
        let tasks = Arc::downgrade(&self.inner.tasks);
        let server = self.edit(|s| s.connection = Some(Arc::new(Connection { id, tasks })));
        ServiceExt::serve(server, transport)
            .await
            .map_err(|e| e.to_string())
    }

    /// Serves Streamable HTTP on every connection the listener accepts, with the default
    /// [`HttpOptions`]: loopback clients only, at `/mcp`, no browser origin, no
    /// authorization. Both lifecycles are served: 2026-07-28 (stateless) and sessions opened
    /// with `initialize`.
    pub async fn serve_http(self, listener: tokio::net::TcpListener) -> Result<(), McpError> {
        self.serve_http_with(listener, HttpOptions::default()).await
    }

    /// Serves Streamable HTTP on every connection the listener accepts, reached and limited
    /// as `options` says (hosts, origins, path, authorization; see [`HttpOptions`]).
    pub async fn serve_http_with(
        self,
        listener: tokio::net::TcpListener,
        options: HttpOptions,
    ) -> Result<(), McpError> {
        self.boxed_serve_http(listener, options).await
    }

    /// [`serve_http_with`](Self::serve_http_with) as a boxed future (see
    /// [`boxed_serve_stdio`](Self::boxed_serve_stdio)).
    #[inline(never)]
    fn boxed_serve_http(
        self,
        listener: tokio::net::TcpListener,
        options: HttpOptions,
    ) -> BoxFuture<'static, Result<(), McpError>> {
        let longest_call = self.longest_call();
        Box::pin(http::serve(self, listener, options, longest_call))
    }

    /// The longest a call may take to answer: its approval and its run, each at most the
    /// longest `max_run_time` of the tools, and a minute for the rest.
    fn longest_call(&self) -> Duration {
        let longest = self
            .inner
            .tools
            .iter()
            .map(|tool| {
                tool.spec()
                    .max_run_time()
                    .unwrap_or(self.inner.max_run_time)
            })
            .fold(self.inner.max_run_time, Duration::max);
        longest
            .saturating_mul(2)
            .saturating_add(Duration::from_secs(60))
    }

    /// Who a request comes from: the connection this copy serves (stdio, [`Self::serve`]), or
    /// over HTTP the principal the request was granted as (`anonymous` without authorization)
    /// and its session (sessions opened with `initialize`). Tasks and call states belong to
    /// it: without authorization, every 2026-07-28 HTTP client is the same anonymous one, and
    /// a task's unguessable id is all that keeps it to its client. A request rmcp serves
    /// without a session ([`served_without_session`]: a 2026-07-28 one, or any whose `_meta`
    /// holds that version's request keys) has none, whatever it says: a session id it names is
    /// not part of its owner, or a client could take a new share of the tasks at every call.
    fn owner(&self, context: &RequestContext<RoleServer>) -> String {
        if let Some(parts) = context.extensions.get::<hyper::http::request::Parts>() {
            let principal = parts
                .extensions
                .get::<http::Principal>()
                .map_or("anonymous", |p| p.0.as_str());
            let session = parts
                .headers
                .get("mcp-session-id")
                .filter(|_| !served_without_session(context, parts))
                .and_then(|v| v.to_str().ok());
            return match session {
                Some(session) => format!("http/principal:{principal}/session:{session}"),
                None => format!("http/principal:{principal}"),
            };
        }
        self.inner
            .connection
            .as_ref()
            .map_or_else(|| "connection".to_owned(), |c| c.id.clone())
    }

    /// Whose share of the calls running at once a request takes: over HTTP with authorization
    /// its principal, every session of it together (a principal opening more sessions gets no
    /// more calls); else its owner ([`Self::owner`]).
    fn caller(&self, context: &RequestContext<RoleServer>) -> String {
        let principal = context
            .extensions
            .get::<hyper::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<http::Principal>());
        match principal {
            Some(principal) => format!("http/principal:{}", principal.0),
            None => self.owner(context),
        }
    }

    async fn run_call(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let owner = self.owner(&context);
        // The arguments as JSON text, which the call holds from here; the parsed value goes.
        let arguments = request
            .arguments
            .take()
            .map(|a| serde_json::to_string(&a).unwrap_or_default())
            .unwrap_or_else(|| "{}".to_owned());
        // Held until the response: a call cancelled or past its limit gives it back too.
        let _running = match self.inner.in_flight.enter(
            &self.caller(&context),
            self.inner.call_limits,
            arguments.len(),
        ) {
            Ok(running) => running,
            Err(full) => {
                tracing::warn!(target: "llm_tools::mcp", tool = %crate::error::cut(request.name.as_ref(), 128), ?full, "refused a call: its client, or the server, has its maximum of calls running or of their arguments' bytes");
                return CallToolResponse::Complete(error_result(full.message()));
            }
        };
        let Some(&index) = self.inner.by_name.get(request.name.as_ref()) else {
            return CallToolResponse::Complete(error_result(format!(
                "unknown tool `{}`; the tools are: {}",
                // The client's name, shown as far as a tool name may be long.
                crate::error::cut(request.name.as_ref(), 128),
                self.inner
                    .listed
                    .iter()
                    .map(|t| t.name.as_ref())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        };
        let tool = Arc::clone(&self.inner.tools[index]);
        let spec = tool.spec();
        let limit = spec.max_run_time().unwrap_or(self.inner.max_run_time);
        let parts = context.extensions.get::<hyper::http::request::Parts>();
        // The version the request names: in its `_meta`, else (over HTTP) in its header.
        let modern = requested_version(&context, parts)
            .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
        // Served without a session, yet naming an older version: nothing can reach the client
        // to ask in place, and it does not take input requests either.
        let cannot_ask =
            !modern && parts.is_some_and(|parts| served_without_session(&context, parts));
        // On 2026-07-28 a call the user must answer is sent again, with the state this server
        // sealed and the answers of the last round (`inputResponses`).
        let resumed = match (&request.request_state, modern) {
            (Some(sealed), true) => {
                match self
                    .inner
                    .state_key
                    .open(sealed, spec.joined_name(), &arguments, &owner)
                {
                    Ok(state) => Some(state),
                    Err(message) => return CallToolResponse::Complete(error_result(message)),
                }
            }
            _ => None,
        };
        // The call's id: the server's own (128 random bits), never the client's JSON-RPC id,
        // so it is unique across clients and the same in every round of the call.
        let mut state = match resumed {
            Some(state) => state,
            None => match state::random_id("call") {
                Ok(call_id) => CallState::new(call_id, spec.joined_name(), &arguments, &owner),
                Err(message) => return CallToolResponse::Complete(error_result(message)),
            },
        };
        let responses = request.input_responses.as_ref();
        let mut answers: Vec<Answer> = state.answers.clone();
        // Only the answer to the question the last round asked counts: a client cannot answer
        // questions ahead of the tool, nor more of them than it asks.
        if modern
            && let Some(asked) = state.asked.take()
            && asked == answers.len()
        {
            answers.extend(
                elicitation::answers_of(responses, asked)
                    .into_iter()
                    .take(1),
            );
        }
        let call_id = state.call_id.clone();
        let call = ToolCall::new(call_id.clone(), spec.name(), arguments.clone())
            .with_namespace(spec.namespace().map(|n| n.name().to_owned()));
        if !state.approved && approval::needs_approval(tool.as_ref(), &call) {
            // An answer counts only in the round after the server asked for it.
            let answered = responses
                .filter(|_| state.asked_approval)
                .and_then(|r| r.get(approval::APPROVAL_KEY));
            let decided = approval::approve(
                self.inner.approver.as_ref(),
                &call,
                &context,
                approval::Asking::of(modern, cannot_ask),
                answered,
            );
            let decided = tokio::select! {
                decided = tokio::time::timeout(limit, decided) => decided,
                () = context.ct.cancelled() => {
                    return CallToolResponse::Complete(error_result("cancelled by the client"));
                }
            };
            match decided {
                Ok(Approval::Granted) => state.approved = true,
                Ok(Approval::Refused(message)) => {
                    return CallToolResponse::Complete(error_result(message));
                }
                Ok(Approval::Ask(requests)) => {
                    state.asked_approval = true;
                    return self.ask(requests, &state);
                }
                Err(_) => {
                    return CallToolResponse::Complete(error_result(format!(
                        "the call to `{}` was not approved within its limit of {limit:?}; it did not run",
                        spec.joined_name()
                    )));
                }
            }
        }
        state.asked_approval = false;
        // The tasks extension is a 2026-07-28 one: older sessions keep the call open instead.
        let tasks = modern
            && context
                .client_capabilities()
                .is_some_and(|caps| caps.supports_tasks());
        let progress =
            ProgressForwarder::new(context.peer.clone(), context.meta.get_progress_token());
        // A run's context, given `answers`.
        let make_ctx = |answers: &[Answer]| {
            let progress = progress.clone();
            ToolContext::builder(call_id.clone())
                .tool(spec.name(), spec.namespace().map(|n| n.name().to_owned()))
                .answers(answers.to_vec())
                .on_progress(move |p: &ToolProgress| progress.report(p))
                .build()
        };
        // The task the call works on while it polls it here: stopped if the call ends first,
        // however it ends (its future dropped outright included).
        let working = Working::new(
            Arc::clone(&tool),
            (spec.name(), spec.namespace().map(|n| n.name())),
            &arguments,
            &call_id,
        );
        // The task the next run resumes rather than calling the tool from the start: the tool
        // asked while resuming it, and the answer has come. Its resumes are given the answers
        // after the first `task_from`, which the call's own runs were given.
        let mut resuming = None;
        let mut task_from = state.task_from;
        if let Some(parked) = state.task.take() {
            match self
                .inner
                .tasks
                .take_parked(self.inner.task_limits.ttl, &owner, &parked)
            {
                Some(task) => {
                    // Tracked from here: a call cancelled before its first run still stops it.
                    working.keep(Some(task.clone()));
                    resuming = Some(task);
                }
                None => {
                    return CallToolResponse::Complete(error_result(
                        "the call's task ended while it waited for the answer (cancelled, or \
                         past the server's task TTL); call the tool again",
                    ));
                }
            }
        }
        let run = async {
            loop {
                let (ctx, first, resumed) = match resuming.take() {
                    Some(task) => {
                        working.keep(Some(task.clone()));
                        let ctx = make_ctx(answers.get(task_from..).unwrap_or_default());
                        let outcome = guarded(|| {
                            tool.resume(task.clone(), RawArgs::new(&arguments), ctx.clone())
                        })
                        .await;
                        (ctx, outcome, Some(task))
                    }
                    None => {
                        let ctx = make_ctx(&answers);
                        let outcome =
                            guarded(|| tool.call(RawArgs::new(&arguments), ctx.clone())).await;
                        (ctx, outcome, None)
                    }
                };
                // A client of the tasks extension gets a working task as a task to poll.
                if tasks
                    && resumed.is_none()
                    && let ToolOutcome::Task(task) = &first
                    && task.status() == TaskStatus::Working
                {
                    let started = self.inner.tasks.start(
                        self.inner.task_limits,
                        &owner,
                        Arc::clone(&tool),
                        &arguments,
                        &call_id,
                        limit,
                        task.clone(),
                    );
                    return match started {
                        Ok(started) => CallToolResponse::Task(started),
                        Err(message) => {
                            // Refused (the client's limits on tasks): the work the tool
                            // started is stopped, as the client is told it did not start.
                            working.stop(task.clone(), ctx).await;
                            CallToolResponse::Complete(error_result(message))
                        }
                    };
                }
                if resumed.is_none() {
                    task_from = answers.len();
                }
                let carried = {
                    let resume_ctx = || make_ctx(answers.get(task_from..).unwrap_or_default());
                    carry_on(
                        tool.as_ref(),
                        first,
                        resumed,
                        ctx,
                        &resume_ctx,
                        RawArgs::new(&arguments),
                        &working,
                    )
                    .await
                };
                progress.flush().await;
                let (question, resumed) = match carried {
                    Carried::Done(outcome) => {
                        return CallToolResponse::Complete(result_of(
                            outcome,
                            spec.joined_name(),
                            &call_id,
                        ));
                    }
                    Carried::Asked {
                        question, resumed, ..
                    } => (question, resumed),
                };
                // The call itself asked: it runs again from the start, so the work of a task it
                // returned all the same is stopped. (A resume that asked is resumed again: what
                // it returned is its task's state, left for the next resume to tell.)
                // (It was kept in `working` until here, so that a call given up on meanwhile
                // stopped it all the same.)
                if resumed.is_none()
                    && let Some(started) = working.take()
                {
                    working.stop(started, make_ctx(&[])).await;
                }
                // Each answer is kept until the call ends, in one request or across rounds.
                if answers.len() >= MAX_QUESTIONS {
                    if let Some(task) = working.take() {
                        working.stop(task, make_ctx(&[])).await;
                    }
                    return CallToolResponse::Complete(error_result(format!(
                        "the tool asked more than {MAX_QUESTIONS} questions"
                    )));
                }
                if modern {
                    let mut state = state.clone();
                    // The task whose resume asked is kept among the server's tasks until the
                    // next round takes it back.
                    if let Some(task) = resumed {
                        working.keep(None);
                        let parked = self.inner.tasks.park(
                            self.inner.task_limits,
                            &owner,
                            Arc::clone(&tool),
                            &arguments,
                            &call_id,
                            limit,
                            task.clone(),
                        );
                        match parked {
                            Ok(id) => {
                                state.task = Some(id);
                                state.task_from = task_from;
                            }
                            Err(message) => {
                                working.stop(task, make_ctx(&[])).await;
                                return CallToolResponse::Complete(error_result(message));
                            }
                        }
                    }
                    let index = answers.len();
                    state.answers = answers;
                    state.asked = Some(index);
                    let response = self.ask(question_requests(&question, index), &state);
                    // No round comes to take back a task the client was not given the state of.
                    if let (CallToolResponse::Complete(_), Some(parked)) = (&response, &state.task)
                        && let Some(task) =
                            self.inner
                                .tasks
                                .take_parked(self.inner.task_limits.ttl, &owner, parked)
                    {
                        working.stop(task, make_ctx(&[])).await;
                    }
                    return response;
                }
                if cannot_ask {
                    if let Some(task) = working.take() {
                        working.stop(task, make_ctx(&[])).await;
                    }
                    return CallToolResponse::Complete(error_result(NO_WAY_TO_ASK));
                }
                match elicit(&context.peer, &question, &call_id, answers.len()).await {
                    Ok(answer) => {
                        answers.push(answer);
                        // The task whose resume asked (kept working while the user answered).
                        resuming = working.take();
                    }
                    Err(message) => {
                        if let Some(task) = working.take() {
                            working.stop(task, make_ctx(&[])).await;
                        }
                        return CallToolResponse::Complete(error_result(message));
                    }
                }
            }
        };
        let response = tokio::select! {
            response = tokio::time::timeout(limit, run) => response.unwrap_or_else(|_| {
                CallToolResponse::Complete(error_result(format!(
                    "The call ran longer than its limit of {limit:?} and was cancelled."
                )))
            }),
            () = context.ct.cancelled() => CallToolResponse::Complete(error_result("cancelled by the client")),
        };
        // The call ended while a task it polled still worked (its limit, the client's
        // cancel): the tool stops that work. (A call whose future is dropped before this,
        // with no cancel, has it stopped by `working` as it drops.)
        if let Some(task) = working.take() {
            let ctx = ToolContext::builder(call_id.clone())
                .tool(spec.name(), spec.namespace().map(|n| n.name().to_owned()))
                .build();
            working.stop(task, ctx).await;
        }
        response
    }

    /// Ends a 2026-07-28 round: the client asks its user `requests` and sends the call again
    /// with the answers and `state`, sealed.
    fn ask(&self, requests: rmcp::model::InputRequests, state: &CallState) -> CallToolResponse {
        match self
            .inner
            .state_key
            .seal(state, self.inner.request_state_ttl)
        {
            Ok(sealed) => CallToolResponse::InputRequired(input_required(requests, sealed)),
            Err(message) => CallToolResponse::Complete(error_result(message)),
        }
    }
}

/// The `tools/list` entry of a tool.
fn listing(tool: &dyn Tool) -> rmcp::model::Tool {
    let spec = tool.spec();
    let schema = match spec.parameters() {
        Value::Object(object) => object.clone(),
        _ => serde_json::Map::new(),
    };
    let mut listed = rmcp::model::Tool::new(
        spec.joined_name().to_owned(),
        spec.description().to_owned(),
        Arc::new(schema),
    );
    listed.title = spec.title().map(str::to_owned);
    let hints = spec.annotations();
    if !hints.is_empty() || spec.title().is_some() {
        let mut annotations = rmcp::model::ToolAnnotations::default();
        // Clients of 2025-03-26 read the title here.
        annotations.title = listed.title.clone();
        annotations.read_only_hint = hints.read_only;
        annotations.destructive_hint = hints.destructive;
        annotations.idempotent_hint = hints.idempotent;
        annotations.open_world_hint = hints.open_world;
        listed.annotations = Some(annotations);
    }
    listed.output_schema = spec
        .output_schema()
        .and_then(Value::as_object)
        .map(|schema| Arc::new(schema.clone()));
    listed
}

impl ServerHandler for ToolServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities: ServerCapabilities = serde_json::from_value(json!({
            "tools": {"listChanged": false},
            "extensions": {rmcp::model::TASKS_EXTENSION_ID: {}},
        }))
        .unwrap_or_default();
        let mut info = ServerConfig::new(capabilities).with_server_info(Implementation::new(
            self.inner.name.clone(),
            self.inner.version.clone(),
        ));
        if let Some(instructions) = &self.inner.instructions {
            info = info.with_instructions(instructions.clone());
        }
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.inner.listed.clone()))
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.inner
            .by_name
            .get(name)
            .map(|&index| self.inner.listed[index].clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        Ok(self.run_call(request, context).await)
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let owner = self.owner(&context);
        let caller = self.caller(&context);
        // A resume holds no arguments beyond those the task keeps, which the task limits count.
        self.inner
            .tasks
            .poll(self.inner.task_limits, &owner, &request.task_id, || {
                self.inner
                    .in_flight
                    .enter(&caller, self.inner.call_limits, 0)
                    .ok()
            })
            .await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.inner
            .tasks
            .cancel(
                self.inner.task_limits,
                &self.owner(&context),
                &request.task_id,
            )
            .await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.inner
            .tasks
            .update(
                self.inner.task_limits,
                &self.owner(&context),
                &request.task_id,
                &request.input_responses,
            )
            .await
    }
}

/// Whether rmcp serves this HTTP request without a session, as it decides: its `_meta` holds
/// every key the 2026-07-28 lifecycle requires (whatever version it names), or the version it
/// names (in `_meta`, else in the `MCP-Protocol-Version` header) has no `initialize`. A
/// session id such a request names is neither checked nor used.
fn served_without_session(
    context: &RequestContext<RoleServer>,
    parts: &hyper::http::request::Parts,
) -> bool {
    if context
        .meta
        .missing_required_keys(&ProtocolVersion::V_2026_07_28)
        .is_empty()
    {
        return true;
    }
    requested_version(context, Some(parts)).is_some_and(|version| !version.has_initialize())
}

/// The protocol version a request names: in its `_meta`, else in its `MCP-Protocol-Version`
/// header (over HTTP).
fn requested_version(
    context: &RequestContext<RoleServer>,
    parts: Option<&hyper::http::request::Parts>,
) -> Option<ProtocolVersion> {
    context.meta.protocol_version().or_else(|| {
        parts?
            .headers
            .get("mcp-protocol-version")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| serde_json::from_value(Value::String(v.to_owned())).ok())
    })
}

/// Why a call served without a session under an older protocol version cannot ask its user.
const NO_WAY_TO_ASK: &str = "the tool asks the user, and this request cannot carry \
    the question: it was served without a session while naming a protocol version older \
    than 2026-07-28, whose calls ask in place; send it in a session, or as a 2026-07-28 \
    request; the call did not finish";

#[cfg(test)]
mod tests {
    use llm_tools_core::tool;
    use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, DuplexStream};

    use super::super::call::tests::Brittle;
    use super::*;

    /// Empties a table
    ///
    /// # Arguments
    /// * `table` - The table to empty
    #[tool(needs_approval)]
    async fn wipe(table: String) -> String {
        format!("wiped {table}")
    }

    /// A client writing JSON-RPC lines to one connection of a server (as stdio), with a 2025
    /// session opened.
    struct Client {
        write: tokio::io::WriteHalf<DuplexStream>,
        read: BufReader<tokio::io::ReadHalf<DuplexStream>>,
    }

    impl Client {
        async fn initialized(server: ToolServer) -> Self {
            let (ours, theirs) = tokio::io::duplex(1 << 16);
            tokio::spawn(async move {
                let (read, write) = tokio::io::split(theirs);
                if let Ok(running) = server.serve_io(read, write).await {
                    let _ = running.waiting().await;
                }
            });
            let (read, write) = tokio::io::split(ours);
            let mut client = Self {
                write,
                read: BufReader::new(read),
            };
            client
                .send(
                    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "1"}}}),
                )
                .await;
            client.answer(1).await;
            client
                .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
                .await;
            client
        }

        async fn send(&mut self, message: Value) {
            let line = format!("{message}\n");
            self.write.write_all(line.as_bytes()).await.unwrap();
        }

        /// The text of the result of a `tools/call` of `tool` as request `id`, and whether it
        /// is an error result.
        async fn call(&mut self, id: u64, tool: &str, arguments: Value) -> (bool, String) {
            self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": tool, "arguments": arguments}}))
                .await;
            let answer = self.answer(id).await;
            let result = &answer["result"];
            let text = result["content"][0]["text"].as_str().unwrap_or_default();
            (result["isError"] == json!(true), text.to_owned())
        }

        /// The answer to request `id`; fails the test instead of hanging it when none comes
        /// (a passing run never comes near the guard).
        async fn answer(&mut self, id: u64) -> Value {
            let read = async {
                loop {
                    let mut line = String::new();
                    assert!(
                        self.read.read_line(&mut line).await.unwrap() > 0,
                        "the server closed the connection"
                    );
                    let message: Value = serde_json::from_str(&line).unwrap();
                    if message["id"] == json!(id) && message.get("method").is_none() {
                        return message;
                    }
                }
            };
            tokio::time::timeout(Duration::from_secs(10), read)
                .await
                .unwrap_or_else(|_| panic!("no answer to request {id}"))
        }
    }

    #[tokio::test]
    async fn an_approval_hook_that_panics_before_its_future_denies_the_call() {
        let server = ToolServer::new("db")
            .with_tools(Wipe)
            .unwrap()
            .approve_with(|call| {
                assert!(!call.arguments.contains("boom"), "the hook's own panic");
                async { Decision::Approve }
            });
        let mut client = Client::initialized(server).await;
        let (is_error, text) = client.call(2, "wipe", json!({"table": "boom"})).await;
        assert!(is_error, "{text}");
        assert!(
            text.contains("denied") && text.contains("did not run"),
            "{text}"
        );
        // The connection goes on: the next call is decided and runs.
        let ran = client.call(3, "wipe", json!({"table": "scratch"})).await;
        assert_eq!(ran, (false, "wiped scratch".to_owned()));
    }

    #[tokio::test]
    async fn a_tool_whose_call_panics_before_its_future_gets_an_error_result() {
        let server = ToolServer::new("brittle")
            .with_tools(Brittle::default())
            .unwrap();
        let mut client = Client::initialized(server).await;
        let answer = client.call(2, "brittle", json!({})).await;
        assert_eq!(answer, (true, "the tool panicked".to_owned()));
    }
}
