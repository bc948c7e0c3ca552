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

    /// The credentials of the environment: the standard variables `AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY` and, if set, `AWS_SESSION_TOKEN`; else the static keys of the
    /// profile `AWS_PROFILE` (else `default`) in the shared files ([`from_profile`](Self::from_profile)).
    pub fn from_env() -> Option<Self> {
        if let (Some(id), Some(secret)) = (
            env_var("AWS_ACCESS_KEY_ID"),
            env_var("AWS_SECRET_ACCESS_KEY"),
        ) {
            let mut credentials = Self::new(id, secret);
            credentials.session_token = env_var("AWS_SESSION_TOKEN").map(Secret::new);
            return Some(credentials);
        }
        Self::from_profile(&profile_name())
    }

    /// The static keys (`aws_access_key_id`, `aws_secret_access_key`, `aws_session_token`) of a
    /// profile in the shared credentials file (`AWS_SHARED_CREDENTIALS_FILE`, else
    /// `~/.aws/credentials`, section `[name]`) or the config file (`AWS_CONFIG_FILE`, else
    /// `~/.aws/config`, section `[profile name]`, or `[default]`); the credentials file wins.
    /// `None` when neither file gives the profile both keys. Profiles that get their keys
    /// elsewhere (SSO, `credential_process`, an assumed role) are not followed: use the AWS SDK
    /// to get keys for them and pass them with [`AwsCredentials::new`].
    pub fn from_profile(name: &str) -> Option<Self> {
        let files = SharedFiles::read();
        Self::from_profile_files(files.credentials.as_deref(), files.config.as_deref(), name)
    }

    /// [`from_profile`](Self::from_profile) on the texts of the two files.
    pub(crate) fn from_profile_files(
        credentials: Option<&str>,
        config: Option<&str>,
        name: &str,
    ) -> Option<Self> {
        let profile = profile_of(credentials, config, name);
        let id = profile.get("aws_access_key_id")?;
        let secret = profile.get("aws_secret_access_key")?;
        let mut found = Self::new(id.clone(), secret.clone());
        found.session_token = profile.get("aws_session_token").map(Secret::new);
        Some(found)
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

/// The profile to read: `AWS_PROFILE`, else `default`.
fn profile_name() -> String {
    env_var("AWS_PROFILE").unwrap_or_else(|| "default".to_owned())
}

/// The texts of the shared credentials and config files, where they exist.
struct SharedFiles {
    credentials: Option<String>,
    config: Option<String>,
}

impl SharedFiles {
    fn read() -> Self {
        let home = env_var("HOME");
        let path = |variable: &str, file: &str| {
            env_var(variable).or_else(|| home.as_ref().map(|h| format!("{h}/.aws/{file}")))
        };
        let read = |path: Option<String>| path.and_then(|p| std::fs::read_to_string(p).ok());
        Self {
            credentials: read(path("AWS_SHARED_CREDENTIALS_FILE", "credentials")),
            config: read(path("AWS_CONFIG_FILE", "config")),
        }
    }
}

/// The keys of profile `name`: the config file's `[profile name]` (or `[default]`), overridden
/// by the credentials file's `[name]`.
fn profile_of(
    credentials: Option<&str>,
    config: Option<&str>,
    name: &str,
) -> std::collections::BTreeMap<String, String> {
    let mut keys = std::collections::BTreeMap::new();
    if let Some(config) = config {
        let section = if name == "default" {
            "default".to_owned()
        } else {
            format!("profile {name}")
        };
        keys.extend(section_of(config, &section));
    }
    if let Some(credentials) = credentials {
        keys.extend(section_of(credentials, name));
    }
    keys
}

/// The `key = value` lines of one `[section]` of an AWS profile file (the INI form the AWS
/// CLI writes: `#` and `;` comments, indented lines continuing a nested key, skipped here).
/// Written here because the only crate that reads these files is the AWS SDK's own
/// configuration loader, with the SDK's runtime behind it.
fn section_of(text: &str, wanted: &str) -> Vec<(String, String)> {
    let mut inside = false;
    let mut keys = Vec::new();
    for line in text.lines() {
        if line.starts_with([' ', '\t']) {
            continue;
        }
        let line = line.trim();
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            inside = section.split_whitespace().collect::<Vec<_>>().join(" ") == wanted;
            continue;
        }
        if inside && let Some((key, value)) = line.split_once('=') {
            let value = value.trim();
            if !value.is_empty() {
                keys.push((key.trim().to_ascii_lowercase(), value.to_owned()));
            }
        }
    }
    keys
}

fn endpoint(region: &str) -> String {
    format!("https://bedrock-runtime.{region}.amazonaws.com")
}

impl BedrockConfig {
    /// Bedrock's Converse API for a model id or inference profile
    /// (`us.amazon.nova-2-lite-v1:0`, `anthropic.claude-sonnet-4-5-20250929-v1:0`, an ARN), in
    /// the region of `AWS_REGION` (else `AWS_DEFAULT_REGION`, else the `region` of the profile
    /// `AWS_PROFILE` in `~/.aws/config`, else `us-east-1`). Requests are signed with SigV4 using
    /// the credentials of the AWS environment variables or that profile's static keys
    /// ([`AwsCredentials::from_env`]); a Bedrock API key in `AWS_BEARER_TOKEN_BEDROCK` is sent
    /// as a bearer token instead when no credentials are set.
    pub fn new(model: impl Into<String>) -> Self {
        let region = env_var("AWS_REGION")
            .or_else(|| env_var("AWS_DEFAULT_REGION"))
            .or_else(|| {
                let files = SharedFiles::read();
                profile_of(None, files.config.as_deref(), &profile_name()).remove("region")
            })
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

#[cfg(test)]
mod tests {
    use super::*;

    const CREDENTIALS: &str = "\
# written by aws configure
[default]
aws_access_key_id = AKIDDEFAULT
aws_secret_access_key = default-secret

[work]
aws_access_key_id=AKIDWORK
aws_secret_access_key=work-secret
aws_session_token = work-token
; a comment
";

    const CONFIG: &str = "\
[default]
region = eu-west-3

[profile   work]
region = us-west-2
s3 =
    max_concurrent_requests = 20
[profile static]
aws_access_key_id = AKIDCONFIG
aws_secret_access_key = config-secret
[profile sso]
sso_session = corp
";

    #[test]
    fn profiles_come_from_the_credentials_file_then_the_config_file() {
        let default =
            AwsCredentials::from_profile_files(Some(CREDENTIALS), Some(CONFIG), "default").unwrap();
        assert_eq!(default.access_key_id(), "AKIDDEFAULT");
        assert_eq!(default.secret_access_key.expose(), "default-secret");
        assert!(default.session_token.is_none());
        let work =
            AwsCredentials::from_profile_files(Some(CREDENTIALS), Some(CONFIG), "work").unwrap();
        assert_eq!(work.access_key_id(), "AKIDWORK");
        assert_eq!(
            work.session_token.as_ref().map(Secret::expose),
            Some("work-token")
        );
        let from_config =
            AwsCredentials::from_profile_files(Some(CREDENTIALS), Some(CONFIG), "static").unwrap();
        assert_eq!(from_config.access_key_id(), "AKIDCONFIG");
        assert!(
            AwsCredentials::from_profile_files(Some(CREDENTIALS), Some(CONFIG), "sso").is_none()
        );
        assert!(AwsCredentials::from_profile_files(None, None, "default").is_none());
        assert_eq!(
            profile_of(None, Some(CONFIG), "work")
                .get("region")
                .map(String::as_str),
            Some("us-west-2")
        );
        assert_eq!(
            profile_of(None, Some(CONFIG), "default")
                .get("region")
                .map(String::as_str),
            Some("eu-west-3")
        );
        assert!(!profile_of(None, Some(CONFIG), "work").contains_key("max_concurrent_requests"));
    }

    #[test]
    fn a_broken_profile_file_finds_nothing_and_does_not_panic() {
        for text in [
            "[",
            "]",
            "[default",
            "=",
            "[default]\n=\n= x\nkey",
            "\u{feff}[default]\nx=y",
        ] {
            assert!(
                AwsCredentials::from_profile_files(Some(text), Some(text), "default").is_none()
            );
        }
    }
}
