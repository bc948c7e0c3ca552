//! MCP tasks (the 2026-07-28 tasks extension) end to end: a `#[tool]` that returns a working
//! `Task`, served by `ToolServer` on a loopback port, called by this crate's client through a
//! chat. The server runs the call as an MCP task; the chat's call pauses on it, `complete` polls
//! it (`tasks/get`, which resumes the tool), a task that needs input asks through the chat and
//! gets the answer (`tasks/update`; a second question waits for its own answer, as does a
//! task's question after answers the call was sent before it became a task; a poll that does
//! not reach the server keeps the call waiting, five in a row end it), `cancel` cancels it (`tasks/cancel`, which runs the tool's
//! `cancel`), and a paused call survives a new client and a new chat, since the task's id is in
//! the call's saved state.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use llm_tools_core::chat::{Chat, ChatState, Outcome};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{Task, ToolOutcome, ToolOutput, tool};
use llm_tools_mcp::{Lifecycle, McpChat as _, McpClient, McpServer, ToolServer};
use serde_json::json;

/// A job that finishes on its second check, and records cancellations.
#[derive(Default)]
pub(crate) struct Job {
    checks: AtomicU32,
    cancelled: Mutex<Vec<String>>,
}

#[tool]
impl Job {
    /// Runs a report job
    ///
    /// # Arguments
    /// * `report` - Which report
    async fn execute(&self, report: String) -> Task {
        Task::working(format!("running {report}")).with_poll_interval(Duration::from_millis(10))
    }

    async fn resume(&self, task: Task, report: String) -> ToolOutcome {
        if self.checks.fetch_add(1, Ordering::Relaxed) == 0 {
            ToolOutcome::Task(task)
        } else {
            ToolOutcome::Output(ToolOutput::text(format!("{report} is ready")))
        }
    }

    async fn cancel(&self, _task: Task, report: String) {
        self.cancelled.lock().unwrap().push(report);
    }
}

async fn serve(job: Arc<Job>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let server = ToolServer::new("jobs").with_tools(job).unwrap();
    tokio::spawn(server.serve_http(listener));
    url
}

async fn client(url: &str) -> McpClient {
    let client = McpServer::http(url)
        .lifecycle(Lifecycle::Auto)
        .connect("jobs")
        .await
        .unwrap();
    assert_eq!(client.protocol_version().as_deref(), Some("2026-07-28"));
    client
}

fn chat_on(client: &McpClient, model: ScriptedProvider) -> Chat {
    let mut chat = Chat::new(model);
    chat.with_mcp(client).unwrap();
    chat
}

fn model() -> ScriptedProvider {
    ScriptedProvider::new()
        .then_call("jobs_job", json!({"report": "q3"}))
        .then_text("The Q3 report is ready.")
}

/// The id of the server's task behind the chat's one paused call.
fn task_id(chat: &Chat) -> String {
    let tasks = chat.pending_tasks();
    assert_eq!(tasks.len(), 1, "one call waits on a task");
    let id = tasks[0].task.get("mcp_task_id").and_then(|v| v.as_str());
    id.expect("the task's id is in its data").to_owned()
}

/// Polls the chat's paused call (`complete`) at most `polls` times, until the turn ends; it
/// must end with the model's answer.
async fn completed(chat: &mut Chat, polls: usize) {
    let mut outcome = chat.complete().await.unwrap();
    for _ in 1..polls {
        if !outcome.is_paused() {
            break;
        }
        outcome = chat.complete().await.unwrap();
    }
    assert!(matches!(outcome, Outcome::Done(_)), "{outcome:?}");
}

/// Polls the chat's paused call until it waits on a question other than `answered`: the
/// question's call id and message. The call must stay paused meanwhile.
async fn next_question(chat: &mut Chat, answered: Option<&str>) -> (String, String) {
    for _ in 0..20 {
        let outcome = chat.complete().await.unwrap();
        assert!(
            outcome.is_paused(),
            "the call ended without asking: {outcome:?}"
        );
        if let Some(q) = chat
            .pending_questions()
            .iter()
            .find(|q| Some(q.question.message()) != answered)
        {
            return (q.call.id.clone(), q.question.message().to_owned());
        }
    }
    panic!("no new question after 20 polls");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_the_server_runs_as_a_task_pauses_and_complete_polls_it() {
    let job = Arc::new(Job::default());
    let client = client(&serve(Arc::clone(&job)).await).await;
    let mut chat = chat_on(&client, model());
    let outcome = chat.ask("Run the Q3 report").await.unwrap();
    assert!(matches!(outcome, Outcome::Paused(_)), "{outcome:?}");
    // 128 random bits: an id no other client can guess.
    let id = task_id(&chat);
    let bits = id.strip_prefix("task-").unwrap();
    assert!(
        bits.len() == 32 && bits.chars().all(|c| c.is_ascii_hexdigit()),
        "{id}"
    );
    assert_eq!(
        chat.pending_tasks()[0].task.status_message(),
        Some("running q3")
    );
    assert_eq!(job.checks.load(Ordering::Relaxed), 0, "nothing polled yet");

    // First poll: still working. Second: done, and the model answers.
    let outcome = chat.complete().await.unwrap();
    assert!(matches!(outcome, Outcome::Paused(_)), "{outcome:?}");
    let Outcome::Done(answer) = chat.complete().await.unwrap() else {
        panic!("the second poll finishes the task")
    };
    assert_eq!(answer.text(), "The Q3 report is ready.");
    let result = &chat.messages()[2];
    assert_eq!(result.text(), "q3 is ready");
    assert!(!result.is_error);
    assert_eq!(job.checks.load(Ordering::Relaxed), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_chat_cancels_the_servers_task() {
    let job = Arc::new(Job::default());
    let client = client(&serve(Arc::clone(&job)).await).await;
    let mut chat = chat_on(&client, model());
    assert!(chat.ask("Run the Q3 report").await.unwrap().is_paused());
    let id = task_id(&chat);
    chat.cancel().await.expect("cancelled");
    assert!(!chat.is_paused());
    assert_eq!(*job.cancelled.lock().unwrap(), ["q3"]);
    let state = client
        .peer()
        .get_task(llm_tools_mcp::rmcp::model::GetTaskParams::new(id))
        .await
        .unwrap();
    assert_eq!(
        state.task.status(),
        llm_tools_mcp::rmcp::model::TaskStatus::Cancelled
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_call_survives_a_new_client_and_a_new_chat() {
    let job = Arc::new(Job::default());
    let url = serve(Arc::clone(&job)).await;
    let first = client(&url).await;
    let mut chat = chat_on(&first, model());
    assert!(chat.ask("Run the Q3 report").await.unwrap().is_paused());
    let saved: ChatState =
        serde_json::from_str(&serde_json::to_string(chat.state()).unwrap()).unwrap();
    first.close().await;
    drop(chat);

    // Another process, say: a new connection, a chat restored from the saved state.
    let second = client(&url).await;
    let mut chat = Chat::from_state(
        ScriptedProvider::new().then_text("The Q3 report is ready."),
        saved,
    )
    .unwrap();
    chat.with_mcp(&second).unwrap();
    completed(&mut chat, 4).await;
    assert_eq!(chat.messages()[2].text(), "q3 is ready");
}

/// An export that asks which format when it is first checked.
#[derive(Default)]
pub(crate) struct Export {
    started: AtomicU32,
}

#[tool]
impl Export {
    /// Exports the ledger
    async fn execute(&self) -> Task {
        self.started.fetch_add(1, Ordering::Relaxed);
        Task::working("exporting").with_poll_interval(Duration::from_millis(10))
    }

    async fn resume(
        &self,
        _task: Task,
        ctx: &llm_tools_core::ToolContext,
    ) -> Result<String, llm_tools_core::ToolError> {
        let question = llm_tools_core::Question::new("Which format?")
            .required_field("format", json!({"type": "string", "enum": ["csv", "pdf"]}));
        let answer = ctx.ask(question).await?;
        Ok(format!(
            "exported as {}",
            answer.get_str("format").unwrap_or("nothing")
        ))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_that_needs_input_asks_through_the_chat_and_gets_the_answer() {
    let export = Arc::new(Export::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let server = ToolServer::new("ledger")
        .with_tools(Arc::clone(&export))
        .unwrap();
    tokio::spawn(server.serve_http(listener));
    let client = McpServer::http(url)
        .lifecycle(Lifecycle::Auto)
        .connect("ledger")
        .await
        .unwrap();
    let model = ScriptedProvider::new()
        .then_call("ledger_export", json!({}))
        .then_text("Exported.");
    let mut chat = chat_on(&client, model);
    assert!(chat.ask("Export the ledger").await.unwrap().is_paused());
    // The first poll: the task needs input, which becomes the chat's question.
    assert!(chat.complete().await.unwrap().is_paused());
    let questions = chat.pending_questions();
    assert_eq!(questions.len(), 1, "the task's question is the chat's");
    assert_eq!(questions[0].question.message(), "Which format?");
    let call = questions[0].call.id.clone();
    chat.answer(&call, json!({"format": "pdf"})).unwrap();
    completed(&mut chat, 5).await;
    assert_eq!(chat.messages()[2].text(), "exported as pdf");
    // The answer went to the same task (`tasks/update`): the export started once.
    assert_eq!(export.started.load(Ordering::Relaxed), 1);
}

/// A loopback TCP proxy in front of `to` that can be cut off: while down, it closes every
/// connection it has forwarded and every new one at once (a network that drops).
struct Proxy {
    url: String,
    up: tokio::sync::watch::Sender<bool>,
}

impl Proxy {
    async fn start(to: &str) -> Self {
        let to = to
            .trim_start_matches("http://")
            .split('/')
            .next()
            .unwrap()
            .to_owned();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let (up, watch) = tokio::sync::watch::channel(true);
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let mut watch = watch.clone();
                if !*watch.borrow() {
                    continue;
                }
                let to = to.clone();
                tokio::spawn(async move {
                    let Ok(mut outbound) = tokio::net::TcpStream::connect(&to).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = watch.wait_for(|up| !*up) => {}
                    }
                });
            }
        });
        Self { url, up }
    }

    fn set_up(&self, up: bool) {
        self.up.send_replace(up);
    }
}

/// A poll that does not reach the server (the network dropped) leaves the call waiting on its
/// task, the failure counted; once the server is reachable again the task's result is the
/// call's. Five failed polls in a row end the call with an error naming them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poll_that_cannot_reach_the_server_keeps_the_call_waiting_a_bounded_number_of_times() {
    let job = Arc::new(Job::default());
    let proxy = Proxy::start(&serve(Arc::clone(&job)).await).await;
    let client = client(&proxy.url).await;
    let mut chat = chat_on(&client, model());
    assert!(chat.ask("Run the Q3 report").await.unwrap().is_paused());
    let id = task_id(&chat);

    proxy.set_up(false);
    for failures in 1..=2 {
        let outcome = chat.complete().await.unwrap();
        assert!(outcome.is_paused(), "poll {failures}: {outcome:?}");
        assert_eq!(task_id(&chat), id, "the same task");
        assert_eq!(
            chat.pending_tasks()[0].task.get("mcp_poll_failures"),
            Some(&json!(failures))
        );
    }
    assert_eq!(
        job.checks.load(Ordering::Relaxed),
        0,
        "no poll reached the server"
    );
    proxy.set_up(true);
    completed(&mut chat, 5).await;
    assert_eq!(chat.messages()[2].text(), "q3 is ready");

    // Cut off for good: the fifth failed poll in a row ends the call.
    let mut chat = chat_on(&client, model());
    assert!(chat.ask("Run the Q3 report").await.unwrap().is_paused());
    proxy.set_up(false);
    for _ in 1..5 {
        assert!(chat.complete().await.unwrap().is_paused());
    }
    let outcome = chat.complete().await.unwrap();
    assert!(matches!(outcome, Outcome::Done(_)), "{outcome:?}");
    let result = &chat.messages()[2];
    assert!(result.is_error);
    assert!(
        result
            .text()
            .contains("5 polls of the task in a row failed"),
        "{}",
        result.text()
    );
}

/// A clean-up whose task asks two questions in turn: where, then whether to delete.
#[derive(Default)]
pub(crate) struct Cleanup;

#[tool]
impl Cleanup {
    /// Cleans old backups up
    async fn execute(&self) -> Task {
        Task::working("cleaning").with_poll_interval(Duration::from_millis(10))
    }

    async fn resume(
        &self,
        _task: Task,
        ctx: &llm_tools_core::ToolContext,
    ) -> Result<String, llm_tools_core::ToolError> {
        let region = ctx
            .ask(
                llm_tools_core::Question::new("Which region?")
                    .required_field("region", json!({"type": "string"})),
            )
            .await?;
        let confirm = ctx
            .ask(
                llm_tools_core::Question::new("Delete the old backups?")
                    .required_field("delete", json!({"type": "boolean"})),
            )
            .await?;
        Ok(format!(
            "{}: {}",
            region.get_str("region").unwrap_or("nowhere"),
            if confirm.get("delete") == Some(&json!(true)) {
                "deleted"
            } else {
                "kept"
            }
        ))
    }
}

/// A task's second question is the user's to answer: the answer to the first, which the task
/// was sent on an earlier poll, does not answer it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tasks_second_question_waits_for_its_own_answer() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let server = ToolServer::new("ops").with_tools(Cleanup).unwrap();
    tokio::spawn(server.serve_http(listener));
    let client = McpServer::http(url)
        .lifecycle(Lifecycle::Auto)
        .connect("ops")
        .await
        .unwrap();
    let model = ScriptedProvider::new()
        .then_call("ops_cleanup", json!({}))
        .then_text("Cleaned.");
    let mut chat = chat_on(&client, model);
    assert!(chat.ask("Clean the backups up").await.unwrap().is_paused());
    let (call, first) = next_question(&mut chat, None).await;
    assert_eq!(first, "Which region?");
    chat.answer(&call, json!({"region": "eu-west"})).unwrap();
    let (call, second) = next_question(&mut chat, Some("Which region?")).await;
    assert_eq!(
        second, "Delete the old backups?",
        "the second question is asked"
    );
    chat.answer(&call, json!({"delete": true})).unwrap();
    completed(&mut chat, 21).await;
    assert_eq!(chat.messages()[2].text(), "eu-west: deleted");
}

/// A restore that asks which snapshot before it starts its task, and whether to overwrite
/// while the task runs.
#[derive(Default)]
pub(crate) struct Restore;

#[tool]
impl Restore {
    /// Restores a snapshot
    async fn execute(
        &self,
        ctx: &llm_tools_core::ToolContext,
    ) -> Result<Task, llm_tools_core::ToolError> {
        let snapshot = ctx
            .ask(
                llm_tools_core::Question::new("Which snapshot?")
                    .required_field("snapshot", json!({"type": "string"})),
            )
            .await?;
        Ok(Task::working("restoring")
            .with_poll_interval(Duration::from_millis(10))
            .with_data("snapshot", json!(snapshot.get_str("snapshot"))))
    }

    async fn resume(
        &self,
        task: Task,
        ctx: &llm_tools_core::ToolContext,
    ) -> Result<String, llm_tools_core::ToolError> {
        let overwrite = ctx
            .ask(
                llm_tools_core::Question::new("Overwrite the current data?")
                    .required_field("overwrite", json!({"type": "boolean"})),
            )
            .await?;
        Ok(format!(
            "{} restored, overwrite {}",
            task.get("snapshot").and_then(|s| s.as_str()).unwrap_or("?"),
            overwrite
                .get("overwrite")
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false)
        ))
    }
}

/// The answer a call was sent before the server made it a task does not answer the task's
/// own question.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_asked_before_the_task_began_does_not_answer_the_tasks_own() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let server = ToolServer::new("ops").with_tools(Restore).unwrap();
    tokio::spawn(server.serve_http(listener));
    let client = McpServer::http(url)
        .lifecycle(Lifecycle::Auto)
        .connect("ops")
        .await
        .unwrap();
    let model = ScriptedProvider::new()
        .then_call("ops_restore", json!({}))
        .then_text("Restored.");
    let mut chat = chat_on(&client, model);
    assert!(chat.ask("Restore").await.unwrap().is_paused());
    let questions = chat.pending_questions();
    assert_eq!(questions[0].question.message(), "Which snapshot?");
    let call = questions[0].call.id.clone();
    chat.answer(&call, json!({"snapshot": "monday"})).unwrap();
    let (call, question) = next_question(&mut chat, Some("Which snapshot?")).await;
    assert_eq!(question, "Overwrite the current data?");
    chat.answer(&call, json!({"overwrite": true})).unwrap();
    completed(&mut chat, 21).await;
    assert_eq!(chat.messages()[2].text(), "monday restored, overwrite true");
}

/// A report whose check never ends: it says when a check has started, and counts cancellations.
#[derive(Default)]
pub(crate) struct Stuck {
    checking: tokio::sync::Notify,
    cancelled: AtomicU32,
}

#[tool]
impl Stuck {
    /// Runs a report that never finishes
    async fn execute(&self) -> Task {
        Task::working("running").with_poll_interval(Duration::from_millis(10))
    }

    async fn resume(&self, task: Task) -> ToolOutcome {
        self.checking.notify_one();
        std::future::pending::<()>().await;
        ToolOutcome::Task(task)
    }

    async fn cancel(&self, _task: Task) {
        self.cancelled.fetch_add(1, Ordering::Relaxed);
    }
}

/// Fails the test instead of hanging it when `future` never ends (the guard is long: a
/// passing run never comes near it).
async fn or_hung<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), future)
        .await
        .unwrap_or_else(|_| panic!("{what} never answered"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_resume_neither_blocks_other_polls_nor_cancel() {
    use llm_tools_mcp::rmcp::model::{CancelTaskParams, GetTaskParams, TaskStatus};
    let stuck = Arc::new(Stuck::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let server = ToolServer::new("jobs")
        .with_tools(Arc::clone(&stuck))
        .unwrap();
    tokio::spawn(server.serve_http(listener));
    let client = client(&url).await;
    let model = ScriptedProvider::new()
        .then_call("jobs_stuck", json!({}))
        .then_text("Stopped.");
    let mut chat = chat_on(&client, model);
    assert!(chat.ask("Run it").await.unwrap().is_paused());
    let id = task_id(&chat);

    // The first poll resumes the tool, which hangs.
    let peer = client.peer().clone();
    let first_id = id.clone();
    let first = tokio::spawn(async move { peer.get_task(GetTaskParams::new(first_id)).await });
    or_hung("the resume", stuck.checking.notified()).await;

    // Another poll answers at once: the task is working.
    let second = or_hung(
        "a second tasks/get",
        client.peer().get_task(GetTaskParams::new(id.clone())),
    )
    .await
    .unwrap();
    assert_eq!(second.task.status(), TaskStatus::Working);

    // Cancelling does not wait for the resume: it stops it and runs the tool's cancel.
    or_hung(
        "tasks/cancel",
        client.peer().cancel_task(CancelTaskParams::new(id.clone())),
    )
    .await
    .unwrap();
    assert_eq!(stuck.cancelled.load(Ordering::Relaxed), 1);
    let first = or_hung("the first tasks/get", first)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first.task.status(), TaskStatus::Cancelled);
}

/// A check that never ends, limited to 50 ms.
#[derive(Default)]
pub(crate) struct Limited;

#[tool(max_run_time = "50ms")]
impl Limited {
    /// Runs a report that never finishes, within a limit
    async fn execute(&self) -> Task {
        Task::working("running").with_poll_interval(Duration::from_millis(10))
    }

    async fn resume(&self, task: Task) -> ToolOutcome {
        std::future::pending::<()>().await;
        ToolOutcome::Task(task)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_runs_at_most_the_calls_max_run_time() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let server = ToolServer::new("jobs").with_tools(Limited).unwrap();
    tokio::spawn(server.serve_http(listener));
    let client = client(&url).await;
    let model = ScriptedProvider::new()
        .then_call("jobs_limited", json!({}))
        .then_text("It ran too long.");
    let mut chat = chat_on(&client, model);
    assert!(chat.ask("Run it").await.unwrap().is_paused());
    let outcome = or_hung("the poll", chat.complete()).await.unwrap();
    assert!(matches!(outcome, Outcome::Done(_)), "{outcome:?}");
    let result = &chat.messages()[2];
    assert!(result.is_error, "{result:?}");
    assert!(result.text().contains("limit of 50ms"), "{}", result.text());
}

/// A report whose check never ends, within 50 ms, and that counts the calls that started and
/// the cancellations of their work.
#[derive(Default)]
pub(crate) struct Counted {
    started: AtomicU32,
    cancelled: AtomicU32,
}

#[tool(max_run_time = "50ms")]
impl Counted {
    /// Runs a report that never finishes, within a limit
    ///
    /// # Arguments
    /// * `report` - Which report
    async fn execute(&self, report: String) -> Task {
        self.started.fetch_add(1, Ordering::Relaxed);
        Task::working(format!("running {report}")).with_poll_interval(Duration::from_millis(10))
    }

    async fn resume(&self, task: Task, report: String) -> ToolOutcome {
        let _ = report;
        std::future::pending::<()>().await;
        ToolOutcome::Task(task)
    }

    async fn cancel(&self, _task: Task, report: String) {
        let _ = report;
        self.cancelled.fetch_add(1, Ordering::Relaxed);
    }
}

async fn serve_counted(counted: Arc<Counted>, server: ToolServer) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let server = server.with_tools(counted).unwrap();
    tokio::spawn(server.serve_http(listener));
    url
}

/// A check that runs past the call's limit ends the task, and the tool's `cancel` stops the
/// work behind it (before, the work went on unobserved).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_past_the_calls_limit_stops_the_tools_work() {
    let counted = Arc::new(Counted::default());
    let url = serve_counted(Arc::clone(&counted), ToolServer::new("jobs")).await;
    let client = client(&url).await;
    let model = ScriptedProvider::new()
        .then_call("jobs_counted", json!({"report": "q3"}))
        .then_text("It ran too long.");
    let mut chat = chat_on(&client, model);
    assert!(chat.ask("Run it").await.unwrap().is_paused());
    let outcome = or_hung("the poll", chat.complete()).await.unwrap();
    assert!(matches!(outcome, Outcome::Done(_)), "{outcome:?}");
    assert!(chat.messages()[2].text().contains("limit of 50ms"));
    assert_eq!(counted.cancelled.load(Ordering::Relaxed), 1);
}

/// A call refused as a task (the client has its most tasks) is told it did not start: the
/// work the tool started for it is stopped (before, it ran on, and a client retrying doubled
/// it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_refused_at_the_clients_limit_stops_the_work_it_started() {
    let counted = Arc::new(Counted::default());
    let server = ToolServer::new("jobs").with_max_tasks_per_client(1);
    let url = serve_counted(Arc::clone(&counted), server).await;
    let client = client(&url).await;
    let model = ScriptedProvider::new()
        .then_calls([
            ("jobs_counted", json!({"report": "q3"})),
            ("jobs_counted", json!({"report": "q4"})),
        ])
        .then_text("One started.");
    let mut chat = chat_on(&client, model);
    assert!(chat.ask("Run both").await.unwrap().is_paused());
    assert_eq!(counted.started.load(Ordering::Relaxed), 2);
    assert_eq!(chat.pending_tasks().len(), 1, "one call runs as a task");
    assert_eq!(counted.cancelled.load(Ordering::Relaxed), 1);
}

/// A client without the tasks extension (a 2025 session) has the server poll the task within
/// the request: when the call's limit ends it, the tool's `cancel` stops the work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_polled_within_a_request_past_its_limit_stops_the_tools_work() {
    let counted = Arc::new(Counted::default());
    let url = serve_counted(Arc::clone(&counted), ToolServer::new("jobs")).await;
    let client = McpServer::http(&url)
        .lifecycle(Lifecycle::Initialize)
        .connect("jobs")
        .await
        .unwrap();
    let model = ScriptedProvider::new()
        .then_call("jobs_counted", json!({"report": "q3"}))
        .then_text("It ran too long.");
    let mut chat = chat_on(&client, model);
    let outcome = or_hung("the call", chat.ask("Run it")).await.unwrap();
    assert!(matches!(outcome, Outcome::Done(_)), "{outcome:?}");
    let result = &chat.messages()[2];
    assert!(result.is_error, "{result:?}");
    assert!(result.text().contains("limit of 50ms"), "{}", result.text());
    assert_eq!(counted.cancelled.load(Ordering::Relaxed), 1);
}
