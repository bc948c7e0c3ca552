//! MCP servers that misbehave: each gives a clear error or an error result, never a panic or an
//! unbounded wait, and the chat's history stays valid (a following `ask` works).
#![allow(clippy::unwrap_used, clippy::panic)]

use std::time::Duration;

use llm_tools_core::chat::{Chat, Outcome};
use llm_tools_core::files::MemoryFileStore;
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{Message, Role, ToolSource as _};
use llm_tools_mcp::{McpChat as _, McpError};
use llm_tools_tests::mcp;
use serde_json::json;

fn done(outcome: Outcome) -> Message {
    match outcome {
        Outcome::Done(message) => message,
        other => panic!("expected an answer, got {other:?}"),
    }
}

/// Calls `echo` once, then checks that the chat still answers.
async fn call_echo_then_ask_again(client: &llm_tools_mcp::McpClient) -> Message {
    let model = ScriptedProvider::new()
        .then_call("bad_echo", json!({"text": "hi"}))
        .then_text("The tool failed.")
        .then_text("Still here.");
    let mut chat = Chat::new(model);
    chat.with_mcp(client).unwrap();
    done(chat.ask("Echo").await.unwrap());
    let result = chat
        .messages()
        .iter()
        .find(|m| m.role == Role::Tool)
        .unwrap()
        .clone();
    assert_eq!(
        done(chat.ask("And now?").await.unwrap()).text(),
        "Still here."
    );
    assert_eq!(
        chat.messages().len(),
        6,
        "user, call, result, answer, user, answer"
    );
    result
}

#[tokio::test]
async fn a_server_that_exits_during_a_call_gives_an_error_result() {
    let Some(server) = mcp::or_skip("mcp_bad_input", mcp::misbehaving("exit_on_call")) else {
        return;
    };
    let client = server.connect("bad").await.unwrap();
    let result = call_echo_then_ask_again(&client).await;
    assert!(result.is_error);
    assert!(result.text().contains("`bad`"), "{}", result.text());
}

#[tokio::test]
async fn a_server_that_never_answers_a_call_is_bounded_by_max_run_time() {
    let Some(server) = mcp::or_skip("mcp_bad_input", mcp::misbehaving("hang_on_call")) else {
        return;
    };
    let client = server
        .max_run_time(Duration::from_millis(200))
        .connect("bad")
        .await
        .unwrap();
    let result = call_echo_then_ask_again(&client).await;
    assert!(result.is_error);
    assert!(
        result.text().contains("limit of 200ms"),
        "{}",
        result.text()
    );
}

#[tokio::test]
async fn a_server_that_never_lists_its_tools_is_a_timeout() {
    let Some(server) = mcp::or_skip("mcp_bad_input", mcp::misbehaving("hang_on_list")) else {
        return;
    };
    let error = server
        .timeout(Duration::from_millis(500))
        .connect("bad")
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            McpError::Timeout {
                what: "tools/list",
                ..
            }
        ),
        "{error}"
    );
}

/// A server whose `tools/list` pages never end is refused at the page limit, long before its
/// timeout, rather than listed into the client's memory.
#[tokio::test]
async fn a_server_whose_tool_pages_never_end_is_refused_at_the_page_limit() {
    let Some(server) = mcp::or_skip("mcp_bad_input", mcp::misbehaving("endless_tool_pages")) else {
        return;
    };
    let error = server
        .timeout(Duration::from_secs(60))
        .connect("bad")
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            McpError::OverLimit {
                limit: llm_tools_mcp::MAX_LIST_PAGES,
                ..
            }
        ),
        "{error}"
    );
}

/// A server whose `tools/list` pages are each within the message limits but add up to more
/// than a listing may hold (five pages of 10 MiB) is refused at the byte limit, before the
/// client holds them all.
#[tokio::test]
async fn a_server_whose_tool_pages_add_up_past_the_listing_bytes_is_refused() {
    let Some(server) = mcp::or_skip("mcp_bad_input", mcp::misbehaving("heavy_tool_pages")) else {
        return;
    };
    let error = server
        .timeout(Duration::from_secs(60))
        .connect("heavy")
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            McpError::OverLimit {
                limit: llm_tools_mcp::MAX_LISTING_BYTES,
                ..
            }
        ),
        "{error}"
    );
}

/// A listing's pages share one timeout: a server answering each page just in time cannot
/// hold a listing for many timeouts.
#[tokio::test]
async fn a_listing_whose_pages_each_come_just_in_time_is_a_timeout() {
    let Some(server) = mcp::or_skip("mcp_bad_input", mcp::misbehaving("slow_resource_pages"))
    else {
        return;
    };
    let client = server
        .timeout(Duration::from_secs(1))
        .connect("bad")
        .await
        .unwrap();
    let error = client.list_resources().await.unwrap_err();
    assert!(
        matches!(
            error,
            McpError::Timeout {
                what: "resources/list",
                ..
            }
        ),
        "{error}"
    );
}

/// Updates of resources the client never subscribed to (`javascript:` and `file:` URIs, one of
/// 5 KB) never reach the application's callback; the subscribed one's does.
#[tokio::test]
async fn updates_of_resources_nobody_subscribed_to_never_reach_the_callback() {
    let (updates, mut updated) = tokio::sync::mpsc::unbounded_channel();
    let server = mcp::misbehaving("resource_updates").map(|s| {
        s.on_resource_updated(move |uri| {
            let _ = updates.send(uri.to_owned());
        })
    });
    let Some(server) = mcp::or_skip("mcp_bad_input", server) else {
        return;
    };
    let client = server.connect("bad").await.unwrap();
    client.subscribe("demo://subscribed").await.unwrap();
    // The updates come before the call's result, on the same stream.
    let result = call_echo_then_ask_again(&client).await;
    assert_eq!(result.text(), "echoed");
    let mut heard = Vec::new();
    while let Ok(uri) = updated.try_recv() {
        heard.push(uri);
    }
    assert_eq!(heard, ["demo://subscribed"]);
    client.unsubscribe("demo://subscribed").await.unwrap();
    let _ = call_echo_then_ask_again(&client).await;
    assert!(updated.try_recv().is_err(), "unsubscribed, nothing more");
}

#[tokio::test]
async fn garbage_on_the_wire_does_not_break_the_session() {
    let Some(server) = mcp::or_skip("mcp_bad_input", mcp::misbehaving("garbage_before_result"))
    else {
        return;
    };
    let client = server.connect("bad").await.unwrap();
    let result = call_echo_then_ask_again(&client).await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(result.text(), "echoed");
}

#[tokio::test]
async fn odd_tools_are_left_out_or_mapped_and_the_rest_work() {
    let Some(server) = mcp::or_skip("mcp_bad_input", mcp::misbehaving("odd_tools")) else {
        return;
    };
    let client = server.connect("bad").await.unwrap();
    let mut names = client.tool_names();
    names.sort();
    // The string schema, the name past 128 bytes and the 200 KB schema are left out; `a/b`
    // maps to the name `a.b` took; `no_type` gets one; the 1 MiB description is cut; the
    // 40 KB schema is kept whole.
    assert_eq!(
        names,
        [
            "bad_a_b",
            "bad_echo",
            "bad_fair_schema",
            "bad_no_type",
            "bad_verbose"
        ]
    );
    let fair = client
        .tools()
        .into_iter()
        .find(|t| t.spec().name() == "fair_schema")
        .unwrap();
    let properties = fair.spec().parameters()["properties"].as_object().unwrap();
    assert_eq!(properties.len(), 40);
    assert_eq!(
        properties["p39"]["description"].as_str().unwrap().len(),
        1000
    );
    let verbose = client
        .tools()
        .into_iter()
        .find(|t| t.spec().name() == "verbose")
        .unwrap();
    let description = verbose.spec().description();
    assert!(
        description.len() <= llm_tools_mcp::MAX_TOOL_DESCRIPTION_BYTES + 64,
        "{}",
        description.len()
    );
    assert!(description.ends_with("bytes cut]"));
    let no_type = client
        .tools()
        .into_iter()
        .find(|t| t.spec().name() == "no_type")
        .unwrap();
    assert_eq!(no_type.spec().parameters()["type"], "object");
    assert!(!call_echo_then_ask_again(&client).await.is_error);
}

#[tokio::test]
async fn a_huge_result_is_spilled_to_the_file_store() {
    let Some(server) = mcp::or_skip("mcp_bad_input", mcp::misbehaving("huge_result")) else {
        return;
    };
    let client = server.connect("bad").await.unwrap();
    let model = ScriptedProvider::new()
        .then_call("bad_echo", json!({}))
        .then_text("Big.");
    let mut chat = Chat::new(model);
    chat.with_file_store(MemoryFileStore::new());
    chat.with_mcp(&client).unwrap();
    done(chat.ask("Echo").await.unwrap());
    let result = chat
        .messages()
        .iter()
        .find(|m| m.role == Role::Tool)
        .unwrap();
    assert!(!result.is_error);
    assert!(
        result.text().len() < 20_000,
        "the model reads a preview, not 5 MB"
    );
}

/// The attachments of the tool result `message` holds, as (media type, decoded bytes).
fn attachments_of(message: &Message) -> Vec<(String, usize)> {
    message
        .content
        .iter()
        .filter_map(|part| part.as_attachment())
        .map(|a| {
            let len = match a.source() {
                llm_tools_core::Source::Bytes(bytes) => bytes.len(),
                _ => panic!("inline bytes expected, got a URL"),
            };
            (a.media_type().to_owned(), len)
        })
        .collect()
}

#[tokio::test]
async fn a_results_attachments_past_the_limits_are_left_out_and_the_model_reads_so() {
    // The result: text, one image of 6 MiB, ten of 1 KiB.
    let Some(server) = mcp::or_skip("mcp_bad_input", mcp::misbehaving("many_images")) else {
        return;
    };
    let client = server.connect("bad").await.unwrap();
    let model = ScriptedProvider::new()
        .then_call("bad_echo", json!({}))
        .then_text("Seen.")
        .then_text("Still here.");
    let mut chat = Chat::new(model.clone());
    chat.with_mcp(&client).unwrap();
    done(chat.ask("Show me the charts").await.unwrap());
    let result = chat
        .messages()
        .iter()
        .find(|m| m.role == Role::Tool)
        .unwrap()
        .clone();
    assert!(!result.is_error);
    // The large image is past 5 MiB, and eight of the small ones are kept.
    assert_eq!(
        attachments_of(&result),
        vec![("image/png".to_owned(), 1024); llm_tools_mcp::DEFAULT_MAX_ATTACHMENTS]
    );
    let text = result.text();
    assert!(text.starts_with("the charts\n"), "{text}");
    assert!(
        text.contains(
            "[image (image/png, 6.0 MiB) left out: past this client's limit of 5.0 MiB of \
             attachments per tool result (the application can raise it with \
             `McpServer::max_attachment_bytes`)]"
        ),
        "{text}"
    );
    assert_eq!(
        text.matches(
            "[image (image/png, 1.0 KiB) left out: past this client's limit of 8 attachments \
             per tool result (the application can raise it with `McpServer::max_attachments`)]"
        )
        .count(),
        2,
        "{text}"
    );
    // What the model is sent after the call, and with every later request: the kept
    // attachments only.
    done(chat.ask("And now?").await.unwrap());
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    for request in &requests[1..] {
        let sent: usize = request
            .messages
            .iter()
            .flat_map(attachments_of)
            .map(|(_, len)| len)
            .sum();
        assert_eq!(sent, 8 * 1024);
    }

    // Raised, the same result is kept whole.
    let server = mcp::misbehaving("many_images")
        .unwrap()
        .max_attachments(11)
        .max_attachment_bytes(7 * 1024 * 1024);
    let client = server.connect("bad").await.unwrap();
    let mut chat = Chat::new(
        ScriptedProvider::new()
            .then_call("bad_echo", json!({}))
            .then_text("Seen."),
    );
    chat.with_mcp(&client).unwrap();
    done(chat.ask("Show me the charts").await.unwrap());
    let result = chat
        .messages()
        .iter()
        .find(|m| m.role == Role::Tool)
        .unwrap();
    assert_eq!(attachments_of(result).len(), 11);
    assert_eq!(result.text(), "the charts");
}

#[tokio::test]
async fn a_prompts_attachments_are_bounded_over_the_whole_prompt() {
    // The prompt, one block a message: text, an image of 6 MiB, one that is not base64 under a
    // 5,000-character media type, ten images of 1 KiB as user messages; then an image (not
    // base64) and a text as assistant messages.
    let Some(server) = mcp::or_skip("mcp_bad_input", mcp::misbehaving("many_images")) else {
        return;
    };
    let client = server.connect("bad").await.unwrap();
    let messages = client.get_prompt("charts", json!(null)).await.unwrap();
    assert_eq!(messages.len(), 15);
    let attachments: Vec<(String, usize)> = messages.iter().flat_map(attachments_of).collect();
    assert_eq!(
        attachments,
        vec![("image/png".to_owned(), 1024); llm_tools_mcp::DEFAULT_MAX_ATTACHMENTS]
    );
    assert_eq!(messages[0], Message::user("the charts"));
    assert_eq!(
        messages[1].text(),
        "[image (image/png, 6.0 MiB) left out: past this client's limit of 5.0 MiB of \
         attachments per prompt (the application can raise it with \
         `McpServer::max_attachment_bytes`)]"
    );
    // Left out for its media type, longer than one can be, before its data is looked at.
    let undecoded = messages[2].text();
    assert!(
        undecoded.starts_with("[image left out: its media type (image/xxx")
            && undecoded.contains("longer than the 255 bytes"),
        "{undecoded}"
    );
    assert!(undecoded.len() < 1024, "{}", undecoded.len());
    for message in &messages[11..13] {
        assert_eq!(
            message.text(),
            "[image (image/png, 1.0 KiB) left out: past this client's limit of 8 attachments \
             per prompt (the application can raise it with `McpServer::max_attachments`)]"
        );
    }
    // The assistant's messages keep their text only: its image is not even decoded.
    assert_eq!(
        &messages[13..],
        [Message::assistant(""), Message::assistant("Seen.")]
    );

    // Raised, the user messages' images are all kept.
    let server = mcp::misbehaving("many_images")
        .unwrap()
        .max_attachments(11)
        .max_attachment_bytes(7 * 1024 * 1024);
    let client = server.connect("bad").await.unwrap();
    let messages = client.get_prompt("charts", json!(null)).await.unwrap();
    assert_eq!(messages.iter().flat_map(attachments_of).count(), 11);
}

#[tokio::test]
async fn a_result_holding_too_many_json_values_fails_its_call_and_the_session_goes_on() {
    // A log notification and then the call's result, each over a million values in 3 MiB.
    let Some(server) = mcp::or_skip("mcp_bad_input", mcp::misbehaving("dense_result")) else {
        return;
    };
    let client = server.connect("bad").await.unwrap();
    let model = ScriptedProvider::new()
        .then_call("bad_echo", json!({"text": "dense"}))
        .then_call("bad_echo", json!({"text": "after"}))
        .then_text("Done.");
    let mut chat = Chat::new(model);
    chat.with_mcp(&client).unwrap();
    done(chat.ask("Echo twice").await.unwrap());
    let results: Vec<&Message> = chat
        .messages()
        .iter()
        .filter(|m| m.role == Role::Tool)
        .collect();
    assert_eq!(results.len(), 2);
    assert!(results[0].is_error);
    assert!(
        results[0].text().contains("JSON values"),
        "{}",
        results[0].text()
    );
    assert!(!results[1].is_error);
    assert_eq!(results[1].text(), "echoed");
}

/// Calls `dense` (a result too dense to parse), then `add` on `client`: the first call fails
/// naming the bound, the second works.
async fn dense_then_add(client: &llm_tools_mcp::McpClient) {
    let model = ScriptedProvider::new()
        .then_call("toolbox_dense", json!({}))
        .then_call("toolbox_add", json!({"a": 2, "b": 3}))
        .then_text("Done.");
    let mut chat = Chat::new(model);
    chat.with_mcp(client).unwrap();
    done(chat.ask("Dense, then add").await.unwrap());
    let results: Vec<&Message> = chat
        .messages()
        .iter()
        .filter(|m| m.role == Role::Tool)
        .collect();
    assert_eq!(results.len(), 2);
    assert!(results[0].is_error, "{:.300}", results[0].text());
    assert!(
        results[0].text().contains("JSON values"),
        "{:.300}",
        results[0].text()
    );
    assert_eq!(results[1].text(), "5");
}

#[tokio::test]
async fn a_result_in_an_sse_event_holding_too_many_json_values_fails_its_call() {
    // On a 2025-11-25 session the Python SDK sends the result as an SSE event of some 3 MiB.
    let Some((_server, url)) = mcp::or_skip("mcp_bad_input", mcp::python_http("toolbox.py")) else {
        return;
    };
    let client = llm_tools_mcp::McpServer::http(url)
        .lifecycle(llm_tools_mcp::Lifecycle::Initialize)
        .connect("toolbox")
        .await
        .unwrap();
    dense_then_add(&client).await;
}

#[tokio::test]
async fn a_result_in_a_plain_json_answer_holding_too_many_json_values_fails_its_call() {
    // On a 2026-07-28 session the Python SDK answers a call with one `application/json` body
    // of some 3 MiB.
    let Some((_server, url)) = mcp::or_skip("mcp_bad_input", mcp::python_http("toolbox.py")) else {
        return;
    };
    let client = llm_tools_mcp::McpServer::http(url)
        .connect("toolbox")
        .await
        .unwrap();
    dense_then_add(&client).await;
}

#[tokio::test]
async fn http_errors_are_handshake_errors() {
    for status in [401, 404, 500] {
        let Some((_server, url)) = mcp::or_skip("mcp_bad_input", mcp::http_status(status)) else {
            return;
        };
        let error = llm_tools_mcp::McpServer::http(url)
            .timeout(Duration::from_secs(10))
            .connect("bad")
            .await
            .unwrap_err();
        assert!(
            matches!(error, McpError::Handshake { .. }),
            "{status}: {error}"
        );
    }
}

#[tokio::test]
async fn two_servers_of_one_name_are_refused_and_two_names_keep_them_apart() {
    let Some(server) = mcp::or_skip("mcp_bad_input", mcp::misbehaving("")) else {
        return;
    };
    let first = server.clone().connect("bad").await.unwrap();
    let second = server.clone().connect("bad").await.unwrap();
    let other = server.connect("other").await.unwrap();
    let mut chat = Chat::new(ScriptedProvider::new());
    chat.with_mcp(&first).unwrap();
    let error = chat.with_mcp(&second).unwrap_err();
    assert!(error.to_string().contains("`bad`"), "{error}");
    chat.with_mcp(&other).unwrap();
    let mut names: Vec<String> = chat
        .tools()
        .iter()
        .map(|t| t.spec().joined_name().to_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["bad_echo", "other_echo"]);
}

#[tokio::test]
async fn a_server_that_exits_at_start_names_its_exit_status_and_stderr() {
    let missing = std::env::temp_dir().join("llm-tools-no-such-directory/inside");
    let Some(server) = mcp::or_skip("mcp_bad_input", mcp::filesystem_stdio(&missing)) else {
        return;
    };
    let error = server.connect("files").await.unwrap_err();
    let text = error.to_string();
    assert!(
        matches!(&error, McpError::Exited { status, .. } if status.code() == Some(1)),
        "{text}"
    );
    assert!(text.contains("`files`"), "{text}");
    assert!(text.contains("exit status: 1"), "{text}");
    assert!(
        text.contains("None of the specified directories are accessible"),
        "{text}"
    );
}

/// Whether `text` shows a Rust type or path (`rmcp::…`, `Observed<…>`).
fn shows_a_rust_type(text: &str) -> bool {
    text.contains("::")
        || text
            .as_bytes()
            .windows(2)
            .any(|w| w[0].is_ascii_alphanumeric() && w[1] == b'<')
}

#[tokio::test]
async fn an_http_connect_failure_names_the_server_and_url_and_no_rust_type() {
    let port = mcp::free_port().unwrap();
    let error = llm_tools_mcp::McpServer::http(format!(
        "http://127.0.0.1:{port}/mcp?api_key=s3cr3t&tenant=acme"
    ))
    .timeout(Duration::from_secs(10))
    .connect("remote")
    .await
    .unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, McpError::Handshake { .. }), "{text}");
    assert!(text.contains("`remote`"), "{text}");
    assert!(
        text.contains(&format!(
            "http://127.0.0.1:{port}/mcp?api_key=<redacted>&tenant=<redacted>"
        )),
        "{text}"
    );
    assert!(!text.contains("s3cr3t"), "{text}");
    assert!(!shows_a_rust_type(&text), "{text}");
    assert!(!text.contains("rmcp"), "{text}");
}

/// A server that names a new tool with a 6 MiB description at each listing cannot make the
/// session trust more than a listing's worth of definitions (32 MiB): five fit, and from the
/// sixth on each new one is left out (before, every one was kept, up to 10,000 of them, and
/// each listing copied them all). Two tools whose names are over 1 MiB, mapping to one local
/// name, are left out before anything names them: no log line of the library holds them.
#[test]
fn new_large_tools_past_the_trusted_bytes_are_left_out_and_long_names_reach_no_log() {
    llm_tools_tests::run_alone(
        "child_new_large_tools_past_the_trusted_bytes_are_left_out_and_long_names_reach_no_log",
        1,
    );
}

/// Run in a process of its own, where its subscriber sees every line (see
/// `llm_tools_tests::run_alone`).
#[tokio::test]
#[ignore = "run in a process of its own by new_large_tools_past_the_trusted_bytes_are_left_out_and_long_names_reach_no_log"]
async fn child_new_large_tools_past_the_trusted_bytes_are_left_out_and_long_names_reach_no_log() {
    let Some(server) = mcp::or_skip("mcp_bad_input", mcp::misbehaving("rotating_tools")) else {
        return;
    };
    let (captured, _guard) =
        llm_tools_tests::CapturedLog::start(Some("llm_tools=trace,llm_tools_mcp=trace"));

    let client = server.connect("bad").await.unwrap();
    let mut names = client.tool_names();
    names.sort();
    assert_eq!(names, ["bad_big_1", "bad_echo"]);
    for listing in 2..=8 {
        client.refresh_tools().await.unwrap();
        let mut names = client.tool_names();
        names.sort();
        if listing <= 5 {
            assert_eq!(names, [format!("bad_big_{listing}"), "bad_echo".into()]);
        } else {
            assert_eq!(names, ["bad_echo"], "listing {listing}");
        }
    }
    assert_eq!(
        done({
            let model = ScriptedProvider::new()
                .then_call("bad_echo", json!({"text": "hi"}))
                .then_text("Echoed.");
            let mut chat = Chat::new(model);
            chat.with_mcp(&client).unwrap();
            chat.ask("Echo").await.unwrap()
        })
        .text(),
        "Echoed."
    );

    let log = captured.text();
    assert!(
        log.contains("its name is longer than a tool name may be"),
        "{}",
        &log[..log.len().min(4096)]
    );
    assert!(
        log.contains("a new one is left out"),
        "{}",
        &log[..log.len().min(4096)]
    );
    let longest = log.lines().map(str::len).max().unwrap_or(0);
    assert!(longest < 16 * 1024, "a log line of {longest} bytes");
}

/// A client of the misbehaving server in `mode` (one that notes each `tools/list` as a line
/// of a file), with 2 s for each answer, and how many listings the server saw so far; `None`
/// when the server cannot run here. The folder holds the file while the test runs.
async fn relisting_client(
    mode: &str,
) -> Option<(
    tempfile::TempDir,
    llm_tools_mcp::McpClient,
    impl Fn() -> usize,
)> {
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("listings");
    let server = mcp::or_skip(
        "mcp_bad_input",
        mcp::misbehaving(mode).map(|s| s.arg(&seen)),
    )?;
    let client = server
        .timeout(Duration::from_secs(2))
        .connect("bad")
        .await
        .unwrap();
    let listings = move || std::fs::read_to_string(&seen).unwrap().lines().count();
    Some((dir, client, listings))
}

/// A server that announces a change of its tools and then never answers `tools/list` costs
/// one listing, not one per request: the chat keeps the previous list, and the next try waits
/// (5 s, doubling). Before, every later request of the chat waited the client's whole timeout
/// on another listing.
#[tokio::test]
async fn a_changed_list_the_server_never_sends_is_not_asked_for_at_every_request() {
    let Some((_dir, client, listings)) = relisting_client("hang_on_relist").await else {
        return;
    };
    assert_eq!(listings(), 1);
    let model = ScriptedProvider::new()
        .then_call("bad_echo", json!({"text": "hi"}))
        .then_text("Echoed.")
        .then_call("bad_echo", json!({"text": "again"}))
        .then_text("Echoed again.")
        .then_text("Still here.")
        .then_text("And here.");
    let mut chat = Chat::new(model);
    chat.with_mcp(&client).unwrap();
    // The call announces a change: the request after it lists, which fails after 2 s.
    assert_eq!(done(chat.ask("Echo").await.unwrap()).text(), "Echoed.");
    assert_eq!(listings(), 2);
    // The tool still works from the previous list, and it announces again; the requests of
    // the next turns do not list again while the wait runs.
    assert_eq!(
        done(chat.ask("Again").await.unwrap()).text(),
        "Echoed again."
    );
    assert_eq!(
        done(chat.ask("Still?").await.unwrap()).text(),
        "Still here."
    );
    assert_eq!(done(chat.ask("And?").await.unwrap()).text(), "And here.");
    assert_eq!(listings(), 2);
    assert_eq!(client.tool_names(), ["bad_echo"]);
}

/// A change the application is asked about waits with its new definition, which counts with
/// the trusted ones: a 12 MiB change of `grow` beside 21 MiB of trusted definitions is refused,
/// not kept waiting (before, waiting changes were unbounded and copied at every listing).
#[tokio::test]
async fn a_change_waiting_for_the_application_counts_with_the_trusted_bytes() {
    let Some(server) = mcp::or_skip("mcp_bad_input", mcp::misbehaving("growing_drift")) else {
        return;
    };
    let client = server
        .on_tool_drift(|_| llm_tools_mcp::DriftDecision::Ask)
        .connect("bad")
        .await
        .unwrap();
    client.refresh_tools().await.unwrap();
    client.refresh_tools().await.unwrap();
    let mut names = client.tool_names();
    names.sort();
    assert_eq!(names, ["bad_a3", "bad_echo", "bad_grow"]);
    client.refresh_tools().await.unwrap();
    assert!(client.pending_drifts().is_empty(), "a 12 MiB change waits");
    assert_eq!(client.tool_names(), ["bad_echo"], "`grow` left the chat");
}

/// A change the application's drift handler accepts is trusted in place of the old definition
/// only within the trusted bytes: a 12 MiB `grow` beside 21 MiB of trusted definitions leaves
/// the chat instead, at that listing and the next, and nothing waits for a decision.
#[tokio::test]
async fn an_accepted_change_past_the_trusted_bytes_leaves_the_chat() {
    let Some(server) = mcp::or_skip("mcp_bad_input", mcp::misbehaving("growing_drift")) else {
        return;
    };
    let client = server
        .on_tool_drift(|_| llm_tools_mcp::DriftDecision::Accept)
        .connect("bad")
        .await
        .unwrap();
    client.refresh_tools().await.unwrap();
    client.refresh_tools().await.unwrap();
    let mut names = client.tool_names();
    names.sort();
    assert_eq!(names, ["bad_a3", "bad_echo", "bad_grow"]);
    for listing in 4..=5 {
        client.refresh_tools().await.unwrap();
        assert_eq!(client.tool_names(), ["bad_echo"], "listing {listing}");
        assert!(client.pending_drifts().is_empty(), "listing {listing}");
    }
}

/// The wait after a failed listing of an announced change ends when a listing succeeds (here
/// the application's `refresh_tools`): the next announced change is listed before the next
/// request again.
#[tokio::test]
async fn a_listing_that_succeeds_ends_the_wait_after_a_failed_one() {
    let Some((_dir, client, listings)) = relisting_client("hang_on_second_list").await else {
        return;
    };
    let model = ScriptedProvider::new()
        .then_call("bad_echo", json!({"text": "hi"}))
        .then_text("Echoed.")
        .then_call("bad_echo", json!({"text": "again"}))
        .then_text("Echoed again.");
    let mut chat = Chat::new(model);
    chat.with_mcp(&client).unwrap();
    // The call announces a change; the listing before the next request goes unanswered.
    assert_eq!(done(chat.ask("Echo").await.unwrap()).text(), "Echoed.");
    assert_eq!(listings(), 2);
    // The application lists, and the server answers.
    client.refresh_tools().await.unwrap();
    assert_eq!(listings(), 3);
    let mut names = client.tool_names();
    names.sort();
    assert_eq!(names, ["bad_echo", "bad_t3"]);
    // The next call announces again: listed before the next request, no wait.
    assert_eq!(
        done(chat.ask("Again").await.unwrap()).text(),
        "Echoed again."
    );
    assert_eq!(listings(), 4);
    let mut names = client.tool_names();
    names.sort();
    assert_eq!(names, ["bad_echo", "bad_t4"]);
}
