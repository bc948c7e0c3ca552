//! The state a 2026-07-28 call carries between its rounds (`requestState`), sealed by the server.
//!
//! On 2026-07-28 a call that needs the user (an approval, a question) ends with
//! `input_required`, and the client sends the call again with the answers and the state the
//! server gave it. Clients may send anything, so the state is signed (HMAC-SHA256 under a key
//! made at random for each [`ToolServer`](crate::ToolServer)) and bound to what it was made
//! for: the tool, a digest of the arguments, a digest of the client's identity (its
//! authorization principal, session or connection), and an expiry. A state that fails any of
//! these is refused, so an approval given for one call never approves another, and a client
//! never continues another client's call.
//!
//! Also: random identifiers (call ids, task ids) and the constant-time comparison of secrets,
//! from the same cryptographic library.

use std::sync::OnceLock;
use std::time::Duration;

use aws_lc_rs::{digest, hmac};
use base64::Engine as _;
use llm_tools_core::Answer;
use serde::{Deserialize, Serialize};

/// How long the state of a call waiting for its user stays valid by default: an hour.
pub const DEFAULT_REQUEST_STATE_TTL: Duration = Duration::from_secs(3_600);

/// Where a call stands between its rounds.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct CallState {
    /// The call's id, the same in every round.
    #[serde(rename = "c")]
    pub(super) call_id: String,
    /// The tool's joined name.
    #[serde(rename = "t")]
    tool: String,
    /// SHA-256 of the arguments' JSON text, hex.
    #[serde(rename = "a")]
    arguments: String,
    /// SHA-256 of the client's identity, hex.
    #[serde(rename = "o")]
    owner: String,
    /// Seconds since 1970 after which the state is refused.
    #[serde(rename = "x")]
    expires: u64,
    /// The call was approved (by the user or the application).
    #[serde(rename = "ok", default)]
    pub(super) approved: bool,
    /// The user was asked to approve it (the next round may carry the answer).
    #[serde(rename = "ask", default)]
    pub(super) asked_approval: bool,
    /// The user's answers to the tool's questions so far, in order.
    #[serde(rename = "q", default)]
    pub(super) answers: Vec<Answer>,
}

impl CallState {
    /// A fresh state for a call of `tool` with `arguments` by `owner`.
    pub(super) fn new(call_id: String, tool: &str, arguments: &str, owner: &str) -> Self {
        Self {
            call_id,
            tool: tool.to_owned(),
            arguments: sha256_hex(arguments),
            owner: sha256_hex(owner),
            expires: 0,
            approved: false,
            asked_approval: false,
            answers: Vec::new(),
        }
    }
}

/// The server's key for sealing states, made on first use.
#[derive(Default)]
pub(super) struct StateKey(OnceLock<Option<hmac::Key>>);

impl StateKey {
    fn key(&self) -> Result<&hmac::Key, String> {
        self.0
            .get_or_init(|| {
                hmac::Key::generate(hmac::HMAC_SHA256, &aws_lc_rs::rand::SystemRandom::new()).ok()
            })
            .as_ref()
            .ok_or_else(|| {
                "the server cannot make its signing key (no system randomness)".to_owned()
            })
    }

    /// `state` as an opaque string valid for `ttl`.
    pub(super) fn seal(&self, state: &CallState, ttl: Duration) -> Result<String, String> {
        let mut state = state.clone();
        state.expires = super::results::unix_now().saturating_add(ttl.as_secs());
        let json = serde_json::to_vec(&state).map_err(|e| e.to_string())?;
        let tag = hmac::sign(self.key()?, &json);
        let b64 = &base64::engine::general_purpose::URL_SAFE_NO_PAD;
        Ok(format!(
            "{}.{}",
            b64.encode(&json),
            b64.encode(tag.as_ref())
        ))
    }

    /// The state `sealed` holds, if this server sealed it for a call of `tool` with
    /// `arguments` by `owner` and it has not expired; else why not (for the client).
    pub(super) fn open(
        &self,
        sealed: &str,
        tool: &str,
        arguments: &str,
        owner: &str,
    ) -> Result<CallState, String> {
        const REFUSED: &str = "the call's request state is not one this server gave for this call \
                               (another call, another client, or an expired state); call the tool again";
        let b64 = &base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let (json, tag) = sealed.split_once('.').ok_or(REFUSED)?;
        let json = b64.decode(json).map_err(|_| REFUSED)?;
        let tag = b64.decode(tag).map_err(|_| REFUSED)?;
        hmac::verify(self.key()?, &json, &tag).map_err(|_| REFUSED)?;
        let state: CallState = serde_json::from_slice(&json).map_err(|_| REFUSED)?;
        let bound = state.tool == tool
            && state.arguments == sha256_hex(arguments)
            && state.owner == sha256_hex(owner)
            && state.expires >= super::results::unix_now();
        if bound {
            Ok(state)
        } else {
            Err(REFUSED.to_owned())
        }
    }
}

fn sha256_hex(text: &str) -> String {
    hex(digest::digest(&digest::SHA256, text.as_bytes()).as_ref())
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

/// `prefix` and 128 random bits in hex (`task-3f…`), from the system's cryptographic random
/// source: such an id cannot be guessed.
pub(super) fn random_id(prefix: &str) -> Result<String, String> {
    let mut bytes = [0u8; 16];
    aws_lc_rs::rand::fill(&mut bytes)
        .map_err(|_| "the server cannot make an id (no system randomness)".to_owned())?;
    Ok(format!("{prefix}-{}", hex(&bytes)))
}

/// Whether two secrets are equal, in time that does not depend on where they differ.
pub(super) fn same_secret(a: &[u8], b: &[u8]) -> bool {
    aws_lc_rs::constant_time::verify_slices_are_equal(a, b).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_state_opens_only_for_its_call_and_client() {
        let key = StateKey::default();
        let mut state = CallState::new("call-1".into(), "wipe", r#"{"table":"a"}"#, "alice");
        state.approved = true;
        let sealed = key.seal(&state, Duration::from_secs(60)).unwrap();
        let opened = key
            .open(&sealed, "wipe", r#"{"table":"a"}"#, "alice")
            .unwrap();
        assert!(opened.approved);
        assert_eq!(opened.call_id, "call-1");
        // Other arguments, another tool, another client, another server's key.
        assert!(
            key.open(&sealed, "wipe", r#"{"table":"b"}"#, "alice")
                .is_err()
        );
        assert!(
            key.open(&sealed, "drop", r#"{"table":"a"}"#, "alice")
                .is_err()
        );
        assert!(
            key.open(&sealed, "wipe", r#"{"table":"a"}"#, "mallory")
                .is_err()
        );
        let other = StateKey::default();
        assert!(
            other
                .open(&sealed, "wipe", r#"{"table":"a"}"#, "alice")
                .is_err()
        );
        // A state rewritten by the client.
        let (json, tag) = sealed.split_once('.').unwrap();
        let b64 = &base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let forged = String::from_utf8(b64.decode(json).unwrap())
            .unwrap()
            .replace(r#""ok":true"#, r#""ok":false"#);
        let forged = format!("{}.{tag}", b64.encode(forged));
        assert!(
            key.open(&forged, "wipe", r#"{"table":"a"}"#, "alice")
                .is_err()
        );
    }

    #[test]
    fn an_expired_state_is_refused() {
        let key = StateKey::default();
        let state = CallState::new("call-1".into(), "wipe", "{}", "alice");
        let mut sealed_state = state.clone();
        sealed_state.expires = 1;
        let json = serde_json::to_vec(&sealed_state).unwrap();
        let tag = hmac::sign(key.key().unwrap(), &json);
        let b64 = &base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let sealed = format!("{}.{}", b64.encode(&json), b64.encode(tag.as_ref()));
        assert!(key.open(&sealed, "wipe", "{}", "alice").is_err());
    }

    #[test]
    fn random_ids_carry_128_bits() {
        let id = random_id("task").unwrap();
        assert_eq!(id.len(), "task-".len() + 32);
        assert_ne!(id, random_id("task").unwrap());
    }
}
