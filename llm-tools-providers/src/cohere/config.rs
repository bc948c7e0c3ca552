//! Configuring Cohere's v2 chat: the key (`COHERE_API_KEY`), the endpoint, strict tools.

use crate::config::{ProviderConfig, env_var};
use crate::http::HttpSettings;

/// The configuration of a [`Cohere`](super::Cohere) provider.
///
/// ```
/// use llm_tools_providers::cohere::CohereConfig;
///
/// let config = CohereConfig::new("command-a-03-2025").with_api_key("test-key").with_strict_tools(true);
/// assert_eq!(config.base_url(), "https://api.cohere.com/v2");
/// ```
pub type CohereConfig = ProviderConfig<CohereOptions>;

/// Cohere's own options.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct CohereOptions {
    pub(crate) strict_tools: bool,
}

impl CohereConfig {
    /// Cohere's v2 chat API (`https://api.cohere.com/v2`), key from `COHERE_API_KEY` (else
    /// `CO_API_KEY`) as a bearer token.
    pub fn new(model: impl Into<String>) -> Self {
        let mut http = HttpSettings::new("cohere", "https://api.cohere.com/v2");
        http.api_key = env_var("COHERE_API_KEY")
            .or_else(|| env_var("CO_API_KEY"))
            .map(Into::into);
        http.key_placeholder = "<COHERE_API_KEY>".into();
        http.error_format = super::errors::details;
        Self::with_options(model, http, CohereOptions::default())
            .require_key(Some("COHERE_API_KEY"))
    }

    /// Whether calls must follow the tools' schemas exactly (`strict_tools`; Cohere then
    /// refuses schemas it cannot enforce, and wants at least one required parameter per tool).
    #[must_use]
    pub fn with_strict_tools(mut self, strict: bool) -> Self {
        self.options.strict_tools = strict;
        self
    }
}
