//! Error answers of OpenAI and the endpoints that speak its protocols: OpenAI's
//! `{"error":{"message","type","param","code"}}`, Mistral's top-level
//! `{"object":"error","message","type","code"}`, Ollama's `{"error":"…"}`, Google's RPC status
//! from Gemini's compatible endpoint, and the `{"detail": …}` of servers built on FastAPI
//! (vLLM, LiteLLM) for validation errors.

use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::http::{ErrorDetails, truncate};

/// The [`ErrorFormat`](crate::http::ErrorFormat) of the OpenAI protocols.
pub(crate) fn details(_status: u16, _headers: &HeaderMap, body: &[u8]) -> ErrorDetails {
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        return ErrorDetails::default();
    };
    if v.get("error").is_none()
        && let Some(detail) = v.get("detail")
    {
        let message = match detail {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        return ErrorDetails::default()
            .with_message(truncate(&message, 500))
            .with_error_type("validation_error");
    }
    ErrorDetails::from_value(&v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_compatible_shape_is_read() {
        let none = HeaderMap::new();
        let openai = details(
            400,
            &none,
            br#"{"error":{"message":"Invalid 'tools[0].name'","type":"invalid_request_error","param":"tools[0].name","code":"invalid_value"}}"#,
        );
        assert_eq!(openai.error_type.as_deref(), Some("invalid_request_error"));
        assert_eq!(openai.code.as_deref(), Some("invalid_value"));

        let vllm = details(
            422,
            &none,
            br#"{"detail":[{"loc":["body","tools"],"msg":"field required","type":"missing"}]}"#,
        );
        assert_eq!(vllm.error_type.as_deref(), Some("validation_error"));
        assert!(vllm.message.unwrap().contains("field required"));

        let mistral = details(
            400,
            &none,
            br#"{"object":"error","message":"bad id","type":"invalid_function_call","code":"3280"}"#,
        );
        assert_eq!(mistral.code.as_deref(), Some("3280"));

        assert!(details(500, &none, b"<html>").is_empty());
    }
}
