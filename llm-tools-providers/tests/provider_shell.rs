//! The provider shell with a protocol written outside the crate, and the signing hook, against
//! the loopback replay server: the public seam is enough to add a protocol, streamed answers
//! arrive in the protocol's framing, and every try of a request is signed anew.
#![cfg(feature = "replay")]
#![allow(clippy::unwrap_used)] // test helpers outside `#[test]` fns

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use futures::StreamExt;
use llm_tools_core::{
    BoxFuture, Message, Provider, ProviderError, ProviderErrorKind, Request, Response, StreamEvent,
};
use llm_tools_providers::framing::{Frame, Framing};
use llm_tools_providers::http::{
    HttpClient, HttpSettings, RequestSigner, RetryPolicy, SignableRequest,
};
use llm_tools_providers::protocol::{Assembler, HttpProvider, NameMap, Protocol};
use llm_tools_providers::record::{Interaction, RecordedRequest, RecordedResponse, Recorder};
use llm_tools_providers::replay::ReplayServer;
use serde_json::{Value, json};

/// A protocol of our own: `{"prompt"}` in, `{"text"}` out, streamed as NDJSON lines
/// `{"delta": …}` ending with `{"done": true}`.
#[derive(Debug)]
struct Lines {
    config: LinesConfig,
}

/// What a `Lines` provider is made from: the model and the endpoint's settings.
#[derive(Debug, Clone)]
struct LinesConfig {
    model: String,
    http: HttpSettings,
}

impl LinesConfig {
    fn new(http: HttpSettings) -> Self {
        Self {
            model: "lines-1".into(),
            http,
        }
    }
}

#[derive(Default)]
struct LinesStream {
    text: String,
    done: bool,
}

impl Assembler for LinesStream {
    fn feed(
        &mut self,
        frame: &Frame<'_>,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let v: Value = serde_json::from_str(&frame.data)
            .map_err(|e| ProviderError::new("lines", ProviderErrorKind::Decode, e.to_string()))?;
        if v["done"] == true {
            self.done = true;
        } else if let Some(delta) = v["delta"].as_str() {
            self.text.push_str(delta);
            out.push_back(StreamEvent::TextDelta(delta.to_owned()));
        }
        Ok(())
    }

    fn is_finished(&self) -> bool {
        self.done
    }

    fn end(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
        if !self.done {
            return Err(ProviderError::new(
                "lines",
                ProviderErrorKind::Stream,
                "cut short",
            ));
        }
        let message = Message::assistant(std::mem::take(&mut self.text));
        out.push_back(StreamEvent::Completed(Box::new(Response::new(message))));
        Ok(())
    }
}

impl Protocol for Lines {
    type Config = LinesConfig;
    type Assembler = LinesStream;
    const ID: &'static str = "lines";

    fn open(config: LinesConfig) -> Result<(Self, HttpClient), llm_tools_core::Error> {
        let http = HttpClient::new(config.http.clone())?;
        Ok((Self { config }, http))
    }

    fn config(&self) -> &LinesConfig {
        &self.config
    }

    fn model(&self) -> &str {
        &self.config.model
    }

    fn framing(&self) -> Framing {
        Framing::Ndjson
    }

    fn path(&self, stream: bool) -> &str {
        if stream { "/stream" } else { "/complete" }
    }

    fn body(&self, request: &Request<'_>, _stream: bool) -> Result<Vec<u8>, ProviderError> {
        let prompt = request.messages.last().map(Message::text);
        Ok(serde_json::to_vec(&json!({ "prompt": prompt })).unwrap())
    }

    fn parse(
        &self,
        name: &str,
        body: &[u8],
        _names: &NameMap,
        _request_id: Option<String>,
    ) -> Result<Response, ProviderError> {
        let v: Value = serde_json::from_slice(body)
            .map_err(|e| ProviderError::new(name, ProviderErrorKind::Decode, e.to_string()))?;
        let text = v["text"].as_str().unwrap_or_default();
        Ok(Response::new(Message::assistant(text)))
    }

    fn assembler(&self, _name: &str, _names: NameMap, _id: Option<String>) -> LinesStream {
        LinesStream::default()
    }
}

fn exchange(path: &str, response: RecordedResponse) -> Interaction {
    Interaction::new(
        RecordedRequest::post(format!("http://recorded{path}"), json!({})),
        response,
    )
}

/// Signs with a counter, so each try's signature differs.
struct Counting(AtomicU32);

impl RequestSigner for Counting {
    fn sign<'a>(
        &'a self,
        mut request: SignableRequest<'a>,
    ) -> BoxFuture<'a, Result<(), ProviderError>> {
        Box::pin(async move {
            let n = self.0.fetch_add(1, Ordering::SeqCst) + 1;
            let body = String::from_utf8_lossy(request.body()).into_owned();
            let value = format!("try-{n}:{}:{}", request.method(), body.len());
            request.set_header("x-signature", &value, true)
        })
    }
}

/// Refuses to sign, as a signer without credentials would.
struct NoCredentials;

impl RequestSigner for NoCredentials {
    fn sign<'a>(
        &'a self,
        request: SignableRequest<'a>,
    ) -> BoxFuture<'a, Result<(), ProviderError>> {
        let name = request.provider().to_owned();
        Box::pin(async move {
            Err(ProviderError::new(
                name,
                ProviderErrorKind::Request,
                "no credentials",
            ))
        })
    }
}

fn provider(server: &ReplayServer, signer: Option<Arc<dyn RequestSigner>>) -> HttpProvider<Lines> {
    let mut settings = HttpSettings::new("lines", server.url());
    settings.retry = RetryPolicy::default()
        .with_max_retries(2)
        .with_backoff(Duration::from_millis(1), Duration::from_millis(2));
    settings.signer = signer;
    HttpProvider::new(LinesConfig::new(settings)).unwrap()
}

#[tokio::test]
async fn a_protocol_outside_the_crate_completes_and_streams_ndjson() {
    let server = ReplayServer::with_interactions(vec![
        exchange(
            "/complete",
            RecordedResponse::json(200, r#"{"text":"whole"}"#),
        ),
        exchange(
            "/stream",
            RecordedResponse::new(
                200,
                "application/x-ndjson",
                "{\"delta\":\"str\"}\n\n{\"delta\":\"eamed\"}\r\n{\"done\":true}\n",
            ),
        ),
    ])
    .await
    .unwrap();
    let provider = provider(&server, None);
    let messages = [Message::user("hi")];

    let whole = provider
        .complete(Request::new(&messages, &[]))
        .await
        .unwrap();
    assert_eq!(whole.message.text(), "whole");

    let events: Vec<_> = provider
        .stream(Request::new(&messages, &[]))
        .await
        .unwrap()
        .collect()
        .await;
    let deltas: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Ok(StreamEvent::TextDelta(d)) => Some(d.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, ["str", "eamed"]);
    let Some(Ok(StreamEvent::Completed(done))) = events.last() else {
        panic!("no completed answer: {events:?}");
    };
    assert_eq!(done.message.text(), "streamed");

    let received = server.received();
    assert_eq!(received[0].header("accept"), Some("application/json"));
    assert_eq!(received[1].header("accept"), Some("application/x-ndjson"));
    assert_eq!(received[1].body, json!({"prompt": "hi"}));
    assert_eq!(provider.protocol(), "lines");
    assert_eq!(provider.model(), "lines-1");
    assert_eq!(provider.config().model, "lines-1");
}

#[tokio::test]
async fn an_ndjson_stream_cut_short_is_an_error() {
    let server = ReplayServer::with_interactions(vec![exchange(
        "/stream",
        RecordedResponse::new(200, "application/x-ndjson", "{\"delta\":\"a\"}\n{\"del"),
    )])
    .await
    .unwrap();
    let provider = provider(&server, None);
    let messages = [Message::user("hi")];
    let events: Vec<_> = provider
        .stream(Request::new(&messages, &[]))
        .await
        .unwrap()
        .collect()
        .await;
    // The cut line is handed over at the end and is not JSON: a decode error, no answer.
    let last = events.last().unwrap().as_ref().unwrap_err();
    assert_eq!(last.kind(), ProviderErrorKind::Decode);
}

#[tokio::test]
async fn every_try_is_signed_anew_and_signatures_stay_out_of_recordings() {
    let server = ReplayServer::with_interactions(vec![
        exchange(
            "/complete",
            RecordedResponse::json(503, r#"{"error":"busy"}"#),
        ),
        exchange("/complete", RecordedResponse::json(200, r#"{"text":"ok"}"#)),
    ])
    .await
    .unwrap();
    let recorder = Recorder::new();
    let mut settings = HttpSettings::new("lines", server.url());
    settings.retry = RetryPolicy::default()
        .with_max_retries(2)
        .with_backoff(Duration::from_millis(1), Duration::from_millis(2));
    settings.signer = Some(Arc::new(Counting(AtomicU32::new(0))));
    settings.recorder = Some(recorder.clone());
    let config = LinesConfig::new(settings.clone());
    let provider = HttpProvider::from_parts(Lines { config }, HttpClient::new(settings).unwrap());
    let messages = [Message::user("hi")];
    let answer = provider
        .complete(Request::new(&messages, &[]))
        .await
        .unwrap();
    assert_eq!(answer.message.text(), "ok");

    let received = server.received();
    let length = serde_json::to_vec(&json!({"prompt": "hi"})).unwrap().len();
    assert_eq!(
        received[0].header("x-signature"),
        Some(format!("try-1:POST:{length}").as_str())
    );
    assert_eq!(
        received[1].header("x-signature"),
        Some(format!("try-2:POST:{length}").as_str())
    );
    let recorded = serde_json::to_string(&recorder.recording("lines", "lines", "signed")).unwrap();
    assert!(!recorded.contains("try-1"), "{recorded}");
    assert!(!recorded.contains("x-signature"), "{recorded}");
}

#[tokio::test]
async fn a_signer_that_fails_fails_the_request_before_it_is_sent() {
    let server = ReplayServer::with_interactions(vec![exchange(
        "/complete",
        RecordedResponse::json(200, r#"{"text":"never"}"#),
    )])
    .await
    .unwrap();
    let provider = provider(&server, Some(Arc::new(NoCredentials)));
    let messages = [Message::user("hi")];
    let err = provider
        .complete(Request::new(&messages, &[]))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ProviderErrorKind::Request);
    assert!(err.message().contains("no credentials"), "{err}");
    assert!(server.received().is_empty());
}

/// A signer whose token endpoint failed, its error quoting what it was given: its own client
/// secret, and the provider's API key it was sent along with.
struct QuotingSigner;

const SIGNER_SECRET: &str = "signer-secret-91c";
const API_KEY: &str = "sk-shell-key-3f0";

impl RequestSigner for QuotingSigner {
    fn sign<'a>(
        &'a self,
        request: SignableRequest<'a>,
    ) -> BoxFuture<'a, Result<(), ProviderError>> {
        let name = request.provider().to_owned();
        Box::pin(async move {
            Err(ProviderError::new(
                name,
                ProviderErrorKind::Request,
                format!("token endpoint refused client_secret={SIGNER_SECRET} (key {API_KEY})"),
            ))
        })
    }

    fn redact(&self, error: ProviderError) -> ProviderError {
        error.redacted(SIGNER_SECRET, "<CLIENT_SECRET>")
    }
}

#[tokio::test]
async fn a_signers_error_goes_through_the_signers_and_the_clients_redaction() {
    let server = ReplayServer::with_interactions(vec![exchange(
        "/complete",
        RecordedResponse::json(200, r#"{"text":"never sent"}"#),
    )])
    .await
    .unwrap();
    let mut settings = HttpSettings::new("lines", server.url());
    settings.api_key = Some(API_KEY.into());
    settings.key_placeholder = "<LINES_KEY>".into();
    settings.retry = RetryPolicy::none();
    settings.signer = Some(Arc::new(QuotingSigner));
    let provider: HttpProvider<Lines> = HttpProvider::new(LinesConfig::new(settings)).unwrap();
    let messages = [Message::user("hi")];
    let err = provider
        .complete(Request::new(&messages, &[]))
        .await
        .unwrap_err();
    let shown = format!("{err} {err:?}");
    assert!(!shown.contains(SIGNER_SECRET), "{shown}");
    assert!(!shown.contains(API_KEY), "{shown}");
    assert!(
        err.message()
            .contains("client_secret=<CLIENT_SECRET> (key <LINES_KEY>)"),
        "{err}"
    );
    assert!(server.received().is_empty());
}
