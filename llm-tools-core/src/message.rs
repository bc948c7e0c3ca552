//! The neutral message model every provider maps to and from.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::content::Part;

/// Who wrote a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Role {
    /// Instructions.
    System,
    /// The user.
    User,
    /// The model.
    Assistant,
    /// A tool result.
    Tool,
}

/// One message of a conversation.
///
/// - `System` and `User` messages carry content parts;
/// - an `Assistant` message carries content parts, the tool calls it asks for, its usage and any
///   provider data that must be sent back unchanged (reasoning items, thought signatures);
/// - a `Tool` message is the result of one call: `tool_call_id`, content parts and `is_error`.
///
/// ```
/// use llm_tools_core::{Message, Role, ToolCall};
///
/// let user = Message::user("What's the weather in Berlin?");
/// assert_eq!(user.role, Role::User);
/// assert_eq!(user.text(), "What's the weather in Berlin?");
///
/// let answer = Message::assistant_with_calls(
///     "",
///     vec![ToolCall::new("call_1", "weather", r#"{"latitude":"52.52","longitude":"13.40"}"#)],
/// );
/// assert!(answer.has_tool_calls());
///
/// let result = Message::tool_result("call_1", "15°C", false);
/// assert_eq!(result.tool_call_id.as_deref(), Some("call_1"));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// Text, images and files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub content: Vec<Part>,
    /// The tool calls of an assistant message, in the order the model made them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// The call a tool message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Whether a tool message reports an error.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// The model's refusal, when it refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
    /// Tokens used by the request that produced an assistant message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Data the provider needs back unchanged in later requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_data: Option<ProviderData>,
    /// The provider tools the provider ran within this answer (web searches, code runs), in
    /// order (see [`provider_tools`](crate::provider_tools)).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_tool_uses: Vec<crate::provider_tools::ServerToolUse>,
    /// The sources the answer cites.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub citations: Vec<crate::provider_tools::Citation>,
}

impl Message {
    fn with_role(role: Role, content: Vec<Part>) -> Self {
        Self {
            role,
            content,
            tool_calls: Vec::new(),
            tool_call_id: None,
            is_error: false,
            refusal: None,
            usage: None,
            provider_data: None,
            server_tool_uses: Vec::new(),
            citations: Vec::new(),
        }
    }

    /// Instructions.
    pub fn system(text: impl Into<String>) -> Self {
        Self::with_role(Role::System, vec![Part::text(text)])
    }

    /// A user message with text.
    pub fn user(text: impl Into<String>) -> Self {
        Self::with_role(Role::User, vec![Part::text(text)])
    }

    /// A user message with any parts.
    pub fn user_parts(parts: Vec<Part>) -> Self {
        Self::with_role(Role::User, parts)
    }

    /// An assistant message with text.
    pub fn assistant(text: impl Into<String>) -> Self {
        let text = text.into();
        let content = if text.is_empty() {
            Vec::new()
        } else {
            vec![Part::text(text)]
        };
        Self::with_role(Role::Assistant, content)
    }

    /// An assistant message with text (may be empty) and tool calls.
    pub fn assistant_with_calls(text: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        let mut m = Self::assistant(text);
        m.tool_calls = tool_calls;
        m
    }

    /// The result of one tool call, as text.
    pub fn tool_result(
        call_id: impl Into<String>,
        text: impl Into<String>,
        is_error: bool,
    ) -> Self {
        Self::tool_result_parts(call_id, vec![Part::text(text)], is_error)
    }

    /// The result of one tool call, with any parts.
    pub fn tool_result_parts(
        call_id: impl Into<String>,
        content: Vec<Part>,
        is_error: bool,
    ) -> Self {
        let mut m = Self::with_role(Role::Tool, content);
        m.tool_call_id = Some(call_id.into());
        m.is_error = is_error;
        m
    }

    /// All text parts joined (no separator between adjacent parts).
    pub fn text(&self) -> String {
        let mut out = String::new();
        for p in &self.content {
            if let Some(t) = p.as_text() {
                out.push_str(t);
            }
        }
        out
    }

    /// Whether this is an assistant message that asks for tools.
    pub fn has_tool_calls(&self) -> bool {
        !self.tool_calls.is_empty()
    }
}

impl From<&str> for Message {
    /// A user message with text.
    fn from(text: &str) -> Self {
        Message::user(text)
    }
}

impl From<String> for Message {
    /// A user message with text.
    fn from(text: String) -> Self {
        Message::user(text)
    }
}

/// A tool call the model asked for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolCall {
    /// The call's id (the provider's, or one generated where the provider gives none).
    pub id: String,
    /// The tool's own name (without namespace).
    pub name: String,
    /// The tool's namespace, mapped back from the wire (native on Responses, from the joined
    /// name elsewhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The arguments as the raw JSON text the model sent (`{}` when it sent none).
    pub arguments: String,
    /// Data the provider needs back with this call (Gemini's `thoughtSignature`, the Responses
    /// item id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_data: Option<Value>,
}

impl ToolCall {
    /// A call without a namespace.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            namespace: None,
            arguments: arguments.into(),
            provider_data: None,
        }
    }

    /// Sets the namespace.
    #[must_use]
    pub fn with_namespace(mut self, namespace: Option<String>) -> Self {
        self.namespace = namespace;
        self
    }

    /// `{namespace}_{name}`, or the name: the key of the tool in a chat.
    pub fn joined_name(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{ns}_{}", self.name),
            None => self.name.clone(),
        }
    }
}

/// Token counts of one request (or, summed, of a chat).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Usage {
    /// Prompt tokens, cached ones included.
    pub input_tokens: u64,
    /// Completion tokens, reasoning included.
    pub output_tokens: u64,
    /// Prompt tokens served from the provider's cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_input_tokens: u64,
    /// Tokens spent on reasoning.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
    /// Provider tools the provider ran (web searches, code runs), as it reports them (Anthropic
    /// `server_tool_use`, xAI `num_server_side_tools_used`) or, on Responses without a count,
    /// the provider-tool items of the answer. Billed apart from tokens by most providers.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub server_tool_requests: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    /// The counts of one request: prompt tokens (cached ones included) and completion tokens
    /// (reasoning included); the other counts start at zero.
    ///
    /// ```
    /// use llm_tools_core::Usage;
    ///
    /// let usage = Usage::new(1200, 80).with_cached_input_tokens(1000).with_reasoning_tokens(30);
    /// assert_eq!((usage.total(), usage.cached_input_tokens), (1280, 1000));
    /// ```
    pub const fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Self {
            input_tokens,
            output_tokens,
            cached_input_tokens: 0,
            reasoning_tokens: 0,
            server_tool_requests: 0,
        }
    }

    /// Sets the prompt tokens served from the provider's cache.
    #[must_use]
    pub const fn with_cached_input_tokens(mut self, tokens: u64) -> Self {
        self.cached_input_tokens = tokens;
        self
    }

    /// Sets the tokens spent on reasoning.
    #[must_use]
    pub const fn with_reasoning_tokens(mut self, tokens: u64) -> Self {
        self.reasoning_tokens = tokens;
        self
    }

    /// Sets the provider tools the provider ran.
    #[must_use]
    pub const fn with_server_tool_requests(mut self, requests: u64) -> Self {
        self.server_tool_requests = requests;
        self
    }

    /// Input plus output tokens (saturating).
    pub fn total(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    /// What was used since `earlier` (a snapshot of the same running total), saturating at 0.
    pub fn since(&self, earlier: &Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens.saturating_sub(earlier.input_tokens),
            output_tokens: self.output_tokens.saturating_sub(earlier.output_tokens),
            cached_input_tokens: self
                .cached_input_tokens
                .saturating_sub(earlier.cached_input_tokens),
            reasoning_tokens: self
                .reasoning_tokens
                .saturating_sub(earlier.reasoning_tokens),
            server_tool_requests: self
                .server_tool_requests
                .saturating_sub(earlier.server_tool_requests),
        }
    }
}

impl std::ops::Add for Usage {
    type Output = Usage;

    /// Adds counts saturating at `u64::MAX`: the counts come from servers, and a bogus one must
    /// not overflow.
    fn add(self, rhs: Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens.saturating_add(rhs.input_tokens),
            output_tokens: self.output_tokens.saturating_add(rhs.output_tokens),
            cached_input_tokens: self
                .cached_input_tokens
                .saturating_add(rhs.cached_input_tokens),
            reasoning_tokens: self.reasoning_tokens.saturating_add(rhs.reasoning_tokens),
            server_tool_requests: self
                .server_tool_requests
                .saturating_add(rhs.server_tool_requests),
        }
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, rhs: Usage) {
        *self = *self + rhs;
    }
}

/// Provider-specific data attached to a message, sent back only to the protocol that produced
/// it (another provider ignores it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ProviderData {
    /// The protocol that produced it (`"openai-responses"`, `"anthropic"`, `"gemini"`, …).
    pub protocol: String,
    /// The data.
    pub data: Value,
}

impl ProviderData {
    /// Data for one protocol.
    pub fn new(protocol: impl Into<String>, data: Value) -> Self {
        Self {
            protocol: protocol.into(),
            data,
        }
    }

    /// The data, if it belongs to `protocol`.
    pub fn for_protocol(&self, protocol: &str) -> Option<&Value> {
        (self.protocol == protocol).then_some(&self.data)
    }
}

#[cfg(test)]
mod usage_tests {
    use super::Usage;

    #[test]
    fn counts_from_servers_add_without_overflowing() {
        let huge = Usage {
            input_tokens: u64::MAX,
            output_tokens: u64::MAX - 1,
            cached_input_tokens: u64::MAX,
            reasoning_tokens: 1,
            server_tool_requests: u64::MAX,
        };
        let sum = huge + huge;
        assert_eq!(sum.server_tool_requests, u64::MAX);
        assert_eq!(sum.input_tokens, u64::MAX);
        assert_eq!(sum.output_tokens, u64::MAX);
        assert_eq!(sum.reasoning_tokens, 2);
        assert_eq!(huge.total(), u64::MAX);
        let mut acc = Usage::default();
        acc += huge;
        acc += huge;
        assert_eq!(acc.cached_input_tokens, u64::MAX);
    }
}
