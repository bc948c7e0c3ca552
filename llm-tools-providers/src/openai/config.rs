//! [`OpenAiConfig`]: the options of OpenAI's protocols, and the presets for the
//! OpenAI-compatible endpoints with their quirks.

use crate::config::{ProviderConfig, env_var};
use crate::http::{Auth, HttpSettings};

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
    /// A required call with one tool offered is sent as that tool's named choice (Mistral,
    /// whose `any` lets some models answer in text anyway).
    pub single_tool_by_name: bool,
    /// An assistant message goes back with the reasoning its answer gave in a
    /// `reasoning_content` or `reasoning` field, under that field (DeepSeek asks for it within
    /// a tool loop). Off for Mistral, which refuses a message with a field it does not know.
    pub echo_reasoning: bool,
    /// The field that holds an answer to at most so many output tokens
    /// ([`Provider::output_limit`](llm_tools_core::Provider::output_limit)):
    /// `max_completion_tokens` at OpenAI, Azure OpenAI and xAI, which refuse or deprecate
    /// `max_tokens` for reasoning models; `max_tokens` at the other endpoints, which know no
    /// other.
    pub max_tokens_field: &'static str,
}

impl Default for Quirks {
    fn default() -> Self {
        Self {
            required_choice: "required",
            nine_char_call_ids: false,
            stream_usage: true,
            strict_tools: true,
            single_tool_by_name: false,
            echo_reasoning: true,
            max_tokens_field: "max_completion_tokens",
        }
    }
}

/// The configuration of an OpenAI (or OpenAI-compatible) provider: the settings every provider
/// has ([`ProviderConfig`]) with [`OpenAiOptions`].
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
pub type OpenAiConfig = ProviderConfig<OpenAiOptions>;

/// What only OpenAI's protocols are configured with: strict tool schemas, stored responses and
/// the endpoint's [`Quirks`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct OpenAiOptions {
    pub(crate) strict: bool,
    pub(crate) store: bool,
    pub(crate) quirks: Quirks,
    /// `None`: by model family (see [`OpenAiConfig::native_tool_search`]).
    pub(crate) tool_search: Option<bool>,
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
        http.error_format = super::errors::details;
        if let Some(var) = key_env {
            http.api_key = env_var(var).map(Into::into);
            http.key_placeholder = format!("<{var}>");
        }
        let options = OpenAiOptions {
            strict: true,
            store: false,
            quirks: Quirks::default(),
            tool_search: None,
        };
        let config = Self::with_options(model, http, options);
        if key_required {
            config.require_key(key_env)
        } else {
            config
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
        if let Some(org) = env_var("OPENAI_ORG_ID") {
            c = c.with_organization(org);
        }
        if let Some(project) = env_var("OPENAI_PROJECT_ID") {
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
        c.options.quirks.strict_tools = false;
        c.options.quirks.max_tokens_field = "max_tokens";
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
        c.options.quirks.strict_tools = false;
        c.options.quirks.max_tokens_field = "max_tokens";
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
    /// letters and digits, `any` for a required tool call, non-strict schemas, no reasoning
    /// field sent back.
    pub fn mistral(model: impl AsRef<str>) -> Self {
        let mut c = Self::preset(
            "mistral",
            model.as_ref(),
            "https://api.mistral.ai/v1",
            Some("MISTRAL_API_KEY"),
            true,
        );
        c.options.quirks.required_choice = "any";
        c.options.quirks.nine_char_call_ids = true;
        c.options.quirks.strict_tools = false;
        c.options.quirks.single_tool_by_name = true;
        c.options.quirks.echo_reasoning = false;
        c.options.quirks.max_tokens_field = "max_tokens";
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
        let version = env_var("OPENAI_API_VERSION").unwrap_or_else(|| "2024-10-21".into());
        c.http.query.push(("api-version".into(), version));
        c
    }

    /// Azure AI Foundry's model inference API: `endpoint` is
    /// `https://<resource>.services.ai.azure.com` (or a `…/models` URL), `model` the
    /// deployment's model name. Requests go to `{endpoint}/models/chat/completions` with
    /// `api-version` in the query (from `AZURE_AI_API_VERSION`, else `2024-05-01-preview`) and
    /// the key in the `api-key` header (from `AZURE_AI_API_KEY`, else `AZURE_INFERENCE_CREDENTIAL`).
    /// Tools are sent non-strictly (the models behind it differ).
    ///
    /// ```
    /// use llm_tools_providers::openai::OpenAiConfig;
    ///
    /// let c = OpenAiConfig::azure_foundry("https://my-res.services.ai.azure.com/", "Mistral-Large-2411")
    ///     .with_api_key("k");
    /// assert_eq!(c.base_url(), "https://my-res.services.ai.azure.com/models");
    /// assert_eq!(c.model(), "Mistral-Large-2411");
    /// ```
    pub fn azure_foundry(endpoint: impl AsRef<str>, model: impl AsRef<str>) -> Self {
        let endpoint = endpoint.as_ref().trim_end_matches('/');
        let base = if endpoint.ends_with("/models") {
            endpoint.to_owned()
        } else {
            format!("{endpoint}/models")
        };
        let mut c = Self::preset(
            "azure-foundry",
            model.as_ref(),
            &base,
            Some("AZURE_AI_API_KEY"),
            true,
        );
        if c.http.api_key.is_none() {
            c.http.api_key = env_var("AZURE_INFERENCE_CREDENTIAL").map(Into::into);
        }
        c.http.auth = Auth::Header("api-key".into());
        let version =
            env_var("AZURE_AI_API_VERSION").unwrap_or_else(|| "2024-05-01-preview".into());
        c.http.query.push(("api-version".into(), version));
        c.options.quirks.strict_tools = false;
        c.options.quirks.max_tokens_field = "max_tokens";
        c
    }

    /// Ollama's OpenAI-compatible API at `http://localhost:11434/v1` (or `OLLAMA_API_BASE`,
    /// without `/v1`); no key. Tools are sent non-strictly.
    pub fn ollama(model: impl AsRef<str>) -> Self {
        let base = env_var("OLLAMA_API_BASE")
            .map(|b| format!("{}/v1", b.trim_end_matches('/').trim_end_matches("/v1")))
            .unwrap_or_else(|| "http://localhost:11434/v1".into());
        let mut c = Self::preset("ollama", model.as_ref(), &base, None, false);
        c.options.quirks.strict_tools = false;
        c.options.quirks.max_tokens_field = "max_tokens";
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
        c.options.quirks.strict_tools = false;
        c.options.quirks.max_tokens_field = "max_tokens";
        c
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

    /// Whether tool schemas are sent strictly where they allow it (default: on for OpenAI and
    /// xAI, off for the other compatible endpoints).
    #[must_use]
    pub fn with_strict(mut self, strict: bool) -> Self {
        self.options.strict = strict;
        self.options.quirks.strict_tools = strict;
        self
    }

    /// Responses only: whether the provider stores responses (default `false`: the
    /// conversation is sent whole each time, reasoning items included as encrypted content).
    #[must_use]
    pub fn with_store(mut self, store: bool) -> Self {
        self.options.store = store;
        self
    }

    /// Responses only: whether deferred tools (`#[tool(defer)]`) go to OpenAI's own
    /// `tool_search` (sent with `defer_loading: true` beside a `{"type": "tool_search"}` tool)
    /// instead of the chat's local search. Default: on for OpenAI's models that have it
    /// (`gpt-5.4` and later), off for every other model and endpoint.
    ///
    /// ```
    /// use llm_tools_providers::openai::OpenAiConfig;
    ///
    /// assert!(OpenAiConfig::openai("gpt-5.4-mini").native_tool_search());
    /// assert!(!OpenAiConfig::openai("gpt-5-nano").native_tool_search());
    /// assert!(OpenAiConfig::openai("gpt-5-nano").with_native_tool_search(true).native_tool_search());
    /// assert!(!OpenAiConfig::xai("grok-4.3").native_tool_search());
    /// ```
    #[must_use]
    pub fn with_native_tool_search(mut self, native: bool) -> Self {
        self.options.tool_search = Some(native);
        self
    }

    /// Whether deferred tools go to OpenAI's `tool_search` on Responses.
    pub fn native_tool_search(&self) -> bool {
        self.options
            .tool_search
            .unwrap_or_else(|| self.name() == "openai" && has_tool_search(self.model()))
    }

    /// Replaces the endpoint's quirks. A preset sets quirks of its own (Mistral's call ids and
    /// `max_tokens`, say), which [`Quirks::default`] does not have: change one from the
    /// preset's ([`quirks`](Self::quirks)) rather than starting from the default.
    ///
    /// ```
    /// use llm_tools_providers::openai::OpenAiConfig;
    ///
    /// let config = OpenAiConfig::mistral("mistral-large-latest");
    /// let mut quirks = config.quirks().clone();
    /// quirks.stream_usage = false;
    /// let config = config.with_quirks(quirks);
    /// assert_eq!(config.quirks().max_tokens_field, "max_tokens");
    /// ```
    #[must_use]
    pub fn with_quirks(mut self, quirks: Quirks) -> Self {
        self.options.quirks = quirks;
        self
    }

    /// The quirks.
    pub fn quirks(&self) -> &Quirks {
        &self.options.quirks
    }

    pub(crate) fn strict_tools(&self) -> bool {
        self.options.strict && self.options.quirks.strict_tools
    }
}

/// Whether an OpenAI model id names a family with `tool_search`: `gpt-5.4` and later
/// (`gpt-5.4-mini`, `gpt-5.5`, `gpt-6…`).
fn has_tool_search(model: &str) -> bool {
    let Some(version) = model.strip_prefix("gpt-") else {
        return false;
    };
    let mut numbers = version
        .split(|c: char| !c.is_ascii_digit())
        .map(|n| n.parse::<u32>().ok());
    let major = numbers.next().flatten().unwrap_or(0);
    let minor = if version.as_bytes().get(major.to_string().len()) == Some(&b'.') {
        numbers.next().flatten().unwrap_or(0)
    } else {
        0
    };
    major > 5 || (major == 5 && minor >= 4)
}
