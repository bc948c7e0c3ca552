//! Vertex AI for Gemini: the `aiplatform` endpoint of a project and location, and OAuth access
//! tokens in the provider's [`RequestSigner`] hook: a token given as it is, or one exchanged at
//! Google's token endpoint, either for a refresh token (application default credentials of type
//! `authorized_user`, as `gcloud auth application-default login` writes them) or for a JWT signed
//! with a service account's RSA key (a key file of type `service_account`, RS256 as Google's
//! OAuth 2.0 for server-to-server applications describes), cached until a minute before it
//! expires (a lifetime the endpoint gives is read as a number of seconds and capped at a day;
//! a missing, negative or unreadable one counts as none, and the token serves one request),
//! refreshed once when Vertex refuses it.
//!
//! The token request carries the refresh token or the signed assertion in its body: it is sent
//! so that no client resends it (a 307 or 308 comes back unfollowed), an answer from another
//! origin than the token endpoint's is refused, and the answer is read up to
//! [`MAX_TOKEN_ANSWER_BYTES`]. The exchange counts toward the request's deadline
//! (`with_timeout`). An access token longer than [`MAX_ACCESS_TOKEN_BYTES`], or one no HTTP
//! header can carry, is an error and is not cached. Errors never show the credentials, as they
//! are or as the token request's form encodes them (an endpoint may quote the request), the
//! signed assertion, or the last [`ISSUED_KEPT`] access tokens.

use std::collections::VecDeque;
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

/// The longest a token is cached, whatever lifetime the endpoint gives (Google's last an hour).
const MAX_TOKEN_LIFETIME: Duration = Duration::from_secs(24 * 60 * 60);

/// The largest token endpoint answer read (an answer is a few hundred bytes).
pub(crate) const MAX_TOKEN_ANSWER_BYTES: usize = 1024 * 1024;

/// How long a token lasts, from the token endpoint's `expires_in` (seconds, a number or a
/// numeric string): capped at [`MAX_TOKEN_LIFETIME`]; zero when it is missing, negative, not a
/// number or not finite (the token is used for the request that asked for it, then replaced).
fn token_lifetime(expires_in: Option<&Value>) -> Duration {
    let seconds = match expires_in {
        Some(Value::Number(n)) => n.as_f64(),
        Some(Value::String(s)) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    match seconds {
        // Past the cap, however large (even past what a `Duration` holds): the cap.
        Some(s) if s.is_finite() && s >= MAX_TOKEN_LIFETIME.as_secs_f64() => MAX_TOKEN_LIFETIME,
        Some(s) => crate::http::seconds(s).unwrap_or(Duration::ZERO),
        None => Duration::ZERO,
    }
}

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
    /// A service account: its email and RSA private key sign a JWT, exchanged for tokens.
    ServiceAccount {
        /// The account's email (`name@project.iam.gserviceaccount.com`).
        client_email: String,
        /// The private key, PEM-encoded PKCS#8 (`-----BEGIN PRIVATE KEY-----`).
        private_key: Secret,
        /// The key's id, sent in the JWT header as `kid`.
        private_key_id: Option<String>,
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
            Self::ServiceAccount { client_email, .. } => f
                .debug_struct("GoogleCredentials::ServiceAccount")
                .field("client_email", client_email)
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

    /// A service account's email and its PEM-encoded PKCS#8 RSA private key (the
    /// `client_email` and `private_key` of its JSON key file). The key is read when the first
    /// token is needed; one that is not an RSA key is an error naming the cause then.
    pub fn service_account(
        client_email: impl Into<String>,
        private_key_pem: impl Into<String>,
    ) -> Self {
        Self::ServiceAccount {
            client_email: client_email.into(),
            private_key: Secret::new(private_key_pem),
            private_key_id: None,
        }
    }

    /// Credentials of a credentials file's JSON: application default credentials of a user
    /// (`authorized_user`) or a service account's key file (`service_account`); `None` for
    /// another type or a file that is not one.
    pub fn from_adc_json(json: &str) -> Option<Self> {
        let v: Value = serde_json::from_str(json).ok()?;
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        match v.get("type").and_then(Value::as_str)? {
            "authorized_user" => Some(Self::refresh_token(
                s("client_id")?,
                s("client_secret")?,
                s("refresh_token")?,
            )),
            "service_account" => Some(Self::ServiceAccount {
                client_email: s("client_email")?,
                private_key: Secret::new(s("private_key")?),
                private_key_id: s("private_key_id"),
            }),
            _ => None,
        }
    }

    /// The credentials of the environment: `GOOGLE_ACCESS_TOKEN`, else the credentials file
    /// `GOOGLE_APPLICATION_CREDENTIALS` names (a user's or a service account's), else gcloud's
    /// `~/.config/gcloud/application_default_credentials.json`.
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
    /// The location the base URL was made for (checked when the provider is made).
    pub(crate) location: String,
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
    /// The last [`ISSUED_KEPT`] tokens issued, for redaction: a request signed with a token
    /// that has since been replaced may fail after the refresh, quoting it, while it is still
    /// valid. Behind its own lock, so redacting never waits for a refresh.
    issued: std::sync::Mutex<VecDeque<Secret>>,
}

/// How many issued tokens are redacted from errors: tokens last an hour, and are replaced a
/// minute before they expire or when refused; a token endpoint that gives no lifetime makes
/// each request ask for one, so as many requests as this may still be in flight with the
/// ones replaced. At most [`MAX_ACCESS_TOKEN_BYTES`] each.
const ISSUED_KEPT: usize = 32;

/// The longest access token accepted from the token endpoint (Google's are a few hundred
/// bytes): a longer one is a clear error, and nothing is cached.
pub(crate) const MAX_ACCESS_TOKEN_BYTES: usize = 8 * 1024;

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
            issued: std::sync::Mutex::default(),
        })
    }

    /// A fresh access token from the token endpoint, and how long it lasts.
    async fn exchange(&self, name: &str) -> Result<(Secret, Option<Duration>), ProviderError> {
        // A service account's signed JWT: a credential for as long as it lasts (an hour).
        let mut assertion_sent = None;
        let form = match &self.credentials {
            GoogleCredentials::AccessToken(token) => return Ok((token.clone(), None)),
            GoogleCredentials::RefreshToken {
                client_id,
                client_secret,
                refresh_token,
            } => format!(
                "grant_type=refresh_token&refresh_token={}&client_id={}&client_secret={}",
                form_encode(refresh_token.expose()),
                form_encode(client_id),
                form_encode(client_secret.expose()),
            ),
            GoogleCredentials::ServiceAccount {
                client_email,
                private_key,
                private_key_id,
            } => {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs());
                let assertion = service_account_jwt(
                    client_email,
                    private_key.expose(),
                    private_key_id.as_deref(),
                    &self.token_uri,
                    now,
                )
                .map_err(|why| auth_error(name, why))?;
                let form = format!(
                    "grant_type={}&assertion={}",
                    form_encode(JWT_BEARER),
                    form_encode(&assertion)
                );
                assertion_sent = Some(assertion);
                form
            }
        };
        let mut answer = self
            .client
            .post(&self.token_uri)
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(reqwest::header::ACCEPT, "application/json")
            .timeout(Duration::from_secs(30))
            .body(crate::http::one_shot_body(form.into()))
            .send()
            .await
            .map_err(|e| {
                auth_error(
                    name,
                    format!("the token endpoint cannot be reached: {}", e.without_url()),
                )
                .with_retryable(true)
            })?;
        // A client that followed a redirect elsewhere: that origin's answer is not a token.
        if let Ok(asked) = reqwest::Url::parse(&self.token_uri)
            && !crate::http::same_origin(&asked, answer.url())
        {
            return Err(crate::http::cross_origin_redirect(
                name,
                &crate::http::origin(&asked),
                &crate::http::origin(answer.url()),
                None,
            ));
        }
        let status = answer.status().as_u16();
        let body = match crate::http::read_capped(&mut answer, MAX_TOKEN_ANSWER_BYTES, None).await {
            Ok(body) => body,
            Err(crate::http::BodyFailure::TooLarge) => {
                return Err(auth_error(
                    name,
                    format!(
                        "the token endpoint's answer is larger than {MAX_TOKEN_ANSWER_BYTES} bytes"
                    ),
                ));
            }
            Err(crate::http::BodyFailure::Deadline) => {
                return Err(
                    auth_error(name, "the token endpoint's answer timed out".into())
                        .with_retryable(true),
                );
            }
            Err(crate::http::BodyFailure::Transport(e)) => {
                return Err(auth_error(
                    name,
                    format!("the token endpoint's answer broke off: {}", e.without_url()),
                )
                .with_retryable(true));
            }
        };
        let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        if !(200..300).contains(&status) {
            // Google's OAuth errors: `{"error": "invalid_grant", "error_description": "…"}`.
            let what = [v.get("error"), v.get("error_description")]
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(": ");
            let error = auth_error(
                name,
                format!("the token endpoint refused the refresh token (HTTP {status}): {what}"),
            )
            .with_retryable(status >= 500);
            // An endpoint that quotes the request quotes the assertion (the credentials are
            // the signer's to redact, as in every error).
            return Err(match &assertion_sent {
                Some(assertion) => error
                    .redacted(assertion, "<GOOGLE_ASSERTION>")
                    .redacted(&form_encode(assertion), "<GOOGLE_ASSERTION>"),
                None => error,
            });
        }
        let token = v
            .get("access_token")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| auth_error(name, "the token endpoint sent no access_token".into()))?;
        // A token no request could carry is refused here, never cached (it would fail every
        // request until it expired).
        if token.len() > MAX_ACCESS_TOKEN_BYTES {
            return Err(auth_error(
                name,
                format!(
                    "the token endpoint sent an access_token longer than {MAX_ACCESS_TOKEN_BYTES} bytes"
                ),
            ));
        }
        if reqwest::header::HeaderValue::from_str(&format!("Bearer {token}")).is_err() {
            return Err(auth_error(
                name,
                "the token endpoint sent an access_token that is not valid in an HTTP header \
                 (a control character or a non-ASCII byte)"
                    .into(),
            ));
        }
        let lasts = token_lifetime(v.get("expires_in"));
        Ok((Secret::new(token), Some(lasts)))
    }

    /// What errors and texts never show, with its placeholder: the credentials, as they are
    /// and as the token request's form encodes them (an endpoint or a proxy that quotes the
    /// request quotes them encoded), then the token in use and those it replaced.
    fn secrets(&self) -> Vec<(String, &'static str)> {
        let own: Vec<(&str, &'static str)> = match &self.credentials {
            GoogleCredentials::AccessToken(token) => {
                vec![(token.expose(), "<GOOGLE_ACCESS_TOKEN>")]
            }
            GoogleCredentials::RefreshToken {
                client_secret,
                refresh_token,
                ..
            } => vec![
                (client_secret.expose(), "<GOOGLE_CLIENT_SECRET>"),
                (refresh_token.expose(), "<GOOGLE_REFRESH_TOKEN>"),
            ],
            GoogleCredentials::ServiceAccount { private_key, .. } => {
                vec![(private_key.expose(), "<GOOGLE_PRIVATE_KEY>")]
            }
        };
        let mut secrets = Vec::with_capacity(2 * own.len() + ISSUED_KEPT);
        for (secret, placeholder) in own {
            secrets.push((secret.to_owned(), placeholder));
            let encoded = form_encode(secret);
            if encoded != secret {
                secrets.push((encoded, placeholder));
            }
        }
        let issued = self
            .issued
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        secrets.extend(
            issued
                .iter()
                .map(|token| (token.expose().to_owned(), "<GOOGLE_ACCESS_TOKEN>")),
        );
        secrets
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
        // A lifetime past what `Instant` can hold counts as never (it is capped well below).
        let until = lasts.and_then(|d| Instant::now().checked_add(d.saturating_sub(EARLY)));
        *cached = Some(Cached {
            token: token.clone(),
            until,
        });
        let mut issued = self
            .issued
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if issued.len() >= ISSUED_KEPT {
            issued.pop_front();
        }
        issued.push_back(token.clone());
        Ok(token)
    }
}

/// The grant type of a JWT exchanged for an access token.
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// What a service account's token may do: Vertex AI needs `cloud-platform`.
const SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";

/// A service account's signed JWT asking `audience` (the token endpoint) for an access token
/// good for an hour from `now` (seconds since the Unix epoch): RS256 over
/// `base64url(header).base64url(claims)`.
pub(crate) fn service_account_jwt(
    client_email: &str,
    private_key_pem: &str,
    private_key_id: Option<&str>,
    audience: &str,
    now: u64,
) -> Result<String, String> {
    use aws_lc_rs::signature::{RSA_PKCS1_SHA256, RsaKeyPair};
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let der = pem_body(private_key_pem)
        .ok_or("the service account's private_key is not PEM (`-----BEGIN PRIVATE KEY-----`)")?;
    let key = RsaKeyPair::from_pkcs8(&der)
        .map_err(|e| format!("the service account's private_key is not a PKCS#8 RSA key ({e})"))?;
    let mut header = serde_json::json!({"alg": "RS256", "typ": "JWT"});
    if let Some(id) = private_key_id {
        header["kid"] = Value::from(id);
    }
    let claims = serde_json::json!({
        "iss": client_email,
        "scope": SCOPE,
        "aud": audience,
        "iat": now,
        "exp": now.saturating_add(3600),
    });
    let message = format!(
        "{}.{}",
        b64.encode(header.to_string()),
        b64.encode(claims.to_string())
    );
    let mut signature = vec![0; key.public_modulus_len()];
    key.sign(
        &RSA_PKCS1_SHA256,
        &aws_lc_rs::rand::SystemRandom::new(),
        message.as_bytes(),
        &mut signature,
    )
    .map_err(|_| "the service account's key could not sign the token request".to_owned())?;
    Ok(format!("{message}.{}", b64.encode(signature)))
}

/// The bytes of a PEM block (`-----BEGIN …-----`, base64 lines, `-----END …-----`).
fn pem_body(pem: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let body: String = pem
        .lines()
        .map(str::trim)
        .skip_while(|l| !l.starts_with("-----BEGIN "))
        .skip(1)
        .take_while(|l| !l.starts_with("-----END "))
        .collect();
    if body.is_empty() {
        return None;
    }
    base64::engine::general_purpose::STANDARD.decode(body).ok()
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
        self.secrets()
            .iter()
            .fold(error, |error, (secret, placeholder)| {
                error.redacted(secret, placeholder)
            })
    }

    fn redact_text(&self, text: &str) -> Option<String> {
        let secrets = self.secrets();
        crate::http::replaced(
            text,
            secrets
                .iter()
                .map(|(secret, placeholder)| (secret.as_str(), *placeholder)),
        )
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
    fn credentials_files_of_users_and_service_accounts_are_read() {
        let user = r#"{"type":"authorized_user","client_id":"id","client_secret":"s3cret","refresh_token":"r3fresh"}"#;
        let c = GoogleCredentials::from_adc_json(user).unwrap();
        let shown = format!("{c:?}");
        assert!(
            shown.contains("id") && !shown.contains("s3cret") && !shown.contains("r3fresh"),
            "{shown}"
        );
        let account = r#"{"type":"service_account","client_email":"bot@p.iam.gserviceaccount.com",
            "private_key":"-----BEGIN PRIVATE KEY-----\nk3y\n-----END PRIVATE KEY-----\n","private_key_id":"kid1"}"#;
        let c = GoogleCredentials::from_adc_json(account).unwrap();
        let shown = format!("{c:?}");
        assert!(
            shown.contains("bot@p.iam") && !shown.contains("k3y"),
            "{shown}"
        );
        assert!(
            GoogleCredentials::from_adc_json(r#"{"type":"service_account","private_key":"k"}"#)
                .is_none(),
            "a key file without an email"
        );
        assert!(GoogleCredentials::from_adc_json(r#"{"type":"external_account"}"#).is_none());
        assert!(GoogleCredentials::from_adc_json("not json").is_none());
    }

    fn pem(der: &[u8]) -> String {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD.encode(der);
        let lines: Vec<&str> = b64
            .as_bytes()
            .chunks(64)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect();
        format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            lines.join("\n")
        )
    }

    #[test]
    fn a_service_account_jwt_is_signed_rs256_and_claims_an_hour_of_cloud_platform() {
        use aws_lc_rs::encoding::AsDer as _;
        use aws_lc_rs::signature::{KeyPair as _, RSA_PKCS1_2048_8192_SHA256, UnparsedPublicKey};
        use base64::Engine as _;
        let key = aws_lc_rs::rsa::KeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap();
        let der = key.as_der().unwrap();
        let jwt = service_account_jwt(
            "bot@p.iam.gserviceaccount.com",
            &pem(der.as_ref()),
            Some("kid1"),
            "https://oauth2.googleapis.com/token",
            1_767_225_600,
        )
        .unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let header: Value = serde_json::from_slice(&b64.decode(parts[0]).unwrap()).unwrap();
        assert_eq!(
            header,
            serde_json::json!({"alg": "RS256", "typ": "JWT", "kid": "kid1"})
        );
        let claims: Value = serde_json::from_slice(&b64.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(
            claims,
            serde_json::json!({"iss": "bot@p.iam.gserviceaccount.com", "scope": SCOPE,
                "aud": "https://oauth2.googleapis.com/token", "iat": 1_767_225_600_u64, "exp": 1_767_229_200_u64})
        );
        let public = UnparsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, key.public_key().as_ref());
        let signed = format!("{}.{}", parts[0], parts[1]);
        public
            .verify(signed.as_bytes(), &b64.decode(parts[2]).unwrap())
            .unwrap();
        assert!(
            public
                .verify(
                    format!("{signed}x").as_bytes(),
                    &b64.decode(parts[2]).unwrap()
                )
                .is_err(),
            "the signature covers the header and claims"
        );
    }

    #[test]
    fn a_private_key_that_is_not_an_rsa_pem_is_a_clear_error() {
        let not_pem = service_account_jwt("a@b", "k3y", None, "aud", 0).unwrap_err();
        assert!(not_pem.contains("is not PEM"), "{not_pem}");
        let not_rsa = service_account_jwt(
            "a@b",
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----",
            None,
            "aud",
            0,
        )
        .unwrap_err();
        assert!(not_rsa.contains("not a PKCS#8 RSA key"), "{not_rsa}");
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
    fn token_lifetimes_are_capped_and_unreadable_ones_count_as_none() {
        use serde_json::json;
        let day = Duration::from_secs(24 * 60 * 60);
        let lifetime = |v: Value| token_lifetime(Some(&v));
        assert_eq!(lifetime(json!(3599)), Duration::from_secs(3599));
        assert_eq!(lifetime(json!("3599")), Duration::from_secs(3599));
        assert_eq!(lifetime(json!(1e19)), day);
        assert_eq!(lifetime(json!(1e300)), day);
        assert_eq!(lifetime(json!(u64::MAX)), day);
        for unreadable in [
            json!(-5),
            json!(-1e19),
            json!("soon"),
            json!(null),
            json!([1]),
        ] {
            assert_eq!(lifetime(unreadable), Duration::ZERO);
        }
        assert_eq!(token_lifetime(None), Duration::ZERO);
        // NaN and infinities are no JSON numbers; as text they are unreadable too.
        assert_eq!(lifetime(json!("NaN")), Duration::ZERO);
        assert_eq!(lifetime(json!("inf")), Duration::ZERO);
        // The cached deadline is always in reach of `Instant`.
        assert!(Instant::now().checked_add(lifetime(json!(1e19))).is_some());
    }

    #[test]
    fn form_values_are_encoded() {
        assert_eq!(form_encode("1//0a+b/c="), "1%2F%2F0a%2Bb%2Fc%3D");
    }
}
