//! Cohere's error answers: `{"id", "message"}`, with `error_type` for some
//! (`TOO_MANY_TOKENS`). A conversation longer than the model's context window is refused with
//! `TOO_MANY_TOKENS` and "too many tokens: size limit exceeded by 25836 tokens" (recorded):
//! [`ContextLengthExceeded`](llm_tools_core::ProviderErrorKind::ContextLengthExceeded).

use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::http::{ErrorDetails, is_refusal, mentions};

/// Cohere's [`ErrorFormat`](crate::http::ErrorFormat).
pub(crate) fn details(status: u16, _headers: &HeaderMap, body: &[u8]) -> ErrorDetails {
    let Some(v) = crate::http::json_of(body) else {
        return ErrorDetails::default();
    };
    let mut details = ErrorDetails::from_value(&v);
    if let Some(t) = v.get("error_type").and_then(Value::as_str) {
        details = details.with_error_type(t);
    }
    details.classified(status, is_context_length)
}

/// Whether a Cohere error refuses a conversation longer than the model's context window.
pub(crate) fn is_context_length(
    status: Option<u16>,
    error_type: Option<&str>,
    _code: Option<&str>,
    message: &str,
) -> bool {
    is_refusal(status)
        && (error_type == Some("TOO_MANY_TOKENS") || mentions(message, &["too many tokens"]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::error_from_response;

    #[test]
    fn the_error_type_and_message_are_read() {
        let e = error_from_response(
            "cohere",
            400,
            &HeaderMap::new(),
            br#"{"error_type":"TOO_MANY_TOKENS","id":"c1","message":"too many tokens"}"#,
            details,
        );
        assert_eq!(e.error_type(), Some("TOO_MANY_TOKENS"));
        assert_eq!(e.message(), "too many tokens");
        assert!(!e.is_retryable());
        assert_eq!(
            e.kind(),
            llm_tools_core::ProviderErrorKind::ContextLengthExceeded
        );
    }
}
