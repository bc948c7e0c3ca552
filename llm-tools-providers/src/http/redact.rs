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

/// The headers whose values are secrets (auth of every provider, AWS session tokens, cookies).
#[cfg_attr(not(feature = "replay"), allow(dead_code))]
pub(crate) fn is_secret_header(name: &str) -> bool {
    matches!(
        name.to_ascii_lowercase().as_str(),
        "authorization"
            | "proxy-authorization"
            | "x-api-key"
            | "api-key"
            | "x-goog-api-key"
            | "x-amz-security-token"
            | "cookie"
            | "set-cookie"
    )
}

/// The JSON fields whose values are secrets wherever they appear in a body.
fn is_secret_field(name: &str) -> bool {
    matches!(
        name.to_ascii_lowercase().as_str(),
        "api_key"
            | "apikey"
            | "api-key"
            | "access_token"
            | "refresh_token"
            | "id_token"
            | "client_secret"
            | "password"
            | "secret_access_key"
            | "session_token"
            | "authorization"
            | "authorization_token"
    )
}

/// Replaces the values of secret fields, at any depth, with `<redacted>`.
pub(crate) fn redact_json(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(o) => {
            for (k, child) in o.iter_mut() {
                if is_secret_field(k) && !child.is_null() {
                    *child = serde_json::Value::from("<redacted>");
                } else {
                    redact_json(child);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(redact_json),
        _ => {}
    }
}

/// A body as logs and recordings show it: secret fields redacted (when it is JSON), and the
/// configured key, wherever it appears, replaced by its placeholder.
pub(crate) fn redacted_body(body: &[u8], key: Option<&Secret>, placeholder: &str) -> String {
    let text = match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(mut v) => {
            redact_json(&mut v);
            v.to_string()
        }
        Err(_) => String::from_utf8_lossy(body).into_owned(),
    };
    match key.map(Secret::expose) {
        Some(k) if !k.is_empty() && text.contains(k) => text.replace(k, placeholder),
        _ => text,
    }
}

/// The query parameters whose values are secrets wherever they appear.
pub(crate) fn is_secret_parameter(name: &str) -> bool {
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
    fn secret_fields_and_the_key_are_redacted_in_bodies() {
        let key = Secret::from("sk-canary-1");
        let body = br#"{"model":"m","nested":{"client_secret":"cs","list":[{"password":"pw"}]},"note":"sk-canary-1","mcp_servers":[{"authorization_token":"mt"}],"tools":[{"type":"mcp","authorization":"ma","headers":{"Authorization":"Bearer mh"}}]}"#;
        let shown = redacted_body(body, Some(&key), "<KEY>");
        for secret in ["cs", "pw", "sk-canary-1", "mt", "ma", "Bearer mh"] {
            assert!(!shown.contains(&format!("\"{secret}\"")), "{shown}");
        }
        assert!(shown.contains("<KEY>"), "{shown}");
        assert_eq!(
            redacted_body(b"plain sk-canary-1", Some(&key), "<KEY>"),
            "plain <KEY>"
        );
        assert!(is_secret_header("Authorization") && !is_secret_header("content-type"));
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
