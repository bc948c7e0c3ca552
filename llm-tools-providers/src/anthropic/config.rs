//! [`AnthropicConfig`]: the options of the Messages protocol: version and beta headers, output
//! budget, strict tool use, the tool-search variant.

use crate::config::{ProviderConfig, env_var};
use crate::http::{Auth, HttpSettings};

/// The `anthropic-version` header sent by default.
pub const DEFAULT_VERSION: &str = "2023-06-01";

/// The `max_tokens` sent by default: the most output one answer may have.
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// How many times a turn the server paused (`pause_turn`) is continued by default.
pub const DEFAULT_PAUSE_TURN_CONTINUATIONS: u32 = 8;

/// The beta of Anthropic's MCP connector (remote MCP servers the API calls itself).
pub const MCP_CONNECTOR_BETA: &str = "mcp-client-2025-11-20";

/// The beta of Anthropic's web fetch tool (pages and PDFs at URLs the conversation names).
pub const WEB_FETCH_BETA: &str = "web-fetch-2025-09-10";

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

/// The configuration of an [`Anthropic`](super::Anthropic) provider: the settings every
/// provider has ([`ProviderConfig`]) with [`AnthropicOptions`].
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
pub type AnthropicConfig = ProviderConfig<AnthropicOptions>;

/// What only the Messages protocol is configured with: the version and beta headers, the
/// output budget, strict tool use and the tool-search variant.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct AnthropicOptions {
    pub(crate) version: String,
    pub(crate) betas: Vec<String>,
    pub(crate) max_tokens: u32,
    pub(crate) strict: bool,
    pub(crate) tool_search: ToolSearch,
    pub(crate) pause_turn_continuations: u32,
    /// `None`: by model family (see [`AnthropicConfig::native_structured_output`]).
    pub(crate) structured_output: Option<bool>,
}

impl AnthropicConfig {
    /// api.anthropic.com, key from `ANTHROPIC_API_KEY` (and the host from `ANTHROPIC_BASE_URL`,
    /// as Anthropic's SDKs read it, when set), `anthropic-version: 2023-06-01`,
    /// [`DEFAULT_MAX_TOKENS`], non-strict tools.
    pub fn new(model: impl Into<String>) -> Self {
        let base = env_var("ANTHROPIC_BASE_URL")
            .map(|b| format!("{}/v1", b.trim_end_matches('/').trim_end_matches("/v1")))
            .unwrap_or_else(|| "https://api.anthropic.com/v1".to_owned());
        let mut http = HttpSettings::new("anthropic", base);
        http.api_key = env_var("ANTHROPIC_API_KEY").map(Into::into);
        http.key_placeholder = "<ANTHROPIC_API_KEY>".into();
        http.auth = Auth::Header("x-api-key".into());
        http.error_format = super::errors::details;
        let options = AnthropicOptions {
            version: DEFAULT_VERSION.to_owned(),
            betas: Vec::new(),
            max_tokens: DEFAULT_MAX_TOKENS,
            strict: false,
            tool_search: ToolSearch::default(),
            pause_turn_continuations: DEFAULT_PAUSE_TURN_CONTINUATIONS,
            structured_output: None,
        };
        Self::with_options(model, http, options).require_key(Some("ANTHROPIC_API_KEY"))
    }

    /// Sets the `anthropic-version` header.
    #[must_use]
    pub fn with_version(mut self, version: impl Into<String>) -> Self {
        self.options.version = version.into();
        self
    }

    /// Whether structured output goes as `output_config.format` (`true`) or, for models
    /// without it, as a tool the model is made to call with the answer as its input
    /// (`false`); by default by model family (see [`native_structured_output`](Self::native_structured_output)).
    #[must_use]
    pub fn with_native_structured_output(mut self, native: bool) -> Self {
        self.options.structured_output = Some(native);
        self
    }

    /// Whether this configuration sends structured output as `output_config.format`: set with
    /// [`with_native_structured_output`](Self::with_native_structured_output), else true but
    /// for the models that predate it (Claude 3, Claude Sonnet 4 and Opus 4 / 4.1), which get
    /// the forced-tool form.
    ///
    /// ```
    /// use llm_tools_providers::anthropic::AnthropicConfig;
    ///
    /// assert!(AnthropicConfig::new("claude-haiku-4-5").native_structured_output());
    /// assert!(!AnthropicConfig::new("claude-3-5-haiku-latest").native_structured_output());
    /// assert!(!AnthropicConfig::new("claude-sonnet-4-20250514").native_structured_output());
    /// assert!(
    ///     AnthropicConfig::new("claude-3-7-sonnet-latest")
    ///         .with_native_structured_output(true)
    ///         .native_structured_output()
    /// );
    /// ```
    pub fn native_structured_output(&self) -> bool {
        const BEFORE: &[&str] = &[
            "claude-3",
            "claude-sonnet-4-0",
            "claude-sonnet-4-2025",
            "claude-opus-4-0",
            "claude-opus-4-1",
            "claude-opus-4-2025",
        ];
        self.options.structured_output.unwrap_or_else(|| {
            let model = self.model();
            !BEFORE.iter().any(|prefix| model.starts_with(prefix))
        })
    }

    /// Turns on Anthropic's MCP connector (the beta [`MCP_CONNECTOR_BETA`]), which a
    /// [`ProviderTool::RemoteMcp`](llm_tools_core::ProviderTool::RemoteMcp) needs.
    #[must_use]
    pub fn with_mcp_connector(self) -> Self {
        self.with_beta(MCP_CONNECTOR_BETA)
    }

    /// Turns on Anthropic's web fetch tool (the beta [`WEB_FETCH_BETA`]), which a
    /// [`ProviderTool::WebFetch`](llm_tools_core::ProviderTool::WebFetch) needs.
    #[must_use]
    pub fn with_web_fetch(self) -> Self {
        self.with_beta(WEB_FETCH_BETA)
    }

    /// Adds a beta to the `anthropic-beta` header (sent when there is at least one).
    #[must_use]
    pub fn with_beta(mut self, beta: impl Into<String>) -> Self {
        let beta = beta.into();
        if !self.options.betas.contains(&beta) {
            self.options.betas.push(beta);
        }
        self
    }

    /// Sets `max_tokens`, the most output one answer may have (thinking included).
    #[must_use]
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.options.max_tokens = max_tokens;
        self
    }

    /// Whether tools are sent with `strict: true` where their schema allows it, so the model's
    /// inputs are guaranteed to match (default `false`). Schemas that cannot be strict are sent
    /// as they are; see [`crate::schema::anthropic::strict`].
    #[must_use]
    pub fn with_strict(mut self, strict: bool) -> Self {
        self.options.strict = strict;
        self
    }

    /// Which server-side search finds deferred tools (default [`ToolSearch::Bm25`]).
    #[must_use]
    pub fn with_tool_search(mut self, search: ToolSearch) -> Self {
        self.options.tool_search = search;
        self
    }

    /// How many times an answer that stops with `pause_turn` (the server paused a long
    /// server-tool loop) is sent back to be continued, its segments merged into one message
    /// (default [`DEFAULT_PAUSE_TURN_CONTINUATIONS`]; `0` returns the paused answer as it is,
    /// with its `pause_turn` finish reason).
    #[must_use]
    pub fn with_pause_turn_continuations(mut self, continuations: u32) -> Self {
        self.options.pause_turn_continuations = continuations;
        self
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
                .push(("anthropic-version".into(), self.options.version.clone()));
        }
        if !self.options.betas.is_empty() && !has("anthropic-beta", &http) {
            http.headers
                .push(("anthropic-beta".into(), self.options.betas.join(",")));
        }
        http
    }
}
