//! Recorded HTTP traffic: the file format of the shared fixtures, and a [`Recorder`] that
//! captures a provider's live exchanges into it (API keys and auth headers replaced by
//! placeholders).
//!
//! Record once against the real API, commit the file, and replay it offline with
//! `replay::ReplayServer` (feature `replay`):
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use llm_tools_providers::record::Recorder;
//!
//! let recorder = Recorder::new();
//! // … give `recorder.clone()` to a provider's configuration (`with_recorder`) and run the chat …
//! recorder.save("tests/fixtures/weather.json", "openai", "openai-responses", "weather")?;
//! # Ok(()) }
//! ```

use std::path::Path;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use llm_tools_core::ProviderError;
use reqwest::header::HeaderMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::http::client_secrets::ClientSecrets;

/// A recorded conversation with one provider: its exchanges, in order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Recording {
    /// Where the recording comes from.
    #[serde(default)]
    pub origin: String,
    /// The provider (`openai`, `mistral`, …).
    #[serde(default)]
    pub provider: String,
    /// The wire protocol (`openai-responses`, `openai-chat`, …).
    #[serde(default)]
    pub protocol: String,
    /// What was recorded.
    #[serde(default)]
    pub scenario: String,
    /// The exchanges, in order.
    pub interactions: Vec<Interaction>,
}

/// One request and its answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Interaction {
    /// What was sent.
    pub request: RecordedRequest,
    /// What came back.
    pub response: RecordedResponse,
    /// When (RFC 3339, or seconds since the epoch when recorded by this crate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_at: Option<String>,
}

impl Interaction {
    /// An exchange.
    pub fn new(request: RecordedRequest, response: RecordedResponse) -> Self {
        Self {
            request,
            response,
            recorded_at: None,
        }
    }
}

/// A recorded request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RecordedRequest {
    /// The HTTP method.
    pub method: String,
    /// The URL (keys replaced by placeholders).
    pub url: String,
    /// Headers (auth replaced by placeholders).
    #[serde(default)]
    pub headers: Map<String, Value>,
    /// The JSON body (or a string when it was not JSON).
    #[serde(default)]
    pub body: Value,
}

impl RecordedRequest {
    /// A POST of a JSON body.
    pub fn post(url: impl Into<String>, body: Value) -> Self {
        Self {
            method: "POST".into(),
            url: url.into(),
            headers: Map::new(),
            body,
        }
    }
}

/// A recorded answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RecordedResponse {
    /// The HTTP status.
    pub status: u16,
    /// Headers (`content-type`, request id, retry hints).
    #[serde(default)]
    pub headers: Map<String, Value>,
    /// The body as text: JSON, or a whole SSE stream.
    #[serde(default)]
    pub body: String,
    /// The body's bytes in base64, where they are binary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_base64: Option<String>,
    /// Replay only: the server drops the connection after sending the body, as a stream cut
    /// off by the network would.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disconnect: bool,
}

impl RecordedResponse {
    /// An answer with a status, a content type and a body.
    pub fn new(status: u16, content_type: &str, body: impl Into<String>) -> Self {
        let mut headers = Map::new();
        headers.insert("content-type".into(), Value::from(content_type));
        Self {
            status,
            headers,
            body: body.into(),
            body_base64: None,
            disconnect: false,
        }
    }

    /// A JSON answer.
    pub fn json(status: u16, body: impl Into<String>) -> Self {
        Self::new(status, "application/json", body)
    }

    /// An SSE answer.
    pub fn sse(body: impl Into<String>) -> Self {
        Self::new(200, "text/event-stream", body)
    }

    /// Adds a header.
    #[must_use]
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers
            .insert(name.to_ascii_lowercase(), Value::from(value));
        self
    }

    /// Drops the connection after the body (see [`RecordedResponse::disconnect`]).
    #[must_use]
    pub fn disconnected(mut self) -> Self {
        self.disconnect = true;
        self
    }

    /// The body's bytes (decoded from `body_base64` where present).
    pub fn body_bytes(&self) -> Vec<u8> {
        match &self.body_base64 {
            Some(b64) => base64::engine::general_purpose::STANDARD
                .decode(b64.as_bytes())
                .unwrap_or_else(|_| self.body.as_bytes().to_vec()),
            None => self.body.as_bytes().to_vec(),
        }
    }
}

/// An error reading or writing a recording file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordingError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// What went wrong.
        source: std::io::Error,
    },
    /// The file is not a recording.
    #[error("{path} is not a recording: {source}")]
    Format {
        /// The file.
        path: String,
        /// What went wrong.
        source: serde_json::Error,
    },
}

impl Recording {
    /// Reads a recording file.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, RecordingError> {
        Self::load_path(path.as_ref())
    }

    /// [`load`](Self::load), compiled once rather than for each type of path.
    fn load_path(path: &Path) -> Result<Self, RecordingError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| RecordingError::Io {
            path: shown.clone(),
            source,
        })?;
        Self::from_json(&text).map_err(|source| RecordingError::Format {
            path: shown,
            source,
        })
    }

    /// Parses a recording.
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// Writes the recording as pretty JSON.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), RecordingError> {
        let path = path.as_ref();
        let shown = path.display().to_string();
        let text = serde_json::to_string_pretty(self).map_err(|source| RecordingError::Format {
            path: shown.clone(),
            source,
        })?;
        std::fs::write(path, text).map_err(|source| RecordingError::Io {
            path: shown,
            source,
        })
    }
}

/// Captures every exchange of the providers it is given to, in order. Cheap to clone; clones
/// share the same list.
#[derive(Clone, Default)]
pub struct Recorder {
    interactions: Arc<Mutex<Vec<Option<Interaction>>>>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("interactions", &self.lock().len())
            .finish()
    }
}

impl Recorder {
    /// An empty recorder.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Option<Interaction>>> {
        self.interactions
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The finished exchanges so far, in the order their requests were sent.
    pub fn interactions(&self) -> Vec<Interaction> {
        self.lock().iter().flatten().cloned().collect()
    }

    /// The exchanges as a recording.
    pub fn recording(&self, provider: &str, protocol: &str, scenario: &str) -> Recording {
        Recording {
            origin: "recorded by llm-tools-providers".into(),
            provider: provider.into(),
            protocol: protocol.into(),
            scenario: scenario.into(),
            interactions: self.interactions(),
        }
    }

    /// Writes the exchanges to a file in the fixtures' format.
    pub fn save(
        &self,
        path: impl AsRef<Path>,
        provider: &str,
        protocol: &str,
        scenario: &str,
    ) -> Result<(), RecordingError> {
        self.recording(provider, protocol, scenario).save(path)
    }

    pub(crate) fn begin(
        &self,
        method: &str,
        url: &str,
        headers: Vec<(String, String)>,
        body: &[u8],
    ) -> PendingInteraction {
        let body = serde_json::from_slice(body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()));
        let request = RecordedRequest {
            method: method.into(),
            url: url.into(),
            headers: headers
                .into_iter()
                .map(|(k, v)| (k, Value::String(v)))
                .collect(),
            body,
        };
        let slot = {
            let mut list = self.lock();
            list.push(None);
            list.len() - 1
        };
        PendingInteraction {
            recorder: self.clone(),
            slot,
            request: Some(request),
            secrets: None,
        }
    }
}

/// Response headers worth keeping in a recording.
const KEPT_RESPONSE_HEADERS: &[&str] = &[
    "content-type",
    "x-request-id",
    "request-id",
    "retry-after",
    "retry-after-ms",
    "x-should-retry",
];

fn kept_headers(headers: &HeaderMap) -> Map<String, Value> {
    KEPT_RESPONSE_HEADERS
        .iter()
        .filter_map(|h| {
            headers
                .get(*h)
                .and_then(|v| v.to_str().ok())
                .map(|v| ((*h).to_owned(), Value::from(v)))
        })
        .collect()
}

fn now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    secs.to_string()
}

/// An exchange whose answer is still coming.
pub(crate) struct PendingInteraction {
    recorder: Recorder,
    slot: usize,
    request: Option<RecordedRequest>,
    /// What the recorded answer must not show (an answer may quote the request's secrets).
    secrets: Option<Arc<ClientSecrets>>,
}

impl PendingInteraction {
    /// Records the answer with these secrets redacted from its body.
    pub(crate) fn redacting(mut self, secrets: Arc<ClientSecrets>) -> Self {
        self.secrets = Some(secrets);
        self
    }

    fn store(&mut self, mut response: RecordedResponse) {
        if let Some(secrets) = &self.secrets {
            // A body that is not UTF-8 (a stream cut inside a character) is searched as text
            // too, and kept as text when it held a secret.
            let binary = response
                .body_base64
                .as_deref()
                .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok());
            let text = match &binary {
                Some(bytes) => String::from_utf8_lossy(bytes),
                None => std::borrow::Cow::Borrowed(response.body.as_str()),
            };
            if let Some(redacted) = secrets.redact_text(&text) {
                response.body = redacted;
                response.body_base64 = None;
            }
        }
        if let Some(request) = self.request.take() {
            let interaction = Interaction {
                request,
                response,
                recorded_at: Some(now()),
            };
            if let Some(slot) = self.recorder.lock().get_mut(self.slot) {
                *slot = Some(interaction);
            }
        }
    }

    pub(crate) fn finish(mut self, status: u16, headers: &HeaderMap, body: &[u8]) {
        let response = match std::str::from_utf8(body) {
            Ok(text) => RecordedResponse {
                status,
                headers: kept_headers(headers),
                body: text.to_owned(),
                body_base64: None,
                disconnect: false,
            },
            Err(_) => RecordedResponse {
                status,
                headers: kept_headers(headers),
                body: String::new(),
                body_base64: Some(base64::engine::general_purpose::STANDARD.encode(body)),
                disconnect: false,
            },
        };
        self.store(response);
    }

    /// A request that got no answer is left out of the recording.
    pub(crate) fn fail(mut self, _error: &ProviderError) {
        self.request = None;
    }

    pub(crate) fn streaming(self, status: u16, headers: &HeaderMap) -> StreamTee {
        StreamTee {
            pending: Some(self),
            status,
            headers: kept_headers(headers),
            body: Vec::new(),
        }
    }
}

/// Collects a streamed body; the exchange is stored when the stream is dropped (finished or
/// not: a stream cut short is recorded as it arrived, and replays as a cut stream).
pub(crate) struct StreamTee {
    pending: Option<PendingInteraction>,
    status: u16,
    headers: Map<String, Value>,
    body: Vec<u8>,
}

impl StreamTee {
    pub(crate) fn push(&mut self, chunk: &[u8]) {
        self.body.extend_from_slice(chunk);
    }
}

impl Drop for StreamTee {
    fn drop(&mut self) {
        if let Some(mut pending) = self.pending.take() {
            let body = std::mem::take(&mut self.body);
            let (body, body_base64) = match String::from_utf8(body) {
                Ok(text) => (text, None),
                Err(e) => (
                    String::new(),
                    Some(base64::engine::general_purpose::STANDARD.encode(e.as_bytes())),
                ),
            };
            pending.store(RecordedResponse {
                status: self.status,
                headers: std::mem::take(&mut self.headers),
                body,
                body_base64,
                disconnect: false,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorder_keeps_request_order_and_redacted_headers() {
        let r = Recorder::new();
        let first = r.begin(
            "POST",
            "https://x/v1/a",
            vec![("authorization".into(), "Bearer <KEY>".into())],
            br#"{"n":1}"#,
        );
        let second = r.begin("POST", "https://x/v1/b", vec![], b"not json");
        second.finish(200, &HeaderMap::new(), b"two");
        first.finish(500, &HeaderMap::new(), b"one");
        let list = r.interactions();
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].request.body, serde_json::json!({"n": 1}));
        assert_eq!(list[0].response.status, 500);
        assert_eq!(list[0].request.headers["authorization"], "Bearer <KEY>");
        assert_eq!(list[1].request.body, Value::from("not json"));
        let json = serde_json::to_string(&r.recording("p", "q", "s")).unwrap();
        let back = Recording::from_json(&json).unwrap();
        assert_eq!(back.interactions, list);
    }
}
