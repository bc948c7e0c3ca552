//! Testing without a network: [`ScriptedProvider`] plays a model from a script and records
//! every request the chat sent it.
//!
//! ```
//! use llm_tools_core::chat::Chat;
//! use llm_tools_core::testing::ScriptedProvider;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
//! let model = ScriptedProvider::new().then_text("Paris.");
//! let mut chat = Chat::new(model.clone());
//! let outcome = chat.ask("Capital of France?").await?;
//! assert_eq!(outcome.text().as_deref(), Some("Paris."));
//!
//! let requests = model.requests();
//! assert_eq!(requests.len(), 1);
//! assert_eq!(requests[0].messages[0].text(), "Capital of France?");
//! # Ok::<_, llm_tools_core::Error>(())
//! # }).unwrap();
//! ```

use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Map, Value};

use crate::{
    error::{ProviderError, ProviderErrorKind},
    future::BoxFuture,
    message::{Message, ToolCall},
    provider::{EventStream, Provider, Request, Response, StreamEvent, ToolChoice},
};

/// A [`Provider`] that answers each request with the next entry of a script (an assistant
/// message, a whole [`Response`], or an error) and records the requests it got.
///
/// Cloning it shares the script and the records, so a test keeps a clone to inspect what the
/// chat sent. [`stream`](Provider::stream) replays each answer as fine-grained events (text in
/// small pieces, arguments in fragments), as a streaming provider would.
///
/// Tool call ids the script does not set are `call_1`, `call_2`, … in script order.
#[derive(Clone)]
pub struct ScriptedProvider {
    inner: Arc<Inner>,
}

struct Inner {
    model: String,
    record: bool,
    cycle: bool,
    native_tool_search: bool,
    script: Vec<Scripted>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    next: usize,
    requests: Vec<RecordedRequest>,
    count: usize,
}

#[derive(Clone)]
enum Scripted {
    Reply(Box<Response>),
    Fail(ProviderError),
    Hang,
}

/// One request as the provider received it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct RecordedRequest {
    /// The conversation sent.
    pub messages: Vec<Message>,
    /// The joined names of the tools offered, in order.
    pub tools: Vec<String>,
    /// The tool choice.
    pub choice: ToolChoice,
    /// The parallel-calls switch.
    pub parallel_tool_calls: Option<bool>,
    /// The raw parameters merged into the body.
    pub params: Option<Map<String, Value>>,
    /// The structured output asked for.
    pub output: Option<crate::structured::OutputSchema>,
    /// The provider tools offered.
    pub provider_tools: Vec<crate::provider_tools::ProviderTool>,
}

impl Default for ScriptedProvider {
    fn default() -> Self {
        Self::new()
    }
}

impl ScriptedProvider {
    /// An empty script; a request past its end fails with a provider error.
    pub fn new() -> Self {
        Self {
            inner: Arc::new(Inner {
                model: "scripted".to_owned(),
                record: true,
                cycle: false,
                native_tool_search: false,
                script: Vec::new(),
                state: Mutex::new(State::default()),
            }),
        }
    }

    fn edit(mut self, f: impl FnOnce(&mut Inner)) -> Self {
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => f(inner),
            None => {
                let mut inner = Inner {
                    model: self.inner.model.clone(),
                    record: self.inner.record,
                    cycle: self.inner.cycle,
                    native_tool_search: self.inner.native_tool_search,
                    script: self.inner.script.clone(),
                    state: Mutex::new(State::default()),
                };
                f(&mut inner);
                self.inner = Arc::new(inner);
            }
        }
        self
    }

    fn calls_so_far(&self) -> usize {
        self.inner
            .script
            .iter()
            .map(|s| match s {
                Scripted::Reply(r) => r.message.tool_calls.len(),
                _ => 0,
            })
            .sum()
    }

    /// Next, the model answers with this message (its role is set to assistant). Tool calls
    /// with an empty id get `call_N`.
    #[must_use]
    pub fn then(self, mut message: Message) -> Self {
        message.role = crate::message::Role::Assistant;
        let mut n = self.calls_so_far();
        for call in &mut message.tool_calls {
            n += 1;
            if call.id.is_empty() {
                call.id = format!("call_{n}");
            }
        }
        self.then_response(Response::new(message))
    }

    /// Next, the model answers with this text.
    #[must_use]
    pub fn then_text(self, text: impl Into<String>) -> Self {
        self.then(Message::assistant(text))
    }

    /// Next, the model calls one tool (by joined name) with these arguments.
    #[must_use]
    pub fn then_call(self, name: impl Into<String>, arguments: Value) -> Self {
        self.then_calls([(name, arguments)])
    }

    /// Next, the model calls several tools in one answer, `(joined name, arguments)` each.
    #[must_use]
    pub fn then_calls<N: Into<String>>(self, calls: impl IntoIterator<Item = (N, Value)>) -> Self {
        let calls = calls
            .into_iter()
            .map(|(name, args)| ToolCall::new("", name, args.to_string()))
            .collect();
        self.then(Message::assistant_with_calls("", calls))
    }

    /// Next, the model answers with these tool calls as they are (raw argument text included,
    /// invalid JSON too).
    #[must_use]
    pub fn then_tool_calls(self, calls: Vec<ToolCall>) -> Self {
        self.then(Message::assistant_with_calls("", calls))
    }

    /// Next, the provider returns this response as it is.
    #[must_use]
    pub fn then_response(self, response: Response) -> Self {
        self.edit(|inner| inner.script.push(Scripted::Reply(Box::new(response))))
    }

    /// Next, the provider fails with this error.
    #[must_use]
    pub fn then_error(self, error: ProviderError) -> Self {
        self.edit(|inner| inner.script.push(Scripted::Fail(error)))
    }

    /// Next, the provider never answers (to test cancellation).
    #[must_use]
    pub fn then_hang(self) -> Self {
        self.edit(|inner| inner.script.push(Scripted::Hang))
    }

    /// Plays the script again from the start when it runs out (for benchmarks).
    #[must_use]
    pub fn cycle(self) -> Self {
        self.edit(|inner| inner.cycle = true)
    }

    /// Keeps no copy of the requests, only their count (for benchmarks).
    #[must_use]
    pub fn without_recording(self) -> Self {
        self.edit(|inner| inner.record = false)
    }

    /// Behaves as a provider with its own tool search
    /// ([`Provider::native_tool_search`]): a chat then offers it every tool, deferred ones
    /// included.
    #[must_use]
    pub fn with_native_tool_search(self) -> Self {
        self.edit(|inner| inner.native_tool_search = true)
    }

    /// Sets the model name the provider reports.
    #[must_use]
    pub fn with_model(self, model: impl Into<String>) -> Self {
        let model = model.into();
        self.edit(|inner| inner.model = model)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.state().requests.clone()
    }

    /// How many requests were received.
    pub fn request_count(&self) -> usize {
        self.state().count
    }

    /// How many script entries are left.
    pub fn remaining(&self) -> usize {
        self.inner.script.len().saturating_sub(self.state().next)
    }

    fn next(&self, request: &Request<'_>) -> Result<Scripted, ProviderError> {
        let mut state = self.state();
        state.count += 1;
        if self.inner.record {
            state.requests.push(RecordedRequest {
                messages: request.messages.to_vec(),
                tools: request
                    .tools
                    .iter()
                    .map(|t| t.spec().joined_name().to_owned())
                    .collect(),
                choice: request.choice.clone(),
                parallel_tool_calls: request.parallel_tool_calls,
                params: request.params.cloned(),
                output: request.output.cloned(),
                provider_tools: request.provider_tools.to_vec(),
            });
        }
        if state.next == self.inner.script.len() && self.inner.cycle {
            state.next = 0;
        }
        let Some(entry) = self.inner.script.get(state.next) else {
            return Err(ProviderError::new(
                "scripted",
                ProviderErrorKind::Request,
                format!(
                    "the script has no answer for request {} (it has {})",
                    state.count,
                    self.inner.script.len()
                ),
            ));
        };
        state.next += 1;
        Ok(entry.clone())
    }
}

impl Provider for ScriptedProvider {
    fn protocol(&self) -> &str {
        "scripted"
    }

    fn model(&self) -> &str {
        &self.inner.model
    }

    fn native_tool_search(&self) -> bool {
        self.inner.native_tool_search
    }

    fn complete<'a>(
        &'a self,
        request: Request<'a>,
    ) -> BoxFuture<'a, Result<Response, ProviderError>> {
        let next = self.next(&request);
        Box::pin(async move {
            match next? {
                Scripted::Reply(response) => Ok(*response),
                Scripted::Fail(error) => Err(error),
                Scripted::Hang => std::future::pending().await,
            }
        })
    }

    fn stream<'a>(
        &'a self,
        request: Request<'a>,
    ) -> BoxFuture<'a, Result<EventStream<'a>, ProviderError>> {
        let next = self.next(&request);
        Box::pin(async move {
            let response = match next? {
                Scripted::Reply(response) => *response,
                Scripted::Fail(error) => return Err(error),
                Scripted::Hang => std::future::pending().await,
            };
            let events = fine_grained(response);
            let stream: EventStream<'a> =
                Box::pin(futures::stream::iter(events.into_iter().map(Ok)));
            Ok(stream)
        })
    }
}

/// The events of `response` as a streaming provider sends them: text in pieces of a few
/// characters, each call's arguments in two fragments.
fn fine_grained(response: Response) -> Vec<StreamEvent> {
    let mut events = Vec::new();
    for event in crate::provider::events_of(response) {
        match event {
            StreamEvent::TextDelta(text) => {
                let mut piece = String::new();
                for (i, c) in text.chars().enumerate() {
                    piece.push(c);
                    if i % 4 == 3 {
                        events.push(StreamEvent::TextDelta(std::mem::take(&mut piece)));
                    }
                }
                if !piece.is_empty() {
                    events.push(StreamEvent::TextDelta(piece));
                }
            }
            StreamEvent::ToolCallDelta { index, fragment } => {
                let mid = fragment
                    .char_indices()
                    .nth(fragment.chars().count() / 2)
                    .map_or(fragment.len(), |(at, _)| at);
                let (first, second) = fragment.split_at(mid);
                for part in [first, second] {
                    if !part.is_empty() {
                        events.push(StreamEvent::ToolCallDelta {
                            index,
                            fragment: part.to_owned(),
                        });
                    }
                }
            }
            other => events.push(other),
        }
    }
    events
}

impl std::fmt::Debug for ScriptedProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedProvider")
            .field("model", &self.inner.model)
            .field("script", &self.inner.script.len())
            .field("requests", &self.request_count())
            .finish_non_exhaustive()
    }
}
