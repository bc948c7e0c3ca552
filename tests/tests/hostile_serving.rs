//! `ToolServer` facing clients it cannot trust: a tool that needs approval never runs without it
//! (asked through the client's elicitation, decided by the application's hook, or refused).
//! The clients are real: the Python `mcp` SDK's client (`tests/mcp-servers/python_serving_client.py`)
//! over Streamable HTTP on a loopback port, in both lifecycles (`initialize` and 2026-07-28).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use llm_tools_core::{Question, ToolCall, ToolContext, ToolError, tool};
use llm_tools_mcp::{Decision, ToolServer};
use serde_json::{Value, json};

/// Empties tables, counting each table it really emptied.
#[derive(Default)]
pub struct Wipe {
    wiped: AtomicU32,
}

#[tool(needs_approval)]
impl Wipe {
    /// Empties a table
    ///
    /// # Arguments
    /// * `table` - The table to empty
    async fn execute(&self, table: String) -> String {
        self.wiped.fetch_add(1, Ordering::Relaxed);
        format!("wiped {table}")
    }
}

/// Arguments the transfer rule reads.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Amount {
    amount: u64,
}

fn large(transfer: &Amount) -> bool {
    transfer.amount > 100
}

/// Sends money, counting each transfer made.
#[derive(Default)]
pub struct Transfer {
    made: AtomicU32,
}

#[tool(needs_approval = large)]
impl Transfer {
    /// Sends money
    ///
    /// # Arguments
    /// * `amount` - How much
    async fn execute(&self, amount: u64) -> String {
        self.made.fetch_add(1, Ordering::Relaxed);
        format!("sent {amount}")
    }
}

/// Deploys after asking where, counting deployments.
#[derive(Default)]
pub struct Deploy {
    deployed: AtomicU32,
}

#[tool(needs_approval)]
impl Deploy {
    /// Deploys the service
    async fn execute(&self, ctx: &ToolContext) -> Result<String, ToolError> {
        let question = Question::new("Which region?")
            .required_field("region", json!({"type": "string", "default": "eu-west-1"}));
        let answer = ctx.ask(question).await?;
        self.deployed.fetch_add(1, Ordering::Relaxed);
        Ok(format!(
            "deployed to {}",
            answer.get_str("region").unwrap_or("nowhere")
        ))
    }
}

/// Serves `server` on a loopback port; its URL.
async fn serve(server: ToolServer) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(server.serve_http(listener));
    url
}

/// What the Python SDK's client saw running `plan` (see the script's docs), or `None` when
/// Python cannot run here (outside CI).
async fn python(plan: Value) -> Option<Value> {
    tokio::task::spawn_blocking(move || {
        let python =
            llm_tools_tests::mcp::or_skip("hostile_serving", llm_tools_tests::mcp::python())?;
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("mcp-servers/python_serving_client.py");
        let output = std::process::Command::new(python)
            .arg(script)
            .arg(plan.to_string())
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        Some(serde_json::from_slice(&output.stdout).unwrap())
    })
    .await
    .unwrap()
}

/// The text of a step's call result, and whether it is an error result.
fn call_result(seen: &Value, step: usize) -> (bool, String) {
    let result = &seen["steps"][step]["result"];
    assert!(result.is_object(), "step {step} gave no result: {seen}");
    let text = result["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|block| block["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n");
    (result["isError"] == json!(true), text)
}

fn wipe_server() -> (Arc<Wipe>, ToolServer) {
    let wipe = Arc::new(Wipe::default());
    let server = ToolServer::new("db").with_tools(Arc::clone(&wipe)).unwrap();
    (wipe, server)
}

fn wipe_plan(url: &str, mode: &str, elicit: &str) -> Value {
    json!({
        "url": url, "mode": mode, "elicit": elicit,
        "steps": [{"op": "call", "tool": "wipe", "args": {"table": "orders"}}]
    })
}

const LIFECYCLES: [&str; 2] = ["legacy", "auto"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_call_runs_once_after_the_user_saw_the_tool_and_its_arguments() {
    for mode in LIFECYCLES {
        let (wipe, server) = wipe_server();
        let Some(seen) = python(wipe_plan(&serve(server).await, mode, "approve")).await else {
            return;
        };
        assert_eq!(
            call_result(&seen, 0),
            (false, "wiped orders".to_owned()),
            "{mode}: {seen}"
        );
        assert_eq!(wipe.wiped.load(Ordering::Relaxed), 1, "{mode}");
        let asked = seen["asked"].as_array().unwrap();
        assert_eq!(asked.len(), 1, "{mode}: one approval question: {seen}");
        let question = asked[0].as_str().unwrap();
        assert!(
            question.contains("wipe") && question.contains(r#""table":"orders""#),
            "{mode}: the question names the tool and its arguments: {question}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_call_does_not_run() {
    for mode in LIFECYCLES {
        for answer in ["deny", "accept_empty"] {
            let (wipe, server) = wipe_server();
            let Some(seen) = python(wipe_plan(&serve(server).await, mode, answer)).await else {
                return;
            };
            let (is_error, text) = call_result(&seen, 0);
            assert!(is_error, "{mode}/{answer}: {seen}");
            assert!(text.contains("denied"), "{mode}/{answer}: {text}");
            assert_eq!(
                wipe.wiped.load(Ordering::Relaxed),
                0,
                "{mode}/{answer}: nothing wiped"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_cannot_ask_its_user_is_refused() {
    for mode in LIFECYCLES {
        let (wipe, server) = wipe_server();
        let Some(seen) = python(wipe_plan(&serve(server).await, mode, "none")).await else {
            return;
        };
        let (is_error, text) = call_result(&seen, 0);
        assert!(is_error, "{mode}: {seen}");
        assert!(
            text.contains("needs approval") && text.contains("elicitation"),
            "{mode}: the refusal says why: {text}"
        );
        assert_eq!(
            wipe.wiped.load(Ordering::Relaxed),
            0,
            "{mode}: nothing wiped"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_applications_hook_decides_instead_of_the_client() {
    let (wipe, server) = wipe_server();
    let seen_calls = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = Arc::clone(&seen_calls);
    let server = server.approve_with(move |call: &ToolCall| {
        log.lock()
            .unwrap()
            .push((call.name.clone(), call.arguments.clone()));
        let scratch = call.arguments.contains("scratch");
        async move {
            if scratch {
                Decision::Approve
            } else {
                Decision::deny("only scratch tables may be wiped")
            }
        }
    });
    let url = serve(server).await;
    for mode in LIFECYCLES {
        let plan = json!({
            "url": url, "mode": mode, "elicit": "approve",
            "steps": [
                {"op": "call", "tool": "wipe", "args": {"table": "scratch"}},
                {"op": "call", "tool": "wipe", "args": {"table": "orders"}}
            ]
        });
        let Some(seen) = python(plan).await else {
            return;
        };
        assert_eq!(
            call_result(&seen, 0),
            (false, "wiped scratch".to_owned()),
            "{mode}"
        );
        let (is_error, text) = call_result(&seen, 1);
        assert!(
            is_error && text.contains("only scratch tables may be wiped"),
            "{mode}: {text}"
        );
        assert_eq!(
            seen["asked"],
            json!([]),
            "{mode}: the client's user was not asked"
        );
    }
    assert_eq!(
        wipe.wiped.load(Ordering::Relaxed),
        2,
        "scratch, once per lifecycle"
    );
    let calls = seen_calls.lock().unwrap();
    assert_eq!(calls.len(), 4, "the hook decided each call once: {calls:?}");
    assert_eq!(
        calls[0],
        ("wipe".to_owned(), r#"{"table":"scratch"}"#.to_owned())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_per_call_rule_asks_only_for_the_calls_it_names() {
    for mode in LIFECYCLES {
        let transfer = Arc::new(Transfer::default());
        let server = ToolServer::new("bank")
            .with_tools(Arc::clone(&transfer))
            .unwrap();
        let plan = json!({
            "url": serve(server).await, "mode": mode, "elicit": "none",
            "steps": [
                {"op": "call", "tool": "transfer", "args": {"amount": 5}},
                {"op": "call", "tool": "transfer", "args": {"amount": 500}}
            ]
        });
        let Some(seen) = python(plan).await else {
            return;
        };
        assert_eq!(
            call_result(&seen, 0),
            (false, "sent 5".to_owned()),
            "{mode}"
        );
        let (is_error, text) = call_result(&seen, 1);
        assert!(
            is_error && text.contains("needs approval"),
            "{mode}: {text}"
        );
        assert_eq!(
            transfer.made.load(Ordering::Relaxed),
            1,
            "{mode}: the large one did not run"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_call_that_asks_its_user_is_approved_once() {
    for mode in LIFECYCLES {
        let deploy = Arc::new(Deploy::default());
        let server = ToolServer::new("ops")
            .with_tools(Arc::clone(&deploy))
            .unwrap();
        let plan = json!({
            "url": serve(server).await, "mode": mode, "elicit": "approve",
            "steps": [{"op": "call", "tool": "deploy", "args": {}}]
        });
        let Some(seen) = python(plan).await else {
            return;
        };
        assert_eq!(
            call_result(&seen, 0),
            (false, "deployed to eu-west-1".to_owned()),
            "{mode}: {seen}"
        );
        let asked: Vec<&str> = seen["asked"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(
            asked.len(),
            2,
            "{mode}: the approval, then the question: {asked:?}"
        );
        assert!(asked[0].contains("deploy"), "{mode}: {asked:?}");
        assert_eq!(asked[1], "Which region?", "{mode}");
        assert_eq!(deploy.deployed.load(Ordering::Relaxed), 1, "{mode}");
    }
}
