//! The state a 2026-07-28 call carries between its rounds (`requestState`), sealed by the server.
//!
//! On 2026-07-28 a call that needs the user (an approval, a question) ends with
//! `input_required`, and the client sends the call again with the answers and the state the
//! server gave it. Clients may send anything, so the state is signed (HMAC-SHA256 under a key
//! made at random for each [`ToolServer`](crate::ToolServer)) and bound to what it was made
//! for: the tool, a digest of the arguments, a digest of the client's identity (its
//! authorization principal, session or connection), and an expiry. A state that fails any of
//! these is refused, so an approval given for one call never approves another, and a client
//! never continues another client's call. Each sealed state also carries a random nonce and
//! opens once: a state sent again (an approved round replayed to run the tool again without
//! asking) is refused.
//!
//! Also: random identifiers (call ids, task ids) and the constant-time comparison of secrets,
//! from the same cryptographic library.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
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
    /// The question the client was asked in the round this state ends (its index among the
    /// call's questions): the next round's answer to it is the only one taken.
    #[serde(rename = "p", default)]
    pub(super) asked: Option<usize>,
    /// The task the call resumes in its next round, by its id among the server's tasks
    /// (where it is kept meanwhile): the tool asked while resuming it.
    #[serde(rename = "k", default, skip_serializing_if = "Option::is_none")]
    pub(super) task: Option<String>,
    /// How many of `answers` the call's own runs were given before it returned its task: the
    /// task's resumes are given the answers after them.
    #[serde(rename = "f", default)]
    pub(super) task_from: usize,
    /// Random for each sealing: what makes a sealed state open once.
    #[serde(rename = "n", default)]
    nonce: String,
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
            asked: None,
            task: None,
            task_from: 0,
            nonce: String::new(),
        }
    }
}

/// The most sealed states the server remembers as used before they expire. Past it, the
/// expired ones are forgotten first; a server still full refuses to open more until some
/// expire (the client calls the tool again), rather than forget a used state that could then
/// be sent again.
pub const MAX_USED_STATES: usize = 100_000;

/// The most of [`MAX_USED_STATES`] one client's states may take (a tenth), so that one client
/// answering rounds with nothing, an hour's worth of states at a time, cannot keep every
/// other client's calls from their next round. Past it, that client's states are refused the
/// same way until some of its own expire.
pub const MAX_USED_STATES_PER_CLIENT: usize = MAX_USED_STATES / 10;

/// The states opened already: each nonce until its state expires, and how many are each
/// client's.
#[derive(Default)]
struct UsedStates {
    /// Each nonce's expiry and client (the digest of its owner).
    by_nonce: HashMap<String, (u64, String)>,
    /// How many of `by_nonce` each client has.
    per_client: HashMap<String, usize>,
}

impl UsedStates {
    fn insert(&mut self, nonce: String, expires: u64, owner: &str) {
        if self
            .by_nonce
            .insert(nonce, (expires, owner.to_owned()))
            .is_none()
        {
            *self.per_client.entry(owner.to_owned()).or_default() += 1;
        }
    }

    fn client_count(&self, owner: &str) -> usize {
        self.per_client.get(owner).copied().unwrap_or(0)
    }

    fn forget_expired(&mut self, now: u64) {
        self.by_nonce.retain(|_, (expires, _)| *expires >= now);
        self.per_client.clear();
        for (_, owner) in self.by_nonce.values() {
            *self.per_client.entry(owner.clone()).or_default() += 1;
        }
    }
}

/// The server's key for sealing states, made on first use, and the states opened already.
#[derive(Default)]
pub(super) struct StateKey {
    key: OnceLock<Option<hmac::Key>>,
    /// The nonce of each state opened, until the state expires.
    used: Mutex<UsedStates>,
}

impl StateKey {
    fn key(&self) -> Result<&hmac::Key, String> {
        self.key
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
        state.nonce = random_id("state")?;
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
        let now = super::results::unix_now();
        let bound = state.tool == tool
            && state.arguments == sha256_hex(arguments)
            && state.owner == sha256_hex(owner)
            && state.expires >= now
            && !state.nonce.is_empty();
        if !bound {
            return Err(REFUSED.to_owned());
        }
        let mut used = self
            .used
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if used.by_nonce.contains_key(&state.nonce) {
            return Err(
                "the call's request state was used already: each round's state \
                        continues the call once; call the tool again"
                    .to_owned(),
            );
        }
        if used.by_nonce.len() >= MAX_USED_STATES
            || used.client_count(&state.owner) >= MAX_USED_STATES_PER_CLIENT
        {
            used.forget_expired(now);
            if used.by_nonce.len() >= MAX_USED_STATES {
                return Err(
                    "the server has too many calls waiting for their users; call the tool again later"
                        .to_owned(),
                );
            }
            if used.client_count(&state.owner) >= MAX_USED_STATES_PER_CLIENT {
                return Err(format!(
                    "this client has {MAX_USED_STATES_PER_CLIENT} calls waiting for their users \
                     already, its share; call the tool again later"
                ));
            }
        }
        used.insert(state.nonce.clone(), state.expires, &state.owner);
        Ok(state)
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
        // Other arguments, another tool, another client, another server's key: refused, and
        // the state still opens once for its own call.
        assert!(
            key.open(&sealed, "wipe", r#"{"table":"b"}"#, "alice")
                .is_err()
        );
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
    fn a_state_opens_once_and_each_sealing_opens_once() {
        let key = StateKey::default();
        let mut state = CallState::new("call-1".into(), "wipe", "{}", "alice");
        state.approved = true;
        let first = key.seal(&state, Duration::from_secs(60)).unwrap();
        let second = key.seal(&state, Duration::from_secs(60)).unwrap();
        assert_ne!(first, second, "each sealing has its own nonce");
        assert!(key.open(&first, "wipe", "{}", "alice").is_ok());
        let again = key.open(&first, "wipe", "{}", "alice").unwrap_err();
        assert!(again.contains("used already"), "{again}");
        assert!(key.open(&second, "wipe", "{}", "alice").is_ok());
    }

    #[test]
    fn a_full_memory_of_used_states_forgets_expired_ones_and_refuses_rather_than_forget_live_ones()
    {
        let key = StateKey::default();
        let now = super::super::results::unix_now();
        {
            let mut used = key.used.lock().unwrap();
            for i in 0..MAX_USED_STATES {
                // Half expired, half live, spread over many clients.
                let expires = if i % 2 == 0 { 1 } else { now + 600 };
                used.insert(format!("n{i}"), expires, &format!("client {}", i % 100));
            }
        }
        let state = CallState::new("call-1".into(), "wipe", "{}", "alice");
        let sealed = key.seal(&state, Duration::from_secs(60)).unwrap();
        assert!(key.open(&sealed, "wipe", "{}", "alice").is_ok());
        assert_eq!(
            key.used.lock().unwrap().by_nonce.len(),
            MAX_USED_STATES / 2 + 1
        );
        {
            let mut used = key.used.lock().unwrap();
            for i in 0..MAX_USED_STATES {
                used.insert(
                    format!("live{i}"),
                    now + 600,
                    &format!("client {}", i % 100),
                );
            }
        }
        let sealed = key.seal(&state, Duration::from_secs(60)).unwrap();
        let full = key.open(&sealed, "wipe", "{}", "alice").unwrap_err();
        assert!(full.contains("too many"), "{full}");
    }

    #[test]
    fn one_client_fills_only_its_share_of_the_used_states() {
        let key = StateKey::default();
        let now = super::super::results::unix_now();
        let mallory = CallState::new("call-1".into(), "wipe", "{}", "mallory");
        {
            let mut used = key.used.lock().unwrap();
            for i in 0..MAX_USED_STATES_PER_CLIENT {
                used.insert(format!("n{i}"), now + 600, &mallory.owner);
            }
        }
        let sealed = key.seal(&mallory, Duration::from_secs(60)).unwrap();
        let refused = key.open(&sealed, "wipe", "{}", "mallory").unwrap_err();
        assert!(refused.contains("this client"), "{refused}");
        // Another client's round goes on.
        let alice = CallState::new("call-2".into(), "wipe", "{}", "alice");
        let sealed = key.seal(&alice, Duration::from_secs(60)).unwrap();
        assert!(key.open(&sealed, "wipe", "{}", "alice").is_ok());
    }

    #[test]
    fn an_expired_state_is_refused() {
        let key = StateKey::default();
        let state = CallState::new("call-1".into(), "wipe", "{}", "alice");
        let mut sealed_state = state.clone();
        sealed_state.expires = 1;
        sealed_state.nonce = "state-1".into();
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
