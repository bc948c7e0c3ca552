//! [`ToolServer`]: `#[tool]`s and toolsets served to any MCP client, over stdio or Streamable
//! HTTP, with rmcp's server side. The same tools that serve a chat serve Claude Desktop, an
//! IDE or another agent.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use futures::FutureExt as _;
use llm_tools_core::{
    Answer, Attachment, IntoTools, Question, RawArgs, Source, Task, TaskStatus, Tool, ToolContext,
    ToolOutcome, ToolOutput, ToolProgress,
};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, CreateTaskResult,
    DetailedTask, ElicitRequest, ElicitRequestParams, ElicitResult, GetTaskParams, GetTaskResult,
    Implementation, InputRequest, InputRequests, InputRequiredResult, InputResponses,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProgressToken,
    ProtocolVersion, ServerCapabilities, ServerConfig, TaskPayload, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

use crate::McpError;

/// The longest a served call may run unless its tool says otherwise (as a chat's default).
pub const DEFAULT_SERVE_MAX_RUN_TIME: Duration = Duration::from_secs(600);

/// How many questions one call may ask before the server gives up on it.
const MAX_QUESTIONS: usize = 16;

/// Tools served over MCP.
///
/// Each tool is listed under its joined name (`crm_customer_lookup`), with its description and
/// input schema; a call decodes the client's arguments exactly as in a chat. What a call
/// returns becomes the result: text (JSON values also as `structuredContent`), images and
/// audio as image and audio content, other files as embedded resources; a recoverable error is
/// an `isError` result. Progress reported with `ToolContext::report_progress` goes to the
/// client as `notifications/progress`; a question asked with `ToolContext::ask` becomes an
/// elicitation request (or, on 2026-07-28, an input request the client answers by sending the
/// call again), and the tool runs again from the start with the answer, as in a chat. A tool
/// that returns a working [`Task`](llm_tools_core::Task) runs as an MCP task for a 2026-07-28
/// client of the tasks extension (each `tasks/get` resumes it once, `tasks/cancel` runs its
/// `cancel`); for other clients it is resumed after the task's poll interval until it
/// finishes. A call runs at most its tool's `max_run_time` (ten minutes by default) and stops
/// when the client cancels it.
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
    /// The calls running as tasks (the 2026-07-28 tasks extension), by task id; shared by
    /// every session of the server.
    tasks: Arc<std::sync::Mutex<HashMap<String, Arc<tokio::sync::Mutex<ServedTask>>>>>,
}

/// A call a client runs as a task: the tool, its arguments, where it stands.
struct ServedTask {
    tool: usize,
    arguments: String,
    created_at: String,
    updated_at: String,
    state: TaskState,
    /// The client's answers to the task's questions, in order (`tasks/update`).
    answers: Vec<Answer>,
}

enum TaskState {
    /// The tool's task, resumed when the client polls.
    Working(Task),
    /// The tool asked the user: the task waits for `tasks/update` to answer `question`.
    Asking { task: Task, question: Question },
    /// Done: the payload every later poll gets.
    Finished(TaskPayload),
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
                tasks: Arc::default(),
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
    pub async fn serve_stdio(self) -> Result<(), McpError> {
        let running = self
            .serve((tokio::io::stdin(), tokio::io::stdout()))
            .await
            .map_err(|message| McpError::Handshake {
                server: "stdio".into(),
                message,
            })?;
        let _ = running.waiting().await;
        Ok(())
    }

    /// Serves one connection on any rmcp transport (a pair of async streams, a child process,
    /// an in-memory duplex); returns the running service.
    pub async fn serve<T, E, A>(
        self,
        transport: T,
    ) -> Result<rmcp::service::RunningService<RoleServer, Self>, String>
    where
        T: rmcp::transport::IntoTransport<RoleServer, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        ServiceExt::serve(self, transport)
            .await
            .map_err(|e| e.to_string())
    }

    /// Serves Streamable HTTP on every connection the listener accepts, until the
    /// listener fails. Both lifecycles are served: 2026-07-28 (stateless) and sessions opened
    /// with `initialize`.
    pub async fn serve_http(self, listener: tokio::net::TcpListener) -> Result<(), McpError> {
        use rmcp::transport::streamable_http_server::{
            StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
        };
        let local = listener
            .local_addr()
            .map_err(|e| McpError::InvalidConfig(e.to_string()))?;
        // Loopback and the listener's own address may be named in the Host header.
        let config = StreamableHttpServerConfig::default().with_allowed_hosts([
            "localhost".to_owned(),
            "127.0.0.1".to_owned(),
            "::1".to_owned(),
            local.ip().to_string(),
        ]);
        let server = self.clone();
        let service = StreamableHttpService::new(
            move || Ok(server.clone()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        loop {
            let (stream, _) = listener.accept().await.map_err(|e| McpError::Handshake {
                server: self.inner.name.clone(),
                message: format!("the listener failed: {e}"),
            })?;
            let service = service.clone();
            tokio::spawn(async move {
                let io = hyper_util::rt::TokioIo::new(stream);
                let hyper_service = hyper_util::service::TowerToHyperService::new(service);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, hyper_service)
                    .await;
            });
        }
    }

    async fn run_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let Some(&index) = self.inner.by_name.get(request.name.as_ref()) else {
            return CallToolResponse::Complete(error_result(format!(
                "unknown tool `{}`; the tools are: {}",
                request.name,
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
        let arguments = request
            .arguments
            .as_ref()
            .map(|a| serde_json::to_string(a).unwrap_or_default())
            .unwrap_or_else(|| "{}".to_owned());
        let limit = spec.max_run_time().unwrap_or(self.inner.max_run_time);
        let modern = context
            .meta
            .protocol_version()
            .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
        // On 2026-07-28 the answers come with the call, sent again (`inputResponses`).
        let mut answers: Vec<Answer> = if modern {
            answers_of(&request)
        } else {
            Vec::new()
        };
        // The tasks extension is a 2026-07-28 one: older sessions keep the call open instead.
        let tasks = modern
            && context
                .client_capabilities()
                .is_some_and(|caps| caps.supports_tasks());
        let progress =
            ProgressForwarder::new(context.peer.clone(), context.meta.get_progress_token());
        let call_id = context.id.to_string();
        let run = async {
            for _ in 0..MAX_QUESTIONS {
                let ctx = ToolContext::builder(call_id.clone())
                    .tool(spec.name(), spec.namespace().map(|n| n.name().to_owned()))
                    .answers(answers.clone())
                    .on_progress({
                        let progress = progress.clone();
                        move |p: &ToolProgress| progress.report(p)
                    })
                    .build();
                let first = guarded(tool.call(RawArgs::new(&arguments), ctx.clone())).await;
                // A client of the tasks extension gets a working task as a task to poll.
                if tasks
                    && let ToolOutcome::Task(task) = &first
                    && task.status() == TaskStatus::Working
                {
                    return CallToolResponse::Task(self.start_task(
                        index,
                        &arguments,
                        task.clone(),
                    ));
                }
                let outcome =
                    carry_on(tool.as_ref(), first, RawArgs::new(&arguments), ctx.clone()).await;
                progress.flush().await;
                let Some(question) = ctx.take_pending_question() else {
                    return CallToolResponse::Complete(result_of(outcome));
                };
                if modern {
                    return CallToolResponse::InputRequired(input_required(
                        &question,
                        answers.len(),
                    ));
                }
                match elicit(&context.peer, &question, &call_id, answers.len()).await {
                    Ok(answer) => answers.push(answer),
                    Err(message) => return CallToolResponse::Complete(error_result(message)),
                }
            }
            CallToolResponse::Complete(error_result(format!(
                "the tool asked more than {MAX_QUESTIONS} questions"
            )))
        };
        tokio::select! {
            response = tokio::time::timeout(limit, run) => response.unwrap_or_else(|_| {
                CallToolResponse::Complete(error_result(format!(
                    "The call ran longer than its limit of {limit:?} and was cancelled."
                )))
            }),
            () = context.ct.cancelled() => CallToolResponse::Complete(error_result("cancelled by the client")),
        }
    }
}

impl ToolServer {
    /// Registers a call the client runs as a task, and its seed state.
    fn start_task(&self, tool: usize, arguments: &str, task: Task) -> CreateTaskResult {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let id = format!("task-{}-{n}", std::process::id());
        let now = rfc3339_now();
        let wire = wire_task(&id, &now, &now, &task);
        let served = ServedTask {
            tool,
            arguments: arguments.to_owned(),
            created_at: now.clone(),
            updated_at: now,
            state: TaskState::Working(task),
            answers: Vec::new(),
        };
        self.inner
            .tasks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(id, Arc::new(tokio::sync::Mutex::new(served)));
        CreateTaskResult::new(wire)
    }

    fn task(&self, id: &str) -> Result<Arc<tokio::sync::Mutex<ServedTask>>, ErrorData> {
        self.inner
            .tasks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(id)
            .cloned()
            .ok_or_else(|| {
                ErrorData::invalid_params(format!("no task `{id}` on this server"), None)
            })
    }

    /// `tasks/get`: a working task is resumed once (the tool's `resume`), and what it gives
    /// is the task's state: still working, or finished with the call's result.
    async fn poll(&self, id: &str) -> Result<GetTaskResult, ErrorData> {
        let entry = self.task(id)?;
        let mut served = entry.lock().await;
        if let TaskState::Working(task) = &served.state {
            let task = task.clone();
            let tool = Arc::clone(&self.inner.tools[served.tool]);
            let spec = tool.spec();
            let ctx = ToolContext::builder(id.to_owned())
                .tool(spec.name(), spec.namespace().map(|n| n.name().to_owned()))
                .answers(served.answers.clone())
                .build();
            let outcome =
                guarded(tool.resume(task.clone(), RawArgs::new(&served.arguments), ctx.clone()))
                    .await;
            served.updated_at = rfc3339_now();
            served.state = match outcome {
                // The tool asked the user: the task waits for the client's answer.
                _ if let Some(question) = ctx.take_pending_question() => {
                    TaskState::Asking { task, question }
                }
                ToolOutcome::Task(task) if task.status() == TaskStatus::Working => {
                    TaskState::Working(task)
                }
                ToolOutcome::Task(task) => TaskState::Finished(completed(error_result(format!(
                    "the tool paused waiting for the user ({}), which an MCP client cannot answer here",
                    task.status_message().unwrap_or("input required")
                )))),
                other => TaskState::Finished(completed(result_of(other))),
            };
        }
        let (task, payload) = match &served.state {
            TaskState::Working(task) => (
                wire_task(id, &served.created_at, &served.updated_at, task),
                TaskPayload::Working,
            ),
            TaskState::Asking { task, question } => (
                wire_task(id, &served.created_at, &served.updated_at, task),
                TaskPayload::InputRequired {
                    input_requests: task_input_requests(question, served.answers.len()),
                },
            ),
            TaskState::Finished(payload) => (
                rmcp::model::Task::new(
                    id,
                    payload.status(),
                    served.created_at.clone(),
                    served.updated_at.clone(),
                ),
                payload.clone(),
            ),
        };
        Ok(GetTaskResult::new(DetailedTask::new(task, payload)))
    }

    /// `tasks/update`: the client's answer to the question the task waits on; the next poll
    /// resumes the tool with it.
    async fn update(&self, id: &str, responses: &InputResponses) -> Result<(), ErrorData> {
        let entry = self.task(id)?;
        let mut served = entry.lock().await;
        let TaskState::Asking { task, .. } = &served.state else {
            return Err(ErrorData::invalid_params(
                format!("task `{id}` asks nothing"),
                None,
            ));
        };
        let task = task.clone();
        let answer = responses
            .values()
            .next()
            .and_then(|v| serde_json::from_value::<ElicitResult>(v.clone()).ok())
            .map_or_else(|| Answer::decline(None), |r| answer_of(&r));
        served.answers.push(answer);
        served.state = TaskState::Working(task);
        served.updated_at = rfc3339_now();
        Ok(())
    }

    /// `tasks/cancel`: the tool's `cancel` stops the work; the task is cancelled.
    async fn cancel(&self, id: &str) -> Result<(), ErrorData> {
        let entry = self.task(id)?;
        let mut served = entry.lock().await;
        if let TaskState::Working(task) | TaskState::Asking { task, .. } = &served.state {
            let tool = Arc::clone(&self.inner.tools[served.tool]);
            let ctx = ToolContext::builder(id.to_owned()).build();
            let cancelled = tool.cancel(task.clone(), RawArgs::new(&served.arguments), ctx);
            if AssertUnwindSafe(cancelled).catch_unwind().await.is_err() {
                tracing::error!(target: "llm_tools::mcp", task = id, "a served tool panicked while cancelling");
            }
            served.updated_at = rfc3339_now();
            served.state = TaskState::Finished(TaskPayload::Cancelled);
        }
        Ok(())
    }
}

/// The input requests of a task that asks `question` (its `index`th).
fn task_input_requests(question: &Question, index: usize) -> InputRequests {
    input_required(question, index)
        .input_requests
        .unwrap_or_default()
}

/// A finished task's payload: the call's result.
fn completed(result: CallToolResult) -> TaskPayload {
    match serde_json::to_value(result) {
        Ok(Value::Object(result)) => TaskPayload::Completed { result },
        _ => TaskPayload::Failed {
            error: serde_json::Map::from_iter([(
                "message".to_owned(),
                Value::String("the result cannot be sent".to_owned()),
            )]),
        },
    }
}

/// The wire state of a working task.
fn wire_task(id: &str, created_at: &str, updated_at: &str, task: &Task) -> rmcp::model::Task {
    let mut wire = rmcp::model::Task::new(
        id,
        rmcp::model::TaskStatus::Working,
        created_at.to_owned(),
        updated_at.to_owned(),
    );
    if let Some(message) = task.status_message() {
        wire = wire.with_status_message(message);
    }
    wire.poll_interval_ms = Some(
        task.poll_interval()
            .unwrap_or(Duration::from_secs(1))
            .as_millis()
            .try_into()
            .unwrap_or(u64::MAX),
    );
    wire
}

/// Now as RFC 3339 in UTC (`2026-12-04T18:05:00Z`), as task timestamps are written.
fn rfc3339_now() -> String {
    rfc3339(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
    )
}

/// Seconds since 1970 as RFC 3339 in UTC.
fn rfc3339(secs: u64) -> String {
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rest = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3_600,
        rest % 3_600 / 60,
        rest % 60
    )
}

/// The `tools/list` entry of a tool.
fn listing(tool: &dyn Tool) -> rmcp::model::Tool {
    let spec = tool.spec();
    let schema = match spec.parameters() {
        Value::Object(object) => object.clone(),
        _ => serde_json::Map::new(),
    };
    rmcp::model::Tool::new(
        spec.joined_name().to_owned(),
        spec.description().to_owned(),
        Arc::new(schema),
    )
}

/// Carries a call on from its first outcome: resumes a working task after its poll interval
/// until it finishes (for a client without the tasks extension); catches a panic.
async fn carry_on(
    tool: &dyn Tool,
    mut outcome: ToolOutcome,
    args: RawArgs<'_>,
    ctx: ToolContext,
) -> ToolOutcome {
    loop {
        let task = match outcome {
            ToolOutcome::Task(task) if task.status() == TaskStatus::Working => task,
            ToolOutcome::Task(task) => {
                return ToolOutcome::error(format!(
                    "the tool paused waiting for the user ({}), which an MCP client cannot answer here",
                    task.status_message().unwrap_or("input required")
                ));
            }
            other => return other,
        };
        if ctx.take_pending_question().is_some() {
            return ToolOutcome::Task(task);
        }
        tokio::time::sleep(task.poll_interval().unwrap_or(Duration::from_secs(1))).await;
        outcome = guarded(tool.resume(task, args, ctx.clone())).await;
    }
}

async fn guarded(future: llm_tools_core::BoxFuture<'_, ToolOutcome>) -> ToolOutcome {
    match AssertUnwindSafe(future).catch_unwind().await {
        Ok(outcome) => outcome,
        Err(_) => ToolOutcome::error("the tool panicked"),
    }
}

/// What the progress forwarder of one call is asked to do.
enum Forward {
    Progress(ProgressNotificationParam),
    /// Answer once everything before has been sent.
    Flush(tokio::sync::oneshot::Sender<()>),
}

/// Sends a call's progress reports to the client, in order, when it asked for progress; the
/// call's result waits for [`ProgressForwarder::flush`], so no report arrives after it (a
/// client drops those).
#[derive(Clone)]
struct ProgressForwarder {
    sender: Option<tokio::sync::mpsc::UnboundedSender<Forward>>,
    token: Option<ProgressToken>,
}

impl ProgressForwarder {
    fn new(peer: Peer<RoleServer>, token: Option<ProgressToken>) -> Self {
        if token.is_none() {
            return Self {
                sender: None,
                token,
            };
        }
        let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel::<Forward>();
        tokio::spawn(async move {
            while let Some(forward) = receiver.recv().await {
                match forward {
                    Forward::Progress(params) => {
                        let _ = peer.notify_progress(params).await;
                    }
                    Forward::Flush(done) => {
                        let _ = done.send(());
                    }
                }
            }
        });
        Self {
            sender: Some(sender),
            token,
        }
    }

    fn report(&self, p: &ToolProgress) {
        let (Some(sender), Some(token)) = (&self.sender, &self.token) else {
            return;
        };
        let mut params = ProgressNotificationParam::new(token.clone(), p.progress);
        if let Some(total) = p.total {
            params = params.with_total(total);
        }
        if let Some(message) = &p.message {
            params = params.with_message(message.clone());
        }
        let _ = sender.send(Forward::Progress(params));
    }

    async fn flush(&self) {
        if let Some(sender) = &self.sender {
            let (done, flushed) = tokio::sync::oneshot::channel();
            if sender.send(Forward::Flush(done)).is_ok() {
                let _ = flushed.await;
            }
        }
    }
}

/// The elicitation request for a question (`mode` form or url).
fn elicitation_of(question: &Question, id: &str) -> Result<ElicitRequestParams, String> {
    let value = match question.url() {
        Some(url) => {
            json!({"mode": "url", "message": question.message(), "url": url, "elicitationId": id})
        }
        None => {
            json!({"mode": "form", "message": question.message(), "requestedSchema": question.requested_schema()})
        }
    };
    serde_json::from_value(value).map_err(|e| {
        format!("the question cannot be asked over MCP (elicitation allows flat forms of strings, numbers, booleans and enums): {e}")
    })
}

/// Asks the client (sessions opened with `initialize`).
async fn elicit(
    peer: &Peer<RoleServer>,
    question: &Question,
    call_id: &str,
    index: usize,
) -> Result<Answer, String> {
    let supported = peer
        .peer_info()
        .is_some_and(|info| info.capabilities.elicitation.is_some());
    if !supported {
        return Err(format!(
            "the tool needs the user's answer to \"{}\", and this MCP client cannot ask (no elicitation capability)",
            question.message()
        ));
    }
    let request = elicitation_of(question, &format!("{call_id}-{index}"))?;
    let result = peer
        .create_elicitation(request)
        .await
        .map_err(|e| format!("asking the user failed: {e}"))?;
    Ok(answer_of(&result))
}

fn answer_of(result: &ElicitResult) -> Answer {
    match (&result.action, &result.content) {
        (rmcp::model::ElicitationAction::Accept, Some(content)) => Answer::accept(content.clone()),
        (rmcp::model::ElicitationAction::Accept, None) => Answer::accept(json!({})),
        _ => Answer::decline(None),
    }
}

/// The 2026-07-28 input request for the next question; its key is the question's position.
fn input_required(question: &Question, index: usize) -> InputRequiredResult {
    let mut requests = InputRequests::new();
    match elicitation_of(question, &format!("q{index}")) {
        Ok(params) => {
            requests.insert(
                format!("q{index:02}"),
                InputRequest::Elicitation(ElicitRequest::new(params)),
            );
        }
        Err(message) => {
            tracing::warn!(target: "llm_tools::mcp", message = message.as_str(), "a question cannot be asked")
        }
    }
    // The state says which question this is; the answers themselves come back keyed.
    InputRequiredResult::new(Some(requests), Some(format!("question-{index}")))
}

/// The answers a 2026-07-28 client sent with the call, in the order of the questions.
fn answers_of(request: &CallToolRequestParams) -> Vec<Answer> {
    let Some(responses) = &request.input_responses else {
        return Vec::new();
    };
    responses
        .values()
        .map(
            |value| match serde_json::from_value::<ElicitResult>(value.clone()) {
                Ok(result) => answer_of(&result),
                Err(_) => Answer::decline(None),
            },
        )
        .collect()
}

fn error_result(message: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![rmcp::model::ContentBlock::text(message.into())])
}

/// What a tool's outcome is on the wire.
fn result_of(outcome: ToolOutcome) -> CallToolResult {
    match outcome {
        ToolOutcome::Output(output) => output_result(output),
        ToolOutcome::Error(error) if error.is_recoverable() => error_result(error.to_string()),
        ToolOutcome::Error(error) => {
            tracing::error!(target: "llm_tools::mcp", error = %error, "a served tool failed");
            error_result(format!("the tool failed: {error}"))
        }
        ToolOutcome::Task(task) => error_result(format!(
            "the tool paused ({}) and cannot finish here",
            task.status_message().unwrap_or("waiting")
        )),
        _ => error_result("the tool gave no result"),
    }
}

fn output_result(output: ToolOutput) -> CallToolResult {
    let text = output.as_text().to_owned();
    let mut content = Vec::new();
    if !text.is_empty() {
        content.push(json!({"type": "text", "text": text}));
    }
    // MCP has no search-result content: each result is a text block.
    for result in output.found() {
        content.push(json!({"type": "text", "text": result.to_text()}));
    }
    for (index, attachment) in output.attachments().iter().enumerate() {
        content.push(attachment_block(attachment, index));
    }
    // `resultType` is required on 2026-07-28; rmcp drops it for older peers.
    let mut result = json!({"resultType": "complete", "content": content});
    // A JSON object result is also the call's structured content.
    if let Ok(Value::Object(object)) = serde_json::from_str::<Value>(&text) {
        result["structuredContent"] = Value::Object(object);
    }
    serde_json::from_value(result)
        .unwrap_or_else(|e| error_result(format!("the result cannot be sent: {e}")))
}

fn attachment_block(attachment: &Attachment, index: usize) -> Value {
    let media_type = attachment.media_type();
    let name = attachment
        .filename()
        .map_or_else(|| format!("attachment-{index}"), str::to_owned);
    match attachment.source() {
        Source::Url(url) => {
            json!({"type": "resource_link", "uri": url, "name": name, "mimeType": media_type})
        }
        _ => {
            let data = attachment.base64().unwrap_or_default();
            if media_type.starts_with("image/") {
                json!({"type": "image", "data": data, "mimeType": media_type})
            } else if media_type.starts_with("audio/") {
                json!({"type": "audio", "data": data, "mimeType": media_type})
            } else if attachment.is_text() {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(&data)
                    .unwrap_or_default();
                json!({"type": "resource", "resource": {"uri": format!("attachment://{name}"), "mimeType": media_type, "text": String::from_utf8_lossy(&bytes)}})
            } else {
                json!({"type": "resource", "resource": {"uri": format!("attachment://{name}"), "mimeType": media_type, "blob": data}})
            }
        }
    }
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
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.poll(&request.task_id).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.cancel(&request.task_id).await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.update(&request.task_id, &request.input_responses)
            .await
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn task_timestamps_are_rfc3339_in_utc() {
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::rfc3339(1_796_407_509), "2026-12-04T18:05:09Z");
        assert_eq!(super::rfc3339(951_868_799), "2000-02-29T23:59:59Z");
    }
}
