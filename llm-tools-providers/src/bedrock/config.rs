//! Configuring Bedrock: the region (and so the endpoint), the credentials requests are signed
//! with, or a Bedrock API key, and the answer's token limit.

use std::fmt;

use crate::config::{ProviderConfig, env_var};
use crate::http::{Auth, HttpSettings, Secret};

/// The configuration of a [`Bedrock`](super::Bedrock) provider.
///
/// ```
/// use llm_tools_providers::bedrock::{AwsCredentials, BedrockConfig};
///
/// let config = BedrockConfig::new("us.amazon.nova-2-lite-v1:0")
///     .with_region("eu-central-1")
///     .with_credentials(AwsCredentials::new("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"))
///     .with_max_tokens(2048);
/// assert_eq!(config.base_url(), "https://bedrock-runtime.eu-central-1.amazonaws.com");
/// assert!(!format!("{config:?}").contains("EXAMPLEKEY"));
/// ```
pub type BedrockConfig = ProviderConfig<BedrockOptions>;

/// Bedrock's own options.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct BedrockOptions {
    pub(crate) region: String,
    pub(crate) credentials: Option<AwsCredentials>,
    pub(crate) max_tokens: Option<u32>,
    pub(crate) cache_points: bool,
    /// Whether the base URL is the region's default endpoint (and follows `with_region`).
    pub(crate) default_endpoint: bool,
}

/// AWS credentials: an access key id, its secret, and a session token for temporary ones.
/// `Debug` shows the key id only.
#[derive(Clone)]
pub struct AwsCredentials {
    pub(crate) access_key_id: String,
    pub(crate) secret_access_key: Secret,
    pub(crate) session_token: Option<Secret>,
}

impl AwsCredentials {
    /// Long-term credentials.
    pub fn new(access_key_id: impl Into<String>, secret_access_key: impl Into<String>) -> Self {
        Self {
            access_key_id: access_key_id.into(),
            secret_access_key: Secret::new(secret_access_key),
            session_token: None,
        }
    }

    /// Temporary credentials, with their session token.
    #[must_use]
    pub fn with_session_token(mut self, token: impl Into<String>) -> Self {
        self.session_token = Some(Secret::new(token));
        self
    }

    /// The credentials of the standard environment variables: `AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY` and, if set, `AWS_SESSION_TOKEN`.
    pub fn from_env() -> Option<Self> {
        let id = env_var("AWS_ACCESS_KEY_ID")?;
        let secret = env_var("AWS_SECRET_ACCESS_KEY")?;
        let mut credentials = Self::new(id, secret);
        credentials.session_token = env_var("AWS_SESSION_TOKEN").map(Secret::new);
        Some(credentials)
    }

    /// The access key id.
    pub fn access_key_id(&self) -> &str {
        &self.access_key_id
    }
}

impl fmt::Debug for AwsCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AwsCredentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &self.secret_access_key)
            .field("session_token", &self.session_token)
            .finish()
    }
}

fn endpoint(region: &str) -> String {
    format!("https://bedrock-runtime.{region}.amazonaws.com")
}

impl BedrockConfig {
    /// Bedrock's Converse API for a model id or inference profile
    /// (`us.amazon.nova-2-lite-v1:0`, `anthropic.claude-sonnet-4-5-20250929-v1:0`, an ARN), in
    /// the region of `AWS_REGION` (else `AWS_DEFAULT_REGION`, else `us-east-1`). Requests are
    /// signed with SigV4 using the credentials of the AWS environment variables
    /// ([`AwsCredentials::from_env`]); a Bedrock API key in `AWS_BEARER_TOKEN_BEDROCK` is sent
    /// as a bearer token instead when no credentials are set.
    pub fn new(model: impl Into<String>) -> Self {
        let region = env_var("AWS_REGION")
            .or_else(|| env_var("AWS_DEFAULT_REGION"))
            .unwrap_or_else(|| "us-east-1".to_owned());
        let mut http = HttpSettings::new("bedrock", endpoint(&region));
        http.auth = Auth::Bearer;
        http.key_placeholder = "<AWS_BEARER_TOKEN_BEDROCK>".into();
        http.error_format = super::errors::details;
        let credentials = AwsCredentials::from_env();
        if credentials.is_none() {
            http.api_key = env_var("AWS_BEARER_TOKEN_BEDROCK").map(Secret::new);
        }
        let options = BedrockOptions {
            region,
            credentials,
            max_tokens: None,
            cache_points: false,
            default_endpoint: true,
        };
        Self::with_options(model, http, options)
    }

    /// The region (its default endpoint too, unless a base URL was set).
    #[must_use]
    pub fn with_region(mut self, region: impl Into<String>) -> Self {
        self.options.region = region.into();
        if self.options.default_endpoint {
            self.http.base_url = endpoint(&self.options.region);
        }
        self
    }

    /// The endpoint (a VPC endpoint, a proxy, a test server); the region still signs.
    #[must_use]
    pub fn with_endpoint(mut self, url: impl Into<String>) -> Self {
        self.options.default_endpoint = false;
        self.http.base_url = url.into();
        self
    }

    /// The credentials requests are signed with (replacing those of the environment, and any
    /// API key).
    #[must_use]
    pub fn with_credentials(mut self, credentials: AwsCredentials) -> Self {
        self.options.credentials = Some(credentials);
        self.http.api_key = None;
        self
    }

    /// A Bedrock API key, sent as a bearer token instead of signing.
    #[must_use]
    pub fn with_bedrock_api_key(mut self, key: impl Into<String>) -> Self {
        self.options.credentials = None;
        self.http.api_key = Some(Secret::new(key));
        self
    }

    /// The most tokens an answer may have (`inferenceConfig.maxTokens`; default: the model's).
    #[must_use]
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.options.max_tokens = Some(max_tokens);
        self
    }

    /// Prompt caching: a `cachePoint` after the system prompt and after the tools, so models
    /// that cache (Claude, Nova) reuse that prefix across requests.
    #[must_use]
    pub fn with_cache_points(mut self, on: bool) -> Self {
        self.options.cache_points = on;
        self
    }

    /// The region.
    pub fn region(&self) -> &str {
        &self.options.region
    }
}
