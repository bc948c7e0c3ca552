//! The HTTP layer against the loopback replay server: retries, typed errors, recording, streams.
#![cfg(feature = "replay")]
#![allow(clippy::unwrap_used)] // test helpers outside `#[test]` fns

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use llm_tools_core::ProviderErrorKind;
use llm_tools_providers::framing::{self, Framing};
use llm_tools_providers::http::{HttpClient, HttpSettings, RetryPolicy};
use llm_tools_providers::record::{Interaction, RecordedRequest, RecordedResponse, Recorder};
use llm_tools_providers::replay::ReplayServer;
use serde_json::json;

fn exchange(response: RecordedResponse) -> Interaction {
    Interaction::new(
        RecordedRequest::post("http://recorded/v1/x", json!({})),
        response,
    )
}

fn client(server: &ReplayServer, retry: RetryPolicy) -> (HttpClient, Arc<Mutex<Vec<Duration>>>) {
    let delays = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&delays);
    let mut settings = HttpSettings::new("test", server.url());
    settings.api_key = Some("sk-secret".into());
    settings.key_placeholder = "<TEST_API_KEY>".into();
    settings.retry = retry;
    settings.on_retry = Some(Arc::new(move |info| {
        seen.lock().unwrap().push(info.delay);
    }));
    (HttpClient::new(settings).unwrap(), delays)
}

fn fast_retries() -> RetryPolicy {
    RetryPolicy::default()
        .with_max_retries(3)
        .with_backoff(Duration::from_millis(1), Duration::from_millis(2))
}

#[tokio::test]
async fn rate_limit_with_retry_after_is_waited_out_then_succeeds() {
    let server = ReplayServer::with_interactions(vec![
        exchange(
            RecordedResponse::json(429, r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#)
                .with_header("retry-after-ms", "7"),
        ),
        exchange(RecordedResponse::json(200, r#"{"ok":true}"#)),
    ])
    .await
    .unwrap();
    let (client, delays) = client(&server, fast_retries());
    let response = client.post_json("/x", b"{}".to_vec(), None).await.unwrap();
    assert_eq!(&response.bytes().await.unwrap()[..], br#"{"ok":true}"#);
    assert_eq!(server.received().len(), 2);
    assert_eq!(*delays.lock().unwrap(), vec![Duration::from_millis(7)]);
}

#[tokio::test]
async fn server_errors_are_retried_with_backoff() {
    let server = ReplayServer::with_interactions(vec![
        exchange(RecordedResponse::json(
            500,
            r#"{"error":{"message":"boom"}}"#,
        )),
        exchange(RecordedResponse::json(503, "")),
        exchange(RecordedResponse::json(200, "{}")),
    ])
    .await
    .unwrap();
    let (client, delays) = client(&server, fast_retries());
    client.post_json("/x", b"{}".to_vec(), None).await.unwrap();
    assert!(server.is_done());
    assert_eq!(delays.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn retries_stop_at_the_maximum_and_the_last_error_is_returned() {
    let server = ReplayServer::with_interactions(vec![
        exchange(RecordedResponse::json(
            500,
            r#"{"error":{"message":"one"}}"#,
        )),
        exchange(RecordedResponse::json(
            500,
            r#"{"error":{"message":"two"}}"#,
        )),
        exchange(RecordedResponse::json(200, "{}")),
    ])
    .await
    .unwrap();
    let (client, _) = client(&server, fast_retries().with_max_retries(1));
    let err = client
        .post_json("/x", b"{}".to_vec(), None)
        .await
        .unwrap_err();
    assert_eq!(err.message(), "two");
    assert_eq!(server.received().len(), 2);
}

#[tokio::test]
async fn unauthorized_is_a_clear_error_and_not_retried() {
    let server = ReplayServer::with_interactions(vec![exchange(
        RecordedResponse::json(
            401,
            r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#,
        )
        .with_header("x-request-id", "req_abc"),
    )])
    .await
    .unwrap();
    let (client, delays) = client(&server, fast_retries());
    let err = client
        .post_json("/x", b"{}".to_vec(), None)
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(401));
    assert_eq!(err.code(), Some("invalid_api_key"));
    assert_eq!(err.request_id(), Some("req_abc"));
    assert!(!err.is_retryable());
    assert_eq!(
        err.to_string(),
        "test: HTTP 401 (invalid_request_error, invalid_api_key): Incorrect API key provided [request id req_abc]"
    );
    assert_eq!(server.received().len(), 1);
    assert!(delays.lock().unwrap().is_empty());
}

#[tokio::test]
async fn connection_refused_is_a_retryable_transport_error() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut settings = HttpSettings::new("test", format!("http://127.0.0.1:{port}"));
    settings.retry = RetryPolicy::none();
    let client = HttpClient::new(settings).unwrap();
    let err = client
        .post_json("/x", b"{}".to_vec(), None)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ProviderErrorKind::Transport);
    assert!(err.is_retryable());
}

#[tokio::test]
async fn requests_past_the_recording_get_a_gone_answer() {
    let server = ReplayServer::with_interactions(vec![]).await.unwrap();
    let (client, _) = client(&server, fast_retries());
    let err = client
        .post_json("/x", b"{}".to_vec(), None)
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(410));
    assert!(err.message().contains("no recorded response"), "{err}");
}

#[tokio::test]
async fn the_server_keeps_what_it_received() {
    let server = ReplayServer::with_interactions(vec![exchange(RecordedResponse::json(200, "{}"))])
        .await
        .unwrap();
    let (client, _) = client(&server, fast_retries());
    client
        .post_json("/v1/responses", br#"{"model":"m"}"#.to_vec(), None)
        .await
        .unwrap();
    let received = server.received();
    assert_eq!(received[0].path, "/v1/responses");
    assert_eq!(received[0].body, json!({"model": "m"}));
    assert_eq!(
        received[0].header("authorization"),
        Some("Bearer sk-secret")
    );
}

#[tokio::test]
async fn recording_captures_bodies_and_streams_without_secrets() {
    let sse_body = "data: {\"n\":1}\n\ndata: [DONE]\n\n";
    let server = ReplayServer::with_interactions(vec![
        exchange(RecordedResponse::json(200, r#"{"answer":42}"#)),
        exchange(RecordedResponse::sse(sse_body)),
    ])
    .await
    .unwrap();
    let recorder = Recorder::new();
    let mut settings = HttpSettings::new("test", server.url());
    settings.api_key = Some("sk-secret".into());
    settings.key_placeholder = "<TEST_API_KEY>".into();
    settings.recorder = Some(recorder.clone());
    let client = HttpClient::new(settings).unwrap();

    let r = client
        .post_json("/a", br#"{"q":1}"#.to_vec(), None)
        .await
        .unwrap();
    r.bytes().await.unwrap();
    let r = client
        .post_json("/b", br#"{"q":2}"#.to_vec(), Some(Framing::Sse))
        .await
        .unwrap();
    let events: Vec<_> = framing::frames(Framing::Sse, "test", r.byte_stream())
        .collect()
        .await;
    assert_eq!(events.len(), 2);

    let recording = recorder.recording("test", "test-protocol", "two requests");
    assert_eq!(recording.interactions.len(), 2);
    assert_eq!(recording.interactions[0].request.body, json!({"q": 1}));
    assert_eq!(recording.interactions[0].response.body, r#"{"answer":42}"#);
    assert_eq!(recording.interactions[1].response.body, sse_body);
    assert_eq!(
        recording.interactions[1].response.headers["content-type"],
        "text/event-stream"
    );
    let text = serde_json::to_string(&recording).unwrap();
    assert!(!text.contains("sk-secret"));
    assert!(text.contains("Bearer <TEST_API_KEY>"));

    // What was recorded replays.
    let replay = ReplayServer::start(recording).await.unwrap();
    let mut settings = HttpSettings::new("test", replay.url());
    settings.retry = RetryPolicy::none();
    let client = HttpClient::new(settings).unwrap();
    let r = client.post_json("/a", b"{}".to_vec(), None).await.unwrap();
    assert_eq!(&r.bytes().await.unwrap()[..], br#"{"answer":42}"#);
}

#[tokio::test]
async fn a_dropped_connection_ends_the_stream_with_an_error() {
    let server = ReplayServer::with_interactions(vec![exchange(
        RecordedResponse::sse("data: {\"n\":1}\n\ndata: {\"n\":").disconnected(),
    )])
    .await
    .unwrap();
    let (client, _) = client(&server, RetryPolicy::none());
    let r = client
        .post_json("/s", b"{}".to_vec(), Some(Framing::Sse))
        .await
        .unwrap();
    let events: Vec<_> = framing::frames(Framing::Sse, "test", r.byte_stream())
        .collect()
        .await;
    assert_eq!(events[0].as_ref().unwrap().data, "{\"n\":1}");
    let last = events.last().unwrap().as_ref().unwrap_err();
    assert_eq!(last.kind(), ProviderErrorKind::Stream);
}
