//! Configuring Ollama's native API: the server (`OLLAMA_HOST`), thinking, how long the model
//! stays loaded, and the model's runtime options.

use serde_json::{Map, Value};

use crate::config::{ProviderConfig, env_var};
use crate::http::HttpSettings;

/// The configuration of an [`Ollama`](super::Ollama) provider.
///
/// ```
/// use llm_tools_providers::ollama::OllamaConfig;
/// use serde_json::json;
///
/// let config = OllamaConfig::new("qwen3")
///     .with_think(true)
///     .with_keep_alive("10m")
///     .with_option("temperature", json!(0.2))
///     .with_option("num_ctx", json!(8192));
/// assert_eq!(config.model(), "qwen3");
/// ```
pub type OllamaConfig = ProviderConfig<OllamaOptions>;

/// Ollama's own options.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct OllamaOptions {
    pub(crate) think: Option<Value>,
    pub(crate) keep_alive: Option<Value>,
    pub(crate) options: Map<String, Value>,
}

/// The server's base URL: `OLLAMA_HOST` (`host:port` or a URL), else the local default.
fn base_url() -> String {
    match env_var("OLLAMA_HOST") {
        Some(host) if host.starts_with("http://") || host.starts_with("https://") => host,
        Some(host) => format!("http://{host}"),
        None => "http://localhost:11434".into(),
    }
}

impl OllamaConfig {
    /// Ollama's native API (`POST {base}/api/chat`) on `OLLAMA_HOST` (default
    /// `http://localhost:11434`); no key (set one with `with_api_key` for a server behind an
    /// authenticating proxy, or Ollama's cloud).
    pub fn new(model: impl Into<String>) -> Self {
        let mut http = HttpSettings::new("ollama", base_url());
        http.key_placeholder = "<OLLAMA_API_KEY>".into();
        http.api_key = env_var("OLLAMA_API_KEY").map(Into::into);
        http.error_format = super::errors::details;
        Self::with_options(model, http, OllamaOptions::default())
    }

    /// Whether the model thinks before answering (`think: true`), for models that can; its
    /// thinking comes back as reasoning.
    #[must_use]
    pub fn with_think(mut self, think: bool) -> Self {
        self.options.think = Some(Value::Bool(think));
        self
    }

    /// A thinking level (`"low"`, `"medium"`, `"high"`), for models that take one.
    #[must_use]
    pub fn with_think_level(mut self, level: impl Into<String>) -> Self {
        self.options.think = Some(Value::String(level.into()));
        self
    }

    /// How long the model stays loaded after a request (`"5m"`, `"1h"`, `"-1"` for ever).
    #[must_use]
    pub fn with_keep_alive(mut self, keep_alive: impl Into<String>) -> Self {
        self.options.keep_alive = Some(Value::String(keep_alive.into()));
        self
    }

    /// One of the model's runtime `options` (`temperature`, `num_ctx`, `seed`, `top_p`, …).
    #[must_use]
    pub fn with_option(mut self, name: impl Into<String>, value: Value) -> Self {
        self.options.options.insert(name.into(), value);
        self
    }
}
