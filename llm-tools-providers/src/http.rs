//! The protocol-neutral HTTP layer every wire protocol sends through: client settings, auth,
//! timeouts, retries with exponential backoff and jitter, typed errors, and recording.
//!
//! A protocol builds one [`HttpClient`] from an [`HttpSettings`] and calls
//! [`HttpClient::post_json`] with a body it wrote; the answer is an [`HttpResponse`] whose body it
//! reads whole or as a byte stream (see [`crate::sse`]).

use std::fmt;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use futures::{Stream, StreamExt};
use llm_tools_core::{ProviderError, ProviderErrorKind};
use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use crate::record::Recorder;

/// How failed requests are tried again.
///
/// Rate limits (429), timeouts (408), conflicts (409), server errors (5xx) and connection
/// failures are retried; 400, 401, 403, 404 and every other client error are not. The delay
/// before try `n` (from 0) is `initial_backoff · 2ⁿ`, capped at `max_backoff`, minus up to
/// `jitter` of it at random; a `retry-after-ms` or `retry-after` header from the server replaces
/// it when it asks for at most `max_retry_after`.
///
/// ```
/// use std::time::Duration;
/// use llm_tools_providers::http::RetryPolicy;
///
/// let policy = RetryPolicy::default().with_max_retries(5).with_jitter(0.0);
/// assert_eq!(policy.delay(0, None), Duration::from_millis(500));
/// assert_eq!(policy.delay(2, None), Duration::from_secs(2));
/// assert_eq!(policy.delay(2, Some(Duration::from_millis(30))), Duration::from_millis(30));
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// How many times a request is tried again after the first try (default 2).
    pub max_retries: u32,
    /// The delay before the first retry (default 500 ms).
    pub initial_backoff: Duration,
    /// The longest computed delay (default 8 s).
    pub max_backoff: Duration,
    /// The fraction of each computed delay taken off at random, from 0 to 1 (default 0.25).
    pub jitter: f64,
    /// The longest server-requested delay that is honoured (default 60 s); a longer one falls
    /// back to the computed delay.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 2,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            jitter: 0.25,
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// No retries at all.
    pub fn none() -> Self {
        Self {
            max_retries: 0,
            ..Self::default()
        }
    }

    /// Sets the number of retries.
    #[must_use]
    pub fn with_max_retries(mut self, n: u32) -> Self {
        self.max_retries = n;
        self
    }

    /// Sets the first delay and the cap of computed delays.
    #[must_use]
    pub fn with_backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.initial_backoff = initial;
        self.max_backoff = max;
        self
    }

    /// Sets the random fraction taken off each computed delay (clamped to 0..=1).
    #[must_use]
    pub fn with_jitter(mut self, jitter: f64) -> Self {
        self.jitter = jitter.clamp(0.0, 1.0);
        self
    }

    /// The delay before retry number `attempt` (from 0), honouring the server's request.
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(after) = retry_after
            && after <= self.max_retry_after
        {
            return after;
        }
        let factor = 2u32.saturating_pow(attempt.min(20));
        let base = self
            .initial_backoff
            .saturating_mul(factor)
            .min(self.max_backoff);
        if self.jitter <= 0.0 {
            return base;
        }
        let cut = base.mul_f64(self.jitter.clamp(0.0, 1.0) * fastrand::f64());
        base.saturating_sub(cut)
    }
}

/// Whether an HTTP status is worth trying again.
pub fn is_retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429) || status >= 500
}

/// How the API key travels.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Auth {
    /// `Authorization: Bearer <key>`.
    Bearer,
    /// The key as the value of this header (`api-key` on Azure, `x-api-key` on Anthropic).
    Header(String),
    /// The key as this query parameter (`key` on Gemini).
    Query(String),
}

/// What one retry looked like, for [`HttpSettings::on_retry`] observers (logging, metrics).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RetryInfo {
    /// The retry number, from 1.
    pub attempt: u32,
    /// How long the client waits before it.
    pub delay: Duration,
    /// What failed.
    pub error: ProviderError,
}

type RetryObserver = std::sync::Arc<dyn Fn(&RetryInfo) + Send + Sync>;

/// The settings of one provider's HTTP client.
#[derive(Clone)]
#[non_exhaustive]
pub struct HttpSettings {
    /// The protocol or endpoint name used in errors (`openai`, `mistral`, …).
    pub name: String,
    /// The base URL every path is appended to (`https://api.openai.com/v1`).
    pub base_url: String,
    /// The API key, if the endpoint needs one.
    pub api_key: Option<String>,
    /// The placeholder that replaces the key in recordings (`<OPENAI_API_KEY>`).
    pub key_placeholder: String,
    /// How the key travels.
    pub auth: Auth,
    /// Extra headers sent with every request.
    pub headers: Vec<(String, String)>,
    /// Query parameters added to every URL (`api-version` on Azure).
    pub query: Vec<(String, String)>,
    /// The longest a whole non-streaming request may take, and the longest a stream may stay
    /// silent (default 10 minutes).
    pub timeout: Duration,
    /// The longest connecting may take (default 10 s).
    pub connect_timeout: Duration,
    /// How failures are retried.
    pub retry: RetryPolicy,
    /// Records every exchange, when set.
    pub recorder: Option<Recorder>,
    /// Called before every retry.
    pub on_retry: Option<RetryObserver>,
    /// A client to use instead of building one (shares connection pools).
    pub client: Option<reqwest::Client>,
}

impl HttpSettings {
    /// Settings for `base_url`, with bearer auth, default timeouts and retries.
    pub fn new(name: impl Into<String>, base_url: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            base_url: base_url.into(),
            api_key: None,
            key_placeholder: "<API_KEY>".into(),
            auth: Auth::Bearer,
            headers: Vec::new(),
            query: Vec::new(),
            timeout: Duration::from_secs(600),
            connect_timeout: Duration::from_secs(10),
            retry: RetryPolicy::default(),
            recorder: None,
            on_retry: None,
            client: None,
        }
    }
}

impl fmt::Debug for HttpSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpSettings")
            .field("name", &self.name)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("auth", &self.auth)
            .field(
                "headers",
                &self.headers.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .field("query", &self.query)
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .field("recording", &self.recorder.is_some())
            .finish_non_exhaustive()
    }
}

/// An HTTP client for one provider: base URL, auth, headers, retries, recording.
#[derive(Clone)]
pub struct HttpClient {
    client: reqwest::Client,
    name: String,
    base_url: String,
    headers: HeaderMap,
    query: Vec<(String, String)>,
    key: Option<String>,
    key_placeholder: String,
    auth: Auth,
    timeout: Duration,
    retry: RetryPolicy,
    recorder: Option<Recorder>,
    on_retry: Option<RetryObserver>,
}

impl fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClient")
            .field("name", &self.name)
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

impl HttpClient {
    /// Builds the client; a header that is not valid HTTP is a request error.
    pub fn new(settings: HttpSettings) -> Result<Self, ProviderError> {
        let name = settings.name;
        let invalid = |what: String| ProviderError::new(&name, ProviderErrorKind::Request, what);
        let mut headers = HeaderMap::new();
        for (k, v) in &settings.headers {
            let key = HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| invalid(format!("`{k}` is not a valid HTTP header name")))?;
            let value = HeaderValue::from_str(v)
                .map_err(|_| invalid(format!("the value of header `{k}` is not valid HTTP")))?;
            headers.insert(key, value);
        }
        if let Some(key) = &settings.api_key {
            match &settings.auth {
                Auth::Bearer => {
                    let mut value =
                        HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                            invalid("the API key is not valid in an HTTP header".into())
                        })?;
                    value.set_sensitive(true);
                    headers.insert(reqwest::header::AUTHORIZATION, value);
                }
                Auth::Header(h) => {
                    let hn = HeaderName::from_bytes(h.as_bytes())
                        .map_err(|_| invalid(format!("`{h}` is not a valid HTTP header name")))?;
                    let mut value = HeaderValue::from_str(key).map_err(|_| {
                        invalid("the API key is not valid in an HTTP header".into())
                    })?;
                    value.set_sensitive(true);
                    headers.insert(hn, value);
                }
                Auth::Query(_) => {}
            }
        }
        let client = match settings.client {
            Some(c) => c,
            None => reqwest::Client::builder()
                .connect_timeout(settings.connect_timeout)
                .read_timeout(settings.timeout)
                .build()
                .map_err(|e| invalid(format!("the HTTP client cannot be built: {e}")))?,
        };
        Ok(Self {
            client,
            base_url: settings.base_url.trim_end_matches('/').to_owned(),
            headers,
            query: settings.query,
            key: settings.api_key,
            key_placeholder: settings.key_placeholder,
            auth: settings.auth,
            timeout: settings.timeout,
            retry: settings.retry,
            recorder: settings.recorder,
            on_retry: settings.on_retry,
            name,
        })
    }

    /// The name used in errors.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The base URL.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    fn url(&self, path: &str) -> String {
        let mut url = format!("{}{path}", self.base_url);
        let mut sep = if url.contains('?') { '&' } else { '?' };
        let mut push = |k: &str, v: &str| {
            url.push(sep);
            url.push_str(&encode_query(k));
            url.push('=');
            url.push_str(&encode_query(v));
            sep = '&';
        };
        for (k, v) in &self.query {
            push(k, v);
        }
        if let (Auth::Query(param), Some(key)) = (&self.auth, &self.key) {
            push(param, key);
        }
        url
    }

    /// The URL as recorded: the key replaced by its placeholder.
    /// The URL as errors, logs and recordings show it: the configured key replaced by its
    /// placeholder, and the values of well-known secret query parameters (`key`, `api_key`,
    /// `access_token`, `token`, `sig`, `signature`, `X-Amz-*`) by `<redacted>`.
    fn redacted_url(&self, url: &str) -> String {
        let url = match &self.key {
            Some(key) if !key.is_empty() => url.replace(key.as_str(), &self.key_placeholder),
            _ => url.to_owned(),
        };
        redact_query_secrets(&url)
    }

    /// POSTs a JSON body to `path` (appended to the base URL), trying again on retryable
    /// failures, and returns the first successful answer. An error status is read into a
    /// [`ProviderError`] with the provider's error type, code, message and request id.
    pub async fn post_json(
        &self,
        path: &str,
        body: Vec<u8>,
        streaming: bool,
    ) -> Result<HttpResponse, ProviderError> {
        let url = self.url(path);
        tracing::debug!(
            provider = %self.name,
            url = %self.redacted_url(&url),
            streaming,
            body = %String::from_utf8_lossy(&body),
            "sending a request"
        );
        let body = Bytes::from(body);
        let mut attempt = 0u32;
        loop {
            let result = self.try_once(&url, body.clone(), streaming).await;
            let error = match result {
                Ok(response) => {
                    tracing::debug!(
                        provider = %self.name,
                        status = response.status(),
                        request_id = response.request_id().unwrap_or_default(),
                        "the provider answered"
                    );
                    return Ok(response);
                }
                Err(e) => e,
            };
            if !error.is_retryable() || attempt >= self.retry.max_retries {
                return Err(error);
            }
            let delay = self.retry.delay(attempt, error.retry_after());
            attempt += 1;
            tracing::warn!(
                provider = %self.name,
                attempt,
                delay_ms = delay.as_millis() as u64,
                error = %error,
                "retrying the request"
            );
            if let Some(observer) = &self.on_retry {
                observer(&RetryInfo {
                    attempt,
                    delay,
                    error: error.clone(),
                });
            }
            tokio::time::sleep(delay).await;
        }
    }

    async fn try_once(
        &self,
        url: &str,
        body: Bytes,
        streaming: bool,
    ) -> Result<HttpResponse, ProviderError> {
        let mut request = self
            .client
            .post(url)
            .headers(self.headers.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(
                reqwest::header::ACCEPT,
                if streaming {
                    "text/event-stream"
                } else {
                    "application/json"
                },
            )
            .body(body.clone());
        if !streaming {
            request = request.timeout(self.timeout);
        }
        let pending = self.recorder.as_ref().map(|r| {
            r.begin(
                "POST",
                &self.redacted_url(url),
                self.recorded_request_headers(streaming),
                &body,
            )
        });
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) => {
                let error = transport_error(&self.name, e, Some(&self.redacted_url(url)));
                if let Some(p) = pending {
                    p.fail(&error);
                }
                return Err(error);
            }
        };
        let status = response.status();
        let request_id = request_id(response.headers());
        if !status.is_success() {
            let headers = response.headers().clone();
            let bytes = response.bytes().await.unwrap_or_default();
            if let Some(p) = pending {
                p.finish(status.as_u16(), &headers, &bytes);
            }
            return Err(error_from_response(
                &self.name,
                status.as_u16(),
                &headers,
                &bytes,
            ));
        }
        Ok(HttpResponse {
            name: self.name.clone(),
            status,
            request_id,
            inner: response,
            pending,
        })
    }

    fn recorded_request_headers(&self, streaming: bool) -> Vec<(String, String)> {
        let mut out = vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            (
                "accept".to_owned(),
                if streaming {
                    "text/event-stream"
                } else {
                    "application/json"
                }
                .to_owned(),
            ),
        ];
        if self.key.is_some() {
            match &self.auth {
                Auth::Bearer => out.push((
                    "authorization".into(),
                    format!("Bearer {}", self.key_placeholder),
                )),
                Auth::Header(h) => out.push((h.to_ascii_lowercase(), self.key_placeholder.clone())),
                Auth::Query(_) => {}
            }
        }
        out
    }
}

/// A successful answer, its body not read yet.
pub struct HttpResponse {
    name: String,
    status: StatusCode,
    request_id: Option<String>,
    inner: reqwest::Response,
    pending: Option<crate::record::PendingInteraction>,
}

impl fmt::Debug for HttpResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpResponse")
            .field("status", &self.status)
            .field("request_id", &self.request_id)
            .finish_non_exhaustive()
    }
}

impl HttpResponse {
    /// The HTTP status.
    pub fn status(&self) -> u16 {
        self.status.as_u16()
    }

    /// The response headers.
    pub fn headers(&self) -> &HeaderMap {
        self.inner.headers()
    }

    /// The provider's request id (`x-request-id` and its cousins).
    pub fn request_id(&self) -> Option<&str> {
        self.request_id.as_deref()
    }

    /// Reads the whole body.
    pub async fn bytes(self) -> Result<Bytes, ProviderError> {
        // The headers are only copied when a recorder needs them after the body is read.
        let recorded = self.pending.map(|p| (p, self.inner.headers().clone()));
        let result = self.inner.bytes().await;
        match result {
            Ok(bytes) => {
                if let Some((p, headers)) = recorded {
                    p.finish(self.status.as_u16(), &headers, &bytes);
                }
                Ok(bytes)
            }
            Err(e) => {
                let error = transport_error(&self.name, e, None);
                if let Some((p, _)) = recorded {
                    p.fail(&error);
                }
                Err(error)
            }
        }
    }

    /// The body as a stream of byte chunks; transport failures become [`ProviderError`]s of
    /// kind `Stream`.
    pub fn byte_stream(self) -> impl Stream<Item = Result<Bytes, ProviderError>> + Send + 'static {
        let name = self.name;
        let mut tee = self
            .pending
            .map(|p| p.streaming(self.status.as_u16(), self.inner.headers()));
        self.inner.bytes_stream().map(move |chunk| match chunk {
            Ok(bytes) => {
                if let Some(t) = tee.as_mut() {
                    t.push(&bytes);
                }
                Ok(bytes)
            }
            Err(e) => Err(ProviderError::new(
                &name,
                ProviderErrorKind::Stream,
                format!("the stream broke off: {}", error_chain(&e)),
            )
            .with_retryable(true)),
        })
    }
}

/// A percent-encoding good enough for query keys and values.
fn encode_query(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        let text = inner.to_string();
        if !s.contains(&text) {
            s.push_str(": ");
            s.push_str(&text);
        }
        source = inner.source();
    }
    s
}

/// The query parameters whose values are secrets wherever they appear.
fn is_secret_parameter(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    matches!(
        name.as_str(),
        "key" | "api_key" | "apikey" | "api-key" | "access_token" | "token" | "sig" | "signature"
    ) || name.starts_with("x-amz-")
}

/// Replaces the values of secret query parameters in `url` with `<redacted>` (placeholders
/// stay).
fn redact_query_secrets(url: &str) -> String {
    let Some((base, query)) = url.split_once('?') else {
        return url.to_owned();
    };
    let (query, fragment) = match query.split_once('#') {
        Some((q, f)) => (q, Some(f)),
        None => (query, None),
    };
    let parts: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            // (A value that is a placeholder already, `<GEMINI_API_KEY>`, stays as it is.)
            Some((name, value))
                if is_secret_parameter(name)
                    && !(value.starts_with('<') && value.ends_with('>')) =>
            {
                format!("{name}=<redacted>")
            }
            _ => pair.to_owned(),
        })
        .collect();
    let mut out = format!("{base}?{}", parts.join("&"));
    if let Some(fragment) = fragment {
        out.push('#');
        out.push_str(fragment);
    }
    out
}

/// A transport error, with the request's URL redacted (the HTTP client's own text carries the
/// raw URL, query-string keys included, so it is dropped from the error first).
fn transport_error(name: &str, e: reqwest::Error, redacted_url: Option<&str>) -> ProviderError {
    let what = if e.is_timeout() {
        "the request timed out"
    } else if e.is_connect() {
        "cannot connect"
    } else {
        "the request failed"
    };
    let e = e.without_url();
    let at = redacted_url.map(|u| format!(" ({u})")).unwrap_or_default();
    ProviderError::new(
        name,
        ProviderErrorKind::Transport,
        format!("{what}{at}: {}", error_chain(&e)),
    )
    .with_retryable(true)
}

/// The request id a provider put in the headers.
pub fn request_id(headers: &HeaderMap) -> Option<String> {
    [
        "x-request-id",
        "request-id",
        "apim-request-id",
        "x-amzn-requestid",
        "x-goog-request-id",
    ]
    .iter()
    .find_map(|h| headers.get(*h).and_then(|v| v.to_str().ok()))
    .map(str::to_owned)
}

/// How long the server asked us to wait: `retry-after-ms`, then `retry-after` in seconds or as
/// an HTTP date (RFC 9110 §10.2.3; a date already past means "now").
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    retry_after_at(headers, SystemTime::now())
}

/// [`retry_after`] as seen at `now`.
fn retry_after_at(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    fn seconds(v: &str) -> Option<Duration> {
        v.parse::<f64>()
            .ok()
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(Duration::from_secs_f64)
    }
    let get = |h| headers.get(h).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = get("retry-after-ms").and_then(seconds) {
        return Some(ms / 1000);
    }
    let value = get("retry-after")?;
    seconds(value).or_else(|| {
        let date = httpdate::parse_http_date(value).ok()?;
        Some(date.duration_since(now).unwrap_or(Duration::ZERO))
    })
}

/// How long a Google RPC error body asks the client to wait: the `retryDelay` of its
/// `google.rpc.RetryInfo` detail (`"7s"`, `"0.250s"`), as Gemini sends with `RESOURCE_EXHAUSTED`.
///
/// ```
/// use std::time::Duration;
/// use llm_tools_providers::http::retry_delay_in_body;
///
/// let body = br#"{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","message":"Quota exceeded",
///   "details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"1.5s"}]}}"#;
/// assert_eq!(retry_delay_in_body(body), Some(Duration::from_millis(1500)));
/// assert_eq!(retry_delay_in_body(b"{}"), None);
/// ```
pub fn retry_delay_in_body(body: &[u8]) -> Option<Duration> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let v = match &v {
        Value::Array(items) => items.first()?,
        other => other,
    };
    let details = v.get("error")?.get("details")?.as_array()?;
    details.iter().find_map(|d| {
        let is_retry_info = d
            .get("@type")
            .and_then(Value::as_str)
            .is_some_and(|t| t.ends_with("google.rpc.RetryInfo"));
        let delay = d.get("retryDelay")?.as_str()?;
        let secs: f64 = delay.trim().strip_suffix('s')?.parse().ok()?;
        (is_retry_info && secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs))
    })
}

/// Reads an error answer into a [`ProviderError`]: the status, the provider's error type, code
/// and message (OpenAI's `{"error":{…}}`, Anthropic's `{"type":"error","error":{…}}`, Google's
/// `{"error":{"status":…}}`, Mistral's `{"object":"error",…}`, Ollama's `{"error":"…"}`,
/// validation `{"detail":…}`, or the raw text), the request id, whether to retry (the status, or
/// the `x-should-retry` header; Anthropic's 529 "overloaded" is a 5xx and retried like a rate
/// limit) and how long to wait (`retry-after-ms`, `retry-after`, or Google's
/// `RetryInfo.retryDelay` in the body).
pub fn error_from_response(
    name: &str,
    status: u16,
    headers: &HeaderMap,
    body: &[u8],
) -> ProviderError {
    let details = ErrorDetails::from_body(body);
    let message = details.message.unwrap_or_else(|| {
        let text = String::from_utf8_lossy(body);
        let text = text.trim();
        if text.is_empty() {
            StatusCode::from_u16(status)
                .ok()
                .and_then(|s| s.canonical_reason())
                .unwrap_or("no message")
                .to_owned()
        } else {
            truncate(text, 500)
        }
    });
    let retryable = match headers.get("x-should-retry").and_then(|v| v.to_str().ok()) {
        Some("true") => true,
        Some("false") => false,
        _ => is_retryable_status(status),
    };
    let mut error = ProviderError::http(name, status, message)
        .with_retryable(retryable)
        .with_retry_after(retry_after(headers).or_else(|| retry_delay_in_body(body)));
    if let Some(t) = details.error_type {
        error = error.with_error_type(t);
    }
    if let Some(c) = details.code {
        error = error.with_code(c);
    }
    if let Some(id) = request_id(headers) {
        error = error.with_request_id(id);
    }
    error
}

/// The parts of a provider's error body.
#[derive(Debug, Default, PartialEq)]
pub struct ErrorDetails {
    /// The message.
    pub message: Option<String>,
    /// The error type (`invalid_request_error`, `RESOURCE_EXHAUSTED`, …).
    pub error_type: Option<String>,
    /// The error code.
    pub code: Option<String>,
}

impl ErrorDetails {
    /// Reads the error shapes providers use; anything else gives empty details.
    pub fn from_body(body: &[u8]) -> Self {
        match serde_json::from_slice::<Value>(body) {
            Ok(v) => Self::from_value(&v),
            Err(_) => Self::default(),
        }
    }

    /// Reads an already parsed error value (also used for errors inside streams).
    pub fn from_value(v: &Value) -> Self {
        let v = match v {
            Value::Array(items) => match items.first() {
                Some(first) => first,
                None => return Self::default(),
            },
            other => other,
        };
        let text = |v: Option<&Value>| -> Option<String> {
            match v? {
                Value::String(s) if !s.is_empty() => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            }
        };
        match v.get("error") {
            Some(Value::String(message)) => Self {
                message: Some(message.clone()),
                ..Self::default()
            },
            Some(inner @ Value::Object(_)) => Self {
                message: text(inner.get("message")),
                error_type: text(inner.get("type")).or_else(|| text(inner.get("status"))),
                code: text(inner.get("code")),
            },
            _ => {
                if let Some(detail) = v.get("detail") {
                    let message = match detail {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    return Self {
                        message: Some(truncate(&message, 500)),
                        error_type: Some("validation_error".into()),
                        code: None,
                    };
                }
                Self {
                    message: text(v.get("message")),
                    error_type: text(v.get("type")),
                    code: text(v.get("code")),
                }
            }
        }
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn backoff_doubles_up_to_the_cap_and_jitter_only_shortens() {
        let p = RetryPolicy::default()
            .with_backoff(Duration::from_millis(100), Duration::from_millis(350))
            .with_jitter(0.0);
        assert_eq!(p.delay(0, None), Duration::from_millis(100));
        assert_eq!(p.delay(1, None), Duration::from_millis(200));
        assert_eq!(p.delay(2, None), Duration::from_millis(350));
        assert_eq!(p.delay(40, None), Duration::from_millis(350));
        let j = p.clone().with_jitter(0.5);
        for _ in 0..100 {
            let d = j.delay(1, None);
            assert!(d <= Duration::from_millis(200) && d >= Duration::from_millis(100));
        }
    }

    #[test]
    fn server_requested_delay_wins_unless_too_long() {
        let p = RetryPolicy::default().with_jitter(0.0);
        assert_eq!(
            p.delay(0, Some(Duration::from_secs(3))),
            Duration::from_secs(3)
        );
        assert_eq!(
            p.delay(0, Some(Duration::from_secs(3600))),
            Duration::from_millis(500)
        );
    }

    #[test]
    fn retry_after_headers_are_read_in_milliseconds_first() {
        assert_eq!(
            retry_after(&headers(&[("retry-after-ms", "250"), ("retry-after", "7")])),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "2")])),
            Some(Duration::from_secs(2))
        );
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")])), None);
        assert_eq!(retry_after(&headers(&[("retry-after", "-1")])), None);
    }

    #[test]
    fn retry_after_is_read_as_an_http_date() {
        let now = httpdate::parse_http_date("Wed, 21 Oct 2015 07:28:00 GMT").unwrap();
        let at = |value: &'static str| retry_after_at(&headers(&[("retry-after", value)]), now);
        assert_eq!(
            at("Wed, 21 Oct 2015 07:28:30 GMT"),
            Some(Duration::from_secs(30))
        );
        // The two obsolete formats RFC 9110 still asks recipients to accept.
        assert_eq!(
            at("Wednesday, 21-Oct-15 07:29:00 GMT"),
            Some(Duration::from_secs(60))
        );
        assert_eq!(at("Wed Oct 21 07:28:05 2015"), Some(Duration::from_secs(5)));
        assert_eq!(at("Wed, 21 Oct 2015 07:00:00 GMT"), Some(Duration::ZERO));
    }

    #[test]
    fn statuses_that_are_retried() {
        for s in [408, 409, 429, 500, 502, 503, 529] {
            assert!(is_retryable_status(s), "{s}");
        }
        for s in [400, 401, 403, 404, 410, 422] {
            assert!(!is_retryable_status(s), "{s}");
        }
    }

    #[test]
    fn error_bodies_of_every_shape_are_read() {
        let e = error_from_response(
            "openai",
            400,
            &headers(&[("x-request-id", "req_1")]),
            br#"{"error":{"message":"Invalid 'tools[0].name'","type":"invalid_request_error","param":"tools[0].name","code":"invalid_value"}}"#,
        );
        assert_eq!(e.status(), Some(400));
        assert_eq!(e.error_type(), Some("invalid_request_error"));
        assert_eq!(e.code(), Some("invalid_value"));
        assert_eq!(e.message(), "Invalid 'tools[0].name'");
        assert_eq!(e.request_id(), Some("req_1"));
        assert!(!e.is_retryable());

        let mistral = ErrorDetails::from_body(
            br#"{"object":"error","message":"Tool call id was call_0fypS1hVX but must be a-z, A-Z, 0-9, with a length of 9.","type":"invalid_function_call","param":null,"code":"3280"}"#,
        );
        assert_eq!(mistral.error_type.as_deref(), Some("invalid_function_call"));
        assert_eq!(mistral.code.as_deref(), Some("3280"));

        let ollama = ErrorDetails::from_body(br#"{"error":"model 'qwen9' not found"}"#);
        assert_eq!(ollama.message.as_deref(), Some("model 'qwen9' not found"));

        let gemini = ErrorDetails::from_body(
            br#"[{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED"}}]"#,
        );
        assert_eq!(gemini.error_type.as_deref(), Some("RESOURCE_EXHAUSTED"));
        assert_eq!(gemini.code.as_deref(), Some("429"));

        let html = error_from_response("x", 502, &HeaderMap::new(), b"<html>Bad gateway</html>");
        assert_eq!(html.message(), "<html>Bad gateway</html>");
        assert!(html.is_retryable());

        let empty = error_from_response("x", 503, &HeaderMap::new(), b"");
        assert_eq!(empty.message(), "Service Unavailable");
    }

    #[test]
    fn anthropic_overload_and_google_quota_errors_are_read_with_their_delays() {
        let overloaded = error_from_response(
            "anthropic",
            529,
            &headers(&[("request-id", "req_011")]),
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011"}"#,
        );
        assert!(overloaded.is_retryable());
        assert_eq!(overloaded.error_type(), Some("overloaded_error"));
        assert_eq!(overloaded.message(), "Overloaded");
        assert_eq!(overloaded.request_id(), Some("req_011"));

        let quota = error_from_response(
            "gemini",
            429,
            &HeaderMap::new(),
            br#"{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED","details":[
                {"@type":"type.googleapis.com/google.rpc.Help","links":[]},
                {"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"7s"}]}}"#,
        );
        assert!(quota.is_retryable());
        assert_eq!(quota.error_type(), Some("RESOURCE_EXHAUSTED"));
        assert_eq!(quota.retry_after(), Some(Duration::from_secs(7)));
        // A header wins over the body.
        let both = error_from_response(
            "gemini",
            429,
            &headers(&[("retry-after", "2")]),
            br#"{"error":{"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"7s"}]}}"#,
        );
        assert_eq!(both.retry_after(), Some(Duration::from_secs(2)));
    }

    #[test]
    fn should_retry_header_overrides_the_status() {
        let e = error_from_response("x", 500, &headers(&[("x-should-retry", "false")]), b"{}");
        assert!(!e.is_retryable());
        let e = error_from_response("x", 400, &headers(&[("x-should-retry", "true")]), b"{}");
        assert!(e.is_retryable());
    }

    #[test]
    fn query_keys_and_auth_end_up_in_the_url_and_are_redacted_in_recordings() {
        let mut s = HttpSettings::new("gemini", "https://example.test/v1beta/");
        s.api_key = Some("sekret".into());
        s.key_placeholder = "<GEMINI_API_KEY>".into();
        s.auth = Auth::Query("key".into());
        s.query = vec![("api-version".into(), "2024-10-21".into())];
        let c = HttpClient::new(s).unwrap();
        let url = c.url("/models/x:generate");
        assert_eq!(
            url,
            "https://example.test/v1beta/models/x:generate?api-version=2024-10-21&key=sekret"
        );
        assert!(c.redacted_url(&url).ends_with("key=<GEMINI_API_KEY>"));
    }

    #[test]
    fn well_known_secret_parameters_are_redacted_wherever_they_are() {
        assert_eq!(
            redact_query_secrets("https://h/p?a=1&key=k1&X-Amz-Signature=s&Token=t#frag"),
            "https://h/p?a=1&key=<redacted>&X-Amz-Signature=<redacted>&Token=<redacted>#frag"
        );
        assert_eq!(redact_query_secrets("https://h/p"), "https://h/p");
        assert_eq!(
            redact_query_secrets("https://h/p?keys=1"),
            "https://h/p?keys=1"
        );
    }

    #[tokio::test]
    async fn a_failed_connection_does_not_show_a_query_string_key() {
        let canary = "sk-canary-5a1f0d";
        // A port nothing listens on: bind one, then let it go.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap();
        let mut s = HttpSettings::new("gemini", format!("http://127.0.0.1:{port}/v1beta/"));
        s.api_key = Some(canary.into());
        s.key_placeholder = "<GEMINI_API_KEY>".into();
        s.auth = Auth::Query("key".into());
        s.retry = RetryPolicy::none();
        let c = HttpClient::new(s).unwrap();
        let err = c
            .post_json("/models/x:generate", b"{}".to_vec(), false)
            .await
            .expect_err("nothing listens there");
        let shown = format!("{err} {err:?}");
        assert!(!shown.contains(canary), "{shown}");
        assert!(shown.contains("key=<GEMINI_API_KEY>"), "{shown}");
        assert!(shown.contains("cannot connect"), "{shown}");
    }
}
