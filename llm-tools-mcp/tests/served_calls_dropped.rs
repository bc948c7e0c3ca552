//! A served call whose tool returned a working task, carried on by the server for a client
//! that does not run MCP tasks: however the call ends, the task's work is stopped through the
//! tool's `cancel`. A client that hangs up mid-call has its request cancelled (rmcp cancels
//! the request's token when the connection closes); a call whose future is dropped outright,
//! with no cancel (here an application's handler that serves the `ToolServer`'s tools and
//! gives up on a call), has its task cancelled all the same, while it polls the task and
//! while the task waits for the user's answer. Each test is a real rmcp session on an
//! in-memory connection, written to as a client writes JSON-RPC lines.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use llm_tools_core::{Question, Task, ToolContext, ToolError, ToolOutcome, tool};
use llm_tools_mcp::ToolServer;
use llm_tools_mcp::rmcp::model::{
    CallToolRequestParams, CallToolResponse, ListToolsResult, PaginatedRequestParams, ServerConfig,
};
use llm_tools_mcp::rmcp::service::RequestContext;
use llm_tools_mcp::rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt as _};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, DuplexStream};
use tokio::sync::Notify;

/// How long a test waits for what must happen before it fails (a passing run never comes near).
const PATIENCE: Duration = Duration::from_secs(30);

/// Fails the test instead of hanging it when `future` never ends.
async fn or_fail<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(PATIENCE, future)
        .await
        .unwrap_or_else(|_| panic!("{what}"))
}

/// A job that never finishes: says when it started, and counts the runs of its `cancel`.
#[derive(Default)]
struct Endless {
    started: Notify,
    cancelled: Notify,
    cancels: AtomicU32,
}

#[tool]
impl Endless {
    /// Runs a job that never finishes
    async fn execute(&self) -> Task {
        self.started.notify_one();
        Task::working("running").with_poll_interval(Duration::from_millis(10))
    }

    async fn resume(&self, task: Task) -> ToolOutcome {
        ToolOutcome::Task(task)
    }

    async fn cancel(&self, _task: Task) {
        self.cancels.fetch_add(1, Ordering::Relaxed);
        self.cancelled.notify_one();
    }
}

/// A job that asks its user whether to go on at its first check, and counts the runs of its
/// `cancel`.
#[derive(Default)]
struct Asking {
    cancelled: Notify,
    cancels: AtomicU32,
}

#[tool]
impl Asking {
    /// Runs a job that asks before it goes on
    async fn execute(&self) -> Task {
        Task::working("running").with_poll_interval(Duration::from_millis(10))
    }

    async fn resume(&self, _task: Task, ctx: &ToolContext) -> Result<String, ToolError> {
        let question = Question::new("Go on?").required_field("go", json!({"type": "boolean"}));
        ctx.ask(question).await?;
        Ok("done".to_owned())
    }

    async fn cancel(&self, _task: Task) {
        self.cancels.fetch_add(1, Ordering::Relaxed);
        self.cancelled.notify_one();
    }
}

/// An application's MCP server that serves a `ToolServer`'s tools as its own, and gives up on
/// the calls running when told (its shutdown, say): their futures are dropped, with no cancel.
struct GivesUp {
    tools: ToolServer,
    give_up: Arc<Notify>,
}

impl ServerHandler for GivesUp {
    fn get_info(&self) -> ServerConfig {
        self.tools.get_info()
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.tools.list_tools(request, context).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        tokio::select! {
            response = self.tools.call_tool(request, context) => response,
            () = self.give_up.notified() => {
                Err(ErrorData::internal_error("the server gave up on the call", None))
            }
        }
    }
}

/// A client writing JSON-RPC lines to one connection (as stdio), with a 2025 session open.
struct Client {
    write: tokio::io::WriteHalf<DuplexStream>,
    read: BufReader<tokio::io::ReadHalf<DuplexStream>>,
}

impl Client {
    /// Opens a session on `theirs`'s server, declaring `capabilities`.
    async fn initialized(ours: DuplexStream, capabilities: Value) -> Self {
        let (read, write) = tokio::io::split(ours);
        let mut client = Self {
            write,
            read: BufReader::new(read),
        };
        client
            .send(
                json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": capabilities,
                "clientInfo": {"name": "raw", "version": "1"}}}),
            )
            .await;
        client.message(|m| m["id"] == json!(1)).await;
        client
            .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        client
    }

    async fn send(&mut self, message: Value) {
        let line = format!("{message}\n");
        self.write.write_all(line.as_bytes()).await.unwrap();
    }

    /// Sends a `tools/call` of `tool` as request `id`.
    async fn call(&mut self, id: u64, tool: &str) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": {}}}))
            .await;
    }

    /// The next message from the server that `wanted` picks (the others are skipped).
    async fn message(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
        let read = async {
            loop {
                let mut line = String::new();
                assert!(
                    self.read.read_line(&mut line).await.unwrap() > 0,
                    "the server closed the connection"
                );
                let message: Value = serde_json::from_str(&line).unwrap();
                if wanted(&message) {
                    return message;
                }
            }
        };
        or_fail("the server never sent the message awaited", read).await
    }
}

/// Serves `tools` behind [`GivesUp`] on an in-memory connection; the client's end, and what
/// makes the server give up on its calls.
fn serve_giving_up(tools: ToolServer) -> (DuplexStream, Arc<Notify>) {
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let give_up = Arc::new(Notify::new());
    let server = GivesUp {
        tools,
        give_up: Arc::clone(&give_up),
    };
    tokio::spawn(async move {
        let (read, write) = tokio::io::split(theirs);
        if let Ok(running) = server.serve((read, write)).await {
            let _ = running.waiting().await;
        }
    });
    (ours, give_up)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_dropped_while_the_server_polls_its_task_stops_the_tools_work() {
    let endless = Arc::new(Endless::default());
    let tools = ToolServer::new("jobs")
        .with_tools(Arc::clone(&endless))
        .unwrap();
    let (connection, give_up) = serve_giving_up(tools);
    let mut client = Client::initialized(connection, json!({})).await;
    client.call(2, "endless").await;
    or_fail("the tool never started", endless.started.notified()).await;

    // The server drops the call's future: no cancel reaches the call.
    give_up.notify_one();
    let answer = client.message(|m| m["id"] == json!(2)).await;
    assert!(answer.get("error").is_some(), "{answer}");
    or_fail(
        "the dropped call's task was never cancelled: its work goes on",
        endless.cancelled.notified(),
    )
    .await;
    assert_eq!(endless.cancels.load(Ordering::Relaxed), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_dropped_while_its_task_waits_for_the_users_answer_stops_the_tools_work() {
    let asking = Arc::new(Asking::default());
    let tools = ToolServer::new("jobs")
        .with_tools(Arc::clone(&asking))
        .unwrap();
    let (connection, give_up) = serve_giving_up(tools);
    let mut client = Client::initialized(connection, json!({"elicitation": {}})).await;
    client.call(2, "asking").await;
    // The task's check asked: the call waits for the answer, the task kept working.
    client
        .message(|m| m["method"] == json!("elicitation/create"))
        .await;

    give_up.notify_one();
    let answer = client.message(|m| m["id"] == json!(2)).await;
    assert!(answer.get("error").is_some(), "{answer}");
    or_fail(
        "the dropped call's task was never cancelled: its work goes on",
        asking.cancelled.notified(),
    )
    .await;
    assert_eq!(asking.cancels.load(Ordering::Relaxed), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_hanging_up_mid_call_stops_the_tools_work() {
    let endless = Arc::new(Endless::default());
    let server = ToolServer::new("jobs")
        .with_tools(Arc::clone(&endless))
        .unwrap();
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let (read, write) = tokio::io::split(theirs);
        if let Ok(running) = server.serve_io(read, write).await {
            let _ = running.waiting().await;
        }
    });
    let mut client = Client::initialized(ours, json!({})).await;
    client.call(2, "endless").await;
    or_fail("the tool never started", endless.started.notified()).await;

    drop(client);
    or_fail(
        "the call of a client that hung up never had its task cancelled",
        endless.cancelled.notified(),
    )
    .await;
    assert_eq!(endless.cancels.load(Ordering::Relaxed), 1);
}
