//! Anthropic's error answers, `{"type":"error","error":{"type","message"},"request_id"}` (the
//! common shape), with its context-window refusals recognised: an `invalid_request_error`
//! saying "prompt is too long: 3333404 tokens > 200000 maximum" (recorded), or "input length
//! and `max_tokens` exceed context limit: … decrease input length or `max_tokens`" (the input
//! fits but leaves no room for the answer) is
//! [`ContextLengthExceeded`](llm_tools_core::ProviderErrorKind::ContextLengthExceeded). A 413
//! `request_too_large` (a body over the size limit, in bytes) is not.

use reqwest::header::HeaderMap;

use crate::http::{ErrorDetails, is_refusal, mentions};

/// Anthropic's [`ErrorFormat`](crate::http::ErrorFormat).
pub(crate) fn details(status: u16, _headers: &HeaderMap, body: &[u8]) -> ErrorDetails {
    ErrorDetails::from_body(body).classified(status, is_context_length)
}

/// Whether an Anthropic error refuses a conversation longer than the model's context window.
pub(crate) fn is_context_length(
    status: Option<u16>,
    error_type: Option<&str>,
    _code: Option<&str>,
    message: &str,
) -> bool {
    is_refusal(status)
        && matches!(error_type, None | Some("invalid_request_error"))
        && mentions(message, &["prompt is too long", "exceed context limit"])
}

#[cfg(test)]
mod tests {
    use llm_tools_core::ProviderErrorKind;

    use super::*;
    use crate::http::error_from_response;

    #[test]
    fn context_window_refusals_are_recognised() {
        let e = error_from_response(
            "anthropic",
            400,
            &HeaderMap::new(),
            br#"{"type":"error","error":{"type":"invalid_request_error","message":"input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000, decrease input length or `max_tokens` and try again"},"request_id":"req_011"}"#,
            details,
        );
        assert_eq!(e.kind(), ProviderErrorKind::ContextLengthExceeded);
        assert_eq!(e.status(), Some(400));
        assert_eq!(e.error_type(), Some("invalid_request_error"));
        let other = error_from_response(
            "anthropic",
            400,
            &HeaderMap::new(),
            br#"{"type":"error","error":{"type":"invalid_request_error","message":"tools.0.name: String should match pattern"}}"#,
            details,
        );
        assert_eq!(other.kind(), ProviderErrorKind::Http);
        let too_large = error_from_response(
            "anthropic",
            413,
            &HeaderMap::new(),
            br#"{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}"#,
            details,
        );
        assert_eq!(too_large.kind(), ProviderErrorKind::Http);
    }
}
