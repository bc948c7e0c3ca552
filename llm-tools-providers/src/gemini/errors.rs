//! Gemini's error answers: Google's RPC status (`{"error":{"code","message","status",
//! "details"}}`, sometimes inside an array), with the delay a `RESOURCE_EXHAUSTED` asks for in
//! its `google.rpc.RetryInfo` detail. A conversation longer than the model's context window is
//! refused with `INVALID_ARGUMENT` and "The input token count (1250074) exceeds the maximum number
//! of tokens allowed (1048576)." (recorded on Vertex AI; the Developer API says the same):
//! [`ContextLengthExceeded`](llm_tools_core::ProviderErrorKind::ContextLengthExceeded). A
//! `RESOURCE_EXHAUSTED` quota on input tokens per minute is a rate limit, retried, not that.

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::http::{ErrorDetails, is_refusal, mentions};

/// Gemini's [`ErrorFormat`](crate::http::ErrorFormat): the status as the error type, and the
/// requested delay.
pub(crate) fn details(status: u16, _headers: &HeaderMap, body: &[u8]) -> ErrorDetails {
    ErrorDetails::from_body(body)
        .with_retry_after(retry_delay_in_body(body))
        .classified(status, is_context_length)
}

/// Whether a Gemini error refuses a conversation longer than the model's context window.
pub(crate) fn is_context_length(
    status: Option<u16>,
    error_type: Option<&str>,
    _code: Option<&str>,
    message: &str,
) -> bool {
    is_refusal(status)
        && matches!(error_type, None | Some("INVALID_ARGUMENT"))
        && mentions(message, &["input token count"])
        && mentions(message, &["exceeds the maximum"])
}

/// How long a Google RPC error body asks the client to wait: the `retryDelay` of its
/// `google.rpc.RetryInfo` detail (`"7s"`, `"0.250s"`), as Gemini sends with `RESOURCE_EXHAUSTED`.
/// A delay too large for a [`Duration`] counts as none.
///
/// ```
/// use std::time::Duration;
/// use llm_tools_providers::gemini::retry_delay_in_body;
///
/// let body = br#"{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","message":"Quota exceeded",
///   "details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"1.5s"}]}}"#;
/// assert_eq!(retry_delay_in_body(body), Some(Duration::from_millis(1500)));
/// assert_eq!(retry_delay_in_body(b"{}"), None);
/// ```
pub fn retry_delay_in_body(body: &[u8]) -> Option<Duration> {
    let v: Value = crate::http::json_of(body)?;
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
        if !is_retry_info {
            return None;
        }
        crate::http::seconds(secs)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::error_from_response;

    #[test]
    fn quota_errors_are_read_with_their_delays() {
        let quota = error_from_response(
            "gemini",
            429,
            &HeaderMap::new(),
            br#"{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED","details":[
                {"@type":"type.googleapis.com/google.rpc.Help","links":[]},
                {"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"7s"}]}}"#,
            details,
        );
        assert!(quota.is_retryable());
        assert_eq!(quota.error_type(), Some("RESOURCE_EXHAUSTED"));
        assert_eq!(quota.code(), Some("429"));
        assert_eq!(quota.retry_after(), Some(Duration::from_secs(7)));

        let wrapped = ErrorDetails::from_body(
            br#"[{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED"}}]"#,
        );
        assert_eq!(wrapped.error_type.as_deref(), Some("RESOURCE_EXHAUSTED"));
    }

    #[test]
    fn a_context_window_refusal_is_recognised_and_a_token_quota_is_not() {
        use llm_tools_core::ProviderErrorKind;
        let refused = error_from_response(
            "gemini",
            400,
            &HeaderMap::new(),
            br#"{"error":{"code":400,"message":"The input token count exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}"#,
            details,
        );
        assert_eq!(refused.kind(), ProviderErrorKind::ContextLengthExceeded);
        assert_eq!(refused.error_type(), Some("INVALID_ARGUMENT"));
        assert!(!refused.is_retryable());
        let quota = error_from_response(
            "gemini",
            429,
            &HeaderMap::new(),
            br#"{"error":{"code":429,"message":"Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_paid_tier_input_token_count, limit: 1000000","status":"RESOURCE_EXHAUSTED"}}"#,
            details,
        );
        assert_eq!(quota.kind(), ProviderErrorKind::Http);
        assert!(quota.is_retryable());
    }

    #[test]
    fn a_header_wins_over_the_body() {
        let mut headers = HeaderMap::new();
        headers.insert(
            "retry-after",
            reqwest::header::HeaderValue::from_static("2"),
        );
        let both = error_from_response(
            "gemini",
            429,
            &headers,
            br#"{"error":{"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"7s"}]}}"#,
            details,
        );
        assert_eq!(both.retry_after(), Some(Duration::from_secs(2)));
    }

    #[test]
    fn delays_too_large_for_a_duration_are_ignored() {
        let body = br#"{"error":{"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"1e300s"}]}}"#;
        assert_eq!(retry_delay_in_body(body), None);
        let negative = br#"{"error":{"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"-3s"}]}}"#;
        assert_eq!(retry_delay_in_body(negative), None);
    }
}
