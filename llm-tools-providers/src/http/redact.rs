//! Secrets in the HTTP layer: the [`Secret`] wrapper every key and token is kept in, which
//! cannot be printed by accident, and the one redaction rule for URLs in errors, logs, spans
//! and recordings.

use std::borrow::Cow;
use std::fmt;

use llm_tools_core::untrusted::shown;

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
    if let Some(count) = llm_tools_core::json_values::too_many_values(body) {
        // Not parsed, so its secret fields could not be found: none of it is shown.
        return format!(
            "(a body of {} bytes holding about {count} JSON values, past the limit: not shown)",
            body.len()
        );
    }
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

/// The query parameters whose values are secrets wherever they appear (names compared without
/// regard to case): keys, tokens, signatures, passwords, subscription keys, and AWS's
/// `X-Amz-*` presigning parameters. A parameter of another name is made secret by the
/// configuration (`with_secret_query`).
pub(crate) fn is_secret_parameter(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    matches!(
        name.as_str(),
        "key"
            | "api_key"
            | "apikey"
            | "api-key"
            | "x-api-key"
            | "access_token"
            | "access-token"
            | "refresh_token"
            | "id_token"
            | "auth"
            | "auth_token"
            | "client_secret"
            | "secret"
            | "token"
            | "sig"
            | "signature"
            | "password"
            | "subscription-key"
            | "subscription_key"
            | "code"
            | "code_verifier"
            | "assertion"
            | "client_assertion"
            | "subject_token"
    ) || name.starts_with("x-amz-")
}

/// Whether a value is a placeholder this crate wrote (`<GEMINI_API_KEY>`, `<redacted>`).
pub(crate) fn is_placeholder(value: &str) -> bool {
    value.len() >= 2 && value.starts_with('<') && value.ends_with('>')
}

/// `url` with the values of its query parameters replaced where `shown(name, value)` says
/// (`None`: the value stays). The query is read parameter by parameter, names percent-decoded,
/// so a parameter is found by its whole name, and a value is never searched for in the rest
/// of the URL. The fragment stays as it is.
pub(crate) fn redact_query(url: &str, shown: impl Fn(&str, &str) -> Option<String>) -> String {
    let Some((base, query)) = url.split_once('?') else {
        return url.to_owned();
    };
    let (query, fragment) = match query.split_once('#') {
        Some((q, f)) => (q, Some(f)),
        None => (query, None),
    };
    let mut out = String::with_capacity(url.len());
    out.push_str(base);
    out.push('?');
    for (i, pair) in query.split('&').enumerate() {
        if i > 0 {
            out.push('&');
        }
        match pair.split_once('=') {
            Some((name, value)) => match shown(&percent_decode(name), value) {
                Some(replacement) => {
                    out.push_str(name);
                    out.push('=');
                    out.push_str(&replacement);
                }
                None => out.push_str(pair),
            },
            None => out.push_str(pair),
        }
    }
    if let Some(fragment) = fragment {
        out.push('#');
        out.push_str(fragment);
    }
    out
}

/// `url` without the user info before its host (`https://user:password@host/…` becomes
/// `https://<redacted>@host/…`): reqwest sends it as Basic credentials, so any part of it may
/// be a secret. Everything up to the last `@` before the query is taken for user info, so a
/// password written with an unescaped `/` (`user:pa/ss@host`, which no URL parser reads as
/// one) is not shown either; a path holding an `@` is shown cut the same way.
pub(crate) fn without_userinfo(url: &str) -> Cow<'_, str> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.into();
    };
    let query_start = rest.find(['?', '#']).unwrap_or(rest.len());
    let (before_query, query) = rest.split_at(query_start);
    match before_query.rsplit_once('@') {
        Some((_, host)) => format!("{scheme}://<redacted>@{host}{query}").into(),
        None => url.into(),
    }
}

/// The password of `url`'s user info, as written and percent-decoded, when it has one.
pub(crate) fn userinfo_password(url: &str) -> Vec<String> {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return Vec::new();
    };
    let Some(password) = parsed.password().filter(|p| !p.is_empty()) else {
        return Vec::new();
    };
    let decoded = percent_decode(password);
    if decoded == password {
        vec![password.to_owned()]
    } else {
        vec![password.to_owned(), decoded]
    }
}

/// A URL as a `Debug` may show it: without user info or secret query values.
pub(crate) fn shown_url(url: &str) -> String {
    redact_query_secrets(&without_userinfo(url))
}

/// Replaces the values of the well-known secret query parameters in `url` with `<redacted>`
/// (placeholders such as `<GEMINI_API_KEY>` stay): for URLs the client did not build itself
/// (what the replay server receives, a configured base URL shown in a `Debug`).
pub(crate) fn redact_query_secrets(url: &str) -> String {
    redact_query(url, |name, value| {
        (is_secret_parameter(name) && !is_placeholder(value)).then(|| "<redacted>".to_owned())
    })
}

/// Whether a byte (`None`: the text's edge) continues a token: a secret standing next to one
/// is part of a longer word, not the secret.
fn is_word_byte(b: Option<&u8>) -> bool {
    b.is_some_and(|b| b.is_ascii_alphanumeric() || b"-._~%".contains(b))
}

/// `text` with every whole occurrence of `secret` replaced by `placeholder`: an occurrence
/// right next to a letter, a digit or one of `-._~%` is part of a longer word and stays, so a
/// short secret (`a`) does not garble the text around it (`access`, `/chat/`), while a secret
/// quoted as itself (`key=sk-1&`, `"sk-1"`, `/sk-1/`) is replaced.
pub(crate) fn redact_whole(text: &str, secret: &str, placeholder: &str) -> String {
    if secret.is_empty() || !text.contains(secret) {
        return text.to_owned();
    }
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for (at, _) in text.match_indices(secret) {
        let end = at + secret.len();
        if at < copied
            || is_word_byte(at.checked_sub(1).and_then(|i| bytes.get(i)))
            || is_word_byte(bytes.get(end))
        {
            continue;
        }
        out.push_str(text.get(copied..at).unwrap_or_default());
        out.push_str(placeholder);
        copied = end;
    }
    out.push_str(text.get(copied..).unwrap_or_default());
    out
}

/// `error` with `secrets` (longest first) replaced by `placeholder` wherever they stand whole
/// ([`redact_whole`]) in what the server wrote: the message, error type, code and request id.
pub(crate) fn redact_error_whole<'s>(
    error: llm_tools_core::ProviderError,
    secrets: impl IntoIterator<Item = &'s str>,
    placeholder: &str,
) -> llm_tools_core::ProviderError {
    let mut secrets: Vec<&str> = secrets.into_iter().filter(|s| !s.is_empty()).collect();
    if secrets.is_empty() {
        return error;
    }
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    let clean = |text: &str| {
        secrets.iter().fold(text.to_owned(), |text, secret| {
            redact_whole(&text, secret, placeholder)
        })
    };
    rebuilt(&error, clean)
}

/// The shortest start of a secret [`redact_cut_tails`] takes for the secret cut short: shorter
/// ones would match the ends of ordinary words.
const MIN_CUT_SECRET: usize = 8;

/// `text` with a start of one of `secrets` (at least [`MIN_CUT_SECRET`] bytes, standing as a
/// word) at its end, before a cut mark `…` if any, replaced by `placeholder`: a server's text
/// cut before it was redacted (a message kept to its first 500 bytes) may end in the first
/// part of a secret it quoted, which no whole-word match finds.
pub(crate) fn redact_cut_tail<'s>(
    text: &str,
    secrets: impl IntoIterator<Item = &'s str>,
    placeholder: &str,
) -> String {
    let (body, mark) = match text.strip_suffix('…') {
        Some(body) => (body, "…"),
        None => (text, ""),
    };
    for secret in secrets {
        let mut k = secret.len().saturating_sub(1);
        while k >= MIN_CUT_SECRET {
            if let Some(start) = secret.get(..k)
                && body.ends_with(start)
            {
                let at = body.len() - k;
                if !is_word_byte(at.checked_sub(1).and_then(|i| body.as_bytes().get(i))) {
                    return format!("{}{placeholder}{mark}", body.get(..at).unwrap_or_default());
                }
            }
            k -= 1;
        }
    }
    text.to_owned()
}

/// `error` with each text field's cut-off start of a secret replaced ([`redact_cut_tail`]).
pub(crate) fn redact_error_cut_tails(
    error: llm_tools_core::ProviderError,
    secrets: &[&str],
    placeholder: &str,
) -> llm_tools_core::ProviderError {
    if secrets.is_empty() {
        return error;
    }
    rebuilt(&error, |text| {
        redact_cut_tail(text, secrets.iter().copied(), placeholder)
    })
}

/// The most text an error keeps in each of its fields (a server's message, error type,
/// code, request id): 8 KiB. A server's error object may hold megabytes, logged at each retry.
pub(crate) const MAX_ERROR_TEXT_BYTES: usize = 8 * 1024;

/// `error` with each text field as it may be shown ([`llm_tools_core::untrusted::shown`]):
/// control characters but line breaks and tabs escaped (a server's message may carry terminal
/// escapes, shown in `Display` and logged at each retry), and cut at a character boundary to
/// [`MAX_ERROR_TEXT_BYTES`]; cut after redacting, so no part of a secret is left at the cut.
pub(crate) fn within_error_text(
    error: llm_tools_core::ProviderError,
) -> llm_tools_core::ProviderError {
    let changes = |text: Option<&str>| {
        text.is_some_and(|t| matches!(shown(t, MAX_ERROR_TEXT_BYTES), Cow::Owned(_)))
    };
    if !changes(Some(error.message()))
        && !changes(error.error_type())
        && !changes(error.code())
        && !changes(error.request_id())
    {
        return error;
    }
    rebuilt(&error, |text| {
        shown(text, MAX_ERROR_TEXT_BYTES).into_owned()
    })
}

/// `error` with `map` applied to each of its text fields, everything else kept.
fn rebuilt(
    error: &llm_tools_core::ProviderError,
    map: impl Fn(&str) -> String,
) -> llm_tools_core::ProviderError {
    let message = map(error.message());
    let mut mapped = match error.status() {
        Some(status) => llm_tools_core::ProviderError::http(error.provider(), status, message),
        None => llm_tools_core::ProviderError::new(error.provider(), error.kind(), message),
    }
    .with_kind(error.kind())
    .with_retryable(error.is_retryable())
    .with_retry_after(error.retry_after());
    if let Some(t) = error.error_type() {
        mapped = mapped.with_error_type(map(t));
    }
    if let Some(c) = error.code() {
        mapped = mapped.with_code(map(c));
    }
    if let Some(id) = error.request_id() {
        mapped = mapped.with_request_id(map(id));
    }
    mapped
}

/// A query component percent-decoded (`+` is a space); bytes that do not decode stay as they
/// are.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let hex = |at: usize| bytes.get(at).and_then(|h| char::from(*h).to_digit(16));
        match (b, hex(i + 1), hex(i + 2)) {
            (b'%', Some(hi), Some(lo)) => {
                // Two hex digits: at most 0xff.
                out.push(u8::try_from(hi * 16 + lo).unwrap_or(b'%'));
                i += 3;
            }
            (b'+', _, _) => {
                out.push(b' ');
                i += 1;
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A password written with an unescaped `/` or `?`-free `:`-port look is still user info
    /// to the reader: nothing before the last `@` is shown.
    #[test]
    fn user_info_is_hidden_even_when_no_url_parser_reads_it() {
        assert_eq!(
            without_userinfo("https://user:pa/ss@host/v1?x=1"),
            "https://<redacted>@host/v1?x=1"
        );
        assert_eq!(
            without_userinfo("https://user:1234/x@host"),
            "https://<redacted>@host"
        );
        assert_eq!(without_userinfo("https://host/v1"), "https://host/v1");
        assert_eq!(
            without_userinfo("https://host/v1?email=a@b"),
            "https://host/v1?email=a@b"
        );
    }

    #[test]
    fn user_info_is_left_out_of_a_shown_url() {
        assert_eq!(
            without_userinfo("https://user:s3cret@gw.example/v1?x=1"),
            "https://<redacted>@gw.example/v1?x=1"
        );
        assert_eq!(
            without_userinfo("https://gw.example/v1?to=a@b"),
            "https://gw.example/v1?to=a@b"
        );
        assert_eq!(userinfo_password("https://u:p%40ss@h/"), ["p%40ss", "p@ss"]);
        assert!(userinfo_password("https://u@h/").is_empty());
        assert_eq!(
            shown_url("https://u:pw@h/v1?api_key=k1"),
            "https://<redacted>@h/v1?api_key=<redacted>"
        );
    }

    /// A body past the value limit cannot be searched for secret fields: none of it shows.
    #[test]
    fn a_body_past_the_value_limit_is_not_shown() {
        let dense = format!(
            r#"{{"api_key":"sk-canary","pad":[{}0]}}"#,
            "0,".repeat(llm_tools_core::json_values::MAX_JSON_VALUES)
        );
        let shown = redacted_body(dense.as_bytes(), None, "<key>");
        assert!(!shown.contains("sk-canary"));
        assert!(shown.contains("not shown"), "{shown}");
    }

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
        assert_eq!(
            redact_query_secrets("https://h/p?subscription-key=s1&Subscription%2DKey=s2&key=<K>"),
            "https://h/p?subscription-key=<redacted>&Subscription%2DKey=<redacted>&key=<K>"
        );
        // A token request's form: a service account's signed JWT is a credential for an hour.
        assert_eq!(
            redact_query_secrets(
                "?grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=eyJ.x.y"
            ),
            "?grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=<redacted>"
        );
    }

    #[test]
    fn parameters_are_found_by_their_whole_name_and_values_never_as_substrings() {
        // A secret "a" is the value of `sk`; the `a`s elsewhere in the URL stay.
        let shown = redact_query(
            "https://api.example/a/chat?sk=a&name=banana&x#a",
            |name, _| (name == "sk").then(|| "<redacted>".to_owned()),
        );
        assert_eq!(
            shown,
            "https://api.example/a/chat?sk=<redacted>&name=banana&x#a"
        );
        // Another parameter holding the same text is not a secret parameter.
        let shown = redact_query("https://h/p?sk=v&skx=v&name=v", |name, _| {
            (name == "sk").then(|| "<redacted>".to_owned())
        });
        assert_eq!(shown, "https://h/p?sk=<redacted>&skx=v&name=v");
        assert_eq!(percent_decode("a%2Db+c%zz%"), "a-b c%zz%");
    }

    #[test]
    fn secrets_in_free_text_are_replaced_where_they_stand_whole() {
        assert_eq!(
            redact_whole("access denied for /openai/a/v1/chat?pass=a&b=1", "a", "<r>"),
            "access denied for /openai/<r>/v1/chat?pass=<r>&b=1"
        );
        assert_eq!(
            redact_whole("bad key \"sk-1\"; sk-10 is another", "sk-1", "<K>"),
            "bad key \"<K>\"; sk-10 is another"
        );
        assert_eq!(redact_whole("aaa", "a", "<r>"), "aaa");
        assert_eq!(redact_whole("a a", "a", "<r>"), "<r> <r>");
        let e = llm_tools_core::ProviderError::http("x", 403, "denied: long-secret-1 and a")
            .with_code("a")
            .with_retryable(true);
        let e = redact_error_whole(e, ["a", "long-secret-1"], "<redacted>");
        assert_eq!(e.message(), "denied: <redacted> and <redacted>");
        assert_eq!(e.code(), Some("<redacted>"));
        assert_eq!(e.status(), Some(403));
        assert!(e.is_retryable());
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
