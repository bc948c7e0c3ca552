//! Errors: [`ToolError`] inside tools, [`Error`] for callers, [`ProviderError`] from the wire.

use std::borrow::Cow;
use std::error::Error as StdError;
use std::fmt;
use std::time::Duration;

use crate::question::Question;

/// The error type of a tool.
///
/// Two kinds, matching what the chat does with them:
///
/// - **recoverable** ([`ToolError::recoverable`]): the model gets the message as an error result
///   and the conversation goes on (a location too short, a service that is down);
/// - **fatal** (what `?` gives on any `std::error::Error`: an I/O error, a database error): the turn
///   stops and the caller gets [`Error::ToolFailed`]; the round's finished results are kept and
///   its unfinished calls are closed, so nothing runs twice.
///
/// Like `anyhow::Error`, `ToolError` does not implement `std::error::Error` itself; that is what
/// lets `?` convert any error into it.
///
/// ```
/// use llm_tools_core::{tool, ToolError};
///
/// /// Reads a note
/// #[tool]
/// async fn read_note(name: String) -> Result<String, ToolError> {
///     if name.len() < 3 {
///         return Err(ToolError::recoverable("the note name must have at least 3 characters"));
///     }
///     Ok(std::fs::read_to_string(format!("/tmp/notes/{name}"))?) // an I/O error is fatal
/// }
/// ```
pub struct ToolError {
    repr: Repr,
}

enum Repr {
    Recoverable(Cow<'static, str>),
    Fatal(Box<dyn StdError + Send + Sync + 'static>),
    InputRequired(Box<Question>),
}

impl ToolError {
    /// An error the model should see and can act on; the conversation goes on.
    pub fn recoverable(message: impl fmt::Display) -> Self {
        Self {
            repr: Repr::Recoverable(Cow::Owned(message.to_string())),
        }
    }

    /// An error that stops the turn and reaches the caller.
    pub fn fatal(error: impl Into<Box<dyn StdError + Send + Sync + 'static>>) -> Self {
        Self {
            repr: Repr::Fatal(error.into()),
        }
    }

    /// The call needs an answer to `question` before it can go on. [`ToolContext::ask`]
    /// returns this when the question is not answered yet; propagate it with `?`.
    ///
    /// [`ToolContext::ask`]: crate::ToolContext::ask
    pub fn input_required(question: Question) -> Self {
        Self {
            repr: Repr::InputRequired(Box::new(question)),
        }
    }

    /// Whether the error stops the turn.
    pub fn is_fatal(&self) -> bool {
        matches!(self.repr, Repr::Fatal(_))
    }

    /// Whether the model gets the error as a result.
    pub fn is_recoverable(&self) -> bool {
        matches!(self.repr, Repr::Recoverable(_))
    }

    /// The unanswered question, for an input-required error.
    pub fn question(&self) -> Option<&Question> {
        match &self.repr {
            Repr::InputRequired(q) => Some(q),
            _ => None,
        }
    }

    /// The underlying error of a fatal error.
    pub fn source_error(&self) -> Option<&(dyn StdError + Send + Sync + 'static)> {
        match &self.repr {
            Repr::Fatal(e) => Some(e.as_ref()),
            _ => None,
        }
    }

    /// Turns the error into a boxed `std::error::Error` (for `?` in code that wants one).
    pub fn into_boxed(self) -> Box<dyn StdError + Send + Sync + 'static> {
        match self.repr {
            Repr::Fatal(e) => e,
            _ => Box::new(ToolErrorMessage(self.to_string())),
        }
    }
}

#[derive(Debug)]
struct ToolErrorMessage(String);

impl fmt::Display for ToolErrorMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl StdError for ToolErrorMessage {}

impl<E> From<E> for ToolError
where
    E: StdError + Send + Sync + 'static,
{
    fn from(error: E) -> Self {
        Self::fatal(error)
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Recoverable(m) => f.write_str(m),
            Repr::Fatal(e) => fmt::Display::fmt(e, f),
            Repr::InputRequired(q) => write!(f, "input required: {}", q.message()),
        }
    }
}

impl fmt::Debug for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Recoverable(m) => f.debug_tuple("Recoverable").field(m).finish(),
            Repr::Fatal(e) => f.debug_tuple("Fatal").field(e).finish(),
            Repr::InputRequired(q) => f.debug_tuple("InputRequired").field(q).finish(),
        }
    }
}

/// The error of a fatal tool failure, kept whole for the caller.
#[derive(Debug)]
pub struct ToolFailure(pub Box<dyn StdError + Send + Sync + 'static>);

impl fmt::Display for ToolFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl StdError for ToolFailure {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.0.source()
    }
}

/// Why a setting, a tool or a request is invalid: the cause of [`Error::InvalidConfig`], to
/// match on.
///
/// ```
/// use llm_tools_core::chat::Chat;
/// use llm_tools_core::testing::ScriptedProvider;
/// use llm_tools_core::{ConfigError, Error};
///
/// let mut chat = Chat::new(ScriptedProvider::new());
/// let err = chat.with_params(serde_json::json!([1, 2])).unwrap_err();
/// assert!(matches!(
///     err,
///     Error::InvalidConfig(ConfigError::InvalidOption { option: "with_params", .. })
/// ));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A provider has no credentials: no API key, no AWS keys, no Google credentials.
    #[error("{provider}: no {what}; {hint}")]
    MissingCredentials {
        /// The provider's name.
        provider: String,
        /// What is missing (`API key`, `AWS credentials`, `Google credentials`).
        what: &'static str,
        /// How to provide it.
        hint: String,
    },

    /// A tool's name or joined name outside `^[A-Za-z_][A-Za-z0-9_-]{0,63}$`.
    #[error("tool name `{name}` must match ^[A-Za-z_][A-Za-z0-9_-]{{0,63}}$")]
    InvalidToolName {
        /// The joined name.
        name: String,
    },

    /// A tool's parameter schema is not an object schema.
    #[error(
        "the parameters schema of tool `{tool}` must be an object schema (`\"type\": \"object\"`)"
    )]
    ParametersNotObject {
        /// The tool's joined name.
        tool: String,
    },

    /// A tool choice names no tool of the chat.
    #[error(
        "invalid tool choice `{name}`: the chat has no such tool; valid choices are auto, none, required{}",
        .tools.iter().map(|n| format!(", `{n}`")).collect::<String>()
    )]
    UnknownToolChoice {
        /// The name given.
        name: String,
        /// The chat's tools (joined names, sorted).
        tools: Vec<String>,
    },

    /// An option out of its range, or a value of the wrong shape.
    #[error("`{option}` {reason}")]
    InvalidOption {
        /// The option (`rounds`, `calls`, `Concurrency::Parallel`, `max_run_time`,
        /// `spill_after`, `with_params`).
        option: &'static str,
        /// What is wrong and what it takes.
        reason: String,
    },

    /// A structured-output schema providers would refuse.
    #[error("{reason}")]
    InvalidOutputSchema {
        /// The schema's name.
        name: String,
        /// What is wrong.
        reason: String,
    },

    /// A stored chat's state that cannot be used (from a newer version, or with parts that
    /// disagree): which chat, and what is wrong with its state.
    #[error("stored chat `{chat_id}`: {source}")]
    StoredChat {
        /// The chat's id in its store.
        chat_id: String,
        /// What is wrong: [`NewerState`](Self::NewerState) or
        /// [`InconsistentState`](Self::InconsistentState).
        source: Box<ConfigError>,
    },

    /// A saved chat state from a newer version of this library.
    #[error("the chat state has version {found}, newer than this library's {supported}")]
    NewerState {
        /// The state's version.
        found: u32,
        /// The newest version this library reads.
        supported: u32,
    },

    /// A saved chat state whose parts disagree (a round that does not match its messages).
    #[error("the chat state's {reason}")]
    InconsistentState {
        /// What disagrees.
        reason: String,
    },

    /// An operation on a durable chat, on a chat that is not durable.
    #[error("{0}")]
    NotDurable(&'static str),

    /// Storing a chat that is stored already.
    #[error("the chat is stored already; load it from its store to move it")]
    AlreadyStored,

    /// `complete` or a read of the answer on a chat with no message.
    #[error("the chat has no message to answer; `ask` something first")]
    NoMessage,

    /// A tool result added by hand: the loop adds them.
    #[error("tool results are added by the loop; add user or assistant messages")]
    ToolResultByHand,

    /// Tools ran outside a Tokio runtime.
    #[error(
        "tools run inside a Tokio runtime (with timers enabled, for `max_run_time`); call the chat from one"
    )]
    NoRuntime,

    /// Two tool sources claim one namespace, or one server serves a name twice.
    #[error("{0}")]
    NameTaken(String),
}

/// The error type of `llm-tools`: what a chat, a provider or a tool registry returns.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The provider failed: HTTP status, its error type and message, the request id. Boxed,
    /// so that `Error` stays small enough to return by value everywhere.
    #[error(transparent)]
    Provider(Box<ProviderError>),

    /// A tool failed fatally; the turn stopped.
    #[error("tool `{tool}` failed (call `{call_id}`): {source}")]
    ToolFailed {
        /// The tool's joined name.
        tool: String,
        /// The call's id.
        call_id: String,
        /// What went wrong.
        #[source]
        source: ToolFailure,
    },

    /// Two tools have the same joined name.
    #[error(
        "duplicate tool name `{name}`: `{existing}` is already registered and `{new}` has the same name; give one of them another `name` or a namespace"
    )]
    DuplicateTool {
        /// The joined name both tools have.
        name: String,
        /// The registered tool (its Rust type name, where known).
        existing: String,
        /// The tool being added.
        new: String,
    },

    /// The loop used its whole round budget; the chat stays resumable.
    #[error(
        "the model asked for tools in {rounds} answer(s) in a row, the chat's round budget; call `complete` to go on, or raise `rounds`"
    )]
    RoundsExceeded {
        /// The budget that was reached.
        rounds: usize,
    },

    /// One tool failed `failures` times in a row within the turn and the chat's
    /// [`RetriesExhausted`](crate::chat::RetriesExhausted) says to stop; every call of the round
    /// has its result, so `complete` goes on (the counts start again with the next turn).
    #[error(
        "tool `{tool}` failed {failures} time(s) in a row in this turn, its limit; call `complete` to go on, or raise `max_retries`"
    )]
    ToolRetriesExhausted {
        /// The tool's joined name.
        tool: String,
        /// Its failed calls in a row.
        failures: u32,
    },

    /// A setting, a tool or a request is invalid; nothing was sent. The cause says which.
    #[error("invalid configuration: {0}")]
    InvalidConfig(#[from] ConfigError),

    /// The last answer still has tool calls without results (paused on a task, a question or an
    /// approval, or interrupted); settle them and call `complete`, or `cancel` them, first.
    #[error(
        "the last answer has unfinished tool calls ({}); settle them (answer, approve, deny) and call `complete`, or `cancel` them, before adding a message",
        .calls.join(", ")
    )]
    PendingCalls {
        /// The joined names of the unfinished calls, in call order.
        calls: Vec<String>,
    },

    /// No call with this id waits for what was given (an answer, an approval).
    #[error("no tool call `{call_id}` is waiting for {waiting_for}")]
    NotWaiting {
        /// The id that was given.
        call_id: String,
        /// What was given: `"an approval"`, `"an answer"`.
        waiting_for: &'static str,
    },

    /// A call waits for a tool this chat does not have (a durable chat loaded without
    /// `with_tools`, say): it cannot be approved, answered or run. Nothing changed: the call
    /// stays as it was. Register the tool and try again.
    #[error(
        "tool call `{call_id}` needs the tool `{tool}`, which this chat does not have: register it (`with_tools`; a file tool: `with_file_store`) and try again; the call stays as it was"
    )]
    ToolNotRegistered {
        /// The call.
        call_id: String,
        /// The tool's joined name, as the model called it.
        tool: String,
    },

    /// An answer does not fill the question's required fields.
    #[error("invalid answer to tool call `{call_id}`: {message}")]
    InvalidAnswer {
        /// The call that asked.
        call_id: String,
        /// What is wrong with the answer.
        message: String,
    },

    /// The run was cancelled through a [`CancelHandle`](crate::chat::CancelHandle); the
    /// round's finished results are kept and its unfinished calls are closed.
    #[error("the chat was cancelled")]
    Cancelled,

    /// A durable chat's store failed or refused a write (see [`StoreError`](crate::store::StoreError)).
    #[error(transparent)]
    Store(Box<crate::store::error::StoreError>),

    /// The answer does not decode as the structured output asked for (see
    /// [`Message::parsed`](crate::Message::parsed)); the transcript keeps it as it came.
    #[error("the answer does not fit the output schema: {reason}; the answer was: {raw}")]
    OutputInvalid {
        /// The answer's text, as the model wrote it.
        raw: String,
        /// Why it does not decode (serde's message: the field, the line and column).
        reason: String,
    },

    /// The model refused to give the structured answer; its refusal, as it said it.
    #[error("the model refused to answer: {0}")]
    OutputRefused(String),

    /// The turn did not end with an answer (it is paused, or another process holds the
    /// chat), so there is nothing to decode.
    #[error("the turn has no answer to read yet: {0}")]
    NoAnswer(String),
}

impl From<crate::store::error::StoreError> for Error {
    fn from(error: crate::store::error::StoreError) -> Self {
        Error::Store(Box::new(error))
    }
}

impl From<ProviderError> for Error {
    fn from(error: ProviderError) -> Self {
        Error::Provider(Box::new(error))
    }
}

/// An error from a provider: transport, HTTP status or a malformed body, with everything the
/// provider said about it.
///
/// ```
/// use llm_tools_core::ProviderError;
///
/// let err = ProviderError::http("openai-chat", 429, "Rate limit reached")
///     .with_error_type("requests")
///     .with_request_id("req_123")
///     .with_retryable(true);
/// assert_eq!(err.status(), Some(429));
/// assert!(err.is_retryable());
/// assert_eq!(err.to_string(), "openai-chat: HTTP 429 (requests): Rate limit reached [request id req_123]");
/// ```
#[derive(Clone, thiserror::Error)]
#[error("{}: {}{}{}", self.details.provider, self.prefix(), self.details.message, self.suffix())]
pub struct ProviderError {
    // Boxed: a `Result<_, ProviderError>` stays one pointer wide on its error side.
    details: Box<Details>,
}

/// What a [`ProviderError`] holds.
#[derive(Clone, Debug)]
struct Details {
    provider: String,
    kind: ProviderErrorKind,
    status: Option<u16>,
    error_type: Option<String>,
    code: Option<String>,
    message: String,
    request_id: Option<String>,
    retryable: bool,
    retry_after: Option<Duration>,
}

impl fmt::Debug for ProviderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = &self.details;
        f.debug_struct("ProviderError")
            .field("provider", &d.provider)
            .field("kind", &d.kind)
            .field("status", &d.status)
            .field("error_type", &d.error_type)
            .field("code", &d.code)
            .field("message", &d.message)
            .field("request_id", &d.request_id)
            .field("retryable", &d.retryable)
            .field("retry_after", &d.retry_after)
            .finish()
    }
}

/// What kind of provider failure it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProviderErrorKind {
    /// The server answered with an error status.
    Http,
    /// The connection failed or timed out.
    Transport,
    /// The body (or a stream event) could not be read.
    Decode,
    /// The stream ended early or carried an error event.
    Stream,
    /// The request could not be built (a setting or a tool the protocol cannot express).
    Request,
    /// The server refused the request because the conversation (with its tools) is longer
    /// than the model's context window: shorten the history, or try a model with a larger
    /// one. The HTTP status, where there was one, is still [`ProviderError::status`].
    ContextLengthExceeded,
}

impl ProviderError {
    /// A failure of the given kind.
    pub fn new(
        provider: impl Into<String>,
        kind: ProviderErrorKind,
        message: impl Into<String>,
    ) -> Self {
        Self {
            details: Box::new(Details {
                provider: provider.into(),
                kind,
                status: None,
                error_type: None,
                code: None,
                message: message.into(),
                request_id: None,
                retryable: false,
                retry_after: None,
            }),
        }
    }

    /// An HTTP error status.
    pub fn http(provider: impl Into<String>, status: u16, message: impl Into<String>) -> Self {
        let mut e = Self::new(provider, ProviderErrorKind::Http, message);
        e.details.status = Some(status);
        e
    }

    /// Sets the kind: a protocol that recognises a context-length refusal in an HTTP error
    /// marks it [`ProviderErrorKind::ContextLengthExceeded`].
    #[must_use]
    pub fn with_kind(mut self, kind: ProviderErrorKind) -> Self {
        self.details.kind = kind;
        self
    }

    /// Sets the provider's error type (`invalid_request_error`, `RESOURCE_EXHAUSTED`, …).
    #[must_use]
    pub fn with_error_type(mut self, t: impl Into<String>) -> Self {
        self.details.error_type = Some(t.into());
        self
    }

    /// Sets the provider's error code.
    #[must_use]
    pub fn with_code(mut self, code: impl Into<String>) -> Self {
        self.details.code = Some(code.into());
        self
    }

    /// Sets the request id the provider gave.
    #[must_use]
    pub fn with_request_id(mut self, id: impl Into<String>) -> Self {
        self.details.request_id = Some(id.into());
        self
    }

    /// Sets whether trying again may succeed.
    #[must_use]
    pub fn with_retryable(mut self, retryable: bool) -> Self {
        self.details.retryable = retryable;
        self
    }

    /// Sets how long the provider asked us to wait.
    #[must_use]
    pub fn with_retry_after(mut self, after: Option<Duration>) -> Self {
        self.details.retry_after = after;
        self
    }

    /// Replaces every occurrence of `secret` in what the server wrote (message, error type,
    /// code, request id) with `placeholder`: servers quote the key they refused ("Incorrect
    /// API key provided: sk-…"), and an error must never carry a secret. An empty `secret`
    /// changes nothing.
    ///
    /// ```
    /// use llm_tools_core::ProviderError;
    ///
    /// let e = ProviderError::http("openai", 401, "Incorrect API key provided: sk-123")
    ///     .redacted("sk-123", "<OPENAI_API_KEY>");
    /// assert_eq!(e.message(), "Incorrect API key provided: <OPENAI_API_KEY>");
    /// ```
    #[must_use]
    pub fn redacted(mut self, secret: &str, placeholder: &str) -> Self {
        if secret.is_empty() {
            return self;
        }
        let clean = |text: &mut String| {
            if text.contains(secret) {
                *text = text.replace(secret, placeholder);
            }
        };
        clean(&mut self.details.message);
        [
            &mut self.details.error_type,
            &mut self.details.code,
            &mut self.details.request_id,
        ]
        .into_iter()
        .flatten()
        .for_each(clean);
        self
    }

    /// The provider (protocol) name.
    pub fn provider(&self) -> &str {
        &self.details.provider
    }

    /// The kind of failure.
    pub fn kind(&self) -> ProviderErrorKind {
        self.details.kind
    }

    /// The HTTP status, if the server answered.
    pub fn status(&self) -> Option<u16> {
        self.details.status
    }

    /// The provider's error type.
    pub fn error_type(&self) -> Option<&str> {
        self.details.error_type.as_deref()
    }

    /// The provider's error code.
    pub fn code(&self) -> Option<&str> {
        self.details.code.as_deref()
    }

    /// The provider's message.
    pub fn message(&self) -> &str {
        &self.details.message
    }

    /// The request id.
    pub fn request_id(&self) -> Option<&str> {
        self.details.request_id.as_deref()
    }

    /// Whether trying again may succeed (rate limits, overload, 5xx, connection errors).
    pub fn is_retryable(&self) -> bool {
        self.details.retryable
    }

    /// How long the provider asked us to wait before trying again.
    pub fn retry_after(&self) -> Option<Duration> {
        self.details.retry_after
    }

    fn prefix(&self) -> String {
        let mut p = String::new();
        if let Some(status) = self.details.status {
            p.push_str(&format!("HTTP {status}"));
        } else {
            p.push_str(match self.details.kind {
                ProviderErrorKind::Http => "HTTP error",
                ProviderErrorKind::Transport => "connection failed",
                ProviderErrorKind::Decode => "malformed response",
                ProviderErrorKind::Stream => "stream failed",
                ProviderErrorKind::Request => "invalid request",
                ProviderErrorKind::ContextLengthExceeded => "context length exceeded",
            });
        }
        match (&self.details.error_type, &self.details.code) {
            (Some(t), Some(c)) if t != c => p.push_str(&format!(" ({t}, {c})")),
            (Some(t), _) => p.push_str(&format!(" ({t})")),
            (None, Some(c)) => p.push_str(&format!(" ({c})")),
            (None, None) => {}
        }
        p.push_str(": ");
        p
    }

    fn suffix(&self) -> String {
        match &self.details.request_id {
            Some(id) => format!(" [request id {id}]"),
            None => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crate_error_is_small() {
        assert!(size_of::<Error>() <= 128, "{}", size_of::<Error>());
    }

    #[test]
    fn a_provider_error_is_one_pointer_wide() {
        assert_eq!(size_of::<ProviderError>(), size_of::<usize>());
        assert_eq!(
            size_of::<Result<(), ProviderError>>(),
            size_of::<usize>(),
            "a result of nothing or a provider error is as small as the error"
        );
    }

    #[test]
    fn question_mark_on_io_error_is_fatal() {
        fn read() -> Result<String, ToolError> {
            Ok(std::fs::read_to_string("/definitely/not/here")?)
        }
        let err = read().unwrap_err();
        assert!(err.is_fatal());
        assert!(err.source_error().is_some());
    }

    #[test]
    fn recoverable_error_keeps_its_message() {
        let err = ToolError::recoverable("Location too short");
        assert!(err.is_recoverable());
        assert_eq!(err.to_string(), "Location too short");
    }

    #[test]
    fn provider_error_display_names_everything_known() {
        let err = ProviderError::new(
            "anthropic",
            ProviderErrorKind::Transport,
            "connection refused",
        );
        assert_eq!(
            err.to_string(),
            "anthropic: connection failed: connection refused"
        );
        let err = ProviderError::http("gemini", 429, "Quota exceeded")
            .with_error_type("RESOURCE_EXHAUSTED")
            .with_code("429");
        assert_eq!(
            err.to_string(),
            "gemini: HTTP 429 (RESOURCE_EXHAUSTED, 429): Quota exceeded"
        );
    }
}
