//! Request signing: a hook that sees each request just before it is sent (method, URL,
//! headers, body) and adds what authenticates it, for schemes a static header cannot express:
//! AWS Signature Version 4 (which signs the body and a timestamp, so every retry is signed
//! anew), or an OAuth access token fetched and refreshed as it expires.

use llm_tools_core::{BoxFuture, ProviderError};
use reqwest::header::HeaderMap;

/// Signs requests: [`HttpSettings::signer`](super::HttpSettings::signer) calls it once per try,
/// retries included, after the configured headers and auth are set.
///
/// ```
/// use llm_tools_core::{BoxFuture, ProviderError};
/// use llm_tools_providers::http::{RequestSigner, SignableRequest};
///
/// /// Adds a digest of the body, as some gateways ask.
/// struct BodyLength;
///
/// impl RequestSigner for BodyLength {
///     fn sign<'a>(&'a self, mut request: SignableRequest<'a>) -> BoxFuture<'a, Result<(), ProviderError>> {
///         Box::pin(async move {
///             let value = request.body().len().to_string();
///             request.set_header("x-body-length", &value, false)
///         })
///     }
/// }
/// ```
pub trait RequestSigner: Send + Sync + 'static {
    /// Adds the request's authentication; an error fails this try (and is retried when it says
    /// it is retryable).
    fn sign<'a>(&'a self, request: SignableRequest<'a>)
    -> BoxFuture<'a, Result<(), ProviderError>>;

    /// The server refused a request's credentials (HTTP 401): drop whatever is cached. `true`
    /// makes the client try once more, signed anew (an expired OAuth token, refreshed); the
    /// default is `false`, and the 401 is the answer.
    fn refused<'a>(&'a self) -> BoxFuture<'a, bool> {
        Box::pin(async { false })
    }

    /// Takes every secret the signer holds out of an error the server wrote (servers quote
    /// the credential they refused); the default holds none and returns `error` as it is.
    fn redact(&self, error: ProviderError) -> ProviderError {
        error
    }

    /// Takes every secret the signer holds out of a server's text that is about to be
    /// recorded (an error answer quoting the credential, as AWS's signature errors quote the
    /// canonical request with its session token): `None` when it holds none. The default holds
    /// none.
    fn redact_text(&self, text: &str) -> Option<String> {
        let _ = text;
        None
    }
}

/// `text` with each `(secret, placeholder)` replaced; `None` when it holds none of them.
#[cfg(any(feature = "bedrock", feature = "gemini"))]
pub(crate) fn replaced<'s>(
    text: &str,
    secrets: impl IntoIterator<Item = (&'s str, &'s str)>,
) -> Option<String> {
    let mut out: Option<String> = None;
    for (secret, placeholder) in secrets {
        let current = out.as_deref().unwrap_or(text);
        if !secret.is_empty() && current.contains(secret) {
            out = Some(current.replace(secret, placeholder));
        }
    }
    out
}

/// One request as a [`RequestSigner`] sees it: what it signs, and the headers it may add to.
/// Its `Debug` shows the URL without user info or secret query values, the headers' names and
/// the body's length: what a signer signs may hold secrets, and a `Debug` ends up in logs.
pub struct SignableRequest<'a> {
    pub(crate) name: &'a str,
    pub(crate) method: &'a str,
    pub(crate) url: &'a str,
    pub(crate) headers: &'a mut HeaderMap,
    pub(crate) body: &'a [u8],
}

impl std::fmt::Debug for SignableRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let header_names: Vec<&str> = self.headers.keys().map(|k| k.as_str()).collect();
        f.debug_struct("SignableRequest")
            .field("provider", &self.name)
            .field("method", &self.method)
            .field("url", &super::redact::shown_url(self.url))
            .field("header_names", &header_names)
            .field("body_bytes", &self.body.len())
            .finish()
    }
}

impl<'a> SignableRequest<'a> {
    /// The provider's name, for errors.
    pub fn provider(&self) -> &str {
        self.name
    }

    /// The HTTP method (`POST`).
    pub fn method(&self) -> &str {
        self.method
    }

    /// The full URL, query included (configured query secrets included: sign it, never log it).
    pub fn url(&self) -> &str {
        self.url
    }

    /// The headers set so far (`content-type`, `accept`, the configured ones).
    pub fn headers(&self) -> &HeaderMap {
        self.headers
    }

    /// The body.
    pub fn body(&self) -> &[u8] {
        self.body
    }

    /// Sets a header; `sensitive` keeps its value out of the HTTP client's own debug output.
    /// A name or value that is not valid HTTP is a request error.
    pub fn set_header(
        &mut self,
        name: &str,
        value: &str,
        sensitive: bool,
    ) -> Result<(), ProviderError> {
        use llm_tools_core::ProviderErrorKind;
        use reqwest::header::{HeaderName, HeaderValue};
        let invalid =
            |what: String| ProviderError::new(self.name, ProviderErrorKind::Request, what);
        let key = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| invalid(format!("the signer's header `{name}` is not a valid name")))?;
        let mut value = HeaderValue::from_str(value).map_err(|_| {
            invalid(format!(
                "the value of the signer's header `{name}` is not valid HTTP"
            ))
        })?;
        value.set_sensitive(sensitive);
        self.headers.insert(key, value);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signable_requests_debug_shows_no_secret() {
        let mut headers = HeaderMap::new();
        headers.insert(
            "x-api-key",
            reqwest::header::HeaderValue::from_static("canary-header"),
        );
        let request = SignableRequest {
            name: "p",
            method: "POST",
            url: "https://u:canary-pw@h.example/v1?api_key=canary-query",
            headers: &mut headers,
            body: b"canary-body",
        };
        let shown = format!("{request:?}");
        assert!(!shown.contains("canary"), "{shown}");
        assert!(
            shown.contains("x-api-key") && shown.contains("body_bytes: 11"),
            "{shown}"
        );
    }
}
