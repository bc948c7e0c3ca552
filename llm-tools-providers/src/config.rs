//! [`ProviderConfig`]: what configures every provider, whatever its protocol: the model, the
//! endpoint, the API key, headers, timeouts, retries, recording and the HTTP client. Each
//! protocol adds its own options and presets: `OpenAiConfig`, `AnthropicConfig` and
//! `GeminiConfig` are this type with their protocol's options.

use std::sync::Arc;
use std::time::Duration;

use crate::http::{HttpClient, HttpSettings, RetryInfo, RetryPolicy, Secret};
use crate::record::Recorder;

/// The configuration of a provider: the settings every protocol shares, and `O`, the options
/// of one protocol (`OpenAiOptions`, `AnthropicOptions`, `GeminiOptions`).
///
/// The protocols' presets build it (`OpenAiConfig::openai`, `AnthropicConfig::new`,
/// `GeminiConfig::new`); the methods here change what every protocol has.
///
/// ```
/// # #[cfg(feature = "openai")] {
/// use std::time::Duration;
/// use llm_tools_providers::http::RetryPolicy;
/// use llm_tools_providers::openai::OpenAiConfig;
///
/// let config = OpenAiConfig::openai("gpt-5-nano")
///     .with_api_key("sk-test")
///     .with_header("X-Team", "search")
///     .with_timeout(Duration::from_secs(120))
///     .with_retry(RetryPolicy::default().with_max_retries(5));
/// assert_eq!(config.model(), "gpt-5-nano");
/// assert_eq!(config.base_url(), "https://api.openai.com/v1");
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct ProviderConfig<O> {
    pub(crate) model: String,
    pub(crate) http: HttpSettings,
    /// A prefix dropped from model names (`models/` on Gemini).
    model_prefix: Option<&'static str>,
    /// Whether requests need an API key.
    key_required: bool,
    /// Where the key usually comes from, as the missing-key error says it
    /// (`GEMINI_API_KEY (or GOOGLE_API_KEY)`).
    key_env: Option<&'static str>,
    /// The tokens of remote MCP servers, by name ([`with_mcp_token`](Self::with_mcp_token)).
    pub(crate) mcp_tokens: Vec<(String, Secret)>,
    pub(crate) options: O,
}

/// An environment variable's value, unless it is unset or blank.
pub(crate) fn env_var(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|v| !v.trim().is_empty())
}

impl<O> ProviderConfig<O> {
    /// A configuration for `model` on `http`'s endpoint, with a protocol's options. The key is
    /// not required until [`require_key`](Self::require_key) says so.
    pub(crate) fn with_options(model: impl Into<String>, http: HttpSettings, options: O) -> Self {
        Self {
            model: model.into(),
            http,
            model_prefix: None,
            key_required: false,
            key_env: None,
            mcp_tokens: Vec::new(),
            options,
        }
    }

    /// Requests need an API key; `env` says where it usually comes from.
    #[cfg_attr(
        not(any(feature = "openai", feature = "anthropic", feature = "gemini")),
        allow(dead_code)
    )]
    pub(crate) fn require_key(mut self, env: Option<&'static str>) -> Self {
        self.key_required = true;
        self.key_env = env;
        self
    }

    /// Model names may carry `prefix`, which is dropped.
    #[cfg_attr(not(feature = "gemini"), allow(dead_code))]
    pub(crate) fn drop_model_prefix(mut self, prefix: &'static str) -> Self {
        self.model_prefix = Some(prefix);
        let model = std::mem::take(&mut self.model);
        self.with_model(model)
    }

    /// Sets the model.
    #[must_use]
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        let model = model.into();
        self.model = match self.model_prefix {
            Some(prefix) => model.trim_start_matches(prefix).to_owned(),
            None => model,
        };
        self
    }

    /// Sets the base URL every path is appended to, up to the API version
    /// (`https://api.openai.com/v1`, `…/v1beta` on Gemini): for a proxy, or a replay server in
    /// tests.
    #[must_use]
    pub fn with_base_url(mut self, url: impl Into<String>) -> Self {
        self.http.base_url = url.into();
        self
    }

    /// Sets the API key.
    #[must_use]
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.http.api_key = Some(Secret::new(key));
        self
    }

    /// Adds a header to every request (replacing one of the same name).
    #[must_use]
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        let name = name.into();
        self.http
            .headers
            .retain(|(k, _)| !k.eq_ignore_ascii_case(&name));
        self.http.headers.push((name, value.into()));
        self
    }

    /// Adds a query parameter to every URL (replacing one of the same name).
    #[must_use]
    pub fn with_query(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        let name = name.into();
        self.http.query.retain(|(k, _)| *k != name);
        self.http.query.push((name, value.into()));
        self
    }

    /// Sets the request timeout (and the longest a stream may stay silent).
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.http.timeout = timeout;
        self
    }

    /// The token of the remote MCP server `server` ([`llm_tools_core::RemoteMcp`] of that
    /// name), for the protocols that connect to one (OpenAI Responses, Anthropic, Gemini): sent
    /// with the server's definition, kept out of the chat's state, logs and recordings.
    #[must_use]
    pub fn with_mcp_token(mut self, server: impl Into<String>, token: impl Into<Secret>) -> Self {
        let server = server.into();
        self.mcp_tokens.retain(|(name, _)| *name != server);
        self.mcp_tokens.push((server, token.into()));
        self
    }

    /// Sets the retry policy (rate limits, overload, server errors and connection failures are
    /// retried, after the delay the server asks for where it asks; see [`RetryPolicy`]).
    #[must_use]
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.http.retry = retry;
        self
    }

    /// Calls `observer` before every retry.
    #[must_use]
    pub fn with_on_retry(mut self, observer: impl Fn(&RetryInfo) + Send + Sync + 'static) -> Self {
        self.http.on_retry = Some(Arc::new(observer));
        self
    }

    /// Records every exchange into `recorder`, the key replaced by its placeholder
    /// (`<OPENAI_API_KEY>`, `<ANTHROPIC_API_KEY>`, …).
    #[must_use]
    pub fn with_recorder(mut self, recorder: Recorder) -> Self {
        self.http.recorder = Some(recorder);
        self
    }

    /// Uses this HTTP client (to share a connection pool).
    #[must_use]
    pub fn with_http_client(mut self, client: reqwest::Client) -> Self {
        self.http.client = Some(client);
        self
    }

    /// The model.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The base URL.
    pub fn base_url(&self) -> &str {
        &self.http.base_url
    }

    /// The endpoint's name (`openai`, `mistral`, `anthropic`, `gemini`, …), used in errors.
    pub fn name(&self) -> &str {
        &self.http.name
    }

    /// The client for `settings` (these settings, with what the protocol adds); a missing API
    /// key where the endpoint needs one, or an invalid header, is an error before any request.
    pub(crate) fn client(
        &self,
        settings: HttpSettings,
    ) -> Result<HttpClient, llm_tools_core::Error> {
        if self.key_required && self.http.api_key.is_none() {
            let hint = match self.key_env {
                Some(var) => format!("set {var} or call `with_api_key`"),
                None => "call `with_api_key`".into(),
            };
            return Err(llm_tools_core::ConfigError::MissingCredentials {
                provider: self.http.name.to_string(),
                what: "API key",
                hint,
            }
            .into());
        }
        Ok(HttpClient::new(settings)?)
    }
}
