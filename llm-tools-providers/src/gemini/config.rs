//! [`GeminiConfig`]: the options of the Gemini protocol: the schema field tools are sent in,
//! and where tool results' attachments go.

use super::vertex::{self, GoogleCredentials, VertexOptions};
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
    pub(crate) vertex: Option<VertexOptions>,
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
            vertex: None,
        };
        Self::with_options(model, http, options)
            .require_key(Some("GEMINI_API_KEY (or GOOGLE_API_KEY)"))
            .drop_model_prefix("models/")
    }

    /// Gemini on Vertex AI: `model` in a Google Cloud `project` and `location` (`us-central1`,
    /// `global`, …), authorized with OAuth access tokens from [`GoogleCredentials::from_env`]
    /// (`GOOGLE_ACCESS_TOKEN`, or application default credentials of a user) unless
    /// [`with_google_credentials`](Self::with_google_credentials) sets them. The project and
    /// location default to `GOOGLE_CLOUD_PROJECT` and `GOOGLE_CLOUD_LOCATION` when empty.
    ///
    /// ```
    /// use llm_tools_providers::gemini::{GeminiConfig, GoogleCredentials};
    ///
    /// let config = GeminiConfig::vertex("my-project", "us-central1", "gemini-2.5-flash")
    ///     .with_google_credentials(GoogleCredentials::access_token("ya29.test"));
    /// assert!(config.base_url().starts_with("https://us-central1-aiplatform.googleapis.com/v1beta1/projects/my-project/"));
    /// ```
    pub fn vertex(project: &str, location: &str, model: impl Into<String>) -> Self {
        let project = Some(project)
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .or_else(|| env_var("GOOGLE_CLOUD_PROJECT"))
            .unwrap_or_default();
        let location = Some(location)
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .or_else(|| env_var("GOOGLE_CLOUD_LOCATION"))
            .unwrap_or_else(|| "global".to_owned());
        let mut http = HttpSettings::new("vertex", vertex::base_url(&project, &location));
        http.error_format = super::errors::details;
        let options = GeminiOptions {
            schema_field: SchemaField::default(),
            response_parts: None,
            vertex: Some(VertexOptions {
                credentials: GoogleCredentials::from_env(),
                token_uri: vertex::TOKEN_URI.to_owned(),
                location,
            }),
        };
        Self::with_options(model, http, options).drop_model_prefix("models/")
    }

    /// The credentials Vertex AI requests are authorized with (Vertex AI only).
    #[must_use]
    pub fn with_google_credentials(mut self, credentials: GoogleCredentials) -> Self {
        if let Some(v) = &mut self.options.vertex {
            v.credentials = Some(credentials);
        }
        self
    }

    /// The OAuth token endpoint refresh tokens are exchanged at (default Google's; Vertex AI
    /// only).
    #[must_use]
    pub fn with_token_uri(mut self, uri: impl Into<String>) -> Self {
        if let Some(v) = &mut self.options.vertex {
            v.token_uri = uri.into();
        }
        self
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
        self.options
            .response_parts
            .unwrap_or_else(|| self.gemini_3_or_later())
    }

    /// Whether the model is `gemini-3` or later, which refuses a function call of the current
    /// turn without its thought signature.
    pub(crate) fn gemini_3_or_later(&self) -> bool {
        let version = self.model.strip_prefix("gemini-").and_then(|rest| {
            let major: String = rest.chars().take_while(char::is_ascii_digit).collect();
            major.parse::<u32>().ok()
        });
        version.is_some_and(|v| v >= 3)
    }
}
