//! A recognisable canary secret configured in every place a secret can be (an API key as a
//! bearer token, in a header, in the query; a subscription key given as a plain query
//! parameter, and a query parameter the configuration marks secret; AWS keys and a session token signing with SigV4;
//! a Bedrock API key; an OAuth client secret and refresh token; a PostgreSQL password), each
//! provider driven through its error paths against the loopback replay server (a 401, a
//! malformed body, a stream cut short, a refused connection) with a recorder attached and a
//! `tracing` subscriber capturing every event and span field at the most verbose level. The
//! canary is then searched in everything: the captured log, the recordings, the `Display` and
//! `Debug` of every error, of every configuration and provider, and of what the replay server
//! received. It appears nowhere.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use llm_tools_core::chat::Chat;
use llm_tools_core::{Message, Provider, Request};
use llm_tools_providers::anthropic::{Anthropic, AnthropicConfig};
use llm_tools_providers::bedrock::{AwsCredentials, Bedrock, BedrockConfig};
use llm_tools_providers::cohere::{Cohere, CohereConfig};
use llm_tools_providers::gemini::{Gemini, GeminiConfig, GoogleCredentials};
use llm_tools_providers::http::RetryPolicy;
use llm_tools_providers::ollama::{Ollama, OllamaConfig};
use llm_tools_providers::openai::{OpenAiChat, OpenAiConfig, OpenAiResponses};
use llm_tools_providers::record::{Interaction, RecordedResponse, Recorder};
use llm_tools_providers::replay::ReplayServer;
use llm_tools_tests::CapturedLog;
use llm_tools_tests::fixtures::Weather;
use llm_tools_tests::serving;
use serde_json::{Value, json};

const CANARY: &str = "canary-5ec7e7-do-not-print";

/// The error paths every provider is driven through, in order: a 401, a body that is not
/// JSON, a stream cut short (a 200 whose stream ends at once), a success-shaped 500, and a
/// 403 quoting the credentials.
fn failures(url: &str) -> Vec<Interaction> {
    vec![
        serving::exchange(
            url,
            RecordedResponse::json(
                401,
                r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}"#,
            ),
        ),
        serving::exchange(url, RecordedResponse::json(200, "<html>not json</html>")),
        serving::exchange(url, RecordedResponse::sse("").disconnected()),
        serving::exchange(url, RecordedResponse::json(500, r#"{"message":"boom"}"#)),
        // A refusal quoting the credential it was sent, as AWS's signature errors quote the
        // canonical request, session token and all.
        serving::exchange(
            url,
            RecordedResponse::json(
                403,
                format!(
                    r#"{{"message":"The request signature we calculated does not match. The canonical request: x-amz-security-token:{CANARY}\nauthorization: Bearer {CANARY}"}}"#
                ),
            ),
        ),
    ]
}

/// Drives a provider through the failures, returning everything it showed, and what the
/// replay server received when `with_server` (the server knows only the well-known secret
/// names: a query parameter only the provider's configuration marks secret shows there, at
/// the server it was sent to).
async fn drive(provider: Box<dyn Provider>, server: &ReplayServer, with_server: bool) -> String {
    let mut shown = format!("{:?}", provider.protocol());
    let mut chat = Chat::new(provider);
    chat.with_tools(Weather).unwrap();
    for stream in [false, false, true, false, false] {
        let err = if stream {
            use futures::StreamExt;
            let mut events = chat.ask_stream("Hi");
            let mut last = None;
            while let Some(e) = events.next().await {
                if let Err(e) = e {
                    last = Some(e);
                }
            }
            last
        } else {
            chat.ask("Hi").await.err()
        };
        if let Some(err) = err {
            shown.push_str(&format!("\n{err}\n{err:?}"));
        }
    }
    if with_server {
        shown.push_str(&format!("\n{:?}", server.received()));
    }
    shown.push_str(&format!("\n{:?}", chat.messages()));
    shown
}

fn assert_clean(what: &str, text: &str) {
    assert!(
        !text.contains(CANARY),
        "the canary appears in {what}:\n{text}"
    );
}

#[tokio::test]
async fn the_canary_appears_in_no_error_log_recording_or_debug_output() {
    let (captured, _guard) = CapturedLog::start(None);
    let recorder = Recorder::new();
    let no_retries = RetryPolicy::none();
    let mut shown = String::new();

    // Each provider with the canary where its protocol keeps the secret.
    let cases: Vec<(&str, &str)> = vec![
        ("openai-responses", "https://api.openai.com/v1/responses"),
        ("openai-chat", "https://api.openai.com/v1/chat/completions"),
        (
            "openai-subscription-key",
            "https://gateway.example/openai/v1/chat/completions",
        ),
        (
            "openai-secret-query",
            "https://gateway.example/openai/v1/chat/completions",
        ),
        ("anthropic", "https://api.anthropic.com/v1/messages"),
        (
            "gemini-header",
            "https://generativelanguage.googleapis.com/v1beta/models/m:generateContent",
        ),
        (
            "gemini-query",
            "https://generativelanguage.googleapis.com/v1beta/models/m:generateContent",
        ),
        (
            "bedrock-sigv4",
            "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse",
        ),
        (
            "bedrock-key",
            "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse",
        ),
        ("cohere", "https://api.cohere.com/v2/chat"),
        ("ollama", "http://localhost:11434/api/chat"),
        (
            "vertex",
            "https://aiplatform.googleapis.com/v1beta1/projects/p/locations/global/publishers/google/models/m:generateContent",
        ),
    ];
    for (name, url) in cases {
        let mut interactions = failures(url);
        if name == "vertex" {
            // The token exchange before each request (the 401 drops the cached token).
            let token = || {
                serving::exchange(
                    "https://oauth2.googleapis.com/token",
                    RecordedResponse::json(
                        200,
                        json!({"access_token": format!("ya29.{CANARY}"), "expires_in": 3599})
                            .to_string(),
                    ),
                )
            };
            interactions.insert(0, token());
            interactions.insert(2, token());
        }
        let server = ReplayServer::with_interactions(interactions).await.unwrap();
        let base = server.url();
        let provider: Box<dyn Provider> = match name {
            "openai-responses" => Box::new(
                OpenAiResponses::new(
                    OpenAiConfig::openai("m")
                        .with_base_url(&base)
                        .with_api_key(CANARY)
                        .with_retry(no_retries.clone())
                        .with_recorder(recorder.clone()),
                )
                .unwrap(),
            ),
            "openai-chat" => Box::new(
                OpenAiChat::new(
                    OpenAiConfig::openai("m")
                        .with_base_url(&base)
                        .with_api_key(CANARY)
                        .with_retry(no_retries.clone())
                        .with_recorder(recorder.clone()),
                )
                .unwrap(),
            ),
            "openai-subscription-key" => Box::new(
                OpenAiChat::new(
                    OpenAiConfig::openai("m")
                        .with_base_url(&base)
                        .with_api_key("sk-another-secret")
                        .with_query("subscription-key", CANARY)
                        .with_retry(no_retries.clone())
                        .with_recorder(recorder.clone()),
                )
                .unwrap(),
            ),
            "openai-secret-query" => Box::new(
                OpenAiChat::new(
                    OpenAiConfig::openai("m")
                        .with_base_url(&base)
                        .with_api_key("sk-another-secret")
                        .with_secret_query("gateway-pass", CANARY)
                        .with_retry(no_retries.clone())
                        .with_recorder(recorder.clone()),
                )
                .unwrap(),
            ),
            "anthropic" => Box::new(
                Anthropic::new(
                    AnthropicConfig::new("m")
                        .with_base_url(&base)
                        .with_api_key(CANARY)
                        .with_retry(no_retries.clone())
                        .with_recorder(recorder.clone()),
                )
                .unwrap(),
            ),
            "gemini-header" => Box::new(
                Gemini::new(
                    GeminiConfig::new("m")
                        .with_base_url(&base)
                        .with_api_key(CANARY)
                        .with_retry(no_retries.clone())
                        .with_recorder(recorder.clone()),
                )
                .unwrap(),
            ),
            "gemini-query" => {
                let mut c = GeminiConfig::new("m")
                    .with_base_url(&base)
                    .with_api_key(CANARY)
                    .with_retry(no_retries.clone())
                    .with_recorder(recorder.clone());
                c = c.with_query("key", CANARY);
                Box::new(Gemini::new(c).unwrap())
            }
            "bedrock-sigv4" => Box::new(
                Bedrock::new(
                    BedrockConfig::new("m")
                        .with_endpoint(&base)
                        .with_credentials(
                            AwsCredentials::new("AKIDTEST", CANARY).with_session_token(CANARY),
                        )
                        .with_retry(no_retries.clone())
                        .with_recorder(recorder.clone()),
                )
                .unwrap(),
            ),
            "bedrock-key" => Box::new(
                Bedrock::new(
                    BedrockConfig::new("m")
                        .with_endpoint(&base)
                        .with_bedrock_api_key(CANARY)
                        .with_retry(no_retries.clone())
                        .with_recorder(recorder.clone()),
                )
                .unwrap(),
            ),
            "cohere" => Box::new(
                Cohere::new(
                    CohereConfig::new("m")
                        .with_base_url(&base)
                        .with_api_key(CANARY)
                        .with_retry(no_retries.clone())
                        .with_recorder(recorder.clone()),
                )
                .unwrap(),
            ),
            "ollama" => Box::new(
                Ollama::new(
                    OllamaConfig::new("m")
                        .with_base_url(&base)
                        .with_api_key(CANARY)
                        .with_retry(no_retries.clone())
                        .with_recorder(recorder.clone()),
                )
                .unwrap(),
            ),
            _ => Box::new(
                Gemini::new(
                    GeminiConfig::vertex("p", "global", "m")
                        .with_base_url(&base)
                        .with_token_uri(format!("{base}/token"))
                        .with_google_credentials(GoogleCredentials::refresh_token(
                            "client", CANARY, CANARY,
                        ))
                        .with_retry(no_retries.clone())
                        .with_recorder(recorder.clone()),
                )
                .unwrap(),
            ),
        };
        let text = drive(provider, &server, name != "openai-secret-query").await;
        assert_clean(name, &text);
        shown.push_str(&text);
    }

    // A refused connection, with the key in the query.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let gemini = Gemini::new(
        GeminiConfig::new("m")
            .with_base_url(format!("http://127.0.0.1:{port}/v1beta"))
            .with_api_key(CANARY)
            .with_query("key", CANARY)
            .with_retry(RetryPolicy::none().with_max_retries(1))
            .with_recorder(recorder.clone()),
    )
    .unwrap();
    let messages = [Message::user("Hi")];
    let err = gemini
        .complete(Request::new(&messages, &[]))
        .await
        .unwrap_err();
    assert_clean("a refused connection's error", &format!("{err} {err:?}"));
    assert_clean(
        "a provider's Debug",
        &format!("{gemini:?} {:?}", gemini.config()),
    );

    // A gateway's base URL with the canary as the password of its user info (sent as Basic
    // credentials): served the error paths, and refused a connection.
    let server = ReplayServer::with_interactions(failures(
        "https://gateway.example/openai/v1/chat/completions",
    ))
    .await
    .unwrap();
    let with_password = |base: &str| base.replacen("://", &format!("://gateway:{CANARY}@"), 1);
    let gateway = OpenAiChat::new(
        OpenAiConfig::openai("m")
            .with_base_url(with_password(&server.url()))
            .with_api_key("sk-another-secret")
            .with_retry(no_retries.clone())
            .with_recorder(recorder.clone()),
    )
    .unwrap();
    assert_clean(
        "a gateway's Debug",
        &format!("{gateway:?} {:?}", gateway.config()),
    );
    let text = drive(Box::new(gateway), &server, false).await;
    assert_clean("a gateway with a password", &text);
    let refused = OpenAiChat::new(
        OpenAiConfig::openai("m")
            .with_base_url(with_password(&format!("http://127.0.0.1:{port}/v1")))
            .with_api_key("sk-another-secret")
            .with_retry(RetryPolicy::none().with_max_retries(1))
            .with_recorder(recorder.clone()),
    )
    .unwrap();
    let err = refused
        .complete(Request::new(&messages, &[]))
        .await
        .unwrap_err();
    assert_clean(
        "a refused connection's error, its URL with a password",
        &format!("{err} {err:?}"),
    );

    // A PostgreSQL connection string with the canary as its password, to nowhere.
    let url = format!("postgres://user:{CANARY}@127.0.0.1:{port}/db?connect_timeout=2");
    match llm_tools_core::store::PostgresStore::connect(&url).await {
        Ok(store) => assert_clean("a store's Debug", &format!("{store:?}")),
        Err(e) => assert_clean("a store's connection error", &format!("{e} {e:?}")),
    }

    let recording = serde_json::to_string(&recorder.recording("all", "all", "canary")).unwrap();
    assert_clean("the recordings", &recording);
    let log = captured.text();
    assert_clean("the captured log", &log);
    // The sweep saw the traffic it claims to have seen.
    assert!(log.contains("sending a request"), "{log}");
    assert!(
        recording.contains("<redacted>") || recording.contains("_API_KEY>"),
        "{recording}"
    );
    assert!(shown.contains("401"), "{shown}");
}

/// A server that echoes the request into a field of the wrong type (a string where a number or
/// a list goes) logs nothing of it. A field a stream reads leniently (a delta event's
/// `output_index`, a Gemini chunk's `candidates`) reads as absent, silently; a part read
/// strictly (a Responses item, Gemini's grounding metadata) has its event or metadata skipped
/// with a warning that names what was wrong and where, never the text, which here holds the
/// key. Streamed (Responses, Gemini) and whole (Gemini's metadata) alike.
#[tokio::test]
async fn a_mistyped_field_echoing_the_key_reaches_no_log_line() {
    use futures::StreamExt as _;

    let (captured, _guard) = CapturedLog::start(None);
    let echoed = format!("Authorization: Bearer {CANARY}");

    let responses_body = json!({"id": "resp_1", "object": "response", "status": "completed",
        "model": "m", "output": [{"type": "message", "id": "msg_1", "role": "assistant",
        "status": "completed", "content": [{"type": "output_text", "text": "Hi", "annotations": []}]}],
        "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}});
    let responses_stream = serving::sse_events(&[
        (
            "response.output_text.delta",
            json!({"type": "response.output_text.delta", "item_id": "msg_1",
                   "output_index": echoed, "content_index": 0, "delta": "Hi"}),
        ),
        (
            "response.output_item.done",
            json!({"type": "response.output_item.done", "output_index": 0,
                   "item": {"type": "message", "id": "msg_1", "role": "assistant",
                            "content": echoed}}),
        ),
        (
            "response.completed",
            json!({"type": "response.completed", "response": responses_body}),
        ),
    ]);
    let gemini_answer = |grounding: Value| {
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Hi"}]},
            "finishReason": "STOP", "groundingMetadata": grounding}],
            "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1}})
    };
    let gemini_whole = gemini_answer(json!({"webSearchQueries": echoed}));
    let gemini_chunks = [
        json!({"candidates": echoed}),
        json!({"candidates": [{"groundingMetadata": {"webSearchQueries": echoed}}]}),
    ];
    let server = ReplayServer::with_interactions(vec![
        serving::exchange(
            "https://api.openai.com/v1/responses",
            RecordedResponse::sse(responses_stream),
        ),
        serving::exchange(
            "https://generativelanguage.googleapis.com/v1beta/models/m:generateContent",
            RecordedResponse::json(200, gemini_whole.to_string()),
        ),
        serving::exchange(
            "https://generativelanguage.googleapis.com/v1beta/models/m:streamGenerateContent?alt=sse",
            RecordedResponse::sse(format!(
                "data: {}\r\n\r\ndata: {}\r\n\r\ndata: {}\r\n\r\n",
                gemini_chunks[0],
                gemini_chunks[1],
                gemini_answer(json!(null))
            )),
        ),
    ])
    .await
    .unwrap();
    let base = server.url();
    let responses = OpenAiResponses::new(
        OpenAiConfig::openai("m")
            .with_base_url(&base)
            .with_api_key("sk-another-secret")
            .with_retry(RetryPolicy::none()),
    )
    .unwrap();
    let gemini = Gemini::new(
        GeminiConfig::new("m")
            .with_base_url(&base)
            .with_api_key("another-secret")
            .with_retry(RetryPolicy::none()),
    )
    .unwrap();
    let messages = [Message::user("Hi")];
    let mut events = responses
        .stream(Request::new(&messages, &[]))
        .await
        .unwrap();
    while let Some(event) = events.next().await {
        event.unwrap();
    }
    gemini.complete(Request::new(&messages, &[])).await.unwrap();
    let mut events = gemini.stream(Request::new(&messages, &[])).await.unwrap();
    while let Some(event) = events.next().await {
        event.unwrap();
    }

    let log = captured.text();
    assert_clean("the captured log", &log);
    // Each strict reader did skip what it could not read, and said so: the Responses item, and
    // Gemini's grounding in the whole answer and in the stream.
    assert_eq!(
        log.matches("skipping an unreadable stream event").count(),
        1,
        "{log}"
    );
    assert_eq!(
        log.matches("skipping unreadable answer metadata").count(),
        2,
        "{log}"
    );
    assert_eq!(log.matches("invalid type: string").count(), 3, "{log}");
}
