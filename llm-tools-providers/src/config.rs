//! [`ProviderConfig`]: what configures every provider, whatever its protocol: the model, the
//! endpoint, the API key, headers, timeouts, retries, recording and the HTTP client. Each
//! protocol adds its own options and presets: `OpenAiConfig`, `AnthropicConfig` and
//! `GeminiConfig` are this type with their protocol's options.

use std::sync::Arc;
use std::time::Duration;

use crate::http::{HttpClient, HttpSettings, RetryInfo, RetryPolicy, Secret};
use crate::record::Recorder;
use crate::schema::SchemaBudget;

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
    /// How large a tool's schema may grow in this protocol's dialect
    /// ([`with_schema_budget`](Self::with_schema_budget)).
    pub(crate) schema_budget: SchemaBudget,
    pub(crate) options: O,
}

/// An environment variable's value, unless it is unset or blank.
pub(crate) fn env_var(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|v| !v.trim().is_empty())
}

/// Refuses a value that becomes part of a provider's host name (an AWS region, a Google Cloud
/// location) unless it is one label of lowercase letters, digits and `-`: a value such as
/// `x.evil.example/` (from an environment variable, a profile, a tenant's choice) would make
/// the host another's, and the request's credentials would go there.
#[cfg_attr(not(any(feature = "bedrock", feature = "gemini")), allow(dead_code))]
pub(crate) fn checked_host_label(
    option: &'static str,
    value: &str,
) -> Result<(), llm_tools_core::Error> {
    let label = !value.is_empty()
        && value.len() <= 63
        && value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if label {
        return Ok(());
    }
    Err(llm_tools_core::ConfigError::InvalidOption {
        option,
        reason: format!(
            "is {:?}, which is no name of one (lowercase letters, digits and `-`, as \
             `us-east-1` or `us-central1`): it would become part of the provider's host",
            llm_tools_core::untrusted::shown(value, 64)
        ),
    }
    .into())
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
            schema_budget: SchemaBudget::default(),
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

    /// Lets the credentials go over plain `http://` to a base URL whose host is not loopback
    /// (a model server on a network the application trusts, which serves no TLS). Without it
    /// such a provider is not made: the key would cross the network readable by anyone on the
    /// path. https, and http to `localhost` or a loopback address, need nothing.
    #[must_use]
    pub fn allow_plain_http(mut self) -> Self {
        self.http.allow_plain_http = true;
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

    /// Adds a query parameter to every URL (replacing one of the same name). The values of
    /// well-known secret parameters (`key`, `api_key`, `token`, `sig`, `subscription-key`,
    /// `X-Amz-*`, …) never show where a URL is shown; for any other parameter that holds a
    /// secret, use [`with_secret_query`](Self::with_secret_query).
    #[must_use]
    pub fn with_query(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        let name = name.into();
        self.http.query.retain(|(k, _)| *k != name);
        self.http.secret_query.retain(|(k, _)| *k != name);
        self.http.query.push((name, value.into()));
        self
    }

    /// Adds a query parameter whose value is a secret to every URL (replacing one of the same
    /// name): wherever a URL is shown (errors, logs, recordings) the value of a parameter of
    /// this name reads `<redacted>` (the URL's query is read parameter by parameter; nothing
    /// else in it changes), and the value is taken out of error messages the server writes.
    ///
    /// ```
    /// # #[cfg(feature = "openai")] {
    /// use llm_tools_providers::openai::OpenAiConfig;
    ///
    /// let config = OpenAiConfig::openai("gpt-5-nano")
    ///     .with_base_url("https://gateway.example/openai/v1")
    ///     .with_secret_query("gateway-pass", "s3cr3t");
    /// assert!(!format!("{config:?}").contains("s3cr3t"));
    /// # }
    /// ```
    #[must_use]
    pub fn with_secret_query(mut self, name: impl Into<String>, value: impl Into<Secret>) -> Self {
        let name = name.into();
        self.http.query.retain(|(k, _)| *k != name);
        self.http.secret_query.retain(|(k, _)| *k != name);
        self.http.secret_query.push((name, value.into()));
        self
    }

    /// Sets the longest a whole non-streaming request may take, from sending it to its body's
    /// last byte (default [`DEFAULT_TIMEOUT`](crate::http::DEFAULT_TIMEOUT), 10 minutes); it is
    /// also the longest a stream may stay silent, unless
    /// [`with_idle_timeout`](Self::with_idle_timeout) sets that. Past it, the request fails with
    /// [`HttpLimit::Deadline`](crate::http::HttpLimit::Deadline) (retried as the retry policy
    /// says).
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.http.timeout = timeout;
        self
    }

    /// Sets the longest a stream may stay silent, no byte at all, before it fails with
    /// [`HttpLimit::IdleTimeout`](crate::http::HttpLimit::IdleTimeout) (default: the
    /// [`with_timeout`](Self::with_timeout) value, 10 minutes). Keep-alive comments are bytes:
    /// [`with_stream_deadline`](Self::with_stream_deadline) ends a stream that sends nothing
    /// else.
    #[must_use]
    pub fn with_idle_timeout(mut self, idle: Duration) -> Self {
        self.http.idle_timeout = Some(idle);
        self
    }

    /// Sets the longest a whole streamed answer may take, from sending the request to the
    /// stream's last byte (default
    /// [`DEFAULT_STREAM_DEADLINE`](crate::http::DEFAULT_STREAM_DEADLINE), 60 minutes); past
    /// it, the stream fails with [`HttpLimit::Deadline`](crate::http::HttpLimit::Deadline).
    ///
    /// ```
    /// # #[cfg(feature = "openai")] {
    /// use std::time::Duration;
    /// use llm_tools_providers::openai::OpenAiConfig;
    ///
    /// let config = OpenAiConfig::openai("gpt-5-nano")
    ///     .with_stream_deadline(Duration::from_secs(20 * 60))
    ///     .with_idle_timeout(Duration::from_secs(90));
    /// # let _ = config;
    /// # }
    /// ```
    #[must_use]
    pub fn with_stream_deadline(mut self, deadline: Duration) -> Self {
        self.http.stream_deadline = deadline;
        self
    }

    /// Sets the largest whole body read, an answer's or an error answer's (default
    /// [`DEFAULT_MAX_BODY_BYTES`](crate::http::DEFAULT_MAX_BODY_BYTES), 64 MiB). A larger body
    /// is refused as soon as its `content-length` or the bytes read so far pass the limit,
    /// never read whole: [`HttpLimit::BodyBytes`](crate::http::HttpLimit::BodyBytes).
    #[must_use]
    pub fn with_max_body_bytes(mut self, max: usize) -> Self {
        self.http.max_body_bytes = max;
        self
    }

    /// Sets the largest stream event kept while it arrives: an SSE event (its lines up to the
    /// blank line that ends it), an NDJSON line, an AWS event-stream message (default
    /// [`DEFAULT_MAX_EVENT_BYTES`](crate::http::DEFAULT_MAX_EVENT_BYTES), 16 MiB; the
    /// event-stream format allows no more than that anyway). One that grows past it fails the
    /// stream with [`HttpLimit::StreamEventBytes`](crate::http::HttpLimit::StreamEventBytes).
    #[must_use]
    pub fn with_max_event_bytes(mut self, max: usize) -> Self {
        self.http.max_event_bytes = max;
        self
    }

    /// Sets the most bytes read from one streamed answer (default
    /// [`DEFAULT_MAX_STREAM_BYTES`](crate::http::DEFAULT_MAX_STREAM_BYTES), 256 MiB). A stream
    /// that grows past it ends with
    /// [`HttpLimit::StreamBytes`](crate::http::HttpLimit::StreamBytes), so an endpoint that
    /// streams without end cannot grow the answer without end before the stream's deadline.
    #[must_use]
    pub fn with_max_stream_bytes(mut self, max: usize) -> Self {
        self.http.max_stream_bytes = max;
        self
    }

    /// Sets the most redirects followed within the request's origin (scheme, host and port;
    /// default [`DEFAULT_MAX_REDIRECTS`](crate::http::DEFAULT_MAX_REDIRECTS), 10). A redirect
    /// to another origin is never followed: it fails with
    /// [`HttpLimit::CrossOriginRedirect`](crate::http::HttpLimit::CrossOriginRedirect), naming
    /// both origins.
    #[must_use]
    pub fn with_max_redirects(mut self, max: usize) -> Self {
        self.http.max_redirects = max;
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

    /// Sets how large a tool's schema may be in this protocol's dialect, `$ref`s followed
    /// (default [`SchemaBudget::default`]: 20,000 schema objects, 1 MiB, 64 levels). A tool past
    /// it is left out of the request, with a warning naming the tool and the limit, and the
    /// chat's other tools still go out; a structured output past it is a request error.
    ///
    /// ```
    /// # #[cfg(feature = "openai")] {
    /// use llm_tools_providers::openai::OpenAiConfig;
    /// use llm_tools_providers::schema::SchemaBudget;
    ///
    /// let config = OpenAiConfig::openai("gpt-5-nano")
    ///     .with_schema_budget(SchemaBudget::default().with_max_nodes(50_000));
    /// assert_eq!(config.schema_budget().max_nodes(), 50_000);
    /// # }
    /// ```
    #[must_use]
    pub fn with_schema_budget(mut self, budget: SchemaBudget) -> Self {
        self.schema_budget = budget;
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

    /// Uses this HTTP client (to share a connection pool). Build it with
    /// [`same_origin_redirects`](crate::http::same_origin_redirects) as its redirect policy (or
    /// `reqwest::redirect::Policy::none()`): its policy is its own, and reqwest's default one
    /// follows a 301, 302 or 303 to another origin with every header but `Authorization`
    /// (`x-api-key`, `api-key`, `x-goog-api-key` among them). The rest holds for any client:
    /// the deadlines, the silence limit and the size limits are enforced by this crate around
    /// the request and the stream; request bodies go so that no client resends them, so a 307
    /// or 308 comes back to this crate, which follows it within the origin or refuses it; and
    /// an answer from another origin than the request's is refused unread. See
    /// [`HttpSettings::client`](crate::http::HttpSettings::client).
    ///
    /// ```
    /// # #[cfg(feature = "openai")] {
    /// use llm_tools_providers::http::{DEFAULT_MAX_REDIRECTS, same_origin_redirects};
    /// use llm_tools_providers::openai::OpenAiConfig;
    ///
    /// let shared = reqwest::Client::builder()
    ///     .redirect(same_origin_redirects(DEFAULT_MAX_REDIRECTS))
    ///     .build()
    ///     .unwrap();
    /// let config = OpenAiConfig::openai("gpt-5-nano").with_http_client(shared);
    /// # let _ = config;
    /// # }
    /// ```
    #[must_use]
    pub fn with_http_client(mut self, client: reqwest::Client) -> Self {
        self.http.client = Some(client);
        self
    }

    /// The model.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// How large a tool's schema may be in this protocol's dialect.
    pub fn schema_budget(&self) -> &SchemaBudget {
        &self.schema_budget
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
        mut settings: HttpSettings,
    ) -> Result<HttpClient, llm_tools_core::Error> {
        // The MCP tokens travel in the request bodies: an error quoting them must not show them.
        settings
            .body_secrets
            .extend(self.mcp_tokens.iter().map(|(_, token)| token.clone()));
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
