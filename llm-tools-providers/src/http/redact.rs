//! Secrets in the HTTP layer: the [`Secret`] wrapper every key and token is kept in, which
//! cannot be printed by accident, and the one redaction rule for URLs in errors, logs, spans
//! and recordings.

use std::fmt;

/// A secret: an API key, a token, a password. Its `Debug` prints `Secret(<redacted>)`, it has
/// no `Display`, and its value is read only through [`expose`](Self::expose), so formatting a
/// configuration, an error or a log field never shows it.
///
/// ```
/// use llm_tools_providers::http::Secret;
///
/// let key = Secret::from("sk-live-1234");
/// assert_eq!(format!("{key:?}"), "Secret(<redacted>)");
/// assert_eq!(key.expose(), "sk-live-1234");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Box<str>);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into().into_boxed_str())
    }

    /// The secret value, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Self::new(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Self::new(value)
    }
}

/// The query parameters whose values are secrets wherever they appear.
fn is_secret_parameter(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    matches!(
        name.as_str(),
        "key"
            | "api_key"
            | "apikey"
            | "api-key"
            | "access_token"
            | "refresh_token"
            | "client_secret"
            | "token"
            | "sig"
            | "signature"
            | "password"
    ) || name.starts_with("x-amz-")
}

/// Replaces the values of secret query parameters in `url` with `<redacted>` (placeholders
/// such as `<GEMINI_API_KEY>` stay).
pub(crate) fn redact_query_secrets(url: &str) -> String {
    let Some((base, query)) = url.split_once('?') else {
        return url.to_owned();
    };
    let (query, fragment) = match query.split_once('#') {
        Some((q, f)) => (q, Some(f)),
        None => (query, None),
    };
    let parts: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((name, value))
                if is_secret_parameter(name)
                    && !(value.starts_with('<') && value.ends_with('>')) =>
            {
                format!("{name}=<redacted>")
            }
            _ => pair.to_owned(),
        })
        .collect();
    let mut out = format!("{base}?{}", parts.join("&"));
    if let Some(fragment) = fragment {
        out.push('#');
        out.push_str(fragment);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_known_secret_parameters_are_redacted_wherever_they_are() {
        assert_eq!(
            redact_query_secrets("https://h/p?a=1&key=k1&X-Amz-Signature=s&Token=t#frag"),
            "https://h/p?a=1&key=<redacted>&X-Amz-Signature=<redacted>&Token=<redacted>#frag"
        );
        assert_eq!(redact_query_secrets("https://h/p"), "https://h/p");
        assert_eq!(
            redact_query_secrets("https://h/p?keys=1"),
            "https://h/p?keys=1"
        );
    }

    #[test]
    fn a_secret_is_never_formatted() {
        let canary = "sk-canary-5a1f0d";
        let secret = Secret::from(canary.to_owned());
        let nested = Some(vec![secret.clone()]);
        assert!(!format!("{secret:?} {nested:?} {nested:#?}").contains(canary));
        assert_eq!(secret.expose(), canary);
    }
}
