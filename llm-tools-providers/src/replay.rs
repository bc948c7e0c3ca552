//! Replaying recorded traffic with no network: a real HTTP server on 127.0.0.1 that answers the
//! n-th request with the n-th recorded response, and keeps every request it received so a test
//! can compare them with the recorded ones.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use llm_tools_providers::record::Recording;
//! use llm_tools_providers::replay::ReplayServer;
//!
//! let server = ReplayServer::start(Recording::load("tests/fixtures/weather.json")?).await?;
//! // Point the provider at `server.url()` (its base URL) and run the conversation, then:
//! let received = server.received();
//! assert_eq!(received.len(), server.recording().interactions.len());
//! # Ok(()) }
//! ```

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::StreamExt as _;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use llm_tools_core::BoxFuture;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::record::{Interaction, RecordedResponse, Recording, RecordingError};

/// A request the replay server received. Its `Debug` shows secret headers (auth, API keys,
/// AWS session tokens) and secret query parameters as `<redacted>`, so a failing test's message does not print a key;
/// [`header`](Self::header) reads them.
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct ReceivedRequest {
    /// The HTTP method.
    pub method: String,
    /// The path and query (`/v1/responses?api-version=…`).
    pub path: String,
    /// The headers, names in lowercase.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON (a string when it is not JSON).
    pub body: Value,
}

impl std::fmt::Debug for ReceivedRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(k, v)| {
                let shown = if crate::http::is_secret_header(k) {
                    "<redacted>"
                } else {
                    v.as_str()
                };
                (k.as_str(), shown)
            })
            .collect();
        // A form body (an OAuth token request) reads like a query; a JSON one has fields.
        let body = match &self.body {
            Value::String(form) => {
                let shown = crate::http::redact_query_secrets(&format!("?{form}"));
                Value::String(shown.trim_start_matches('?').to_owned())
            }
            other => {
                let mut shown = other.clone();
                crate::http::redact_json(&mut shown);
                shown
            }
        };
        f.debug_struct("ReceivedRequest")
            .field("method", &self.method)
            .field("path", &crate::http::redact_query_secrets(&self.path))
            .field("headers", &headers)
            .field("body", &body)
            .finish()
    }
}

impl ReceivedRequest {
    /// The value of a header.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct State {
    next: usize,
    received: Vec<ReceivedRequest>,
}

/// An error starting a replay.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The recording could not be read.
    #[error(transparent)]
    Recording(#[from] RecordingError),
    /// The loopback socket could not be opened.
    #[error("the replay server cannot listen on 127.0.0.1: {0}")]
    Io(#[from] std::io::Error),
}

/// A loopback HTTP server serving a recording's responses in order.
///
/// Every request gets the next recorded response, whatever its path; a request past the end
/// gets `410 Gone` with an error body saying so (410 is never retried). Streamed bodies
/// (server-sent events, NDJSON, AWS event-stream) are sent in small chunks that split events,
/// as a network would. The server stops when dropped.
pub struct ReplayServer {
    addr: SocketAddr,
    recording: Arc<Recording>,
    state: Arc<Mutex<State>>,
    _stop: watch::Sender<bool>,
}

impl std::fmt::Debug for ReplayServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplayServer")
            .field("addr", &self.addr)
            .field("interactions", &self.recording.interactions.len())
            .field("served", &self.served())
            .finish()
    }
}

/// How many bytes of a body go in one chunk.
const CHUNK: usize = 211;

impl ReplayServer {
    /// Starts a server for a recording (in the current Tokio runtime).
    pub async fn start(recording: Recording) -> Result<Self, ReplayError> {
        Self::boxed_start(recording).await
    }

    /// [`start`](Self::start) as a boxed future made here, so that a caller's crate compiles
    /// none of the server.
    #[inline(never)]
    fn boxed_start(recording: Recording) -> BoxFuture<'static, Result<Self, ReplayError>> {
        Box::pin(Self::start_now(recording))
    }

    async fn start_now(recording: Recording) -> Result<Self, ReplayError> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let recording = Arc::new(recording);
        let state = Arc::new(Mutex::new(State::default()));
        let (stop, mut stopped) = watch::channel(false);
        let (rec, st) = (Arc::clone(&recording), Arc::clone(&state));
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    a = listener.accept() => a,
                    _ = stopped.changed() => break,
                };
                let Ok((socket, _)) = accepted else { continue };
                let (rec, st) = (Arc::clone(&rec), Arc::clone(&st));
                tokio::spawn(async move {
                    let service = service_fn(move |req| {
                        let (rec, st) = (Arc::clone(&rec), Arc::clone(&st));
                        async move { Ok::<_, Infallible>(serve(req, &rec, &st).await) }
                    });
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(socket), service)
                        .await;
                });
            }
        });
        Ok(Self {
            addr,
            recording,
            state,
            _stop: stop,
        })
    }

    /// Starts a server for a recording file.
    pub async fn from_file(path: impl AsRef<std::path::Path>) -> Result<Self, ReplayError> {
        Self::start(Recording::load(path)?).await
    }

    /// Starts a server for a list of exchanges.
    pub async fn with_interactions(interactions: Vec<Interaction>) -> Result<Self, ReplayError> {
        Self::start(Recording {
            interactions,
            ..Recording::default()
        })
        .await
    }

    /// The server's root URL, `http://127.0.0.1:<port>`: use it as a provider's base URL.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The recording being served.
    pub fn recording(&self) -> &Recording {
        &self.recording
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Every request received so far, in order.
    pub fn received(&self) -> Vec<ReceivedRequest> {
        self.lock().received.clone()
    }

    /// How many recorded responses were served.
    pub fn served(&self) -> usize {
        self.lock().next.min(self.recording.interactions.len())
    }

    /// Whether every recorded response was served.
    pub fn is_done(&self) -> bool {
        self.served() == self.recording.interactions.len()
    }
}

async fn serve(
    req: Request<Incoming>,
    recording: &Recording,
    state: &Mutex<State>,
) -> Response<ReplayBody> {
    let method = req.method().to_string();
    let path = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_default();
    let headers = req
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let body = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let body = serde_json::from_slice(&body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
    let index = {
        let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
        st.received.push(ReceivedRequest {
            method,
            path,
            headers,
            body,
        });
        st.next += 1;
        st.next - 1
    };
    match recording.interactions.get(index) {
        Some(interaction) => respond(&interaction.response),
        None => respond(&RecordedResponse::new(
            410,
            "application/json",
            serde_json::json!({"error": {
                "message": format!(
                    "replay: request #{} has no recorded response (the recording has {})",
                    index + 1,
                    recording.interactions.len()
                ),
                "type": "replay_exhausted"
            }})
            .to_string(),
        )),
    }
}

type ReplayBody = http_body_util::combinators::BoxBody<Bytes, std::io::Error>;

fn respond(recorded: &RecordedResponse) -> Response<ReplayBody> {
    let bytes = recorded.body_bytes();
    let mut builder = Response::builder()
        .status(StatusCode::from_u16(recorded.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR));
    for (name, value) in &recorded.headers {
        if name.eq_ignore_ascii_case("content-length")
            || name.eq_ignore_ascii_case("transfer-encoding")
        {
            continue;
        }
        if let Some(v) = value.as_str() {
            builder = builder.header(name.as_str(), v);
        }
    }
    let streamed = recorded
        .headers
        .get("content-type")
        .and_then(Value::as_str)
        .is_some_and(|t| {
            [
                "text/event-stream",
                "application/x-ndjson",
                "application/vnd.amazon.eventstream",
            ]
            .iter()
            .any(|streamed| t.starts_with(streamed))
        });
    let body: ReplayBody = if streamed || recorded.disconnect {
        let frames: Vec<Result<Frame<Bytes>, std::io::Error>> = bytes
            .chunks(CHUNK)
            .map(|c| Ok(Frame::data(Bytes::copy_from_slice(c))))
            .collect();
        let data = futures::stream::iter(frames);
        if recorded.disconnect {
            // The body stays pending for a moment so hyper flushes what was sent, then fails,
            // which makes hyper drop the connection without ending the chunked body.
            let cut = futures::stream::once(async {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionAborted,
                    "replay: connection dropped",
                ))
            });
            BodyExt::boxed(StreamBody::new(data.chain(cut)))
        } else {
            BodyExt::boxed(StreamBody::new(data))
        }
    } else {
        Full::new(Bytes::from(bytes))
            .map_err(|never: Infallible| match never {})
            .boxed()
    };
    builder.body(body).unwrap_or_else(|_| {
        let mut r = Response::new(
            Full::new(Bytes::from_static(b"replay: bad recorded response"))
                .map_err(|never: Infallible| match never {})
                .boxed(),
        );
        *r.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
        r
    })
}
