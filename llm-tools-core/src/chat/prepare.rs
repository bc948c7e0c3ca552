//! Per-request preparation: [`Chat::with_prepare_request`](super::Chat::with_prepare_request)
//! runs an async hook before each model request, which may choose the tools offered, the tool
//! choice, the provider, extra parameters and the messages sent (a history processor), from the
//! chat's transcript and the round number. What it changes holds for that request only: the
//! chat's transcript, tools and options stay as they are.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::{
    future::BoxFuture,
    message::{Message, Usage},
    provider::{Provider, ToolChoice},
};

/// What the next request will be, for a [`with_prepare_request`](super::Chat::with_prepare_request)
/// hook to change. The hook gets it and gives it back.
///
/// ```
/// use llm_tools_core::chat::{Chat, RequestPlan};
/// use llm_tools_core::testing::ScriptedProvider;
/// use llm_tools_core::tool;
///
/// /// Searches the web
/// #[tool]
/// async fn web_search(query: String) -> String { format!("results for {query}") }
///
/// /// Sends an email
/// #[tool]
/// async fn send_email(to: String) -> String { format!("sent to {to}") }
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let model = ScriptedProvider::new().then_text("Done.");
/// let mut chat = Chat::new(model.clone());
/// chat.with_tools((WebSearch, SendEmail))?;
/// chat.with_prepare_request(|mut plan: RequestPlan| async move {
///     // Only searching in the first round; send the last 20 messages at most.
///     if plan.round == 1 {
///         plan.keep_tools(|name| name == "web_search");
///     }
///     plan.keep_last_messages(20);
///     plan
/// });
/// let answer = chat.ask("Research this").await?;
/// assert_eq!(answer.text().as_deref(), Some("Done."));
/// assert_eq!(model.requests()[0].tools, ["web_search"]);
/// # Ok::<_, llm_tools_core::Error>(())
/// # }).unwrap();
/// ```
#[non_exhaustive]
pub struct RequestPlan {
    /// The request's number within the turn, from 1.
    pub round: usize,
    /// The tokens the turn has used so far.
    pub usage: Usage,
    /// The messages to send: a copy of the transcript (instructions included). Change it to
    /// change what this request sends; the transcript keeps every message. Keep it valid: each
    /// tool call with its result, results after their calls
    /// ([`keep_last_messages`](Self::keep_last_messages) cuts only where that holds).
    pub messages: Vec<Message>,
    /// The joined names of the tools offered. Remove names to offer fewer; a name the chat
    /// does not offer is an error. A call of a tool left out does not run: its answer's call
    /// gets an error result saying the tool is not available.
    pub tools: Vec<String>,
    /// The tool choice.
    pub choice: ToolChoice,
    /// Raw JSON merged into the request body (the chat's `with_params` to start with).
    pub params: Option<Map<String, Value>>,
    /// The provider this request goes to (`None`: the chat's).
    pub provider: Option<Arc<dyn Provider>>,
    /// Each offered tool's namespace, by joined name.
    pub(crate) namespaces: std::collections::HashMap<String, String>,
}

impl RequestPlan {
    /// Offers only the tools whose joined name `keep` accepts.
    pub fn keep_tools(&mut self, keep: impl Fn(&str) -> bool) -> &mut Self {
        self.tools.retain(|name| keep(name));
        self
    }

    /// Offers only the tools of `namespace`.
    pub fn only_namespace(&mut self, namespace: &str) -> &mut Self {
        let namespaces = &self.namespaces;
        self.tools
            .retain(|name| namespaces.get(name).is_some_and(|ns| ns == namespace));
        self
    }

    /// Sends this request to `provider` instead of the chat's.
    pub fn use_provider(&mut self, provider: impl Provider) -> &mut Self {
        self.provider = Some(Arc::new(provider));
        self
    }

    /// Sets one raw parameter of this request's body.
    pub fn set_param(&mut self, key: impl Into<String>, value: Value) -> &mut Self {
        self.params
            .get_or_insert_with(Map::new)
            .insert(key.into(), value);
        self
    }

    /// Sends the system messages and at most the last `n` others, cutting earlier when the
    /// cut would separate tool results from the call that asked for them.
    pub fn keep_last_messages(&mut self, n: usize) -> &mut Self {
        let others = self
            .messages
            .iter()
            .filter(|m| m.role != crate::message::Role::System)
            .count();
        if others <= n {
            return self;
        }
        let mut skip = others - n;
        // Never start on tool results: their call would be cut away.
        let rest: Vec<&Message> = self
            .messages
            .iter()
            .filter(|m| m.role != crate::message::Role::System)
            .collect();
        while rest
            .get(skip)
            .is_some_and(|m| m.role == crate::message::Role::Tool)
        {
            skip += 1;
        }
        let mut seen = 0;
        self.messages.retain(|m| {
            if m.role == crate::message::Role::System {
                return true;
            }
            seen += 1;
            seen > skip
        });
        self
    }
}

impl std::fmt::Debug for RequestPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestPlan")
            .field("round", &self.round)
            .field("messages", &self.messages.len())
            .field("tools", &self.tools)
            .field("choice", &self.choice)
            .field("params", &self.params)
            .field(
                "provider",
                &self.provider.as_ref().map(|p| (p.protocol(), p.model())),
            )
            .finish_non_exhaustive()
    }
}

/// The current turn's counts: requests sent, and the chat's usage when it started.
#[derive(Clone, Debug, Default)]
pub(crate) struct Turn {
    pub(crate) requests: usize,
    pub(crate) usage_before: Usage,
    /// The tools the last request offered, by joined name, when it left some out (deferred
    /// tools not found yet, tools the preparation hook dropped, a `None` choice): a call of a
    /// tool it did not offer is refused when its answer comes (`open_round`). `None`: every
    /// tool was offered.
    pub(crate) offered: Option<std::collections::HashSet<String>>,
    /// A turn is under way: `ask`/`complete` open one and close it when they return; `step`
    /// opens one when none is, and closes it once the model answered or a stop ended it.
    pub(crate) open: bool,
    /// The summariser answered with nothing this turn: it is not asked again before the next.
    pub(crate) summary_refused: bool,
    /// The places of the calls whose tool ran, in the last round that ended this turn.
    pub(crate) ran_in_last_round: Vec<usize>,
}

impl Turn {
    pub(crate) fn starting(usage: Usage) -> Self {
        Self {
            requests: 0,
            usage_before: usage,
            offered: None,
            open: true,
            summary_refused: false,
            ran_in_last_round: Vec::new(),
        }
    }
}

/// A registered preparation hook.
pub(crate) type PrepareFn =
    Arc<dyn Fn(RequestPlan) -> BoxFuture<'static, RequestPlan> + Send + Sync>;

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(messages: Vec<Message>) -> RequestPlan {
        RequestPlan {
            round: 1,
            usage: Usage::default(),
            messages,
            tools: vec!["crm_find".into(), "crm2_x".into(), "web".into()],
            choice: ToolChoice::Auto,
            params: None,
            provider: None,
            namespaces: [("crm_find", "crm"), ("crm2_x", "crm2")]
                .into_iter()
                .map(|(a, b)| (a.to_owned(), b.to_owned()))
                .collect(),
        }
    }

    #[test]
    fn keeping_the_last_messages_never_starts_on_a_tool_result() {
        let call =
            Message::assistant_with_calls("", vec![crate::message::ToolCall::new("c1", "t", "{}")]);
        let mut p = plan(vec![
            Message::system("be brief"),
            Message::user("a"),
            call,
            Message::tool_result("c1", "r", false),
            Message::assistant("b"),
        ]);
        p.keep_last_messages(2);
        let roles: Vec<_> = p.messages.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [
                crate::message::Role::System,
                crate::message::Role::Assistant
            ]
        );
    }

    #[test]
    fn a_namespace_keeps_only_its_own_tools() {
        let mut p = plan(Vec::new());
        p.only_namespace("crm");
        assert_eq!(p.tools, ["crm_find"]);
    }
}
