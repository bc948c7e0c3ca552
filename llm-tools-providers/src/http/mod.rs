//! The protocol-neutral HTTP layer every wire protocol sends through.
//!
//! - [`client`](HttpClient): settings, auth (bearer, header, query), timeouts, the POST with
//!   retries, recording, and the answer read whole or as a byte stream;
//! - [`limits`](HttpLimit): the bounds on what a server sends (a deadline per request, a
//!   silence limit per stream, the size of a body and of a stream event) and the redirect
//!   policy that keeps credentials in their origin ([`same_origin_redirects`]), each with its
//!   default and the error past it;
//! - [`retry`](RetryPolicy): exponential backoff with jitter, which failures are retried, and
//!   the delay a server asks for;
//! - [`errors`](error_from_response): a failed answer read into a `ProviderError`, each
//!   protocol's body format through an [`ErrorFormat`];
//! - [`signing`](RequestSigner): a hook that signs each try (AWS SigV4, OAuth tokens);
//! - [`redact`](Secret): the wrapper secrets live in, and the rule that keeps them out of URLs
//!   in errors, logs and recordings;
//! - `client_secrets`: every secret a client's errors must not show (key, query values, the
//!   bodies' tokens, the signer's), shared with the streams of its answers.
//!
//! A protocol builds one [`HttpClient`] from an [`HttpSettings`] and calls
//! [`HttpClient::post_json`] with a body it wrote; the answer is an [`HttpResponse`] whose body it
//! reads whole or as a byte stream (see [`crate::framing`]).

mod client;
pub(crate) mod client_secrets;
mod errors;
pub(crate) mod limits;
mod redact;
mod retry;
mod signing;

pub use client::{Auth, HttpClient, HttpResponse, HttpSettings};
pub use errors::{ErrorDetails, ErrorFormat, error_from_response, request_id};
#[cfg(feature = "gemini")]
pub(crate) use limits::{
    BodyFailure, cross_origin_redirect, one_shot_body, origin, read_capped, same_origin,
};
pub use limits::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_MAX_REDIRECTS, DEFAULT_MAX_STREAM_BYTES, DEFAULT_STREAM_DEADLINE, DEFAULT_TIMEOUT,
    HttpLimit, MAX_UNREADABLE_EVENTS, same_origin_redirects,
};
pub use redact::Secret;
#[cfg(feature = "replay")]
pub(crate) use redact::{is_secret_header, redact_json, redact_query_secrets};
pub use retry::{RetryInfo, RetryPolicy, is_retryable_status, retry_after};
#[cfg(any(feature = "bedrock", feature = "gemini"))]
pub(crate) use signing::replaced;
pub use signing::{RequestSigner, SignableRequest};

#[cfg(any(
    feature = "openai",
    feature = "anthropic",
    feature = "gemini",
    feature = "bedrock",
    feature = "ollama"
))]
pub(crate) use errors::classified;
#[cfg(any(
    feature = "openai",
    feature = "gemini",
    feature = "bedrock",
    feature = "cohere",
    feature = "ollama"
))]
pub(crate) use errors::json_of;
#[cfg(feature = "_protocol")]
pub(crate) use errors::shown_json_error;
#[cfg(feature = "openai")]
pub(crate) use errors::truncate;
#[cfg(feature = "_protocol")]
pub(crate) use errors::{is_refusal, mentions};
#[cfg(feature = "gemini")]
pub(crate) use retry::seconds;

/// A header map of `pairs`, for the tests of reading error answers and retry delays.
#[cfg(test)]
fn test_headers(pairs: &[(&'static str, &'static str)]) -> reqwest::header::HeaderMap {
    let mut h = reqwest::header::HeaderMap::new();
    for (k, v) in pairs {
        h.insert(*k, reqwest::header::HeaderValue::from_static(v));
    }
    h
}
