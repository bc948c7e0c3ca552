//! The client one provider sends through: its settings (base URL, auth, headers, timeouts,
//! retries, recording, signing, error format), the POST with retries, and the answer read whole
//! or as a byte stream.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use llm_tools_core::{ProviderError, ProviderErrorKind};
use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::errors::{
    ErrorDetails, ErrorFormat, error_chain, error_from_response, request_id, transport_error,
};
use super::redact::{Secret, is_secret_parameter, redact_query_secrets, redacted_body};
use super::retry::{RetryInfo, RetryObserver, RetryPolicy};
use super::signing::{RequestSigner, SignableRequest};
use crate::framing::Framing;
use crate::record::Recorder;

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

/// The settings of one provider's HTTP client.
#[derive(Clone)]
#[non_exhaustive]
pub struct HttpSettings {
    /// The protocol or endpoint name used in errors (`openai`, `mistral`, …).
    pub name: String,
    /// The base URL every path is appended to (`https://api.openai.com/v1`).
    pub base_url: String,
    /// The API key, if the endpoint needs one.
    pub api_key: Option<Secret>,
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
    /// Signs every try of every request (AWS SigV4, OAuth tokens), after the auth above.
    pub signer: Option<Arc<dyn RequestSigner>>,
    /// Reads the provider's error answers (default: [`ErrorDetails::generic`]).
    pub error_format: ErrorFormat,
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
            signer: None,
            error_format: ErrorDetails::generic,
        }
    }
}

impl fmt::Debug for HttpSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpSettings")
            .field("name", &self.name)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key)
            .field("auth", &self.auth)
            .field(
                "headers",
                &self.headers.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .field(
                "query",
                &self
                    .query
                    .iter()
                    .map(|(k, v)| {
                        let shown = if is_secret_parameter(k) {
                            "<redacted>"
                        } else {
                            v.as_str()
                        };
                        (k.as_str(), shown)
                    })
                    .collect::<Vec<_>>(),
            )
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .field("recording", &self.recorder.is_some())
            .field("signed", &self.signer.is_some())
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
    key: Option<Secret>,
    key_placeholder: String,
    auth: Auth,
    timeout: Duration,
    retry: RetryPolicy,
    recorder: Option<Recorder>,
    on_retry: Option<RetryObserver>,
    signer: Option<Arc<dyn RequestSigner>>,
    error_format: ErrorFormat,
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
        if let Some(key) = settings.api_key.as_ref().map(Secret::expose) {
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
            signer: settings.signer,
            error_format: settings.error_format,
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
            push(param, key.expose());
        }
        url
    }

    /// The URL as errors, logs and recordings show it: the configured key replaced by its
    /// placeholder, and the values of well-known secret query parameters (`key`, `api_key`,
    /// `access_token`, `token`, `sig`, `signature`, `X-Amz-*`) by `<redacted>`.
    fn redacted_url(&self, url: &str) -> String {
        let url = match &self.key {
            Some(key) if !key.expose().is_empty() => {
                url.replace(key.expose(), &self.key_placeholder)
            }
            _ => url.to_owned(),
        };
        redact_query_secrets(&url)
    }

    /// POSTs a JSON body to `path` (appended to the base URL), trying again on retryable
    /// failures, and returns the first successful answer: a JSON body, or with `stream` a
    /// stream in that framing (which sets the `accept` header). An error status is read into a
    /// [`ProviderError`] with the provider's error type, code, message and request id.
    pub async fn post_json(
        &self,
        path: &str,
        body: Vec<u8>,
        stream: Option<Framing>,
    ) -> Result<HttpResponse, ProviderError> {
        let streaming = stream.is_some();
        let accept = stream.map_or("application/json", Framing::content_type);
        let url = self.url(path);
        tracing::debug!(
            provider = %self.name,
            url = %self.redacted_url(&url),
            streaming,
            body = %redacted_body(&body, self.key.as_ref(), &self.key_placeholder),
            "sending a request"
        );
        let body = Bytes::from(body);
        let mut attempt = 0u32;
        let mut resigned = false;
        loop {
            let result = self.try_once(&url, body.clone(), accept).await;
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
            if error.status() == Some(401)
                && !resigned
                && let Some(signer) = &self.signer
                && signer.refused().await
            {
                // Credentials that went stale (an expired token): once more, signed anew.
                resigned = true;
                tracing::debug!(provider = %self.name, "the credentials were refused; signing anew");
                continue;
            }
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
        accept: &'static str,
    ) -> Result<HttpResponse, ProviderError> {
        let mut request = self
            .client
            .post(url)
            .headers(self.headers.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, accept)
            .body(body.clone());
        if accept == "application/json" {
            request = request.timeout(self.timeout);
        }
        let mut request = request
            .build()
            .map_err(|e| transport_error(&self.name, e, Some(&self.redacted_url(url))))?;
        if let Some(signer) = &self.signer {
            signer
                .sign(SignableRequest {
                    name: &self.name,
                    method: "POST",
                    url,
                    headers: request.headers_mut(),
                    body: &body,
                })
                .await?;
        }
        let pending = self.recorder.as_ref().map(|r| {
            r.begin(
                "POST",
                &self.redacted_url(url),
                self.recorded_request_headers(accept),
                redacted_body(&body, self.key.as_ref(), &self.key_placeholder).as_bytes(),
            )
        });
        let response = match self.client.execute(request).await {
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
            let error = error_from_response(
                &self.name,
                status.as_u16(),
                &headers,
                &bytes,
                self.error_format,
            );
            return Err(self.without_secrets(error));
        }
        Ok(HttpResponse {
            name: self.name.clone(),
            status,
            request_id,
            inner: response,
            pending,
        })
    }

    /// The error with the configured key and the signer's secrets replaced by placeholders.
    fn without_secrets(&self, error: ProviderError) -> ProviderError {
        let error = match &self.key {
            Some(key) => error.redacted(key.expose(), &self.key_placeholder),
            None => error,
        };
        match &self.signer {
            Some(signer) => signer.redact(error),
            None => error,
        }
    }

    fn recorded_request_headers(&self, accept: &str) -> Vec<(String, String)> {
        let mut out = vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            ("accept".to_owned(), accept.to_owned()),
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn settings_and_clients_never_print_the_key() {
        let canary = "sk-canary-77e1";
        let mut s = HttpSettings::new("openai", "https://example.test/v1");
        s.api_key = Some(canary.into());
        let shown = format!("{s:?}");
        assert!(!shown.contains(canary), "{shown}");
        let c = HttpClient::new(s).unwrap();
        let shown = format!("{c:?} {c:#?}");
        assert!(!shown.contains(canary), "{shown}");
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
            .post_json("/models/x:generate", b"{}".to_vec(), None)
            .await
            .expect_err("nothing listens there");
        let shown = format!("{err} {err:?}");
        assert!(!shown.contains(canary), "{shown}");
        assert!(shown.contains("key=<GEMINI_API_KEY>"), "{shown}");
        assert!(shown.contains("cannot connect"), "{shown}");
    }
}
