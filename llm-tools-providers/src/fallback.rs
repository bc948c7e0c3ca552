//! Model fallback: [`FallbackProvider`] sends a request to its first provider and, when that
//! one fails in a way another may not (after its own retries), to the next.
//!
//! It moves on after a **retryable** failure ([`ProviderError::is_retryable`]: 5xx, 429,
//! Anthropic's "overloaded", timeouts and connection errors, a stream cut before its first
//! event), which the provider has already retried as its [`RetryPolicy`] says; and, when
//! [`on_context_length(true)`](FallbackProvider::on_context_length), after a
//! [`ContextLengthExceeded`](ProviderErrorKind::ContextLengthExceeded) refusal (a model with a
//! larger window may take the conversation). It never moves on after any other error: a 400, a
//! bad key or a request the protocol cannot write fails the same way everywhere, and the caller
//! gets it at once. When every provider failed, the caller gets the last error; the earlier ones
//! are in [`last_report`](FallbackProvider::last_report), in the
//! [`with_on_fallback`](FallbackProvider::with_on_fallback) observer and in the log.
//!
//! A streamed answer falls back only **before its first event reaches the caller**: once text
//! has been shown, a failure is the caller's to handle (the chat keeps nothing of a failed
//! stream, and a retry starts over).
//!
//! # Which provider answered
//!
//! - [`Response::model`] is the answering model's (as its server reported it, or the answering
//!   provider's [`Provider::model`] when the server did not say);
//! - [`FallbackProvider::last_report`] names the provider that answered the latest request
//!   ([`Candidate`]: its place in the list, protocol and model) and every failure before it;
//! - the log: each move to the next provider is a `WARN` event of target `llm_tools::fallback`
//!   ("falling back to the next provider", with the failed and the next provider's index,
//!   protocol and model, and the error), an answer from any provider but the first an `INFO`
//!   event ("a fallback provider answered"), and each attempt runs in a span `fallback` with
//!   `llm_tools.fallback.index`, `gen_ai.provider.name` and `gen_ai.request.model`, inside the
//!   chat's own span (whose `gen_ai.response.model` is the answering model).
//!
//! # What a saved chat sees
//!
//! [`Provider::protocol`] and [`Provider::model`] are the **first** provider's: that is what a
//! chat's spans and debug output name as the provider and requested model. An answer keeps the
//! provider data of the protocol that wrote it (under that protocol's id, as every answer does),
//! so a saved chat holds answers of several protocols side by side; each protocol sends back
//! only its own data (Anthropic's thinking blocks go back to Anthropic, never to OpenAI), and
//! reads every other message as plain text, tool calls and results.
//!
//! [`RetryPolicy`]: crate::http::RetryPolicy
//!
//! ```
//! use std::sync::Arc;
//! use llm_tools_core::Provider;
//! use llm_tools_core::testing::ScriptedProvider;
//! use llm_tools_providers::FallbackProvider;
//!
//! let primary = ScriptedProvider::new().then_text("from the primary");
//! let secondary = ScriptedProvider::new().then_text("from the secondary");
//! let provider = FallbackProvider::new([
//!     Arc::new(primary) as Arc<dyn Provider>,
//!     Arc::new(secondary),
//! ])
//! .unwrap()
//! .on_context_length(true);
//! assert_eq!(provider.providers().len(), 2);
//! assert_eq!(provider.protocol(), "scripted");
//! ```

use std::fmt;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use llm_tools_core::{
    BoxFuture, ConfigError, Error, EventStream, Provider, ProviderError, ProviderErrorKind,
    Request, Response, StreamEvent,
};
use tracing::Instrument;

/// A provider that tries its providers in order: the next one after a retryable failure (and,
/// when enabled, a context-length refusal) of the current one. See the [module](self).
pub struct FallbackProvider {
    providers: Vec<Arc<dyn Provider>>,
    on_context_length: bool,
    observer: Option<Observer>,
    last: Mutex<Option<FallbackReport>>,
}

type Observer = Arc<dyn Fn(&FallbackInfo) + Send + Sync>;

/// One provider of a [`FallbackProvider`]: its place in the list, protocol and model.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Candidate {
    /// Its place in the list (0: the primary).
    pub index: usize,
    /// Its protocol ([`Provider::protocol`]).
    pub protocol: String,
    /// Its model ([`Provider::model`]).
    pub model: String,
}

/// A provider that failed, and how.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Failure {
    /// The provider.
    pub provider: Candidate,
    /// Its error (after its own retries).
    pub error: ProviderError,
}

/// What one request through a [`FallbackProvider`] did.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct FallbackReport {
    /// The provider that answered (for a stream: whose first event reached the caller); `None`
    /// when every provider tried failed.
    pub answered: Option<Candidate>,
    /// The providers that failed, in order; when none answered, the last is the error the
    /// caller got.
    pub failures: Vec<Failure>,
}

impl FallbackReport {
    /// Whether another provider than the first answered.
    pub fn fell_back(&self) -> bool {
        self.answered.as_ref().is_some_and(|c| c.index > 0)
    }
}

/// A move to the next provider, as [`FallbackProvider::with_on_fallback`] sees it.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct FallbackInfo {
    /// The provider that failed, and its error.
    pub failed: Failure,
    /// The provider tried next.
    pub next: Candidate,
}

impl FallbackProvider {
    /// A provider trying `providers` in order; the first is the primary. No provider is an
    /// [`Error::InvalidConfig`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// use llm_tools_core::Provider;
    /// use llm_tools_core::testing::ScriptedProvider;
    /// use llm_tools_providers::FallbackProvider;
    ///
    /// let none: [Arc<dyn Provider>; 0] = [];
    /// assert!(FallbackProvider::new(none).is_err());
    /// let one = FallbackProvider::new([Arc::new(ScriptedProvider::new()) as Arc<dyn Provider>]);
    /// let two = one.unwrap().or(ScriptedProvider::new());
    /// assert_eq!(two.providers().len(), 2);
    /// ```
    pub fn new<I>(providers: I) -> Result<Self, Error>
    where
        I: IntoIterator<Item = Arc<dyn Provider>>,
    {
        let providers: Vec<_> = providers.into_iter().collect();
        if providers.is_empty() {
            return Err(Error::InvalidConfig(ConfigError::InvalidOption {
                option: "FallbackProvider::new",
                reason: "needs at least one provider".to_owned(),
            }));
        }
        Ok(Self {
            providers,
            on_context_length: false,
            observer: None,
            last: Mutex::new(None),
        })
    }

    /// Adds `provider` at the end of the list.
    #[must_use]
    pub fn or(mut self, provider: impl Provider) -> Self {
        self.providers.push(Arc::new(provider));
        self
    }

    /// Whether a [`ContextLengthExceeded`](ProviderErrorKind::ContextLengthExceeded) refusal
    /// moves on to the next provider (default `false`: the caller gets it, to shorten the
    /// history).
    #[must_use]
    pub fn on_context_length(mut self, fall_back: bool) -> Self {
        self.on_context_length = fall_back;
        self
    }

    /// Calls `observer` at each move to the next provider, with the failure and the provider
    /// tried next (for metrics, or to read the earlier errors of a request whose last provider
    /// failed too).
    #[must_use]
    pub fn with_on_fallback(
        mut self,
        observer: impl Fn(&FallbackInfo) + Send + Sync + 'static,
    ) -> Self {
        self.observer = Some(Arc::new(observer));
        self
    }

    /// The providers, in order.
    pub fn providers(&self) -> &[Arc<dyn Provider>] {
        &self.providers
    }

    /// What the latest finished request did (a stream's once its first event arrived, or every
    /// provider failed): which provider answered and which failed before. With requests running
    /// at once on one `FallbackProvider`, the one that finished last.
    pub fn last_report(&self) -> Option<FallbackReport> {
        self.last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Whether `error` moves on to the next provider.
    fn falls_back(&self, error: &ProviderError) -> bool {
        error.is_retryable()
            || (self.on_context_length && error.kind() == ProviderErrorKind::ContextLengthExceeded)
    }

    fn remember(&self, report: FallbackReport) {
        *self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(report);
    }

    /// Records `error` of provider `index`; whether the next provider is to be tried.
    fn failed(&self, index: usize, error: ProviderError, report: &mut FallbackReport) -> bool {
        let failed = Failure {
            provider: candidate(index, &self.providers[index]),
            error,
        };
        let next = self.providers.get(index + 1);
        let go_on = next.is_some() && self.falls_back(&failed.error);
        match next {
            Some(next) if go_on => {
                let next = candidate(index + 1, next);
                tracing::warn!(
                    target: "llm_tools::fallback",
                    failed_index = index,
                    failed_provider = %failed.provider.protocol,
                    failed_model = %failed.provider.model,
                    next_index = next.index,
                    next_provider = %next.protocol,
                    next_model = %next.model,
                    error = %failed.error,
                    "falling back to the next provider"
                );
                if let Some(observer) = &self.observer {
                    observer(&FallbackInfo {
                        failed: failed.clone(),
                        next,
                    });
                }
            }
            _ if report.failures.is_empty() => {}
            _ => tracing::warn!(
                target: "llm_tools::fallback",
                tried = index + 1,
                error = %failed.error,
                "every provider tried failed"
            ),
        }
        report.failures.push(failed);
        go_on
    }

    /// Records the answer of provider `index`.
    fn answered(&self, index: usize, mut report: FallbackReport) {
        let answered = candidate(index, &self.providers[index]);
        if index > 0 {
            tracing::info!(
                target: "llm_tools::fallback",
                index,
                provider = %answered.protocol,
                model = %answered.model,
                failed = report.failures.len(),
                "a fallback provider answered"
            );
        }
        report.answered = Some(answered);
        self.remember(report);
    }

    async fn run_complete(&self, request: Request<'_>) -> Result<Response, ProviderError> {
        let mut report = FallbackReport::default();
        for (index, provider) in self.providers.iter().enumerate() {
            match provider
                .complete(request)
                .instrument(span(index, provider))
                .await
            {
                Ok(mut response) => {
                    if response.model.is_none() {
                        response.model = Some(provider.model().to_owned());
                    }
                    self.answered(index, report);
                    return Ok(response);
                }
                Err(error) => {
                    if !self.failed(index, error, &mut report) {
                        break;
                    }
                }
            }
        }
        Err(self.give_up(report))
    }

    async fn run_stream<'a>(
        &'a self,
        request: Request<'a>,
    ) -> Result<EventStream<'a>, ProviderError> {
        let mut report = FallbackReport::default();
        for (index, provider) in self.providers.iter().enumerate() {
            let first = async {
                let mut stream = provider.stream(request).await?;
                match stream.next().await {
                    Some(Ok(event)) => Ok((event, stream)),
                    Some(Err(error)) => Err(error),
                    None => Err(ProviderError::new(
                        provider.protocol(),
                        ProviderErrorKind::Stream,
                        "the stream ended before its first event",
                    )
                    .with_retryable(true)),
                }
            };
            match first.instrument(span(index, provider)).await {
                Ok((event, rest)) => {
                    self.answered(index, report);
                    let model = provider.model().to_owned();
                    let events = futures::stream::once(async move { Ok(event) })
                        .chain(rest)
                        .map(move |event| match event {
                            Ok(StreamEvent::Completed(mut response)) => {
                                if response.model.is_none() {
                                    response.model = Some(model.clone());
                                }
                                Ok(StreamEvent::Completed(response))
                            }
                            other => other,
                        });
                    return Ok(Box::pin(events));
                }
                Err(error) => {
                    if !self.failed(index, error, &mut report) {
                        break;
                    }
                }
            }
        }
        Err(self.give_up(report))
    }

    /// The error of a request no provider answered: the last failure's (kept in the report).
    fn give_up(&self, report: FallbackReport) -> ProviderError {
        let error = match report.failures.last() {
            Some(last) => last.error.clone(),
            None => ProviderError::new(
                "fallback",
                ProviderErrorKind::Request,
                "the fallback provider has no provider",
            ),
        };
        self.remember(report);
        error
    }
}

fn candidate(index: usize, provider: &Arc<dyn Provider>) -> Candidate {
    Candidate {
        index,
        protocol: provider.protocol().to_owned(),
        model: provider.model().to_owned(),
    }
}

fn span(index: usize, provider: &Arc<dyn Provider>) -> tracing::Span {
    tracing::info_span!(
        target: "llm_tools::fallback",
        "fallback",
        llm_tools.fallback.index = index,
        gen_ai.provider.name = provider.protocol(),
        gen_ai.request.model = provider.model(),
    )
}

impl fmt::Debug for FallbackProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FallbackProvider")
            .field(
                "providers",
                &self
                    .providers
                    .iter()
                    .enumerate()
                    .map(|(i, p)| candidate(i, p))
                    .collect::<Vec<_>>(),
            )
            .field("on_context_length", &self.on_context_length)
            .finish_non_exhaustive()
    }
}

impl Provider for FallbackProvider {
    /// The first provider's protocol (see the [module](self#what-a-saved-chat-sees)).
    fn protocol(&self) -> &str {
        self.providers.first().map_or("fallback", |p| p.protocol())
    }

    /// The first provider's model; [`Response::model`] is the answering one's.
    fn model(&self) -> &str {
        self.providers.first().map_or("", |p| p.model())
    }

    /// Whether every provider searches deferred tools itself, so the model is offered the same
    /// tools whichever answers.
    fn native_tool_search(&self) -> bool {
        self.providers.iter().all(|p| p.native_tool_search())
    }

    /// The params every provider of the chain takes as its output limit: the same params go
    /// to whichever answers, so a chain whose providers name the limit differently (across
    /// protocols) has none.
    fn output_limit(&self, tokens: u32) -> Option<serde_json::Map<String, serde_json::Value>> {
        let mut providers = self.providers.iter();
        let first = providers.next()?.output_limit(tokens)?;
        providers
            .all(|p| p.output_limit(tokens).as_ref() == Some(&first))
            .then_some(first)
    }

    fn complete<'a>(
        &'a self,
        request: Request<'a>,
    ) -> BoxFuture<'a, Result<Response, ProviderError>> {
        Box::pin(self.run_complete(request))
    }

    fn stream<'a>(
        &'a self,
        request: Request<'a>,
    ) -> BoxFuture<'a, Result<EventStream<'a>, ProviderError>> {
        Box::pin(self.run_stream(request))
    }
}

#[cfg(test)]
mod tests {
    use futures::executor::block_on;
    use llm_tools_core::Message;
    use llm_tools_core::chat::Chat;
    use llm_tools_core::testing::ScriptedProvider;

    use super::*;

    fn overloaded() -> ProviderError {
        ProviderError::http("primary", 503, "overloaded").with_retryable(true)
    }

    fn too_long() -> ProviderError {
        ProviderError::http("primary", 400, "prompt is too long")
            .with_kind(ProviderErrorKind::ContextLengthExceeded)
    }

    fn pair(primary: ScriptedProvider, secondary: ScriptedProvider) -> Arc<FallbackProvider> {
        Arc::new(
            FallbackProvider::new([
                Arc::new(primary.with_model("big")) as Arc<dyn Provider>,
                Arc::new(secondary.with_model("small")),
            ])
            .unwrap(),
        )
    }

    fn ask(provider: &Arc<FallbackProvider>) -> Result<String, Error> {
        let mut chat = Chat::new(Arc::clone(provider));
        let answer = block_on(chat.ask("Hi"))?;
        Ok(answer.text().unwrap_or_default())
    }

    #[test]
    fn a_retryable_failure_falls_back_and_the_answer_names_its_model() {
        let secondary = ScriptedProvider::new().then_text("from the secondary");
        let provider = pair(
            ScriptedProvider::new().then_error(overloaded()),
            secondary.clone(),
        );
        assert_eq!(ask(&provider).unwrap(), "from the secondary");
        let report = provider.last_report().unwrap();
        assert!(report.fell_back());
        assert_eq!(report.answered.unwrap().model, "small");
        assert_eq!(report.failures[0].error.status(), Some(503));
        // The whole answer names the model that wrote it.
        let provider = pair(
            ScriptedProvider::new().then_error(overloaded()),
            ScriptedProvider::new().then_text("again"),
        );
        let messages = [Message::user("Hi")];
        let response = block_on(provider.complete(Request::new(&messages, &[]))).unwrap();
        assert_eq!(response.model.as_deref(), Some("small"));
        assert_eq!((provider.protocol(), provider.model()), ("scripted", "big"));
    }

    #[test]
    fn other_errors_do_not_fall_back_and_context_length_only_when_enabled() {
        let refused = ProviderError::http("primary", 400, "bad tool name");
        let secondary = ScriptedProvider::new().then_text("unused").cycle();
        let provider = pair(
            ScriptedProvider::new().then_error(refused),
            secondary.clone(),
        );
        assert!(ask(&provider).is_err());
        let provider = pair(
            ScriptedProvider::new().then_error(too_long()),
            secondary.clone(),
        );
        assert!(ask(&provider).is_err());
        assert_eq!(secondary.request_count(), 0);

        let provider = Arc::new(
            FallbackProvider::new([
                Arc::new(ScriptedProvider::new().then_error(too_long())) as Arc<dyn Provider>,
                Arc::new(secondary.clone()),
            ])
            .unwrap()
            .on_context_length(true),
        );
        assert_eq!(ask(&provider).unwrap(), "unused");
        assert_eq!(secondary.request_count(), 1);
    }

    #[test]
    fn when_all_fail_the_last_error_comes_and_every_failure_is_reported() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let keep = Arc::clone(&seen);
        let provider = Arc::new(
            FallbackProvider::new([
                Arc::new(ScriptedProvider::new().then_error(overloaded())) as Arc<dyn Provider>
            ])
            .unwrap()
            .or(ScriptedProvider::new().then_error(overloaded()))
            .or(ScriptedProvider::new()
                .then_error(ProviderError::http("third", 429, "slow down").with_retryable(true)))
            .with_on_fallback(move |info| keep.lock().unwrap().push(info.next.index)),
        );
        let Err(Error::Provider(e)) = ask(&provider) else {
            panic!("expected a provider error");
        };
        assert_eq!((e.provider(), e.status()), ("third", Some(429)));
        let report = provider.last_report().unwrap();
        assert!(report.answered.is_none());
        let failed: Vec<_> = report.failures.iter().map(|f| f.provider.index).collect();
        assert_eq!(failed, [0, 1, 2]);
        assert_eq!(*seen.lock().unwrap(), [1, 2]);
    }

    #[test]
    fn a_stream_falls_back_when_it_fails_before_its_first_event() {
        let provider = pair(
            ScriptedProvider::new().then_error(overloaded()),
            ScriptedProvider::new().then_text("streamed"),
        );
        let messages = [Message::user("Hi")];
        let events: Vec<_> = block_on(async {
            let stream = provider.stream(Request::new(&messages, &[])).await?;
            Ok::<_, ProviderError>(stream.collect::<Vec<_>>().await)
        })
        .unwrap();
        let Some(Ok(StreamEvent::Completed(response))) = events.last() else {
            panic!("the stream ends with the answer: {events:?}");
        };
        assert_eq!(response.message.text(), "streamed");
        assert_eq!(response.model.as_deref(), Some("small"));
        assert_eq!(provider.last_report().unwrap().answered.unwrap().index, 1);
    }
}
