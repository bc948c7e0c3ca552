//! Compaction: a history processor built in. Before a request whose messages would pass the
//! chat's size budget, the older part of the transcript is made smaller, in two steps, each
//! only when still needed:
//!
//! 1. older tool results longer than a preview are replaced by their start and a reference
//!    (kept whole in the chat's file store, under `compacted/`, when it has one, where the
//!    model's `read_file` reaches them);
//! 2. older turns are summarised by a model (the chat's own, or one given) into one system
//!    message that takes their place (an earlier summary among them: a chat keeps one summary,
//!    of at most [`DEFAULT_MAX_SUMMARY_CHARS`] characters unless
//!    [`Compaction::with_max_summary_chars`] says otherwise).
//!
//! The recent messages stay as they are, and every cut falls before a user message, so the
//! history stays valid: each call keeps its result, provider items stay in order. The summary
//! and the shortened results are the transcript from then on: they are in the chat's state
//! (and a durable chat's store).
//!
//! This file holds the settings ([`Compaction`]) and the reading of a history; `steps.rs` holds
//! the two steps as the chat runs them.

mod steps;

use std::sync::Arc;

use crate::{
    message::{Message, Role},
    provider::Provider,
};

/// When and how a chat compacts its history ([`Chat::with_compaction`](super::Chat::with_compaction)).
///
/// ```
/// use llm_tools_core::chat::{Chat, Compaction};
/// use llm_tools_core::testing::ScriptedProvider;
///
/// let mut chat = Chat::new(ScriptedProvider::new());
/// chat.with_compaction(
///     Compaction::at_characters(200_000)
///         .keep_recent_messages(20)
///         .with_summariser(ScriptedProvider::new().with_model("small")),
/// );
/// ```
#[derive(Clone)]
pub struct Compaction {
    budget: usize,
    keep_recent: usize,
    preview: usize,
    max_summary_chars: usize,
    summariser: Option<Arc<dyn Provider>>,
    instructions: String,
}

/// The default number of recent messages compaction leaves as they are.
pub const DEFAULT_KEEP_RECENT: usize = 12;

/// The default number of characters of an older tool result kept in the transcript.
pub const DEFAULT_RESULT_PREVIEW: usize = 500;

/// The default number of characters of a summary kept
/// ([`Compaction::with_max_summary_chars`]): 16,000 (some 4,000 tokens).
pub const DEFAULT_MAX_SUMMARY_CHARS: usize = 16_000;

/// `summary` cut to `max` characters, saying so at its end.
pub(super) fn cut_summary(summary: &str, max: usize) -> std::borrow::Cow<'_, str> {
    match summary.char_indices().nth(max) {
        Some((at, _)) => std::borrow::Cow::Owned(format!(
            "{}… [the summary was cut at {max} characters]",
            &summary[..at]
        )),
        None => std::borrow::Cow::Borrowed(summary),
    }
}

const SUMMARY_INSTRUCTIONS: &str = "Summarise the conversation below for the assistant who will continue it: the user's goals and requests, decisions made, facts learned from tools (names, numbers, identifiers, file names), and what is still open. Be complete but brief; write only the summary.";

/// The start of the system message that takes the summarised turns' place.
pub const SUMMARY_PREFIX: &str = "Summary of the earlier conversation:\n";

/// Whether `message` is a summary compaction wrote (never the chat's instructions).
pub(crate) fn is_summary(message: &Message) -> bool {
    message.role == Role::System
        && message
            .content
            .first()
            .and_then(|part| part.as_text())
            .is_some_and(|text| text.starts_with(SUMMARY_PREFIX))
}

impl Compaction {
    /// Compacts before a request whose messages pass `characters` (text, tool arguments and
    /// results).
    pub fn at_characters(characters: usize) -> Self {
        Self {
            budget: characters,
            keep_recent: DEFAULT_KEEP_RECENT,
            preview: DEFAULT_RESULT_PREVIEW,
            max_summary_chars: DEFAULT_MAX_SUMMARY_CHARS,
            summariser: None,
            instructions: SUMMARY_INSTRUCTIONS.to_owned(),
        }
    }

    /// Leaves the last `n` messages as they are (default [`DEFAULT_KEEP_RECENT`]; the cut
    /// moves earlier to fall before a user message).
    #[must_use]
    pub fn keep_recent_messages(mut self, n: usize) -> Self {
        self.keep_recent = n;
        self
    }

    /// Keeps the first `characters` of an older tool result in the transcript (default
    /// [`DEFAULT_RESULT_PREVIEW`]).
    #[must_use]
    pub fn with_result_preview(mut self, characters: usize) -> Self {
        self.preview = characters;
        self
    }

    /// Keeps at most `characters` of a summary (default [`DEFAULT_MAX_SUMMARY_CHARS`]): a
    /// longer one is cut, and says so at its end. The summary is sent with every later
    /// request; the summariser (the chat's own model, by default, reading what the model and
    /// the tools wrote) decides how long it is.
    ///
    /// ```
    /// use llm_tools_core::chat::{Compaction, DEFAULT_MAX_SUMMARY_CHARS};
    ///
    /// assert_eq!(DEFAULT_MAX_SUMMARY_CHARS, 16_000);
    /// let compaction = Compaction::at_characters(400_000).with_max_summary_chars(40_000);
    /// # let _ = compaction;
    /// ```
    #[must_use]
    pub fn with_max_summary_chars(mut self, characters: usize) -> Self {
        self.max_summary_chars = characters;
        self
    }

    /// Summarises with `provider` instead of the chat's own.
    #[must_use]
    pub fn with_summariser(mut self, provider: impl Provider) -> Self {
        self.summariser = Some(Arc::new(provider));
        self
    }

    /// Replaces the instructions the summariser gets.
    #[must_use]
    pub fn with_summary_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = instructions.into();
        self
    }
}

impl std::fmt::Debug for Compaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compaction")
            .field("budget", &self.budget)
            .field("keep_recent", &self.keep_recent)
            .field("preview", &self.preview)
            .field("max_summary_chars", &self.max_summary_chars)
            .field(
                "summariser",
                &self.summariser.as_ref().map(|p| (p.protocol(), p.model())),
            )
            .finish_non_exhaustive()
    }
}

/// The characters of `message` a request carries: text, tool arguments.
fn size_of(message: &Message) -> usize {
    let text: usize = message
        .content
        .iter()
        .map(|part| match part {
            crate::content::Part::Text { text } => text.len(),
            _ => 0,
        })
        .sum();
    let calls: usize = message
        .tool_calls
        .iter()
        .map(|c| c.name.len() + c.arguments.len())
        .sum();
    text + calls
}

/// The characters the request for `messages` carries.
pub(crate) fn size(messages: &[Message]) -> usize {
    messages.iter().map(size_of).sum()
}

/// Where the recent part starts: at most `keep` messages from the end, moved earlier to a user
/// message; `None` when no older part can be cut off (no user message to cut before).
pub(super) fn recent_start(messages: &[Message], keep: usize) -> Option<usize> {
    let first = messages.iter().position(|m| m.role != Role::System)?;
    let mut at = messages.len().saturating_sub(keep).max(first + 1);
    while at > first && messages.get(at).is_some_and(|m| m.role != Role::User) {
        at -= 1;
    }
    (at > first && messages.get(at).is_some_and(|m| m.role == Role::User)).then_some(at)
}

/// The transcript as text for the summariser: each message with its role, calls and results.
pub(super) fn render(messages: &[Message]) -> String {
    let mut out = String::new();
    for m in messages {
        let who = match m.role {
            Role::System => "System",
            Role::User => "User",
            Role::Assistant => "Assistant",
            Role::Tool => "Tool result",
        };
        let text = m.text();
        if !text.is_empty() {
            out.push_str(who);
            out.push_str(": ");
            out.push_str(&text);
            out.push('\n');
        }
        for call in &m.tool_calls {
            out.push_str(&format!(
                "Assistant called {}({})\n",
                call.joined_name(),
                call.arguments
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recent_part_starts_at_a_user_message() {
        let call =
            Message::assistant_with_calls("", vec![crate::message::ToolCall::new("c", "t", "{}")]);
        let messages = vec![
            Message::system("s"),
            Message::user("a"),
            call,
            Message::tool_result("c", "r", false),
            Message::assistant("b"),
            Message::user("c"),
            Message::assistant("d"),
        ];
        assert_eq!(recent_start(&messages, 2), Some(5));
        // Keeping three would start on an answer: the cut moves back, never forward.
        assert_eq!(recent_start(&messages, 3), None);
        // Keeping four would cut between a call and its result: the cut moves back to the
        // first user message, and nothing before it can go.
        assert_eq!(recent_start(&messages, 4), None);
        // Nothing before the first user message can be cut.
        assert_eq!(recent_start(&messages[..4], 1), None);
    }
}
