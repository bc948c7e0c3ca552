//! [`GeminiConfig`]: model, endpoint, key, the schema field tools are sent in, timeouts,
//! retries.

use std::sync::Arc;
use std::time::Duration;

use crate::http::{Auth, HttpSettings, RetryInfo, RetryPolicy};
use crate::record::Recorder;

/// Which field of a function declaration carries the tool's schema.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum SchemaField {
    /// `parametersJsonSchema`: JSON Schema as it is (type arrays, `anyOf`, `$ref`,
    /// `additionalProperties`); the default. See [`crate::schema::gemini::json_schema`].
    #[default]
    JsonSchema,
    /// `parameters`: the older OpenAPI 3.0 subset, for models and endpoints that need it. See
    /// [`crate::schema::gemini::parameters`].
    Parameters,
}

/// The configuration of a [`Gemini`](super::Gemini) provider.
///
/// [`GeminiConfig::new`] talks to the Gemini API (`generativelanguage.googleapis.com`) with the
/// key from `GEMINI_API_KEY`, or `GOOGLE_API_KEY`; everything can be changed afterwards.
///
/// ```
/// use llm_tools_providers::gemini::{Gemini, GeminiConfig, SchemaField};
///
/// let config = GeminiConfig::new("gemini-2.5-flash")
///     .with_api_key("test-key")
///     .with_schema_field(SchemaField::Parameters);
/// let provider = Gemini::new(config).unwrap();
/// # let _ = provider;
/// ```
#[derive(Clone, Debug)]
pub struct GeminiConfig {
    pub(crate) model: String,
    pub(crate) http: HttpSettings,
    pub(crate) schema_field: SchemaField,
    pub(crate) response_parts: Option<bool>,
}

fn env_key(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|k| !k.trim().is_empty())
}

impl GeminiConfig {
    /// The Gemini API (`https://generativelanguage.googleapis.com/v1beta`), key from
    /// `GEMINI_API_KEY` (else `GOOGLE_API_KEY`) in the `x-goog-api-key` header, tools in
    /// `parametersJsonSchema`.
    pub fn new(model: impl Into<String>) -> Self {
        let mut http =
            HttpSettings::new("gemini", "https://generativelanguage.googleapis.com/v1beta");
        http.api_key = env_key("GEMINI_API_KEY").or_else(|| env_key("GOOGLE_API_KEY"));
        http.key_placeholder = "<GEMINI_API_KEY>".into();
        http.auth = Auth::Header("x-goog-api-key".into());
        let model: String = model.into();
        Self {
            model: model.trim_start_matches("models/").to_owned(),
            http,
            schema_field: SchemaField::default(),
            response_parts: None,
        }
    }

    /// Sets the model (`gemini-2.5-flash`; a `models/` prefix is dropped).
    #[must_use]
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        let model: String = model.into();
        self.model = model.trim_start_matches("models/").to_owned();
        self
    }

    /// Sets the base URL, up to the API version (`…/v1beta`; for a proxy, or a replay server in
    /// tests).
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

    /// Which field carries the tools' schemas (default [`SchemaField::JsonSchema`]).
    #[must_use]
    pub fn with_schema_field(mut self, field: SchemaField) -> Self {
        self.schema_field = field;
        self
    }

    /// Whether images and other binary attachments of tool results go inside the
    /// `functionResponse` (`parts`, which Gemini 3 and later accept) or beside it in the same
    /// message (older models reject `parts`). Default: inside for `gemini-3` and later models.
    #[must_use]
    pub fn with_function_response_parts(mut self, inside: bool) -> Self {
        self.response_parts = Some(inside);
        self
    }

    /// Sets the request timeout (and the longest a stream may stay silent).
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.http.timeout = timeout;
        self
    }

    /// Sets the retry policy (`RESOURCE_EXHAUSTED` is retried after its `retryDelay`, 5xx and
    /// connection failures with backoff).
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

    /// Records every exchange into `recorder` (the key replaced by `<GEMINI_API_KEY>`).
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

    /// The name used in errors (`gemini`).
    pub fn name(&self) -> &str {
        &self.http.name
    }

    /// The schema field.
    pub fn schema_field(&self) -> SchemaField {
        self.schema_field
    }

    /// Whether binary attachments of tool results go inside the `functionResponse`.
    pub(crate) fn function_response_parts(&self) -> bool {
        self.response_parts.unwrap_or_else(|| {
            let version = self.model.strip_prefix("gemini-").and_then(|rest| {
                let major: String = rest.chars().take_while(char::is_ascii_digit).collect();
                major.parse::<u32>().ok()
            });
            version.is_some_and(|v| v >= 3)
        })
    }

    pub(crate) fn check_key(&self) -> Result<(), llm_tools_core::Error> {
        if self.http.api_key.is_none() {
            return Err(llm_tools_core::Error::InvalidConfig(
                "gemini: no API key; set GEMINI_API_KEY (or GOOGLE_API_KEY) or call `with_api_key`"
                    .into(),
            ));
        }
        Ok(())
    }
}
