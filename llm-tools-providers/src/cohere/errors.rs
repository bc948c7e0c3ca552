//! Cohere's error answers: `{"id", "message"}`, with `error_type` for some
//! (`TOO_MANY_TOKENS`).

use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::http::ErrorDetails;

/// Cohere's [`ErrorFormat`](crate::http::ErrorFormat).
pub(crate) fn details(_status: u16, _headers: &HeaderMap, body: &[u8]) -> ErrorDetails {
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        return ErrorDetails::default();
    };
    let mut details = ErrorDetails::from_value(&v);
    if let Some(t) = v.get("error_type").and_then(Value::as_str) {
        details = details.with_error_type(t);
    }
    details
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
    }
}
