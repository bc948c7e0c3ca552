//! Retry budgets: how many failed calls of one tool in a row a turn allows
//! ([`ToolOptions::with_max_retries`](super::ToolOptions::with_max_retries), a tool's own
//! `max_retries`). A recoverable error, a timeout and arguments that do not decode are failures;
//! a result starts the tool's count again. Past the limit the tool is unavailable for the rest of
//! the turn, or the turn stops ([`RetriesExhausted`]). Counts live with the chat value for one
//! turn (`ask` or `complete`; with `step`, until the model answers), not in its saved state.

use std::borrow::Cow;
use std::collections::HashMap;

use super::options::{RetriesExhausted, ToolOptions};
use super::registry::Registry;
use crate::message::ToolCall;

/// The limit of failed calls in a row of `call`'s tool: its own `max_retries`, else the chat's.
pub(crate) fn limit_of(registry: &Registry, options: &ToolOptions, call: &ToolCall) -> Option<u32> {
    registry
        .find(call)
        .and_then(|tool| tool.spec().max_retries())
        .or(options.max_retries())
}

/// `tool` as the counts key it and the results quote it: its first
/// [`QUOTED_CHARS`](crate::args::QUOTED_CHARS) characters (a model's call of a tool named with
/// megabytes is counted, and told of, by its start).
fn shown(tool: &str) -> Cow<'_, str> {
    if tool.len() <= crate::args::QUOTED_CHARS {
        Cow::Borrowed(tool)
    } else {
        Cow::Owned(crate::args::shortened(tool, crate::args::QUOTED_CHARS))
    }
}

/// One turn's failed calls in a row, per tool (joined name, its first
/// [`QUOTED_CHARS`](crate::args::QUOTED_CHARS) characters).
#[derive(Debug, Default)]
pub(crate) struct TurnRetries {
    failures: HashMap<String, u32>,
    /// Tools past their limit, unavailable for the rest of the turn.
    exhausted: Vec<String>,
    /// The tool that stops the turn, with its failures in a row.
    stop: Option<(String, u32)>,
    /// The round a stop waits for, when the round that decided it paused
    /// ([`hold_stop`](Self::hold_stop)).
    held_for: Option<RoundId>,
}

/// A round of the chat: its message's index, and its key when compaction took messages
/// before it.
pub(crate) type RoundId = (usize, Option<u64>);

/// What a failure did to its tool's budget.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Spent {
    /// Within the limit.
    Within,
    /// This failure reached the limit: the tool is now unavailable for the turn (the model is
    /// told in this call's result), or the turn stops once the round settles.
    Exhausted { failures: u32 },
}

impl TurnRetries {
    /// Starts a new turn: every count at zero, every tool available.
    pub(crate) fn reset(&mut self) {
        if !self.failures.is_empty()
            || !self.exhausted.is_empty()
            || self.stop.is_some()
            || self.held_for.is_some()
        {
            *self = Self::default();
        }
    }

    /// Notes that the round `round`, which decided the stop there is (if any), paused: the
    /// turn that settles it stops then ([`start_turn`](Self::start_turn)).
    pub(crate) fn hold_stop(&mut self, round: Option<RoundId>) {
        self.held_for = round.filter(|_| self.stop.is_some());
    }

    /// Starts the counts of a new turn whose open round is `round`, keeping a stop held for
    /// that same round (it paused on a call waiting for a person, [`hold_stop`](Self::hold_stop)):
    /// the turn that settles it stops then, as a turn run in steps, which stays open across
    /// the pause, does. A stop of any other round (closed by a cancel, a handoff, a failure)
    /// goes.
    pub(crate) fn start_turn(&mut self, round: Option<RoundId>) {
        let held = round.is_some() && self.held_for == round;
        let stop = self.stop.take().filter(|_| held);
        self.reset();
        self.held_for = stop.as_ref().and(round);
        self.stop = stop;
    }

    /// Counts a failed call of `tool`, whose limit is `limit` (`None`: no limit).
    pub(crate) fn failed(
        &mut self,
        tool: &str,
        limit: Option<u32>,
        action: RetriesExhausted,
    ) -> Spent {
        let Some(limit) = limit else {
            return Spent::Within;
        };
        let tool = &*shown(tool);
        let failures = match self.failures.get_mut(tool) {
            Some(n) => {
                *n = n.saturating_add(1);
                *n
            }
            None => {
                self.failures.insert(tool.to_owned(), 1);
                1
            }
        };
        if failures < limit || self.is_exhausted(tool) {
            return Spent::Within;
        }
        match action {
            RetriesExhausted::StopTurn => {
                self.stop.get_or_insert_with(|| (tool.to_owned(), failures));
            }
            RetriesExhausted::Unavailable => self.exhausted.push(tool.to_owned()),
        }
        Spent::Exhausted { failures }
    }

    /// Counts a failed call of `tool` whose result reads `text`; when this failure makes the
    /// tool unavailable for the rest of the turn, `text` ends by telling the model so.
    pub(crate) fn count_failure(
        &mut self,
        tool: &str,
        limit: Option<u32>,
        action: RetriesExhausted,
        text: &mut String,
    ) {
        if let Spent::Exhausted { failures } = self.failed(tool, limit, action)
            && action == RetriesExhausted::Unavailable
        {
            text.push_str(&exhausted_notice(tool, failures));
        }
    }

    /// Counts a call of `tool` that gave a result: its count starts again.
    pub(crate) fn succeeded(&mut self, tool: &str) {
        if let Some(n) = self.failures.get_mut(&*shown(tool)) {
            *n = 0;
        }
    }

    /// Whether `tool` is unavailable for the rest of the turn.
    pub(crate) fn is_exhausted(&self, tool: &str) -> bool {
        let tool = shown(tool);
        self.exhausted.iter().any(|t| *t == *tool)
    }

    /// [`succeeded`](Self::succeeded) for `call`'s tool; its joined name is built only when
    /// some call failed in this turn (otherwise there is no count to start again).
    pub(crate) fn call_succeeded(&mut self, call: &ToolCall) {
        if !self.failures.is_empty() {
            self.succeeded(&call.joined_name());
        }
    }

    /// [`is_exhausted`](Self::is_exhausted) for `call`'s tool; its joined name is built only
    /// when some tool is unavailable.
    pub(crate) fn call_exhausted(&self, call: &ToolCall) -> bool {
        !self.exhausted.is_empty() && self.is_exhausted(&call.joined_name())
    }

    /// Whether any tool is unavailable for the rest of the turn.
    pub(crate) fn any_exhausted(&self) -> bool {
        !self.exhausted.is_empty()
    }

    /// The tool that stops the turn, once: `(joined name, failures in a row)`.
    pub(crate) fn take_stop(&mut self) -> Option<(String, u32)> {
        self.stop.take()
    }
}

/// What the model reads at the end of the failed call that used up its tool's budget.
fn exhausted_notice(tool: &str, failures: u32) -> String {
    let tool = shown(tool);
    format!(
        "\n\n`{tool}` failed {failures} time(s) in a row: it is unavailable for the rest of this turn. Answer with what you have, or use another tool."
    )
}

/// The result of a call of a tool that is unavailable for the rest of the turn.
pub(crate) fn unavailable(tool: &str) -> String {
    let tool = shown(tool);
    format!(
        "This call did not run: `{tool}` failed too many times in a row and is unavailable for the rest of this turn."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_starts_the_count_again_and_the_limit_is_reached_once() {
        let mut r = TurnRetries::default();
        let a = RetriesExhausted::Unavailable;
        assert_eq!(r.failed("t", Some(2), a), Spent::Within);
        r.succeeded("t");
        assert_eq!(r.failed("t", Some(2), a), Spent::Within);
        assert_eq!(r.failed("t", Some(2), a), Spent::Exhausted { failures: 2 });
        assert!(r.is_exhausted("t") && r.any_exhausted());
        assert_eq!(r.failed("t", Some(2), a), Spent::Within);
        assert_eq!(r.failed("u", None, a), Spent::Within);
        r.reset();
        assert!(!r.any_exhausted());
    }

    #[test]
    fn stopping_is_reported_once() {
        let mut r = TurnRetries::default();
        let spent = r.failed("t", Some(1), RetriesExhausted::StopTurn);
        assert_eq!(spent, Spent::Exhausted { failures: 1 });
        assert_eq!(r.take_stop(), Some(("t".to_owned(), 1)));
        assert_eq!(r.take_stop(), None);
        assert!(!r.is_exhausted("t"));
    }
}
