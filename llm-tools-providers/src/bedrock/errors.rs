//! Bedrock's error answers: the error type in the `x-amzn-ErrorType` header
//! (`ValidationException:http://internal.amazon.com/…`, the part before the colon) or the
//! body's `__type`, the message in `message` (or `Message`), and the exceptions a stream sends
//! as event-stream `exception` messages.
//!
//! A conversation longer than the model's context window is refused with a
//! `ValidationException` whose message depends on the model behind Converse: "Input Tokens
//! Exceeded: Number of input tokens exceeds maximum length" (Nova, recorded), "Input is too long
//! for requested model" (Claude), "prompt is too long" or "input length and `max_tokens` exceed
//! context limit" (Claude's own words passed through), "too many input tokens", "maximum context
//! length" (Llama, Mistral): each is
//! [`ContextLengthExceeded`](llm_tools_core::ProviderErrorKind::ContextLengthExceeded), whole or
//! in a stream.

use llm_tools_core::ProviderError;
use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::http::{ErrorDetails, classified, is_refusal, mentions};
use crate::wire;

/// The short name of an AWS error type (`ns#ThrottlingException` and
/// `ThrottlingException:http://…` are `ThrottlingException`).
fn short(kind: &str) -> &str {
    let kind = kind.rsplit('#').next().unwrap_or(kind);
    kind.split(':').next().unwrap_or(kind)
}

/// Bedrock's [`ErrorFormat`](crate::http::ErrorFormat).
pub(crate) fn details(status: u16, headers: &HeaderMap, body: &[u8]) -> ErrorDetails {
    let v: Value = crate::http::json_of(body).unwrap_or(Value::Null);
    let kind = headers
        .get("x-amzn-errortype")
        .and_then(|h| h.to_str().ok())
        .or_else(|| v.get("__type").and_then(Value::as_str))
        .map(short);
    let message = v
        .get("message")
        .or_else(|| v.get("Message"))
        .and_then(Value::as_str);
    let mut details = ErrorDetails::default();
    if let Some(kind) = kind {
        details = details.with_error_type(kind);
    }
    if let Some(message) = message {
        details = details.with_message(message);
    }
    details.classified(status, is_context_length)
}

/// Whether a Bedrock error refuses a conversation longer than the model's context window.
pub(crate) fn is_context_length(
    status: Option<u16>,
    error_type: Option<&str>,
    _code: Option<&str>,
    message: &str,
) -> bool {
    is_refusal(status)
        && error_type.is_none_or(|t| t.eq_ignore_ascii_case("ValidationException"))
        && mentions(
            message,
            &[
                "input tokens exceeded",
                "input is too long",
                "too many input tokens",
                "prompt is too long",
                "exceed context limit",
                "maximum context length",
            ],
        )
}

/// An exception a stream reported: a `Stream` error with its type, retryable where AWS says a
/// retry may succeed (throttling, a service or model that is not ready, internal errors).
pub(crate) fn stream_exception(name: &str, kind: &str, payload: &str) -> ProviderError {
    let message = crate::http::json_of(payload.as_bytes())
        .and_then(|v| {
            v.get("message")
                .or_else(|| v.get("Message"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_else(|| payload.to_owned());
    let kind = short(kind);
    let retryable = matches!(
        kind.to_ascii_lowercase().as_str(),
        "throttlingexception"
            | "serviceunavailableexception"
            | "internalserverexception"
            | "modelstreamerrorexception"
            | "modelnotreadyexception"
    );
    let message = if message.is_empty() {
        wire::REPORTED.to_owned()
    } else {
        message
    };
    let error = wire::stream_error(name, message)
        .with_error_type(kind)
        .with_retryable(retryable);
    classified(error, is_context_length)
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;
    use crate::http::error_from_response;

    #[test]
    fn the_type_comes_from_the_header_or_the_body() {
        let mut headers = HeaderMap::new();
        headers.insert(
            "x-amzn-errortype",
            HeaderValue::from_static(
                "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/",
            ),
        );
        let e = error_from_response(
            "bedrock",
            429,
            &headers,
            br#"{"message":"Too many requests, please wait before trying again."}"#,
            details,
        );
        assert_eq!(e.error_type(), Some("ThrottlingException"));
        assert_eq!(
            e.message(),
            "Too many requests, please wait before trying again."
        );
        assert!(e.is_retryable());

        let e = error_from_response(
            "bedrock",
            403,
            &HeaderMap::new(),
            br#"{"__type":"com.amazon.coral.service#AccessDeniedException","Message":"no access"}"#,
            details,
        );
        assert_eq!(e.error_type(), Some("AccessDeniedException"));
        assert_eq!(e.message(), "no access");
        assert!(!e.is_retryable());
    }

    #[test]
    fn stream_exceptions_say_whether_to_retry() {
        let e = stream_exception(
            "bedrock",
            "throttlingException",
            r#"{"message":"slow down"}"#,
        );
        assert_eq!(e.message(), "slow down");
        assert_eq!(e.error_type(), Some("throttlingException"));
        assert!(e.is_retryable());
        let e = stream_exception("bedrock", "validationException", "not json");
        assert_eq!(e.message(), "not json");
        assert!(!e.is_retryable());
        assert_eq!(e.kind(), llm_tools_core::ProviderErrorKind::Stream);
    }

    #[test]
    fn context_window_refusals_are_recognised_whole_and_streamed() {
        use llm_tools_core::ProviderErrorKind::ContextLengthExceeded;
        let mut headers = HeaderMap::new();
        headers.insert(
            "x-amzn-errortype",
            HeaderValue::from_static(
                "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/",
            ),
        );
        let e = error_from_response(
            "bedrock",
            400,
            &headers,
            br#"{"message":"Input is too long for requested model."}"#,
            details,
        );
        assert_eq!(e.kind(), ContextLengthExceeded);
        assert_eq!(e.error_type(), Some("ValidationException"));
        let streamed = stream_exception(
            "bedrock",
            "validationException",
            r#"{"message":"The model returned the following errors: Input is too long for requested model."}"#,
        );
        assert_eq!(streamed.kind(), ContextLengthExceeded);
        let other = error_from_response(
            "bedrock",
            400,
            &headers,
            br#"{"message":"The maximum tokens you requested exceeds the model limit of 32768"}"#,
            details,
        );
        assert_eq!(other.kind(), llm_tools_core::ProviderErrorKind::Http);
    }
}
