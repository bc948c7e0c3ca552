//! Sampling: a server asking the client's model for a completion (`sampling/createMessage`),
//! answered by a model the application picks (by default the provider of the chat the client
//! joined), behind an approval hook and a limit on the tokens one request may ask for.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use llm_tools_core::{BoxFuture, Message, Provider, Request, Usage};
use rmcp::model::ErrorCode;
use serde_json::{Map, Value, json};

/// The most tokens one sampling request may ask for, unless
/// [`Sampling::with_max_tokens`] says otherwise: 1024.
pub const DEFAULT_SAMPLING_MAX_TOKENS: u32 = 1024;

/// The most text one sampling request may hold (its messages and system prompt, in bytes),
/// unless [`Sampling::with_max_input_bytes`] says otherwise: 256 KiB.
pub const DEFAULT_SAMPLING_MAX_INPUT_BYTES: usize = 256 * 1024;

/// The most messages one sampling request may hold: 256.
pub const MAX_SAMPLING_MESSAGES: usize = 256;

/// How long the model may take to answer one sampling request, unless
/// [`Sampling::with_timeout`] says otherwise: 2 minutes.
pub const DEFAULT_SAMPLING_TIMEOUT: Duration = Duration::from_secs(120);

/// How many sampling requests the model answers at once unless
/// [`Sampling::with_max_concurrent`] says otherwise: 2. One more, while they run, is refused
/// (a server that asks many at once is told to wait), never queued.
pub const DEFAULT_SAMPLING_MAX_CONCURRENT: usize = 2;

/// How many sampling requests the client takes in all (each the approval hook sees, approved
/// or not), for every server sharing this [`Sampling`], unless [`Sampling::with_max_requests`]
/// says otherwise: 100. Past it every request is refused before the hook: a server that keeps
/// asking can neither spend nor ask the user without end.
pub const DEFAULT_SAMPLING_MAX_REQUESTS: u64 = 100;

/// What the approval hook of [`Sampling`] decides on a server's request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SamplingDecision {
    /// The model answers the request.
    Approve,
    /// The server gets an error (code -1, "the user refused the sampling request"); the model
    /// is not asked.
    Refuse,
}

/// A server's `sampling/createMessage` request, as the approval hook sees it: what the server
/// asks the model, in the chat's message types.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SamplingRequest {
    /// The name given to the server.
    pub server: String,
    /// The server's system prompt, if it gave one.
    pub system_prompt: Option<String>,
    /// The conversation the server wants completed (user and assistant text).
    pub messages: Vec<Message>,
    /// The most tokens the server asks for (at most the limit of [`Sampling`]).
    pub max_tokens: u32,
    /// The model names the server hints at (`modelPreferences.hints`); informative only, the
    /// application's model answers.
    pub model_hints: Vec<String>,
}

type Approver = Arc<dyn Fn(SamplingRequest) -> BoxFuture<'static, SamplingDecision> + Send + Sync>;

/// How a client answers a server's sampling requests, given to
/// [`McpServer::sampling`](crate::McpServer::sampling).
///
/// Each request goes through these steps, and stops at the first that fails (the server gets
/// a JSON-RPC error, and the call that asked goes on as the server decides):
///
/// 1. **Bounds**: at most [`MAX_SAMPLING_MESSAGES`] messages with text only (images, audio
///    and tool use are refused), at most [`with_max_input_bytes`](Self::with_max_input_bytes)
///    of text, and `maxTokens` at most [`with_max_tokens`](Self::with_max_tokens).
/// 2. **Approval**: the hook given to [`new`](Self::new) sees the [`SamplingRequest`] (a
///    person or a policy) and may refuse.
/// 3. **The model**: the provider given with [`with_provider`](Self::with_provider), else the
///    provider of the first chat the client joined (`chat.with_mcp(&client)`), answers within
///    [`with_timeout`](Self::with_timeout), held to the request's `maxTokens` in the
///    provider's own output-limit field ([`Provider::output_limit`], or the field
///    [`with_max_tokens_param`](Self::with_max_tokens_param) names); a failure is logged here
///    and the server only learns that the model failed.
///
/// A request the server cancels (`notifications/cancelled`), or whose session ends, stops at
/// whichever step it has reached: the approval hook's future or the model call is dropped,
/// and with it the model's HTTP request, so a cancelled request spends nothing more.
///
/// ```
/// use llm_tools_mcp::{McpServer, Sampling, SamplingDecision};
///
/// let server = McpServer::stdio("my-mcp-server").sampling(
///     Sampling::new(|request| async move {
///         // A policy: short requests only, and never from this server's other tenants.
///         if request.max_tokens <= 200 { SamplingDecision::Approve } else { SamplingDecision::Refuse }
///     })
///     .with_max_tokens(500),
/// );
/// # let _ = server;
/// ```
#[derive(Clone)]
pub struct Sampling {
    approve: Approver,
    provider: Option<Arc<dyn Provider>>,
    max_tokens: u32,
    max_tokens_param: Option<String>,
    max_input_bytes: usize,
    timeout: Duration,
    /// Places for requests being answered, shared by clones.
    in_flight: Arc<tokio::sync::Semaphore>,
    max_concurrent: usize,
    /// Requests sent to the model so far, shared by clones.
    sent: Arc<std::sync::atomic::AtomicU64>,
    max_requests: u64,
    /// What the model's answers reported spending, shared by clones.
    spent: Arc<std::sync::Mutex<Usage>>,
}

impl fmt::Debug for Sampling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sampling")
            .field(
                "model",
                &self.provider.as_ref().map(|p| p.model().to_owned()),
            )
            .field("max_tokens", &self.max_tokens)
            .field("max_tokens_param", &self.max_tokens_param)
            .field("max_input_bytes", &self.max_input_bytes)
            .field("timeout", &self.timeout)
            .field("max_concurrent", &self.max_concurrent)
            .field("max_requests", &self.max_requests)
            .finish_non_exhaustive()
    }
}

impl Sampling {
    /// Sampling behind `approve`, which sees every request that is within the bounds and
    /// decides whether the model answers it.
    pub fn new<F, Fut>(approve: F) -> Self
    where
        F: Fn(SamplingRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = SamplingDecision> + Send + 'static,
    {
        Self {
            approve: Arc::new(move |request| Box::pin(approve(request))),
            provider: None,
            max_tokens: DEFAULT_SAMPLING_MAX_TOKENS,
            max_tokens_param: None,
            max_input_bytes: DEFAULT_SAMPLING_MAX_INPUT_BYTES,
            timeout: DEFAULT_SAMPLING_TIMEOUT,
            in_flight: Arc::new(tokio::sync::Semaphore::new(DEFAULT_SAMPLING_MAX_CONCURRENT)),
            max_concurrent: DEFAULT_SAMPLING_MAX_CONCURRENT,
            sent: Arc::default(),
            max_requests: DEFAULT_SAMPLING_MAX_REQUESTS,
            spent: Arc::default(),
        }
    }

    /// The tokens the model spent answering sampling requests so far, as its answers reported
    /// them, for every server sharing this value (keep a clone to read it: clones share the
    /// count). A chat's [`usage`](llm_tools_core::chat::Chat::usage) does not hold them: a
    /// server's request is answered beside the chat, not in its turn.
    ///
    /// ```
    /// use llm_tools_mcp::{McpServer, Sampling, SamplingDecision};
    ///
    /// let sampling = Sampling::new(|_| async { SamplingDecision::Approve });
    /// let server = McpServer::stdio("my-mcp-server").sampling(sampling.clone());
    /// // … later, with the client connected and used:
    /// assert_eq!(sampling.usage().total(), 0);
    /// # let _ = server;
    /// ```
    pub fn usage(&self) -> Usage {
        *self
            .spent
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// How many requests the model answers at once ([`DEFAULT_SAMPLING_MAX_CONCURRENT`]);
    /// one more, while they run, is refused. Starts a new count for this value and its clones.
    #[must_use]
    pub fn with_max_concurrent(mut self, requests: usize) -> Self {
        let requests = requests.min(tokio::sync::Semaphore::MAX_PERMITS);
        self.in_flight = Arc::new(tokio::sync::Semaphore::new(requests));
        self.max_concurrent = requests;
        self
    }

    /// How many requests the client takes in all, each the approval hook sees
    /// ([`DEFAULT_SAMPLING_MAX_REQUESTS`]), for every server sharing this value; past it each is
    /// refused before the hook.
    #[must_use]
    pub fn with_max_requests(mut self, requests: u64) -> Self {
        self.max_requests = requests;
        self
    }

    /// The model that answers (by default the provider of the first chat the client joined).
    pub fn with_provider(self, provider: impl Provider) -> Self {
        self.with_shared_provider(Arc::new(provider))
    }

    /// [`with_provider`](Self::with_provider) with a provider shared with other parts of the
    /// application.
    pub fn with_shared_provider(mut self, provider: Arc<dyn Provider>) -> Self {
        self.provider = Some(provider);
        self
    }

    /// The most tokens one request may ask for (`maxTokens`); a request asking for more is
    /// refused before the approval hook sees it ([`DEFAULT_SAMPLING_MAX_TOKENS`] by default).
    ///
    /// The answer is held to the request's `maxTokens`, and a reasoning model counts its
    /// reasoning in it (OpenAI's `max_completion_tokens`, Gemini 2.5's `maxOutputTokens`,
    /// Ollama's `num_predict` with thinking on): with a small limit such a model may spend it
    /// all reasoning and answer with no text (`stopReason: "maxTokens"`). Answer sampling with
    /// a model that does not reason, or with little reasoning effort (its provider's params).
    /// Bounding by the answer's tokens is what bounds the spend.
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// The request body field that carries each request's `maxTokens` to the model, in place
    /// of the provider's own ([`Provider::output_limit`]: `max_tokens` for Anthropic and
    /// Cohere, `max_output_tokens` for OpenAI's Responses, `generationConfig.maxOutputTokens`
    /// for Gemini, and so on), for a provider that names none (one of the application's own,
    /// or a fallback chain across protocols) or a proxy that reads another field. A provider
    /// that names no field and no field given here answers within its own limit, and a
    /// warning says so at each request.
    pub fn with_max_tokens_param(mut self, field: impl Into<String>) -> Self {
        self.max_tokens_param = Some(field.into());
        self
    }

    /// The most text one request may hold, in bytes
    /// ([`DEFAULT_SAMPLING_MAX_INPUT_BYTES`] by default).
    pub fn with_max_input_bytes(mut self, bytes: usize) -> Self {
        self.max_input_bytes = bytes;
        self
    }

    /// How long the model may take to answer one request ([`DEFAULT_SAMPLING_TIMEOUT`] by
    /// default).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Answers a server's `sampling/createMessage` (its params as JSON) with the result's
    /// JSON, or the error the server gets.
    pub(crate) async fn answer(
        &self,
        server: &str,
        fallback: Option<Arc<dyn Provider>>,
        params: &Value,
    ) -> Result<Value, rmcp::ErrorData> {
        // Bounded before anything else, the approval hook included: a server asking many at
        // once, or without end, is refused rather than queued.
        let Ok(_place) = self.in_flight.try_acquire() else {
            tracing::warn!(target: "llm_tools::mcp", server, max = self.max_concurrent, "refused a sampling request: as many are being answered as the client takes at once");
            return Err(rmcp::ErrorData::new(
                ErrorCode(-1),
                "the client answers no more sampling requests at once; try again later",
                None,
            ));
        };
        let request = self.read(server, params)?;
        // Each request the hook sees counts, approved or not: a server asking again and again
        // cannot have the user asked without end either.
        let counted = self.sent.fetch_update(
            std::sync::atomic::Ordering::Relaxed,
            std::sync::atomic::Ordering::Relaxed,
            |sent| (sent < self.max_requests).then_some(sent + 1),
        );
        if counted.is_err() {
            tracing::warn!(target: "llm_tools::mcp", server, max = self.max_requests, "refused a sampling request: the client took as many as it takes");
            return Err(rmcp::ErrorData::new(
                ErrorCode(-1),
                "the client has taken all the sampling requests it takes",
                None,
            ));
        }
        let max_tokens = request.max_tokens;
        let mut messages = Vec::with_capacity(request.messages.len() + 1);
        if let Some(system) = &request.system_prompt {
            messages.push(Message::system(system.clone()));
        }
        messages.extend(request.messages.iter().cloned());
        if (self.approve)(request).await != SamplingDecision::Approve {
            tracing::info!(target: "llm_tools::mcp", server, "a sampling request was refused by the approval hook");
            return Err(rmcp::ErrorData::new(
                ErrorCode(-1),
                "the user refused the sampling request",
                None,
            ));
        }
        let Some(provider) = self.provider.clone().or(fallback) else {
            tracing::warn!(target: "llm_tools::mcp", server, "a sampling request came before the client joined a chat, and no provider was given for sampling");
            return Err(rmcp::ErrorData::internal_error(
                "the client has no model to answer sampling requests",
                None,
            ));
        };
        // The answer is held to the tokens the request asked for, in the provider's own field
        // unless the application named one: the limit bounds the spend, not only the ask.
        let params = match &self.max_tokens_param {
            Some(field) => {
                let mut map = Map::new();
                map.insert(field.clone(), json!(max_tokens));
                Some(map)
            }
            None => provider.output_limit(max_tokens),
        };
        if params.is_none() {
            tracing::warn!(target: "llm_tools::mcp", server, model = provider.model(), "a sampling answer is not held to the request's maxTokens: the provider names no output limit (Sampling::with_max_tokens_param names its field)");
        }
        let completed = tokio::time::timeout(
            self.timeout,
            provider.complete(Request::new(&messages, &[]).with_params(params.as_ref())),
        )
        .await;
        let response = match completed {
            Ok(Ok(response)) => response,
            Ok(Err(error)) => {
                tracing::warn!(target: "llm_tools::mcp", server, error = %error, "the model failed to answer a sampling request");
                return Err(rmcp::ErrorData::internal_error(
                    "the client's model failed to answer",
                    None,
                ));
            }
            Err(_) => {
                tracing::warn!(target: "llm_tools::mcp", server, after = ?self.timeout, "the model did not answer a sampling request in time");
                return Err(rmcp::ErrorData::internal_error(
                    "the client's model did not answer in time",
                    None,
                ));
            }
        };
        if let Some(usage) = response.message.usage {
            *self
                .spent
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()) += usage;
        }
        let stop_reason = match response.finish_reason.as_deref() {
            Some("length" | "max_tokens" | "MAX_TOKENS" | "max_output_tokens") => "maxTokens",
            _ => "endTurn",
        };
        let model = response
            .model
            .clone()
            .unwrap_or_else(|| provider.model().to_owned());
        tracing::info!(target: "llm_tools::mcp", server, model = model.as_str(), "answered a sampling request");
        Ok(json!({
            "role": "assistant",
            "content": {"type": "text", "text": response.message.text()},
            "model": model,
            "stopReason": stop_reason,
        }))
    }

    /// The request as the approval hook sees it, or why it is refused (its bounds).
    fn read(&self, server: &str, params: &Value) -> Result<SamplingRequest, rmcp::ErrorData> {
        let invalid = |message: String| rmcp::ErrorData::invalid_params(message, None);
        if params
            .get("tools")
            .and_then(Value::as_array)
            .is_some_and(|tools| !tools.is_empty())
        {
            return Err(invalid(
                "this client does not offer tools in sampling requests".into(),
            ));
        }
        let max_tokens = match params.get("maxTokens") {
            None | Some(Value::Null) => self.max_tokens,
            Some(value) => match value.as_u64() {
                Some(0) | None => {
                    return Err(invalid("maxTokens must be a positive integer".into()));
                }
                Some(n) if n <= u64::from(self.max_tokens) => n as u32,
                Some(n) => {
                    return Err(invalid(format!(
                        "maxTokens {n} is over this client's limit of {} tokens per request",
                        self.max_tokens
                    )));
                }
            },
        };
        let empty = Vec::new();
        let wire = params
            .get("messages")
            .and_then(Value::as_array)
            .unwrap_or(&empty);
        if wire.len() > MAX_SAMPLING_MESSAGES {
            return Err(invalid(format!(
                "{} messages are over this client's limit of {MAX_SAMPLING_MESSAGES}",
                wire.len()
            )));
        }
        let system_prompt = params
            .get("systemPrompt")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let mut size = system_prompt.as_ref().map_or(0, String::len);
        if size > self.max_input_bytes {
            return Err(invalid(format!(
                "the request's text is over this client's limit of {} bytes",
                self.max_input_bytes
            )));
        }
        let mut messages = Vec::with_capacity(wire.len());
        for message in wire {
            let blocks: Vec<&Value> = match message.get("content") {
                Some(Value::Array(blocks)) => blocks.iter().collect(),
                Some(block) => vec![block],
                None => Vec::new(),
            };
            let mut text = String::new();
            for block in blocks {
                match (
                    block.get("type").and_then(Value::as_str),
                    block.get("text").and_then(Value::as_str),
                ) {
                    (Some("text"), Some(part)) => {
                        size = size.saturating_add(part.len());
                        if size > self.max_input_bytes {
                            return Err(invalid(format!(
                                "the request's text is over this client's limit of {} bytes",
                                self.max_input_bytes
                            )));
                        }
                        text.push_str(part);
                    }
                    (kind, _) => {
                        return Err(invalid(format!(
                            "this client answers sampling requests with text only, not `{}`",
                            kind.unwrap_or("?").chars().take(32).collect::<String>()
                        )));
                    }
                }
            }
            messages.push(match message.get("role").and_then(Value::as_str) {
                Some("user") => Message::user(text),
                Some("assistant") => Message::assistant(text),
                _ => return Err(invalid("a message's role must be user or assistant".into())),
            });
        }
        if messages.is_empty() {
            return Err(invalid("the request has no messages".into()));
        }
        let model_hints = params
            .pointer("/modelPreferences/hints")
            .and_then(Value::as_array)
            .map(|hints| {
                hints
                    .iter()
                    .take(16)
                    .filter_map(|hint| hint.get("name").and_then(Value::as_str))
                    .map(|name| name.chars().take(128).collect())
                    .collect()
            })
            .unwrap_or_default();
        Ok(SamplingRequest {
            server: server.to_owned(),
            system_prompt,
            messages,
            max_tokens,
            model_hints,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sampling() -> Sampling {
        Sampling::new(|_| async { SamplingDecision::Approve }).with_max_tokens(100)
    }

    #[test]
    fn a_request_within_the_bounds_is_read_into_chat_messages() {
        let request = sampling()
            .read(
                "s",
                &json!({
                    "messages": [
                        {"role": "user", "content": {"type": "text", "text": "Hi"}},
                        {"role": "assistant", "content": [{"type": "text", "text": "Hello"}]},
                    ],
                    "systemPrompt": "Be brief",
                    "maxTokens": 50,
                    "modelPreferences": {"hints": [{"name": "claude"}]},
                }),
            )
            .unwrap();
        assert_eq!(request.messages.len(), 2);
        assert_eq!(request.messages[1].text(), "Hello");
        assert_eq!(request.max_tokens, 50);
        assert_eq!(request.model_hints, ["claude"]);
        assert_eq!(request.system_prompt.as_deref(), Some("Be brief"));
    }

    /// Requests past the budget, or past the places for requests at once, are refused
    /// before the hook sees them and before the model is asked.
    #[tokio::test]
    async fn requests_past_the_budget_or_at_once_are_refused() {
        let model = Arc::new(
            llm_tools_core::testing::ScriptedProvider::new()
                .then_text("one")
                .then_text("two")
                .then_text("three"),
        );
        let asked = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counter = Arc::clone(&asked);
        let s = Sampling::new(move |_| {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async { SamplingDecision::Approve }
        })
        .with_shared_provider(model)
        .with_max_requests(2);
        let params = json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Hi"}}], "maxTokens": 10});
        assert!(s.answer("s", None, &params).await.is_ok());
        assert!(s.clone().answer("s", None, &params).await.is_ok());
        let spent = s.answer("s", None, &params).await.unwrap_err();
        assert!(
            spent.message.contains("all the sampling requests"),
            "{}",
            spent.message
        );
        assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 2);
        // Requests the hook refuses count too.
        let refusing = Sampling::new(|_| async { SamplingDecision::Refuse }).with_max_requests(1);
        assert!(refusing.answer("s", None, &params).await.is_err());
        let spent = refusing.answer("s", None, &params).await.unwrap_err();
        assert!(
            spent.message.contains("all the sampling requests"),
            "{}",
            spent.message
        );
        let busy = sampling().with_max_concurrent(0);
        let refused = busy.answer("s", None, &params).await.unwrap_err();
        assert!(refused.message.contains("at once"), "{}", refused.message);
    }

    /// A provider whose output limit is `limit_field` (the scripted one names none).
    struct Limited {
        inner: Arc<llm_tools_core::testing::ScriptedProvider>,
        limit_field: Option<&'static str>,
    }

    impl Provider for Limited {
        fn protocol(&self) -> &str {
            "limited"
        }

        fn model(&self) -> &str {
            "limited-model"
        }

        fn output_limit(&self, tokens: u32) -> Option<Map<String, Value>> {
            let field = self.limit_field?;
            let mut params = Map::new();
            params.insert(field.to_owned(), json!(tokens));
            Some(params)
        }

        fn complete<'a>(
            &'a self,
            request: Request<'a>,
        ) -> BoxFuture<'a, Result<llm_tools_core::Response, llm_tools_core::ProviderError>>
        {
            self.inner.complete(request)
        }
    }

    /// The request's `maxTokens` (or the client's limit, when it names none) reaches the model
    /// in the provider's own output-limit field, or in the field the application names.
    #[tokio::test]
    async fn the_answer_is_held_to_the_requests_max_tokens() {
        async fn answer(
            field: Option<&'static str>,
            param: Option<&'static str>,
            max_tokens: Option<u32>,
        ) -> Option<Map<String, Value>> {
            let inner = Arc::new(llm_tools_core::testing::ScriptedProvider::new().then_text("ok"));
            let provider = Limited {
                inner: Arc::clone(&inner),
                limit_field: field,
            };
            let mut s = sampling().with_provider(provider);
            if let Some(param) = param {
                s = s.with_max_tokens_param(param);
            }
            let mut params =
                json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Hi"}}]});
            if let Some(n) = max_tokens {
                params["maxTokens"] = json!(n);
            }
            s.answer("s", None, &params).await.unwrap();
            inner.requests().remove(0).params
        }
        let sent = answer(Some("max_tokens"), None, Some(40)).await;
        assert_eq!(
            sent,
            Some(json!({"max_tokens": 40}).as_object().unwrap().clone())
        );
        // No maxTokens: the client's limit (100 here) holds the answer.
        let sent = answer(Some("max_tokens"), None, None).await;
        assert_eq!(
            sent,
            Some(json!({"max_tokens": 100}).as_object().unwrap().clone())
        );
        // The application's field wins over the provider's.
        let sent = answer(Some("max_tokens"), Some("limit"), Some(7)).await;
        assert_eq!(sent, Some(json!({"limit": 7}).as_object().unwrap().clone()));
        // A provider naming none, and no field given: nothing is sent (a warning is logged).
        assert_eq!(answer(None, None, Some(7)).await, None);
    }

    #[test]
    fn requests_past_the_bounds_are_refused() {
        let s = sampling().with_max_input_bytes(10);
        let text = |t: &str| json!({"messages": [{"role": "user", "content": {"type": "text", "text": t}}], "maxTokens": 10});
        assert!(s.read("s", &text("short")).is_ok());
        let long = s.read("s", &text("far too long a text")).unwrap_err();
        assert!(long.message.contains("10 bytes"), "{}", long.message);
        // A long system prompt with messages holding no text is refused too.
        let prompt = s
            .read(
                "s",
                &json!({"messages": [{"role": "user", "content": []}],
                    "systemPrompt": "a system prompt far over the limit", "maxTokens": 10}),
            )
            .unwrap_err();
        assert!(prompt.message.contains("10 bytes"), "{}", prompt.message);
        let many = s
            .read("s", &json!({"messages": [{"role": "user", "content": {"type": "text", "text": "x"}}], "maxTokens": 101}))
            .unwrap_err();
        assert!(
            many.message.contains("limit of 100 tokens"),
            "{}",
            many.message
        );
        let zero = s
            .read("s", &json!({"messages": [{"role": "user", "content": {"type": "text", "text": "x"}}], "maxTokens": 0}))
            .unwrap_err();
        assert!(zero.message.contains("positive"), "{}", zero.message);
        let image = s
            .read("s", &json!({"messages": [{"role": "user", "content": {"type": "image", "data": "", "mimeType": "image/png"}}]}))
            .unwrap_err();
        assert!(image.message.contains("text only"), "{}", image.message);
        let messages: Vec<Value> = (0..=MAX_SAMPLING_MESSAGES)
            .map(|_| json!({"role": "user", "content": {"type": "text", "text": ""}}))
            .collect();
        assert!(s.read("s", &json!({"messages": messages})).is_err());
    }
}
