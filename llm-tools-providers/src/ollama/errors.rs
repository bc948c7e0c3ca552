//! Ollama's error answers: `{"error": "…"}`, where the text is sometimes the JSON error of the
//! llama.cpp runner underneath (`{"error":{"code":400,"message":…,"type":…}}`), read here into
//! its message, type and code.
//!
//! Ollama shortens a conversation longer than the context window (`num_ctx`) by default and
//! answers anyway; with `"truncate": false` in the request (`chat.with_params(json!({"truncate":
//! false}))`) it refuses it with a 400: "request (351 tokens) exceeds the available context size
//! (256 tokens), try increasing it" of type `exceed_context_size_error` (ollama/ollama issue
//! #16800). That, "the input length exceeds the context length", "the prompt is longer than the
//! context length" (with `"shift": false`) and ollama.com's "prompt too long; exceeded max context
//! length" are [`ContextLengthExceeded`](llm_tools_core::ProviderErrorKind::ContextLengthExceeded).

use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::http::{ErrorDetails, is_refusal, json_of, mentions};

/// Ollama's [`ErrorFormat`](crate::http::ErrorFormat).
pub(crate) fn details(status: u16, _headers: &HeaderMap, body: &[u8]) -> ErrorDetails {
    let Some(v) = json_of(body) else {
        return ErrorDetails::default();
    };
    let details = match v.get("error").and_then(Value::as_str).map(str::trim) {
        Some(text) if text.starts_with('{') => match json_of(text.as_bytes()) {
            Some(inner) if !ErrorDetails::from_value(&inner).is_empty() => {
                ErrorDetails::from_value(&inner)
            }
            _ => ErrorDetails::from_value(&v),
        },
        _ => ErrorDetails::from_value(&v),
    };
    details.classified(status, is_context_length)
}

/// Whether an Ollama error refuses a conversation longer than the model's context window.
pub(crate) fn is_context_length(
    status: Option<u16>,
    error_type: Option<&str>,
    _code: Option<&str>,
    message: &str,
) -> bool {
    is_refusal(status)
        && (error_type == Some("exceed_context_size_error")
            || mentions(
                message,
                &[
                    "exceeds the available context size",
                    "exceeds the context length",
                    "longer than the context length",
                    "exceeded max context length",
                ],
            ))
}

#[cfg(test)]
mod tests {
    use llm_tools_core::ProviderErrorKind;

    use super::*;
    use crate::http::error_from_response;

    #[test]
    fn the_runners_error_inside_the_text_is_read() {
        let e = error_from_response(
            "ollama",
            400,
            &HeaderMap::new(),
            br#"{"error":"{\"error\":{\"code\":400,\"message\":\"request (351 tokens) exceeds the available context size (256 tokens), try increasing it\",\"type\":\"exceed_context_size_error\",\"n_prompt_tokens\":351,\"n_ctx\":256}}"}"#,
            details,
        );
        assert_eq!(e.kind(), ProviderErrorKind::ContextLengthExceeded);
        assert_eq!(e.error_type(), Some("exceed_context_size_error"));
        assert_eq!(e.code(), Some("400"));
        assert_eq!(
            e.message(),
            "request (351 tokens) exceeds the available context size (256 tokens), try increasing it"
        );
        let plain = error_from_response(
            "ollama",
            404,
            &HeaderMap::new(),
            br#"{"error":"model 'qwen9' not found"}"#,
            details,
        );
        assert_eq!(plain.kind(), ProviderErrorKind::Http);
        assert_eq!(plain.message(), "model 'qwen9' not found");
        let shift = error_from_response(
            "ollama",
            400,
            &HeaderMap::new(),
            br#"{"error":"the prompt is longer than the context length currently available to the model"}"#,
            details,
        );
        assert_eq!(shift.kind(), ProviderErrorKind::ContextLengthExceeded);
    }
}
