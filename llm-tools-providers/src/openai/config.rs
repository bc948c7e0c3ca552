//! [`OpenAiConfig`]: model, endpoint, key, headers, timeouts, retries, and the presets for the
//! OpenAI-compatible endpoints with their quirks.

use std::sync::Arc;
use std::time::Duration;

use crate::http::{Auth, HttpSettings, RetryInfo, RetryPolicy};
use crate::record::Recorder;

/// Differences between OpenAI-compatible endpoints that change what we send.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Quirks {
    /// The `tool_choice` value for "call at least one tool" (`required`; Mistral says `any`).
    pub required_choice: &'static str,
    /// Tool-call ids must be exactly 9 ASCII letters or digits (Mistral); other ids in the
    /// history are mapped to such ids deterministically.
    pub nine_char_call_ids: bool,
    /// Ask for token counts at the end of a stream (`stream_options.include_usage`).
    pub stream_usage: bool,
    /// The endpoint honours `strict` tool schemas.
    pub strict_tools: bool,
}

impl Default for Quirks {
    fn default() -> Self {
        Self {
            required_choice: "required",
            nine_char_call_ids: false,
            stream_usage: true,
            strict_tools: true,
        }
    }
}

/// The configuration of an OpenAI (or OpenAI-compatible) provider.
///
/// The constructors are presets: [`OpenAiConfig::openai`] for api.openai.com (key from
/// `OPENAI_API_KEY`), and one per compatible endpoint with its base URL, key variable and
/// quirks. Everything can be changed afterwards.
///
/// ```
/// use std::time::Duration;
/// use llm_tools_providers::openai::{OpenAiConfig, OpenAiChat, OpenAiResponses};
///
/// let config = OpenAiConfig::openai("gpt-5-nano")
///     .with_api_key("sk-test")
///     .with_organization("org_123")
///     .with_timeout(Duration::from_secs(120));
/// let provider = OpenAiResponses::new(config).unwrap();
///
/// let local = OpenAiChat::new(OpenAiConfig::ollama("qwen3")).unwrap();
/// # let _ = (provider, local);
/// ```
#[derive(Clone, Debug)]
pub struct OpenAiConfig {
    pub(crate) model: String,
    pub(crate) http: HttpSettings,
    pub(crate) key_env: Option<&'static str>,
    pub(crate) key_required: bool,
    pub(crate) strict: bool,
    pub(crate) store: bool,
    pub(crate) quirks: Quirks,
}

fn env_key(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|k| !k.trim().is_empty())
}

impl OpenAiConfig {
    fn preset(
        name: &str,
        model: &str,
        base_url: &str,
        key_env: Option<&'static str>,
        key_required: bool,
    ) -> Self {
        let mut http = HttpSettings::new(name, base_url);
        if let Some(var) = key_env {
            http.api_key = env_key(var);
            http.key_placeholder = format!("<{var}>");
        }
        Self {
            model: model.to_owned(),
            http,
            key_env,
            key_required,
            strict: true,
            store: false,
            quirks: Quirks::default(),
        }
    }

    /// api.openai.com, key from `OPENAI_API_KEY`. Strict tool schemas where they allow it.
    pub fn openai(model: impl AsRef<str>) -> Self {
        let mut c = Self::preset(
            "openai",
            model.as_ref(),
            "https://api.openai.com/v1",
            Some("OPENAI_API_KEY"),
            true,
        );
        if let Some(org) = env_key("OPENAI_ORG_ID") {
            c = c.with_organization(org);
        }
        if let Some(project) = env_key("OPENAI_PROJECT_ID") {
            c = c.with_project(project);
        }
        c
    }

    /// DeepSeek (Chat Completions), key from `DEEPSEEK_API_KEY`. Strict schemas are a beta
    /// there, so tools are sent non-strictly; `reasoning_content` is sent back with tool calls.
    pub fn deepseek(model: impl AsRef<str>) -> Self {
        let mut c = Self::preset(
            "deepseek",
            model.as_ref(),
            "https://api.deepseek.com",
            Some("DEEPSEEK_API_KEY"),
            true,
        );
        c.quirks.strict_tools = false;
        c
    }

    /// OpenRouter (Chat Completions), key from `OPENROUTER_API_KEY`; models are named
    /// `vendor/model`. Tools are sent non-strictly (most routed models ignore `strict`).
    pub fn openrouter(model: impl AsRef<str>) -> Self {
        let mut c = Self::preset(
            "openrouter",
            model.as_ref(),
            "https://openrouter.ai/api/v1",
            Some("OPENROUTER_API_KEY"),
            true,
        );
        c.quirks.strict_tools = false;
        c
    }

    /// xAI (use with [`OpenAiResponses`](super::OpenAiResponses)), key from `XAI_API_KEY`.
    pub fn xai(model: impl AsRef<str>) -> Self {
        Self::preset(
            "xai",
            model.as_ref(),
            "https://api.x.ai/v1",
            Some("XAI_API_KEY"),
            true,
        )
    }

    /// Mistral (Chat Completions), key from `MISTRAL_API_KEY`: tool-call ids of exactly 9
    /// letters and digits, `any` for a required tool call, non-strict schemas.
    pub fn mistral(model: impl AsRef<str>) -> Self {
        let mut c = Self::preset(
            "mistral",
            model.as_ref(),
            "https://api.mistral.ai/v1",
            Some("MISTRAL_API_KEY"),
            true,
        );
        c.quirks.required_choice = "any";
        c.quirks.nine_char_call_ids = true;
        c.quirks.strict_tools = false;
        c
    }

    /// Azure OpenAI: `endpoint` is `https://<resource>.openai.azure.com`, `deployment` the
    /// deployment name (also used as the model). The key goes in the `api-key` header (from
    /// `AZURE_OPENAI_API_KEY`) and `api-version` in the query (from `OPENAI_API_VERSION`, else
    /// `2024-10-21`).
    pub fn azure(endpoint: impl AsRef<str>, deployment: impl AsRef<str>) -> Self {
        let base = format!(
            "{}/openai/deployments/{}",
            endpoint.as_ref().trim_end_matches('/'),
            deployment.as_ref()
        );
        let mut c = Self::preset(
            "azure",
            deployment.as_ref(),
            &base,
            Some("AZURE_OPENAI_API_KEY"),
            true,
        );
        c.http.auth = Auth::Header("api-key".into());
        let version = env_key("OPENAI_API_VERSION").unwrap_or_else(|| "2024-10-21".into());
        c.http.query.push(("api-version".into(), version));
        c
    }

    /// Ollama's OpenAI-compatible API at `http://localhost:11434/v1` (or `OLLAMA_API_BASE`,
    /// without `/v1`); no key. Tools are sent non-strictly.
    pub fn ollama(model: impl AsRef<str>) -> Self {
        let base = env_key("OLLAMA_API_BASE")
            .map(|b| format!("{}/v1", b.trim_end_matches('/').trim_end_matches("/v1")))
            .unwrap_or_else(|| "http://localhost:11434/v1".into());
        let mut c = Self::preset("ollama", model.as_ref(), &base, None, false);
        c.quirks.strict_tools = false;
        c
    }

    /// Any OpenAI-compatible server (vLLM, llama.cpp's server, LM Studio, …) at `base_url`
    /// (ending in `/v1`); no key unless [`with_api_key`](Self::with_api_key) sets one. Tools are
    /// sent non-strictly unless [`with_strict`](Self::with_strict) says otherwise.
    pub fn compatible(base_url: impl AsRef<str>, model: impl AsRef<str>) -> Self {
        let mut c = Self::preset(
            "openai-compatible",
            model.as_ref(),
            base_url.as_ref(),
            None,
            false,
        );
        c.quirks.strict_tools = false;
        c
    }

    /// Sets the model.
    #[must_use]
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self
    }

    /// Sets the base URL (for a proxy, or a replay server in tests).
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

    /// Sets the `OpenAI-Organization` header.
    #[must_use]
    pub fn with_organization(self, org: impl Into<String>) -> Self {
        self.with_header("OpenAI-Organization", org)
    }

    /// Sets the `OpenAI-Project` header.
    #[must_use]
    pub fn with_project(self, project: impl Into<String>) -> Self {
        self.with_header("OpenAI-Project", project)
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

    /// Adds a query parameter to every URL.
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

    /// Sets the retry policy.
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

    /// Records every exchange into `recorder` (keys replaced by placeholders).
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

    /// Whether tool schemas are sent strictly where they allow it (default: on for OpenAI and
    /// xAI, off for the other compatible endpoints).
    #[must_use]
    pub fn with_strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self.quirks.strict_tools = strict;
        self
    }

    /// Responses only: whether the provider stores responses (default `false`: the
    /// conversation is sent whole each time, reasoning items included as encrypted content).
    #[must_use]
    pub fn with_store(mut self, store: bool) -> Self {
        self.store = store;
        self
    }

    /// Replaces the endpoint's quirks.
    #[must_use]
    pub fn with_quirks(mut self, quirks: Quirks) -> Self {
        self.quirks = quirks;
        self
    }

    /// The model.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The endpoint's name (`openai`, `mistral`, …), used in errors.
    pub fn name(&self) -> &str {
        &self.http.name
    }

    /// The base URL.
    pub fn base_url(&self) -> &str {
        &self.http.base_url
    }

    /// The quirks.
    pub fn quirks(&self) -> &Quirks {
        &self.quirks
    }

    pub(crate) fn strict_tools(&self) -> bool {
        self.strict && self.quirks.strict_tools
    }

    pub(crate) fn check_key(&self) -> Result<(), llm_tools_core::Error> {
        if self.key_required && self.http.api_key.is_none() {
            let hint = match self.key_env {
                Some(var) => format!("set {var} or call `with_api_key`"),
                None => "call `with_api_key`".into(),
            };
            return Err(llm_tools_core::Error::InvalidConfig(format!(
                "{}: no API key; {hint}",
                self.http.name
            )));
        }
        Ok(())
    }
}
