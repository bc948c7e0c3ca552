//! Vertex AI for Gemini: the `aiplatform` endpoint of a project and location, and OAuth access
//! tokens in the provider's [`RequestSigner`] hook: a token given as it is, or one exchanged
//! for a refresh token at Google's token endpoint (application default credentials of type
//! `authorized_user`, as `gcloud auth application-default login` writes them), cached until a
//! minute before it expires, refreshed once when Vertex refuses it.
//!
//! Service-account keys need a JWT signed with the account's RSA key, which this crate does not
//! do: mint a token with `gcloud auth print-access-token` (or a Google auth crate) and pass it
//! with [`GoogleCredentials::access_token`].

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use llm_tools_core::{BoxFuture, ProviderError, ProviderErrorKind};
use serde_json::Value;
use tokio::sync::Mutex;

use crate::config::env_var;
use crate::http::{RequestSigner, Secret, SignableRequest};

/// Google's OAuth token endpoint.
pub(crate) const TOKEN_URI: &str = "https://oauth2.googleapis.com/token";

/// How long before its expiry a cached token is replaced.
const EARLY: Duration = Duration::from_secs(60);

/// How Vertex AI requests are authorized. `Debug` shows no secret.
#[derive(Clone)]
#[non_exhaustive]
pub enum GoogleCredentials {
    /// An access token as it is (it is not refreshed).
    AccessToken(Secret),
    /// A refresh token exchanged for access tokens.
    RefreshToken {
        /// The OAuth client id.
        client_id: String,
        /// The OAuth client secret.
        client_secret: Secret,
        /// The refresh token.
        refresh_token: Secret,
    },
}

impl fmt::Debug for GoogleCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::AccessToken(_) => f.write_str("GoogleCredentials::AccessToken(<redacted>)"),
            Self::RefreshToken { client_id, .. } => f
                .debug_struct("GoogleCredentials::RefreshToken")
                .field("client_id", client_id)
                .finish_non_exhaustive(),
        }
    }
}

impl GoogleCredentials {
    /// An access token, used as it is.
    pub fn access_token(token: impl Into<String>) -> Self {
        Self::AccessToken(Secret::new(token))
    }

    /// A refresh token and the OAuth client it belongs to.
    pub fn refresh_token(
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
        refresh_token: impl Into<String>,
    ) -> Self {
        Self::RefreshToken {
            client_id: client_id.into(),
            client_secret: Secret::new(client_secret),
            refresh_token: Secret::new(refresh_token),
        }
    }

    /// Credentials of an application-default-credentials file's JSON (`authorized_user`);
    /// `None` for another type (a service-account key) or a file that is not one.
    pub fn from_adc_json(json: &str) -> Option<Self> {
        let v: Value = serde_json::from_str(json).ok()?;
        if v.get("type").and_then(Value::as_str) != Some("authorized_user") {
            return None;
        }
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        Some(Self::refresh_token(
            s("client_id")?,
            s("client_secret")?,
            s("refresh_token")?,
        ))
    }

    /// The credentials of the environment: `GOOGLE_ACCESS_TOKEN`, else the
    /// application-default-credentials file (`GOOGLE_APPLICATION_CREDENTIALS`, else gcloud's
    /// `~/.config/gcloud/application_default_credentials.json`) when it is `authorized_user`.
    pub fn from_env() -> Option<Self> {
        if let Some(token) = env_var("GOOGLE_ACCESS_TOKEN") {
            return Some(Self::access_token(token));
        }
        let path = env_var("GOOGLE_APPLICATION_CREDENTIALS").or_else(|| {
            env_var("HOME")
                .map(|h| format!("{h}/.config/gcloud/application_default_credentials.json"))
        })?;
        let json = std::fs::read_to_string(path).ok()?;
        Self::from_adc_json(&json)
    }
}

/// What Vertex AI is configured with.
#[derive(Clone, Debug)]
pub(crate) struct VertexOptions {
    pub(crate) credentials: Option<GoogleCredentials>,
    pub(crate) token_uri: String,
}

/// The `aiplatform` base URL of a project and location (`global` has no regional host).
pub(crate) fn base_url(project: &str, location: &str) -> String {
    let host = if location == "global" {
        "aiplatform.googleapis.com".to_owned()
    } else {
        format!("{location}-aiplatform.googleapis.com")
    };
    format!("https://{host}/v1beta1/projects/{project}/locations/{location}/publishers/google")
}

/// A cached access token.
struct Cached {
    token: Secret,
    /// When it is replaced (a minute before it expires); `None`: never.
    until: Option<Instant>,
}

/// Signs Vertex AI requests with an OAuth access token.
pub(crate) struct GoogleOAuth {
    credentials: GoogleCredentials,
    token_uri: String,
    client: reqwest::Client,
    cached: Mutex<Option<Cached>>,
}

impl GoogleOAuth {
    pub(crate) fn new(
        credentials: GoogleCredentials,
        token_uri: String,
        client: reqwest::Client,
    ) -> Arc<Self> {
        Arc::new(Self {
            credentials,
            token_uri,
            client,
            cached: Mutex::new(None),
        })
    }

    /// A fresh access token from the token endpoint, and how long it lasts.
    async fn exchange(&self, name: &str) -> Result<(Secret, Option<Duration>), ProviderError> {
        let GoogleCredentials::RefreshToken {
            client_id,
            client_secret,
            refresh_token,
        } = &self.credentials
        else {
            let GoogleCredentials::AccessToken(token) = &self.credentials else {
                return Err(auth_error(name, "no credentials to exchange".into()));
            };
            return Ok((token.clone(), None));
        };
        let form = format!(
            "grant_type=refresh_token&refresh_token={}&client_id={}&client_secret={}",
            form_encode(refresh_token.expose()),
            form_encode(client_id),
            form_encode(client_secret.expose()),
        );
        let answer = self
            .client
            .post(&self.token_uri)
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(reqwest::header::ACCEPT, "application/json")
            .timeout(Duration::from_secs(30))
            .body(form)
            .send()
            .await
            .map_err(|e| {
                auth_error(
                    name,
                    format!("the token endpoint cannot be reached: {}", e.without_url()),
                )
                .with_retryable(true)
            })?;
        let status = answer.status().as_u16();
        let body = answer.bytes().await.map_err(|e| {
            auth_error(
                name,
                format!("the token endpoint's answer broke off: {}", e.without_url()),
            )
            .with_retryable(true)
        })?;
        let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        if !(200..300).contains(&status) {
            // Google's OAuth errors: `{"error": "invalid_grant", "error_description": "…"}`.
            let what = [v.get("error"), v.get("error_description")]
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(": ");
            return Err(auth_error(
                name,
                format!("the token endpoint refused the refresh token (HTTP {status}): {what}"),
            )
            .with_retryable(status >= 500));
        }
        let token = v
            .get("access_token")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| auth_error(name, "the token endpoint sent no access_token".into()))?;
        let lasts = v
            .get("expires_in")
            .and_then(Value::as_f64)
            .and_then(|s| Duration::try_from_secs_f64(s).ok());
        Ok((Secret::new(token), lasts))
    }

    /// The token to send: the cached one while it lasts, else a fresh one.
    async fn token(&self, name: &str) -> Result<Secret, ProviderError> {
        let mut cached = self.cached.lock().await;
        if let Some(c) = cached.as_ref()
            && c.until.is_none_or(|until| Instant::now() < until)
        {
            return Ok(c.token.clone());
        }
        let (token, lasts) = self.exchange(name).await?;
        let until = lasts.map(|d| Instant::now() + d.saturating_sub(EARLY));
        *cached = Some(Cached {
            token: token.clone(),
            until,
        });
        Ok(token)
    }
}

fn auth_error(name: &str, message: String) -> ProviderError {
    ProviderError::new(
        name,
        ProviderErrorKind::Request,
        format!("Google OAuth: {message}"),
    )
}

/// `application/x-www-form-urlencoded` encoding of a value.
fn form_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl RequestSigner for GoogleOAuth {
    fn sign<'a>(
        &'a self,
        mut request: SignableRequest<'a>,
    ) -> BoxFuture<'a, Result<(), ProviderError>> {
        Box::pin(async move {
            let name = request.provider().to_owned();
            let token = self.token(&name).await?;
            request.set_header("authorization", &format!("Bearer {}", token.expose()), true)
        })
    }

    fn redact(&self, error: ProviderError) -> ProviderError {
        let error = match &self.credentials {
            GoogleCredentials::AccessToken(token) => {
                error.redacted(token.expose(), "<GOOGLE_ACCESS_TOKEN>")
            }
            GoogleCredentials::RefreshToken {
                client_secret,
                refresh_token,
                ..
            } => error
                .redacted(client_secret.expose(), "<GOOGLE_CLIENT_SECRET>")
                .redacted(refresh_token.expose(), "<GOOGLE_REFRESH_TOKEN>"),
        };
        // The token in use; a request holding the lock for a refresh has no token yet to leak.
        match self.cached.try_lock() {
            Ok(cached) => match cached.as_ref() {
                Some(c) => error.redacted(c.token.expose(), "<GOOGLE_ACCESS_TOKEN>"),
                None => error,
            },
            Err(_) => error,
        }
    }

    fn refused<'a>(&'a self) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            if matches!(self.credentials, GoogleCredentials::AccessToken(_)) {
                return false;
            }
            *self.cached.lock().await = None;
            true
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regional_and_global_endpoints() {
        assert_eq!(
            base_url("p1", "us-central1"),
            "https://us-central1-aiplatform.googleapis.com/v1beta1/projects/p1/locations/us-central1/publishers/google"
        );
        assert_eq!(
            base_url("p1", "global"),
            "https://aiplatform.googleapis.com/v1beta1/projects/p1/locations/global/publishers/google"
        );
    }

    #[test]
    fn adc_files_of_users_are_read_and_service_accounts_are_not() {
        let user = r#"{"type":"authorized_user","client_id":"id","client_secret":"s3cret","refresh_token":"r3fresh"}"#;
        let c = GoogleCredentials::from_adc_json(user).unwrap();
        let shown = format!("{c:?}");
        assert!(
            shown.contains("id") && !shown.contains("s3cret") && !shown.contains("r3fresh"),
            "{shown}"
        );
        assert!(
            GoogleCredentials::from_adc_json(r#"{"type":"service_account","private_key":"k"}"#)
                .is_none()
        );
        assert!(GoogleCredentials::from_adc_json("not json").is_none());
    }

    #[test]
    fn vertex_without_credentials_is_a_clear_error_before_any_request() {
        let mut config = super::super::GeminiConfig::vertex("p", "global", "gemini-2.5-flash");
        if let Some(v) = &mut config.options.vertex {
            v.credentials = None;
        }
        let err = super::super::Gemini::new(config).unwrap_err();
        assert!(err.to_string().contains("no Google credentials"), "{err}");
    }

    #[test]
    fn form_values_are_encoded() {
        assert_eq!(form_encode("1//0a+b/c="), "1%2F%2F0a%2Bb%2Fc%3D");
    }
}
