//! Reading a failed request into a [`ProviderError`]: the status, the request id, whether to
//! retry and how long to wait, and the provider's own error type, code and message, which an
//! [`ErrorFormat`] reads from the body (each protocol has its own, next to its provider; the
//! [`generic`](ErrorDetails::generic) reader knows the shapes most APIs share).

use std::time::Duration;

use llm_tools_core::{ProviderError, ProviderErrorKind};
use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderName};
use serde_json::Value;

use super::retry::{is_retryable_status, retry_after};

/// An error answer's body as JSON: `None` when it is not JSON, or when it holds more values than
/// [`MAX_JSON_VALUES`](llm_tools_core::json_values::MAX_JSON_VALUES) (left unparsed: its
/// details are then unknown).
pub(crate) fn json_of(body: &[u8]) -> Option<Value> {
    if llm_tools_core::json_values::too_many_values(body).is_some() {
        return None;
    }
    serde_json::from_slice(body).ok()
}

/// Reads a provider's error answer (status, headers, body) into its [`ErrorDetails`]; a reader
/// that finds nothing of its format returns empty details, and the generic reader is tried.
pub type ErrorFormat = fn(status: u16, headers: &HeaderMap, body: &[u8]) -> ErrorDetails;

/// The parts of a provider's error answer.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct ErrorDetails {
    /// The message.
    pub message: Option<String>,
    /// The error type (`invalid_request_error`, `RESOURCE_EXHAUSTED`, `ThrottlingException`, …).
    pub error_type: Option<String>,
    /// The error code.
    pub code: Option<String>,
    /// How long the body asks the client to wait (Google's `RetryInfo.retryDelay`); a
    /// `retry-after` header wins over it.
    pub retry_after: Option<Duration>,
    /// What kind of failure the protocol recognised in the answer:
    /// [`ProviderErrorKind::ContextLengthExceeded`] for a context-window refusal; `None` (an
    /// [`Http`](ProviderErrorKind::Http) error) otherwise.
    pub kind: Option<ProviderErrorKind>,
}

impl ErrorDetails {
    /// Details with this message.
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }

    /// Details with this error type.
    pub fn with_error_type(mut self, error_type: impl Into<String>) -> Self {
        self.error_type = Some(error_type.into());
        self
    }

    /// Details with this code.
    pub fn with_code(mut self, code: impl Into<String>) -> Self {
        self.code = Some(code.into());
        self
    }

    /// Details with this requested delay.
    pub fn with_retry_after(mut self, delay: Option<Duration>) -> Self {
        self.retry_after = delay;
        self
    }

    /// Details of this kind of failure ([`ProviderErrorKind::ContextLengthExceeded`] for a
    /// context-window refusal).
    pub fn with_kind(mut self, kind: ProviderErrorKind) -> Self {
        self.kind = Some(kind);
        self
    }

    /// The details marked [`ProviderErrorKind::ContextLengthExceeded`] when `test` (a
    /// protocol's reading of its context-window refusals) recognises them in an answer of
    /// `status`.
    #[cfg(feature = "_protocol")]
    pub(crate) fn classified(self, status: u16, test: ContextLengthTest) -> Self {
        let refused = test(
            Some(status),
            self.error_type.as_deref(),
            self.code.as_deref(),
            self.message.as_deref().unwrap_or_default(),
        );
        if refused {
            self.with_kind(ProviderErrorKind::ContextLengthExceeded)
        } else {
            self
        }
    }

    /// Whether nothing was read.
    pub fn is_empty(&self) -> bool {
        self.message.is_none() && self.error_type.is_none() && self.code.is_none()
    }

    /// The [`ErrorFormat`] of APIs that share the common shapes: [`from_body`](Self::from_body).
    pub fn generic(_status: u16, _headers: &HeaderMap, body: &[u8]) -> Self {
        Self::from_body(body)
    }

    /// Reads the common error shapes: `{"error":{"message","type","code"}}` (OpenAI, Anthropic,
    /// Google's, also wrapped in an array), `{"error":"…"}` (Ollama), and a top-level
    /// `{"message","type","code"}` (Mistral); anything else gives empty details.
    pub fn from_body(body: &[u8]) -> Self {
        match json_of(body) {
            Some(v) => Self::from_value(&v),
            None => Self::default(),
        }
    }

    /// [`from_body`](Self::from_body) on an already parsed value (also used for errors inside
    /// streams).
    pub fn from_value(v: &Value) -> Self {
        // Google's APIs, and the endpoints in front of them, wrap the error in an array.
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
            Some(Value::String(message)) => Self::default().with_message(message.clone()),
            Some(inner @ Value::Object(_)) => Self {
                message: text(inner.get("message")),
                error_type: text(inner.get("type")).or_else(|| text(inner.get("status"))),
                code: text(inner.get("code")),
                retry_after: None,
                kind: None,
            },
            _ => Self {
                message: text(v.get("message")),
                error_type: text(v.get("type")),
                code: text(v.get("code")),
                retry_after: None,
                kind: None,
            },
        }
    }
}

/// Reads an error answer into a [`ProviderError`]: the details `format` reads (the generic
/// reader when it reads nothing; the raw text, or the status's reason, when neither does), the
/// request id, whether to retry (the status, or the `x-should-retry` header; Anthropic's 529
/// "overloaded" is a 5xx and retried like a rate limit) and how long to wait (`retry-after-ms`,
/// `retry-after`, or the delay the body asks for).
pub fn error_from_response(
    name: &str,
    status: u16,
    headers: &HeaderMap,
    body: &[u8],
    format: ErrorFormat,
) -> ProviderError {
    let mut details = format(status, headers, body);
    if details.is_empty() {
        let (retry_after, kind) = (details.retry_after, details.kind);
        details = ErrorDetails::from_body(body).with_retry_after(retry_after);
        details.kind = kind;
    }
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
        .with_retry_after(retry_after(headers).or(details.retry_after));
    if let Some(t) = details.error_type {
        error = error.with_error_type(t);
    }
    if let Some(c) = details.code {
        error = error.with_code(c);
    }
    if let Some(id) = request_id(headers) {
        error = error.with_request_id(id);
    }
    if let Some(kind) = details.kind {
        error = error.with_kind(kind);
    }
    error
}

#[cfg(feature = "_protocol")]
/// A protocol's reading of its context-window refusals: whether an error with this status (none
/// for an error inside a stream), error type, code and message says the conversation is longer
/// than the model's context window.
pub(crate) type ContextLengthTest =
    fn(status: Option<u16>, error_type: Option<&str>, code: Option<&str>, message: &str) -> bool;

#[cfg(any(
    feature = "openai",
    feature = "anthropic",
    feature = "gemini",
    feature = "bedrock",
    feature = "ollama"
))]
/// `error` marked [`ProviderErrorKind::ContextLengthExceeded`] when `test` recognises it (for
/// errors reported inside a stream or an answer); everything else it says is kept.
pub(crate) fn classified(error: ProviderError, test: ContextLengthTest) -> ProviderError {
    if test(
        error.status(),
        error.error_type(),
        error.code(),
        error.message(),
    ) {
        error.with_kind(ProviderErrorKind::ContextLengthExceeded)
    } else {
        error
    }
}

#[cfg(feature = "_protocol")]
/// Whether a status can be a refusal of the request as sent (400, 413, 422, or none inside a
/// stream): a rate limit (429, whose messages also count tokens) or a server error never is.
pub(crate) fn is_refusal(status: Option<u16>) -> bool {
    matches!(status, None | Some(400 | 413 | 422))
}

#[cfg(feature = "_protocol")]
/// Whether `message` contains one of `phrases` (lower case), whatever its case.
pub(crate) fn mentions(message: &str, phrases: &[&str]) -> bool {
    let message = message.to_lowercase();
    phrases.iter().any(|p| message.contains(p))
}

/// The headers a provider may put its request id in, first match wins. Names made once, so a
/// lookup hashes the name as it stands instead of parsing it from text on every answer.
const REQUEST_ID_HEADERS: [HeaderName; 5] = [
    HeaderName::from_static("x-request-id"),
    HeaderName::from_static("request-id"),
    HeaderName::from_static("apim-request-id"),
    HeaderName::from_static("x-amzn-requestid"),
    HeaderName::from_static("x-goog-request-id"),
];

/// The request id a provider put in the headers.
pub fn request_id(headers: &HeaderMap) -> Option<String> {
    REQUEST_ID_HEADERS
        .iter()
        .find_map(|h| headers.get(h).and_then(|v| v.to_str().ok()))
        .map(str::to_owned)
}

/// An error's text with the texts of its sources, each once.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
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

/// A transport error, with the request's URL redacted (the HTTP client's own text carries the
/// raw URL, query-string keys included, so it is dropped from the error first).
pub(crate) fn transport_error(
    name: &str,
    e: reqwest::Error,
    redacted_url: Option<&str>,
) -> ProviderError {
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

/// The most bytes of a JSON error's message a log line shows.
#[cfg(feature = "_protocol")]
const MAX_SHOWN_JSON_ERROR: usize = 200;

/// A JSON error of the provider's text as a log line may show it. serde_json quotes the text
/// it could not read (`invalid type: string "…", expected u32`), and that text is the server's:
/// it may repeat the request, keys included, and be megabytes long. What stood between the
/// first and the last quote is left out, and the rest cut to 200 bytes; the line and column
/// stay.
#[cfg(feature = "_protocol")]
pub(crate) fn shown_json_error(error: &serde_json::Error) -> String {
    let message = error.to_string();
    let shown = match (message.find('"'), message.rfind('"')) {
        (Some(first), Some(last)) if first < last => {
            format!("{}\"…\"{}", &message[..first], &message[last + 1..])
        }
        _ => message,
    };
    truncate(&shown, MAX_SHOWN_JSON_ERROR)
}

/// `s` cut to at most `max` bytes (on a character boundary), with an ellipsis when cut.
pub(crate) fn truncate(s: &str, max: usize) -> String {
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

    /// A log line shows a JSON error without the provider's text it quotes, however long, and
    /// keeps where it was.
    #[cfg(feature = "_protocol")]
    #[test]
    fn a_shown_json_error_leaves_out_the_text_it_quotes() {
        let secret = "sk-live-0123456789";
        let long = format!("{secret}{}", "x".repeat(1 << 20));
        let data = format!(r#"{{"index":"{long}"}}"#);
        #[derive(Debug, serde::Deserialize)]
        struct Event {
            #[allow(dead_code)]
            index: u32,
        }
        let Err(error) = serde_json::from_str::<Event>(&data) else {
            panic!("a string is no u32");
        };
        assert!(error.to_string().contains(secret));
        let shown = shown_json_error(&error);
        assert!(!shown.contains(secret), "{shown}");
        assert!(shown.len() <= MAX_SHOWN_JSON_ERROR + "…".len(), "{shown}");
        assert!(
            shown.starts_with("invalid type: string \"…\", expected u32"),
            "{shown}"
        );
        assert!(shown.contains("line 1 column"), "{shown}");
        let plain = serde_json::from_str::<Event>("{")
            .err()
            .map(|e| shown_json_error(&e));
        assert_eq!(
            plain.as_deref(),
            Some("EOF while parsing an object at line 1 column 1")
        );
    }

    use crate::http::test_headers as headers;

    fn read(status: u16, headers: &HeaderMap, body: &[u8]) -> ProviderError {
        error_from_response("x", status, headers, body, ErrorDetails::generic)
    }

    /// An error body past the value limit is not parsed: its details are unknown, and the
    /// error keeps its status.
    #[test]
    fn an_error_body_past_the_value_limit_is_left_unparsed() {
        let dense = format!(
            r#"{{"error":{{"message":"m","pad":[{}0]}}}}"#,
            "0,".repeat(llm_tools_core::json_values::MAX_JSON_VALUES)
        );
        assert!(json_of(dense.as_bytes()).is_none());
        assert!(ErrorDetails::from_body(dense.as_bytes()).is_empty());
        assert_eq!(
            read(500, &headers(&[]), dense.as_bytes()).status(),
            Some(500)
        );
        assert!(json_of(br#"{"error":{"message":"m"}}"#).is_some());
    }

    #[test]
    fn error_bodies_of_the_common_shapes_are_read() {
        let e = read(
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

        let html = read(502, &HeaderMap::new(), b"<html>Bad gateway</html>");
        assert_eq!(html.message(), "<html>Bad gateway</html>");
        assert!(html.is_retryable());

        let empty = read(503, &HeaderMap::new(), b"");
        assert_eq!(empty.message(), "Service Unavailable");
    }

    #[test]
    fn anthropic_overload_is_read_and_retried() {
        let overloaded = read(
            529,
            &headers(&[("request-id", "req_011")]),
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011"}"#,
        );
        assert!(overloaded.is_retryable());
        assert_eq!(overloaded.error_type(), Some("overloaded_error"));
        assert_eq!(overloaded.message(), "Overloaded");
        assert_eq!(overloaded.request_id(), Some("req_011"));
    }

    #[test]
    fn a_format_reads_first_and_the_generic_reader_fills_in() {
        fn amazon(_: u16, headers: &HeaderMap, _: &[u8]) -> ErrorDetails {
            match headers
                .get("x-amzn-errortype")
                .and_then(|v| v.to_str().ok())
            {
                Some(t) => ErrorDetails::default().with_error_type(t),
                None => ErrorDetails::default().with_retry_after(Some(Duration::from_secs(3))),
            }
        }
        let typed = error_from_response(
            "x",
            400,
            &headers(&[("x-amzn-errortype", "ValidationException")]),
            br#"{"message":"bad"}"#,
            amazon,
        );
        assert_eq!(typed.error_type(), Some("ValidationException"));
        // The format read no message: the raw text stands in.
        assert_eq!(typed.message(), r#"{"message":"bad"}"#);
        let generic = error_from_response(
            "x",
            429,
            &HeaderMap::new(),
            br#"{"message":"slow"}"#,
            amazon,
        );
        assert_eq!(generic.message(), "slow");
        assert_eq!(generic.retry_after(), Some(Duration::from_secs(3)));
        let header_wins =
            error_from_response("x", 429, &headers(&[("retry-after", "2")]), b"{}", amazon);
        assert_eq!(header_wins.retry_after(), Some(Duration::from_secs(2)));
    }

    #[test]
    fn should_retry_header_overrides_the_status() {
        let e = read(500, &headers(&[("x-should-retry", "false")]), b"{}");
        assert!(!e.is_retryable());
        let e = read(400, &headers(&[("x-should-retry", "true")]), b"{}");
        assert!(e.is_retryable());
    }

    #[test]
    fn long_texts_are_cut_on_a_character_boundary() {
        assert_eq!(truncate("héllo", 2), "h…");
        assert_eq!(truncate("hé", 9), "hé");
    }
}
