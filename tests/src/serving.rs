//! Serving answers and failures to the providers from the loopback replay server: an exchange
//! that answers the next request whatever it asks, a provider configuration pointed at the
//! server with quick retries that are logged, the provider error inside a chat error, a
//! streamed turn read to its end, and server-sent-event bodies.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use llm_tools_core::chat::{Chat, ChatEvent};
use llm_tools_core::{Error, ProviderError, StreamEvent};
use llm_tools_providers::config::ProviderConfig;
use llm_tools_providers::http::RetryPolicy;
use llm_tools_providers::record::{Interaction, RecordedRequest, RecordedResponse};
use llm_tools_providers::replay::ReplayServer;
use serde_json::{Value, json};

/// An exchange answering the next request with `response` (the server serves exchanges in
/// order; `url` is what the recording says was asked).
pub fn exchange(url: &str, response: RecordedResponse) -> Interaction {
    Interaction::new(RecordedRequest::post(url, json!({})), response)
}

/// Every retry a provider made: the delay before it and the error that caused it.
#[derive(Clone, Default)]
pub struct RetryLog(Arc<Mutex<Vec<(Duration, ProviderError)>>>);

impl RetryLog {
    /// The retries so far, in order.
    pub fn seen(&self) -> Vec<(Duration, ProviderError)> {
        self.lock().clone()
    }

    /// The delays of the retries so far, in order.
    pub fn delays(&self) -> Vec<Duration> {
        self.lock().iter().map(|(d, _)| *d).collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(Duration, ProviderError)>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// `config` pointed at `server` with `retries` retries after 1 to 4 ms (unless the server asks
/// for a delay), each logged in `log`.
pub fn on_server<O>(
    config: ProviderConfig<O>,
    server: &ReplayServer,
    retries: u32,
    log: &RetryLog,
) -> ProviderConfig<O> {
    let log = log.clone();
    config
        .with_base_url(server.url())
        .with_retry(
            RetryPolicy::default()
                .with_max_retries(retries)
                .with_backoff(Duration::from_millis(1), Duration::from_millis(4)),
        )
        .with_on_retry(move |info| log.lock().push((info.delay, info.error.clone())))
}

/// The provider error a chat returned.
///
/// # Panics
///
/// When the error is another kind: the test expected a provider error.
#[allow(clippy::panic)] // a test's expectation
pub fn provider_error(e: Error) -> ProviderError {
    match e {
        Error::Provider(p) => *p,
        other => panic!("expected a provider error, got {other:?}"),
    }
}

/// Asks `ask` with a streamed turn and reads it to its end: the text it streamed, and every
/// event; the first error ends it.
pub async fn stream_turn(chat: &mut Chat, ask: &str) -> Result<(String, Vec<ChatEvent>), Error> {
    let mut events = Vec::new();
    let mut text = String::new();
    let mut stream = chat.ask_stream(ask);
    while let Some(event) = stream.next().await {
        let event = event?;
        text.push_str(event.text_delta().unwrap_or_default());
        events.push(event);
    }
    Ok((text, events))
}

/// The names of the tools whose calls started in a streamed turn, in order.
pub fn started_calls(events: &[ChatEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::Model(StreamEvent::ToolCallStarted { name, .. }) => Some(name.clone()),
            _ => None,
        })
        .collect()
}

/// Named server-sent events (`event: name` and `data: …`), as Anthropic and the Responses API
/// send them.
pub fn sse_events(events: &[(&str, Value)]) -> String {
    events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect()
}
