//! The MCP client against real servers: the reference `server-everything` (npm, Node.js) and
//! the tests' own `toolbox.py` (the Python `mcp` SDK), over stdio and Streamable HTTP, each
//! driving the real chat loop (the model's side is scripted).
#![allow(clippy::unwrap_used, clippy::panic)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use llm_tools_core::chat::{Chat, ChatEvent, Outcome};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{Message, ToolSource as _};
use llm_tools_mcp::{Lifecycle, McpChat as _, McpClient, McpError, McpServer};
use llm_tools_tests::mcp;
use serde_json::json;

async fn everything() -> Option<McpClient> {
    let server = mcp::or_skip("mcp_client", mcp::everything_stdio())?;
    Some(server.connect("everything").await.unwrap())
}

async fn toolbox(lifecycle: Lifecycle) -> Option<McpClient> {
    let server = mcp::or_skip("mcp_client", mcp::python_stdio("toolbox.py"))?;
    Some(
        server
            .lifecycle(lifecycle)
            .connect("toolbox")
            .await
            .unwrap(),
    )
}

fn answer(outcome: Outcome) -> Message {
    match outcome {
        Outcome::Done(message) => message,
        other => panic!("expected an answer, got {other:?}"),
    }
}

/// The tool result the chat added for the first call of the turn.
fn first_result(chat: &Chat) -> &Message {
    chat.messages()
        .iter()
        .find(|m| m.role == llm_tools_core::Role::Tool)
        .unwrap()
}

#[tokio::test]
async fn everything_over_stdio_falls_back_to_initialize_and_lists_its_tools() {
    let Some(client) = everything().await else {
        return;
    };
    assert_eq!(client.protocol_version().as_deref(), Some("2025-11-25"));
    let names = client.tool_names();
    for expected in [
        "everything_echo",
        "everything_get-sum",
        "everything_get-tiny-image",
        "everything_trigger-long-running-operation",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} missing from {names:?}"
        );
    }
    let tools = client.tools();
    let sum = tools.iter().find(|t| t.spec().name() == "get-sum").unwrap();
    let namespace = sum.spec().namespace().unwrap();
    assert_eq!(namespace.name(), "everything");
    assert!(namespace.get_description().is_some_and(|d| !d.is_empty()));
    assert_eq!(sum.spec().parameters()["required"], json!(["a", "b"]));
    client.close().await;
}

#[tokio::test]
async fn a_chat_calls_a_server_tool_and_the_model_reads_its_result() {
    let Some(client) = everything().await else {
        return;
    };
    let model = ScriptedProvider::new()
        .then_call("everything_get-sum", json!({"a": 2, "b": 3}))
        .then_text("2 + 3 = 5");
    let mut chat = Chat::new(model.clone());
    chat.with_mcp(&client).unwrap();
    let done = answer(chat.ask("Add 2 and 3").await.unwrap());
    assert_eq!(done.text(), "2 + 3 = 5");
    let result = first_result(&chat);
    assert!(!result.is_error, "{result:?}");
    assert!(result.text().contains('5'), "{}", result.text());
    let requests = model.requests();
    assert!(requests[0].tools.iter().any(|t| t == "everything_get-sum"));
    assert_eq!(requests[1].messages.last(), Some(result));
}

#[tokio::test]
async fn an_is_error_result_is_an_error_result_and_the_chat_goes_on() {
    let Some(client) = everything().await else {
        return;
    };
    let model = ScriptedProvider::new()
        .then_call("everything_get-sum", json!({"a": "two", "b": 3}))
        .then_text("That did not work.")
        .then_call("everything_echo", json!({"message": "still here"}))
        .then_text("Echoed.");
    let mut chat = Chat::new(model);
    chat.with_mcp(&client).unwrap();
    answer(chat.ask("Add").await.unwrap());
    let failed = first_result(&chat);
    assert!(failed.is_error);
    assert!(!failed.text().is_empty());
    answer(chat.ask("Echo").await.unwrap());
    let echoed = chat
        .messages()
        .iter()
        .rev()
        .find(|m| m.role == llm_tools_core::Role::Tool)
        .unwrap();
    assert!(!echoed.is_error);
    assert_eq!(echoed.text(), "Echo: still here");
}

#[tokio::test]
async fn images_resources_and_structured_content_reach_the_result() {
    let Some(client) = everything().await else {
        return;
    };
    let model = ScriptedProvider::new()
        .then_calls([
            ("everything_get-tiny-image", json!({})),
            (
                "everything_get-resource-reference",
                json!({"resourceType": "Text", "resourceId": 2}),
            ),
            ("everything_get-resource-links", json!({"count": 2})),
            (
                "everything_get-structured-content",
                json!({"location": "Chicago"}),
            ),
        ])
        .then_text("Seen.");
    let mut chat = Chat::new(model);
    chat.with_mcp(&client).unwrap();
    answer(chat.ask("Show me").await.unwrap());
    let results: Vec<&Message> = chat
        .messages()
        .iter()
        .filter(|m| m.role == llm_tools_core::Role::Tool)
        .collect();
    assert_eq!(results.len(), 4);
    assert!(results.iter().all(|r| !r.is_error), "{results:?}");

    let image = results[0]
        .content
        .iter()
        .find_map(llm_tools_core::Part::as_attachment)
        .unwrap();
    assert_eq!(image.media_type(), "image/png");
    assert!(image.base64().is_some_and(|b| b.starts_with("iVBORw0KGgo")));

    assert!(
        results[1].text().contains(
            "Resource demo://resource/dynamic/text/2:\nResource 2: This is a plaintext resource"
        ),
        "{}",
        results[1].text()
    );
    assert!(
        results[2].text().matches("Resource link: ").count() == 2,
        "{}",
        results[2].text()
    );
    assert!(
        results[3].text().contains("\"temperature\":36"),
        "{}",
        results[3].text()
    );
}

// On many threads, so the order does not come from a one-thread scheduler.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_notifications_reach_the_callbacks_and_the_stream() {
    let Some(client) = everything().await else {
        return;
    };
    let model = ScriptedProvider::new()
        .then_call(
            "everything_trigger-long-running-operation",
            json!({"duration": 0.2, "steps": 4}),
        )
        .then_text("Done.")
        .cycle();
    let mut chat = Chat::new(model);
    chat.with_mcp(&client).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    chat.on_tool_progress(move |p| sink.lock().unwrap().push((p.progress, p.total)));
    answer(chat.ask("Run it").await.unwrap());
    assert_eq!(
        *seen.lock().unwrap(),
        [
            (1.0, Some(4.0)),
            (2.0, Some(4.0)),
            (3.0, Some(4.0)),
            (4.0, Some(4.0))
        ]
    );

    use futures::StreamExt as _;
    let mut stream = chat.ask_stream("Again");
    let mut progress = 0;
    let mut result_after_progress = false;
    while let Some(event) = stream.next().await {
        match event.unwrap() {
            ChatEvent::ToolProgress(p) => {
                assert_eq!(p.tool, "everything_trigger-long-running-operation");
                progress += 1;
            }
            ChatEvent::ToolResult { .. } => result_after_progress = progress == 4,
            _ => {}
        }
    }
    assert!(result_after_progress, "4 progress events, then the result");
}

#[tokio::test]
async fn a_call_past_its_max_run_time_is_cancelled_and_its_late_progress_dropped() {
    let Some(server) = mcp::or_skip("mcp_client", mcp::everything_stdio()) else {
        return;
    };
    let client = server
        .max_run_time(Duration::from_millis(300))
        .connect("everything")
        .await
        .unwrap();
    let model = ScriptedProvider::new()
        // 40 steps over 4 s: far past the 300 ms; the server goes on sending progress.
        .then_call(
            "everything_trigger-long-running-operation",
            json!({"duration": 4, "steps": 40}),
        )
        .then_text("Too slow.")
        .then_call(
            "everything_trigger-long-running-operation",
            json!({"duration": 0.25, "steps": 1}),
        )
        .then_text("Quick.");
    let mut chat = Chat::new(model);
    chat.with_mcp(&client).unwrap();
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = Arc::clone(&seen);
    chat.on_tool_progress(move |p| sink.lock().unwrap().push(p.call_id.clone()));

    answer(chat.ask("Slow").await.unwrap());
    let timed_out = first_result(&chat).clone();
    assert!(timed_out.is_error);
    assert!(
        timed_out.text().contains("limit of 300ms"),
        "{}",
        timed_out.text()
    );
    let first_id = timed_out.tool_call_id.clone().unwrap();
    let before = seen.lock().unwrap().len();
    assert!(before < 40);

    // The second call runs while the server still sends progress for the first.
    answer(chat.ask("Quick").await.unwrap());
    let after: Vec<String> = seen.lock().unwrap()[before..].to_vec();
    assert!(!after.is_empty(), "the second call reported progress");
    assert!(
        after.iter().all(|id| *id != first_id),
        "late progress of the cancelled call: {after:?}"
    );
}

#[tokio::test]
async fn the_server_is_told_when_a_call_is_cancelled() {
    let Some(server) = mcp::or_skip("mcp_client", mcp::python_stdio("toolbox.py")) else {
        return;
    };
    let client = server
        .max_run_time(Duration::from_millis(200))
        .connect("toolbox")
        .await
        .unwrap();
    let model = ScriptedProvider::new()
        .then_call("toolbox_wait_for_cancel", json!({}))
        .then_text("Gave up.");
    let mut chat = Chat::new(model);
    chat.with_mcp(&client).unwrap();
    answer(chat.ask("Wait").await.unwrap());
    assert!(first_result(&chat).is_error);

    // The notification travels on its own; ask the server until it has seen it (each ask is a
    // round trip on the same connection, so this ends as soon as the server got there).
    let mut seen = String::new();
    for _ in 0..200 {
        let result = client
            .peer()
            .call_tool(llm_tools_mcp::rmcp::model::CallToolRequestParams::new(
                "cancellations",
            ))
            .await
            .unwrap();
        seen = result.content[0]
            .as_text()
            .map(|t| t.text.clone())
            .unwrap_or_default();
        if seen == "1" {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert_eq!(seen, "1", "the server saw one cancelled call");
}

#[tokio::test]
async fn toolbox_over_stdio_speaks_2026_07_28_and_every_page_is_read() {
    let Some(client) = toolbox(Lifecycle::Auto).await else {
        return;
    };
    assert_eq!(client.protocol_version().as_deref(), Some("2026-07-28"));
    let names = client.tool_names();
    assert_eq!(names.len(), 11, "{names:?}");
    assert!(
        names.contains(&"toolbox_repos_list_all".to_owned()),
        "{names:?}"
    );
    let tools = client.tools();
    let namespace = tools[0].spec().namespace().unwrap();
    assert_eq!(
        namespace.get_description(),
        Some("Test tools: arithmetic, cancellation, changing lists.")
    );

    // A 2020-12 schema keeps its `$defs` and `$ref`s.
    let trip = tools
        .iter()
        .find(|t| t.spec().name() == "plan_trip")
        .unwrap();
    let schema = trip.spec().parameters();
    assert_eq!(
        schema["$defs"]["city"],
        json!({"type": "string", "minLength": 1})
    );
    assert_eq!(
        schema["properties"]["from"],
        json!({"$ref": "#/$defs/city"})
    );

    // The renamed tool is called by the server's own name.
    let model = ScriptedProvider::new()
        .then_calls([
            ("toolbox_repos_list_all", json!({})),
            ("toolbox_plan_trip", json!({"from": "Berlin", "to": "Rome"})),
            ("toolbox_fail", json!({})),
        ])
        .then_text("Done.");
    let mut chat = Chat::new(model);
    chat.with_mcp(&client).unwrap();
    answer(chat.ask("Go").await.unwrap());
    let results: Vec<(String, bool)> = chat
        .messages()
        .iter()
        .filter(|m| m.role == llm_tools_core::Role::Tool)
        .map(|m| (m.text(), m.is_error))
        .collect();
    assert_eq!(
        results,
        [
            ("all the repositories".to_owned(), false),
            ("Berlin -> Rome".to_owned(), false),
            ("this tool always fails".to_owned(), true)
        ]
    );
}

async fn list_changes_reach_the_next_request(lifecycle: Lifecycle) {
    let Some(client) = toolbox(lifecycle).await else {
        return;
    };
    let model = ScriptedProvider::new()
        .then_call("toolbox_add_tool", json!({"name": "fresh"}))
        .then_call("toolbox_fresh", json!({}))
        .then_text("Used the new tool.");
    let mut chat = Chat::new(model.clone());
    chat.with_mcp(&client).unwrap();
    answer(chat.ask("Grow").await.unwrap());
    let requests = model.requests();
    assert!(!requests[0].tools.contains(&"toolbox_fresh".to_owned()));
    assert!(
        requests[1].tools.contains(&"toolbox_fresh".to_owned()),
        "{:?}",
        requests[1].tools
    );
    let last = chat
        .messages()
        .iter()
        .rev()
        .find(|m| m.role == llm_tools_core::Role::Tool)
        .unwrap();
    assert_eq!(last.text(), "fresh ran");
}

// On many threads, so the order does not come from a one-thread scheduler.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_tool_list_is_offered_from_the_next_request_on_initialize() {
    list_changes_reach_the_next_request(Lifecycle::Initialize).await;
}

#[tokio::test]
async fn filters_defer_and_approvals_apply_to_every_tool_of_the_server() {
    let Some(server) = mcp::or_skip("mcp_client", mcp::everything_stdio()) else {
        return;
    };
    let allowed = server
        .clone()
        .allow(["echo", "get-sum"])
        .connect("everything")
        .await
        .unwrap();
    let mut names = allowed.tool_names();
    names.sort();
    assert_eq!(names, ["everything_echo", "everything_get-sum"]);

    let denied = server
        .clone()
        .deny(["echo"])
        .defer(true)
        .connect("everything")
        .await
        .unwrap();
    assert!(!denied.tool_names().contains(&"everything_echo".to_owned()));
    assert!(denied.tools().iter().all(|t| t.spec().defer()));

    let guarded = server
        .needs_approval(true)
        .allow(["echo"])
        .connect("everything")
        .await
        .unwrap();
    let model = ScriptedProvider::new()
        .then_call("everything_echo", json!({"message": "hi"}))
        .then_text("Echoed.");
    let mut chat = Chat::new(model);
    chat.with_mcp(&guarded).unwrap();
    let outcome = chat.ask("Echo").await.unwrap();
    assert!(matches!(outcome, Outcome::Paused(_)), "{outcome:?}");
    let call_id = chat.pending_approvals()[0].id.clone();
    chat.approve(&call_id).unwrap();
    answer(chat.complete().await.unwrap());
    assert_eq!(first_result(&chat).text(), "Echo: hi");
}

#[tokio::test]
async fn streamable_http_sends_the_headers_and_the_bearer_token() {
    let Some((_server, url)) = mcp::or_skip("mcp_client", mcp::python_http("toolbox.py")) else {
        return;
    };
    let client = McpServer::http(url)
        .header("X-Tenant", "acme")
        .bearer_token("test-token-123")
        .connect("toolbox")
        .await
        .unwrap();
    assert_eq!(client.protocol_version().as_deref(), Some("2026-07-28"));
    assert_eq!(client.tool_names().len(), 11);
    let model = ScriptedProvider::new()
        .then_call("toolbox_headers", json!({}))
        .then_text("ok");
    let mut chat = Chat::new(model);
    chat.with_mcp(&client).unwrap();
    answer(chat.ask("Headers?").await.unwrap());
    let headers: serde_json::Value = serde_json::from_str(&first_result(&chat).text()).unwrap();
    assert_eq!(headers["x-tenant"], "acme");
    assert_eq!(headers["authorization"], "Bearer test-token-123");
}

#[tokio::test]
async fn everything_over_streamable_http() {
    let Some((_server, url)) = mcp::or_skip("mcp_client", mcp::everything_http()) else {
        return;
    };
    let client = McpServer::http(url).connect("everything").await.unwrap();
    assert_eq!(client.protocol_version().as_deref(), Some("2025-11-25"));
    let model = ScriptedProvider::new()
        .then_call("everything_echo", json!({"message": "over http"}))
        .then_text("ok");
    let mut chat = Chat::new(model);
    chat.with_mcp(&client).unwrap();
    answer(chat.ask("Echo").await.unwrap());
    assert_eq!(first_result(&chat).text(), "Echo: over http");
}

#[tokio::test]
async fn connection_failures_are_typed_errors() {
    let missing = McpServer::stdio("/nonexistent/mcp-server")
        .connect("missing")
        .await
        .unwrap_err();
    assert!(matches!(missing, McpError::Spawn { .. }), "{missing}");
    assert!(missing.to_string().contains("/nonexistent/mcp-server"));

    let bad_name = McpServer::stdio("true")
        .connect("has space")
        .await
        .unwrap_err();
    assert!(matches!(bad_name, McpError::InvalidConfig(_)), "{bad_name}");

    // A process that exits at once never answers the handshake: its exit is the error.
    let quits = McpServer::stdio("true").connect("quits").await.unwrap_err();
    assert!(
        matches!(&quits, McpError::Exited { status, .. } if status.success()),
        "{quits}"
    );

    // Nothing listens on the port.
    let port = mcp::free_port().unwrap();
    let closed = McpServer::http(format!("http://127.0.0.1:{port}/mcp"))
        .timeout(Duration::from_secs(5))
        .connect("closed")
        .await
        .unwrap_err();
    assert!(
        matches!(
            closed,
            McpError::Handshake { .. } | McpError::Timeout { .. }
        ),
        "{closed}"
    );

    let header = McpServer::http("http://127.0.0.1:1/mcp")
        .header("bad header", "x")
        .connect("h")
        .await
        .unwrap_err();
    assert!(matches!(header, McpError::InvalidConfig(_)), "{header}");
}

#[tokio::test]
async fn a_closed_session_fails_calls_as_error_results_and_the_chat_goes_on() {
    let Some(client) = everything().await else {
        return;
    };
    let model = ScriptedProvider::new()
        .then_call("everything_echo", json!({"message": "anyone?"}))
        .then_text("The server is gone.");
    let mut chat = Chat::new(model);
    chat.with_mcp(&client).unwrap();
    client.close().await;
    let done = answer(chat.ask("Echo").await.unwrap());
    assert_eq!(done.text(), "The server is gone.");
    let result = first_result(&chat);
    assert!(result.is_error);
    assert!(result.text().contains("everything"), "{}", result.text());
}

// On many threads, so the order does not come from a one-thread scheduler.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_tool_list_is_offered_from_the_next_request_on_2026_07_28() {
    list_changes_reach_the_next_request(Lifecycle::Auto).await;
}

/// Asks the model's call, pauses on the server's question, answers it, and returns the call's
/// result text after `complete`.
async fn ask_and_answer(
    client: &McpClient,
    tool: &str,
    arguments: serde_json::Value,
    answer: Option<serde_json::Value>,
) -> (llm_tools_core::Question, String) {
    let model = ScriptedProvider::new()
        .then_call(tool, arguments)
        .then_text("Done.");
    let mut chat = Chat::new(model);
    chat.with_mcp(client).unwrap();
    let outcome = chat.ask("Go").await.unwrap();
    assert!(matches!(outcome, Outcome::Paused(_)), "{outcome:?}");
    let pending = chat.pending_questions();
    assert_eq!(pending.len(), 1, "{pending:?}");
    let (call_id, question) = (pending[0].call.id.clone(), pending[0].question.clone());
    match answer {
        Some(values) => chat.answer(&call_id, values).unwrap(),
        None => chat.decline(&call_id).unwrap(),
    };
    answer_of(chat.complete().await.unwrap());
    (question, first_result(&chat).text())
}

fn answer_of(outcome: Outcome) -> Message {
    answer(outcome)
}

#[tokio::test]
async fn a_servers_elicitation_is_a_chat_question_answered_through_the_chat() {
    let Some(client) = everything().await else {
        return;
    };
    let (question, result) = ask_and_answer(
        &client,
        "everything_trigger-elicitation-request",
        json!({}),
        Some(json!({"name": "Ada Lovelace"})),
    )
    .await;
    assert!(
        question.required().contains(&"name".to_owned()),
        "{question:?}"
    );
    assert!(question.fields().unwrap().contains_key("name"));
    assert!(result.contains("- Name: Ada Lovelace"), "{result}");
}

#[tokio::test]
async fn a_declined_elicitation_reaches_the_server_as_declined() {
    let Some(client) = everything().await else {
        return;
    };
    let (_, result) = ask_and_answer(
        &client,
        "everything_trigger-elicitation-request",
        json!({}),
        None,
    )
    .await;
    assert!(result.contains("declined"), "{result}");
}

#[tokio::test]
async fn input_requests_of_2026_07_28_are_chat_questions_and_the_call_is_sent_again_with_the_answer()
 {
    let Some(client) = toolbox(Lifecycle::Auto).await else {
        return;
    };
    let (question, result) = ask_and_answer(
        &client,
        "toolbox_greet",
        json!({}),
        Some(json!({"name": "Grace"})),
    )
    .await;
    assert_eq!(question.message(), "What is your name?");
    assert_eq!(result, "Hello, Grace!");
}

/// A server answering a call with more input requests than the client answers at once
/// (10,000 URL visits) ends the call with an error naming the bound, before any is asked or
/// declined (each would be a warning and a response of its own, again every round).
#[tokio::test]
async fn a_call_asking_for_more_inputs_at_once_than_the_bound_ends_naming_it() {
    let Some(client) = toolbox(Lifecycle::Auto).await else {
        return;
    };
    let model = ScriptedProvider::new()
        .then_call("toolbox_many_urls", json!({}))
        .then_text("Could not.");
    let mut chat = Chat::new(model);
    chat.with_mcp(&client).unwrap();
    answer(chat.ask("Visit them").await.unwrap());
    let result = first_result(&chat);
    assert!(result.is_error, "{result:?}");
    assert!(
        result
            .text()
            .contains("asked for 10000 inputs at once, more than the 16 this client answers"),
        "{}",
        result.text()
    );
    assert!(chat.pending_questions().is_empty());
}

#[tokio::test]
async fn a_file_read_through_the_filesystem_server_reaches_the_model_once() {
    // The server sends every result twice: as text and as `structuredContent: {"content": text}`.
    let root = tempfile::tempdir().unwrap();
    let text: String = (0..110)
        .map(|i| format!("Line {i:03} of the notes {}\n", "-".repeat(27)))
        .collect();
    assert_eq!(text.len(), 5_500);
    std::fs::write(root.path().join("notes.txt"), &text).unwrap();
    let Some(server) = mcp::or_skip("mcp_client", mcp::filesystem_stdio(root.path())) else {
        return;
    };
    let client = server.connect("files").await.unwrap();
    let path = root.path().join("notes.txt");
    let model = ScriptedProvider::new()
        .then_call(
            "files_read_text_file",
            json!({"path": path.to_string_lossy()}),
        )
        .then_text("Read.");
    let mut chat = Chat::new(model);
    chat.with_mcp(&client).unwrap();
    answer(chat.ask("Read the notes").await.unwrap());
    let result = first_result(&chat);
    assert!(!result.is_error, "{result:?}");
    assert_eq!(result.text(), text);
}
