//! The protocol-neutral HTTP layer every wire protocol sends through.
//!
//! - [`client`](HttpClient): settings, auth (bearer, header, query), timeouts, the POST with
//!   retries, recording, and the answer read whole or as a byte stream;
//! - [`retry`](RetryPolicy): exponential backoff with jitter, which failures are retried, and
//!   the delay a server asks for;
//! - [`errors`](error_from_response): a failed answer read into a `ProviderError`, each
//!   protocol's body format through an [`ErrorFormat`];
//! - [`signing`](RequestSigner): a hook that signs each try (AWS SigV4, OAuth tokens);
//! - [`redact`](Secret): the wrapper secrets live in, and the rule that keeps them out of URLs
//!   in errors, logs and recordings.
//!
//! A protocol builds one [`HttpClient`] from an [`HttpSettings`] and calls
//! [`HttpClient::post_json`] with a body it wrote; the answer is an [`HttpResponse`] whose body it
//! reads whole or as a byte stream (see [`crate::framing`]).

mod client;
mod errors;
mod redact;
mod retry;
mod signing;

pub use client::{Auth, HttpClient, HttpResponse, HttpSettings};
pub use errors::{ErrorDetails, ErrorFormat, error_from_response, request_id};
pub use redact::Secret;
#[cfg(feature = "replay")]
pub(crate) use redact::{is_secret_header, redact_json, redact_query_secrets};
pub use retry::{RetryInfo, RetryPolicy, is_retryable_status, retry_after};
pub use signing::{RequestSigner, SignableRequest};

#[cfg(feature = "openai")]
pub(crate) use errors::truncate;
#[cfg(feature = "gemini")]
pub(crate) use retry::seconds;
