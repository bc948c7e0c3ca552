//! What the two SQL stores ([`SqliteStore`](super::SqliteStore),
//! [`PostgresStore`](super::PostgresStore)) do alike about the run claim and the rows they
//! read, written once: the lease's end and the column conversions, the statements their SQL
//! dialects agree on (claim, renewal, release, status, load), which release statement a
//! [`Release`] runs and with what, and how a row reads as a record. Each backend keeps only
//! its dialect: its placeholders, its table names, the statements where the dialects differ
//! (picking due chats, writing a commit) and how it binds and reads values.
//!
//! The claim rules, as the statements below write them: a run claim is free when its lease
//! ended (`run_until <= now`) or is already the claimant's; taking it adds one to its token;
//! renewing it, giving it up and every conditional write hold only while the token is the
//! writer's. Taking over another holder's claim whose lease ended with that holder still set
//! (abandoned: the holder died or stalled mid-turn) adds one to the chat's `abandoned_claims`,
//! whether a worker's pick or the application's claim takes it; a worker's pick
//! ([`claim_due_assignments`]) of a chat whose count, with its own takeover, is at the bound
//! parks the chat instead, in the same statement; a release that ends a turn, and a release
//! of the parking, set it to 0 (a [`Release::Unchanged`] or [`Release::CallClaimedElsewhere`]
//! leaves it). A release past a call another holder still has claimed moves the chat's wake
//! time to the claim's end ([`Statements::release_claimed_elsewhere`]; `wake_past_call_claim`).

use std::time::Duration;

use super::{
    contract::{
        CLAIMS_ABANDONED, CallRecord, ChatRecord, ChatStatus, DueChat, ParkReason, Release,
        RunClaim,
    },
    error::StoreError,
};

/// A stored count or time (`u64`) as an SQL integer: past `i64::MAX` it stays at `i64::MAX`.
pub(super) fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// An SQL integer read back as a count or time: a negative one reads as 0.
pub(super) fn to_u64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// A small SQL integer (a call's position or attempt) read back: out of range it reads as
/// `u32::MAX`.
pub(super) fn to_u32(n: i64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// When a lease of `lease` taken at `now_ms` ends, as stored (saturating).
pub(super) fn lease_end(now_ms: u64, lease: Duration) -> i64 {
    to_i64(now_ms.saturating_add(u64::try_from(lease.as_millis()).unwrap_or(u64::MAX)))
}

/// The time a cancel request is stored with: never 0, which means "none".
pub(super) fn cancel_stamp(now_ms: u64) -> i64 {
    to_i64(now_ms).max(1)
}

/// A stored cancel request (`0`: none) as the chat record and the store's API give it.
pub(super) fn cancel_requested(at: i64) -> Option<u64> {
    (at > 0).then(|| to_u64(at))
}

/// How a backend writes what the dialects do not share in the statements below.
#[derive(Clone, Copy, Debug)]
pub(super) struct Dialect {
    /// The character of a numbered parameter: `?` (SQLite, `?1`) or `$` (PostgreSQL, `$1`).
    pub(super) parameter: char,
    /// The failure count plus one, as a release that counts a failure sets it (PostgreSQL's
    /// `INTEGER` column stops at its largest value).
    pub(super) failures_plus_one: &'static str,
    /// `$1` (an optional chat id) typed so the database knows it when it is null.
    pub(super) optional_text_first: &'static str,
}

/// The columns a [`StatusRow`] holds, in its order.
pub(super) const STATUS_COLUMNS: &str =
    "id, parked, parked_at, failures, last_error, wake_at, abandoned_claims";

/// The last error a chat parked for its abandoned claims keeps: these two texts around the
/// number of times (no `'` in either: they are SQL literals).
const ABANDONED_ERROR: (&str, &str) = (
    "the turn of this chat ended its worker ",
    " times in a row: each time its run claim was never given back and the lease ran out (the \
     worker process died or stalled mid-turn: a tool that aborts the process, memory run out \
     on the data of the chat, a kill by the platform), so it is parked instead of claimed \
     again, its history, calls and state kept; deal with the cause, then release it \
     (Store::release_parked)",
);

/// The `SET` list of a worker's pick of due chats, the same in both dialects: the statement's
/// parameters are the holder (`$1`), the lease's end (`$2`), now (`$3`), the limit (`$4`)
/// and the bound on abandoned claims (`$5`); `row` is what the picked row's columns are
/// prefixed with (`c.` on PostgreSQL, nothing on SQLite). Every picked chat's token moves on.
///
/// A chat whose claim was abandoned by another holder (its lease ended with a holder still
/// set, not the picker) counts one more abandoned claim; a claim of the picker's own (its
/// live turn's renewals lagged past the lease, or its release failed) is not counted: a
/// [`Worker`](super::Worker)'s holder is new with each worker, so a restarted process still
/// counts its dead predecessor's claim. When the count, with this pick's, is at the bound,
/// the chat is parked ([`ParkReason::ClaimsAbandoned`], with its last error saying how many
/// times) and its dead claim given up instead of taken. The bound is on the count, not only
/// on this pick's takeover: a chat whose abandoned claims an application's claim
/// ([`Statements::claim_run`]) counted up to it, and gave back with [`Release::Unchanged`]
/// (an `enqueue` after a crash), is parked by the next pick rather than run again.
/// [`picked`] tells the two apart from the returned row.
pub(super) fn claim_due_assignments(row: &str, dialect: Dialect) -> String {
    let counted = format!(
        "{row}abandoned_claims
             + CASE WHEN {row}run_holder IS NULL OR {row}run_holder = CAST($1 AS TEXT)
                    THEN 0 ELSE 1 END"
    );
    let over = format!("{counted} >= $5");
    let (before, after) = ABANDONED_ERROR;
    // The casts type the parameters alike in PostgreSQL wherever they stand (a `CASE` would
    // type them by its other branch).
    let sql = format!(
        "run_token = {row}run_token + 1,
         abandoned_claims = {counted},
         run_holder = CASE WHEN {over} THEN NULL ELSE CAST($1 AS TEXT) END,
         run_until = CASE WHEN {over} THEN 0 ELSE CAST($2 AS BIGINT) END,
         parked = CASE WHEN {over} THEN '{CLAIMS_ABANDONED}' ELSE {row}parked END,
         parked_at = CASE WHEN {over} THEN CAST($3 AS BIGINT) ELSE {row}parked_at END,
         last_error = CASE
             WHEN {over} THEN '{before}' || CAST({counted} AS TEXT) || '{after}'
             ELSE {row}last_error END"
    );
    sql.replace('$', &dialect.parameter.to_string())
}

/// The columns a pick ([`claim_due_assignments`]) returns, in [`picked`]'s order (SQLite's
/// statement; PostgreSQL's names them with its table's alias).
#[cfg(feature = "sqlite")]
pub(super) const PICKED_COLUMNS: &str = "id, run_token, revision, parked, abandoned_claims";

/// A chat a worker's pick returned: the chat with its run claim, or `None` for a chat the pick
/// parked for its abandoned claims (logged).
pub(super) fn picked(
    chat_id: String,
    token: i64,
    revision: i64,
    parked: Option<String>,
    abandoned_claims: i64,
) -> Option<DueChat> {
    if parked.is_some() {
        tracing::warn!(
            chat_id = chat_id.as_str(),
            abandoned_claims,
            "parked the chat: its turn ended its worker (the run claim was never given back) as many times in a row as allowed; no worker claims it until it is released"
        );
        return None;
    }
    Some(due(chat_id, token, revision))
}

/// The statements of the run claim, the chat's status and the chat's load, the same in both
/// dialects but for the parameter marks and the table prefix.
#[derive(Debug)]
pub(super) struct Statements {
    pub(super) load_head: String,
    pub(super) load_messages: String,
    pub(super) load_calls: String,
    pub(super) insert_call: String,
    pub(super) claim_run: String,
    pub(super) held: String,
    pub(super) renew_run: String,
    pub(super) release_unchanged: String,
    pub(super) release_succeeded: String,
    pub(super) release_retry: String,
    pub(super) release_park: String,
    pub(super) release_claimed_elsewhere: String,
    pub(super) chat_status: String,
    pub(super) parked_chats: String,
    pub(super) release_parked: String,
    pub(super) request_cancel: String,
    pub(super) cancel_requested: String,
}

impl Statements {
    /// The statements for the tables `{prefix}chats`, `{prefix}messages` and `{prefix}calls`,
    /// written in `dialect`.
    pub(super) fn new(p: &str, dialect: Dialect) -> Self {
        let mark = |sql: String| sql.replace('$', &dialect.parameter.to_string());
        let plus_one = dialect.failures_plus_one;
        let after = dialect.optional_text_first;
        Self {
            load_head: mark(format!(
                "SELECT meta, revision, wake_at, cancel_requested FROM {p}chats WHERE id = $1"
            )),
            load_messages: mark(format!(
                "SELECT body FROM {p}messages WHERE chat_id = $1 ORDER BY seq"
            )),
            load_calls: mark(format!(
                "SELECT round, position, call_id, state, attempt, token, claimed_until, body
                 FROM {p}calls
                 WHERE chat_id = $1 AND round = (SELECT max(round) FROM {p}calls WHERE chat_id = $1)
                 ORDER BY position"
            )),
            insert_call: mark(format!(
                "INSERT INTO {p}calls
                 (chat_id, round, position, call_id, state, attempt, token, claimed_until, body)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
            )),
            // A takeover of another holder's claim is one of an expired (abandoned) claim: it
            // is counted; the application's own turn is never refused for it, and a release
            // `Unchanged` keeps the count, so a worker's next pick parks a chat it brought to
            // the bound ([`claim_due_assignments`]).
            claim_run: mark(format!(
                "UPDATE {p}chats SET run_holder = $2, run_token = run_token + 1, run_until = $3,
                     abandoned_claims = abandoned_claims
                         + CASE WHEN run_holder IS NULL OR run_holder = $2 THEN 0 ELSE 1 END
                 WHERE id = $1 AND (run_until <= $4 OR run_holder = $2)
                 RETURNING run_token, revision"
            )),
            held: mark(format!(
                "SELECT run_holder, run_until FROM {p}chats WHERE id = $1"
            )),
            renew_run: mark(format!(
                "UPDATE {p}chats SET run_until = $3
                 WHERE id = $1 AND run_token = $2 AND run_holder IS NOT NULL
                 RETURNING cancel_requested"
            )),
            release_unchanged: mark(format!(
                "UPDATE {p}chats SET run_until = 0, run_holder = NULL
                 WHERE id = $1 AND run_token = $2 AND run_holder IS NOT NULL"
            )),
            release_succeeded: mark(format!(
                "UPDATE {p}chats
                 SET run_until = 0, run_holder = NULL, failures = 0, last_error = NULL,
                     parked = NULL, parked_at = NULL, abandoned_claims = 0
                 WHERE id = $1 AND run_token = $2 AND run_holder IS NOT NULL"
            )),
            release_retry: mark(format!(
                "UPDATE {p}chats
                 SET run_until = 0, run_holder = NULL, failures = {plus_one},
                     last_error = $3, wake_at = $4, abandoned_claims = 0
                 WHERE id = $1 AND run_token = $2 AND run_holder IS NOT NULL"
            )),
            release_park: mark(format!(
                "UPDATE {p}chats
                 SET run_until = 0, run_holder = NULL, failures = {plus_one},
                     last_error = $3, parked = $4, parked_at = $5, abandoned_claims = 0
                 WHERE id = $1 AND run_token = $2 AND run_holder IS NOT NULL"
            )),
            // Parameters: the call claim's end ($3) and now ($4). A wake the turn wrote for
            // sooner (after now, before the claim's end) stays; a pending cancel request keeps
            // the chat due as it is; otherwise (the wake that made the chat due, now passed)
            // it is due when the claim ends. As `wake_past_call_claim`.
            release_claimed_elsewhere: mark(format!(
                "UPDATE {p}chats
                 SET run_until = 0, run_holder = NULL,
                     wake_at = CASE
                         WHEN cancel_requested > 0 THEN wake_at
                         WHEN wake_at > CAST($4 AS BIGINT) AND wake_at < CAST($3 AS BIGINT)
                             THEN wake_at
                         ELSE CAST($3 AS BIGINT) END
                 WHERE id = $1 AND run_token = $2 AND run_holder IS NOT NULL"
            )),
            chat_status: mark(format!(
                "SELECT {STATUS_COLUMNS} FROM {p}chats WHERE id = $1"
            )),
            parked_chats: mark(format!(
                "SELECT {STATUS_COLUMNS} FROM {p}chats
                 WHERE parked IS NOT NULL AND ({after} IS NULL OR id > $1)
                 ORDER BY id LIMIT $2"
            )),
            release_parked: mark(format!(
                "UPDATE {p}chats
                 SET parked = NULL, parked_at = NULL, failures = 0, abandoned_claims = 0,
                     wake_at = CASE WHEN wake_at > $2 THEN $2 ELSE wake_at END
                 WHERE id = $1 AND parked IS NOT NULL"
            )),
            request_cancel: mark(format!(
                "UPDATE {p}chats
                 SET cancel_requested = $2, revision = revision + 1,
                     wake_at = CASE WHEN wake_at IS NULL OR wake_at > $2 THEN $2 ELSE wake_at END
                 WHERE id = $1"
            )),
            cancel_requested: mark(format!(
                "SELECT cancel_requested FROM {p}chats WHERE id = $1"
            )),
        }
    }

    /// The statement that gives the run claim up as `release` says; its parameters are the
    /// chat id, the token, then [`ReleaseArgs::of`]'s.
    pub(super) fn release_of(&self, release: &Release) -> &str {
        match release {
            Release::Succeeded => &self.release_succeeded,
            Release::Retry { .. } => &self.release_retry,
            Release::Park { .. } => &self.release_park,
            Release::Unchanged => &self.release_unchanged,
            Release::CallClaimedElsewhere { .. } => &self.release_claimed_elsewhere,
        }
    }
}

/// The parameters of [`Statements::release_of`]'s statement after the chat id and the token.
#[derive(Debug)]
pub(super) enum ReleaseArgs<'a> {
    /// None: the claim is given up, the chat's health cleared or left.
    None,
    /// The failed turn's error, and when to try the chat again.
    Retry { error: &'a str, retry_at: i64 },
    /// The failed turn's error, why the chat is parked, and since when.
    Park {
        error: &'a str,
        reason: &'static str,
        parked_at: i64,
    },
    /// When the claim of a call another holder runs ends, and now.
    ClaimedElsewhere { until: i64, now: i64 },
}

impl<'a> ReleaseArgs<'a> {
    /// What `release` writes, a park stamped `now_ms`.
    pub(super) fn of(release: &'a Release, now_ms: u64) -> Self {
        match release {
            Release::Succeeded | Release::Unchanged => Self::None,
            Release::Retry { error, retry_at } => Self::Retry {
                error,
                retry_at: to_i64(*retry_at),
            },
            Release::Park { error, reason } => Self::Park {
                error,
                reason: reason.as_str(),
                parked_at: to_i64(now_ms),
            },
            Release::CallClaimedElsewhere { until } => Self::ClaimedElsewhere {
                until: to_i64(*until),
                now: to_i64(now_ms),
            },
        }
    }
}

/// The wake time a chat gets when its turn stopped at a call another holder has claimed until
/// `until` ([`Release::CallClaimedElsewhere`]), `wake` being the wake time written with the
/// release and `now` the store's time: `wake` when the turn left work for sooner (after now,
/// before the claim ends: a task's next poll); else `until`, so the chat is not picked again
/// before the claim ends. What [`Statements::release_claimed_elsewhere`] writes (but for a
/// pending cancel request, which the `commit` function keeps due on its own).
#[cfg(any(feature = "postgres", test))]
pub(super) fn wake_past_call_claim(wake: Option<u64>, now: u64, until: u64) -> u64 {
    match wake {
        Some(wake) if wake > now && wake < until => wake,
        _ => until,
    }
}

/// The run claim granted, from the `RETURNING run_token, revision` of [`Statements::claim_run`].
pub(super) fn granted(token: i64, revision: i64) -> RunClaim {
    RunClaim::Granted {
        token: to_u64(token),
        revision: to_u64(revision),
    }
}

/// The run claim refused, from the row of [`Statements::held`].
pub(super) fn busy(holder: Option<String>, until: i64) -> RunClaim {
    RunClaim::Busy {
        holder: holder.unwrap_or_default(),
        until_ms: to_u64(until),
    }
}

/// What a renewal returns: the row of [`Statements::renew_run`] (the stored cancel request),
/// or none when the claim is no longer the renewer's.
pub(super) fn renewed(chat_id: &str, row: Option<i64>) -> Result<Option<u64>, StoreError> {
    match row {
        None => Err(StoreError::Stale {
            chat_id: chat_id.to_owned(),
            what: "another holder took the chat's run claim".into(),
        }),
        Some(at) => Ok(cancel_requested(at)),
    }
}

/// A chat a worker claimed, from a `RETURNING id, run_token, revision` row.
pub(super) fn due(chat_id: String, token: i64, revision: i64) -> DueChat {
    DueChat::new(chat_id, to_u64(token), to_u64(revision))
}

/// A chat's head row ([`Statements::load_head`]) with its messages and calls, as the record.
pub(super) fn chat_record(
    meta: String,
    messages: Vec<String>,
    calls: Vec<CallRecord>,
    revision: i64,
    wake_at: Option<i64>,
    cancel: i64,
) -> ChatRecord {
    ChatRecord::new(meta, messages, calls, to_u64(revision))
        .with_wake_at(wake_at.map(to_u64))
        .with_cancel_requested(cancel_requested(cancel))
}

/// A row of [`Statements::load_calls`], its integers widened to `i64`.
#[derive(Debug)]
pub(super) struct CallRow {
    pub(super) round: i64,
    pub(super) position: i64,
    pub(super) call_id: String,
    pub(super) state: String,
    pub(super) attempt: i64,
    pub(super) token: i64,
    pub(super) claimed_until: Option<i64>,
    pub(super) body: String,
}

impl CallRow {
    /// The call's record.
    pub(super) fn into_record(self) -> CallRecord {
        CallRecord::new(
            to_u64(self.round),
            to_u32(self.position),
            self.call_id,
            self.state,
            to_u32(self.attempt),
            to_u64(self.token),
            self.claimed_until.map(to_u64),
            self.body,
        )
    }
}

/// A row of [`STATUS_COLUMNS`], its integers widened to `i64`.
#[derive(Debug)]
pub(super) struct StatusRow {
    pub(super) chat_id: String,
    pub(super) parked: Option<String>,
    pub(super) parked_at: Option<i64>,
    pub(super) failures: i64,
    pub(super) last_error: Option<String>,
    pub(super) wake_at: Option<i64>,
    pub(super) abandoned_claims: i64,
}

impl StatusRow {
    /// The chat's status. A count (failures, abandoned claims) below zero (none is written)
    /// reads as 0, one past `u32::MAX` as `u32::MAX`; a park reason this version does not know
    /// (none is written) still reads as parked.
    pub(super) fn into_status(self) -> ChatStatus {
        let count = |n: i64| if n < 0 { 0 } else { to_u32(n) };
        let mut status = ChatStatus::new(self.chat_id)
            .with_failures(count(self.failures), self.last_error)
            .with_wake_at(self.wake_at.map(to_u64))
            .with_abandoned_claims(count(self.abandoned_claims));
        if let Some(name) = self.parked {
            let reason = ParkReason::from_name(&name).unwrap_or(ParkReason::Undecodable);
            status = status.with_parked(reason, self.parked_at.map_or(0, to_u64));
        }
        status
    }
}

/// The refusal of a save fenced by the run claim of a chat this database does not hold: a
/// durable chat's files kept in another database than the chat (or a chat removed since) have
/// no claim there to guard them, and a save past a stale holder must never land unguarded.
pub(super) fn unfenceable(chat_id: &str, name: &str) -> StoreError {
    StoreError::Stale {
        chat_id: chat_id.to_owned(),
        what: format!(
            "the chat is not in this file store's database, so its run claim cannot guard the \
             file {name:?}, which was not saved; keep a durable chat's files in the store that \
             holds the chat (`file_store` of the same store)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SQLITE: Dialect = Dialect {
        parameter: '?',
        failures_plus_one: "failures + 1",
        optional_text_first: "?1",
    };

    #[test]
    fn a_lease_ends_its_length_after_now_and_saturates() {
        assert_eq!(lease_end(1_000, Duration::from_millis(250)), 1_250);
        assert_eq!(lease_end(u64::MAX - 1, Duration::from_secs(1)), i64::MAX);
        assert_eq!(lease_end(0, Duration::MAX), i64::MAX);
    }

    #[test]
    fn conversions_clamp_instead_of_wrapping() {
        assert_eq!(to_i64(u64::MAX), i64::MAX);
        assert_eq!(to_u64(-5), 0);
        assert_eq!(to_u32(i64::from(u32::MAX) + 1), u32::MAX);
        assert_eq!(cancel_stamp(0), 1);
        assert_eq!(cancel_requested(0), None);
        assert_eq!(cancel_requested(7), Some(7));
    }

    #[test]
    fn sqlite_statements_number_their_parameters_with_question_marks() {
        let sql = Statements::new("llm_tools_", SQLITE);
        assert_eq!(
            sql.held,
            "SELECT run_holder, run_until FROM llm_tools_chats WHERE id = ?1"
        );
        assert!(
            sql.claim_run
                .contains("WHERE id = ?1 AND (run_until <= ?4 OR run_holder = ?2)")
        );
        assert!(sql.release_park.contains("failures = failures + 1"));
        assert!(sql.parked_chats.contains("(?1 IS NULL OR id > ?1)"));
        for text in [
            &sql.claim_run,
            &sql.release_retry,
            &sql.request_cancel,
            &sql.load_calls,
        ] {
            assert!(!text.contains('$'), "{text}");
        }
    }

    #[test]
    fn a_pick_parks_at_the_bound_of_abandoned_claims_in_its_own_statement() {
        let sqlite = claim_due_assignments("", SQLITE);
        assert!(!sqlite.contains('$'), "{sqlite}");
        assert!(
            sqlite.contains("run_holder IS NULL OR run_holder = CAST(?1 AS TEXT)"),
            "{sqlite}"
        );
        assert!(sqlite.contains("THEN 0 ELSE 1 END >= ?5"), "{sqlite}");
        assert!(sqlite.contains("THEN 'claims_abandoned'"), "{sqlite}");
        let postgres = claim_due_assignments(
            "c.",
            Dialect {
                parameter: '$',
                failures_plus_one: "",
                optional_text_first: "$1::TEXT",
            },
        );
        assert!(
            postgres.contains("c.run_holder IS NULL OR c.run_holder = CAST($1 AS TEXT)")
                && postgres.contains("THEN 0 ELSE 1 END >= $5"),
            "{postgres}"
        );
        // The error's texts are SQL literals.
        let (before, after) = ABANDONED_ERROR;
        assert!(!before.contains('\'') && !after.contains('\''));
        assert!(!before.contains('$') && !after.contains('$'));
        assert_eq!(
            picked("c".into(), 1, 2, None, 0),
            Some(DueChat::new("c".into(), 1, 2))
        );
        assert_eq!(
            picked("c".into(), 1, 2, Some(CLAIMS_ABANDONED.into()), 3),
            None
        );
    }

    #[test]
    fn a_release_runs_its_own_statement_with_its_own_arguments() {
        let sql = Statements::new("p_", SQLITE);
        let park = Release::Park {
            error: "boom".into(),
            reason: ParkReason::RoundsExceeded,
        };
        assert_eq!(sql.release_of(&park), sql.release_park);
        assert!(matches!(
            ReleaseArgs::of(&park, 42),
            ReleaseArgs::Park {
                error: "boom",
                parked_at: 42,
                ..
            }
        ));
        let retry = Release::Retry {
            error: "later".into(),
            retry_at: u64::MAX,
        };
        assert_eq!(sql.release_of(&retry), sql.release_retry);
        assert!(matches!(
            ReleaseArgs::of(&retry, 0),
            ReleaseArgs::Retry {
                retry_at: i64::MAX,
                ..
            }
        ));
        assert!(matches!(
            ReleaseArgs::of(&Release::Succeeded, 0),
            ReleaseArgs::None
        ));
        assert_eq!(sql.release_of(&Release::Unchanged), sql.release_unchanged);
        let elsewhere = Release::CallClaimedElsewhere { until: u64::MAX };
        assert_eq!(sql.release_of(&elsewhere), sql.release_claimed_elsewhere);
        assert!(matches!(
            ReleaseArgs::of(&elsewhere, 7),
            ReleaseArgs::ClaimedElsewhere {
                until: i64::MAX,
                now: 7
            }
        ));
        // It writes the wake time and gives the claim up, and nothing of the chat's health.
        let statement = &sql.release_claimed_elsewhere;
        assert!(statement.contains("wake_at = CASE"), "{statement}");
        assert!(statement.contains("run_holder = NULL"), "{statement}");
        for health in ["failures", "last_error", "parked", "abandoned_claims"] {
            assert!(!statement.contains(health), "{statement}");
        }
        assert!(!statement.contains('$'), "{statement}");
    }

    #[test]
    fn a_release_past_a_call_claimed_elsewhere_wakes_the_chat_when_the_claim_ends() {
        // The wake that made the chat due (now passed), or none: the claim's end.
        assert_eq!(wake_past_call_claim(Some(90), 100, 5_000), 5_000);
        assert_eq!(wake_past_call_claim(Some(100), 100, 5_000), 5_000);
        assert_eq!(wake_past_call_claim(None, 100, 5_000), 5_000);
        // Work the turn left for sooner (a task's next poll) stays.
        assert_eq!(wake_past_call_claim(Some(400), 100, 5_000), 400);
        // Never later than the claim's end: a call whose holder died runs again then.
        assert_eq!(wake_past_call_claim(Some(9_000), 100, 5_000), 5_000);
        // A claim that ended meanwhile: due at once.
        assert_eq!(wake_past_call_claim(Some(90), 100, 95), 95);
    }

    #[test]
    fn a_status_row_reads_an_unknown_park_reason_as_parked() {
        let status = StatusRow {
            chat_id: "c".into(),
            parked: Some("from-a-newer-version".into()),
            parked_at: None,
            failures: -1,
            last_error: None,
            wake_at: Some(9),
            abandoned_claims: i64::MAX,
        }
        .into_status();
        assert_eq!(status.failures, 0);
        assert_eq!(status.abandoned_claims, u32::MAX);
        assert_eq!(status.parked, Some(ParkReason::Undecodable));
        assert_eq!(status.parked_at, Some(0));
    }
}
