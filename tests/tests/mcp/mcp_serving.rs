//! `#[tool]`s served over MCP (`ToolServer`), reached by this crate's own client (rmcp on both
//! sides, real transports): over stdio from a server binary started as a child process, and
//! over Streamable HTTP on a loopback port; each client drives the real chat loop. The Python
//! SDK's client sees the same tools, with their titles, annotations and output schemas.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::sync::{Arc, Mutex};

use llm_tools_core::chat::{Chat, Outcome};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{Message, Part, Role, ToolSource as _};
use llm_tools_mcp::{Lifecycle, McpChat as _, McpClient, McpServer};
use serde_json::json;

async fn over_stdio(lifecycle: Lifecycle) -> McpClient {
    McpServer::stdio(env!("CARGO_BIN_EXE_mcp_tool_server"))
        .lifecycle(lifecycle)
        .connect("served")
        .await
        .unwrap()
}

async fn over_http(lifecycle: Lifecycle) -> McpClient {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let server = llm_tools_tests::served_tools::server().unwrap();
    tokio::spawn(server.serve_http(listener));
    McpServer::http(url)
        .lifecycle(lifecycle)
        .connect("served")
        .await
        .unwrap()
}

fn results(chat: &Chat) -> Vec<&Message> {
    chat.messages()
        .iter()
        .filter(|m| m.role == Role::Tool)
        .collect()
}

fn done(outcome: Outcome) -> Message {
    match outcome {
        Outcome::Done(message) => message,
        other => panic!("expected an answer, got {other:?}"),
    }
}

/// Every kind of result, through a chat on the client side.
async fn serves_every_kind_of_result(client: McpClient) {
    let mut names = client.tool_names();
    names.sort();
    assert_eq!(
        names,
        [
            "served_add",
            "served_broken",
            "served_build",
            "served_chart",
            "served_forecast",
            "served_import",
            "served_signup"
        ]
    );
    let add = client
        .tools()
        .into_iter()
        .find(|t| t.spec().name() == "add")
        .unwrap();
    assert_eq!(add.spec().description(), "Adds two integers");
    assert_eq!(add.spec().parameters()["required"], json!(["a", "b"]));
    assert_eq!(
        add.spec().namespace().unwrap().get_description(),
        Some("Tools served by llm-tools")
    );

    let model = ScriptedProvider::new()
        .then_calls([
            ("served_add", json!({"a": 2, "b": 3})),
            ("served_forecast", json!({"city": "Oslo"})),
            ("served_chart", json!({})),
            ("served_broken", json!({})),
            ("served_add", json!({"a": "two"})),
            ("served_build", json!({"target": "docs"})),
        ])
        .then_text("Done.");
    let mut chat = Chat::new(model);
    chat.with_mcp(&client).unwrap();
    let mut outcome = chat.ask("Go").await.unwrap();
    // On 2026-07-28 the build runs as an MCP task: the call pauses and `complete` polls it
    // until it is done (the third check). Older sessions keep the call open instead.
    let modern = client.protocol_version().as_deref() == Some("2026-07-28");
    let mut polls = 0;
    while let Outcome::Paused(pause) = &outcome {
        assert!(
            modern,
            "only a 2026-07-28 session pauses on a task: {pause:?}"
        );
        assert!(pause.calls()[0].call.name == "served_build");
        polls += 1;
        assert!(polls <= 5, "the build finishes on its third check");
        outcome = chat.complete().await.unwrap();
    }
    done(outcome);
    let results = results(&chat);
    assert_eq!(results[0].text(), "5");
    assert!(!results[0].is_error);
    let forecast: serde_json::Value = serde_json::from_str(&results[1].text()).unwrap();
    assert_eq!(forecast, json!({"city": "Oslo", "temperature": 21.5}));
    assert_eq!(results[2].text(), "a chart");
    let image = results[2]
        .content
        .iter()
        .find_map(Part::as_attachment)
        .unwrap();
    assert_eq!(
        (image.media_type(), image.base64().as_deref()),
        ("image/png", Some("iVBORw=="))
    );
    assert!(results[3].is_error);
    assert_eq!(results[3].text(), "the service is down");
    assert!(results[4].is_error, "bad arguments are the model's to fix");
    assert!(results[4].text().contains('a'), "{}", results[4].text());
    assert_eq!(results[5].text(), "built docs");
}

/// Progress reported by the served tool reaches the client chat's callbacks in order.
async fn serves_progress(client: McpClient) {
    let model = ScriptedProvider::new()
        .then_call("served_import", json!({"rows": 3}))
        .then_text("Done.");
    let mut chat = Chat::new(model);
    chat.with_mcp(&client).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    chat.on_tool_progress(move |p| {
        sink.lock()
            .unwrap()
            .push((p.progress, p.total, p.message.clone()))
    });
    done(chat.ask("Import").await.unwrap());
    assert_eq!(results(&chat)[0].text(), "imported 3 rows");
    let importing = Some("importing".to_owned());
    assert_eq!(
        *seen.lock().unwrap(),
        [
            (1.0, Some(3.0), importing.clone()),
            (2.0, Some(3.0), importing.clone()),
            (3.0, Some(3.0), importing)
        ]
    );
}

/// `ctx.ask` on the server is a question in the client's chat.
async fn serves_questions(client: McpClient) {
    let model = ScriptedProvider::new()
        .then_call("served_signup", json!({}))
        .then_text("Done.");
    let mut chat = Chat::new(model);
    chat.with_mcp(&client).unwrap();
    let outcome = chat.ask("Sign me up").await.unwrap();
    assert!(matches!(outcome, Outcome::Paused(_)), "{outcome:?}");
    let pending = chat.pending_questions();
    assert_eq!(pending[0].question.message(), "What is your name?");
    assert_eq!(pending[0].question.required(), ["name"]);
    let call_id = pending[0].call.id.clone();
    chat.answer(&call_id, json!({"name": "Ada"})).unwrap();
    done(chat.complete().await.unwrap());
    assert_eq!(results(&chat)[0].text(), "Welcome, Ada!");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_with_initialize() {
    serves_every_kind_of_result(over_stdio(Lifecycle::Initialize).await).await;
    serves_progress(over_stdio(Lifecycle::Initialize).await).await;
    serves_questions(over_stdio(Lifecycle::Initialize).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_with_2026_07_28() {
    let client = over_stdio(Lifecycle::Auto).await;
    assert_eq!(client.protocol_version().as_deref(), Some("2026-07-28"));
    serves_every_kind_of_result(client).await;
    serves_progress(over_stdio(Lifecycle::Auto).await).await;
    serves_questions(over_stdio(Lifecycle::Auto).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_http_with_initialize() {
    serves_every_kind_of_result(over_http(Lifecycle::Initialize).await).await;
    serves_progress(over_http(Lifecycle::Initialize).await).await;
    serves_questions(over_http(Lifecycle::Initialize).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_http_with_2026_07_28() {
    let client = over_http(Lifecycle::Auto).await;
    assert_eq!(client.protocol_version().as_deref(), Some("2026-07-28"));
    serves_every_kind_of_result(client).await;
    serves_progress(over_http(Lifecycle::Auto).await).await;
    serves_questions(over_http(Lifecycle::Auto).await).await;
}

#[test]
fn a_name_served_twice_is_refused() {
    let server = llm_tools_tests::served_tools::server().unwrap();
    let err = server
        .with_tools(llm_tools_tests::served_tools::Add)
        .unwrap_err();
    assert!(
        err.to_string().contains("served_add") || err.to_string().contains("add"),
        "{err}"
    );
}

/// What the Python SDK's client saw of our server (`tests/mcp-servers/python_client.py`).
fn python_client_sees(args: &[&str]) -> Option<serde_json::Value> {
    let python = llm_tools_tests::mcp::or_skip("mcp_serving", llm_tools_tests::mcp::python())?;
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp-servers/python_client.py");
    let output = std::process::Command::new(python)
        .arg(script)
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    Some(serde_json::from_slice(&output.stdout).unwrap())
}

fn check_python_client(seen: &serde_json::Value) {
    assert_eq!(seen["tools"].as_array().unwrap().len(), 7, "{seen}");
    assert_eq!(seen["add"], json!(["42"]));
    assert_eq!(
        seen["forecast_structured"],
        json!({"city": "Lima", "temperature": 21.5})
    );
    assert_eq!(seen["import"], json!(["imported 2 rows"]));
    assert_eq!(
        seen["progress"],
        json!([[1.0, 2.0, "importing"], [2.0, 2.0, "importing"]])
    );
    assert_eq!(seen["signup"], json!(["Welcome, Py!"]));
    assert_eq!(seen["asked"], json!(["What is your name?"]));
    assert_eq!(
        seen["broken"],
        json!({"is_error": true, "text": ["the service is down"]})
    );
}

#[test]
fn the_python_sdk_client_uses_the_served_tools_over_stdio() {
    let Some(seen) = python_client_sees(&["stdio", env!("CARGO_BIN_EXE_mcp_tool_server")]) else {
        return;
    };
    check_python_client(&seen);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_client_uses_the_served_tools_over_streamable_http() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(
        llm_tools_tests::served_tools::server()
            .unwrap()
            .serve_http(listener),
    );
    let seen = tokio::task::spawn_blocking(move || python_client_sees(&["http", &url]))
        .await
        .unwrap();
    let Some(seen) = seen else { return };
    check_python_client(&seen);
}

/// A city's weather.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub(crate) struct Conditions {
    city: String,
    celsius: f64,
    /// A warning, if any.
    warning: Option<String>,
}

/// Gets the weather in a city
#[llm_tools_core::tool(title = "City weather", annotations(read_only, open_world))]
async fn city_weather(city: String) -> Result<Conditions, llm_tools_core::ToolError> {
    Ok(Conditions {
        city,
        celsius: 21.5,
        warning: None,
    })
}

/// Empties a table
#[llm_tools_core::tool(annotations(destructive, idempotent = false, read_only = false))]
async fn purge(table: String) -> String {
    format!("purged {table}")
}

/// A plain one
#[llm_tools_core::tool]
async fn plain() -> String {
    "plain".to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_client_sees_titles_annotations_and_output_schemas() {
    let server = llm_tools_mcp::ToolServer::new("hints")
        .with_tools((CityWeather, Purge, Plain))
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(server.serve_http(listener));
    let plan = json!({
        "url": url, "mode": "auto",
        "steps": [
            {"op": "list"},
            {"op": "call", "tool": "city_weather", "args": {"city": "Lima"}}
        ]
    });
    let Some(python) = llm_tools_tests::mcp::or_skip("mcp_serving", llm_tools_tests::mcp::python())
    else {
        return;
    };
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("mcp-servers/python_serving_client.py");
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new(python)
            .arg(script)
            .arg(plan.to_string())
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let seen: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let tools = seen["steps"][0]["result"].as_array().unwrap();
    let tool = |name: &str| tools.iter().find(|t| t["name"] == name).unwrap().clone();

    let weather = tool("city_weather");
    assert_eq!(weather["title"], "City weather");
    assert_eq!(
        weather["annotations"],
        json!({"title": "City weather", "readOnlyHint": true, "openWorldHint": true})
    );
    let schema = &weather["outputSchema"];
    assert_eq!(schema["type"], "object", "{weather}");
    assert_eq!(schema["required"], json!(["city", "celsius"]), "{schema}");
    assert!(schema["properties"]["warning"].is_object(), "{schema}");

    let purge = tool("purge");
    assert_eq!(
        purge["annotations"],
        json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false})
    );
    assert!(
        purge.get("outputSchema").is_none(),
        "text has no schema: {purge}"
    );
    assert!(purge.get("title").is_none());

    let plain = tool("plain");
    assert!(
        plain.get("annotations").is_none() && plain.get("outputSchema").is_none(),
        "{plain}"
    );

    // The structured result matches its schema (the SDK checks it against the listing).
    let result = &seen["steps"][1]["result"];
    assert_eq!(
        result["structuredContent"],
        json!({"city": "Lima", "celsius": 21.5, "warning": null}),
        "{seen}"
    );
}
