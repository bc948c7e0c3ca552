//! The bounds the HTTP layer keeps on what a provider's server sends, and where requests may
//! go: how long an exchange may take (a deadline per request, a silence limit per stream), how
//! large a body, one stream event or a whole stream may grow, and the rule that credentials
//! never follow a redirect to another origin.
//!
//! Every bound has a default here and a builder on the provider's configuration
//! (`with_timeout`, `with_stream_deadline`, `with_idle_timeout`, `with_max_body_bytes`,
//! `with_max_event_bytes`, `with_max_stream_bytes`, `with_max_redirects`). Past one, the exchange ends with a
//! [`ProviderError`] whose code names the limit; [`HttpLimit::of`] reads it back:
//!
//! ```
//! use llm_tools_core::ProviderError;
//! use llm_tools_providers::http::HttpLimit;
//!
//! fn explain(error: &ProviderError) -> &'static str {
//!     match HttpLimit::of(error) {
//!         Some(HttpLimit::StreamEventBytes) => "one stream event was too large",
//!         Some(HttpLimit::Deadline | HttpLimit::IdleTimeout) => "the provider took too long",
//!         Some(HttpLimit::CrossOriginRedirect) => "the provider redirected elsewhere",
//!         Some(_) => "the answer was too large",
//!         None => "the provider's own error",
//!     }
//! }
//! # let _ = explain;
//! ```

use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use llm_tools_core::{ProviderError, ProviderErrorKind};
use reqwest::Url;

/// The longest a whole non-streaming request may take, by default: 10 minutes (change it with
/// `with_timeout`). Unless `with_idle_timeout` says otherwise, it is also the longest a stream
/// may stay silent.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// The longest connecting may take, by default (a client this crate builds): 10 seconds.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest a whole streamed answer may take, by default: 60 minutes, from sending the
/// request to the stream's last byte (change it with `with_stream_deadline`). A stream that
/// only sends keep-alive comments ends here; an answer of 128,000 tokens at 50 tokens a second
/// takes 43 minutes, and fits.
pub const DEFAULT_STREAM_DEADLINE: Duration = Duration::from_secs(3600);

/// The largest whole body (a non-streaming answer, or an error answer) read, by default:
/// 64 MiB (change it with `with_max_body_bytes`).
pub const DEFAULT_MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// The largest stream event kept while it arrives, by default: 16 MiB (change it with
/// `with_max_event_bytes`). It bounds an SSE event (its lines, up to the blank line that ends
/// it), an NDJSON line, and an AWS event-stream message (whose format allows no more than
/// 16 MiB of payload anyway).
pub const DEFAULT_MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// The most bytes read from one streamed answer, by default: 256 MiB (change it with
/// `with_max_stream_bytes`). It bounds what a stream's parser gathers (text, arguments,
/// blocks), which the per-event limit and the deadline alone do not: a fast server could send
/// gigabytes of small events within the hour. An answer of 128,000 tokens streamed as
/// server-sent events, one event per token, takes about 40 MB with its framing, and fits six
/// times over.
pub const DEFAULT_MAX_STREAM_BYTES: usize = 256 * 1024 * 1024;

/// The most redirects followed within one origin for one request, by default: 10 (change it
/// with `with_max_redirects`). A redirect to another origin is never followed.
pub const DEFAULT_MAX_REDIRECTS: usize = 10;

/// The most unreadable events one stream may send: 1,000 (fixed). An event whose data is not
/// the JSON its protocol sends (garbage, a keep-alive in a form the protocol does not use) is
/// skipped, and the first few are logged (then one line saying the rest are not); past this
/// many, the stream ends with [`HttpLimit::UnreadableEvents`]. A server that keeps sending
/// `data:x` (eight bytes an event) would otherwise be read to the end of `max_stream_bytes`,
/// some 33 million events, for nothing.
pub const MAX_UNREADABLE_EVENTS: usize = 1_000;

/// A limit of the HTTP layer that ended an exchange. Each is a [`ProviderError`] with the
/// limit's [`code`](Self::code), a message naming the limit's value and the builder that
/// changes it; [`of`](Self::of) reads the limit back from an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HttpLimit {
    /// One stream event (an SSE event, an NDJSON line, an event-stream message) grew past
    /// `max_event_bytes`: a `Decode` error, not retried.
    StreamEventBytes,
    /// A whole stream grew past `max_stream_bytes`: a `Decode` error, not retried.
    StreamBytes,
    /// A whole body (an answer, or an error answer) is larger than `max_body_bytes`: a `Decode`
    /// error (an `Http` error with the status, for an error answer), not retried.
    BodyBytes,
    /// The request took longer than its deadline (`timeout` for a whole answer,
    /// `stream_deadline` for a stream): a `Transport` error, retryable.
    Deadline,
    /// A stream stayed silent longer than `idle_timeout`: a `Transport` error, retryable.
    IdleTimeout,
    /// The server redirected to another origin (scheme, host or port): the redirect is not
    /// followed, and the message names both origins. Not retried.
    CrossOriginRedirect,
    /// A body or a stream event holds more JSON values than
    /// [`MAX_JSON_VALUES`](llm_tools_core::json_values::MAX_JSON_VALUES), which would cost many
    /// times its size in memory once parsed: a `Decode` error, not retried; nothing of it is
    /// parsed. The same error ends a stream whose events keep more values than that between
    /// them, and an answer or a stream opening more tool calls than that at 8 values a call
    /// (some 130,000), before the calls are built.
    JsonValues,
    /// A stream sent more than [`MAX_UNREADABLE_EVENTS`] events that are not the JSON its
    /// protocol sends: a `Decode` error, not retried.
    UnreadableEvents,
}

impl HttpLimit {
    /// The [`ProviderError::code`] of errors past this limit.
    pub fn code(self) -> &'static str {
        match self {
            Self::StreamEventBytes => "stream_event_too_large",
            Self::StreamBytes => "stream_too_large",
            Self::BodyBytes => "body_too_large",
            Self::Deadline => "deadline_exceeded",
            Self::IdleTimeout => "idle_timeout",
            Self::CrossOriginRedirect => "cross_origin_redirect",
            Self::JsonValues => "too_many_json_values",
            Self::UnreadableEvents => "too_many_unreadable_events",
        }
    }

    /// The limit an error reports, if it is one of these.
    pub fn of(error: &ProviderError) -> Option<Self> {
        let code = error.code()?;
        [
            Self::StreamEventBytes,
            Self::StreamBytes,
            Self::BodyBytes,
            Self::Deadline,
            Self::IdleTimeout,
            Self::CrossOriginRedirect,
            Self::JsonValues,
            Self::UnreadableEvents,
        ]
        .into_iter()
        .find(|limit| limit.code() == code)
    }
}

/// A stream event past `max` bytes.
pub(crate) fn event_too_large(name: &str, max: usize) -> ProviderError {
    ProviderError::new(
        name,
        ProviderErrorKind::Decode,
        format!(
            "a stream event grew past {max} bytes, the limit (max_event_bytes; change it with \
             `with_max_event_bytes`)"
        ),
    )
    .with_code(HttpLimit::StreamEventBytes.code())
}

/// A body or stream event holding about `count` JSON values, past the limit.
pub(crate) fn too_many_json_values(name: &str, count: usize) -> ProviderError {
    ProviderError::new(
        name,
        ProviderErrorKind::Decode,
        format!(
            "the answer holds about {count} JSON values in one document, more than the {} \
             one may hold (llm_tools_core::json_values::MAX_JSON_VALUES); it was not parsed",
            llm_tools_core::json_values::MAX_JSON_VALUES
        ),
    )
    .with_code(HttpLimit::JsonValues.code())
}

/// A stream whose events kept about `count` JSON values between them, past the limit.
#[cfg(feature = "_protocol")]
pub(crate) fn stream_keeps_too_many_values(name: &str, count: usize) -> ProviderError {
    ProviderError::new(
        name,
        ProviderErrorKind::Decode,
        format!(
            "the stream's events keep about {count} JSON values between them (citations, \
             blocks, items), more than the {} one answer may hold \
             (llm_tools_core::json_values::MAX_JSON_VALUES)",
            llm_tools_core::json_values::MAX_JSON_VALUES
        ),
    )
    .with_code(HttpLimit::JsonValues.code())
}

/// A whole answer whose calls (each charged
/// [`VALUES_PER_CALL`](crate::wire::VALUES_PER_CALL), as a stream's are) and kept values come
/// to about `count` JSON values, past the limit.
#[cfg(feature = "_protocol")]
pub(crate) fn answer_keeps_too_many_values(
    name: &str,
    count: usize,
    values_per_call: usize,
) -> ProviderError {
    ProviderError::new(
        name,
        ProviderErrorKind::Decode,
        format!(
            "the answer opens too many tool calls or keeps too many parts whole: each counted \
             as at least {} JSON values (what keeping one costs, as in a stream), they come to \
             about {count}, more than the {} one answer may hold \
             (llm_tools_core::json_values::MAX_JSON_VALUES); nothing of the answer was kept",
            values_per_call,
            llm_tools_core::json_values::MAX_JSON_VALUES
        ),
    )
    .with_code(HttpLimit::JsonValues.code())
}

/// A stream that sent more than [`MAX_UNREADABLE_EVENTS`] unreadable events.
#[cfg(feature = "_protocol")]
pub(crate) fn too_many_unreadable_events(name: &str) -> ProviderError {
    ProviderError::new(
        name,
        ProviderErrorKind::Decode,
        format!(
            "the stream sent more than {MAX_UNREADABLE_EVENTS} events that are not the JSON \
             its protocol sends (MAX_UNREADABLE_EVENTS); it was ended there"
        ),
    )
    .with_code(HttpLimit::UnreadableEvents.code())
}

/// A turn the server paused and the client continued, whose answer, every segment merged,
/// grew past what one answer may hold: `max` bytes (the body or stream limit) or
/// [`MAX_JSON_VALUES`](llm_tools_core::json_values::MAX_JSON_VALUES) values.
#[cfg(feature = "anthropic")]
pub(crate) fn paused_turn_too_large(
    name: &str,
    bytes: usize,
    max: usize,
    values: Option<usize>,
    streaming: bool,
) -> ProviderError {
    let (what, limit) = match values {
        Some(count) => (format!("about {count} JSON values"), HttpLimit::JsonValues),
        None if streaming => (format!("{bytes} bytes"), HttpLimit::StreamBytes),
        None => (format!("{bytes} bytes"), HttpLimit::BodyBytes),
    };
    let bound = match limit {
        HttpLimit::JsonValues => format!(
            "{} JSON values (llm_tools_core::json_values::MAX_JSON_VALUES)",
            llm_tools_core::json_values::MAX_JSON_VALUES
        ),
        HttpLimit::StreamBytes => format!("{max} bytes (max_stream_bytes)"),
        _ => format!("{max} bytes (max_body_bytes)"),
    };
    ProviderError::new(
        name,
        ProviderErrorKind::Decode,
        format!(
            "the server paused the turn and its continued answer grew to {what}, past the \
             {bound} one answer may hold; the turn was not continued further"
        ),
    )
    .with_code(limit.code())
}

/// A whole stream past `max` bytes.
pub(crate) fn stream_too_large(name: &str, max: usize) -> ProviderError {
    ProviderError::new(
        name,
        ProviderErrorKind::Decode,
        format!(
            "the stream grew past {max} bytes, the limit (max_stream_bytes; change it with \
             `with_max_stream_bytes`)"
        ),
    )
    .with_code(HttpLimit::StreamBytes.code())
}

/// A body past `max` bytes: of an answer, or (with its status) of an error answer.
pub(crate) fn body_too_large(name: &str, max: usize, status: Option<u16>) -> ProviderError {
    let what = format!(
        "the body is larger than {max} bytes, the limit (max_body_bytes; change it with \
         `with_max_body_bytes`); it was not read"
    );
    let error = match status {
        Some(status) => ProviderError::http(name, status, format!("an error answer: {what}"))
            .with_retryable(super::retry::is_retryable_status(status)),
        None => ProviderError::new(name, ProviderErrorKind::Decode, what),
    };
    error.with_code(HttpLimit::BodyBytes.code())
}

/// A request past its deadline: `limit` long, set by `setting`.
pub(crate) fn deadline_exceeded(name: &str, limit: Duration, streaming: bool) -> ProviderError {
    let (what, setting) = if streaming {
        (
            "the stream",
            "stream_deadline; change it with `with_stream_deadline`",
        )
    } else {
        ("the request", "timeout; change it with `with_timeout`")
    };
    ProviderError::new(
        name,
        ProviderErrorKind::Transport,
        format!(
            "{what} took longer than {}, its deadline ({setting})",
            seconds(limit)
        ),
    )
    .with_code(HttpLimit::Deadline.code())
    .with_retryable(true)
}

/// An error answer (`status`) whose body did not arrive within `limit`: not tried again, since
/// a server that sends its error this slowly would take as long again.
pub(crate) fn error_body_too_slow(name: &str, status: u16, limit: Duration) -> ProviderError {
    ProviderError::http(
        name,
        status,
        format!(
            "the provider answered HTTP {status}, and its body did not arrive within {} \
             (idle_timeout; change it with `with_idle_timeout`)",
            seconds(limit)
        ),
    )
    .with_code(HttpLimit::Deadline.code())
    .with_retryable(false)
}

/// A stream silent for longer than `idle`.
pub(crate) fn idle_timeout(name: &str, idle: Duration) -> ProviderError {
    ProviderError::new(
        name,
        ProviderErrorKind::Transport,
        format!(
            "the server sent nothing for {}, the limit (idle_timeout; change it with \
             `with_idle_timeout`)",
            seconds(idle)
        ),
    )
    .with_code(HttpLimit::IdleTimeout.code())
    .with_retryable(true)
}

/// A redirect from `from` to `to`, another origin, not followed; `status` is the redirect's.
pub(crate) fn cross_origin_redirect(
    name: &str,
    from: &str,
    to: &str,
    status: Option<u16>,
) -> ProviderError {
    let message = format!(
        "the server redirected from {from} to another origin, {to}; a provider's requests \
         never follow a redirect to another origin (they carry its credentials)"
    );
    let error = match status {
        Some(status) => ProviderError::http(name, status, message),
        None => ProviderError::new(name, ProviderErrorKind::Transport, message),
    };
    error
        .with_code(HttpLimit::CrossOriginRedirect.code())
        .with_retryable(false)
}

/// A duration as errors show it (`600 s`, `0.25 s`).
fn seconds(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

/// The origin of a URL as errors show it: scheme, host and port (the port always written,
/// the scheme's default included), never a path or a query.
pub(crate) fn origin(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port_or_known_default() {
        Some(port) => format!("{}://{host}:{port}", url.scheme()),
        None => format!("{}://{host}", url.scheme()),
    }
}

/// Whether two URLs have the same origin (scheme, host, port).
pub(crate) fn same_origin(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme()
        && a.host_str() == b.host_str()
        && a.port_or_known_default() == b.port_or_known_default()
}

/// The redirect a [`same_origin_redirects`] policy refused, as the HTTP client reports it.
#[derive(Debug)]
pub(crate) struct RefusedRedirect {
    pub(crate) from: String,
    pub(crate) to: String,
    pub(crate) status: u16,
}

impl fmt::Display for RefusedRedirect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a redirect from {} to another origin, {}",
            self.from, self.to
        )
    }
}

impl std::error::Error for RefusedRedirect {}

/// The redirect policy of every client this crate builds, and the one a client given to a
/// provider (`with_http_client`) should be built with: redirects within the origin of the
/// request (scheme, host and port) are followed, at most `max_hops` of them; a redirect to
/// another origin is an error before anything is sent there, which the provider reports as
/// [`HttpLimit::CrossOriginRedirect`], naming both origins.
///
/// reqwest's default policy follows a redirect to any origin and drops only the
/// `Authorization` and cookie headers on the way, so a key in another header (`x-api-key`,
/// `api-key`, `x-goog-api-key`, `x-amz-security-token`, any custom header) would reach the
/// other origin.
///
/// ```
/// use llm_tools_providers::http::{DEFAULT_MAX_REDIRECTS, same_origin_redirects};
///
/// let client = reqwest::Client::builder()
///     .redirect(same_origin_redirects(DEFAULT_MAX_REDIRECTS))
///     .build()
///     .unwrap();
/// # let _ = client;
/// ```
pub fn same_origin_redirects(max_hops: usize) -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(move |attempt| {
        let from = attempt.previous().last().cloned();
        match from {
            Some(from) if !same_origin(&from, attempt.url()) => {
                let refused = RefusedRedirect {
                    from: origin(&from),
                    to: origin(attempt.url()),
                    status: attempt.status().as_u16(),
                };
                attempt.error(refused)
            }
            _ if attempt.previous().len() > max_hops => {
                attempt.error(format!("more than {max_hops} redirects (max_redirects)"))
            }
            _ => attempt.follow(),
        }
    })
}

/// The redirect a [`same_origin_redirects`] policy refused, found in an HTTP client's error.
pub(crate) fn refused_redirect(error: &reqwest::Error) -> Option<&RefusedRedirect> {
    let mut source = std::error::Error::source(error);
    while let Some(inner) = source {
        if let Some(refused) = inner.downcast_ref::<RefusedRedirect>() {
            return Some(refused);
        }
        source = inner.source();
    }
    None
}

/// A request body the HTTP client sends once and cannot send again: a client never follows a
/// 307 or 308 redirect with it (it has no copy of the body to resend), so such a redirect comes
/// back as the answer and the provider decides. Its length is known, so it goes with a
/// `content-length` header, as a plain body would.
pub(crate) fn one_shot_body(bytes: Bytes) -> reqwest::Body {
    reqwest::Body::wrap(http_body_util::Full::new(bytes))
}

/// Why a whole body could not be read.
pub(crate) enum BodyFailure {
    /// It is larger than the limit.
    TooLarge,
    /// The deadline passed first.
    Deadline,
    /// The transport failed.
    Transport(reqwest::Error),
}

/// Reads a body whole, chunk by chunk, refusing it as soon as it is known to be larger than
/// `max` bytes (from its `content-length`, or from the bytes read so far: a length the server
/// announces is not trusted to be the length it sends), and failing at `deadline`.
pub(crate) async fn read_capped(
    response: &mut reqwest::Response,
    max: usize,
    deadline: Option<tokio::time::Instant>,
) -> Result<Bytes, BodyFailure> {
    let announced = response.content_length();
    if announced.is_some_and(|len| len > max as u64) {
        return Err(BodyFailure::TooLarge);
    }
    // The announced length sizes the buffer, within a modest start (it is not trusted).
    let start = announced.map_or(0, |len| len.min(1024 * 1024) as usize);
    let mut body = Vec::with_capacity(start);
    loop {
        let next = match deadline {
            Some(at) => tokio::time::timeout_at(at, response.chunk())
                .await
                .map_err(|_| BodyFailure::Deadline)?,
            None => response.chunk().await,
        };
        match next.map_err(BodyFailure::Transport)? {
            Some(chunk) => {
                if body.len().saturating_add(chunk.len()) > max {
                    return Err(BodyFailure::TooLarge);
                }
                body.extend_from_slice(&chunk);
            }
            None => return Ok(Bytes::from(body)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_read_back_from_their_errors() {
        let cases = [
            (event_too_large("x", 16), HttpLimit::StreamEventBytes),
            (body_too_large("x", 64, None), HttpLimit::BodyBytes),
            (body_too_large("x", 64, Some(500)), HttpLimit::BodyBytes),
            (
                deadline_exceeded("x", Duration::from_secs(3), true),
                HttpLimit::Deadline,
            ),
            (
                idle_timeout("x", Duration::from_millis(250)),
                HttpLimit::IdleTimeout,
            ),
            (
                cross_origin_redirect("x", "http://a:1", "http://b:2", Some(307)),
                HttpLimit::CrossOriginRedirect,
            ),
        ];
        for (error, limit) in cases {
            assert_eq!(HttpLimit::of(&error), Some(limit), "{error}");
        }
        assert_eq!(
            HttpLimit::of(&ProviderError::http("x", 400, "bad").with_code("invalid")),
            None
        );
        let shown = event_too_large("openai", 1024).to_string();
        assert!(
            shown.contains("1024 bytes") && shown.contains("with_max_event_bytes"),
            "{shown}"
        );
        let shown = deadline_exceeded("openai", Duration::from_millis(1500), true).to_string();
        assert!(
            shown.contains("1.5 s") && shown.contains("stream_deadline"),
            "{shown}"
        );
    }

    #[test]
    fn origins_are_scheme_host_and_port() {
        let url = |s: &str| Url::parse(s).unwrap();
        assert_eq!(
            origin(&url("https://api.example.com/v1?key=secret")),
            "https://api.example.com:443"
        );
        assert_eq!(
            origin(&url("http://127.0.0.1:8080/x")),
            "http://127.0.0.1:8080"
        );
        assert!(same_origin(
            &url("https://h/a?x=1"),
            &url("https://h:443/b")
        ));
        assert!(!same_origin(&url("https://h/a"), &url("http://h/a")));
        assert!(!same_origin(&url("http://h:1/a"), &url("http://h:2/a")));
        assert!(!same_origin(&url("http://h/a"), &url("http://g/a")));
    }
}
