//! [`StoreTokenStore`]: OAuth tokens kept in a durable chat store (SQLite or PostgreSQL, through
//! [`Store::save_secret`]), encrypted at rest with AES-256-GCM under a key the application gives,
//! so a durable chat loaded in another process reaches the same server without a new login.
//! Each entry is sealed with a fresh random nonce and bound to its name (the name is the
//! cipher's associated data): an entry copied under another name, changed in the database, or
//! read with another key is refused with an error, never used.

use std::fmt;
use std::sync::Arc;

use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use llm_tools_core::BoxFuture;
use llm_tools_core::store::Store;

use super::auth::{StoredTokens, TokenStore};

/// The first byte of a sealed entry: its format.
const FORMAT: u8 = 1;

/// A [`TokenStore`] on a durable chat store, encrypted at rest.
///
/// ```
/// use std::sync::Arc;
/// use llm_tools_core::store::Store;
/// use llm_tools_mcp::{OAuth, StoreTokenStore};
///
/// // `store`: the application's `SqliteStore` or `PostgresStore`; `key`: 32 bytes from its
/// // secret manager, the same in every process.
/// fn oauth_tokens(store: Arc<dyn Store>, key: &[u8; 32]) -> StoreTokenStore {
///     StoreTokenStore::new(store, key)
/// }
/// # let _ = oauth_tokens;
/// ```
#[derive(Clone)]
pub struct StoreTokenStore {
    store: Arc<dyn Store>,
    key: Arc<LessSafeKey>,
    prefix: String,
}

impl StoreTokenStore {
    /// Tokens in `store`, sealed with the 256-bit `key`, under names `mcp-oauth/{server}`.
    pub fn new(store: Arc<dyn Store>, key: &[u8; 32]) -> Self {
        // A 32-byte key is always a valid AES-256 key.
        let key = match UnboundKey::new(&AES_256_GCM, key) {
            Ok(key) => LessSafeKey::new(key),
            Err(_) => unreachable_key(),
        };
        Self {
            store,
            key: Arc::new(key),
            prefix: "mcp-oauth/".to_owned(),
        }
    }

    /// Names entries `{prefix}{server}` (default `mcp-oauth/`): one store, several
    /// applications.
    #[must_use]
    pub fn with_name_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    fn name(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    fn seal(&self, name: &str, tokens: &StoredTokens) -> Result<Vec<u8>, String> {
        let mut nonce = [0u8; NONCE_LEN];
        aws_lc_rs::rand::fill(&mut nonce).map_err(|_| "no randomness for a nonce".to_owned())?;
        let mut sealed = serde_json::to_vec(&tokens.to_json()).map_err(|e| e.to_string())?;
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(name.as_bytes()),
                &mut sealed,
            )
            .map_err(|_| "could not encrypt the tokens".to_owned())?;
        let mut out = Vec::with_capacity(1 + NONCE_LEN + sealed.len());
        out.push(FORMAT);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        Ok(out)
    }

    fn open(&self, name: &str, bytes: &[u8]) -> Result<StoredTokens, String> {
        let refused = || {
            format!(
                "the stored tokens `{name}` do not open with this key (another key, or changed in the store); log in again after clearing them"
            )
        };
        let (&format, rest) = bytes.split_first().ok_or_else(refused)?;
        if format != FORMAT || rest.len() < NONCE_LEN {
            return Err(refused());
        }
        let (nonce, sealed) = rest.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| refused())?;
        let mut sealed = sealed.to_vec();
        let plain = self
            .key
            .open_in_place(nonce, Aad::from(name.as_bytes()), &mut sealed)
            .map_err(|_| refused())?;
        let json: serde_json::Value = serde_json::from_slice(plain).map_err(|_| refused())?;
        StoredTokens::from_json(json)
    }
}

#[allow(clippy::panic)] // AES-256 takes any 32-byte key: this cannot be reached
fn unreachable_key() -> LessSafeKey {
    panic!("AES-256-GCM refused a 32-byte key")
}

impl fmt::Debug for StoreTokenStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreTokenStore")
            .field("prefix", &self.prefix)
            .field("key", &"<redacted>")
            .finish_non_exhaustive()
    }
}

impl TokenStore for StoreTokenStore {
    fn load<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<StoredTokens>, String>> {
        Box::pin(async move {
            let name = self.name(key);
            match self.store.load_secret(&name).await {
                Ok(None) => Ok(None),
                Ok(Some(bytes)) => self.open(&name, &bytes).map(Some),
                Err(e) => Err(e.to_string()),
            }
        })
    }

    fn save<'a>(&'a self, key: &'a str, tokens: StoredTokens) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let name = self.name(key);
            let sealed = self.seal(&name, &tokens)?;
            self.store
                .save_secret(&name, &sealed)
                .await
                .map_err(|e| e.to_string())
        })
    }

    fn clear<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            self.store
                .clear_secret(&self.name(key))
                .await
                .map_err(|e| e.to_string())
        })
    }
}
