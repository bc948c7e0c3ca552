//! [`AnthropicConfig`]: model, endpoint, key, version and beta headers, output budget, strict
//! tool use, the tool-search variant, timeouts, retries.

use std::sync::Arc;
use std::time::Duration;

use crate::http::{Auth, HttpSettings, RetryInfo, RetryPolicy};
use crate::record::Recorder;

/// The `anthropic-version` header sent by default.
pub const DEFAULT_VERSION: &str = "2023-06-01";

/// The `max_tokens` sent by default: the most output one answer may have.
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// Which of Anthropic's server-side tool searches finds deferred tools.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolSearch {
    /// `tool_search_tool_bm25_20251119`: the model searches in natural language (the default).
    #[default]
    Bm25,
    /// `tool_search_tool_regex_20251119`: the model searches with Python regular expressions.
    Regex,
}

impl ToolSearch {
    /// The entry added to `tools` when a request has deferred tools.
    pub(crate) fn entry(self) -> &'static str {
        match self {
            ToolSearch::Bm25 => {
                r#"{"type":"tool_search_tool_bm25_20251119","name":"tool_search_tool_bm25"}"#
            }
            ToolSearch::Regex => {
                r#"{"type":"tool_search_tool_regex_20251119","name":"tool_search_tool_regex"}"#
            }
        }
    }
}

/// The configuration of an [`Anthropic`](super::Anthropic) provider.
///
/// [`AnthropicConfig::new`] talks to api.anthropic.com with the key from `ANTHROPIC_API_KEY`;
/// everything can be changed afterwards.
///
/// ```
/// use std::time::Duration;
/// use llm_tools_providers::anthropic::{Anthropic, AnthropicConfig};
///
/// let config = AnthropicConfig::new("claude-haiku-4-5")
///     .with_api_key("sk-ant-test")
///     .with_max_tokens(4096)
///     .with_strict(true)
///     .with_beta("fine-grained-tool-streaming-2025-05-14")
///     .with_timeout(Duration::from_secs(120));
/// let provider = Anthropic::new(config).unwrap();
/// # let _ = provider;
/// ```
#[derive(Clone, Debug)]
pub struct AnthropicConfig {
    pub(crate) model: String,
    pub(crate) http: HttpSettings,
    pub(crate) version: String,
    pub(crate) betas: Vec<String>,
    pub(crate) max_tokens: u32,
    pub(crate) strict: bool,
    pub(crate) tool_search: ToolSearch,
}

fn env_key(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|k| !k.trim().is_empty())
}

impl AnthropicConfig {
    /// api.anthropic.com, key from `ANTHROPIC_API_KEY` (and the host from `ANTHROPIC_BASE_URL`,
    /// as Anthropic's SDKs read it, when set), `anthropic-version: 2023-06-01`,
    /// [`DEFAULT_MAX_TOKENS`], non-strict tools.
    pub fn new(model: impl Into<String>) -> Self {
        let base = env_key("ANTHROPIC_BASE_URL")
            .map(|b| format!("{}/v1", b.trim_end_matches('/').trim_end_matches("/v1")))
            .unwrap_or_else(|| "https://api.anthropic.com/v1".to_owned());
        let mut http = HttpSettings::new("anthropic", base);
        http.api_key = env_key("ANTHROPIC_API_KEY");
        http.key_placeholder = "<ANTHROPIC_API_KEY>".into();
        http.auth = Auth::Header("x-api-key".into());
        Self {
            model: model.into(),
            http,
            version: DEFAULT_VERSION.to_owned(),
            betas: Vec::new(),
            max_tokens: DEFAULT_MAX_TOKENS,
            strict: false,
            tool_search: ToolSearch::default(),
        }
    }

    /// Sets the model.
    #[must_use]
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self
    }

    /// Sets the base URL, up to and including `/v1` (for a proxy, or a replay server in tests).
    #[must_use]
    pub fn with_base_url(mut self, url: impl Into<String>) -> Self {
        self.http.base_url = url.into();
        self
    }

    /// Sets the API key.
    #[must_use]
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.http.api_key = Some(key.into());
        self
    }

    /// Sets the `anthropic-version` header.
    #[must_use]
    pub fn with_version(mut self, version: impl Into<String>) -> Self {
        self.version = version.into();
        self
    }

    /// Adds a beta to the `anthropic-beta` header (sent when there is at least one).
    #[must_use]
    pub fn with_beta(mut self, beta: impl Into<String>) -> Self {
        let beta = beta.into();
        if !self.betas.contains(&beta) {
            self.betas.push(beta);
        }
        self
    }

    /// Adds a header to every request.
    #[must_use]
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        let name = name.into();
        self.http
            .headers
            .retain(|(k, _)| !k.eq_ignore_ascii_case(&name));
        self.http.headers.push((name, value.into()));
        self
    }

    /// Sets `max_tokens`, the most output one answer may have (thinking included).
    #[must_use]
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// Whether tools are sent with `strict: true` where their schema allows it, so the model's
    /// inputs are guaranteed to match (default `false`). Schemas that cannot be strict are sent
    /// as they are; see [`crate::schema::anthropic::strict`].
    #[must_use]
    pub fn with_strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// Which server-side search finds deferred tools (default [`ToolSearch::Bm25`]).
    #[must_use]
    pub fn with_tool_search(mut self, search: ToolSearch) -> Self {
        self.tool_search = search;
        self
    }

    /// Sets the request timeout (and the longest a stream may stay silent).
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.http.timeout = timeout;
        self
    }

    /// Sets the retry policy (429, 529 "overloaded", 5xx and connection failures are retried).
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

    /// Records every exchange into `recorder` (the key replaced by `<ANTHROPIC_API_KEY>`).
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

    /// The name used in errors (`anthropic`).
    pub fn name(&self) -> &str {
        &self.http.name
    }

    /// The HTTP settings with the version and beta headers in place.
    pub(crate) fn http_settings(&self) -> HttpSettings {
        let mut http = self.http.clone();
        let has = |name: &str, http: &HttpSettings| {
            http.headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case(name))
        };
        if !has("anthropic-version", &http) {
            http.headers
                .push(("anthropic-version".into(), self.version.clone()));
        }
        if !self.betas.is_empty() && !has("anthropic-beta", &http) {
            http.headers
                .push(("anthropic-beta".into(), self.betas.join(",")));
        }
        http
    }

    pub(crate) fn check_key(&self) -> Result<(), llm_tools_core::Error> {
        if self.http.api_key.is_none() {
            return Err(llm_tools_core::Error::InvalidConfig(
                "anthropic: no API key; set ANTHROPIC_API_KEY or call `with_api_key`".into(),
            ));
        }
        Ok(())
    }
}
