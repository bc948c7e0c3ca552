//! `ToolServer` facing clients it cannot trust: a tool that needs approval never runs without it
//! (asked through the client's elicitation, decided by the application's hook, or refused);
//! over HTTP, requests from other hosts, browser origins, other paths or without the configured
//! authorization never reach MCP, and one client's tasks are no other's; clients holding
//! connections open, sending slowly, or too many, never stop the server, nor does running out
//! of file descriptors; a call's id is the server's own, and a tool's internal error stays in
//! the server's log. The clients are real:
//! the Python `mcp` SDK's client (`tests/mcp-servers/python_serving_client.py`) over Streamable
//! HTTP on a loopback port, in both lifecycles (`initialize` and 2026-07-28), this crate's
//! client, and raw HTTP/1.1 requests written on a TCP socket.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use llm_tools_core::{Question, ToolCall, ToolContext, ToolError, tool};
use llm_tools_mcp::{Access, Decision, HttpOptions, McpServer, ToolServer};
use serde_json::{Value, json};

/// Empties tables, counting each table it really emptied.
#[derive(Default)]
pub(crate) struct Wipe {
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
pub(crate) struct Amount {
    amount: u64,
}

fn large(transfer: &Amount) -> bool {
    transfer.amount > 100
}

/// Sends money, counting each transfer made.
#[derive(Default)]
pub(crate) struct Transfer {
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
pub(crate) struct Deploy {
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

/// A 2026-07-28 client that sends an approved round again, its sealed state and its approval
/// as they were, does not run the tool again: each round's state continues its call once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_round_sent_again_does_not_run_the_tool_again() {
    let (wipe, server) = wipe_server();
    let mut plan = wipe_plan(&serve(server).await, "auto", "approve");
    plan["steps"]
        .as_array_mut()
        .unwrap()
        .push(json!({"op": "replay"}));
    let Some(seen) = python(plan).await else {
        return;
    };
    assert_eq!(seen["protocol"], "2026-07-28", "{seen}");
    assert_eq!(call_result(&seen, 0), (false, "wiped orders".to_owned()));
    let replayed = &seen["steps"][1];
    let text = replayed.to_string();
    assert!(
        replayed["error"].is_string() || replayed["result"]["isError"] == json!(true),
        "the replay is refused: {seen}"
    );
    assert!(text.contains("used already"), "{seen}");
    assert_eq!(wipe.wiped.load(Ordering::Relaxed), 1, "the tool ran once");
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

/// A JSON-RPC `initialize`, the first request of a client.
const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;

/// Serves `server` with `options` on a loopback port; its address.
async fn serve_with(server: ToolServer, options: HttpOptions) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(server.serve_http_with(listener, options));
    addr
}

/// The head of a response (status line and headers) to a raw HTTP/1.1 `POST` of
/// [`INITIALIZE`] to `path` with `headers` (a `Host` naming `addr` unless given), and its
/// status.
async fn raw_post(
    addr: std::net::SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, String) {
    raw_post_of(addr, path, headers, INITIALIZE).await
}

/// [`raw_post`] of `body`.
async fn raw_post_of(
    addr: std::net::SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut request = format!("POST {path} HTTP/1.1\r\n");
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("host"))
    {
        request.push_str(&format!("Host: {addr}\r\n"));
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!(
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).await.unwrap() == 1 {
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {head:?}"));
    (status, head)
}

/// A header's value in a response head.
fn header<'h>(head: &'h str, name: &str) -> Option<&'h str> {
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

fn adder() -> ToolServer {
    llm_tools_tests::served_tools::server().unwrap()
}

#[tokio::test]
async fn a_cross_origin_request_is_refused_unless_its_origin_is_allowed() {
    let addr = serve_with(adder(), HttpOptions::new()).await;
    assert_eq!(
        raw_post(addr, "/mcp", &[]).await.0,
        200,
        "no Origin: a client that is no browser"
    );
    let (status, _) = raw_post(addr, "/mcp", &[("Origin", "http://evil.example")]).await;
    assert_eq!(status, 403, "no origin is allowed by default");
    let own = format!("http://{addr}");
    let (status, _) = raw_post(addr, "/mcp", &[("Origin", &own)]).await;
    assert_eq!(status, 403, "not even the server's own: it serves no page");

    let options = HttpOptions::new().allow_origin("https://app.example");
    let addr = serve_with(adder(), options).await;
    assert_eq!(
        raw_post(addr, "/mcp", &[("Origin", "https://app.example")])
            .await
            .0,
        200
    );
    assert_eq!(
        raw_post(addr, "/mcp", &[("Origin", "https://app.example.evil")])
            .await
            .0,
        403
    );
}

#[tokio::test]
async fn only_the_mcp_path_is_served() {
    let addr = serve_with(adder(), HttpOptions::new()).await;
    for path in ["/", "/other", "/mcp/x", "/MCP"] {
        assert_eq!(raw_post(addr, path, &[]).await.0, 404, "{path}");
    }
    let addr = serve_with(adder(), HttpOptions::new().with_path("/tools")).await;
    assert_eq!(raw_post(addr, "/tools", &[]).await.0, 200);
    assert_eq!(raw_post(addr, "/mcp", &[]).await.0, 404);
}

#[tokio::test]
async fn a_server_on_every_interface_serves_the_hosts_the_application_names() {
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let options = HttpOptions::new()
        .allow_host("192.168.1.20")
        .allow_host("tools.lan:9999");
    tokio::spawn(adder().serve_http_with(listener, options));
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let host = |h: String| async move { raw_post(addr, "/mcp", &[("Host", &h)]).await.0 };
    assert_eq!(
        host(format!("192.168.1.20:{port}")).await,
        200,
        "a LAN address the application named"
    );
    assert_eq!(host(format!("localhost:{port}")).await, 200, "loopback");
    assert_eq!(
        host("tools.lan:9999".to_owned()).await,
        200,
        "a name with its port"
    );
    assert_eq!(
        host(format!("tools.lan:{port}")).await,
        403,
        "the same name on another port"
    );
    assert_eq!(
        host(format!("10.0.0.9:{port}")).await,
        403,
        "an address nobody named"
    );
    assert_eq!(
        host(format!("evil.example:{port}")).await,
        403,
        "DNS rebinding"
    );
    assert_eq!(
        host(format!("0.0.0.0:{port}")).await,
        403,
        "the unspecified address"
    );
}

/// A refused request's `Host` or `Origin` is logged cut: a client sending a 200 KB header
/// again and again does not write 200 KB of log each time.
#[test]
fn a_refused_hosts_and_origins_are_logged_cut() {
    llm_tools_tests::run_alone("child_a_refused_hosts_and_origins_are_logged_cut", 1);
}

// One thread runs the server, so the log of this thread is the server's; the test runs in a
// process of its own (see `llm_tools_tests::run_alone`).
#[tokio::test(flavor = "current_thread")]
#[ignore = "run in a process of its own by a_refused_hosts_and_origins_are_logged_cut"]
async fn child_a_refused_hosts_and_origins_are_logged_cut() {
    let (log, _guard) = llm_tools_tests::CapturedLog::start(Some("llm_tools::mcp=warn"));
    let addr = serve_with(adder(), HttpOptions::new()).await;
    let long = "x".repeat(200 * 1024);
    let (host_status, _) = raw_post(addr, "/mcp", &[("Host", &format!("{long}.example"))]).await;
    let origin = format!("https://{long}.example");
    let (origin_status, _) = raw_post(addr, "/mcp", &[("Origin", &origin)]).await;
    assert_eq!((host_status, origin_status), (403, 403));
    let text = log.text();
    assert!(
        text.contains("possible DNS rebinding") && text.contains("cross-origin"),
        "both refusals are logged: {}",
        &text[..text.len().min(500)]
    );
    assert!(text.len() < 4096, "{} bytes of log", text.len());
}

/// A client on another machine that names `localhost` (or `127.0.0.1`) reached the server
/// through another address: refused, as a name nobody allowed. The server's LAN address the
/// application names is served. (The client here connects from this machine's own network
/// address, which the server sees as any LAN peer.)
#[tokio::test]
async fn a_loopback_host_from_a_client_off_loopback_is_refused() {
    let Some(lan) = this_machines_network_address() else {
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stderr(),
            "skipped: hostile_serving: this machine has no network address to connect from"
        );
        return;
    };
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(adder().serve_http_with(listener, HttpOptions::new().allow_host(lan.to_string())));
    let from_lan: std::net::SocketAddr = (lan, port).into();
    let from_loopback: std::net::SocketAddr = ([127, 0, 0, 1], port).into();
    let status = |addr, h: String| async move { raw_post(addr, "/mcp", &[("Host", &h)]).await.0 };
    for name in ["localhost", "127.0.0.1", "[::1]"] {
        assert_eq!(
            status(from_lan, format!("{name}:{port}")).await,
            403,
            "{name} from the network"
        );
        assert_eq!(
            status(from_loopback, format!("{name}:{port}")).await,
            200,
            "{name} from this machine"
        );
    }
    assert_eq!(
        status(from_lan, format!("{lan}:{port}")).await,
        200,
        "the address the application named"
    );
}

/// This machine's own IPv4 address on its network, if it has one: the source address of a
/// route to TEST-NET-1 (a UDP socket's `connect` sends nothing).
fn this_machines_network_address() -> Option<std::net::IpAddr> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect("192.0.2.1:9").ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

const METADATA: &str = "https://tools.example/.well-known/oauth-protected-resource";

fn guarded_options() -> HttpOptions {
    HttpOptions::new()
        .with_bearer_token("alice", "token-of-alice")
        .with_bearer_token("bob", "token-of-bob")
        .with_resource_metadata(METADATA)
}

#[tokio::test]
async fn without_the_configured_authorization_a_request_gets_401_naming_the_metadata() {
    let addr = serve_with(adder(), guarded_options()).await;
    let (status, head) = raw_post(addr, "/mcp", &[]).await;
    assert_eq!(status, 401);
    assert_eq!(
        header(&head, "www-authenticate"),
        Some(format!(r#"Bearer resource_metadata="{METADATA}""#).as_str())
    );
    let (status, head) = raw_post(addr, "/mcp", &[("Authorization", "Bearer guess")]).await;
    assert_eq!(status, 401);
    assert_eq!(
        header(&head, "www-authenticate"),
        Some(format!(r#"Bearer error="invalid_token", resource_metadata="{METADATA}""#).as_str())
    );
    let (status, _) = raw_post(addr, "/mcp", &[("Authorization", "Bearer token-of-bob")]).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn the_applications_authorization_hook_sees_the_headers() {
    let options = HttpOptions::new().with_authorization(|headers| {
        let user = headers
            .get("x-user")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        async move {
            match user.as_deref() {
                Some("reader") => Access::insufficient_scope("tools:call"),
                Some(user) => Access::granted(user),
                None => Access::Unauthorized,
            }
        }
    });
    let addr = serve_with(adder(), options).await;
    let (status, head) = raw_post(addr, "/mcp", &[]).await;
    assert_eq!(
        (status, header(&head, "www-authenticate")),
        (401, Some("Bearer"))
    );
    let (status, head) = raw_post(addr, "/mcp", &[("X-User", "reader")]).await;
    assert_eq!(status, 403);
    assert_eq!(
        header(&head, "www-authenticate"),
        Some(r#"Bearer error="insufficient_scope", scope="tools:call""#)
    );
    assert_eq!(raw_post(addr, "/mcp", &[("X-User", "ada")]).await.0, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_with_a_bearer_token_use_the_tools() {
    let addr = serve_with(adder(), guarded_options()).await;
    let url = format!("http://{addr}/mcp");
    // This crate's client.
    let refused = McpServer::http(&url).connect("served").await;
    assert!(refused.is_err(), "no token, no tools");
    let client = McpServer::http(&url)
        .bearer_token("token-of-alice")
        .connect("served")
        .await
        .unwrap();
    assert!(client.tool_names().contains(&"served_add".to_owned()));
    // The Python SDK's, in both lifecycles.
    for mode in LIFECYCLES {
        let call = json!([{"op": "call", "tool": "add", "args": {"a": 2, "b": 3}}]);
        let plan = json!({"url": url, "mode": mode, "token": "token-of-bob", "steps": call});
        let Some(seen) = python(plan).await else {
            return;
        };
        assert_eq!(
            call_result(&seen, 0),
            (false, "5".to_owned()),
            "{mode}: {seen}"
        );
        let plan = json!({"url": url, "mode": mode, "steps": call});
        let seen = python(plan).await.unwrap();
        assert!(
            seen["connect_error"].is_string(),
            "{mode}: without a token: {seen}"
        );
    }
}

/// A job that stays working until its client asks twice.
#[derive(Default)]
pub(crate) struct Job {
    checks: AtomicU32,
    cancelled: AtomicU32,
}

#[tool]
impl Job {
    /// Runs a report job
    async fn execute(&self) -> llm_tools_core::Task {
        llm_tools_core::Task::working("running")
    }

    async fn resume(&self, task: llm_tools_core::Task) -> llm_tools_core::ToolOutcome {
        if self.checks.fetch_add(1, Ordering::Relaxed) == 0 {
            llm_tools_core::ToolOutcome::Task(task)
        } else {
            llm_tools_core::ToolOutcome::Output(llm_tools_core::ToolOutput::text(
                "the private report",
            ))
        }
    }

    async fn cancel(&self, _task: llm_tools_core::Task) {
        self.cancelled.fetch_add(1, Ordering::Relaxed);
    }
}

/// A report that stays working, and says when its work is cancelled.
#[derive(Default)]
pub(crate) struct Left {
    cancelled: tokio::sync::Notify,
}

#[tool]
impl Left {
    /// Runs a report that stays working
    async fn execute(&self) -> llm_tools_core::Task {
        llm_tools_core::Task::working("running")
    }

    async fn resume(&self, task: llm_tools_core::Task) -> llm_tools_core::ToolOutcome {
        llm_tools_core::ToolOutcome::Task(task)
    }

    async fn cancel(&self, _task: llm_tools_core::Task) {
        self.cancelled.notify_one();
    }
}

/// The tasks of a connection (stdio, a socket) end with it: no other connection may reach
/// them, so their work is cancelled and their places freed at once, not an hour later at
/// their TTL (a client closing connections holding its share of the tasks would otherwise
/// fill the server's).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connections_tasks_end_with_it() {
    let left = Arc::new(Left::default());
    let server = ToolServer::new("reports")
        .with_tools(Arc::clone(&left))
        .unwrap()
        .with_max_tasks(1);
    let start = |id| tasks_request(id, "tools/call", json!({"name": "left", "arguments": {}}));
    let mut alice = Lines::initialized(server.clone()).await;
    alice.send(&start(2)).await;
    let started = alice.answer(2).await;
    assert!(started["result"]["taskId"].is_string(), "{started}");
    drop(alice);
    tokio::time::timeout(
        std::time::Duration::from_secs(60),
        left.cancelled.notified(),
    )
    .await
    .expect("the closed connection's task was cancelled");
    let mut bob = Lines::initialized(server).await;
    bob.send(&start(2)).await;
    let started = bob.answer(2).await;
    assert!(
        started["result"]["taskId"].is_string(),
        "the server's place was freed: {started}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_client_can_neither_read_nor_answer_nor_cancel_a_task() {
    let job = Arc::new(Job::default());
    let server = ToolServer::new("jobs")
        .with_tools(Arc::clone(&job))
        .unwrap();
    let url = format!("http://{}/mcp", serve_with(server, guarded_options()).await);
    let as_client = |token: &str, steps: Value| json!({"url": url, "mode": "auto", "token": token, "tasks": true, "steps": steps});
    // Alice starts the job as a task.
    let start =
        json!([{"op": "raw", "method": "tools/call", "params": {"name": "job", "arguments": {}}}]);
    let Some(seen) = python(as_client("token-of-alice", start)).await else {
        return;
    };
    assert_eq!(seen["protocol"], "2026-07-28", "{seen}");
    let id = seen["steps"][0]["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{seen}"))
        .to_owned();

    // Bob knows the id: every request about it is told there is no such task.
    let task = json!({"taskId": id});
    let answer =
        json!({"taskId": id, "inputResponses": {"q00": {"action": "accept", "content": {}}}});
    let probe = json!([
        {"op": "raw", "method": "tasks/get", "params": task},
        {"op": "raw", "method": "tasks/update", "params": answer},
        {"op": "raw", "method": "tasks/cancel", "params": task}
    ]);
    let seen = python(as_client("token-of-bob", probe)).await.unwrap();
    for step in 0..3 {
        let error = seen["steps"][step]["error"]
            .as_str()
            .unwrap_or_else(|| panic!("{seen}"));
        assert!(error.contains("no task"), "step {step}: {error}");
    }
    assert!(!seen.to_string().contains("private report"), "{seen}");
    assert_eq!(
        job.checks.load(Ordering::Relaxed),
        0,
        "Bob's poll resumed nothing"
    );
    assert_eq!(
        job.cancelled.load(Ordering::Relaxed),
        0,
        "Bob's cancel cancelled nothing"
    );

    // Alice, in a new session, still has it and reads her result.
    let get = json!([
        {"op": "raw", "method": "tasks/get", "params": task},
        {"op": "raw", "method": "tasks/get", "params": task}
    ]);
    let seen = python(as_client("token-of-alice", get)).await.unwrap();
    assert_eq!(seen["steps"][0]["result"]["status"], "working", "{seen}");
    assert_eq!(seen["steps"][1]["result"]["status"], "completed", "{seen}");
    assert!(
        seen["steps"][1].to_string().contains("the private report"),
        "{seen}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_naming_a_new_session_at_each_call_keeps_one_share_of_the_tasks() {
    // 2026-07-28 requests have no session: a header naming one is ignored, so it cannot give
    // a client a new share of the server's tasks at each call.
    let job = Arc::new(Job::default());
    let server = ToolServer::new("jobs")
        .with_tools(Arc::clone(&job))
        .unwrap()
        .with_max_tasks_per_client(2);
    let url = format!("http://{}/mcp", serve_with(server, guarded_options()).await);
    let start =
        json!([{"op": "raw", "method": "tools/call", "params": {"name": "job", "arguments": {}}}]);
    let mut outcomes = Vec::new();
    for session in ["s-1", "s-2", "s-3"] {
        let plan = json!({
            "url": url, "mode": "auto", "token": "token-of-alice", "tasks": true,
            "headers": {"Mcp-Session-Id": session}, "steps": start,
        });
        let Some(seen) = python(plan).await else {
            return;
        };
        assert_eq!(seen["protocol"], "2026-07-28", "{seen}");
        outcomes.push(seen["steps"][0].clone());
    }
    for started in &outcomes[..2] {
        assert!(started["result"]["taskId"].is_string(), "{started}");
    }
    // The third call is refused as an error result: the client's share is used.
    let refused = &outcomes[2]["result"];
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(
        refused.to_string().contains("this client has 2 tasks"),
        "{refused}"
    );
    // Another principal still has its own share.
    let plan =
        json!({"url": url, "mode": "auto", "token": "token-of-bob", "tasks": true, "steps": start});
    let seen = python(plan).await.unwrap();
    assert!(seen["steps"][0]["result"]["taskId"].is_string(), "{seen}");
}

/// A raw HTTP/1.1 exchange on an open connection: sends a keep-alive `POST` to a path that
/// is not the endpoint and reads the whole `404` (head and body).
async fn not_found_on(stream: &mut tokio::net::TcpStream, addr: std::net::SocketAddr) -> String {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let request = format!("POST /nope HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    let mut byte = [0u8; 1];
    while !response.ends_with(b"\r\n\r\n") {
        assert_eq!(
            stream.read(&mut byte).await.unwrap(),
            1,
            "closed mid-response"
        );
        response.push(byte[0]);
    }
    let head = String::from_utf8(response).unwrap();
    let length: usize = header(&head, "content-length").unwrap().parse().unwrap();
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).await.unwrap();
    format!("{head}{}", String::from_utf8(body).unwrap())
}

/// Reads until the server closes the connection; what it sent before. Fails the test instead
/// of hanging it when the server never closes (a passing run never comes near the guard).
async fn closed_by_server(stream: &mut tokio::net::TcpStream) -> String {
    use tokio::io::AsyncReadExt as _;
    let mut seen = Vec::new();
    let read = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        stream.read_to_end(&mut seen),
    );
    match read.await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        Ok(Err(e)) => panic!("reading failed: {e}"),
        Err(_) => panic!("the server never closed the connection"),
    }
    String::from_utf8_lossy(&seen).into_owned()
}

#[tokio::test]
async fn past_the_connection_limit_a_client_is_refused_and_the_others_go_on() {
    let options = HttpOptions::new().with_max_connections(2);
    let addr = serve_with(adder(), options).await;
    let mut first = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut second = tokio::net::TcpStream::connect(addr).await.unwrap();
    // Each has been answered, so each holds its place.
    assert!(
        not_found_on(&mut first, addr)
            .await
            .starts_with("HTTP/1.1 404")
    );
    assert!(
        not_found_on(&mut second, addr)
            .await
            .starts_with("HTTP/1.1 404")
    );
    let mut third = tokio::net::TcpStream::connect(addr).await.unwrap();
    let refused = closed_by_server(&mut third).await;
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused:?}");
    // The two open connections still work.
    assert!(
        not_found_on(&mut first, addr)
            .await
            .starts_with("HTTP/1.1 404")
    );
    assert!(
        not_found_on(&mut second, addr)
            .await
            .starts_with("HTTP/1.1 404")
    );
}

#[tokio::test]
async fn an_idle_connection_is_closed() {
    let options = HttpOptions::new().with_idle_timeout(std::time::Duration::from_millis(100));
    let addr = serve_with(adder(), options).await;
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    assert!(
        not_found_on(&mut stream, addr)
            .await
            .starts_with("HTTP/1.1 404")
    );
    assert_eq!(
        closed_by_server(&mut stream).await,
        "",
        "closed, without a word"
    );
}

#[tokio::test]
async fn a_connection_slow_to_send_its_request_is_closed() {
    use tokio::io::AsyncWriteExt as _;
    let options =
        HttpOptions::new().with_header_read_timeout(std::time::Duration::from_millis(100));
    let addr = serve_with(adder(), options).await;
    // Nothing at all.
    let mut silent = tokio::net::TcpStream::connect(addr).await.unwrap();
    closed_by_server(&mut silent).await;
    // Half a head, never finished.
    let mut slow = tokio::net::TcpStream::connect(addr).await.unwrap();
    slow.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .unwrap();
    closed_by_server(&mut slow).await;
    // After a response too.
    let mut again = tokio::net::TcpStream::connect(addr).await.unwrap();
    assert!(
        not_found_on(&mut again, addr)
            .await
            .starts_with("HTTP/1.1 404")
    );
    again.write_all(b"POST /mcp HTTP/1.1\r\n").await.unwrap();
    closed_by_server(&mut again).await;
}

/// A head, then too little of its body: the request fails at the body's deadline and the
/// connection closes, so such requests cannot use up the server's connections.
#[tokio::test]
async fn a_request_whose_body_never_comes_is_answered_and_its_connection_closed() {
    use tokio::io::AsyncWriteExt as _;
    let options = HttpOptions::new()
        .with_body_read_timeout(std::time::Duration::from_millis(200))
        .with_max_connections(1);
    let addr = serve_with(adder(), options).await;
    let mut stalled = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{{\"jsonrpc\""
    );
    stalled.write_all(head.as_bytes()).await.unwrap();
    let seen = closed_by_server(&mut stalled).await;
    assert!(seen.starts_with("HTTP/1.1 408"), "{seen}");
    assert!(seen.contains("with_body_read_timeout"), "{seen}");
    // Its place is free again: the one connection the server allows is answered.
    let mut next = tokio::net::TcpStream::connect(addr).await.unwrap();
    assert!(
        not_found_on(&mut next, addr)
            .await
            .starts_with("HTTP/1.1 404")
    );
}

/// One client address holding its limit of connections is refused one more, and the other
/// addresses are still served.
#[tokio::test]
async fn one_address_cannot_take_every_connection() {
    let addr = serve_with(adder(), HttpOptions::new().with_max_connections_per_peer(2)).await;
    let from = |ip: [u8; 4]| async move {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind((ip, 0).into()).unwrap();
        socket.connect(addr).await.unwrap()
    };
    let mut first = from([127, 0, 0, 1]).await;
    let mut second = from([127, 0, 0, 1]).await;
    for stream in [&mut first, &mut second] {
        assert!(not_found_on(stream, addr).await.starts_with("HTTP/1.1 404"));
    }
    let mut third = from([127, 0, 0, 1]).await;
    let refused = closed_by_server(&mut third).await;
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused:?}");
    let mut elsewhere = from([127, 0, 0, 2]).await;
    assert!(
        not_found_on(&mut elsewhere, addr)
            .await
            .starts_with("HTTP/1.1 404")
    );
    assert!(
        not_found_on(&mut first, addr)
            .await
            .starts_with("HTTP/1.1 404")
    );
}

/// Answers with more text than any socket buffers hold.
pub(crate) struct Flood;

#[tool]
impl Flood {
    /// Answers with 16 MiB of text
    async fn execute(&self) -> String {
        "x".repeat(16 << 20)
    }
}

/// One HTTP/1.1 exchange on an open keep-alive connection: sends a `POST` of `body` to `/mcp`
/// with `headers` and reads the whole response (by its length, or chunk by chunk); its head
/// and body.
async fn exchange(
    stream: &mut tokio::net::TcpStream,
    addr: std::net::SocketAddr,
    headers: &[(&str, &str)],
    body: &str,
) -> (String, String) {
    send_post(stream, addr, headers, body).await;
    read_response(stream).await
}

/// Reads one whole response on an open connection (by its length, or chunk by chunk); its
/// head and body.
async fn read_response(stream: &mut tokio::net::TcpStream) -> (String, String) {
    use tokio::io::AsyncReadExt as _;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(stream.read(&mut byte).await.unwrap(), 1, "closed mid-head");
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    let mut body = Vec::new();
    if let Some(length) = header(&head, "content-length") {
        body.resize(length.parse().unwrap(), 0);
        stream.read_exact(&mut body).await.unwrap();
    } else {
        while !body.ends_with(b"\r\n0\r\n\r\n") && !body.starts_with(b"0\r\n\r\n") {
            assert_eq!(stream.read(&mut byte).await.unwrap(), 1, "closed mid-body");
            body.push(byte[0]);
        }
    }
    (head, String::from_utf8(body).unwrap())
}

/// Writes a keep-alive `POST` of `body` to `/mcp` with `headers`.
async fn send_post(
    stream: &mut tokio::net::TcpStream,
    addr: std::net::SocketAddr,
    headers: &[(&str, &str)],
    body: &str,
) {
    use tokio::io::AsyncWriteExt as _;
    let mut request = format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!(
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    ));
    stream.write_all(request.as_bytes()).await.unwrap();
}

/// A client that calls a tool and stops reading its answer loses its connection once the
/// server's write has waited the stall timeout, though the call's response is still running:
/// the connection's place is free again. (The probe that finds the place free is refused
/// while the stalled connection holds it, and tries again; its guard fails the test when the
/// place never comes free.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_loses_its_connection() {
    let server = ToolServer::new("flood").with_tools(Flood).unwrap();
    let options = HttpOptions::new()
        .with_max_connections(1)
        .with_idle_timeout(std::time::Duration::from_secs(3600))
        .with_write_stall_timeout(std::time::Duration::from_millis(200));
    let addr = serve_with(server, options).await;
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stalled = socket.connect(addr).await.unwrap();
    let (head, _) = exchange(&mut stalled, addr, &[], INITIALIZE).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let session = header(&head, "mcp-session-id").unwrap().to_owned();
    let session = [
        ("Mcp-Session-Id", session.as_str()),
        ("Mcp-Protocol-Version", "2025-06-18"),
    ];
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let (head, _) = exchange(&mut stalled, addr, &session, initialized).await;
    assert!(head.starts_with("HTTP/1.1 202"), "{head}");
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"flood","arguments":{}}}"#;
    send_post(&mut stalled, addr, &session, call).await;
    // Never read again. The one place comes free once the server gives up on the write.
    let probe = async {
        loop {
            let mut next = tokio::net::TcpStream::connect(addr).await.unwrap();
            let answer = not_found_or_busy(&mut next, addr).await;
            if answer.starts_with("HTTP/1.1 404") {
                return;
            }
            assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(60), probe)
        .await
        .expect("the stalled connection kept its place");
    drop(stalled);
}

/// A session's own event stream (`GET`) ends at its lifetime, though the session lives on: a
/// client that opens it and never reads holds its connection no longer than that. (The guard
/// only turns a stream that never ends into a failure.)
#[tokio::test]
async fn an_event_stream_ends_at_its_lifetime() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let options =
        HttpOptions::new().with_max_event_stream_lifetime(std::time::Duration::from_millis(300));
    let addr = serve_with(adder(), options).await;
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (head, _) = exchange(&mut stream, addr, &[], INITIALIZE).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let session = header(&head, "mcp-session-id").unwrap().to_owned();
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let headers = [
        ("Mcp-Session-Id", session.as_str()),
        ("Mcp-Protocol-Version", "2025-06-18"),
    ];
    let (head, _) = exchange(&mut stream, addr, &headers, initialized).await;
    assert!(head.starts_with("HTTP/1.1 202"), "{head}");
    let get = format!(
        "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nMcp-Session-Id: {session}\r\n\
         Mcp-Protocol-Version: 2025-06-18\r\nAccept: text/event-stream\r\n\
         Connection: close\r\n\r\n"
    );
    let mut events = tokio::net::TcpStream::connect(addr).await.unwrap();
    events.write_all(get.as_bytes()).await.unwrap();
    let mut read = Vec::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(30),
        events.read_to_end(&mut read),
    )
    .await
    .expect("the event stream never ended")
    .unwrap();
    let read = String::from_utf8_lossy(&read);
    assert!(read.starts_with("HTTP/1.1 200"), "{read}");
    assert!(read.contains("text/event-stream"), "{read}");
    // The session lives on: the client calls a tool on it.
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}"#;
    let (head, body) = exchange(&mut stream, addr, &headers, call).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(body.contains(r#""text":"5""#), "{body}");
}

/// The head of the answer to a `POST` to a path that is not the endpoint: `404`, or the `503`
/// of a server with no place for the connection.
async fn not_found_or_busy(
    stream: &mut tokio::net::TcpStream,
    addr: std::net::SocketAddr,
) -> String {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let request = format!("POST /nope HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\n\r\n");
    // A refused connection may be closed before the request is written.
    let _ = stream.write_all(request.as_bytes()).await;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && matches!(stream.read(&mut byte).await, Ok(1)) {
        head.push(byte[0]);
    }
    String::from_utf8(head).unwrap()
}

/// A body larger than the server takes gets `413`, saying which setting it is.
#[tokio::test]
async fn a_body_past_the_size_limit_is_refused() {
    let addr = serve_with(
        adder(),
        HttpOptions::new().with_max_request_body_bytes(1000),
    )
    .await;
    let padded = INITIALIZE.replace("\"raw\"", &format!("\"{}\"", "r".repeat(2000)));
    let (status, head) = raw_post_of(addr, "/mcp", &[], &padded).await;
    assert_eq!(status, 413, "{head}");
    let (status, head) = raw_post(addr, "/mcp", &[]).await;
    assert_eq!(status, 200, "{head}");
}

/// A request whose JSON would cost many times its size once parsed gets `413` and is not
/// parsed; the server's limit lets a larger count through when the application says so.
#[tokio::test]
async fn a_request_of_too_many_json_values_is_refused_unparsed() {
    let values = "0,".repeat(300_000);
    let call = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"raw","version":"1"}},"padding":[{values}0]}}}}"#
    );
    let addr = serve_with(adder(), HttpOptions::new()).await;
    let (status, head) = raw_post_of(addr, "/mcp", &[], &call).await;
    assert_eq!(status, 413, "{head}");
    let addr = serve_with(
        adder(),
        HttpOptions::new().with_max_request_json_values(1 << 20),
    )
    .await;
    let (status, head) = raw_post_of(addr, "/mcp", &[], &call).await;
    assert_eq!(status, 200, "{head}");
}

/// Holds its call until the test lets it go.
#[derive(Default)]
pub(crate) struct Hold {
    started: tokio::sync::Notify,
    release: tokio::sync::Notify,
}

#[tool]
impl Hold {
    /// Holds until released
    async fn execute(&self) -> String {
        self.started.notify_one();
        self.release.notified().await;
        "released".to_owned()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_call_keeps_its_connection_past_the_idle_timeout() {
    let hold = Arc::new(Hold::default());
    let server = ToolServer::new("slow")
        .with_tools(Arc::clone(&hold))
        .unwrap();
    let idle = std::time::Duration::from_millis(50);
    let addr = serve_with(server, HttpOptions::new().with_idle_timeout(idle)).await;
    let client = McpServer::http(format!("http://{addr}/mcp"))
        .connect("slow")
        .await
        .unwrap();
    let peer = client.peer().clone();
    let call = tokio::spawn(async move {
        peer.call_tool(llm_tools_mcp::rmcp::model::CallToolRequestParams::new(
            "hold",
        ))
        .await
    });
    hold.started.notified().await;
    // Many idle timeouts pass while the call runs.
    tokio::time::sleep(idle * 10).await;
    hold.release.notify_one();
    let result = call.await.unwrap().unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(result.content[0].as_text().unwrap().text, "released");
}

#[tokio::test]
async fn past_the_session_limit_initialize_is_refused() {
    let addr = serve_with(adder(), HttpOptions::new().with_max_sessions(1)).await;
    let (status, head) = raw_post(addr, "/mcp", &[]).await;
    assert_eq!(status, 200);
    assert!(header(&head, "mcp-session-id").is_some(), "{head}");
    let (status, head) = raw_post(addr, "/mcp", &[]).await;
    assert_eq!(status, 500, "{head}");
}

/// A (2025) session is its opener's: another principal naming it is told there is no such
/// session, and its opener goes on using it.
#[tokio::test]
async fn a_session_answers_only_the_principal_that_opened_it() {
    let options = HttpOptions::new()
        .with_bearer_token("alice", "token-of-alice")
        .with_bearer_token("bob", "token-of-bob");
    let addr = serve_with(adder(), options).await;
    let alice = ("Authorization", "Bearer token-of-alice");
    let (status, head) = raw_post(addr, "/mcp", &[alice]).await;
    assert_eq!(status, 200, "{head}");
    let session = header(&head, "mcp-session-id").unwrap().to_owned();
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let bob = ("Authorization", "Bearer token-of-bob");
    let (status, head) = raw_post_of(
        addr,
        "/mcp",
        &[bob, ("Mcp-Session-Id", &session)],
        initialized,
    )
    .await;
    assert_eq!(status, 404, "{head}");
    let (status, head) = raw_post_of(
        addr,
        "/mcp",
        &[alice, ("Mcp-Session-Id", &session)],
        initialized,
    )
    .await;
    assert_eq!(status, 202, "{head}");
}

/// One principal keeps at most its share of sessions: one more `initialize` is refused and
/// its session closed, and the other principals still open theirs.
#[tokio::test]
async fn a_principal_keeps_at_most_its_share_of_sessions() {
    let options = HttpOptions::new()
        .with_bearer_token("alice", "token-of-alice")
        .with_bearer_token("bob", "token-of-bob")
        .with_max_sessions_per_principal(2);
    let addr = serve_with(adder(), options).await;
    let alice = ("Authorization", "Bearer token-of-alice");
    for _ in 0..2 {
        let (status, head) = raw_post(addr, "/mcp", &[alice]).await;
        assert_eq!(status, 200, "{head}");
    }
    let (status, head) = raw_post(addr, "/mcp", &[alice]).await;
    assert_eq!(status, 429, "{head}");
    assert!(header(&head, "mcp-session-id").is_none(), "{head}");
    let bob = ("Authorization", "Bearer token-of-bob");
    let (status, head) = raw_post(addr, "/mcp", &[bob]).await;
    assert_eq!(status, 200, "{head}");
}

/// A principal at its share is refused before the server makes a session for it, so however
/// many `initialize`s it sends at once it never takes one of the server's places (which would
/// turn the other principals away): with every place taken, its `initialize` is told of its
/// share, not of the server's limit. A place held for an `initialize` that opened no session
/// is given back.
#[tokio::test]
async fn a_principal_at_its_share_is_refused_before_a_session_is_made_for_it() {
    let options = HttpOptions::new()
        .with_bearer_token("alice", "token-of-alice")
        .with_bearer_token("bob", "token-of-bob")
        .with_bearer_token("carol", "token-of-carol")
        .with_max_sessions(3)
        .with_max_sessions_per_principal(1);
    let addr = serve_with(adder(), options).await;
    let alice = ("Authorization", "Bearer token-of-alice");
    let bob = ("Authorization", "Bearer token-of-bob");
    let carol = ("Authorization", "Bearer token-of-carol");
    // Carol's `initialize` that opens no session (not JSON-RPC 2.0) gives its place back.
    let broken = r#"{"jsonrpc":"1.0","id":1,"method":"initialize","params":{}}"#;
    let (status, head) = raw_post_of(addr, "/mcp", &[carol], broken).await;
    assert!(header(&head, "mcp-session-id").is_none(), "{status} {head}");
    for who in [alice, bob, carol] {
        let (status, head) = raw_post(addr, "/mcp", &[who]).await;
        assert_eq!(status, 200, "{head}");
    }
    // Every place is taken: one more from a principal at its share is refused by its share.
    for who in [alice, bob] {
        let (status, head) = raw_post(addr, "/mcp", &[who]).await;
        assert_eq!(status, 429, "{head}");
        assert!(header(&head, "mcp-session-id").is_none(), "{head}");
    }
}

/// The environment variable that makes [`serves_with_few_file_descriptors`] a server.
const CHILD: &str = "LLM_TOOLS_HOSTILE_SERVING_CHILD";

/// The child process of [`accept_errors_do_not_end_serving`]: run by it alone, with a low
/// limit of open files, it serves and prints its port.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by accept_errors_do_not_end_serving as its child process"]
async fn serves_with_few_file_descriptors() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter("llm_tools::mcp=warn")
        .init();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    // The parent reads the port from this line.
    #[allow(clippy::print_stdout)]
    {
        println!("port {}", listener.local_addr().unwrap().port());
    }
    let options = HttpOptions::new().with_max_connections(100_000);
    adder().serve_http_with(listener, options).await.unwrap();
}

/// A test's full name for the child's `--exact` filter: `<module>::<test>`, this file being a
/// module of its area's test binary.
fn full_name(test: &str) -> String {
    match module_path!().split_once("::") {
        Some((_, module)) => format!("{module}::{test}"),
        None => test.to_owned(),
    }
}

#[test]
fn accept_errors_do_not_end_serving() {
    use std::io::BufRead as _;
    // This test binary again, as the server, under a limit of 64 open files.
    let mut child = std::process::Command::new("sh")
        .args(["-c", "ulimit -n 64 && exec \"$0\" \"$@\""])
        .arg(std::env::current_exe().unwrap())
        .arg(full_name("serves_with_few_file_descriptors"))
        .args(["--exact", "--ignored", "--nocapture"])
        .env(CHILD, "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let port = loop {
        let mut line = String::new();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "the child printed no port"
        );
        if let Some(port) = line.trim().strip_prefix("port ") {
            break port.parse::<u16>().unwrap();
        }
    };
    let (logged, log) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if logged.send(line).is_err() {
                break;
            }
        }
    });
    // More connections than it has descriptors: its accept fails, as it says.
    let held: Vec<std::net::TcpStream> = (0..100)
        .map(|_| std::net::TcpStream::connect(("127.0.0.1", port)).unwrap())
        .collect();
    let failure = loop {
        let line = log
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the server never failed to accept");
        if line.contains("accepting a connection failed") {
            break line;
        }
    };
    assert!(failure.contains("Too many open files"), "{failure}");
    drop(held);
    // It still serves.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let (status, _) = runtime.block_on(raw_post(addr, "/mcp", &[]));
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(status, 200);
}

/// Tells the id of its call, after asking for a word when `ask` is set; remembers every id it
/// ran under.
#[derive(Default)]
pub(crate) struct WhoAmI {
    ran_as: std::sync::Mutex<Vec<String>>,
}

#[tool]
impl WhoAmI {
    /// Tells the call's id
    ///
    /// # Arguments
    /// * `ask` - Ask the user for a word first
    async fn execute(&self, ask: bool, ctx: &ToolContext) -> Result<String, ToolError> {
        self.ran_as.lock().unwrap().push(ctx.call_id().to_owned());
        if ask {
            let question = Question::new("A word?")
                .required_field("word", json!({"type": "string", "default": "hi"}));
            ctx.ask(question).await?;
        }
        Ok(ctx.call_id().to_owned())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_numbering_their_requests_alike_get_calls_of_different_ids() {
    let who = Arc::new(WhoAmI::default());
    let url = serve(ToolServer::new("ids").with_tools(Arc::clone(&who)).unwrap()).await;
    for mode in LIFECYCLES {
        let mut ids = Vec::new();
        // Two clients, each numbering its requests from the start: the same JSON-RPC ids.
        for _ in 0..2 {
            let call = json!([{"op": "call", "tool": "who_am_i", "args": {"ask": false}}]);
            let plan = json!({"url": url, "mode": mode, "steps": call});
            let Some(seen) = python(plan).await else {
                return;
            };
            let (is_error, id) = call_result(&seen, 0);
            assert!(!is_error, "{mode}: {seen}");
            ids.push(id);
        }
        assert_ne!(ids[0], ids[1], "{mode}");
        for id in &ids {
            let bits = id
                .strip_prefix("call-")
                .unwrap_or_else(|| panic!("{mode}: {id}"));
            assert_eq!(bits.len(), 32, "{mode}: 128 random bits: {id}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_asks_keeps_its_id_in_every_round() {
    let who = Arc::new(WhoAmI::default());
    let url = serve(ToolServer::new("ids").with_tools(Arc::clone(&who)).unwrap()).await;
    // On 2026-07-28 the question ends a round, and the client sends the call again.
    let call = json!([{"op": "call", "tool": "who_am_i", "args": {"ask": true}}]);
    let plan = json!({"url": url, "mode": "auto", "elicit": "approve", "steps": call});
    let Some(seen) = python(plan).await else {
        return;
    };
    assert_eq!(seen["protocol"], "2026-07-28");
    let (is_error, id) = call_result(&seen, 0);
    assert!(!is_error, "{seen}");
    let ran_as = who.ran_as.lock().unwrap().clone();
    assert_eq!(ran_as, [id.clone(), id], "both rounds ran as one call");
}

/// Fails with an internal error that names what the client must not learn.
#[tool]
async fn leaky() -> Result<String, std::io::Error> {
    Err(std::io::Error::other(
        "cannot open /srv/secrets/db.key on db.internal:5432",
    ))
}

/// Everything the server logs on this thread, kept to read.
#[derive(Clone, Default)]
struct Captured(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_fatal_error_reaches_the_log_and_not_the_client() {
    llm_tools_tests::run_alone("child_a_fatal_error_reaches_the_log_and_not_the_client", 1);
}

// One thread runs the server, so the log of this thread is the server's; the test runs in a
// process of its own (see `llm_tools_tests::run_alone`).
#[tokio::test(flavor = "current_thread")]
#[ignore = "run in a process of its own by a_fatal_error_reaches_the_log_and_not_the_client"]
async fn child_a_fatal_error_reaches_the_log_and_not_the_client() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _logging = tracing::subscriber::set_default(subscriber);
    let url = serve(ToolServer::new("leaky").with_tools(Leaky).unwrap()).await;
    for mode in LIFECYCLES {
        let call = json!([{"op": "call", "tool": "leaky", "args": {}}]);
        let plan = json!({"url": url, "mode": mode, "steps": call});
        let Some(seen) = python(plan).await else {
            return;
        };
        let (is_error, text) = call_result(&seen, 0);
        assert!(is_error, "{mode}: {seen}");
        assert!(text.contains("internal error"), "{mode}: {text}");
        let everything = seen.to_string();
        for secret in ["/srv/secrets", "db.internal", "5432"] {
            assert!(
                !everything.contains(secret),
                "{mode}: {secret} reached the client: {everything}"
            );
        }
    }
    let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(
        log.contains("cannot open /srv/secrets/db.key on db.internal:5432")
            && log.contains("call-"),
        "the log has the error and the call's id: {log}"
    );
}

/// A client writing raw JSON-RPC lines to one connection of a server (an in-memory duplex, as
/// stdio), and reading its answers.
struct Lines {
    write: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    read: tokio::io::BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>,
    /// Answers read while waiting for another, by id.
    early: std::collections::HashMap<u64, Value>,
    /// The server's side, running until the test ends.
    _served: tokio::task::JoinHandle<()>,
}

/// The `_meta` of a 2026-07-28 request (no session: each request says who it is).
fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    })
}

impl Lines {
    /// A connection to `server` (served as stdio is), not yet initialized.
    fn open(server: ToolServer) -> Self {
        let (ours, theirs) = tokio::io::duplex(1 << 16);
        let served = tokio::spawn(async move {
            let (read, write) = tokio::io::split(theirs);
            if let Ok(running) = server.serve_io(read, write).await {
                let _ = running.waiting().await;
            }
        });
        let (read, write) = tokio::io::split(ours);
        Self {
            write,
            read: tokio::io::BufReader::new(read),
            early: std::collections::HashMap::new(),
            _served: served,
        }
    }

    /// A connection to `server` with a 2025 session opened (`initialize`).
    async fn initialized(server: ToolServer) -> Self {
        let mut lines = Self::open(server);
        lines
            .send(&serde_json::from_str::<Value>(INITIALIZE).unwrap())
            .await;
        lines.answer(1).await;
        lines
            .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        lines
    }

    async fn send(&mut self, message: &Value) {
        self.send_text(&message.to_string()).await;
    }

    async fn send_text(&mut self, line: &str) {
        use tokio::io::AsyncWriteExt as _;
        self.write.write_all(line.as_bytes()).await.unwrap();
        self.write.write_all(b"\n").await.unwrap();
    }

    /// Sends a `tools/call` of `tool` as request `id`.
    async fn call(&mut self, id: u64, tool: &str, arguments: Value) {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}});
        self.send(&call).await;
    }

    /// The answer to request `id` (its `result` or `error`), skipping the server's
    /// notifications and keeping other answers for later. Fails the test instead of hanging it
    /// when no answer comes (a passing run never comes near the guard).
    async fn answer(&mut self, id: u64) -> Value {
        let answer = tokio::time::timeout(std::time::Duration::from_secs(60), self.read_answer(id));
        answer
            .await
            .unwrap_or_else(|_| panic!("no answer to request {id}"))
    }

    async fn read_answer(&mut self, id: u64) -> Value {
        use tokio::io::AsyncBufReadExt as _;
        loop {
            if let Some(answer) = self.early.remove(&id) {
                return answer;
            }
            let mut line = String::new();
            assert!(
                self.read.read_line(&mut line).await.unwrap() > 0,
                "the server closed the connection"
            );
            let message: Value = serde_json::from_str(&line).unwrap();
            if let Some(answered) = message["id"].as_u64()
                && message.get("method").is_none()
            {
                self.early.insert(answered, message);
            }
        }
    }
}

/// The text of a call's result, and whether it is an error result.
fn result_text(answer: &Value) -> (bool, String) {
    let result = &answer["result"];
    assert!(result.is_object(), "no result: {answer}");
    let text = result["content"]
        .as_array()
        .unwrap_or_else(|| panic!("no content: {answer}"))
        .iter()
        .filter_map(|block| block["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n");
    (result["isError"] == json!(true), text)
}

/// Waits until its call ends from outside (cancelled, or its client gone), counting the calls
/// running at once, the most ever seen, and how many ever started.
pub(crate) struct Crowd {
    running: tokio::sync::watch::Sender<u32>,
    most: AtomicU32,
    started: AtomicU32,
}

impl Default for Crowd {
    fn default() -> Self {
        Self {
            running: tokio::sync::watch::Sender::new(0),
            most: AtomicU32::new(0),
            started: AtomicU32::new(0),
        }
    }
}

/// One call of [`Crowd`] running; it stops counting when the call's future is dropped.
struct InCrowd<'c>(&'c Crowd);

impl Drop for InCrowd<'_> {
    fn drop(&mut self) {
        self.0.running.send_modify(|n| *n -= 1);
    }
}

impl Crowd {
    /// Waits until `n` calls run at once.
    async fn running(&self, n: u32) {
        let mut running = self.running.subscribe();
        running.wait_for(|now| *now == n).await.unwrap();
    }
}

#[tool]
impl Crowd {
    /// Waits until cancelled
    async fn execute(&self) -> String {
        self.started.fetch_add(1, Ordering::SeqCst);
        self.running.send_modify(|n| {
            *n += 1;
            self.most.fetch_max(*n, Ordering::SeqCst);
        });
        let _in = InCrowd(self);
        std::future::pending::<String>().await
    }
}

/// Calls [`Crowd`] from `client` (request ids from `first_id` on) until a call runs, `running`
/// calls of it then running at once. A place comes back when a call ends, just after its
/// tool's future is dropped, and a cancelled call is not answered: a call sent at once may
/// still be refused (with `refusal` in its text), and is sent again, for at most 10 seconds.
async fn call_until_it_runs(
    client: &mut Lines,
    crowd: &Crowd,
    first_id: u64,
    running: u32,
    refusal: &str,
) {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    for id in first_id.. {
        client.call(id, "crowd", json!({})).await;
        let refused = tokio::select! {
            () = crowd.running(running) => return,
            answer = client.answer(id) => answer,
        };
        let (is_error, text) = result_text(&refused);
        assert!(
            is_error && text.contains(refusal),
            "a call sent again: {text}"
        );
        assert!(
            tokio::time::Instant::now() < deadline,
            "the cancelled call never gave its place back"
        );
    }
}

/// One client holding its limit of calls running is refused more at once, its tool never
/// running for them; another client's calls still run, and a call the client cancels gives its
/// place back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_its_limit_of_calls_running_a_client_is_refused_and_the_others_still_run() {
    let crowd = Arc::new(Crowd::default());
    let server = ToolServer::new("crowd")
        .with_tools(Arc::clone(&crowd))
        .unwrap()
        .with_max_calls_in_flight_per_client(2);
    let mut alice = Lines::initialized(server.clone()).await;
    alice.call(10, "crowd", json!({})).await;
    alice.call(11, "crowd", json!({})).await;
    until_running(&crowd, 2, "alice's calls never ran").await;
    for id in 12..20 {
        alice.call(id, "crowd", json!({})).await;
    }
    for id in 12..20 {
        let (is_error, text) = result_text(&alice.answer(id).await);
        assert!(is_error, "{text}");
        assert!(
            text.contains("2 calls running")
                && text.contains("with_max_calls_in_flight_per_client"),
            "the refusal names the limit: {text}"
        );
    }
    assert_eq!(
        crowd.started.load(Ordering::SeqCst),
        2,
        "the refused calls never ran"
    );
    assert_eq!(crowd.most.load(Ordering::SeqCst), 2);
    // Another client (another connection) has places of its own.
    let mut bob = Lines::initialized(server).await;
    bob.call(10, "crowd", json!({})).await;
    until_running(&crowd, 3, "bob's call never ran").await;
    // A call alice cancels gives its place back.
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 10}});
    alice.send(&cancel).await;
    until_running(&crowd, 2, "the cancelled call kept running").await;
    // The place comes back when the call ends: a call of alice's runs again.
    call_until_it_runs(&mut alice, &crowd, 20, 3, "2 calls running").await;
    assert_eq!(
        crowd.started.load(Ordering::SeqCst),
        4,
        "the refused calls never ran"
    );
    assert_eq!(crowd.most.load(Ordering::SeqCst), 3);
}

/// The server's limit of calls running at once counts every client's: with one call each of
/// two clients running, a third client's call is refused (its tool never runs for it), and a
/// place comes back when a call ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_servers_limit_of_calls_running_every_client_is_refused() {
    let crowd = Arc::new(Crowd::default());
    let server = ToolServer::new("crowd")
        .with_tools(Arc::clone(&crowd))
        .unwrap()
        .with_max_calls_in_flight(2);
    let mut alice = Lines::initialized(server.clone()).await;
    let mut bob = Lines::initialized(server.clone()).await;
    let mut carol = Lines::initialized(server).await;
    alice.call(10, "crowd", json!({})).await;
    bob.call(10, "crowd", json!({})).await;
    until_running(&crowd, 2, "alice's and bob's calls never ran").await;
    carol.call(10, "crowd", json!({})).await;
    let (is_error, text) = result_text(&carol.answer(10).await);
    assert!(is_error, "{text}");
    assert!(
        text.contains("the server has 2 calls running")
            && text.contains("with_max_calls_in_flight"),
        "the refusal names the server's limit: {text}"
    );
    assert_eq!(
        crowd.started.load(Ordering::SeqCst),
        2,
        "carol's call never ran"
    );
    // Alice's call ends (cancelled): carol's next call runs, once the place is back.
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 10}});
    alice.send(&cancel).await;
    until_running(&crowd, 1, "the cancelled call kept running").await;
    call_until_it_runs(&mut carol, &crowd, 11, 2, "the server has 2 calls running").await;
    assert_eq!(crowd.started.load(Ordering::SeqCst), 3);
}

/// Holds a note until released: a permit of `started` for each call that runs, one of
/// `release` taken by each to finish.
pub(crate) struct HoldNote {
    started: tokio::sync::Semaphore,
    release: tokio::sync::Semaphore,
}

impl Default for HoldNote {
    fn default() -> Self {
        Self {
            started: tokio::sync::Semaphore::new(0),
            release: tokio::sync::Semaphore::new(0),
        }
    }
}

#[tool]
impl HoldNote {
    /// Holds a note until released
    ///
    /// # Arguments
    /// * `note` - The note to hold
    async fn execute(&self, note: String) -> String {
        self.started.add_permits(1);
        if let Ok(permit) = self.release.acquire().await {
            permit.forget();
        }
        format!("held {} bytes", note.len())
    }
}

/// The arguments a client's calls running hold are bounded in bytes: with 1 MiB of them, one
/// more call of 600 KB is refused at once (its tool never runs), a small one still runs, and
/// the bytes come back as calls end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clients_calls_running_hold_a_bounded_number_of_argument_bytes() {
    let hold = Arc::new(HoldNote::default());
    let server = ToolServer::new("notes")
        .with_tools(Arc::clone(&hold))
        .unwrap()
        .with_max_argument_bytes_in_flight_per_client(1 << 20);
    let mut client = Lines::initialized(server).await;
    let big = json!({"note": "n".repeat(600 * 1024)});
    client.call(2, "hold_note", big.clone()).await;
    within("the first call never ran", hold.started.acquire())
        .await
        .unwrap()
        .forget();
    client.call(3, "hold_note", big.clone()).await;
    let (is_error, text) = result_text(&client.answer(3).await);
    assert!(
        is_error && text.contains("with_max_argument_bytes_in_flight_per_client"),
        "{text}"
    );
    client.call(4, "hold_note", json!({"note": "small"})).await;
    within("the small call never ran", hold.started.acquire())
        .await
        .unwrap()
        .forget();
    hold.release.add_permits(2);
    for id in [2, 4] {
        let (is_error, text) = result_text(&client.answer(id).await);
        assert!(!is_error && text.starts_with("held"), "{text}");
    }
    client.call(5, "hold_note", big).await;
    within("the bytes never came back", hold.started.acquire())
        .await
        .unwrap()
        .forget();
    hold.release.add_permits(1);
    let (is_error, text) = result_text(&client.answer(5).await);
    assert!(!is_error, "{text}");
}

/// Asks one more question at each run, without end.
#[tool]
async fn nosy(ctx: &ToolContext) -> Result<String, ToolError> {
    for i in 0.. {
        let question = Question::new(format!("question {i}"))
            .required_field("word", json!({"type": "string"}));
        ctx.ask(question).await?;
    }
    Ok("never".into())
}

/// A 2026-07-28 `tools/call` of `tool` as request `id`, with the last round's state and answers.
fn modern_call(id: u64, tool: &str, state: Option<&Value>, responses: Value) -> Value {
    let mut params = json!({"name": tool, "arguments": {}, "_meta": modern_meta(),
        "inputResponses": responses});
    if let Some(state) = state {
        params["requestState"] = state.clone();
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

/// The keys of an `input_required` result's requests.
fn asked_keys(answer: &Value) -> Vec<String> {
    let result = &answer["result"];
    assert_eq!(result["resultType"], "input_required", "{answer}");
    let mut keys: Vec<String> = result["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    keys.sort();
    keys
}

/// A 2026-07-28 call that asks in every round, each answered, ends with an error result at the
/// question limit, as a call does in one request or as a task.
#[tokio::test]
async fn a_2026_call_asking_without_end_stops_at_the_question_limit() {
    let mut client = Lines::open(ToolServer::new("nosy").with_tools(Nosy).unwrap());
    let accept = json!({"action": "accept", "content": {"word": "yes"}});
    let mut state = None;
    let mut responses = json!({});
    let mut answered = 0;
    let last = loop {
        let id = answered + 1;
        client
            .send(&modern_call(id, "nosy", state.as_ref(), responses))
            .await;
        let answer = client.answer(id).await;
        if answer["result"]["resultType"] != "input_required" {
            break answer;
        }
        assert!(answered < 16, "asked past the limit: {answer}");
        let keys = asked_keys(&answer);
        assert_eq!(keys, [format!("q{answered:02}")], "one question, the next");
        responses = json!({ keys[0].clone(): accept });
        state = Some(answer["result"]["requestState"].clone());
        answered += 1;
    };
    assert_eq!(answered, 16);
    let (is_error, text) = result_text(&last);
    assert!(
        is_error && text.contains("asked more than 16 questions"),
        "{last}"
    );
}

/// Asks where to deploy (a required field) and how many replicas (a default of 2).
#[tool]
async fn deploy_where(ctx: &ToolContext) -> Result<String, ToolError> {
    let answer = ctx
        .ask(
            Question::new("Deploy where?")
                .required_field("region", json!({"type": "string"}))
                .field("replicas", json!({"type": "integer", "default": 2})),
        )
        .await?;
    Ok(format!(
        "region={:?} replicas={:?}",
        answer.get_str("region"),
        answer.get("replicas").and_then(Value::as_u64)
    ))
}

/// A client's answer reaches the tool as a chat's does: defaults filled in, and one that
/// leaves a required field out is an error naming it (the tool never runs on it).
#[tokio::test]
async fn a_clients_answer_missing_a_required_field_is_refused_and_defaults_are_filled() {
    for (given, expected) in [
        (json!({}), (true, "missing required field(s): region")),
        (
            json!({"region": "eu"}),
            (false, "region=Some(\"eu\") replicas=Some(2)"),
        ),
    ] {
        let mut client = Lines::open(ToolServer::new("ops").with_tools(DeployWhere).unwrap());
        client
            .send(&modern_call(1, "deploy_where", None, json!({})))
            .await;
        let asked = client.answer(1).await;
        let keys = asked_keys(&asked);
        let state = asked["result"]["requestState"].clone();
        let responses = json!({ keys[0].clone(): {"action": "accept", "content": given} });
        client
            .send(&modern_call(2, "deploy_where", Some(&state), responses))
            .await;
        let (is_error, text) = result_text(&client.answer(2).await);
        assert_eq!(is_error, expected.0, "{text}");
        assert!(text.contains(expected.1), "{text}");
    }
}

/// Answers a 2026-07-28 client sends to questions the tool never asked are ignored: the tool
/// asks its first question.
#[tokio::test]
async fn answers_to_questions_never_asked_are_ignored() {
    let mut client = Lines::open(ToolServer::new("nosy").with_tools(Nosy).unwrap());
    let accept = json!({"action": "accept", "content": {"word": "yes"}});
    let prefilled: serde_json::Map<String, Value> = (0..=40)
        .map(|i| (format!("q{i:02}"), accept.clone()))
        .collect();
    client
        .send(&modern_call(
            1,
            "nosy",
            None,
            Value::Object(prefilled.clone()),
        ))
        .await;
    let first = client.answer(1).await;
    assert_eq!(asked_keys(&first), ["q00"], "{first}");
    // Answered, the next round takes the answer to q00 alone, and asks q01.
    let state = first["result"]["requestState"].clone();
    client
        .send(&modern_call(
            2,
            "nosy",
            Some(&state),
            Value::Object(prefilled),
        ))
        .await;
    assert_eq!(asked_keys(&client.answer(2).await), ["q01"]);
}

/// An export job whose check asks the user which format, counting how often it started and
/// how often its work was stopped. While the question has no answer, its check gives the error
/// `ask` returns, or (`keeps_its_task`) its task back, still working.
#[derive(Default)]
pub(crate) struct AskingExport {
    keeps_its_task: bool,
    started: AtomicU32,
    cancelled: AtomicU32,
}

#[tool]
impl AskingExport {
    /// Exports the ledger
    async fn execute(&self) -> llm_tools_core::Task {
        self.started.fetch_add(1, Ordering::SeqCst);
        llm_tools_core::Task::working("exporting")
            .with_poll_interval(std::time::Duration::from_millis(10))
    }

    async fn resume(
        &self,
        task: llm_tools_core::Task,
        ctx: &ToolContext,
    ) -> llm_tools_core::ToolOutcome {
        let question = Question::new("Which format?")
            .required_field("format", json!({"type": "string", "enum": ["csv", "pdf"]}));
        match ctx.ask(question).await {
            Ok(answer) => {
                llm_tools_core::ToolOutcome::Output(llm_tools_core::ToolOutput::text(format!(
                    "exported as {}",
                    answer.get_str("format").unwrap_or("nothing")
                )))
            }
            Err(_) if self.keeps_its_task => llm_tools_core::ToolOutcome::Task(task),
            Err(error) => llm_tools_core::ToolOutcome::Error(error),
        }
    }

    async fn cancel(&self, _task: llm_tools_core::Task) {
        self.cancelled.fetch_add(1, Ordering::SeqCst);
    }
}

/// A 2026-07-28 client without the tasks extension calls `export`: the question its check
/// asks is the client's, and the answer goes to the same task, checked again: the export
/// started once, and no work was stopped.
async fn a_2026_task_asking_while_checked_is_checked_again_with_the_answer(export: AskingExport) {
    let export = Arc::new(export);
    let mut client = Lines::open(
        ToolServer::new("ledger")
            .with_tools(Arc::clone(&export))
            .unwrap(),
    );
    client
        .send(&modern_call(1, "asking_export", None, json!({})))
        .await;
    let asked = client.answer(1).await;
    assert_eq!(asked_keys(&asked), ["q00"], "{asked}");
    let state = asked["result"]["requestState"].clone();
    let pdf = json!({"q00": {"action": "accept", "content": {"format": "pdf"}}});
    client
        .send(&modern_call(2, "asking_export", Some(&state), pdf))
        .await;
    let done = client.answer(2).await;
    assert_eq!(result_text(&done), (false, "exported as pdf".to_owned()));
    assert_eq!(export.started.load(Ordering::SeqCst), 1, "started once");
    assert_eq!(
        export.cancelled.load(Ordering::SeqCst),
        0,
        "nothing stopped"
    );
}

#[tokio::test]
async fn a_2026_task_whose_check_asks_is_checked_again_with_the_answer() {
    a_2026_task_asking_while_checked_is_checked_again_with_the_answer(AskingExport::default())
        .await;
}

#[tokio::test]
async fn a_2026_task_whose_check_asks_and_goes_on_working_is_checked_again_with_the_answer() {
    a_2026_task_asking_while_checked_is_checked_again_with_the_answer(AskingExport {
        keeps_its_task: true,
        ..AskingExport::default()
    })
    .await;
}

/// The task a 2026-07-28 client's answer would go to is kept among the client's tasks: at its
/// limit of tasks, the call ends with an error naming the limit, and the task's work is
/// stopped.
#[tokio::test]
async fn a_2026_task_whose_check_asks_past_the_clients_task_limit_is_stopped() {
    let export = Arc::new(AskingExport::default());
    let server = ToolServer::new("ledger")
        .with_tools(Arc::clone(&export))
        .unwrap()
        .with_max_tasks_per_client(0);
    let mut client = Lines::open(server);
    client
        .send(&modern_call(1, "asking_export", None, json!({})))
        .await;
    let (is_error, text) = result_text(&client.answer(1).await);
    assert!(
        is_error && text.contains("with_max_tasks_per_client"),
        "{text}"
    );
    assert_eq!(export.started.load(Ordering::SeqCst), 1);
    assert_eq!(
        export.cancelled.load(Ordering::SeqCst),
        1,
        "its work stopped"
    );
}

/// A 2025 session calls `export`: the question its check asks reaches the client's user in
/// place, and the answer goes to the same task: the export started once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_session_task_whose_check_asks_is_checked_again_with_the_answer() {
    for keeps_its_task in [false, true] {
        let export = Arc::new(AskingExport {
            keeps_its_task,
            ..AskingExport::default()
        });
        let server = ToolServer::new("ledger")
            .with_tools(Arc::clone(&export))
            .unwrap();
        let addr = serve_with(server, HttpOptions::default()).await;
        let client = McpServer::http(format!("http://{addr}/mcp"))
            .lifecycle(llm_tools_mcp::Lifecycle::Initialize)
            .on_elicitation(|_| async { llm_tools_core::Answer::accept(json!({"format": "pdf"})) })
            .connect("ledger")
            .await
            .unwrap();
        let outcome = llm_tools_tests::mcp::call(&client, "asking_export", json!({})).await;
        assert_eq!(
            llm_tools_tests::mcp::output_text(&outcome),
            "exported as pdf"
        );
        assert_eq!(export.started.load(Ordering::SeqCst), 1, "started once");
        assert_eq!(
            export.cancelled.load(Ordering::SeqCst),
            0,
            "nothing stopped"
        );
        client.close().await;
    }
}

/// Waits until `n` calls of `crowd` run at once; fails the test instead of hanging it when
/// they never do (a passing run never comes near the guard).
async fn until_running(crowd: &Crowd, n: u32, what: &str) {
    tokio::time::timeout(std::time::Duration::from_secs(60), crowd.running(n))
        .await
        .unwrap_or_else(|_| panic!("{what}"));
}

/// Reads `stream` until what came holds `text`, and returns what came; fails the test when
/// the stream ends first.
async fn read_until(stream: &mut tokio::net::TcpStream, text: &str) -> String {
    use tokio::io::AsyncReadExt as _;
    let mut came = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(
            n > 0,
            "the answer ended without `{text}`: {}",
            String::from_utf8_lossy(&came)
        );
        came.extend_from_slice(&chunk[..n]);
        if came.windows(text.len()).any(|w| w == text.as_bytes()) {
            return String::from_utf8_lossy(&came).into_owned();
        }
    }
}

/// A call of a 2025 session whose client hangs up before its response is cancelled once the
/// resume window passes, and gives its place among the client's calls back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_call_whose_client_hangs_up_is_cancelled() {
    use tokio::io::AsyncReadExt as _;
    let crowd = Arc::new(Crowd::default());
    let server = ToolServer::new("crowd")
        .with_tools(Arc::clone(&crowd))
        .unwrap()
        .with_max_calls_in_flight_per_client(1);
    let options = HttpOptions::new().with_resume_window(std::time::Duration::from_millis(100));
    let addr = serve_with(server, options).await;
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (head, _) = exchange(&mut stream, addr, &[], INITIALIZE).await;
    let session = header(&head, "mcp-session-id").unwrap().to_owned();
    let session = [
        ("Mcp-Session-Id", session.as_str()),
        ("Mcp-Protocol-Version", "2025-06-18"),
    ];
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let (head, _) = exchange(&mut stream, addr, &session, initialized).await;
    assert!(head.starts_with("HTTP/1.1 202"), "{head}");
    // A request id is used once in a session (as MCP requires): each call has its own.
    let mut id = 1;
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    for round in 1..=2 {
        // The place of round 1's call comes back when that call ends, just after its tool's
        // future is dropped (which the crowd sees), and a cancelled call is not answered: round
        // 2's call, sent at once, may still be refused, and is sent again until one runs.
        let calling = loop {
            id += 1;
            let call = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"crowd","arguments":{{}}}}}}"#
            );
            let mut calling = tokio::net::TcpStream::connect(addr).await.unwrap();
            send_post(&mut calling, addr, &session, &call).await;
            let mut status = [0u8; 12];
            calling.read_exact(&mut status).await.unwrap();
            assert_eq!(&status, b"HTTP/1.1 200", "round {round}");
            let refused = tokio::select! {
                () = until_running(&crowd, 1, "the call never ran") => break calling,
                refused = read_until(&mut calling, "calls running") => refused,
            };
            assert!(round == 2, "round 1's call was refused: {refused}");
            assert!(
                tokio::time::Instant::now() < deadline,
                "the cancelled call never gave its place back"
            );
        };
        // The client hangs up.
        drop(calling);
        until_running(&crowd, 0, "the call kept running after its client hung up").await;
    }
    assert_eq!(
        crowd.started.load(Ordering::SeqCst),
        2,
        "the cancelled call gave its place back"
    );
}

/// Echoes its numbers, counting its runs.
#[derive(Default)]
pub(crate) struct Echo {
    ran: AtomicU32,
}

#[tool]
impl Echo {
    /// Echoes numbers
    ///
    /// # Arguments
    /// * `items` - The numbers
    async fn execute(&self, items: Vec<u64>) -> String {
        self.ran.fetch_add(1, Ordering::SeqCst);
        format!("{items:?}")
    }
}

/// Over stdio, a request whose JSON would cost many times its size once parsed is answered
/// with an error naming the limit, unparsed, and the session goes on.
#[tokio::test]
async fn a_stdio_request_of_too_many_json_values_is_refused_unparsed_and_the_session_goes_on() {
    let echo = Arc::new(Echo::default());
    let server = ToolServer::new("echo")
        .with_tools(Arc::clone(&echo))
        .unwrap();
    let mut client = Lines::initialized(server).await;
    // Some 2 MiB: within the line limit, four times the values a message may hold.
    let dense = format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{{"name":"echo","arguments":{{"items":[{}0]}}}}}}"#,
        "0,".repeat(1 << 20)
    );
    client.send_text(&dense).await;
    let refused = client.answer(5).await;
    let message = refused["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("{refused}"));
    assert!(
        message.contains("262144 JSON values")
            && message.contains("DEFAULT_MAX_REQUEST_JSON_VALUES"),
        "{message}"
    );
    assert_eq!(echo.ran.load(Ordering::SeqCst), 0, "the tool never ran");
    client.call(6, "echo", json!({"items": [1, 2]})).await;
    assert_eq!(
        result_text(&client.answer(6).await),
        (false, "[1, 2]".to_owned())
    );
    assert_eq!(echo.ran.load(Ordering::SeqCst), 1);
}

/// An authorization hook that never decides holds no request past its time: the request gets
/// `503`.
#[tokio::test]
async fn an_authorization_hook_that_never_decides_gets_503() {
    let options = HttpOptions::new()
        .with_authorization(|_| std::future::pending::<Access>())
        .with_authorization_timeout(std::time::Duration::from_millis(100));
    let addr = serve_with(adder(), options).await;
    // The guard turns a request held forever into a failure; a passing run never comes near it.
    let answered = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        raw_post(addr, "/mcp", &[]),
    );
    let (status, head) = answered
        .await
        .expect("the request was held past the hook's time");
    assert_eq!(status, 503, "{head}");
    assert_eq!(header(&head, "retry-after"), Some("1"), "{head}");
}

/// An authorization hook that panics, making its future or while the future runs, decides
/// nothing: the request gets `503` as past the hook's time (no challenge: the client's
/// credentials were not found wanting), and the server goes on deciding the next requests.
#[tokio::test]
async fn an_authorization_hook_that_panics_answers_503_and_the_server_goes_on() {
    let options = HttpOptions::new().with_authorization(|headers| {
        let user = headers
            .get("x-user")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        assert_ne!(user.as_deref(), Some("before"), "the hook's own panic");
        async move {
            assert_ne!(user.as_deref(), Some("within"), "its future's panic");
            user.map_or(Access::Unauthorized, Access::granted)
        }
    });
    let addr = serve_with(adder(), options).await;
    for user in ["before", "within"] {
        let (status, head) = raw_post(addr, "/mcp", &[("X-User", user)]).await;
        assert_eq!(status, 503, "{user}: {head}");
        assert_eq!(header(&head, "retry-after"), Some("1"), "{user}: {head}");
        assert_eq!(header(&head, "www-authenticate"), None, "{user}: {head}");
    }
    assert_eq!(raw_post(addr, "/mcp", &[("X-User", "ada")]).await.0, 200);
    assert_eq!(raw_post(addr, "/mcp", &[]).await.0, 401);
}

/// Keeps a note while it works, until its first check.
pub(crate) struct Hoard;

#[tool]
impl Hoard {
    /// Keeps a note
    ///
    /// # Arguments
    /// * `note` - The note
    async fn execute(&self, note: String) -> llm_tools_core::Task {
        llm_tools_core::Task::working(format!("keeping {} bytes", note.len()))
    }

    async fn resume(&self, _task: llm_tools_core::Task, note: String) -> String {
        format!("kept {} bytes", note.len())
    }
}

/// The `_meta` of a 2026-07-28 request from a client of the tasks extension.
fn tasks_meta() -> Value {
    let mut meta = modern_meta();
    meta["io.modelcontextprotocol/clientCapabilities"]["extensions"] =
        json!({"io.modelcontextprotocol/tasks": {}});
    meta
}

/// A 2026-07-28 request `method` of a client of the tasks extension, as request `id`.
fn tasks_request(id: u64, method: &str, mut params: Value) -> Value {
    params["_meta"] = tasks_meta();
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// Calls [`Hoard`] with a note `bytes` long as request `id`; the id of the task it started,
/// or the text of the error result it got instead.
async fn hoard(client: &mut Lines, id: u64, bytes: usize) -> Result<String, String> {
    let arguments = json!({"note": "n".repeat(bytes)});
    let call = tasks_request(
        id,
        "tools/call",
        json!({"name": "hoard", "arguments": arguments}),
    );
    client.send(&call).await;
    let answer = client.answer(id).await;
    if let Some(task) = answer["result"]["taskId"].as_str() {
        return Ok(task.to_owned());
    }
    let (is_error, text) = result_text(&answer);
    assert!(is_error, "{answer}");
    Err(text)
}

/// The tasks a client keeps hold at most its share of bytes of arguments: one more task is
/// refused with an error result naming the limit and keeps nothing, another client's task still
/// starts, and a task cancelled or finished gives its bytes back.
#[tokio::test]
async fn tasks_past_the_bytes_a_client_keeps_are_refused_and_the_others_still_start() {
    let server = ToolServer::new("hoard")
        .with_tools(Hoard)
        .unwrap()
        .with_max_task_bytes_per_client(2_100);
    // Two notes of 1,000 bytes fit (each call's arguments some 1,011 bytes); a third does not.
    let mut alice = Lines::open(server.clone());
    let first = hoard(&mut alice, 1, 1_000).await.unwrap();
    let second = hoard(&mut alice, 2, 1_000).await.unwrap();
    let refused = hoard(&mut alice, 3, 1_000).await.unwrap_err();
    assert!(
        refused.contains("2100 bytes") && refused.contains("with_max_task_bytes_per_client"),
        "the refusal names the limit: {refused}"
    );
    // Another client (another connection) has its own share.
    let mut bob = Lines::open(server);
    hoard(&mut bob, 1, 1_000).await.unwrap();
    // A task cancelled gives its bytes back.
    let cancel = tasks_request(4, "tasks/cancel", json!({"taskId": first}));
    alice.send(&cancel).await;
    let cancelled = alice.answer(4).await;
    assert!(cancelled.get("error").is_none(), "{cancelled}");
    hoard(&mut alice, 5, 1_000).await.unwrap();
    assert!(
        hoard(&mut alice, 6, 1_000).await.is_err(),
        "the share is used again"
    );
    // So does a task that finished, though its result is kept.
    let get = tasks_request(7, "tasks/get", json!({"taskId": second}));
    alice.send(&get).await;
    let done = alice.answer(7).await;
    assert!(done.to_string().contains("kept 1000 bytes"), "{done}");
    hoard(&mut alice, 8, 1_000).await.unwrap();
}

/// Keeps a note and gives it back whole: a result as large as the arguments.
pub(crate) struct Copier;

#[tool]
impl Copier {
    /// Copies a note
    ///
    /// # Arguments
    /// * `note` - The note
    async fn execute(&self, note: String) -> llm_tools_core::Task {
        llm_tools_core::Task::working(format!("copying {} bytes", note.len()))
    }

    async fn resume(&self, _task: llm_tools_core::Task, note: String) -> String {
        note
    }
}

/// Calls [`Copier`] with a note of 1,000 bytes as request `id`: the id of the task it started,
/// or the text of the error result it got instead.
async fn copy_note(client: &mut Lines, id: u64) -> Result<String, String> {
    let call = tasks_request(
        id,
        "tools/call",
        json!({"name": "copier", "arguments": {"note": "n".repeat(1_000)}}),
    );
    client.send(&call).await;
    let answer = client.answer(id).await;
    match answer["result"]["taskId"].as_str() {
        Some(task) => Ok(task.to_owned()),
        None => Err(result_text(&answer).1),
    }
}

/// A finished task's result is kept until its TTL, and counts with what the client's tasks
/// keep: a client whose finished results fill its share cannot start more tasks, and a result
/// past the share is replaced by an error naming the limit (before, results were kept
/// uncounted, a client's share many times over).
#[tokio::test]
async fn finished_results_count_with_the_bytes_a_client_keeps() {
    let server = ToolServer::new("copier")
        .with_tools(Copier)
        .unwrap()
        .with_max_task_bytes_per_client(2_100);
    let mut alice = Lines::open(server);
    let first = copy_note(&mut alice, 1).await.unwrap();
    let get = tasks_request(2, "tasks/get", json!({"taskId": first}));
    alice.send(&get).await;
    let done = alice.answer(2).await;
    assert!(done.to_string().contains(&"n".repeat(1_000)), "{done}");
    // The first result (some 1,060 bytes) and a second call's arguments (some 1,011) fit.
    let second = copy_note(&mut alice, 3).await.unwrap();
    let refused = copy_note(&mut alice, 4).await.unwrap_err();
    assert!(
        refused.contains("2100 bytes") && refused.contains("results"),
        "the refusal names the limit: {refused}"
    );
    // The second result would pass the share: an error naming the limit is kept instead.
    let get = tasks_request(5, "tasks/get", json!({"taskId": second}));
    alice.send(&get).await;
    let done = alice.answer(5).await.to_string();
    assert!(
        done.contains("is not kept") && done.contains("with_max_task_bytes_per_client"),
        "{done}"
    );
    assert!(!done.contains(&"n".repeat(1_000)), "{done}");
}

/// A session opened with `initialize` on `stream` with `credentials` (headers, perhaps none),
/// and `notifications/initialized` sent: the headers its requests carry.
async fn open_session(
    stream: &mut tokio::net::TcpStream,
    addr: std::net::SocketAddr,
    credentials: &[(&'static str, &str)],
) -> Vec<(&'static str, String)> {
    let (head, _) = exchange(stream, addr, credentials, INITIALIZE).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let session = header(&head, "mcp-session-id").unwrap().to_owned();
    let mut headers: Vec<(&'static str, String)> = credentials
        .iter()
        .map(|(name, value)| (*name, (*value).to_owned()))
        .collect();
    headers.push(("Mcp-Session-Id", session));
    headers.push(("Mcp-Protocol-Version", "2025-06-18".to_owned()));
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let (head, _) = exchange(stream, addr, &borrowed(&headers), initialized).await;
    assert!(head.starts_with("HTTP/1.1 202"), "{head}");
    headers
}

fn borrowed<'h>(headers: &'h [(&'static str, String)]) -> Vec<(&'static str, &'h str)> {
    headers
        .iter()
        .map(|(name, value)| (*name, value.as_str()))
        .collect()
}

/// Fails the test instead of hanging it when `future` never ends (a passing run never comes
/// near the guard).
async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(std::time::Duration::from_secs(60), future)
        .await
        .unwrap_or_else(|_| panic!("{what}"))
}

/// A request of a 2025 session whose id is the id of one of the session's requests still
/// unanswered is refused, its tool never running, and the first request gets its answer; once
/// it has, the id is free again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_whose_id_is_still_unanswered_in_its_session_is_refused_and_the_first_answered() {
    let hold = Arc::new(Hold::default());
    let echo = Arc::new(Echo::default());
    let server = ToolServer::new("ids")
        .with_tools((Arc::clone(&hold), Arc::clone(&echo)))
        .unwrap();
    let addr = serve_with(server, HttpOptions::new()).await;
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let headers = open_session(&mut stream, addr, &[]).await;
    let session = borrowed(&headers);
    let slow =
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"hold","arguments":{}}}"#;
    let fast = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"items":[1]}}}"#;
    let mut first = tokio::net::TcpStream::connect(addr).await.unwrap();
    send_post(&mut first, addr, &session, slow).await;
    within("the first call never ran", hold.started.notified()).await;
    let (head, refused) = within(
        "the second request was not answered",
        exchange(&mut stream, addr, &session, fast),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        refused.contains(r#""id":7"#) && refused.contains("still unanswered"),
        "{refused}"
    );
    assert_eq!(
        echo.ran.load(Ordering::SeqCst),
        0,
        "the refused call never ran"
    );
    hold.release.notify_one();
    let (head, answered) = within(
        "the first call's response stream never answered",
        read_response(&mut first),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(answered.contains(r#""text":"released""#), "{answered}");
    let (_, again) = within(
        "the id was not free again",
        exchange(&mut stream, addr, &session, fast),
    )
    .await;
    assert!(again.contains(r#""text":"[1]""#), "{again}");
}

/// The response stream of a 2025 session's call that has not answered ends at the event
/// streams' lifetime, and the call, not taken up again within the resume window, is cancelled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_response_stream_ends_at_its_lifetime_and_its_call_is_cancelled() {
    let crowd = Arc::new(Crowd::default());
    let server = ToolServer::new("crowd")
        .with_tools(Arc::clone(&crowd))
        .unwrap();
    let options = HttpOptions::new()
        .with_max_event_stream_lifetime(std::time::Duration::from_millis(300))
        .with_resume_window(std::time::Duration::from_millis(100));
    let addr = serve_with(server, options).await;
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let headers = open_session(&mut stream, addr, &[]).await;
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"crowd","arguments":{}}}"#;
    let mut calling = tokio::net::TcpStream::connect(addr).await.unwrap();
    send_post(&mut calling, addr, &borrowed(&headers), call).await;
    until_running(&crowd, 1, "the call never ran").await;
    let (head, _) = within(
        "the response stream outlived its lifetime",
        read_response(&mut calling),
    )
    .await;
    assert!(head.contains("text/event-stream"), "{head}");
    until_running(&crowd, 0, "the call kept running after its stream ended").await;
}

/// Reports progress, then holds until released.
#[derive(Default)]
pub(crate) struct Paced {
    started: tokio::sync::Notify,
    release: tokio::sync::Notify,
}

#[tool]
impl Paced {
    /// Reports progress, then holds until released
    async fn execute(&self, ctx: &ToolContext) -> String {
        ctx.report_progress(1.0, Some(2.0), Some("started"));
        self.started.notify_one();
        self.release.notified().await;
        "released".to_owned()
    }
}

/// A request served without a session (its `_meta` holds the 2026-07-28 request keys) that
/// names an older protocol version, with a session id it made up: the `tools/call` of `tool`
/// as request `id`, and its headers.
fn sessionless_older_call(
    id: u64,
    tool: &str,
    arguments: Value,
    session: &str,
) -> (String, Vec<(&'static str, String)>) {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2025-06-18",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    });
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": meta}})
    .to_string();
    let headers = vec![
        ("Mcp-Session-Id", session.to_owned()),
        ("Mcp-Protocol-Version", "2025-06-18".to_owned()),
        ("Mcp-Method", "tools/call".to_owned()),
        ("Mcp-Name", tool.to_owned()),
    ];
    (call, headers)
}

/// Such a request's call that needs approval is refused at once, saying why: nothing can
/// reach the client to ask in place (the server sends no request back on a sessionless
/// exchange), and under its older version it takes no input requests. It used to wait its
/// whole time limit for an answer that could never come.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sessionless_call_under_an_older_version_is_told_it_cannot_be_asked() {
    let wipe = Arc::new(Wipe::default());
    let server = ToolServer::new("db")
        .with_tools(Arc::clone(&wipe))
        .unwrap()
        .with_max_run_time(std::time::Duration::from_secs(3600));
    let addr = serve_with(server, HttpOptions::new()).await;
    let (call, headers) = sessionless_older_call(2, "wipe", json!({"table": "users"}), "made-up");
    let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut calling = tokio::net::TcpStream::connect(addr).await.unwrap();
    send_post(&mut calling, addr, &headers, &call).await;
    let (head, answered) = within(
        "the call waited for an answer that cannot come",
        read_response(&mut calling),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        answered.contains("cannot carry the question") && answered.contains("did not run"),
        "{answered}"
    );
    assert_eq!(wipe.wiped.load(Ordering::Relaxed), 0);
}

/// A session id such a request names is not a session (it is neither checked nor used): a
/// client naming a new one at every call takes no new share of the calls running at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sessionless_call_naming_made_up_sessions_takes_no_new_share() {
    let paced = Arc::new(Paced::default());
    let server = ToolServer::new("slow")
        .with_tools(Arc::clone(&paced))
        .unwrap()
        .with_max_calls_in_flight_per_client(1);
    let addr = serve_with(server, HttpOptions::new()).await;
    let mut running = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (call, headers) = sessionless_older_call(2, "paced", json!({}), "session-a");
    let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    send_post(&mut running, addr, &headers, &call).await;
    within("the first call never ran", paced.started.notified()).await;
    let mut second = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (call, headers) = sessionless_older_call(3, "paced", json!({}), "session-b");
    let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    send_post(&mut second, addr, &headers, &call).await;
    let (_, refused) = within(
        "the second call was never answered",
        read_response(&mut second),
    )
    .await;
    assert!(
        refused.contains("maximum of calls running") || refused.contains("calls running"),
        "{refused}"
    );
    paced.release.notify_one();
    let (_, answered) = within("the first call never answered", read_response(&mut running)).await;
    assert!(answered.contains(r#""text":"released""#), "{answered}");
}

/// A 2026-07-28 call's response stream lasts as long as its call may, though the stream
/// lifetime is shorter: the request has no session to take a stream up again in, and a
/// session id it names (made up, or left over) is not one, so it does not shorten it. (The
/// call reports progress first, so the stream's head goes out before the answer.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_call_naming_a_session_keeps_its_response_stream_until_it_answers() {
    let paced = Arc::new(Paced::default());
    let server = ToolServer::new("slow")
        .with_tools(Arc::clone(&paced))
        .unwrap();
    let lifetime = std::time::Duration::from_millis(200);
    let addr = serve_with(
        server,
        HttpOptions::new().with_max_event_stream_lifetime(lifetime),
    )
    .await;
    let mut meta = modern_meta();
    meta["progressToken"] = json!("p-1");
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "paced", "arguments": {}, "_meta": meta}})
    .to_string();
    let mut calling = tokio::net::TcpStream::connect(addr).await.unwrap();
    let headers = [
        ("Mcp-Session-Id", "made-up"),
        ("Mcp-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "paced"),
    ];
    send_post(&mut calling, addr, &headers, &call).await;
    within("the call never ran", paced.started.notified()).await;
    // Many stream lifetimes pass while the call runs.
    tokio::time::sleep(lifetime * 5).await;
    paced.release.notify_one();
    let (head, answered) = within(
        "the call's response never came",
        read_response(&mut calling),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("text/event-stream"), "{head}");
    assert!(answered.contains("notifications/progress"), "{answered}");
    assert!(
        answered.contains(r#""text":"released""#),
        "the stream ended before the call answered: {answered}"
    );
}

/// A progress token longer than 256 bytes gets no progress reports (each would send it back):
/// a client's 1 MiB token does not make the server write a MiB per report.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_with_a_progress_token_past_the_bound_gets_no_reports() {
    let paced = Arc::new(Paced::default());
    let server = ToolServer::new("slow")
        .with_tools(Arc::clone(&paced))
        .unwrap();
    let addr = serve_with(server, HttpOptions::new()).await;
    let mut meta = modern_meta();
    meta["progressToken"] = json!("p".repeat(1 << 20));
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "paced", "arguments": {}, "_meta": meta}})
    .to_string();
    let mut calling = tokio::net::TcpStream::connect(addr).await.unwrap();
    let headers = [
        ("Mcp-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "paced"),
    ];
    send_post(&mut calling, addr, &headers, &call).await;
    within("the call never ran", paced.started.notified()).await;
    paced.release.notify_one();
    let (_, answered) = within(
        "the call's response never came",
        read_response(&mut calling),
    )
    .await;
    assert!(
        answered.contains(r#""text":"released""#),
        "{}",
        &answered[..answered.len().min(300)]
    );
    assert!(
        !answered.contains("notifications/progress"),
        "a report went out"
    );
    assert!(answered.len() < 64 * 1024, "{} bytes", answered.len());
}

/// Text a client sends that an error names (a task id, a tool name) is shown cut: a 1 MiB id or
/// name does not come back whole.
#[tokio::test]
async fn a_clients_long_task_id_or_tool_name_is_shown_cut_in_errors() {
    let mut client = Lines::initialized(ToolServer::new("nosy").with_tools(Nosy).unwrap()).await;
    client
        .send(&tasks_request(
            2,
            "tasks/get",
            json!({"taskId": "x".repeat(1 << 20)}),
        ))
        .await;
    let answer = client.answer(2).await;
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("no task `xxx"), "{answer}");
    assert!(message.len() < 1024, "{} bytes", message.len());
    client.call(3, &"y".repeat(1 << 20), json!({})).await;
    let (is_error, text) = result_text(&client.answer(3).await);
    assert!(
        is_error && text.starts_with("unknown tool `yyy"),
        "{}",
        &text[..text.len().min(200)]
    );
    assert!(text.len() < 1024, "{} bytes", text.len());
}

/// With authorization, a principal's calls running at once count across its sessions: one
/// holding its limit in two sessions is refused one more in either, and another principal's
/// calls still run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_its_limit_of_calls_running_a_principal_is_refused_in_every_session_of_it() {
    let crowd = Arc::new(Crowd::default());
    let server = ToolServer::new("crowd")
        .with_tools(Arc::clone(&crowd))
        .unwrap()
        .with_max_calls_in_flight_per_client(2);
    let addr = serve_with(server, guarded_options()).await;
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"crowd","arguments":{}}}"#;
    let alice = [("Authorization", "Bearer token-of-alice")];
    let mut control = tokio::net::TcpStream::connect(addr).await.unwrap();
    let first = open_session(&mut control, addr, &alice).await;
    let second = open_session(&mut control, addr, &alice).await;
    let mut running = Vec::new();
    for (n, session) in (1..).zip([&first, &second]) {
        let mut calling = tokio::net::TcpStream::connect(addr).await.unwrap();
        send_post(&mut calling, addr, &borrowed(session), call).await;
        until_running(&crowd, n, "alice's call never ran").await;
        running.push(calling);
    }
    let third = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"crowd","arguments":{}}}"#;
    for session in [&first, &second] {
        let (_, refused) = within(
            "alice's third call ran",
            exchange(&mut control, addr, &borrowed(session), third),
        )
        .await;
        assert!(
            refused.contains("2 calls running")
                && refused.contains("with_max_calls_in_flight_per_client"),
            "the refusal names the limit: {refused}"
        );
    }
    assert_eq!(
        crowd.started.load(Ordering::SeqCst),
        2,
        "the refused calls never ran"
    );
    // Another principal has places of its own.
    let bob = [("Authorization", "Bearer token-of-bob")];
    let theirs = open_session(&mut control, addr, &bob).await;
    let mut calling = tokio::net::TcpStream::connect(addr).await.unwrap();
    send_post(&mut calling, addr, &borrowed(&theirs), call).await;
    until_running(&crowd, 3, "bob's call never ran").await;
}
