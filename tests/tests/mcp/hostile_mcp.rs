//! MCP servers as hostile parties of the client: a stderr line without end, a redirect to
//! another origin, elicitation URLs of any scheme, secrets in the configuration that must show
//! nowhere, requests the server cancels (sampling, questions), questions asked at once, and an
//! event stream that ends at every open, and a handshake error answer holding terminal escapes. Each case ends in a bound or a typed outcome, with real
//! processes and loopback servers; sizes and counts are asserted, never durations (a timeout
//! only turns a hang into a failure).
#![allow(clippy::unwrap_used, clippy::panic)]

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use llm_tools_core::chat::{Chat, Outcome};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{Message, Role};
use llm_tools_mcp::{DEFAULT_MAX_STDERR_LINE, McpChat as _, McpError, McpServer};
use llm_tools_tests::mcp;
use serde_json::json;

const CANARY: &str = "canary-3c9d-mcp-do-not-print";

fn tool_result(chat: &Chat) -> Message {
    chat.messages()
        .iter()
        .find(|m| m.role == Role::Tool)
        .unwrap()
        .clone()
}

#[tokio::test]
async fn a_stderr_line_without_a_newline_is_kept_to_its_cap() {
    // The server writes 20 MiB to stderr with no newline before it answers anything, so by
    // the time the session is open the client has read all but a pipe's worth of it.
    let Some(server) = mcp::or_skip("hostile_mcp", mcp::misbehaving("stderr_flood")) else {
        return;
    };
    let client = server.clone().connect("flood").await.unwrap();
    let tail = client.stderr_tail();
    let kept: usize = tail.iter().map(String::len).sum();
    assert!(
        kept <= DEFAULT_MAX_STDERR_LINE + 64,
        "{kept} bytes of stderr kept"
    );
    let line = tail.last().unwrap();
    assert!(line.starts_with(&"x".repeat(DEFAULT_MAX_STDERR_LINE)));
    assert!(line.ends_with("bytes cut]"), "{}", &line[line.len() - 40..]);
    // The session works all the same.
    assert_eq!(client.tool_names(), ["flood_echo"]);

    let small = server.max_stderr_line(100).connect("flood").await.unwrap();
    let tail = small.stderr_tail();
    let line = tail.last().unwrap();
    assert!(line.len() <= 100 + 64, "{line}");
    assert!(line.starts_with(&"x".repeat(100)) && !line[100..].starts_with('x'));
}

#[tokio::test]
async fn a_server_that_floods_stderr_and_exits_gives_a_bounded_error_with_its_status() {
    let Some(server) = mcp::or_skip("hostile_mcp", mcp::misbehaving("stderr_flood_exit")) else {
        return;
    };
    let error = server.connect("flood").await.unwrap_err();
    let McpError::Exited { status, stderr, .. } = &error else {
        panic!("expected the exit, got {error}");
    };
    assert_eq!(status.code(), Some(7));
    assert_eq!(stderr[0], "starting the flood");
    assert_eq!(stderr.len(), 2, "{:?}", stderr.iter().map(String::len));
    let text = error.to_string();
    assert!(
        text.len() < 2 * DEFAULT_MAX_STDERR_LINE,
        "{} bytes",
        text.len()
    );
    assert!(text.contains("`flood`") && text.contains("exit status: 7"));
}

#[tokio::test]
async fn a_redirect_to_another_origin_is_refused_and_that_origin_receives_nothing() {
    let other = mcp::Listening::new().unwrap();
    let url = mcp::redirecting_to(&other.url()).unwrap();
    let error = McpServer::http(&url)
        .bearer_token(CANARY)
        .header("X-Api-Key", CANARY)
        // Only reached when the redirect is followed (the other port never answers).
        .timeout(Duration::from_secs(10))
        .connect("redirected")
        .await
        .unwrap_err();
    let McpError::CrossOriginRedirect { from, to, .. } = &error else {
        panic!("expected a refused redirect, got {error}");
    };
    let origin = |u: &str| u.trim_end_matches("/mcp").to_owned();
    assert_eq!(
        (from.as_str(), to.as_str()),
        (&*origin(&url), &*origin(&other.url()))
    );
    let text = error.to_string();
    assert!(text.contains(from) && text.contains(to), "{text}");
    assert!(!text.contains(CANARY), "{text}");
    assert_eq!(other.received(), Vec::<String>::new());
}

/// Everything a `tracing` subscriber writes.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn secrets_of_a_server_show_in_no_debug_error_or_log() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let mut shown = String::new();

    let closed = mcp::free_port().unwrap();
    let other = mcp::Listening::new().unwrap();
    let redirecting = mcp::redirecting_to(&other.url()).unwrap();
    // Servers (or gateways) whose error answers echo the credentials they were sent: as text,
    // as a JSON-RPC error, and past the start of a long body kept for the error (the secret
    // straddling where it is cut).
    let echoed = format!("invalid token '{CANARY}'");
    let straddling = format!("{}{CANARY}", "x".repeat(64 * 1024 - 10));
    let json_error = serde_json::json!({"jsonrpc": "2.0", "id": 0,
        "error": {"code": -32600, "message": echoed}})
    .to_string();
    let remote = [
        format!("http://127.0.0.1:{closed}/mcp?api_key={CANARY}&tenant=acme"),
        format!("http://user:{CANARY}@127.0.0.1:{closed}/mcp"),
        format!("{redirecting}?sig={CANARY}"),
        mcp::answering("401 Unauthorized", "text/plain", &echoed).unwrap(),
        mcp::answering("400 Bad Request", "application/json", &json_error).unwrap(),
        mcp::answering("403 Forbidden", "text/plain", &straddling).unwrap(),
    ];
    for url in remote {
        let server = McpServer::http(url)
            .bearer_token(CANARY)
            .header("X-Api-Key", CANARY)
            .timeout(Duration::from_secs(10));
        shown.push_str(&format!("{server:?}\n"));
        let error = server.connect("remote").await.unwrap_err();
        shown.push_str(&format!("{error}\n{error:?}\n"));
    }
    let local = McpServer::stdio("sh")
        .args(["-c", "exit 3"])
        .env("API_TOKEN", CANARY);
    shown.push_str(&format!("{local:?}\n"));
    assert!(shown.contains("API_TOKEN"), "the variable's name shows");
    let error = local.connect("local").await.unwrap_err();
    shown.push_str(&format!("{error}\n{error:?}\n"));

    let log = String::from_utf8_lossy(&captured.0.lock().unwrap()).into_owned();
    assert!(
        shown.contains("invalid token '<redacted>'"),
        "the server's words show, the token redacted:\n{shown}"
    );
    for cut in 8..CANARY.len() {
        assert!(
            !shown.contains(&CANARY[..cut]) || shown.contains(CANARY),
            "a part of the canary shows"
        );
    }
    assert!(!shown.contains(CANARY), "the canary shows in:\n{shown}");
    assert!(!log.contains(CANARY), "the canary shows in the log:\n{log}");
    assert!(
        shown.contains("api_key=<redacted>&tenant=<redacted>"),
        "{shown}"
    );
}

/// A server's error answer to the handshake reaches the error as every server text does:
/// control characters shown escaped (a terminal hyperlink to `file:` behind harmless words
/// cannot render), the text cut to 8 KiB.
#[tokio::test]
async fn a_handshake_error_answer_shows_escaped_and_cut() {
    let link = "\u{1b}]8;;file:///etc/passwd\u{1b}\\Continue\u{1b}]8;;\u{1b}\\";
    let body = format!("{link} {}", "y".repeat(60 * 1024));
    let url = mcp::answering("400 Bad Request", "text/plain", &body).unwrap();
    let error = McpServer::http(url)
        .timeout(Duration::from_secs(10))
        .connect("remote")
        .await
        .unwrap_err()
        .to_string();
    let start: String = error.chars().take(300).collect();
    assert!(
        !error.contains('\u{1b}'),
        "an escape reached the error: {start:?}"
    );
    assert!(
        error.contains("\\u{1b}]8;;file:///etc/passwd"),
        "shown escaped: {start:?}"
    );
    assert!(error.len() < 9 * 1024, "{} bytes", error.len());
}

/// Calls the misbehaving server's `echo`, which asks the client to visit `url`.
async fn visit(url: &str) -> Option<(Outcome, Chat)> {
    let server = mcp::or_skip("hostile_mcp", mcp::misbehaving("url_elicitation"))?;
    let client = server.arg(url).connect("bad").await.unwrap();
    let model = ScriptedProvider::new()
        .then_call("bad_echo", json!({}))
        .then_text("Done.");
    let mut chat = Chat::new(model);
    chat.with_mcp(&client).unwrap();
    let outcome = chat.ask("Go").await.unwrap();
    Some((outcome, chat))
}

#[tokio::test]
async fn elicitation_urls_of_other_schemes_are_declined_without_asking() {
    for url in [
        "javascript:alert(document.cookie)",
        "file:///etc/passwd",
        "data:text/html,<script>alert(1)</script>",
        "http://login.example.com/authorize",
        "ftp://example.com/",
        "not a url",
    ] {
        let Some((outcome, chat)) = visit(url).await else {
            return;
        };
        assert!(matches!(outcome, Outcome::Done(_)), "{url}: {outcome:?}");
        assert!(chat.pending_questions().is_empty(), "{url}");
        assert_eq!(tool_result(&chat).text(), "action: decline", "{url}");
    }
}

#[tokio::test]
async fn https_and_loopback_http_elicitation_urls_reach_the_user() {
    for url in [
        "https://login.example.com/authorize?state=1",
        "http://127.0.0.1:8765/callback",
        "http://localhost:8765/callback",
        "http://[::1]:8765/callback",
    ] {
        let Some((outcome, chat)) = visit(url).await else {
            return;
        };
        assert!(matches!(outcome, Outcome::Paused(_)), "{url}: {outcome:?}");
        let pending = chat.pending_questions();
        assert_eq!(pending[0].question.url(), Some(url));
    }
}

/// Calls the client's tool `name` (no arguments) and returns its text.
async fn call_text(client: &llm_tools_mcp::McpClient, name: &str) -> String {
    mcp::output_text(&mcp::call(client, name, json!({})).await)
}

#[tokio::test]
async fn a_sampling_request_the_server_cancels_stops_its_model_call() {
    use llm_tools_mcp::{Sampling, SamplingDecision};
    use llm_tools_providers::http::RetryPolicy;
    use llm_tools_providers::openai::{OpenAiChat, OpenAiConfig};
    use tokio::io::AsyncReadExt as _;

    // The sampling model: a loopback endpoint that reads the model request and never answers.
    // It reports when the request arrived, and when the client closed the connection.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let (arrived_tx, arrived) = tokio::sync::oneshot::channel::<()>();
    let (closed_tx, closed) = tokio::sync::oneshot::channel::<usize>();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut read = Vec::new();
        let mut chunk = [0u8; 4096];
        let mut arrived_tx = Some(arrived_tx);
        loop {
            match socket.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => read.extend_from_slice(&chunk[..n]),
            }
            if read.windows(13).any(|w| w == b"Name a colour")
                && let Some(tx) = arrived_tx.take()
            {
                let _ = tx.send(());
            }
        }
        let _ = closed_tx.send(read.len());
    });
    let model = OpenAiChat::new(
        OpenAiConfig::openai("gpt-5-nano")
            .with_api_key("test-key")
            .with_base_url(&url)
            .with_retry(RetryPolicy::none()),
    )
    .unwrap();
    let sampling = Sampling::new(|_| async { SamplingDecision::Approve }).with_provider(model);
    let Some(server) = mcp::or_skip("hostile_mcp", mcp::misbehaving("sampling_cancelled")) else {
        return;
    };
    let client = server.sampling(sampling).connect("s").await.unwrap();

    assert_eq!(call_text(&client, "ask").await, "ask");
    tokio::time::timeout(Duration::from_secs(30), arrived)
        .await
        .expect("the model request never arrived")
        .unwrap();
    assert_eq!(call_text(&client, "cancel").await, "cancel");
    // The bound is the failure: without the cancellation the request stays open for the
    // sampling timeout (2 minutes).
    let read = tokio::time::timeout(Duration::from_secs(30), closed)
        .await
        .expect("the model request was not stopped when the server cancelled it")
        .unwrap();
    assert!(read > 0);
    client.close().await;
}

#[tokio::test]
async fn a_second_question_while_the_user_is_asked_one_is_cancelled_without_asking() {
    use std::sync::atomic::{AtomicUsize, Ordering};

    // The server asks two questions at once and reports the first answer it gets. The
    // application's handler keeps the first question open; a second question reaching it
    // would be accepted at once, and the server would report `accept`.
    let asked = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&asked);
    let Some(server) = mcp::or_skip("hostile_mcp", mcp::misbehaving("double_elicitation")) else {
        return;
    };
    let client = server
        .on_elicitation(move |_| {
            let n = counted.fetch_add(1, Ordering::SeqCst);
            async move {
                if n == 0 {
                    std::future::pending::<()>().await;
                }
                llm_tools_core::Answer::accept(json!({"ok": true}))
            }
        })
        .connect("asks")
        .await
        .unwrap();
    assert_eq!(call_text(&client, "echo").await, "first answer: cancel");
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    client.close().await;
}

#[tokio::test]
async fn an_event_stream_that_ends_at_every_open_is_opened_at_most_ten_times_a_minute() {
    use llm_tools_mcp::MAX_STREAM_OPENS_PER_MINUTE;

    // Each GET gets `retry: 0` and an ended stream: followed, the client would reconnect as
    // fast as it can for as long as the session lasts.
    let Some((_server, url)) = mcp::or_skip("hostile_mcp", mcp::python_http("reopening.py")) else {
        return;
    };
    let client = McpServer::http(url)
        .lifecycle(llm_tools_mcp::Lifecycle::Initialize)
        .connect("reopening")
        .await
        .unwrap();
    let gets = || async { call_text(&client, "gets").await.parse::<usize>().unwrap() };
    // Calls until the server has seen every open the client allows (each call is a round trip;
    // the bound only turns a hang into a failure).
    let mut seen = gets().await;
    for _ in 0..10_000 {
        if seen >= MAX_STREAM_OPENS_PER_MINUTE {
            break;
        }
        tokio::task::yield_now().await;
        seen = gets().await;
    }
    assert_eq!(seen, MAX_STREAM_OPENS_PER_MINUTE);
    // The session goes on, and the stream is not opened again within the minute.
    for _ in 0..50 {
        assert_eq!(gets().await, MAX_STREAM_OPENS_PER_MINUTE);
    }
    client.close().await;
}

#[tokio::test]
async fn a_question_the_server_cancels_frees_the_handler_for_the_next() {
    // The handler never answers question 1; the server cancels it and asks question 2, which
    // the handler accepts at once. Were question 1 still held, question 2 would be cancelled
    // every time it is asked.
    let Some(server) = mcp::or_skip("hostile_mcp", mcp::misbehaving("cancelled_elicitation"))
    else {
        return;
    };
    let client = server
        .on_elicitation(|question| async move {
            if question.message() == "Question 1" {
                std::future::pending::<()>().await;
            }
            llm_tools_core::Answer::accept(json!({"ok": true}))
        })
        .connect("asks")
        .await
        .unwrap();
    assert_eq!(call_text(&client, "echo").await, "second answer: accept");
    client.close().await;
}
