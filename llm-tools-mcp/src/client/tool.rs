//! [`McpTool`]: one tool of a server as a chat [`Tool`]; a call is one `tools/call` request
//! (sent again with the user's answers when a 2026-07-28 server asks for input), a task the
//! server runs is polled and cancelled with `tasks/*`. A tool reaches its client through
//! [`ToolClient`], which the client implements.

use std::sync::{Arc, Weak};
use std::time::Duration;

use llm_tools_core::{
    BoxFuture, Namespace, RawArgs, Task, Tool, ToolContext, ToolOutcome, ToolSpec,
};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelTaskParams,
    CancelledNotificationParam, ClientRequest, GetTaskParams, InputRequest, InputRequests,
    InputResponses, JsonObject, ProgressToken, RequestId, ServerResult, TaskPayload,
    UpdateTaskParams,
};
use rmcp::service::PeerRequestOptions;
use rmcp::{Peer, RoleClient};

use super::content::{self, AttachmentLimits};
use super::http;
use super::session::{Events, Running, Session};
use crate::elicitation;
use crate::error::{self, McpError};
use crate::json_len::json_len;

/// What a tool needs of the client that listed it: its current session, its listing, and
/// reconnecting when the session ended. The client implements it; a tool holds it weakly.
pub(crate) trait ToolClient: Send + Sync {
    /// The current session.
    fn session(&self) -> Arc<Session>;

    /// Whether the current listing offers the server's tool `remote`.
    fn offers(&self, remote: &str) -> Offer;

    /// Whether a call on an ended session reconnects by itself.
    fn reconnects_automatically(&self) -> bool;

    /// A session to call on: the current one when open; when it ended, a new one if the
    /// policy reconnects by itself. The error is text for the model.
    fn live_session(&self) -> BoxFuture<'_, Result<Arc<Session>, String>>;

    /// Reconnects a session that ended, as the policy says; calls that come while it runs
    /// wait and share its outcome. Nothing to do when another caller replaced `seen` already.
    fn reconnect_after<'a>(&'a self, seen: &'a Arc<Session>)
    -> BoxFuture<'a, Result<(), McpError>>;
}

/// Whether a listing offers a tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Offer {
    Offered,
    /// The server lists it, changed, and the change waits for the application or was refused
    /// (drift).
    Withheld,
    /// The server does not list it.
    Gone,
}

/// A tool of an MCP server. Its schema is the server's `inputSchema`, unchanged. It calls
/// through its client's current session, so a reconnect keeps it valid.
pub(crate) struct McpTool {
    spec: ToolSpec,
    /// The server's name for it (the chat's may differ, see `names`).
    remote_name: Arc<str>,
    /// The name given to the server.
    server: Arc<str>,
    /// What one result keeps of attachments.
    attachments: AttachmentLimits,
    /// Weak: a chat holding the tool does not keep the session open once the last client
    /// handle is gone.
    client: Weak<dyn ToolClient>,
}

/// The longest name a server's tool may have: 128 bytes (the MCP specification's limit). A
/// tool with a longer name is left out of the listing, with a warning.
pub const MAX_REMOTE_TOOL_NAME_BYTES: usize = 128;

/// The longest description of a server's tool the model is sent: 8 KiB; a longer one is cut,
/// and says how much was cut. It is sent with every request.
pub const MAX_TOOL_DESCRIPTION_BYTES: usize = 8 * 1024;

/// The largest input schema of a server's tool, written as compact JSON: 64 KiB. The schema is
/// sent to the model with every request, so a larger one (its property descriptions, enums and
/// examples included) would be paid for at every turn; such a tool is left out of the listing,
/// with a warning.
pub const MAX_TOOL_SCHEMA_BYTES: usize = 64 * 1024;

impl McpTool {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        tool: rmcp::model::Tool,
        local_name: String,
        namespace: Namespace,
        defer: bool,
        needs_approval: bool,
        max_run_time: Option<Duration>,
        attachments: AttachmentLimits,
        server: Arc<str>,
        client: Weak<dyn ToolClient>,
    ) -> Result<Self, String> {
        if tool.name.len() > MAX_REMOTE_TOOL_NAME_BYTES {
            return Err(format!(
                "its name is {} bytes long, past the {MAX_REMOTE_TOOL_NAME_BYTES} a tool name \
                 may have",
                tool.name.len()
            ));
        }
        if json_len(&tool.input_schema, MAX_TOOL_SCHEMA_BYTES).is_none() {
            return Err(format!(
                "its input schema is more than {MAX_TOOL_SCHEMA_BYTES} bytes long as JSON, past \
                 what a tool's schema may be (it is sent to the model with every request)"
            ));
        }
        let description = tool
            .description
            .as_deref()
            .filter(|d| !d.trim().is_empty())
            .or(tool.title.as_deref())
            .or_else(|| tool.annotations.as_ref().and_then(|a| a.title.as_deref()))
            .unwrap_or(tool.name.as_ref());
        // Sent to the model with every request: a server's long text is cut.
        let description = error::cut(description, MAX_TOOL_DESCRIPTION_BYTES).into_owned();
        let mut schema = serde_json::Value::Object((*tool.input_schema).clone());
        // `type` is required by MCP; a server that leaves it out means an object.
        if let Some(object) = schema.as_object_mut() {
            object
                .entry("type")
                .or_insert_with(|| serde_json::Value::String("object".into()));
        }
        let spec = ToolSpec::new(local_name, description)
            .with_parameters(schema)
            .with_namespace(Some(namespace))
            .with_defer(defer)
            .with_needs_approval(needs_approval)
            .with_max_run_time(max_run_time);
        spec.validate()
            .map_err(|e| format!("tool `{}`: {e}", tool.name))?;
        Ok(Self {
            spec,
            remote_name: Arc::from(tool.name.as_ref()),
            server,
            attachments,
            client,
        })
    }

    /// The client and a session to call the tool on (see [`ToolClient::live_session`]), or
    /// the error result the model reads: the tool must be offered.
    async fn session(&self) -> Result<(Arc<dyn ToolClient>, Arc<Session>), ToolOutcome> {
        let (client, session) = self.any_session().await?;
        match self.unoffered_by(client.as_ref()) {
            Some(unoffered) => Err(unoffered),
            None => Ok((client, session)),
        }
    }

    /// The error result the model reads when `client`'s listing does not offer the tool.
    fn unoffered_by(&self, client: &dyn ToolClient) -> Option<ToolOutcome> {
        match client.offers(&self.remote_name) {
            Offer::Offered => None,
            Offer::Withheld => Some(ToolOutcome::error(format!(
                "the MCP server `{}` changed the tool `{}`, and the change waits for the \
                 application's decision (tool drift): it cannot be called meanwhile",
                self.server, self.remote_name
            ))),
            Offer::Gone => Some(self.gone()),
        }
    }

    /// The client and a session, whether the tool is offered or not: a task the server runs
    /// for an earlier call is polled and cancelled through the session alone.
    async fn any_session(&self) -> Result<(Arc<dyn ToolClient>, Arc<Session>), ToolOutcome> {
        let Some(client) = self.client.upgrade() else {
            return Err(ToolOutcome::error(format!(
                "the session with the MCP server `{}` was closed",
                self.server
            )));
        };
        let session = client.live_session().await.map_err(ToolOutcome::error)?;
        Ok((client, session))
    }

    /// The result of a call of a tool the server no longer offers.
    fn gone(&self) -> ToolOutcome {
        ToolOutcome::error(format!(
            "the MCP server `{}` no longer offers the tool `{}` (it left the server's tool list, \
             after a reconnect or a change the server announced)",
            self.server, self.remote_name
        ))
    }

    async fn call_remote(&self, args: RawArgs<'_>, ctx: ToolContext) -> ToolOutcome {
        let arguments = match parse_arguments(args.as_str()) {
            Ok(arguments) => arguments,
            Err(message) => return ToolOutcome::error(message),
        };
        let mut params = CallToolRequestParams::new(self.remote_name.to_string());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let (client, mut session) = match self.session().await {
            Ok(found) => found,
            Err(outcome) => return outcome,
        };
        let running = Arc::new(Running {
            ctx,
            paused: tokio::sync::Notify::new(),
        });
        let mut sent_again = false;
        #[cfg(feature = "auth")]
        let mut stepped_up = false;
        // The chat's answers sent with this call's input responses, for a task it becomes.
        let mut answers_taken = 0usize;
        // Each round is one `tools/call`; a 2026-07-28 server that needs the user's input
        // answers with its questions, and the call is sent again with the answers.
        for _ in 0..MAX_INPUT_ROUNDS {
            let response = match self.send(&session, params.clone(), &running).await {
                Sent::Paused => return ToolOutcome::error(WAITING_FOR_ANSWER),
                // The session ended before the request left: on a new session it is sent
                // once more, as it never reached the server.
                Sent::Unsent(_)
                    if !sent_again && client.reconnects_automatically() && !session.is_open() =>
                {
                    sent_again = true;
                    if let Err(error) = client.reconnect_after(&session).await {
                        return ToolOutcome::error(format!(
                            "the connection to the MCP server `{}` has ended and reconnecting \
                             failed: {error}; try again later",
                            self.server
                        ));
                    }
                    session = client.session();
                    if let Some(unoffered) = self.unoffered_by(client.as_ref()) {
                        return unoffered;
                    }
                    continue;
                }
                Sent::Unsent(error) | Sent::Failed(error) => {
                    // Refused for want of authorization or of a scope: the user authorizes
                    // (the wider scopes) once, and the call is sent again on a session with
                    // the new token.
                    #[cfg(feature = "auth")]
                    if !stepped_up
                        && let Some(auth) = &session.auth
                        && let Some(recovered) = auth.recover(&self.server, &error).await
                    {
                        stepped_up = true;
                        if let Err(error) = recovered {
                            return ToolOutcome::error(error.to_string());
                        }
                        if let Err(error) = client.reconnect_after(&session).await {
                            return ToolOutcome::error(error.to_string());
                        }
                        session = client.session();
                        continue;
                    }
                    return self.failed(client.as_ref(), &session, &error).await;
                }
                Sent::Answered(response) => {
                    #[cfg(feature = "auth")]
                    if let Some(auth) = &session.auth {
                        auth.answered();
                    }
                    response
                }
            };
            match *response {
                ServerResult::CallToolResult(result) => {
                    return content::outcome(result, &self.server, self.attachments);
                }
                ServerResult::EmptyResult(_) => return ToolOutcome::Output(Default::default()),
                ServerResult::InputRequiredResult(asked) => {
                    match self
                        .answers(asked.input_requests.unwrap_or_default(), &running)
                        .await
                    {
                        Ok(Some((responses, taken))) => {
                            answers_taken += taken;
                            params.input_responses = Some(responses);
                            params.request_state = asked.request_state;
                        }
                        // The chat has no answer yet: it pauses the call on the question.
                        Ok(None) => return ToolOutcome::error(WAITING_FOR_ANSWER),
                        Err(message) => return ToolOutcome::error(message),
                    }
                }
                // The server runs the call as a task (the 2026-07-28 tasks extension): the call
                // pauses, and the chat's `complete` polls it through `resume`.
                ServerResult::CreateTaskResult(created) => {
                    return task_outcome(&self.server, &created.task, answers_taken);
                }
                _ => {
                    return ToolOutcome::error(format!(
                        "the MCP server `{}` answered `tools/call` with another kind of result",
                        self.server
                    ));
                }
            }
        }
        ToolOutcome::error(format!(
            "the MCP server `{}` asked for input {MAX_INPUT_ROUNDS} times without finishing `{}`",
            self.server, self.remote_name
        ))
    }

    /// Sends one `tools/call` and waits for its answer, or until the call pauses on a question.
    async fn send(
        &self,
        session: &Session,
        params: CallToolRequestParams,
        running: &Arc<Running>,
    ) -> Sent {
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        // Noted as on its way until it is tracked by its token (or dropped unsent).
        let _sending = Sending::new(&session.events, running);
        let handle = match session
            .peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
        {
            Ok(handle) => handle,
            Err(error) => return Sent::Unsent(error),
        };
        let mut in_flight = InFlight {
            events: Arc::clone(&session.events),
            peer: session.peer.clone(),
            token: handle.progress_token.clone(),
            id: Some(handle.id.clone()),
        };
        session
            .events
            .track(handle.progress_token.clone(), Arc::clone(running));
        tokio::select! {
            // A pause wins over an answer that came with it: the question was noted (and the
            // server told `cancel`) before the server could answer, so an answer that is here
            // already is the one made without the user's input, which the call must not keep.
            biased;
            // `in_flight` is dropped armed: the server is told the call is cancelled.
            () = running.paused.notified() => Sent::Paused,
            response = handle.await_response() => {
                in_flight.finished();
                match response {
                    Ok(response) => Sent::Answered(Box::new(response)),
                    Err(error) => Sent::Failed(error),
                }
            }
        }
    }

    /// The answers to a server's input requests, from the chat's answers to this call's
    /// questions, and how many of the chat's answers they took; `None` when one has no answer
    /// yet (the call pauses on it).
    async fn answers(
        &self,
        requests: InputRequests,
        running: &Running,
    ) -> Result<Option<(InputResponses, usize)>, String> {
        if requests.len() > MAX_INPUT_REQUESTS {
            return Err(format!(
                "the MCP server `{}` asked for {} inputs at once, more than the \
                 {MAX_INPUT_REQUESTS} this client answers",
                self.server,
                requests.len()
            ));
        }
        let mut responses = InputResponses::new();
        let mut taken = 0;
        for (key, request) in requests {
            let InputRequest::Elicitation(request) = request else {
                return Err(format!(
                    "the MCP server `{}` asked for input this client does not give (only \
                     elicitation is supported)",
                    self.server
                ));
            };
            let result = match elicitation::question_of(&request.params) {
                Ok(question) => {
                    let Ok(answer) = running.ctx.ask(question).await else {
                        return Ok(None);
                    };
                    taken += 1;
                    elicitation::result_of(&answer)
                }
                Err(
                    unasked @ (elicitation::Unasked::UnsafeUrl(_)
                    | elicitation::Unasked::TooManyFields(_)
                    | elicitation::Unasked::FormTooLarge),
                ) => {
                    unasked.log(&self.server);
                    elicitation::declined()
                }
                Err(elicitation::Unasked::UnknownMode) => {
                    return Err(format!(
                        "the MCP server `{}` asked for input in a form this client does not know",
                        self.server
                    ));
                }
            };
            let result = serde_json::to_value(result)
                .map_err(|e| format!("the answer cannot be sent: {e}"))?;
            responses.insert(key, result);
        }
        Ok(Some((responses, taken)))
    }

    /// A request that failed: the model reads why, the chat goes on. When the session ended
    /// with it, whether the call ran is unknown: the model is told, and a client that
    /// reconnects by itself does so now, for the next call.
    async fn failed(
        &self,
        client: &dyn ToolClient,
        session: &Arc<Session>,
        error: &rmcp::ServiceError,
    ) -> ToolOutcome {
        if !session.is_open() {
            let next = if client.reconnects_automatically() {
                match client.reconnect_after(session).await {
                    Ok(()) => "the client reconnected; call the tool again if running it twice \
                               is safe"
                        .to_owned(),
                    Err(error) => format!("reconnecting failed: {error}; try again later"),
                }
            } else {
                "the application can reconnect it".to_owned()
            };
            tracing::warn!(
                target: "llm_tools::mcp",
                server = &*self.server,
                tool = &*self.remote_name,
                "the connection ended during tools/call"
            );
            return ToolOutcome::error(format!(
                "the connection to the MCP server `{}` ended during the call of `{}`, so \
                 whether it ran is unknown; {next}",
                self.server, self.remote_name
            ));
        }
        self.failed_request(error)
    }

    /// A request that failed on an open session.
    fn failed_request(&self, error: &rmcp::ServiceError) -> ToolOutcome {
        if let rmcp::ServiceError::TransportSend(transport) = error
            && let Some(refused) = http::refused_redirect(transport)
        {
            return ToolOutcome::error(format!(
                "the MCP server `{}` could not run `{}`: it redirected the call from {} to \
                 another origin, {}, which was not followed",
                self.server, self.remote_name, refused.from, refused.to
            ));
        }
        let reason = error::describe_request(error);
        tracing::warn!(
            target: "llm_tools::mcp",
            server = &*self.server,
            tool = &*self.remote_name,
            reason = reason.as_str(),
            "tools/call failed"
        );
        ToolOutcome::error(format!(
            "the MCP server `{}` could not run `{}`: {reason}",
            self.server, self.remote_name
        ))
    }
}

/// The key of a paused call's task data that holds the server's task id: the id is all a
/// later `resume` or `cancel` needs, so a paused call survives a restart of this process where
/// the server keeps the task.
pub(crate) const TASK_ID: &str = "mcp_task_id";

/// The key of a paused call's task data that counts the polls in a row that did not reach the
/// server ([`McpTool::poll_failed`]).
const POLL_FAILURES: &str = "mcp_poll_failures";

/// How many polls of a task in a row may fail to reach the server (a broken connection, an
/// ended session, no answer in time) before the call ends with an error: 5. Each waits the
/// task's poll interval; one that reaches the server starts the count again. The server's own
/// refusal (a JSON-RPC error: no such task) ends the call at once.
const MAX_POLL_FAILURES: u64 = 5;

/// The shortest and longest poll interval a server's task may ask for: 0 would have a
/// durable worker poll (and write its store) without pause, `u64::MAX` would never poll again.
const POLL_INTERVALS: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(3600));

/// The longest task id a server may give: 256 bytes. The id is kept in the chat's state (and
/// store) and sent back at every poll; a longer one fails the call.
const MAX_TASK_ID_BYTES: usize = 256;

/// The key of a paused call's task data that counts the chat's answers the server's task was
/// sent (the call's, in order): a later poll's input requests are the task's next questions,
/// which take the answers after them.
pub(crate) const ANSWERS_SENT: &str = "mcp_answers_sent";

/// The call paused on the server's task ([`paused_on`]), `answers_sent` of the chat's answers
/// sent to it, or failed when the task's id is past [`MAX_TASK_ID_BYTES`].
fn task_outcome(server: &str, task: &rmcp::model::Task, answers_sent: usize) -> ToolOutcome {
    if task.task_id.len() > MAX_TASK_ID_BYTES {
        return ToolOutcome::error(format!(
            "the MCP server `{server}` ran the call as a task with an id of {} bytes, past this \
             client's limit of {MAX_TASK_ID_BYTES}",
            task.task_id.len()
        ));
    }
    let paused = paused_on(task, None);
    ToolOutcome::Task(if answers_sent > 0 {
        paused.with_data(ANSWERS_SENT, serde_json::Value::from(answers_sent))
    } else {
        paused
    })
}

/// The chat's task for a server's task: working (or waiting for the user), its message and
/// poll interval (within [`POLL_INTERVALS`]), and its id in the data.
fn paused_on(task: &rmcp::model::Task, message: Option<&str>) -> Task {
    let message = message
        .or(task.status_message.as_deref())
        .unwrap_or("the MCP server runs the call as a task");
    let message = error::cut(message, error::MAX_SERVER_TEXT);
    let mut paused =
        Task::working(message).with_data(TASK_ID, serde_json::Value::String(task.task_id.clone()));
    if let Some(ms) = task.poll_interval_ms {
        let (shortest, longest) = POLL_INTERVALS;
        paused = paused.with_poll_interval(Duration::from_millis(ms).clamp(shortest, longest));
    }
    paused
}

impl McpTool {
    /// Polls the server's task behind a paused call (`tasks/get`): still working, the call
    /// stays paused; input required, the user's answers go to the task (`tasks/update`);
    /// completed, its result is the call's; failed or cancelled, an error result.
    async fn poll_task(&self, task: Task, ctx: ToolContext) -> ToolOutcome {
        let Some(id) = task.get(TASK_ID).and_then(serde_json::Value::as_str) else {
            return ToolOutcome::error(format!(
                "the paused call of `{}` has no MCP task id to poll",
                self.remote_name
            ));
        };
        let (_client, session) = match self.any_session().await {
            Ok(found) => found,
            Err(outcome) => return self.poll_failed(task, outcome).await,
        };
        let found = match session.peer.get_task(GetTaskParams::new(id)).await {
            Ok(found) => found,
            Err(error) => return self.poll_request_failed(task, &error).await,
        };
        let detailed = found.task;
        // The answers sent on earlier polls (and before the task began) answered questions
        // the task has moved past: its questions now take the answers after them.
        let sent = task
            .get(ANSWERS_SENT)
            .and_then(serde_json::Value::as_u64)
            .map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX));
        match detailed.payload {
            TaskPayload::Working => task_outcome(&self.server, &detailed.task, sent),
            TaskPayload::InputRequired { input_requests } => {
                ctx.skip_answers(sent);
                let running = Running {
                    ctx,
                    paused: tokio::sync::Notify::new(),
                };
                match self.answers(input_requests, &running).await {
                    Ok(Some((responses, taken))) => {
                        let update = UpdateTaskParams::new(id, responses);
                        match session.peer.update_task(update).await {
                            Ok(()) => task_outcome(
                                &self.server,
                                &detailed.task,
                                sent.saturating_add(taken),
                            ),
                            // Not reaching the server, the answers go again with the next poll.
                            Err(error) => self.poll_request_failed(task, &error).await,
                        }
                    }
                    Ok(None) => ToolOutcome::error(WAITING_FOR_ANSWER),
                    // The call ends: the task it leaves behind is cancelled.
                    Err(message) => {
                        self.cancel_task(task).await;
                        ToolOutcome::error(message)
                    }
                }
            }
            TaskPayload::Completed { result } => {
                match serde_json::from_value::<CallToolResult>(serde_json::Value::Object(result)) {
                    Ok(result) => content::outcome(result, &self.server, self.attachments),
                    Err(e) => ToolOutcome::error(format!(
                        "the MCP server `{}` finished the task of `{}` with a result this client cannot read: {e}",
                        self.server, self.remote_name
                    )),
                }
            }
            TaskPayload::Failed { error } => ToolOutcome::error(format!(
                "the MCP server `{}` could not run `{}`: {}",
                self.server,
                self.remote_name,
                error::cut(
                    error
                        .get("message")
                        .and_then(serde_json::Value::as_str)
                        .unwrap_or("the task failed"),
                    error::MAX_SERVER_TEXT
                )
            )),
            TaskPayload::Cancelled => ToolOutcome::error(format!(
                "the MCP server `{}` cancelled the task of `{}`",
                self.server, self.remote_name
            )),
            _ => ToolOutcome::error(format!(
                "the MCP server `{}` reported the task of `{}` in a state this client does not know",
                self.server, self.remote_name
            )),
        }
    }

    /// A request of a poll that failed: the server's own refusal (a JSON-RPC error) ends the
    /// call; no answer reaching this client is [`poll_failed`](Self::poll_failed).
    async fn poll_request_failed(&self, task: Task, error: &rmcp::ServiceError) -> ToolOutcome {
        let failed = self.failed_request(error);
        if matches!(error, rmcp::ServiceError::McpError(_)) {
            return failed;
        }
        self.poll_failed(task, failed).await
    }

    /// A poll that did not reach the server or got no answer (the connection broke, the
    /// session ended, no answer in time): the call keeps waiting on the task, the failure
    /// counted in its data, until [`MAX_POLL_FAILURES`] in a row end it with `failed`'s error
    /// (and the server is asked to cancel the task, as far as it can be reached).
    async fn poll_failed(&self, task: Task, failed: ToolOutcome) -> ToolOutcome {
        let failures = task
            .get(POLL_FAILURES)
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0)
            .saturating_add(1);
        if failures >= MAX_POLL_FAILURES {
            tracing::warn!(
                target: "llm_tools::mcp",
                server = &*self.server,
                tool = &*self.remote_name,
                failures,
                "the task could not be polled; the call ends"
            );
            self.cancel_task(task).await;
            return match failed {
                ToolOutcome::Error(error) => ToolOutcome::error(format!(
                    "{error} ({failures} polls of the task in a row failed; the call gave it up)"
                )),
                other => other,
            };
        }
        tracing::debug!(
            target: "llm_tools::mcp",
            server = &*self.server,
            tool = &*self.remote_name,
            failures,
            "the task could not be polled; the call keeps waiting"
        );
        ToolOutcome::Task(task.with_data(POLL_FAILURES, serde_json::Value::from(failures)))
    }

    /// Cancels the server's task behind a paused call (`tasks/cancel`).
    async fn cancel_task(&self, task: Task) {
        let Some(id) = task.get(TASK_ID).and_then(serde_json::Value::as_str) else {
            return;
        };
        let Ok((_client, session)) = self.any_session().await else {
            return;
        };
        if let Err(error) = session.peer.cancel_task(CancelTaskParams::new(id)).await {
            tracing::debug!(target: "llm_tools::mcp", server = &*self.server, error = error::describe_request(&error).as_str(), "could not cancel the task");
        }
    }
}

/// How many times a call may come back asking for input before the client gives up.
const MAX_INPUT_ROUNDS: usize = 16;

/// The most input requests one answer of a server may hold (the questions of a call or a
/// task at once): 16, as many as this crate's server lets a call ask. An answer with more ends
/// the call with an error naming the bound (a task's is cancelled), before any is asked or
/// declined.
const MAX_INPUT_REQUESTS: usize = 16;

/// The call's result while it waits for the user (the chat pauses it on its question and does
/// not show this to the model).
const WAITING_FOR_ANSWER: &str = "the call is waiting for the user's answer";

enum Sent {
    Answered(Box<ServerResult>),
    /// The request did not leave: nothing reached the server.
    Unsent(rmcp::ServiceError),
    /// The request left, and its answer did not come.
    Failed(rmcp::ServiceError),
    Paused,
}

/// The model's arguments as the JSON object MCP sends: empty text means none.
fn parse_arguments(text: &str) -> Result<Option<JsonObject>, String> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    if let Some(count) = llm_tools_core::json_values::too_many_values(text) {
        return Err(format!(
            "the arguments hold about {count} JSON values, more than the {} a call may send; \
             send fewer",
            llm_tools_core::json_values::MAX_JSON_VALUES
        ));
    }
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(object)) => Ok(Some(object)),
        Ok(serde_json::Value::Null) => Ok(None),
        Ok(_) => Err("the arguments must be a JSON object".to_owned()),
        Err(e) => Err(format!("the arguments are not valid JSON: {e}")),
    }
}

/// A call on its way to the server, before its progress token is known: noted in the
/// session's events so a question the server asks at once finds it; forgotten when dropped
/// (tracking the call by its token has taken it over by then, or it was never sent).
struct Sending<'a> {
    events: &'a Events,
    running: &'a Arc<Running>,
}

impl<'a> Sending<'a> {
    fn new(events: &'a Events, running: &'a Arc<Running>) -> Self {
        events.sending(running);
        Self { events, running }
    }
}

impl Drop for Sending<'_> {
    fn drop(&mut self) {
        self.events.not_sent(self.running);
    }
}

/// A `tools/call` on the wire. Dropped before it finished (the chat's `max_run_time` passed,
/// or the chat was cancelled), it tells the server with `notifications/cancelled`; either way
/// the call stops receiving progress.
struct InFlight {
    events: Arc<Events>,
    peer: Peer<RoleClient>,
    token: ProgressToken,
    /// Set while the server still owes the answer.
    id: Option<RequestId>,
}

impl InFlight {
    fn finished(&mut self) {
        self.id = None;
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.events.untrack(&self.token);
        let Some(id) = self.id.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        let server = Arc::clone(&self.events.server);
        runtime.spawn(async move {
            let params = CancelledNotificationParam::new(
                Some(id),
                Some("the chat stopped waiting for the call".to_owned()),
            );
            if let Err(error) = peer.notify_cancelled(params).await {
                tracing::debug!(target: "llm_tools::mcp", server = &*server, error = error::describe_request(&error).as_str(), "could not send notifications/cancelled");
            }
        });
    }
}

impl Tool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call<'a>(&'a self, args: RawArgs<'a>, ctx: ToolContext) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(self.call_remote(args, ctx))
    }

    fn resume<'a>(
        &'a self,
        task: Task,
        _args: RawArgs<'a>,
        ctx: ToolContext,
    ) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(self.poll_task(task, ctx))
    }

    fn cancel<'a>(
        &'a self,
        task: Task,
        _args: RawArgs<'a>,
        _ctx: ToolContext,
    ) -> BoxFuture<'a, ()> {
        Box::pin(self.cancel_task(task))
    }

    fn type_name(&self) -> &'static str {
        "llm_tools_mcp::McpTool"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server's task cannot have the client poll without pause, or never again, and its
    /// status reaches the chat cut to a bounded length.
    #[test]
    fn a_tasks_poll_interval_and_status_are_bounded() {
        let task = |interval: u64, status: &str| -> rmcp::model::Task {
            serde_json::from_value(serde_json::json!({
                "taskId": "t", "status": "working", "statusMessage": status,
                "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z",
                "ttlMs": null, "pollIntervalMs": interval
            }))
            .unwrap()
        };
        let (shortest, longest) = POLL_INTERVALS;
        assert_eq!(
            paused_on(&task(0, "w"), None).poll_interval(),
            Some(shortest)
        );
        assert_eq!(
            paused_on(&task(u64::MAX, "w"), None).poll_interval(),
            Some(longest)
        );
        assert_eq!(
            paused_on(&task(5_000, "w"), None).poll_interval(),
            Some(Duration::from_secs(5))
        );
        let long = "é".repeat(100_000);
        let paused = paused_on(&task(5_000, &long), None);
        let status = paused.status_message().unwrap();
        assert!(status.len() < 9 * 1024, "{}", status.len());
        assert!(status.ends_with("bytes cut]"));
    }

    #[test]
    fn a_task_id_past_its_limit_fails_the_call() {
        let task = |id: &str| -> rmcp::model::Task {
            serde_json::from_value(serde_json::json!({
                "taskId": id, "status": "working",
                "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z",
                "ttlMs": null
            }))
            .unwrap()
        };
        assert!(matches!(
            task_outcome("s", &task(&"t".repeat(MAX_TASK_ID_BYTES)), 0),
            ToolOutcome::Task(_)
        ));
        match task_outcome("s", &task(&"t".repeat(MAX_TASK_ID_BYTES + 1)), 0) {
            ToolOutcome::Error(e) => assert!(e.to_string().contains("257 bytes"), "{e}"),
            _ => panic!("a long task id paused the call"),
        }
    }

    #[test]
    fn arguments_are_an_object_or_nothing() {
        assert_eq!(parse_arguments("").unwrap(), None);
        assert_eq!(parse_arguments("null").unwrap(), None);
        assert_eq!(parse_arguments(r#"{"a":1}"#).unwrap().unwrap()["a"], 1);
        assert!(parse_arguments("[1]").unwrap_err().contains("JSON object"));
        assert!(parse_arguments("{").unwrap_err().contains("not valid JSON"));
    }
}
