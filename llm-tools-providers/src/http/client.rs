//! The client one provider sends through: its settings (base URL, auth, headers, timeouts,
//! limits, retries, recording, signing, error format), the POST with retries, and the answer
//! read whole or as a byte stream.
//!
//! The limits of [`limits`](super::limits) hold in this client's own code, around the request
//! and the stream, so they hold as well for a `reqwest::Client` the application gives
//! ([`HttpSettings::client`]), whose own timeouts and redirect policy this crate cannot set:
//! each request has a deadline (its whole answer, or its whole stream), a stream a silence
//! limit, a body and a stream event a size limit, and a redirect to another origin is refused.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::Stream;
use llm_tools_core::{BoxFuture, ProviderError, ProviderErrorKind};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{StatusCode, Url};
use tokio::time::{Instant, Sleep};

use super::client_secrets::ClientSecrets;
use super::errors::{
    ErrorDetails, ErrorFormat, error_chain, error_from_response, request_id, transport_error,
};
use super::limits::{
    self, BodyFailure, DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_MAX_REDIRECTS, DEFAULT_MAX_STREAM_BYTES, DEFAULT_STREAM_DEADLINE, DEFAULT_TIMEOUT,
    read_capped,
};
use super::redact::{
    Secret, is_placeholder, is_secret_parameter, redact_query, redacted_body, shown_url,
    userinfo_password, without_userinfo,
};
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
    /// Query parameters whose values are secrets (a subscription key, a signature), added to
    /// every URL after `query`; wherever a URL is shown (errors, logs, recordings) the value
    /// of a parameter of one of these names reads `<redacted>`.
    pub secret_query: Vec<(String, Secret)>,
    /// Other secrets the request bodies carry (the access token of a provider-hosted MCP
    /// server): wherever one stands whole in an error (a server's message that quotes the
    /// request, a stream's `error` event) or in a recorded error answer, it reads `<redacted>`.
    pub body_secrets: Vec<Secret>,
    /// The longest a whole non-streaming request may take, from sending it to its body's last
    /// byte (default [`DEFAULT_TIMEOUT`], 10 minutes); also the longest a stream may stay
    /// silent, unless `idle_timeout` is set.
    pub timeout: Duration,
    /// The longest a stream may stay silent (no byte at all) before it fails; `None` (the
    /// default): `timeout`. Keep-alive comments count as bytes, so `stream_deadline` is what
    /// ends a stream that sends nothing else.
    pub idle_timeout: Option<Duration>,
    /// The longest a whole streamed answer may take, from sending the request to the stream's
    /// last byte (default [`DEFAULT_STREAM_DEADLINE`], 60 minutes).
    pub stream_deadline: Duration,
    /// The longest connecting may take (default 10 s), for a client this crate builds; with a
    /// client given in `client`, connecting counts in the request's deadline.
    pub connect_timeout: Duration,
    /// The largest whole body read, an answer's or an error answer's (default
    /// [`DEFAULT_MAX_BODY_BYTES`], 64 MiB): a larger one is refused as soon as it is known to
    /// be larger, never read whole.
    pub max_body_bytes: usize,
    /// The largest stream event kept while it arrives (an SSE event, an NDJSON line, an
    /// event-stream message; default [`DEFAULT_MAX_EVENT_BYTES`], 16 MiB).
    pub max_event_bytes: usize,
    /// The most bytes read from one streamed answer (default [`DEFAULT_MAX_STREAM_BYTES`],
    /// 256 MiB): past it the stream ends with an error.
    pub max_stream_bytes: usize,
    /// The most redirects followed within the request's origin (default
    /// [`DEFAULT_MAX_REDIRECTS`], 10); a redirect to another origin is never followed.
    pub max_redirects: usize,
    /// How failures are retried.
    pub retry: RetryPolicy,
    /// Records every exchange, when set.
    pub recorder: Option<Recorder>,
    /// Called before every retry.
    pub on_retry: Option<RetryObserver>,
    /// A client to use instead of building one (shares connection pools). Build it with
    /// [`same_origin_redirects`](super::same_origin_redirects) as its redirect policy (or
    /// `reqwest::redirect::Policy::none()`): this crate cannot change a given client's policy.
    ///
    /// What holds with a given client: the deadlines, the silence limit and the size limits
    /// are this crate's own, as with a client it builds. Request bodies are sent so that no
    /// client can resend them: a 307 or 308 redirect comes back unfollowed, and this crate
    /// follows it within the origin or refuses it ([`HttpLimit::CrossOriginRedirect`](super::HttpLimit::CrossOriginRedirect)),
    /// so neither body nor credentials go to another origin that way. An answer that comes from
    /// another origin than the request's is refused unread. What only the policy prevents: with
    /// reqwest's default policy, a 301, 302 or 303 to another origin is followed by a `GET`
    /// without the body and without `Authorization`, but with every other header, so a key in
    /// `x-api-key`, `api-key`, `x-goog-api-key` or `x-amz-security-token` reaches that origin
    /// before its answer is refused.
    pub client: Option<reqwest::Client>,
    /// Signs every try of every request (AWS SigV4, OAuth tokens), after the auth above.
    pub signer: Option<Arc<dyn RequestSigner>>,
    /// Reads the provider's error answers (default: [`ErrorDetails::generic`]).
    pub error_format: ErrorFormat,
    /// Whether credentials (the key, secret query values, a signer's tokens, a password in
    /// the base URL) may go over plain `http://` to a host that is not loopback (default
    /// `false`: such a client is not built). Set it for a model server on a network the
    /// application trusts that serves no TLS.
    pub allow_plain_http: bool,
}

/// `localhost`, `127.0.0.0/8` or `::1` (as a URL writes it, `[::1]`).
fn is_loopback_host(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
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
            secret_query: Vec::new(),
            body_secrets: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
            idle_timeout: None,
            stream_deadline: DEFAULT_STREAM_DEADLINE,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
            max_stream_bytes: DEFAULT_MAX_STREAM_BYTES,
            max_redirects: DEFAULT_MAX_REDIRECTS,
            retry: RetryPolicy::default(),
            recorder: None,
            on_retry: None,
            client: None,
            signer: None,
            error_format: ErrorDetails::generic,
            allow_plain_http: false,
        }
    }
}

impl fmt::Debug for HttpSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpSettings")
            .field("name", &self.name)
            .field("base_url", &shown_url(&self.base_url))
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
            .field(
                "secret_query",
                &self
                    .secret_query
                    .iter()
                    .map(|(k, _)| (k.as_str(), "<redacted>"))
                    .collect::<Vec<_>>(),
            )
            .field("body_secrets", &self.body_secrets.len())
            .field("timeout", &self.timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("stream_deadline", &self.stream_deadline)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("max_event_bytes", &self.max_event_bytes)
            .field("max_stream_bytes", &self.max_stream_bytes)
            .field("max_redirects", &self.max_redirects)
            .field("user_client", &self.client.is_some())
            .field("retry", &self.retry)
            .field("recording", &self.recorder.is_some())
            .field("signed", &self.signer.is_some())
            .finish_non_exhaustive()
    }
}

/// An HTTP client for one provider: base URL, auth, headers, timeouts and limits, retries,
/// recording.
#[derive(Clone)]
pub struct HttpClient {
    client: reqwest::Client,
    /// Shared with every answer's response and stream, which name the provider in errors.
    name: Arc<str>,
    base_url: String,
    headers: HeaderMap,
    query: Vec<(String, String)>,
    secret_query: Vec<(String, Secret)>,
    /// What errors must not show (shared with the streams of the answers).
    secrets: Arc<ClientSecrets>,
    key: Option<Secret>,
    key_placeholder: String,
    auth: Auth,
    timeout: Duration,
    idle_timeout: Duration,
    stream_deadline: Duration,
    max_body_bytes: usize,
    max_event_bytes: usize,
    max_stream_bytes: usize,
    max_redirects: usize,
    retry: RetryPolicy,
    recorder: Option<Recorder>,
    on_retry: Option<RetryObserver>,
    signer: Option<Arc<dyn RequestSigner>>,
    error_format: ErrorFormat,
    /// The URLs of the paths requests went to, parsed once (a provider posts to one or two).
    urls: Arc<UrlCache>,
}

/// The parsed URLs of the last few paths a client posted to, so a request neither formats nor
/// parses its URL again. Bounded: past [`UrlCache::CAPACITY`] paths the oldest is dropped.
#[derive(Default)]
struct UrlCache(std::sync::Mutex<Vec<(Box<str>, Arc<Url>)>>);

impl UrlCache {
    const CAPACITY: usize = 8;

    fn get_or_parse(
        &self,
        path: &str,
        parse: impl FnOnce() -> Result<Url, ProviderError>,
    ) -> Result<Arc<Url>, ProviderError> {
        let lock = || {
            self.0
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
        };
        if let Some((_, url)) = lock().iter().find(|(p, _)| **p == *path) {
            return Ok(Arc::clone(url));
        }
        let url = Arc::new(parse()?);
        let mut urls = lock();
        // Another request may have parsed the same path meanwhile: keep one entry per path.
        if urls.iter().any(|(p, _)| **p == *path) {
            return Ok(url);
        }
        if urls.len() >= Self::CAPACITY {
            urls.remove(0);
        }
        urls.push((path.into(), Arc::clone(&url)));
        Ok(url)
    }
}

impl fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClient")
            .field("name", &self.name)
            .field("base_url", &shown_url(&self.base_url))
            .finish_non_exhaustive()
    }
}

impl HttpClient {
    /// How long one exchange may take: the whole request, or (`streaming`) the whole stream.
    #[cfg(feature = "anthropic")]
    pub(crate) fn deadline_of(&self, streaming: bool) -> Duration {
        if streaming {
            self.stream_deadline
        } else {
            self.timeout
        }
    }

    /// The most bytes one answer may be read in: `max_stream_bytes` for a stream,
    /// `max_body_bytes` otherwise.
    #[cfg(feature = "anthropic")]
    pub(crate) fn max_answer_bytes(&self, streaming: bool) -> usize {
        if streaming {
            self.max_stream_bytes
        } else {
            self.max_body_bytes
        }
    }

    /// The name the provider's errors carry.
    #[cfg(feature = "anthropic")]
    pub(crate) fn provider_name(&self) -> &str {
        &self.name
    }

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
        let base = Url::parse(&settings.base_url).ok();
        let on_loopback = base
            .as_ref()
            .and_then(Url::host_str)
            .is_some_and(is_loopback_host);
        let has_credentials = settings.api_key.is_some()
            || !settings.secret_query.is_empty()
            || settings.signer.is_some()
            || base.as_ref().is_some_and(|url| url.password().is_some());
        if has_credentials
            && !settings.allow_plain_http
            && !on_loopback
            && base.as_ref().is_some_and(|url| url.scheme() == "http")
        {
            return Err(invalid(format!(
                "the base URL `{}` is plain http to a host that is not loopback, and the \
                 credentials would cross the network readable by anyone on the path: use \
                 https, or allow it for a trusted network (`allow_plain_http`)",
                shown_url(&settings.base_url)
            )));
        }
        // Timeouts are this client's own (around the request and the stream), not reqwest's,
        // so they hold, with typed errors, for a given client too.
        let client = match settings.client {
            Some(c) => c,
            None => {
                let builder = reqwest::Client::builder()
                    .connect_timeout(settings.connect_timeout)
                    .redirect(limits::same_origin_redirects(settings.max_redirects));
                // A server on this machine is never reached through a proxy of the
                // environment (`HTTP_PROXY`), which would see a plain-http request whole.
                let builder = if on_loopback {
                    builder.no_proxy()
                } else {
                    builder
                };
                builder
                    .build()
                    .map_err(|e| invalid(format!("the HTTP client cannot be built: {e}")))?
            }
        };
        // A query secret may be short: it is replaced where it stands whole, never inside
        // another word of a message; as written and as sent (percent-encoded), since a server
        // may quote the request's URL.
        let query_secrets: Vec<&str> = settings
            .secret_query
            .iter()
            .map(|(_, value)| value.expose())
            .chain(
                settings
                    .query
                    .iter()
                    .filter(|(name, _)| is_secret_parameter(name))
                    .map(|(_, value)| value.as_str()),
            )
            .collect();
        let encoded: Vec<Secret> = query_secrets
            .iter()
            .map(|value| encode_query(value))
            .filter(|sent| !query_secrets.contains(&sent.as_str()))
            .map(|sent| Secret::from(sent.as_str()))
            .collect();
        let whole = query_secrets
            .iter()
            .map(|value| Secret::from(*value))
            .chain(encoded)
            // A password in the base URL's user info (sent as Basic credentials), as written
            // and decoded.
            .chain(
                userinfo_password(&settings.base_url)
                    .into_iter()
                    .map(Secret::from),
            )
            .chain(settings.body_secrets);
        let secrets = ClientSecrets::new(
            settings
                .api_key
                .clone()
                .map(|key| (key, settings.key_placeholder.clone())),
            whole,
            settings.signer.clone(),
        );
        Ok(Self {
            client,
            base_url: settings.base_url.trim_end_matches('/').to_owned(),
            headers,
            query: settings.query,
            secret_query: settings.secret_query,
            secrets: Arc::new(secrets),
            key: settings.api_key,
            key_placeholder: settings.key_placeholder,
            auth: settings.auth,
            timeout: settings.timeout,
            idle_timeout: settings.idle_timeout.unwrap_or(settings.timeout),
            stream_deadline: settings.stream_deadline,
            max_body_bytes: settings.max_body_bytes,
            max_event_bytes: settings.max_event_bytes,
            max_stream_bytes: settings.max_stream_bytes,
            max_redirects: settings.max_redirects,
            retry: settings.retry,
            recorder: settings.recorder,
            on_retry: settings.on_retry,
            signer: settings.signer,
            error_format: settings.error_format,
            name: Arc::from(name),
            urls: Arc::default(),
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

    /// The largest stream event kept while it arrives ([`HttpSettings::max_event_bytes`]).
    pub fn max_event_bytes(&self) -> usize {
        self.max_event_bytes
    }

    /// The URL of `path`, parsed once per path; one that does not parse is a request error.
    fn parsed_url(&self, path: &str) -> Result<Arc<Url>, ProviderError> {
        self.urls.get_or_parse(path, || {
            let url = self.url(path);
            Url::parse(&url).map_err(|e| {
                ProviderError::new(
                    &*self.name,
                    ProviderErrorKind::Request,
                    format!("`{}` is not a valid URL ({e})", self.redacted_url(&url)),
                )
            })
        })
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
        for (k, v) in &self.secret_query {
            push(k, v.expose());
        }
        if let (Auth::Query(param), Some(key)) = (&self.auth, &self.key) {
            push(param, key.expose());
        }
        url
    }

    /// The URL as errors, logs and recordings show it, its query read parameter by parameter
    /// (names compared whole, never a value searched for as a substring): the key's parameter
    /// shows its placeholder (`key=<GEMINI_API_KEY>`), and the values of the configured secret
    /// parameters and of the well-known ones (`key`, `api_key`, `access_token`, `token`, `sig`,
    /// `signature`, `subscription-key`, `X-Amz-*`, …) read `<redacted>`.
    fn redacted_url(&self, url: &str) -> String {
        let url = without_userinfo(url);
        redact_query(&url, |name, value| {
            if let (Auth::Query(param), Some(_)) = (&self.auth, &self.key)
                && name == param
            {
                return Some(self.key_placeholder.clone());
            }
            if self.secret_query.iter().any(|(secret, _)| secret == name)
                || (is_secret_parameter(name) && !is_placeholder(value))
            {
                return Some("<redacted>".to_owned());
            }
            None
        })
    }

    /// POSTs a JSON body to `path` (appended to the base URL), trying again on retryable
    /// failures, and returns the first successful answer: a JSON body, or with `stream` a
    /// stream in that framing (which sets the `accept` header). An error status is read into a
    /// [`ProviderError`] with the provider's error type, code, message and request id.
    ///
    /// Each try has a deadline (`timeout`, or `stream_deadline` for a stream, which the
    /// returned stream keeps), redirects are followed only within the request's origin, and
    /// an error answer's body is read only up to `max_body_bytes`.
    pub async fn post_json(
        &self,
        path: &str,
        body: Vec<u8>,
        stream: Option<Framing>,
    ) -> Result<HttpResponse, ProviderError> {
        self.boxed_post_json(path, body, stream).await
    }

    /// [`post_json`](Self::post_json) as a boxed future made here, so that a caller's crate
    /// compiles none of it (rustc can copy an async body into every crate that polls it).
    #[inline(never)]
    fn boxed_post_json<'a>(
        &'a self,
        path: &'a str,
        body: Vec<u8>,
        stream: Option<Framing>,
    ) -> BoxFuture<'a, Result<HttpResponse, ProviderError>> {
        Box::pin(self.post_json_now(path, body, stream))
    }

    /// [`post_json`](Self::post_json)'s work: what the providers' own exchanges await, inside
    /// the future they box already.
    pub(crate) async fn post_json_now(
        &self,
        path: &str,
        body: Vec<u8>,
        stream: Option<Framing>,
    ) -> Result<HttpResponse, ProviderError> {
        let streaming = stream.is_some();
        let url = self.parsed_url(path)?;
        tracing::debug!(
            provider = %self.name,
            url = %self.redacted_url(url.as_str()),
            streaming,
            body = %redacted_body(&body, self.key.as_ref(), &self.key_placeholder),
            "sending a request"
        );
        let body = Bytes::from(body);
        let mut attempt = 0u32;
        let mut resigned = false;
        loop {
            let result = self.try_once(&url, &body, stream).await;
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

    /// One try: the request sent (again to the same origin on a 307 or 308 redirect), its
    /// answer's status and headers read within the deadline; an error answer read whole.
    async fn try_once(
        &self,
        url: &Url,
        body: &Bytes,
        stream: Option<Framing>,
    ) -> Result<HttpResponse, ProviderError> {
        let streaming = stream.is_some();
        let accept = stream.map_or("application/json", Framing::content_type);
        let limit = if streaming {
            self.stream_deadline
        } else {
            self.timeout
        };
        let deadline = Instant::now().checked_add(limit);
        // Borrowed until a redirect within the origin moves the request to a URL of its own.
        let mut target = std::borrow::Cow::Borrowed(url);
        let mut hops = 0usize;
        loop {
            let (mut response, pending) = self
                .send_once(&target, body, accept, streaming, limit, deadline)
                .await?;
            let fail = |pending: Option<crate::record::PendingInteraction>,
                        error: ProviderError| {
                if let Some(p) = pending {
                    p.fail(&error);
                }
                Err(self.without_secrets(error))
            };
            let status = response.status();
            // A given client may have followed a redirect itself (its policy is not ours): an
            // answer from another origin is refused unread.
            if !limits::same_origin(&target, response.url()) {
                let error = limits::cross_origin_redirect(
                    &self.name,
                    &limits::origin(&target),
                    &limits::origin(response.url()),
                    None,
                );
                return fail(pending, error);
            }
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|l| response.url().join(l).ok());
            if status.is_redirection()
                && let Some(next) = location
            {
                if !limits::same_origin(response.url(), &next) {
                    let error = limits::cross_origin_redirect(
                        &self.name,
                        &limits::origin(response.url()),
                        &limits::origin(&next),
                        Some(status.as_u16()),
                    );
                    return fail(pending, error);
                }
                let resend = matches!(
                    status,
                    StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT
                );
                if resend && hops < self.max_redirects {
                    // Within the origin, the same request goes again (the client cannot resend
                    // the body itself), signed anew for its new URL.
                    if let Some(p) = pending {
                        p.finish(status.as_u16(), response.headers(), b"");
                    }
                    hops += 1;
                    target = std::borrow::Cow::Owned(next);
                    continue;
                }
                if resend {
                    let error = ProviderError::http(
                        &*self.name,
                        status.as_u16(),
                        format!(
                            "more than {} redirects, the limit (max_redirects; change it with \
                             `with_max_redirects`)",
                            self.max_redirects
                        ),
                    );
                    return fail(pending, error);
                }
            }
            let request_id = request_id(response.headers());
            if !status.is_success() {
                let headers = response.headers().clone();
                // An error answer is small: its body comes within the idle limit (and the
                // request's deadline), not within a stream's whole deadline.
                let body_deadline =
                    earlier(deadline, Instant::now().checked_add(self.idle_timeout));
                let bytes =
                    match read_capped(&mut response, self.max_body_bytes, body_deadline).await {
                        Ok(bytes) => bytes,
                        Err(BodyFailure::TooLarge) => {
                            let mut error = limits::body_too_large(
                                &self.name,
                                self.max_body_bytes,
                                Some(status.as_u16()),
                            );
                            if let Some(id) = request_id {
                                error = error.with_request_id(id);
                            }
                            return fail(pending, error);
                        }
                        Err(BodyFailure::Deadline) => {
                            let error = limits::error_body_too_slow(
                                &self.name,
                                status.as_u16(),
                                self.idle_timeout.min(limit),
                            );
                            return fail(pending, error);
                        }
                        // The status says what failed; a body cut short adds nothing to read.
                        Err(BodyFailure::Transport(_)) => Bytes::new(),
                    };
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
            return Ok(HttpResponse {
                name: Arc::clone(&self.name),
                status,
                request_id,
                inner: response,
                pending,
                limit,
                deadline,
                streaming,
                idle: self.idle_timeout,
                max_body_bytes: self.max_body_bytes,
                max_stream_bytes: self.max_stream_bytes,
            });
        }
    }

    /// Sends the request to `target` and waits for its answer's status and headers: until the
    /// deadline, and for a stream no longer than its silence limit either.
    async fn send_once(
        &self,
        target: &Url,
        body: &Bytes,
        accept: &'static str,
        streaming: bool,
        limit: Duration,
        deadline: Option<Instant>,
    ) -> Result<(reqwest::Response, Option<crate::record::PendingInteraction>), ProviderError> {
        let mut request = self
            .client
            .post(target.clone())
            .headers(self.headers.clone())
            // Static values: each request's headers copy no bytes of them.
            .header(
                reqwest::header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )
            .header(reqwest::header::ACCEPT, HeaderValue::from_static(accept))
            .body(limits::one_shot_body(body.clone()))
            .build()
            .map_err(|e| {
                transport_error(&self.name, e, Some(&self.redacted_url(target.as_str())))
            })?;
        if let Some(signer) = &self.signer {
            // A signer's error may quote what it was given (a token endpoint's answer, the
            // URL): it goes through the same redaction as the server's errors. Signing (a
            // token endpoint's exchange) counts toward the request's deadline.
            let signed = signer.sign(SignableRequest {
                name: &self.name,
                method: "POST",
                url: target.as_str(),
                headers: request.headers_mut(),
                body,
            });
            let signed = match deadline {
                Some(at) => tokio::time::timeout_at(at, signed)
                    .await
                    .unwrap_or_else(|_| {
                        Err(limits::deadline_exceeded(&self.name, limit, streaming))
                    }),
                None => signed.await,
            };
            signed.map_err(|e| self.without_secrets(e))?;
        }
        let pending = self.recorder.as_ref().map(|r| {
            r.begin(
                "POST",
                &self.redacted_url(target.as_str()),
                self.recorded_request_headers(accept),
                redacted_body(body, self.key.as_ref(), &self.key_placeholder).as_bytes(),
            )
            .redacting(Arc::clone(&self.secrets))
        });
        let silence = if streaming {
            Instant::now().checked_add(self.idle_timeout)
        } else {
            None
        };
        let wait_until = earlier(deadline, silence);
        let sent = self.client.execute(request);
        let result = match wait_until {
            Some(at) => tokio::time::timeout_at(at, sent).await,
            None => Ok(sent.await),
        };
        let error = match result {
            Ok(Ok(response)) => return Ok((response, pending)),
            Ok(Err(e)) => match limits::refused_redirect(&e) {
                Some(refused) => limits::cross_origin_redirect(
                    &self.name,
                    &refused.from,
                    &refused.to,
                    Some(refused.status),
                ),
                None => transport_error(&self.name, e, Some(&self.redacted_url(target.as_str()))),
            },
            Err(_) if silence.is_some() && silence == wait_until && silence != deadline => {
                limits::idle_timeout(&self.name, self.idle_timeout)
            }
            Err(_) => limits::deadline_exceeded(&self.name, limit, streaming),
        };
        if let Some(p) = pending {
            p.fail(&error);
        }
        Err(self.without_secrets(error))
    }

    /// The error with the configured key, the secret query values, the bodies' tokens and the
    /// signer's secrets replaced by placeholders (a server's message is free text: it is
    /// searched for them).
    pub(crate) fn without_secrets(&self, error: ProviderError) -> ProviderError {
        self.secrets.redact(error)
    }

    /// What this client's errors must not show, for the streams of its answers.
    pub(crate) fn client_secrets(&self) -> Arc<ClientSecrets> {
        Arc::clone(&self.secrets)
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

/// A successful answer, its body not read yet. Reading it keeps the request's limits: the
/// whole body within `max_body_bytes` and the deadline, a stream within its deadline, its
/// silence limit and `max_stream_bytes`.
pub struct HttpResponse {
    name: Arc<str>,
    status: StatusCode,
    request_id: Option<String>,
    inner: reqwest::Response,
    pending: Option<crate::record::PendingInteraction>,
    /// The request's deadline as configured, for errors.
    limit: Duration,
    /// When the request's deadline passes (`None`: too far to count).
    deadline: Option<Instant>,
    streaming: bool,
    /// The longest a stream may stay silent.
    idle: Duration,
    max_body_bytes: usize,
    max_stream_bytes: usize,
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

    /// Reads the whole body, chunk by chunk: one larger than `max_body_bytes` is refused as
    /// soon as that is known ([`HttpLimit::BodyBytes`](super::HttpLimit::BodyBytes)), and one
    /// still arriving at the request's deadline fails
    /// ([`HttpLimit::Deadline`](super::HttpLimit::Deadline)).
    pub async fn bytes(self) -> Result<Bytes, ProviderError> {
        self.boxed_bytes().await
    }

    /// [`bytes`](Self::bytes) as a boxed future made here (see
    /// [`HttpClient::post_json`]).
    #[inline(never)]
    fn boxed_bytes(self) -> BoxFuture<'static, Result<Bytes, ProviderError>> {
        Box::pin(self.bytes_now())
    }

    /// [`bytes`](Self::bytes)' work: what the providers' own exchanges await.
    pub(crate) async fn bytes_now(mut self) -> Result<Bytes, ProviderError> {
        // The headers are only copied when a recorder needs them after the body is read.
        let recorded = self
            .pending
            .take()
            .map(|p| (p, self.inner.headers().clone()));
        let result = read_capped(&mut self.inner, self.max_body_bytes, self.deadline).await;
        let error = match result {
            Ok(bytes) => {
                if let Some((p, headers)) = recorded {
                    p.finish(self.status.as_u16(), &headers, &bytes);
                }
                return Ok(bytes);
            }
            Err(BodyFailure::TooLarge) => {
                limits::body_too_large(&self.name, self.max_body_bytes, None)
            }
            Err(BodyFailure::Deadline) => {
                limits::deadline_exceeded(&self.name, self.limit, self.streaming)
            }
            Err(BodyFailure::Transport(e)) => transport_error(&self.name, e, None),
        };
        if let Some((p, _)) = recorded {
            p.fail(&error);
        }
        Err(error)
    }

    /// The body as a stream of byte chunks; transport failures become [`ProviderError`]s of
    /// kind `Stream`. The stream fails with [`HttpLimit::Deadline`](super::HttpLimit::Deadline)
    /// at the request's deadline and with
    /// [`HttpLimit::IdleTimeout`](super::HttpLimit::IdleTimeout) after a silence longer than
    /// the idle timeout, and with [`HttpLimit::StreamBytes`](super::HttpLimit::StreamBytes)
    /// once more than `max_stream_bytes` arrived, and ends there.
    pub fn byte_stream(self) -> impl Stream<Item = Result<Bytes, ProviderError>> + Send + 'static {
        let tee = self
            .pending
            .map(|p| p.streaming(self.status.as_u16(), self.inner.headers()));
        GuardedStream {
            name: self.name,
            inner: Box::pin(self.inner.bytes_stream()),
            tee,
            limit: self.limit,
            deadline_at: self.deadline,
            idle: self.idle,
            read: 0,
            max_bytes: self.max_stream_bytes,
            waiting_since: None,
            timer: None,
            done: false,
        }
    }
}

/// A response body's chunks, within the request's deadline and the stream's silence limit.
/// The timer starts on the first poll (inside the runtime that reads the stream).
///
/// One timer serves both limits: it is set for the earlier of the deadline and the end of the
/// silence, and a chunk only ends the current wait. When the timer fires early (chunks came
/// since it was set), it is moved to the end of the current silence, so a stream of many small
/// chunks resets no timer per chunk.
struct GuardedStream {
    name: Arc<str>,
    inner: Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>,
    tee: Option<crate::record::StreamTee>,
    limit: Duration,
    deadline_at: Option<Instant>,
    idle: Duration,
    /// Bytes read so far, and the most that may be.
    read: usize,
    max_bytes: usize,
    /// When the current wait for a chunk began (the first poll that found none after the last
    /// chunk): the silence counts from it.
    waiting_since: Option<Instant>,
    timer: Option<Pin<Box<Sleep>>>,
    done: bool,
}

impl GuardedStream {
    /// The error of a limit passed at `now`, if one has.
    fn passed(&self, now: Instant, silence_ends: Option<Instant>) -> Option<ProviderError> {
        if self.deadline_at.is_some_and(|at| now >= at) {
            return Some(limits::deadline_exceeded(&self.name, self.limit, true));
        }
        if silence_ends.is_some_and(|at| now >= at) {
            return Some(limits::idle_timeout(&self.name, self.idle));
        }
        None
    }
}

impl Stream for GuardedStream {
    type Item = Result<Bytes, ProviderError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        match this.inner.as_mut().poll_next(cx) {
            Poll::Ready(Some(Ok(bytes))) => {
                if this.deadline_at.is_some()
                    && let Some(error) = this.passed(Instant::now(), None)
                {
                    this.done = true;
                    return Poll::Ready(Some(Err(error)));
                }
                this.waiting_since = None;
                this.read = this.read.saturating_add(bytes.len());
                if this.read > this.max_bytes {
                    this.done = true;
                    return Poll::Ready(Some(Err(limits::stream_too_large(
                        &this.name,
                        this.max_bytes,
                    ))));
                }
                if let Some(t) = this.tee.as_mut() {
                    t.push(&bytes);
                }
                Poll::Ready(Some(Ok(bytes)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(ProviderError::new(
                &*this.name,
                ProviderErrorKind::Stream,
                format!("the stream broke off: {}", error_chain(&e)),
            )
            .with_retryable(true)))),
            Poll::Ready(None) => {
                this.done = true;
                Poll::Ready(None)
            }
            Poll::Pending => {
                let silence_ends = this
                    .waiting_since
                    .get_or_insert_with(Instant::now)
                    .checked_add(this.idle);
                let due = match (this.deadline_at, silence_ends) {
                    (Some(a), Some(b)) => a.min(b),
                    (Some(at), None) | (None, Some(at)) => at,
                    (None, None) => return Poll::Pending,
                };
                // Twice at most: a timer that fired early is moved once, to a time still ahead.
                for _ in 0..2 {
                    let timer = this
                        .timer
                        .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(due)));
                    if timer.as_mut().poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    if let Some(error) = this.passed(Instant::now(), silence_ends) {
                        this.done = true;
                        return Poll::Ready(Some(Err(error)));
                    }
                    // Early: chunks came since the timer was set. Wait for this silence's end.
                    if let Some(timer) = this.timer.as_mut() {
                        timer.as_mut().reset(due);
                    }
                }
                // The clock and the timer disagree by less than a tick: look again soon.
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        }
    }
}

/// The earlier of two deadlines, either of which may be none.
fn earlier(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
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
