//! The secrets a client's errors and recordings must not show, in one place: the API key, the
//! secret query values, the password of the base URL's user info, the tokens request bodies
//! carry (a provider-hosted MCP server's access token) and whatever the request signer holds.
//!
//! A server's answer is free text that may quote what it was sent (a 400 that echoes a tool
//! definition, an answer's `error` object, a stream's `error` event): every error a client or
//! one of its streams returns goes through [`ClientSecrets::redact`] first, and every answer
//! recorded through [`ClientSecrets::redact_text`]. The client holds them behind an `Arc` that
//! its answers' streams and recordings share, so redacting costs nothing until an error comes
//! (or a recorder is attached).

use std::sync::Arc;

use llm_tools_core::ProviderError;

use super::redact::{
    Secret, redact_error_cut_tails, redact_error_whole, redact_whole, within_error_text,
};
use super::signing::RequestSigner;

/// The secrets an error or a recording must not show, and how each is replaced.
pub(crate) struct ClientSecrets {
    /// The API key, replaced by its placeholder wherever it appears.
    key: Option<(Secret, String)>,
    /// Values replaced by `<redacted>` where they stand whole (a short value is never cut out
    /// of another word): the secret query values, the URL's password, the bodies' tokens.
    whole: Vec<Secret>,
    signer: Option<Arc<dyn RequestSigner>>,
}

/// What a redacted value becomes.
const REDACTED: &str = "<redacted>";

impl ClientSecrets {
    /// The secrets of a client: its key and its placeholder, the values redacted where they
    /// stand whole, and its signer.
    pub(crate) fn new(
        key: Option<(Secret, String)>,
        whole: impl IntoIterator<Item = Secret>,
        signer: Option<Arc<dyn RequestSigner>>,
    ) -> Self {
        let mut whole: Vec<Secret> = whole
            .into_iter()
            .filter(|s| !s.expose().is_empty())
            .collect();
        // Longest first: a shorter secret standing whole inside a longer one (split from it by
        // `/`, `+` or `=`) would leave the rest of the longer one showing.
        whole.sort_by_key(|s| std::cmp::Reverse(s.expose().len()));
        Self { key, whole, signer }
    }

    /// `error` with every secret replaced: the key by its placeholder, the other values by
    /// `<redacted>`, then whatever the signer redacts; then each text of it cut at
    /// [`MAX_ERROR_TEXT_BYTES`](super::redact::MAX_ERROR_TEXT_BYTES).
    pub(crate) fn redact(&self, error: ProviderError) -> ProviderError {
        let error = match &self.key {
            Some((key, placeholder)) => error.redacted(key.expose(), placeholder),
            None => error,
        };
        let error = redact_error_whole(error, self.whole.iter().map(Secret::expose), REDACTED);
        // What a server quoted and an early cut (a message's first 500 bytes) left a part of.
        let cut: Vec<&str> = self
            .key
            .iter()
            .map(|(key, _)| key.expose())
            .chain(self.whole.iter().map(Secret::expose))
            .collect();
        let error = redact_error_cut_tails(error, &cut, REDACTED);
        let error = match &self.signer {
            Some(signer) => signer.redact(error),
            None => error,
        };
        within_error_text(error)
    }

    /// `text` (an answer to record) with the key replaced by its placeholder wherever it
    /// appears, the other values where they stand whole, and what the signer holds (a server
    /// may quote the credential it refused: AWS's signature errors quote the canonical request,
    /// session token and all); `None` when it holds none of them.
    pub(crate) fn redact_text(&self, text: &str) -> Option<String> {
        let mut redacted: Option<String> = None;
        if let Some((key, placeholder)) = &self.key
            && !key.expose().is_empty()
            && text.contains(key.expose())
        {
            redacted = Some(text.replace(key.expose(), placeholder));
        }
        for secret in &self.whole {
            let current = redacted.as_deref().unwrap_or(text);
            if current.contains(secret.expose()) {
                redacted = Some(redact_whole(current, secret.expose(), REDACTED));
            }
        }
        if let Some(signer) = &self.signer
            && let Some(clean) = signer.redact_text(redacted.as_deref().unwrap_or(text))
        {
            redacted = Some(clean);
        }
        redacted
    }
}

impl std::fmt::Debug for ClientSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientSecrets")
            .field(
                "values",
                &(usize::from(self.key.is_some()) + self.whole.len()),
            )
            .field("signed", &self.signer.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use llm_tools_core::ProviderErrorKind;

    /// A server's text cut before it was redacted (an error message kept to its first 500
    /// bytes, a decode error's first 200 characters) that ends in the first part of a secret
    /// it quoted shows none of it; words that only end like one stay.
    #[test]
    fn a_secret_cut_short_at_the_end_of_a_text_shows_none_of_it() {
        let key = "sk-live-0123456789abcdef";
        let token = "mcp-token-0123456789";
        let secrets = ClientSecrets::new(
            Some((Secret::from(key), "<key>".to_owned())),
            [Secret::from(token)],
            None,
        );
        let filler = "x".repeat(480);
        for (quoted, kept) in [(key, 12), (token, 9), (key, 23)] {
            let body = format!("{filler} invalid: {quoted} (see the docs)");
            let message = crate::http::errors::truncate(&body, filler.len() + 10 + kept);
            let error = ProviderError::new("p", ProviderErrorKind::Http, message.as_str());
            let clean = secrets.redact(error);
            for n in 8..quoted.len() {
                assert!(
                    !clean.message().contains(&quoted[..n]),
                    "{n} bytes of it show: {}",
                    clean.message()
                );
            }
            assert!(
                clean.message().ends_with("invalid: <redacted>…"),
                "{}",
                clean.message()
            );
        }
        // A word that ends like the secret's start but is part of a longer word stays.
        let error = ProviderError::new("p", ProviderErrorKind::Http, "xsk-live-0123");
        assert_eq!(secrets.redact(error).message(), "xsk-live-0123");
    }

    #[test]
    fn every_kind_of_secret_leaves_the_message_and_the_code() {
        let secrets = ClientSecrets::new(
            Some((Secret::from("sk-live-key"), "<key>".to_owned())),
            [Secret::from("mcp-token-1"), Secret::from("")],
            None,
        );
        let error = ProviderError::new(
            "p",
            ProviderErrorKind::Stream,
            "bad tool {\"authorization\":\"mcp-token-1\"} with key sk-live-key",
        )
        .with_code("mcp-token-1");
        let clean = secrets.redact(error);
        assert_eq!(
            clean.message(),
            "bad tool {\"authorization\":\"<redacted>\"} with key <key>"
        );
        assert_eq!(clean.code(), Some("<redacted>"));
        assert_eq!(
            secrets
                .redact_text("Bearer mcp-token-1, sk-live-key")
                .as_deref(),
            Some("Bearer <redacted>, <key>")
        );
        assert_eq!(secrets.redact_text("nothing here"), None);
    }
}
