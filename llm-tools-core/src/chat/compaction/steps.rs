//! The two compaction steps as a chat runs them: before a request when the history passes the
//! budget ([`Chat::compact_if_needed`]), or whenever the application asks ([`Chat::compact`]).

use std::sync::Arc;

use super::{Compaction, SUMMARY_PREFIX, cut_summary, is_summary, recent_start, render, size};
use crate::chat::Chat;
use crate::{
    error::Error,
    future::BoxFuture,
    message::{Message, Role},
    provider::Request,
};

/// [`Chat::compact_if_needed`], as [`Chat::with_compaction`] hands it to the loop.
const BEFORE_REQUEST: crate::chat::CompactFn = |chat| Box::pin(chat.compact_if_needed());

/// How a shortened result's note starts, after the result's start: `\n[… `, its count of
/// characters, then [`NOTE_TOTAL`].
const NOTE_START: &str = "\n[… ";
/// What follows the count of characters in a shortened result's note.
const NOTE_TOTAL: &str = " characters in all, shortened to save space";

/// Whether `text` is a result shortened already (a note as [`Chat::shorten_results`] writes
/// it): compacting it again would keep the note as a file of its own, and again at each pass.
fn is_shortened(text: &str) -> bool {
    let Some(at) = text.rfind(NOTE_START) else {
        return false;
    };
    let tail = &text[at + NOTE_START.len()..];
    let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && tail[digits..].starts_with(NOTE_TOTAL) && tail.ends_with(']')
}

impl Chat {
    /// Compacts the history before a request whose messages pass the budget (see
    /// [`Compaction`]): older tool results are shortened (kept whole in the file store, when
    /// the chat has one), then older turns summarised by a model. The compacted history is the
    /// chat's transcript from then on. Configuration, like callbacks: set it again on a chat
    /// loaded from a store.
    pub fn with_compaction(&mut self, compaction: Compaction) -> &mut Self {
        self.compaction = Some(compaction);
        self.compact_before_request = Some(BEFORE_REQUEST);
        self
    }

    /// Compacts before a request when the chat has a budget and the messages pass it; returns
    /// whether anything changed.
    pub(crate) async fn compact_if_needed(&mut self) -> Result<bool, Error> {
        let Some(compaction) = self.compaction.clone() else {
            return Ok(false);
        };
        if size(&self.state.messages) <= compaction.budget {
            return Ok(false);
        }
        self.compact_with(&compaction).await
    }

    /// Runs both steps of `compaction` as far as needed.
    pub(crate) async fn compact_with(&mut self, compaction: &Compaction) -> Result<bool, Error> {
        let Some(cut) = recent_start(&self.state.messages, compaction.keep_recent) else {
            return Ok(false);
        };
        let mut changed = self.shorten_results(cut, compaction.preview).await;
        // A summary is a request like the others: it counts against the turn's budgets, is
        // not sent once they are spent, and not asked again in a turn whose summariser gave
        // nothing (or every request after it would send one more). Asked for outside a turn
        // (`compact`), it is always sent.
        let held_back =
            self.turn.open && (self.turn.summary_refused || self.budget_used().is_some());
        if size(&self.state.messages) > compaction.budget && !held_back {
            changed |= self.summarise(cut, compaction).await?;
        }
        if changed {
            tracing::info!(
                target: "llm_tools::request",
                characters = size(&self.state.messages),
                messages = self.state.messages.len(),
                "compacted the history"
            );
        }
        Ok(changed)
    }

    /// Step 1: older tool results past `preview` characters keep their start and a reference.
    async fn shorten_results(&mut self, cut: usize, preview: usize) -> bool {
        let mut first_changed = None;
        // The call of each result, by id, among the older messages.
        let calls: std::collections::HashMap<String, crate::message::ToolCall> =
            self.state.messages[..cut]
                .iter()
                .flat_map(|m| m.tool_calls.iter())
                .map(|c| (c.id.clone(), c.clone()))
                .collect();
        for index in 0..cut {
            let message = &self.state.messages[index];
            if message.role != Role::Tool {
                continue;
            }
            let text = message.text();
            if text.chars().count() <= preview.saturating_add(200) || is_shortened(&text) {
                continue;
            }
            let Some(call_id) = message.tool_call_id.clone() else {
                continue;
            };
            let start: String = text.chars().take(preview).collect();
            let total = text.chars().count();
            // The store fenced by the run claim in a durable turn: a turn that lost the chat
            // keeps nothing.
            let files = self.turn_files();
            let kept = match (&files, calls.get(&call_id)) {
                (Some(files), Some(call)) => {
                    let name = crate::chat::spill::file_name_in(
                        crate::chat::file_tools::COMPACTED_FOLDER,
                        call,
                    );
                    // Never over another kept result (a call id given again in a later round).
                    let name = crate::chat::spill::free_name(files.as_ref(), name).await;
                    match files.save(&name, text.into_bytes()).await {
                        Ok(name) => Some(name),
                        Err(e) => {
                            tracing::warn!(error = %e, "could not keep a compacted result; it is cut without a copy");
                            None
                        }
                    }
                }
                _ => None,
            };
            let note = match kept {
                Some(name) => format!(
                    "{start}{NOTE_START}{total}{NOTE_TOTAL}; the whole result is the file `{name}` (read it with `read_file`)]"
                ),
                None => format!("{start}{NOTE_START}{total}{NOTE_TOTAL}]"),
            };
            let is_error = message.is_error;
            self.state.messages[index] = Message::tool_result(call_id.as_str(), note, is_error);
            first_changed.get_or_insert(index);
        }
        if let Some(index) = first_changed {
            self.message_changed(index);
        }
        first_changed.is_some()
    }

    /// Step 2: the older turns become one summary (a system message after the instructions).
    /// An earlier summary is among what is summarised again: a chat has one summary, however
    /// often it was compacted.
    async fn summarise(&mut self, cut: usize, compaction: &Compaction) -> Result<bool, Error> {
        let Some(first) = self
            .state
            .messages
            .iter()
            .position(|m| m.role != Role::System || is_summary(m))
        else {
            return Ok(false);
        };
        if cut <= first {
            return Ok(false);
        }
        let provider = compaction
            .summariser
            .clone()
            .unwrap_or_else(|| Arc::clone(&self.provider));
        let asked = [
            Message::system(compaction.instructions.as_str()),
            Message::user(render(&self.state.messages[first..cut])),
        ];
        // The summary counts as one of the turn's requests as it is sent; in a turn, it is not
        // sent past a budget (another chat may have taken the last request since the turn
        // looked).
        if self.turn.open {
            if self.take_request().is_some() {
                return Ok(false);
            }
        } else {
            self.turn.requests = self.turn.requests.saturating_add(1);
            crate::chat::nested::Caller::take_request(false);
        }
        let request = Request::new(&asked, &[]);
        let answer = tokio::select! {
            biased;
            () = self.cancel.cancelled() => return Err(Error::Cancelled),
            answer = provider.complete(request) => answer?,
        };
        self.answered(answer.message.usage);
        let summary = answer.message.text();
        if summary.trim().is_empty() {
            tracing::warn!(
                "the summariser answered with no text; the history is not summarised this turn"
            );
            self.turn.summary_refused = true;
            return Ok(false);
        }
        let summary = cut_summary(&summary, compaction.max_summary_chars);
        let replacement = Message::system(format!("{SUMMARY_PREFIX}{summary}"));
        let retired = &mut self.state.retired_call_ids;
        retired.extend(
            self.state.messages[first..cut]
                .iter()
                .flat_map(|m| m.tool_calls.iter().map(|c| c.id.clone())),
        );
        let past = retired
            .len()
            .saturating_sub(crate::chat::state::MAX_RETIRED_CALL_IDS);
        retired.drain(..past);
        self.state
            .messages
            .splice(first..cut, std::iter::once(replacement));
        let taken_out = u64::try_from((cut - first).saturating_sub(1)).unwrap_or(u64::MAX);
        self.state.compacted_away = self.state.compacted_away.saturating_add(taken_out);
        self.message_changed(first);
        Ok(true)
    }

    /// Compacts the history now with the chat's [`Compaction`] (or `compaction`), whatever its
    /// size: the older tool results are shortened and the older turns summarised. Returns
    /// whether anything changed. Nothing is compacted while calls of the last answer wait for
    /// results. A durable chat writes the compacted history to its store at once, under its run
    /// claim ([`save`](Self::save)), and fails as `save` does.
    pub async fn compact(&mut self, compaction: Option<&Compaction>) -> Result<bool, Error> {
        self.boxed_compact(compaction).await
    }

    /// [`compact`](Self::compact) as a boxed future: compiled once, here (see
    /// [`boxed_turn`](Self::boxed_turn)).
    #[inline(never)]
    fn boxed_compact<'a>(
        &'a mut self,
        compaction: Option<&'a Compaction>,
    ) -> BoxFuture<'a, Result<bool, Error>> {
        Box::pin(self.compact_now(compaction))
    }

    async fn compact_now(&mut self, compaction: Option<&Compaction>) -> Result<bool, Error> {
        if self.state.round.is_some() {
            return Ok(false);
        }
        let compaction = match compaction.or(self.compaction.as_ref()) {
            Some(c) => c.clone(),
            None => Compaction::at_characters(0),
        };
        let everything = Compaction {
            budget: 0,
            ..compaction
        };
        let changed = self.compact_with(&everything).await?;
        if changed {
            self.save().await?;
        }
        Ok(changed)
    }
}
