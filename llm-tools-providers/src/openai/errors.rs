//! Error answers of OpenAI and the endpoints that speak its protocols: OpenAI's
//! `{"error":{"message","type","param","code"}}`, Mistral's top-level
//! `{"object":"error","message","type","code"}`, Ollama's `{"error":"…"}`, Google's RPC status
//! from Gemini's compatible endpoint, and the `{"detail": …}` of servers built on FastAPI
//! (vLLM, LiteLLM) for validation errors.
//!
//! A refusal of a conversation longer than the model's context window is
//! [`ContextLengthExceeded`](llm_tools_core::ProviderErrorKind::ContextLengthExceeded)
//! ([`is_context_length`]): OpenAI's code `context_length_exceeded` (Chat Completions and
//! Responses alike), and the messages of the compatible servers, which have no code of their
//! own for it (recorded: DeepSeek's and OpenRouter's "maximum context length is …", Perplexity's
//! `too_many_prompt_tokens`, Ollama's "prompt too long; exceeded max context length"; from their
//! documentation: llama.cpp's `exceed_context_size_error`, vLLM's and Mistral's "maximum context
//! length", Gemini's "input token count … exceeds the maximum").

use reqwest::header::HeaderMap;
use serde_json::Value;

use llm_tools_core::ProviderError;

use crate::http::{ErrorDetails, classified, is_refusal, mentions, truncate};
use crate::wire;

/// The [`ErrorFormat`](crate::http::ErrorFormat) of the OpenAI protocols.
pub(crate) fn details(status: u16, _headers: &HeaderMap, body: &[u8]) -> ErrorDetails {
    let Some(v) = crate::http::json_of(body) else {
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
            .with_error_type("validation_error")
            .classified(status, is_context_length);
    }
    ErrorDetails::from_value(&v).classified(status, is_context_length)
}

/// An error object reported inside an answer or a stream (`{"code","message",…}`), a
/// context-window refusal recognised as for error answers.
pub(crate) fn reported(name: &str, error: &Value, fallback: &str) -> ProviderError {
    let error = wire::reported_error(name, error, fallback);
    let retryable = is_transient(error.error_type(), error.code());
    classified(error.with_retryable(retryable), is_context_length)
}

/// Whether an error reported inside an answer or a stream (where no HTTP status says it) is
/// worth trying again: a server error, an overloaded or unavailable server, a timeout, a rate
/// limit (by `type` or `code`, as OpenAI and the compatible servers name them). A used-up quota
/// (`insufficient_quota`) and every refusal of the request are not.
pub(crate) fn is_transient(error_type: Option<&str>, code: Option<&str>) -> bool {
    let transient = |name: &str| {
        matches!(
            name,
            "server_error"
                | "internal_error"
                | "internal_server_error"
                | "api_error"
                | "overloaded"
                | "overloaded_error"
                | "service_unavailable"
                | "timeout"
                | "timeout_error"
                | "rate_limit_exceeded"
                | "rate_limit_error"
        )
    };
    error_type.is_some_and(transient) || code.is_some_and(transient)
}

/// Whether an error of an OpenAI protocol (or a compatible server) refuses a conversation
/// longer than the model's context window.
pub(crate) fn is_context_length(
    status: Option<u16>,
    error_type: Option<&str>,
    code: Option<&str>,
    message: &str,
) -> bool {
    if !is_refusal(status) {
        return false;
    }
    matches!(code, Some("context_length_exceeded"))
        || matches!(
            error_type,
            Some(
                "context_length_exceeded" | "too_many_prompt_tokens" | "exceed_context_size_error"
            )
        )
        || mentions(
            message,
            &[
                "maximum context length",
                "context window of this model",
                "exceeds the available context size",
                "exceeded max context length",
                "prompt is too long",
                "input token count",
            ],
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_transient_errors_are_worth_trying_again() {
        assert!(is_transient(Some("server_error"), None));
        assert!(is_transient(None, Some("rate_limit_exceeded")));
        assert!(is_transient(Some("invalid_request_error"), Some("timeout")));
        // A used-up quota, a bad request and an unknown type stay as they are.
        assert!(!is_transient(
            Some("insufficient_quota"),
            Some("insufficient_quota")
        ));
        assert!(!is_transient(
            Some("invalid_request_error"),
            Some("invalid_value")
        ));
        assert!(!is_transient(Some("something_new"), None));
        assert!(!is_transient(None, None));
    }

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

    #[test]
    fn context_window_refusals_are_recognised_and_nothing_else() {
        use llm_tools_core::ProviderErrorKind::ContextLengthExceeded;
        let none = HeaderMap::new();
        let refused = [
            // OpenAI Chat Completions (its API reference's code).
            r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 200046 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
            // Perplexity (recorded): its own type, the status as the code.
            r#"{"error":{"message":"The total length of all messages is too long.","type":"too_many_prompt_tokens","code":400}}"#,
            // OpenRouter (recorded): no type, the status as the code.
            r#"{"error":{"message":"This endpoint's maximum context length is 200000 tokens. However, you requested about 2500021 tokens (2500021 of text input).","code":400}}"#,
            // Ollama's /v1 (recorded on ollama.com).
            r#"{"error":{"message":"prompt too long; exceeded max context length by 1119046 tokens","type":"invalid_request_error","param":null,"code":null}}"#,
            // llama.cpp's server.
            r#"{"error":{"code":400,"message":"request (4476 tokens) exceeds the available context size (4096 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":4476,"n_ctx":4096}}"#,
            // Gemini's OpenAI-compatible endpoint.
            r#"[{"error":{"code":400,"message":"The input token count (1250074) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}]"#,
        ];
        for body in refused {
            assert_eq!(
                details(400, &none, body.as_bytes()).kind,
                Some(ContextLengthExceeded),
                "{body}"
            );
        }
        let other = [
            (
                400,
                r#"{"error":{"message":"Invalid 'tools[0].name'","type":"invalid_request_error","code":"invalid_value"}}"#,
            ),
            // A rate limit that counts tokens is a rate limit.
            (
                429,
                r#"{"error":{"message":"Request too large for gpt-4o on tokens per min (TPM): Limit 30000, Requested 50000. The input or output tokens must be reduced in order to run successfully.","type":"tokens","code":"rate_limit_exceeded"}}"#,
            ),
            (
                503,
                r#"{"error":{"message":"This model's maximum context length is being raised","code":"context_length_exceeded"}}"#,
            ),
        ];
        for (status, body) in other {
            assert_eq!(details(status, &none, body.as_bytes()).kind, None, "{body}");
        }
    }
}
