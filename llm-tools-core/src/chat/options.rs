//! [`ToolOptions`]: how a chat lets the model use its tools.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::provider::ToolChoice;

/// The default round budget: how many answers in a row may ask for tools before `complete`
/// stops with [`Error::RoundsExceeded`](crate::Error::RoundsExceeded).
pub const DEFAULT_ROUNDS: usize = 25;

/// The default time one call may run before it is cancelled: ten minutes.
pub const DEFAULT_MAX_RUN_TIME: Duration = Duration::from_secs(600);

/// The default spill limit: in a chat with a file store, a result longer than this many
/// characters is kept as a file and the model gets its start.
pub const DEFAULT_SPILL_AFTER: usize = 10_000;

/// The default number of failed calls of one tool in a row that a turn allows (recoverable
/// errors, timeouts, arguments that do not decode) before [`RetriesExhausted`] applies.
pub const DEFAULT_MAX_RETRIES: u32 = 5;

/// The default cap on the calls of one answer that run: 64. The others get an error result
/// telling the model to make them again, a few at a time; an answer of thousands of calls (of
/// a sub-agent, say, each a conversation of its own) runs 64 of them.
pub const DEFAULT_MAX_CALLS: usize = 64;

/// The default number of calls of one answer that run at the same time.
pub const DEFAULT_WORKERS: usize = 8;

/// The default request budget of one turn: 256 model requests, counted as
/// [`StopWhen::requests`](super::StopWhen::requests) counts them, across nesting: each request a
/// sub-agent (and its own sub-agents, at any depth) sends counts in the turn of every chat above
/// it, as it is sent. Without it one turn could spend almost without end through sub-agents:
/// [`DEFAULT_ROUNDS`] rounds of [`DEFAULT_MAX_CALLS`] sub-agent calls, each with 25 rounds of
/// its own, and so on down to [`DEFAULT_MAX_DEPTH`](crate::agent::DEFAULT_MAX_DEPTH) levels:
/// some 10^8 requests.
///
/// 256 is ten times the round budget: a chat's own full run of rounds (25 requests) and a
/// handful of sub-agents each using its whole round budget (25 × 9 more) fit under it, while a
/// model fanning out without end is stopped after a few hundred requests, not millions.
///
/// Each request is counted as it is sent, before it goes: a sub-agent's (at any depth) is taken
/// from the budget of every chat above it at once, so no request past the budget is sent,
/// however many sub-agents send together, and every request sent counts, answered or not (a
/// sub-agent cut off while its request waits, by its time limit, a cancel or a fatal error
/// beside it, included).
///
/// At it, instead of its next request, the turn ends as a [`StopWhen::requests`] budget ends it:
/// [`Outcome::Stopped`](super::Outcome::Stopped) with
/// [`StopReason::Requests`](super::StopReason::Requests), its `used` the requests sent
/// (sub-agents still running stop instead of their next request, their calls answered with an
/// error result). Nothing is lost: every call
/// has its result, the history and a durable chat's store stay whole, and `complete` carries on
/// with a fresh budget. It applies to a chat with no [`StopWhen::requests`] of its own (one
/// replaces it); [`ToolOptions::with_max_requests_per_turn`] changes or lifts it.
///
/// [`StopWhen::requests`]: super::StopWhen::requests
pub const DEFAULT_MAX_REQUESTS_PER_TURN: usize = 256;

/// The most bytes of inline attachments the tool results of a chat's history hold, unless
/// [`ToolOptions::with_max_chat_attachment_bytes`] says otherwise: 16 MiB.
///
/// Every request sends the whole history, so a result's attachment is sent again with each
/// later request: without a bound a tool, or an MCP server, returning attachments would make
/// each request larger without end, until the provider refuses them all. (16 MiB is about
/// 21 MiB once base64-encoded; a provider's own limits on one request, or on its images, may be
/// lower.) A result's attachment that does not fit in what is left is left out: the result's
/// text names it (its media type and size) and the limit, and a warning is logged on the
/// `llm_tools::tool` target. Room comes back as compaction takes older results out.
/// Attachments given by URL hold no bytes and always fit. Not counted against it: the user's
/// own attachments (in [`Chat::ask`](super::Chat::ask)'s message); a result an
/// [`on_tool_result_async`](super::Chat::on_tool_result_async) hook rewrote (what the hook
/// returns is the application's) is counted in what the results hold, but not cut.
pub const DEFAULT_MAX_CHAT_ATTACHMENT_BYTES: usize = 16 * 1024 * 1024;

/// How a chat lets the model use its tools: which tools it may call, how many calls of one
/// answer run, how they run, how many rounds and requests a turn may take and how long a call
/// may run.
///
/// ```
/// use std::time::Duration;
/// use llm_tools_core::chat::{Concurrency, ToolOptions};
/// use llm_tools_core::ToolChoice;
///
/// let options = ToolOptions::default()
///     .with_choice(ToolChoice::Required)
///     .with_calls(Some(3))
///     .with_concurrency(Concurrency::Parallel { workers: 4 })
///     .with_rounds(10)
///     .with_max_run_time(Duration::from_secs(30));
/// assert_eq!(options.calls(), Some(3));
/// assert_eq!(options.rounds(), 10);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolOptions {
    #[serde(default)]
    choice: ToolChoice,
    #[serde(default = "default_calls")]
    calls: Option<usize>,
    #[serde(default)]
    concurrency: Concurrency,
    #[serde(default = "default_rounds")]
    rounds: usize,
    #[serde(default = "default_max_run_time", with = "millis")]
    max_run_time: Duration,
    #[serde(default = "default_spill_after")]
    spill_after: usize,
    #[serde(default = "default_max_retries")]
    max_retries: Option<u32>,
    #[serde(default)]
    on_retries_exhausted: RetriesExhausted,
    #[serde(default = "default_max_requests_per_turn")]
    max_requests_per_turn: Option<usize>,
    #[serde(default = "default_max_chat_attachment_bytes")]
    max_chat_attachment_bytes: Option<usize>,
}

fn default_max_chat_attachment_bytes() -> Option<usize> {
    Some(DEFAULT_MAX_CHAT_ATTACHMENT_BYTES)
}

fn default_calls() -> Option<usize> {
    Some(DEFAULT_MAX_CALLS)
}

fn default_max_retries() -> Option<u32> {
    Some(DEFAULT_MAX_RETRIES)
}

fn default_max_requests_per_turn() -> Option<usize> {
    Some(DEFAULT_MAX_REQUESTS_PER_TURN)
}

/// What happens when one tool has failed its limit of calls in a row within a turn
/// ([`ToolOptions::with_max_retries`], or the tool's own `max_retries`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RetriesExhausted {
    /// The model is told, in the last failed call's result, that the tool is unavailable for
    /// the rest of the turn; the tool is left out of the turn's later requests and any call
    /// of it is answered with that error without running. (The default.)
    #[default]
    Unavailable,
    /// The turn stops with [`Error::ToolRetriesExhausted`](crate::Error::ToolRetriesExhausted)
    /// once the round's calls have their results.
    StopTurn,
}

fn default_spill_after() -> usize {
    DEFAULT_SPILL_AFTER
}

fn default_rounds() -> usize {
    DEFAULT_ROUNDS
}

fn default_max_run_time() -> Duration {
    DEFAULT_MAX_RUN_TIME
}

impl Default for ToolOptions {
    /// Automatic choice, [`DEFAULT_MAX_CALLS`] calls of an answer run, parallel calls
    /// ([`DEFAULT_WORKERS`] at a time),
    /// [`DEFAULT_ROUNDS`] rounds, [`DEFAULT_MAX_RUN_TIME`] per call,
    /// [`DEFAULT_MAX_REQUESTS_PER_TURN`] requests a turn, sub-agents' included.
    fn default() -> Self {
        Self {
            choice: ToolChoice::Auto,
            calls: Some(DEFAULT_MAX_CALLS),
            concurrency: Concurrency::default(),
            rounds: DEFAULT_ROUNDS,
            max_run_time: DEFAULT_MAX_RUN_TIME,
            spill_after: DEFAULT_SPILL_AFTER,
            max_retries: Some(DEFAULT_MAX_RETRIES),
            on_retries_exhausted: RetriesExhausted::Unavailable,
            max_requests_per_turn: Some(DEFAULT_MAX_REQUESTS_PER_TURN),
            max_chat_attachment_bytes: Some(DEFAULT_MAX_CHAT_ATTACHMENT_BYTES),
        }
    }
}

impl ToolOptions {
    /// Which tools the model may call: [`ToolChoice::Auto`] (the default), `None`, `Required`,
    /// or one tool by joined name. A forced choice (`Required` or one tool) is reset to `Auto`
    /// after the round it forced, so the model is not forced into a loop.
    #[must_use]
    pub fn with_choice(mut self, choice: ToolChoice) -> Self {
        self.choice = choice;
        self
    }

    /// The most calls of one answer that run. The first `n` run; the others get an error result
    /// telling the model to make them again, a few at a time. [`DEFAULT_MAX_CALLS`] (64) by
    /// default; `None`: no cap. A cap of 1 also asks the provider for one call per answer.
    #[must_use]
    pub fn with_calls(mut self, calls: Option<usize>) -> Self {
        self.calls = calls;
        self
    }

    /// How the calls of one answer run: one after another, or at the same time. Results are
    /// appended in call order either way.
    #[must_use]
    pub fn with_concurrency(mut self, concurrency: Concurrency) -> Self {
        self.concurrency = concurrency;
        self
    }

    /// How many answers in a row may ask for tools within one `ask`/`complete` before it stops
    /// with [`Error::RoundsExceeded`](crate::Error::RoundsExceeded); the chat stays resumable.
    #[must_use]
    pub fn with_rounds(mut self, rounds: usize) -> Self {
        self.rounds = rounds;
        self
    }

    /// How long one call may run before it is cancelled and answered with a timeout error; a
    /// tool's own `max_run_time` takes precedence.
    #[must_use]
    pub fn with_max_run_time(mut self, max_run_time: Duration) -> Self {
        self.max_run_time = max_run_time;
        self
    }

    /// In a chat with a file store, how long (in characters) a result may be before it is kept
    /// as a file and the model gets its start and the file's name (default
    /// [`DEFAULT_SPILL_AFTER`]); a tool's own `spill_to_file` takes precedence.
    #[must_use]
    pub fn with_spill_after(mut self, characters: usize) -> Self {
        self.spill_after = characters;
        self
    }

    /// How many failed calls of one tool in a row a turn allows: recoverable errors, timeouts
    /// and arguments that do not decode count; a call that succeeds starts the count again.
    /// Past it, [`with_on_retries_exhausted`](Self::with_on_retries_exhausted) decides. A
    /// tool's own `max_retries` takes precedence. Default [`DEFAULT_MAX_RETRIES`]; `None`: no
    /// limit but the round budget.
    ///
    /// ```
    /// use llm_tools_core::chat::{RetriesExhausted, ToolOptions};
    ///
    /// let options = ToolOptions::default()
    ///     .with_max_retries(Some(2))
    ///     .with_on_retries_exhausted(RetriesExhausted::StopTurn);
    /// assert_eq!(options.max_retries(), Some(2));
    /// ```
    #[must_use]
    pub fn with_max_retries(mut self, max_retries: Option<u32>) -> Self {
        self.max_retries = max_retries;
        self
    }

    /// What happens once a tool has failed its limit of calls in a row: it becomes unavailable
    /// for the rest of the turn (the default), or the turn stops with a typed error.
    #[must_use]
    pub fn with_on_retries_exhausted(mut self, action: RetriesExhausted) -> Self {
        self.on_retries_exhausted = action;
        self
    }

    /// How many model requests one turn may send, those of its sub-agents at every depth
    /// included, each counted as it is sent, so none past it is sent
    /// ([`DEFAULT_MAX_REQUESTS_PER_TURN`] by default; `None` lifts it). Instead of a request
    /// past it the turn stops as a
    /// [`StopWhen::requests`](super::StopWhen::requests) budget stops it, with
    /// [`StopReason::Requests`](super::StopReason::Requests); `complete` carries on with a fresh
    /// budget. A chat's own `StopWhen::requests` replaces it; its token and cost budgets apply
    /// beside it. Kept with the chat's state (and a durable chat's store), and an agent's tool
    /// options set it for the agent's chats.
    ///
    /// ```
    /// use llm_tools_core::chat::{DEFAULT_MAX_REQUESTS_PER_TURN, ToolOptions};
    ///
    /// assert_eq!(
    ///     ToolOptions::default().max_requests_per_turn(),
    ///     Some(DEFAULT_MAX_REQUESTS_PER_TURN)
    /// );
    /// let unbounded = ToolOptions::default().with_max_requests_per_turn(None);
    /// assert_eq!(unbounded.max_requests_per_turn(), None);
    /// ```
    #[must_use]
    pub fn with_max_requests_per_turn(mut self, requests: Option<usize>) -> Self {
        self.max_requests_per_turn = requests;
        self
    }

    /// The request budget of one turn, sub-agents' requests included.
    pub fn max_requests_per_turn(&self) -> Option<usize> {
        self.max_requests_per_turn
    }

    /// The most bytes of inline attachments the chat's tool results hold
    /// ([`DEFAULT_MAX_CHAT_ATTACHMENT_BYTES`], 16 MiB, by default); `None` lifts the limit. A
    /// result's attachment past it is left out, and the result's text says so; a result an
    /// [`on_tool_result_async`](super::Chat::on_tool_result_async) hook rewrote fits the same
    /// way. Results fit as they come: of calls running in parallel, the one that finishes
    /// first takes its room first.
    ///
    /// ```
    /// use llm_tools_core::chat::{DEFAULT_MAX_CHAT_ATTACHMENT_BYTES, ToolOptions};
    ///
    /// assert_eq!(
    ///     ToolOptions::default().max_chat_attachment_bytes(),
    ///     Some(DEFAULT_MAX_CHAT_ATTACHMENT_BYTES)
    /// );
    /// let larger = ToolOptions::default().with_max_chat_attachment_bytes(Some(64 << 20));
    /// assert_eq!(larger.max_chat_attachment_bytes(), Some(64 << 20));
    /// ```
    #[must_use]
    pub fn with_max_chat_attachment_bytes(mut self, bytes: Option<usize>) -> Self {
        self.max_chat_attachment_bytes = bytes;
        self
    }

    /// The most bytes of inline attachments the chat's tool results hold.
    pub fn max_chat_attachment_bytes(&self) -> Option<usize> {
        self.max_chat_attachment_bytes
    }

    /// The chat's limit of failed calls of one tool in a row within a turn.
    pub fn max_retries(&self) -> Option<u32> {
        self.max_retries
    }

    /// What happens once a tool has failed its limit of calls in a row.
    pub fn on_retries_exhausted(&self) -> RetriesExhausted {
        self.on_retries_exhausted
    }

    /// Which tools the model may call.
    pub fn choice(&self) -> &ToolChoice {
        &self.choice
    }

    /// The cap on calls per answer.
    pub fn calls(&self) -> Option<usize> {
        self.calls
    }

    /// How the calls of one answer run.
    pub fn concurrency(&self) -> Concurrency {
        self.concurrency
    }

    /// The round budget of one `ask`/`complete`.
    pub fn rounds(&self) -> usize {
        self.rounds
    }

    /// The chat's limit on one call's run time.
    pub fn max_run_time(&self) -> Duration {
        self.max_run_time
    }

    /// The chat's spill limit, in characters.
    pub fn spill_after(&self) -> usize {
        self.spill_after
    }

    pub(crate) fn reset_forced_choice(&mut self) {
        if self.choice.is_forced() {
            self.choice = ToolChoice::Auto;
        }
    }

    pub(crate) fn workers(&self) -> usize {
        match self.concurrency {
            Concurrency::Sequential => 1,
            Concurrency::Parallel { workers } => workers.max(1),
        }
    }

    pub(crate) fn validate(&self) -> Result<(), crate::error::Error> {
        let invalid = |option: &'static str, reason: &str| {
            Err(crate::error::ConfigError::InvalidOption {
                option,
                reason: reason.to_owned(),
            }
            .into())
        };
        if self.rounds == 0 {
            return invalid("rounds", "must be at least 1");
        }
        if self.calls == Some(0) {
            return invalid(
                "calls",
                "must be at least 1 (use `ToolChoice::None` for no calls)",
            );
        }
        if self.concurrency == (Concurrency::Parallel { workers: 0 }) {
            return invalid("Concurrency::Parallel", "needs at least 1 worker");
        }
        if self.max_run_time.is_zero() {
            return invalid("max_run_time", "must be longer than zero");
        }
        if self.spill_after == 0 {
            return invalid("spill_after", "must be at least 1 character");
        }
        if self.max_requests_per_turn == Some(0) {
            return invalid(
                "max_requests_per_turn",
                "must be at least 1 (`None` lifts the budget)",
            );
        }
        Ok(())
    }
}

/// How the calls of one answer run.
///
/// A tool marked `sequential` (see [`ToolSpec::with_sequential`](crate::ToolSpec::with_sequential))
/// is a barrier in parallel mode: the calls before it finish first, it runs alone, then the
/// calls after it start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Concurrency {
    /// One call at a time, in call order.
    Sequential,
    /// Up to `workers` calls at a time, on the chat's task (no threads are spawned).
    Parallel {
        /// How many calls run at once.
        workers: usize,
    },
}

impl Default for Concurrency {
    fn default() -> Self {
        Concurrency::Parallel {
            workers: DEFAULT_WORKERS,
        }
    }
}

impl Concurrency {
    /// Up to `workers` calls at a time.
    pub fn parallel(workers: usize) -> Self {
        Concurrency::Parallel { workers }
    }
}

mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_millis(u64::deserialize(d)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_round_trip_and_fill_missing_fields_with_defaults() {
        let options = ToolOptions::default()
            .with_choice(ToolChoice::tool("crm_lookup"))
            .with_calls(Some(2))
            .with_concurrency(Concurrency::Sequential)
            .with_max_run_time(Duration::from_millis(1500))
            .with_max_requests_per_turn(None);
        let json = serde_json::to_value(&options).unwrap();
        assert_eq!(
            serde_json::from_value::<ToolOptions>(json).unwrap(),
            options
        );
        let empty: ToolOptions = serde_json::from_str("{}").unwrap();
        assert_eq!(empty, ToolOptions::default());
    }

    #[test]
    fn zero_budgets_are_rejected() {
        assert!(ToolOptions::default().with_rounds(0).validate().is_err());
        assert!(
            ToolOptions::default()
                .with_calls(Some(0))
                .validate()
                .is_err()
        );
        assert!(
            ToolOptions::default()
                .with_concurrency(Concurrency::parallel(0))
                .validate()
                .is_err()
        );
        assert!(
            ToolOptions::default()
                .with_max_requests_per_turn(Some(0))
                .validate()
                .is_err()
        );
        assert!(ToolOptions::default().validate().is_ok());
    }
}
