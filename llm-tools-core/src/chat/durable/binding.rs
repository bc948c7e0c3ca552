//! The durable chat's binding to its store: what it knows of the stored chat (revision,
//! messages, meta, the run claim's token) and the one commit that writes what changed; and the
//! stored form of a chat (its meta, messages and calls) with its reading back.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::chat::ledger::{Entry, Ledger};
use crate::chat::options::ToolOptions;
use crate::chat::state::{ChatState, Remembered, STATE_VERSION};
use crate::store::{
    contract::{CallRecord, CallWrite, ChatRecord, Commit, DurableOptions, Release, Store},
    error::StoreError,
};
use crate::{
    error::Error,
    message::{Message, Role, Usage},
};

/// A durable chat's link to its store (see the [module docs](self)).
pub(crate) struct Binding {
    pub(super) store: Arc<dyn Store>,
    pub(super) chat_id: Arc<str>,
    pub(super) options: DurableOptions,
    /// The run claim's token while a turn (or a save) holds it.
    pub(super) run_token: Option<u64>,
    /// The revision the chat in memory was read or last written at.
    pub(super) revision: u64,
    /// How many messages the store holds.
    pub(super) stored_messages: usize,
    /// The earliest stored message changed in place since the last commit.
    pub(super) changed_from: Option<usize>,
    /// Rounds that ended whose last transitions are not written yet.
    pub(super) retired: Vec<Ledger>,
    /// The meta as last written.
    pub(super) stored_meta: String,
    /// A commit was refused (or the run claim lost): the chat in memory is behind the store.
    pub(super) stale: bool,
    /// The chat in memory when it fell behind ([`fingerprint`]): a change made since is the
    /// application's, and is never dropped without an error.
    pub(super) stale_at: Option<String>,
    /// The last failed turn parked the chat.
    pub(super) parked: bool,
    /// A cancel of the chat's calls another process asked for (its time), not carried out.
    pub(super) cancel_requested: Option<u64>,
    /// A cancel request carried out in memory, for the next commit to clear.
    pub(super) cancel_handled: Option<u64>,
    /// The release of a dropped turn's claim, under way ([`super::dropped_turn`]).
    pub(super) pending_release: super::dropped_turn::PendingRelease,
}

impl Binding {
    /// Writes everything that changed in `state` since the last commit, as one commit under
    /// the run claim (nothing outside a turn: `save` writes then), and with `release` the run
    /// claim given up in the same commit (or on its own when nothing changed).
    pub(super) async fn write(
        &mut self,
        state: &mut ChatState,
        release: Option<&Release>,
    ) -> Result<(), Error> {
        let Some(run_token) = self.run_token else {
            return Ok(());
        };
        let from = self
            .changed_from
            .unwrap_or(self.stored_messages)
            .min(state.messages.len());
        let mut calls = Vec::new();
        for round in self.retired.iter().chain(state.round.as_ref()) {
            for (position, entry) in round.calls.iter().enumerate() {
                if entry.dirty {
                    calls.push(CallWrite::new(
                        call_record(round, position, entry),
                        entry.stored_token,
                    ));
                }
            }
        }
        let meta = meta_of(state);
        if calls.is_empty()
            && from == state.messages.len()
            && from == self.stored_messages
            && meta == self.stored_meta
            && self.cancel_handled.is_none()
        {
            if let Some(release) = release {
                self.release_with(release).await;
            }
            return Ok(());
        }
        // A chat whose calls were cancelled from elsewhere rests until someone acts; a message
        // added to it since (the value that carried the cancel out enqueues one) is work due.
        let wake = match self.cancel_handled {
            Some(_) if state.messages.last().is_none_or(|m| m.role != Role::User) => None,
            _ => wake_at(state, &self.options, self.store.now_ms()),
        };
        let commit = Commit::new(
            run_token,
            meta,
            from,
            state.messages[from..].iter().map(message_json).collect(),
            calls,
        )
        .with_wake_at(wake)
        .with_cancel_handled(self.cancel_handled);
        let lease = self.options.run_lease();
        let written = match release {
            None => tokio::time::timeout(lease, self.store.commit(&self.chat_id, &commit)).await,
            Some(release) => {
                let written = tokio::time::timeout(
                    lease,
                    self.store
                        .commit_and_release(&self.chat_id, &commit, release),
                )
                .await;
                if matches!(written, Ok(Ok(_))) {
                    self.run_token = None;
                    self.parked = false;
                }
                written
            }
        };
        let Ok(written) = written else {
            // No answer within the lease (see `bounded`): whether it was written is unknown,
            // as after a lost claim; the chat is read again before its next turn.
            mark_stale(self, state);
            return Err(super::bounded::no_answer(Some(&self.chat_id), "a commit", lease).into());
        };
        match written {
            Ok(revision) => {
                mark_stored(self, state, revision, commit.meta);
                self.cancel_handled = None;
                Ok(())
            }
            Err(e) => {
                if e.is_stale() {
                    mark_stale(self, state);
                }
                Err(e.into())
            }
        }
    }

    /// Gives the run claim up as `release` says (nothing when none is held).
    pub(super) async fn release_with(&mut self, release: &Release) {
        let Some(token) = self.run_token.take() else {
            return;
        };
        self.parked = false;
        let released = super::bounded::within_lease(
            &self.options,
            Some(&self.chat_id),
            "the release of a run claim",
            self.store.release_run(&self.chat_id, token, release),
        )
        .await;
        if let Err(e) = released {
            tracing::warn!(chat_id = &*self.chat_id, error = %e, "could not release the chat's run claim; it ends with its lease");
        }
    }
}

/// The chat's meta as written: everything but the messages and the round's calls.
#[derive(Serialize)]
struct MetaOut<'a> {
    version: u32,
    options: &'a ToolOptions,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a Map<String, Value>>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    decisions: &'a [Remembered],
    usage: Usage,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    found_tools: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    output: Option<&'a crate::structured::OutputSchema>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    provider_tools: &'a [crate::provider_tools::ProviderTool],
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    file_reads: &'a std::collections::BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stopped: Option<&'a crate::chat::stop::StopReason>,
    #[serde(skip_serializing_if = "is_zero")]
    tool_rounds: usize,
    #[serde(skip_serializing_if = "is_zero_u64")]
    compacted_away: u64,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    retired_call_ids: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    agent: Option<&'a crate::chat::state::ActiveAgent>,
    #[serde(skip_serializing_if = "Option::is_none")]
    round: Option<RoundHead>,
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The meta as read back.
#[derive(Deserialize)]
struct MetaIn {
    version: u32,
    #[serde(default)]
    options: ToolOptions,
    #[serde(default)]
    params: Option<Map<String, Value>>,
    #[serde(default)]
    decisions: Vec<Remembered>,
    #[serde(default)]
    usage: Usage,
    #[serde(default)]
    found_tools: Vec<String>,
    #[serde(default)]
    output: Option<crate::structured::OutputSchema>,
    #[serde(default)]
    provider_tools: Vec<crate::provider_tools::ProviderTool>,
    #[serde(default)]
    file_reads: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    stopped: Option<crate::chat::stop::StopReason>,
    #[serde(default)]
    tool_rounds: usize,
    #[serde(default)]
    compacted_away: u64,
    #[serde(default)]
    retired_call_ids: Vec<String>,
    #[serde(default)]
    agent: Option<crate::chat::state::ActiveAgent>,
    #[serde(default)]
    round: Option<RoundHead>,
}

#[derive(Clone, Copy, Serialize, Deserialize)]
struct RoundHead {
    message: usize,
    appended: usize,
    /// The key of the round's calls when it is not `message` (see `Ledger::key`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    key: Option<u64>,
}

pub(super) fn meta_of(state: &ChatState) -> String {
    let meta = MetaOut {
        version: STATE_VERSION,
        options: &state.options,
        params: state.params.as_ref(),
        decisions: &state.decisions,
        usage: state.usage,
        found_tools: &state.found_tools,
        output: state.output.as_ref(),
        provider_tools: &state.provider_tools,
        file_reads: &state.file_reads,
        stopped: state.stopped.as_ref(),
        tool_rounds: state.tool_rounds,
        compacted_away: state.compacted_away,
        retired_call_ids: &state.retired_call_ids,
        agent: state.agent.as_ref(),
        round: state.round.as_ref().map(|r| RoundHead {
            message: r.message,
            appended: r.appended,
            key: r.key,
        }),
    };
    serde_json::to_string(&meta).unwrap_or_default()
}

pub(super) fn call_record(round: &Ledger, position: usize, entry: &Entry) -> CallRecord {
    CallRecord::new(
        round.key(),
        u32::try_from(position).unwrap_or(u32::MAX),
        entry.id.clone(),
        entry.state.name().to_owned(),
        entry.attempt,
        entry.token,
        entry.lease_until(),
        serde_json::to_string(entry).unwrap_or_default(),
    )
}

/// When a worker can next do something for the chat (see [`Commit::wake_at`]), `now` by the
/// store's clock.
pub(super) fn wake_at(state: &ChatState, options: &DurableOptions, now: u64) -> Option<u64> {
    match &state.round {
        Some(round) => round.wake_at(now, options.task_poll()),
        // A turn a stop condition ended rests until someone carries it on.
        None if state.stopped.is_some() => None,
        None => match state.messages.last() {
            Some(last) if last.role == Role::User || last.role == Role::Tool => Some(now),
            _ => None,
        },
    }
}

pub(super) fn message_json(message: &Message) -> String {
    serde_json::to_string(message).unwrap_or_default()
}

/// Records that the store holds `state` as it is, at `revision` with `meta`: every message and
/// call written, nothing pending, nothing stale.
pub(super) fn mark_stored(
    binding: &mut Binding,
    state: &mut ChatState,
    revision: u64,
    meta: String,
) {
    binding.revision = revision;
    binding.stored_messages = state.messages.len();
    binding.changed_from = None;
    binding.retired.clear();
    binding.stored_meta = meta;
    binding.stale = false;
    binding.stale_at = None;
    if let Some(round) = state.round.as_mut() {
        for entry in &mut round.calls {
            entry.dirty = false;
            entry.stored_token = Some(entry.token);
        }
    }
}

/// What the chat in memory holds, as one text: compared before and after, it tells whether
/// anything changed in between, a message changed in place (new instructions) included. Made
/// only for a chat behind its store, when it falls behind and when it is written next.
pub(super) fn fingerprint(state: &ChatState) -> String {
    use std::hash::{Hash as _, Hasher as _};
    let mut messages = std::hash::DefaultHasher::new();
    for message in &state.messages {
        message_json(message).hash(&mut messages);
    }
    format!(
        "{}|{:016x}|{}|{}",
        state.messages.len(),
        messages.finish(),
        meta_of(state),
        serde_json::to_string(&state.round).unwrap_or_default()
    )
}

/// Notes that the chat in memory, as it is now, is behind the store.
pub(super) fn mark_stale(binding: &mut Binding, state: &ChatState) {
    binding.stale = true;
    binding.stale_at = Some(fingerprint(state));
}

/// The deepest nesting of arrays and objects a stored record is read with: 160. A chat keeps
/// JSON as it was read from outside (a provider's data to send back, a server's question), up
/// to the 128 levels `serde_json` reads, and the chat's own structures hold it a few levels
/// deeper (a call's record: its state, a result message, its provider data): a record is read
/// without `serde_json`'s limit of 128, within this one, so a chat that was saved can be
/// loaded again. A record nested deeper (JSON an application built by hand) is refused as
/// [`StoreError::Decode`](crate::store::StoreError::Decode).
pub const MAX_STORED_DEPTH: usize = 160;

/// Reads one stored record (meta, message, call), nested at most [`MAX_STORED_DEPTH`] deep.
fn read_stored<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, serde_json::Error> {
    let depth = crate::json_values::depth(text.as_bytes());
    if depth > MAX_STORED_DEPTH {
        return Err(serde::de::Error::custom(format_args!(
            "the record nests {depth} levels deep, more than the {MAX_STORED_DEPTH} a stored \
             chat is read with"
        )));
    }
    let mut reader = serde_json::Deserializer::from_str(text);
    // Bounded by the depth checked above, so reading cannot run out of stack.
    reader.disable_recursion_limit();
    let value = T::deserialize(&mut reader)?;
    reader.end()?;
    Ok(value)
}

/// Rebuilds a chat's state from what the store holds.
pub(super) fn decode(chat_id: &str, record: ChatRecord) -> Result<ChatState, Error> {
    let decode_error = |what: String, source| StoreError::Decode {
        chat_id: chat_id.to_owned(),
        what,
        source,
    };
    let meta: MetaIn = read_stored(&record.meta).map_err(|e| decode_error("meta".into(), e))?;
    let mut messages = Vec::with_capacity(record.messages.len());
    for (i, text) in record.messages.iter().enumerate() {
        let message: Message =
            read_stored(text).map_err(|e| decode_error(format!("message {i}"), e))?;
        messages.push(message);
    }
    let round = match meta.round {
        None => None,
        Some(head) => {
            let mut calls: Vec<&CallRecord> = record
                .calls
                .iter()
                .filter(|c| Some(c.round) == head.key.or_else(|| u64::try_from(head.message).ok()))
                .collect();
            calls.sort_by_key(|c| c.position);
            let mut entries = Vec::with_capacity(calls.len());
            for call in calls {
                let mut entry: Entry = read_stored(&call.body)
                    .map_err(|e| decode_error(format!("call {}", call.call_id), e))?;
                entry.dirty = false;
                entry.stored_token = Some(call.token);
                entries.push(entry);
            }
            let mut round = Ledger::open(head.message, entries);
            round.appended = head.appended;
            round.key = head.key;
            Some(round)
        }
    };
    let mut state = ChatState {
        version: meta.version,
        messages,
        options: meta.options,
        params: meta.params,
        round,
        decisions: meta.decisions,
        usage: meta.usage,
        found_tools: meta.found_tools,
        output: meta.output,
        provider_tools: meta.provider_tools,
        file_reads: meta.file_reads,
        stopped: meta.stopped,
        tool_rounds: meta.tool_rounds,
        compacted_away: meta.compacted_away,
        retired_call_ids: meta.retired_call_ids,
        agent: meta.agent,
    };
    state.check().map_err(|e| match e {
        Error::InvalidConfig(source) => crate::error::ConfigError::StoredChat {
            chat_id: chat_id.to_owned(),
            source: Box::new(source),
        }
        .into(),
        other => other,
    })?;
    Ok(state)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// JSON nested `levels` deep: `[[…[1]…]]`.
    fn nested(levels: usize) -> Value {
        (0..levels).fold(serde_json::json!(1), |inner, _| serde_json::json!([inner]))
    }

    /// `make(levels)` serialized, with `levels` chosen so the record nests exactly
    /// [`MAX_STORED_DEPTH`] deep.
    fn at_the_bound<T: Serialize>(make: impl Fn(usize) -> T) -> String {
        // Ten levels make the nested value the record's deepest part.
        let wrappers = crate::json_values::depth(
            serde_json::to_string(&make(10))
                .expect("serializes")
                .as_bytes(),
        ) - 10;
        let text = serde_json::to_string(&make(MAX_STORED_DEPTH - wrappers)).expect("serializes");
        assert_eq!(crate::json_values::depth(text.as_bytes()), MAX_STORED_DEPTH);
        text
    }

    /// Reads `text` as a `T` on a thread of the standard size (2 MiB) in this build, as a
    /// runtime's worker has, and gives whether it read.
    fn read_on_a_small_thread<T: serde::de::DeserializeOwned + 'static>(text: String) -> bool {
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || read_stored::<T>(&text).is_ok())
            .expect("spawns")
            .join()
            .expect("no overflow")
    }

    /// Records nested as deeply as the bound lets through are read without running out of
    /// stack, each kind: a message with provider data, and a call's record whose state is read
    /// twice over (its tag first), holding a result message or a task's data.
    #[test]
    fn records_nested_to_the_bound_are_read_within_a_threads_stack() {
        let message = |levels| {
            let mut message = Message::assistant("deep");
            message.provider_data = Some(crate::ProviderData::new("test", nested(levels)));
            message
        };
        assert!(read_on_a_small_thread::<Message>(at_the_bound(message)));
        let finished = |levels| {
            Entry::new(
                "c1",
                crate::chat::ledger::CallState::Finished {
                    result: message(levels),
                },
            )
        };
        assert!(read_on_a_small_thread::<Entry>(at_the_bound(finished)));
        let task = |levels| {
            Entry::new(
                "c1",
                crate::chat::ledger::CallState::Task {
                    task: crate::Task::working("deep").with_data("kept", nested(levels)),
                    since: 0,
                },
            )
        };
        assert!(read_on_a_small_thread::<Entry>(at_the_bound(task)));
        let past = format!(
            "{}{}",
            "[".repeat(MAX_STORED_DEPTH + 1),
            "]".repeat(MAX_STORED_DEPTH + 1)
        );
        assert!(read_stored::<Value>(&past).is_err());
    }
}
