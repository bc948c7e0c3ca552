//! The Bedrock provider against failures served by the loopback replay server, through the real
//! chat loop: the recorded access-denied and context-length errors, throttling retried, a
//! stream exception, a corrupt event-stream frame and a cut stream as typed errors, and the
//! chat usable afterwards; no credential in any error.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use aws_smithy_eventstream::frame::write_message_to;
use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
use base64::Engine as _;
use llm_tools_core::ProviderErrorKind;
use llm_tools_core::chat::Chat;
use llm_tools_providers::bedrock::{AwsCredentials, Bedrock, BedrockConfig};
use llm_tools_providers::record::{Interaction, RecordedResponse, Recording};
use llm_tools_providers::replay::ReplayServer;
use llm_tools_tests::fixtures;
use llm_tools_tests::serving::{self, RetryLog, on_server, provider_error, stream_turn};
use serde_json::{Value, json};

const SECRET: &str = "canary-secret-9f27c1";

fn exchange(stream: bool, response: RecordedResponse) -> Interaction {
    let path = if stream {
        "converse-stream"
    } else {
        "converse"
    };
    serving::exchange(
        &format!("https://bedrock-runtime.us-east-1.amazonaws.com/model/m/{path}"),
        response,
    )
}

fn provider(server: &ReplayServer, retries: u32) -> (Bedrock, RetryLog) {
    let log = RetryLog::default();
    let config = BedrockConfig::new("us.amazon.nova-2-lite-v1:0")
        .with_credentials(AwsCredentials::new("AKIDTEST", SECRET).with_session_token(SECRET));
    (
        Bedrock::new(on_server(config, server, retries, &log)).unwrap(),
        log,
    )
}

fn text_answer(text: &str) -> RecordedResponse {
    RecordedResponse::json(
        200,
        json!({"output": {"message": {"role": "assistant", "content": [{"text": text}]}},
               "stopReason": "end_turn", "usage": {"inputTokens": 5, "outputTokens": 2, "totalTokens": 7}})
        .to_string(),
    )
}

/// One event-stream message.
fn message(kind: &str, name: &str, payload: &Value) -> Vec<u8> {
    let type_header = if kind == "exception" {
        ":exception-type"
    } else {
        ":event-type"
    };
    let m = Message::new(payload.to_string().into_bytes())
        .add_header(Header::new(
            ":message-type",
            HeaderValue::String(kind.to_owned().into()),
        ))
        .add_header(Header::new(
            type_header,
            HeaderValue::String(name.to_owned().into()),
        ))
        .add_header(Header::new(
            ":content-type",
            HeaderValue::String("application/json".to_owned().into()),
        ));
    let mut out = Vec::new();
    write_message_to(&m, &mut out).unwrap();
    out
}

fn event_stream(bytes: Vec<u8>) -> RecordedResponse {
    let mut r = RecordedResponse::new(200, "application/vnd.amazon.eventstream", "");
    r.body_base64 = Some(base64::engine::general_purpose::STANDARD.encode(bytes));
    r
}

fn hello_stream() -> Vec<u8> {
    let mut b = message("event", "messageStart", &json!({"role": "assistant"}));
    b.extend(message(
        "event",
        "contentBlockDelta",
        &json!({"contentBlockIndex": 0, "delta": {"text": "Hello"}}),
    ));
    b.extend(message(
        "event",
        "contentBlockStop",
        &json!({"contentBlockIndex": 0}),
    ));
    b.extend(message(
        "event",
        "messageStop",
        &json!({"stopReason": "end_turn"}),
    ));
    b.extend(message(
        "event",
        "metadata",
        &json!({"usage": {"inputTokens": 3, "outputTokens": 1, "totalTokens": 4}}),
    ));
    b
}

fn assert_no_secret(shown: &str) {
    assert!(!shown.contains(SECRET), "a credential in: {shown}");
}

#[tokio::test]
async fn the_recorded_errors_are_typed_and_not_retried() {
    for file in fixtures::recordings("bedrock-converse-errors") {
        let recording = Recording::load(&file).unwrap();
        let recorded = &recording.interactions[0].response;
        let server = ReplayServer::start(recording.clone()).await.unwrap();
        let (provider, retries) = provider(&server, 2);
        let mut chat = Chat::new(provider);
        let err = provider_error(chat.ask("Hi").await.unwrap_err());
        let body: Value = serde_json::from_str(&recorded.body).unwrap();
        assert_eq!(err.status(), Some(recorded.status), "{file:?}");
        assert_eq!(err.message(), body["message"].as_str().unwrap());
        assert!(!err.is_retryable());
        assert!(retries.seen().is_empty());
        assert_no_secret(&format!("{err} {err:?}"));
    }
}

#[tokio::test]
async fn throttling_is_retried_then_the_answer_comes() {
    let server = ReplayServer::with_interactions(vec![
        exchange(
            false,
            RecordedResponse::json(
                429,
                r#"{"message":"Too many requests, please wait before trying again."}"#,
            )
            .with_header(
                "x-amzn-ErrorType",
                "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/",
            ),
        ),
        exchange(false, text_answer("Hello!")),
    ])
    .await
    .unwrap();
    let (provider, retries) = provider(&server, 2);
    let mut chat = Chat::new(provider);
    let answer = chat.ask("Hi").await.unwrap();
    assert_eq!(answer.text().as_deref(), Some("Hello!"));
    let seen = retries.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].1.error_type(), Some("ThrottlingException"));
    // Each try was signed on its own.
    let received = server.received();
    assert!(received.iter().all(|r| r.header("authorization").is_some()));
}

#[tokio::test]
async fn a_stream_exception_is_a_typed_error_and_the_chat_goes_on() {
    let mut cut = message("event", "messageStart", &json!({"role": "assistant"}));
    cut.extend(message(
        "exception",
        "throttlingException",
        &json!({"message": "Too many tokens, please wait before trying again."}),
    ));
    let server = ReplayServer::with_interactions(vec![
        exchange(true, event_stream(cut)),
        exchange(true, event_stream(hello_stream())),
    ])
    .await
    .unwrap();
    let (provider, _) = provider(&server, 0);
    let mut chat = Chat::new(provider);
    let err = provider_error(stream_turn(&mut chat, "Hi").await.unwrap_err());
    assert_eq!(err.kind(), ProviderErrorKind::Stream);
    assert_eq!(err.error_type(), Some("throttlingException"));
    assert!(err.is_retryable());
    assert_no_secret(&format!("{err} {err:?}"));
    let (text, _) = stream_turn(&mut chat, "Hi again").await.unwrap();
    assert_eq!(text, "Hello");
}

#[tokio::test]
async fn a_corrupt_frame_and_a_cut_stream_are_typed_errors() {
    let mut corrupt = hello_stream();
    let last = corrupt.len() - 1;
    corrupt[last] ^= 0x5a; // the last message's checksum
    let full = hello_stream();
    let short = full[..full.len() / 2].to_vec();
    let server = ReplayServer::with_interactions(vec![
        exchange(true, event_stream(corrupt)),
        exchange(true, event_stream(short)),
        exchange(true, event_stream(hello_stream())),
    ])
    .await
    .unwrap();
    let (provider, _) = provider(&server, 0);
    let mut chat = Chat::new(provider);
    let err = provider_error(stream_turn(&mut chat, "Hi").await.unwrap_err());
    assert_eq!(err.kind(), ProviderErrorKind::Decode, "{err}");
    assert!(err.message().contains("event stream"), "{err}");
    let err = provider_error(stream_turn(&mut chat, "Hi").await.unwrap_err());
    assert!(
        matches!(
            err.kind(),
            ProviderErrorKind::Decode | ProviderErrorKind::Stream
        ),
        "{err}"
    );
    let (text, _) = stream_turn(&mut chat, "Hi").await.unwrap();
    assert_eq!(text, "Hello");
    // The failed turns left no half answer in the history.
    assert_eq!(
        chat.messages()
            .iter()
            .filter(|m| m.role == llm_tools_core::Role::Assistant)
            .count(),
        1
    );
}

#[test]
fn credentials_never_show_in_a_provider_or_its_configuration() {
    let config = BedrockConfig::new("m")
        .with_credentials(AwsCredentials::new("AKIDTEST", SECRET).with_session_token(SECRET));
    assert_no_secret(&format!("{config:?}"));
    let provider = Bedrock::new(config).unwrap();
    assert_no_secret(&format!("{provider:?} {provider:#?}"));
    let keyed = Bedrock::new(BedrockConfig::new("m").with_bedrock_api_key(SECRET)).unwrap();
    assert_no_secret(&format!("{keyed:?}"));
}

#[tokio::test]
async fn a_clock_skewed_signature_is_a_typed_error_naming_the_cause() {
    let server = ReplayServer::with_interactions(vec![exchange(
        false,
        RecordedResponse::json(
            403,
            r#"{"message":"Signature expired: 20260101T000000Z is now earlier than 20260101T001500Z (20260101T002000Z - 5 min.)"}"#,
        )
        .with_header("x-amzn-ErrorType", "InvalidSignatureException:http://internal.amazon.com/coral/com.amazon.coral.service/"),
    )])
    .await
    .unwrap();
    let (provider, retries) = provider(&server, 2);
    let mut chat = Chat::new(provider);
    let err = provider_error(chat.ask("Hi").await.unwrap_err());
    assert_eq!(err.status(), Some(403));
    assert_eq!(err.error_type(), Some("InvalidSignatureException"));
    assert!(err.message().contains("Signature expired"), "{err}");
    assert!(!err.is_retryable());
    assert!(retries.seen().is_empty());
    assert_no_secret(&format!("{err} {err:?}"));
}
