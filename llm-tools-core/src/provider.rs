//! The provider seam: what the chat loop asks of a wire protocol.
//!
//! Core never knows a wire format; `llm-tools-providers` implements [`Provider`] once per
//! protocol, and the `testing` module has a scripted one for tests.

use std::pin::Pin;
use std::sync::Arc;

use futures::Stream;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{
    error::ProviderError,
    future::BoxFuture,
    message::{Message, Usage},
    provider_tools::ProviderTool,
    structured::OutputSchema,
    tool::Tool,
};

/// Which tools the model may (or must) call.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolChoice {
    /// The model decides (the default).
    #[default]
    Auto,
    /// No tool calls.
    None,
    /// At least one tool call.
    Required,
    /// This tool, by joined name (`crm_customer_lookup`).
    Tool(String),
}

impl ToolChoice {
    /// Forces one tool, by its joined name.
    pub fn tool(joined_name: impl Into<String>) -> Self {
        ToolChoice::Tool(joined_name.into())
    }

    /// Whether the choice forces a call (and so is reset after the round it forced).
    pub fn is_forced(&self) -> bool {
        matches!(self, ToolChoice::Required | ToolChoice::Tool(_))
    }
}

/// One request to the model: the conversation, the tools and the options.
#[derive(Clone, Copy)]
#[non_exhaustive]
pub struct Request<'a> {
    /// The conversation so far, instructions included.
    pub messages: &'a [Message],
    /// The tools the model may call (deferred tools included; providers leave them out or send
    /// them for tool search, unless [`deferred_chosen`](Self::deferred_chosen)).
    pub tools: &'a [Arc<dyn Tool>],
    /// Whether the deferred tools among [`tools`](Self::tools) were chosen to be sent as they
    /// are: a chat that searches deferred tools itself (for a provider without native tool
    /// search) offers only the ones its search found or the choice forces, and a provider then
    /// sends every tool it gets. `false` (the default): a provider without native tool search
    /// leaves deferred tools out.
    pub deferred_chosen: bool,
    /// Which tools the model may call.
    pub choice: &'a ToolChoice,
    /// Whether the model may call several tools in one answer (`None`: the provider's default).
    pub parallel_tool_calls: Option<bool>,
    /// Raw JSON merged into the request body (the chat's `with_params`).
    pub params: Option<&'a Map<String, Value>>,
    /// The JSON shape the final answer must take (the chat's `with_output`); providers send it
    /// in their own form, or refuse the request when they have none.
    pub output: Option<&'a OutputSchema>,
    /// The tools the provider runs itself, sent beside the function tools; a provider that has
    /// no such tool refuses the request.
    pub provider_tools: &'a [ProviderTool],
}

impl<'a> Request<'a> {
    /// A request with automatic tool choice and no extra parameters.
    pub fn new(messages: &'a [Message], tools: &'a [Arc<dyn Tool>]) -> Self {
        const AUTO: &ToolChoice = &ToolChoice::Auto;
        Self {
            messages,
            tools,
            choice: AUTO,
            deferred_chosen: false,
            parallel_tool_calls: None,
            params: None,
            output: None,
            provider_tools: &[],
        }
    }

    /// Sets the tool choice.
    #[must_use]
    pub fn with_choice(mut self, choice: &'a ToolChoice) -> Self {
        self.choice = choice;
        self
    }

    /// Says whether the deferred tools among the request's tools were chosen to be sent as
    /// they are ([`deferred_chosen`](Self::deferred_chosen)).
    #[must_use]
    pub fn with_deferred_chosen(mut self, chosen: bool) -> Self {
        self.deferred_chosen = chosen;
        self
    }

    /// Sets the parallel-calls switch.
    #[must_use]
    pub fn with_parallel_tool_calls(mut self, parallel: Option<bool>) -> Self {
        self.parallel_tool_calls = parallel;
        self
    }

    /// Sets raw JSON merged into the body.
    #[must_use]
    pub fn with_params(mut self, params: Option<&'a Map<String, Value>>) -> Self {
        self.params = params;
        self
    }

    /// Sets the provider tools.
    #[must_use]
    pub fn with_provider_tools(mut self, tools: &'a [ProviderTool]) -> Self {
        self.provider_tools = tools;
        self
    }

    /// Sets the structured output the answer must take.
    #[must_use]
    pub fn with_output(mut self, output: Option<&'a OutputSchema>) -> Self {
        self.output = output;
        self
    }

    /// The tool with this joined name.
    pub fn tool(&self, joined_name: &str) -> Option<&'a Arc<dyn Tool>> {
        self.tools
            .iter()
            .find(|t| t.spec().joined_name() == joined_name)
    }
}

impl std::fmt::Debug for Request<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("messages", &self.messages.len())
            .field(
                "tools",
                &self
                    .tools
                    .iter()
                    .map(|t| t.spec().joined_name())
                    .collect::<Vec<_>>(),
            )
            .field("deferred_chosen", &self.deferred_chosen)
            .field("choice", self.choice)
            .field("parallel_tool_calls", &self.parallel_tool_calls)
            .field("output", &self.output.map(OutputSchema::name))
            .field("provider_tools", &self.provider_tools.len())
            .finish_non_exhaustive()
    }
}

/// The model's answer to one request.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Response {
    /// The assistant message: text, tool calls, usage, provider data.
    pub message: Message,
    /// The provider's finish reason, as it said it (informative only: tool calls are detected
    /// by their presence).
    pub finish_reason: Option<String>,
    /// The provider's request id.
    pub request_id: Option<String>,
    /// The model that answered, as the provider reported it.
    pub model: Option<String>,
}

impl Response {
    /// A response carrying one assistant message.
    pub fn new(message: Message) -> Self {
        Self {
            message,
            finish_reason: None,
            request_id: None,
            model: None,
        }
    }

    /// Sets the finish reason.
    #[must_use]
    pub fn with_finish_reason(mut self, reason: Option<String>) -> Self {
        self.finish_reason = reason;
        self
    }

    /// Sets the request id.
    #[must_use]
    pub fn with_request_id(mut self, id: Option<String>) -> Self {
        self.request_id = id;
        self
    }

    /// Sets the model.
    #[must_use]
    pub fn with_model(mut self, model: Option<String>) -> Self {
        self.model = model;
        self
    }
}

/// One event of a streamed answer.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
#[allow(clippy::large_enum_variant)] // `Completed` comes once per stream, last
pub enum StreamEvent {
    /// A piece of the answer's text.
    TextDelta(String),
    /// A piece of the model's visible reasoning.
    ReasoningDelta(String),
    /// A tool call started.
    ToolCallStarted {
        /// The call's position in the answer.
        index: usize,
        /// The call's id.
        id: String,
        /// The tool's own name.
        name: String,
        /// The tool's namespace.
        namespace: Option<String>,
    },
    /// A fragment of a tool call's JSON arguments.
    ToolCallDelta {
        /// The call's position in the answer.
        index: usize,
        /// The fragment.
        fragment: String,
    },
    /// A tool call's arguments are complete: no `ToolCallDelta` of the call follows (a
    /// stream that sends more arguments for it fails with a decode error naming the call).
    ToolCallReady {
        /// The call's position in the answer.
        index: usize,
    },
    /// Token counts (may come more than once; the last one counts).
    Usage(Usage),
    /// The whole answer, assembled; always the last event of a successful stream. Boxed, so
    /// the many small events of a stream stay small.
    Completed(Box<Response>),
}

/// A stream of [`StreamEvent`]s.
pub type EventStream<'a> =
    Pin<Box<dyn Stream<Item = Result<StreamEvent, ProviderError>> + Send + 'a>>;

/// A wire protocol: turns a [`Request`] into the model's [`Response`].
///
/// Implementations serialize each tool's definition once per dialect (see
/// [`ToolSpec::cached_definition`](crate::ToolSpec::cached_definition)), detect tool calls by
/// their presence, map joined names back to namespaces, and report failures as
/// [`ProviderError`]s.
pub trait Provider: Send + Sync + 'static {
    /// The protocol's name (`"openai-chat"`, `"anthropic"`, …), also the key of the
    /// [`ProviderData`](crate::ProviderData) it reads back.
    fn protocol(&self) -> &str;

    /// The model the provider talks to.
    fn model(&self) -> &str;

    /// Whether the provider sends deferred tools (`ToolSpec::defer`) with its own server-side
    /// tool search. When it does, a chat offers it every tool; when it does not (the default),
    /// the chat keeps deferred tools out of its requests and offers its own `tool_search` tool
    /// (see [`chat`](crate::chat#deferred-tools-and-tool-search)). A provider that does not
    /// search sends every tool it is given.
    fn native_tool_search(&self) -> bool {
        false
    }

    /// The request params ([`Request::with_params`]) that hold one answer to at most `tokens`
    /// output tokens, in the protocol's own field: `max_tokens` for Anthropic and Cohere,
    /// `max_output_tokens` for OpenAI's Responses, `generationConfig.maxOutputTokens` for
    /// Gemini, and so on. `None` (the default) when the provider has no such field, or when
    /// one set of params cannot say it for every model it may send to (a fallback chain
    /// across protocols). Whoever lets a third party choose an answer's length (an MCP
    /// server's sampling request) bounds the spend with these.
    ///
    /// ```
    /// use llm_tools_core::{Provider as _, testing::ScriptedProvider};
    ///
    /// // The scripted provider of the tests has no output limit.
    /// assert!(ScriptedProvider::new().output_limit(256).is_none());
    /// ```
    fn output_limit(&self, tokens: u32) -> Option<Map<String, Value>> {
        let _ = tokens;
        None
    }

    /// Sends the request and returns the whole answer.
    fn complete<'a>(
        &'a self,
        request: Request<'a>,
    ) -> BoxFuture<'a, Result<Response, ProviderError>>;

    /// Sends the request and streams the answer; the last event is
    /// [`StreamEvent::Completed`]. The default completes the request and replays the answer as
    /// events, for protocols without streaming.
    fn stream<'a>(
        &'a self,
        request: Request<'a>,
    ) -> BoxFuture<'a, Result<EventStream<'a>, ProviderError>> {
        Box::pin(async move {
            let response = self.complete(request).await?;
            let events = events_of(response);
            let stream: EventStream<'a> =
                Box::pin(futures::stream::iter(events.into_iter().map(Ok)));
            Ok(stream)
        })
    }
}

/// The events a streaming provider would have sent for `response`.
pub fn events_of(response: Response) -> Vec<StreamEvent> {
    let mut events = Vec::new();
    let text = response.message.text();
    if !text.is_empty() {
        events.push(StreamEvent::TextDelta(text));
    }
    for (index, call) in response.message.tool_calls.iter().enumerate() {
        events.push(StreamEvent::ToolCallStarted {
            index,
            id: call.id.clone(),
            name: call.name.clone(),
            namespace: call.namespace.clone(),
        });
        events.push(StreamEvent::ToolCallDelta {
            index,
            fragment: call.arguments.clone(),
        });
        events.push(StreamEvent::ToolCallReady { index });
    }
    if let Some(usage) = response.message.usage {
        events.push(StreamEvent::Usage(usage));
    }
    events.push(StreamEvent::Completed(Box::new(response)));
    events
}

/// A shared or boxed provider is a provider: every method goes to the one inside.
macro_rules! forward_provider {
    ($($pointer:ident),*) => {$(
        impl<P: Provider + ?Sized> Provider for $pointer<P> {
            fn protocol(&self) -> &str {
                (**self).protocol()
            }

            fn model(&self) -> &str {
                (**self).model()
            }

            fn native_tool_search(&self) -> bool {
                (**self).native_tool_search()
            }

            fn output_limit(&self, tokens: u32) -> Option<Map<String, Value>> {
                (**self).output_limit(tokens)
            }

            fn complete<'a>(
                &'a self,
                request: Request<'a>,
            ) -> BoxFuture<'a, Result<Response, ProviderError>> {
                (**self).complete(request)
            }

            fn stream<'a>(
                &'a self,
                request: Request<'a>,
            ) -> BoxFuture<'a, Result<EventStream<'a>, ProviderError>> {
                (**self).stream(request)
            }
        }
    )*};
}

forward_provider!(Arc, Box);
