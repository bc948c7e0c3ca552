//! [`GeminiConfig`]: the options of the Gemini protocol: the schema field tools are sent in,
//! and where tool results' attachments go.

use crate::config::{ProviderConfig, env_var};
use crate::http::{Auth, HttpSettings};

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

/// The configuration of a [`Gemini`](super::Gemini) provider: the settings every provider has
/// ([`ProviderConfig`]) with [`GeminiOptions`].
///
/// [`GeminiConfig::new`] talks to the Gemini API (`generativelanguage.googleapis.com`) with the
/// key from `GEMINI_API_KEY`, or `GOOGLE_API_KEY`; everything can be changed afterwards. Model
/// names may start with `models/`, which is dropped.
///
/// ```
/// use llm_tools_providers::gemini::{Gemini, GeminiConfig, SchemaField};
///
/// let config = GeminiConfig::new("models/gemini-2.5-flash")
///     .with_api_key("test-key")
///     .with_schema_field(SchemaField::Parameters);
/// assert_eq!(config.model(), "gemini-2.5-flash");
/// let provider = Gemini::new(config).unwrap();
/// # let _ = provider;
/// ```
pub type GeminiConfig = ProviderConfig<GeminiOptions>;

/// What only Gemini is configured with: the schema field tools are sent in, and where binary
/// attachments of tool results go.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct GeminiOptions {
    pub(crate) schema_field: SchemaField,
    pub(crate) response_parts: Option<bool>,
}

impl GeminiConfig {
    /// The Gemini API (`https://generativelanguage.googleapis.com/v1beta`), key from
    /// `GEMINI_API_KEY` (else `GOOGLE_API_KEY`) in the `x-goog-api-key` header, tools in
    /// `parametersJsonSchema`.
    pub fn new(model: impl Into<String>) -> Self {
        let mut http =
            HttpSettings::new("gemini", "https://generativelanguage.googleapis.com/v1beta");
        http.api_key = env_var("GEMINI_API_KEY")
            .or_else(|| env_var("GOOGLE_API_KEY"))
            .map(Into::into);
        http.error_format = super::errors::details;
        http.key_placeholder = "<GEMINI_API_KEY>".into();
        http.auth = Auth::Header("x-goog-api-key".into());
        let options = GeminiOptions {
            schema_field: SchemaField::default(),
            response_parts: None,
        };
        Self::with_options(model, http, options)
            .require_key(Some("GEMINI_API_KEY (or GOOGLE_API_KEY)"))
            .drop_model_prefix("models/")
    }

    /// Which field carries the tools' schemas (default [`SchemaField::JsonSchema`]).
    #[must_use]
    pub fn with_schema_field(mut self, field: SchemaField) -> Self {
        self.options.schema_field = field;
        self
    }

    /// Whether images and other binary attachments of tool results go inside the
    /// `functionResponse` (`parts`, which Gemini 3 and later accept) or beside it in the same
    /// message (older models reject `parts`). Default: inside for `gemini-3` and later models.
    #[must_use]
    pub fn with_function_response_parts(mut self, inside: bool) -> Self {
        self.options.response_parts = Some(inside);
        self
    }

    /// The schema field.
    pub fn schema_field(&self) -> SchemaField {
        self.options.schema_field
    }

    /// Whether binary attachments of tool results go inside the `functionResponse`.
    pub(crate) fn function_response_parts(&self) -> bool {
        self.options.response_parts.unwrap_or_else(|| {
            let version = self.model.strip_prefix("gemini-").and_then(|rest| {
                let major: String = rest.chars().take_while(char::is_ascii_digit).collect();
                major.parse::<u32>().ok()
            });
            version.is_some_and(|v| v >= 3)
        })
    }
}
