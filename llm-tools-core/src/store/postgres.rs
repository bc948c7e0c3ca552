//! [`PostgresStore`]: durable chats in PostgreSQL, shared by processes on many machines.
//!
//! Claims are rows and conditions, not advisory locks: a commit locks its chat's row
//! (`SELECT … FOR UPDATE`), checks the run claim's token, and writes each changed call with
//! `UPDATE … WHERE token = $expected`; workers pick due chats with `FOR UPDATE SKIP LOCKED`, so
//! no picker waits on another. Tables are named with a prefix (`llm_tools_` by default) in a
//! schema of your choice (`public` by default); the schema is created and migrated on connect
//! (or by [`PostgresStore::migrate`]), with its version in `<prefix>schema`, checked on every
//! connect. Connections come from a pool (deadpool-postgres), over TCP or a Unix socket, with
//! TLS by rustls as `sslmode` says ([`SslMode`]; when nothing sets it, `verify-full` for a
//! server across the network and `prefer` for one on this machine, every `host` and `hostaddr`
//! of the connection string local).
//!
//! Every wait on the database has a limit ([`PostgresOptions`]): opening a connection
//! (10 s), a free connection of the pool (30 s), one statement (`statement_timeout`, 30 s), a
//! row another connection has locked (`lock_timeout`, 5 s), and a server that vanished without
//! closing the connection (TCP keepalive after 30 s idle, about a minute in all). A lock or
//! statement timeout is a retryable error ([`StoreError::is_retryable`]) with nothing written.
//! A transaction this process leaves idle between its statements (stopped, or cut off from the
//! server, in the middle of a file's save) is ended by the server after 2 min
//! (`idle_in_transaction_session_timeout`), so no lock of it keeps other processes from a chat
//! for longer.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use tokio_postgres::error::SqlState;

mod clock;
mod tls;
pub use tls::SslMode;

use super::lease::{
    self, CallRow, Dialect, ReleaseArgs, Statements, StatusRow, lease_end, to_i64, to_u64,
};
use super::{
    contract::{
        CallRecord, ChatRecord, ChatStatus, Commit, DEFAULT_MAX_ABANDONED_CLAIMS, DueChat, Release,
        RunClaim, SCHEMA_VERSION, Store,
    },
    error::StoreError,
};
use crate::files::{FileStore, Limits, Totals, len_u64};
use crate::future::BoxFuture;

/// The schema, one script per version (`{p}` is the qualified prefix).
const MIGRATIONS: &[&str] = &[
    "
CREATE TABLE {p}chats (
    id TEXT PRIMARY KEY,
    meta TEXT NOT NULL,
    revision BIGINT NOT NULL DEFAULT 0,
    message_count BIGINT NOT NULL DEFAULT 0,
    run_holder TEXT,
    run_token BIGINT NOT NULL DEFAULT 0,
    run_until BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE TABLE {p}messages (
    chat_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (chat_id, seq)
);
CREATE TABLE {p}calls (
    chat_id TEXT NOT NULL,
    round BIGINT NOT NULL,
    position INTEGER NOT NULL,
    call_id TEXT NOT NULL,
    state TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    token BIGINT NOT NULL,
    claimed_until BIGINT,
    body TEXT NOT NULL,
    PRIMARY KEY (chat_id, round, position)
);
CREATE TABLE {p}files (
    chat_id TEXT NOT NULL,
    name TEXT NOT NULL,
    content BYTEA NOT NULL,
    PRIMARY KEY (chat_id, name)
);
",
    "
ALTER TABLE {p}chats ADD COLUMN wake_at BIGINT;
CREATE INDEX {n}chats_due ON {p}chats (wake_at) WHERE wake_at IS NOT NULL;
",
    "
ALTER TABLE {p}chats ADD COLUMN failures INTEGER NOT NULL DEFAULT 0;
ALTER TABLE {p}chats ADD COLUMN last_error TEXT;
ALTER TABLE {p}chats ADD COLUMN parked TEXT;
ALTER TABLE {p}chats ADD COLUMN parked_at BIGINT;
DROP INDEX {p}chats_due;
CREATE INDEX {n}chats_due ON {p}chats (wake_at) WHERE wake_at IS NOT NULL AND parked IS NULL;
CREATE INDEX {n}chats_parked ON {p}chats (id) WHERE parked IS NOT NULL;
",
    "
ALTER TABLE {p}chats ADD COLUMN cancel_requested BIGINT NOT NULL DEFAULT 0;
",
    // Version 5 sent a commit as one pipeline ending in COMMIT, each condition raising an error
    // (aborting the transaction, so COMMIT rolled back) through this check.
    "
CREATE OR REPLACE FUNCTION {p}check(ok BOOLEAN, reason TEXT) RETURNS BOOLEAN
LANGUAGE plpgsql AS $check$
BEGIN
    IF ok IS NOT TRUE THEN
        RAISE EXCEPTION USING ERRCODE = 'LT409', MESSAGE = reason;
    END IF;
    RETURN TRUE;
END
$check$;
",
    // A commit is one statement: this function, in the statement's own transaction. It locks
    // the chat's row, checks the run claim and that no message is written past the stored
    // ones, writes the head (and gives the claim up when `r_kind` says how), replaces the
    // messages from `p_from` on and writes each call, an update only where its token is still
    // the one the writer saw. A condition that does not hold raises LT409 with the condition
    // as its message and, for a call, the call's id as its detail: nothing is written.
    "
CREATE OR REPLACE FUNCTION {p}commit(
    p_chat TEXT, p_meta TEXT, p_count BIGINT, p_now BIGINT, p_wake BIGINT, p_token BIGINT,
    p_cancel_handled BIGINT, p_from BIGINT, p_messages TEXT[],
    c_round BIGINT[], c_position INTEGER[], c_call_id TEXT[], c_state TEXT[],
    c_attempt INTEGER[], c_token BIGINT[], c_until BIGINT[], c_body TEXT[], c_expected BIGINT[],
    r_kind TEXT, r_error TEXT, r_retry_at BIGINT, r_reason TEXT
) RETURNS BIGINT
LANGUAGE plpgsql AS $commit$
DECLARE
    stored_count BIGINT;
    new_revision BIGINT;
    written BIGINT;
BEGIN
    SELECT message_count INTO stored_count FROM {p}chats
    WHERE id = p_chat AND run_token = p_token FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'LT409', MESSAGE = 'run claim held';
    END IF;
    IF stored_count < p_from THEN
        RAISE EXCEPTION USING ERRCODE = 'LT409', MESSAGE = 'no message gap';
    END IF;
    UPDATE {p}chats AS c
    SET meta = p_meta, message_count = p_count, revision = c.revision + 1, updated_at = p_now,
        wake_at = CASE WHEN r_kind = 'retry' THEN r_retry_at ELSE p_wake END,
        cancel_requested = CASE WHEN c.cancel_requested <= p_cancel_handled THEN 0
                                ELSE c.cancel_requested END,
        run_until = CASE WHEN r_kind IS NULL THEN c.run_until ELSE 0 END,
        run_holder = CASE WHEN r_kind IS NULL THEN c.run_holder END,
        failures = CASE
            WHEN r_kind = 'succeeded' THEN 0
            WHEN r_kind IN ('retry', 'park') AND c.failures < 2147483647 THEN c.failures + 1
            ELSE c.failures END,
        last_error = CASE
            WHEN r_kind = 'succeeded' THEN NULL
            WHEN r_kind IN ('retry', 'park') THEN r_error
            ELSE c.last_error END,
        parked = CASE
            WHEN r_kind = 'succeeded' THEN NULL
            WHEN r_kind = 'park' THEN r_reason
            ELSE c.parked END,
        parked_at = CASE
            WHEN r_kind = 'succeeded' THEN NULL
            WHEN r_kind = 'park' THEN p_now
            ELSE c.parked_at END
    WHERE c.id = p_chat
    RETURNING c.revision INTO new_revision;
    IF stored_count > p_from THEN
        DELETE FROM {p}messages WHERE chat_id = p_chat AND seq >= p_from;
    END IF;
    IF cardinality(p_messages) > 0 THEN
        INSERT INTO {p}messages (chat_id, seq, body)
        SELECT p_chat, p_from + m.n - 1, m.body
        FROM unnest(p_messages) WITH ORDINALITY AS m(body, n)
        ON CONFLICT DO NOTHING;
        GET DIAGNOSTICS written = ROW_COUNT;
        IF written < cardinality(p_messages) THEN
            RAISE EXCEPTION USING ERRCODE = 'LT409', MESSAGE = 'message stored';
        END IF;
    END IF;
    FOR i IN 1 .. coalesce(cardinality(c_round), 0) LOOP
        IF c_expected[i] IS NULL THEN
            INSERT INTO {p}calls
                (chat_id, round, position, call_id, state, attempt, token, claimed_until, body)
            VALUES (p_chat, c_round[i], c_position[i], c_call_id[i], c_state[i], c_attempt[i],
                    c_token[i], c_until[i], c_body[i])
            ON CONFLICT DO NOTHING;
            IF NOT FOUND THEN
                RAISE EXCEPTION USING ERRCODE = 'LT409', MESSAGE = 'call stored',
                    DETAIL = c_call_id[i];
            END IF;
        ELSE
            UPDATE {p}calls
            SET call_id = c_call_id[i], state = c_state[i], attempt = c_attempt[i],
                token = c_token[i], claimed_until = c_until[i], body = c_body[i]
            WHERE chat_id = p_chat AND round = c_round[i] AND position = c_position[i]
              AND token = c_expected[i];
            IF NOT FOUND THEN
                RAISE EXCEPTION USING ERRCODE = 'LT409', MESSAGE = 'call token seen',
                    DETAIL = c_call_id[i];
            END IF;
        END IF;
    END LOOP;
    RETURN new_revision;
END
$commit$;
",
    "
CREATE TABLE {p}secrets (
    key TEXT PRIMARY KEY,
    value BYTEA NOT NULL
);
",
    // A chat holds one round at a time, its calls keyed by the place of the message that made
    // them; compacting the history moves that place back, so a new round's key can be an older
    // round's. The first call a round writes removes the chat's calls of every other round
    // (all retired), inside the commit function, after its checks.
    "
CREATE OR REPLACE FUNCTION {p}retire_rounds() RETURNS trigger
LANGUAGE plpgsql AS $retire$
BEGIN
    DELETE FROM {p}calls WHERE chat_id = NEW.chat_id AND round <> NEW.round;
    RETURN NEW;
END
$retire$;
CREATE TRIGGER {n}calls_retire_rounds BEFORE INSERT ON {p}calls
    FOR EACH ROW EXECUTE FUNCTION {p}retire_rounds();
",
    // Version 9: a cancel request still pending after a commit (asked while the turn ran, which
    // ended before its heartbeat saw it) keeps the chat due, so a worker carries it out.
    "
CREATE OR REPLACE FUNCTION {p}commit(
    p_chat TEXT, p_meta TEXT, p_count BIGINT, p_now BIGINT, p_wake BIGINT, p_token BIGINT,
    p_cancel_handled BIGINT, p_from BIGINT, p_messages TEXT[],
    c_round BIGINT[], c_position INTEGER[], c_call_id TEXT[], c_state TEXT[],
    c_attempt INTEGER[], c_token BIGINT[], c_until BIGINT[], c_body TEXT[], c_expected BIGINT[],
    r_kind TEXT, r_error TEXT, r_retry_at BIGINT, r_reason TEXT
) RETURNS BIGINT
LANGUAGE plpgsql AS $commit$
DECLARE
    stored_count BIGINT;
    new_revision BIGINT;
    written BIGINT;
BEGIN
    SELECT message_count INTO stored_count FROM {p}chats
    WHERE id = p_chat AND run_token = p_token FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'LT409', MESSAGE = 'run claim held';
    END IF;
    IF stored_count < p_from THEN
        RAISE EXCEPTION USING ERRCODE = 'LT409', MESSAGE = 'no message gap';
    END IF;
    UPDATE {p}chats AS c
    SET meta = p_meta, message_count = p_count, revision = c.revision + 1, updated_at = p_now,
        wake_at = CASE WHEN r_kind = 'retry' THEN r_retry_at
                       WHEN c.cancel_requested > 0
                            AND c.cancel_requested > coalesce(p_cancel_handled, -1)
                            AND (p_wake IS NULL OR p_wake > p_now) THEN p_now
                       ELSE p_wake END,
        cancel_requested = CASE WHEN c.cancel_requested <= p_cancel_handled THEN 0
                                ELSE c.cancel_requested END,
        run_until = CASE WHEN r_kind IS NULL THEN c.run_until ELSE 0 END,
        run_holder = CASE WHEN r_kind IS NULL THEN c.run_holder END,
        failures = CASE
            WHEN r_kind = 'succeeded' THEN 0
            WHEN r_kind IN ('retry', 'park') AND c.failures < 2147483647 THEN c.failures + 1
            ELSE c.failures END,
        last_error = CASE
            WHEN r_kind = 'succeeded' THEN NULL
            WHEN r_kind IN ('retry', 'park') THEN r_error
            ELSE c.last_error END,
        parked = CASE
            WHEN r_kind = 'succeeded' THEN NULL
            WHEN r_kind = 'park' THEN r_reason
            ELSE c.parked END,
        parked_at = CASE
            WHEN r_kind = 'succeeded' THEN NULL
            WHEN r_kind = 'park' THEN p_now
            ELSE c.parked_at END
    WHERE c.id = p_chat
    RETURNING c.revision INTO new_revision;
    IF stored_count > p_from THEN
        DELETE FROM {p}messages WHERE chat_id = p_chat AND seq >= p_from;
    END IF;
    IF cardinality(p_messages) > 0 THEN
        INSERT INTO {p}messages (chat_id, seq, body)
        SELECT p_chat, p_from + m.n - 1, m.body
        FROM unnest(p_messages) WITH ORDINALITY AS m(body, n)
        ON CONFLICT DO NOTHING;
        GET DIAGNOSTICS written = ROW_COUNT;
        IF written < cardinality(p_messages) THEN
            RAISE EXCEPTION USING ERRCODE = 'LT409', MESSAGE = 'message stored';
        END IF;
    END IF;
    FOR i IN 1 .. coalesce(cardinality(c_round), 0) LOOP
        IF c_expected[i] IS NULL THEN
            INSERT INTO {p}calls
                (chat_id, round, position, call_id, state, attempt, token, claimed_until, body)
            VALUES (p_chat, c_round[i], c_position[i], c_call_id[i], c_state[i], c_attempt[i],
                    c_token[i], c_until[i], c_body[i])
            ON CONFLICT DO NOTHING;
            IF NOT FOUND THEN
                RAISE EXCEPTION USING ERRCODE = 'LT409', MESSAGE = 'call stored',
                    DETAIL = c_call_id[i];
            END IF;
        ELSE
            UPDATE {p}calls
            SET call_id = c_call_id[i], state = c_state[i], attempt = c_attempt[i],
                token = c_token[i], claimed_until = c_until[i], body = c_body[i]
            WHERE chat_id = p_chat AND round = c_round[i] AND position = c_position[i]
              AND token = c_expected[i];
            IF NOT FOUND THEN
                RAISE EXCEPTION USING ERRCODE = 'LT409', MESSAGE = 'call token seen',
                    DETAIL = c_call_id[i];
            END IF;
        END IF;
    END LOOP;
    RETURN new_revision;
END
$commit$;
",
    // Version 10: how many times in a row the chat's run claim was taken over after its holder
    // abandoned it (the worker died mid-turn; a worker's pick parks the chat at the bound),
    // and the commit function's release that ends a turn sets it to 0.
    "
ALTER TABLE {p}chats ADD COLUMN abandoned_claims BIGINT NOT NULL DEFAULT 0;
CREATE OR REPLACE FUNCTION {p}commit(
    p_chat TEXT, p_meta TEXT, p_count BIGINT, p_now BIGINT, p_wake BIGINT, p_token BIGINT,
    p_cancel_handled BIGINT, p_from BIGINT, p_messages TEXT[],
    c_round BIGINT[], c_position INTEGER[], c_call_id TEXT[], c_state TEXT[],
    c_attempt INTEGER[], c_token BIGINT[], c_until BIGINT[], c_body TEXT[], c_expected BIGINT[],
    r_kind TEXT, r_error TEXT, r_retry_at BIGINT, r_reason TEXT
) RETURNS BIGINT
LANGUAGE plpgsql AS $commit$
DECLARE
    stored_count BIGINT;
    new_revision BIGINT;
    written BIGINT;
BEGIN
    SELECT message_count INTO stored_count FROM {p}chats
    WHERE id = p_chat AND run_token = p_token FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'LT409', MESSAGE = 'run claim held';
    END IF;
    IF stored_count < p_from THEN
        RAISE EXCEPTION USING ERRCODE = 'LT409', MESSAGE = 'no message gap';
    END IF;
    UPDATE {p}chats AS c
    SET meta = p_meta, message_count = p_count, revision = c.revision + 1, updated_at = p_now,
        wake_at = CASE WHEN r_kind = 'retry' THEN r_retry_at
                       WHEN c.cancel_requested > 0
                            AND c.cancel_requested > coalesce(p_cancel_handled, -1)
                            AND (p_wake IS NULL OR p_wake > p_now) THEN p_now
                       ELSE p_wake END,
        cancel_requested = CASE WHEN c.cancel_requested <= p_cancel_handled THEN 0
                                ELSE c.cancel_requested END,
        run_until = CASE WHEN r_kind IS NULL THEN c.run_until ELSE 0 END,
        run_holder = CASE WHEN r_kind IS NULL THEN c.run_holder END,
        failures = CASE
            WHEN r_kind = 'succeeded' THEN 0
            WHEN r_kind IN ('retry', 'park') AND c.failures < 2147483647 THEN c.failures + 1
            ELSE c.failures END,
        last_error = CASE
            WHEN r_kind = 'succeeded' THEN NULL
            WHEN r_kind IN ('retry', 'park') THEN r_error
            ELSE c.last_error END,
        parked = CASE
            WHEN r_kind = 'succeeded' THEN NULL
            WHEN r_kind = 'park' THEN r_reason
            ELSE c.parked END,
        parked_at = CASE
            WHEN r_kind = 'succeeded' THEN NULL
            WHEN r_kind = 'park' THEN p_now
            ELSE c.parked_at END,
        abandoned_claims = CASE
            WHEN r_kind IN ('succeeded', 'retry', 'park') THEN 0
            ELSE c.abandoned_claims END
    WHERE c.id = p_chat
    RETURNING c.revision INTO new_revision;
    IF stored_count > p_from THEN
        DELETE FROM {p}messages WHERE chat_id = p_chat AND seq >= p_from;
    END IF;
    IF cardinality(p_messages) > 0 THEN
        INSERT INTO {p}messages (chat_id, seq, body)
        SELECT p_chat, p_from + m.n - 1, m.body
        FROM unnest(p_messages) WITH ORDINALITY AS m(body, n)
        ON CONFLICT DO NOTHING;
        GET DIAGNOSTICS written = ROW_COUNT;
        IF written < cardinality(p_messages) THEN
            RAISE EXCEPTION USING ERRCODE = 'LT409', MESSAGE = 'message stored';
        END IF;
    END IF;
    FOR i IN 1 .. coalesce(cardinality(c_round), 0) LOOP
        IF c_expected[i] IS NULL THEN
            INSERT INTO {p}calls
                (chat_id, round, position, call_id, state, attempt, token, claimed_until, body)
            VALUES (p_chat, c_round[i], c_position[i], c_call_id[i], c_state[i], c_attempt[i],
                    c_token[i], c_until[i], c_body[i])
            ON CONFLICT DO NOTHING;
            IF NOT FOUND THEN
                RAISE EXCEPTION USING ERRCODE = 'LT409', MESSAGE = 'call stored',
                    DETAIL = c_call_id[i];
            END IF;
        ELSE
            UPDATE {p}calls
            SET call_id = c_call_id[i], state = c_state[i], attempt = c_attempt[i],
                token = c_token[i], claimed_until = c_until[i], body = c_body[i]
            WHERE chat_id = p_chat AND round = c_round[i] AND position = c_position[i]
              AND token = c_expected[i];
            IF NOT FOUND THEN
                RAISE EXCEPTION USING ERRCODE = 'LT409', MESSAGE = 'call token seen',
                    DETAIL = c_call_id[i];
            END IF;
        END IF;
    END LOOP;
    RETURN new_revision;
END
$commit$;
",
    // Version 11: a claim given up fences a late commit out, as a claim taken over does (a
    // commit whose turn was dropped, still on its way, lands under no claim).
    "
CREATE OR REPLACE FUNCTION {p}commit(
    p_chat TEXT, p_meta TEXT, p_count BIGINT, p_now BIGINT, p_wake BIGINT, p_token BIGINT,
    p_cancel_handled BIGINT, p_from BIGINT, p_messages TEXT[],
    c_round BIGINT[], c_position INTEGER[], c_call_id TEXT[], c_state TEXT[],
    c_attempt INTEGER[], c_token BIGINT[], c_until BIGINT[], c_body TEXT[], c_expected BIGINT[],
    r_kind TEXT, r_error TEXT, r_retry_at BIGINT, r_reason TEXT
) RETURNS BIGINT
LANGUAGE plpgsql AS $commit$
DECLARE
    stored_count BIGINT;
    new_revision BIGINT;
    written BIGINT;
BEGIN
    SELECT message_count INTO stored_count FROM {p}chats
    WHERE id = p_chat AND run_token = p_token AND run_holder IS NOT NULL FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'LT409', MESSAGE = 'run claim held';
    END IF;
    IF stored_count < p_from THEN
        RAISE EXCEPTION USING ERRCODE = 'LT409', MESSAGE = 'no message gap';
    END IF;
    UPDATE {p}chats AS c
    SET meta = p_meta, message_count = p_count, revision = c.revision + 1, updated_at = p_now,
        wake_at = CASE WHEN r_kind = 'retry' THEN r_retry_at
                       WHEN c.cancel_requested > 0
                            AND c.cancel_requested > coalesce(p_cancel_handled, -1)
                            AND (p_wake IS NULL OR p_wake > p_now) THEN p_now
                       ELSE p_wake END,
        cancel_requested = CASE WHEN c.cancel_requested <= p_cancel_handled THEN 0
                                ELSE c.cancel_requested END,
        run_until = CASE WHEN r_kind IS NULL THEN c.run_until ELSE 0 END,
        run_holder = CASE WHEN r_kind IS NULL THEN c.run_holder END,
        failures = CASE
            WHEN r_kind = 'succeeded' THEN 0
            WHEN r_kind IN ('retry', 'park') AND c.failures < 2147483647 THEN c.failures + 1
            ELSE c.failures END,
        last_error = CASE
            WHEN r_kind = 'succeeded' THEN NULL
            WHEN r_kind IN ('retry', 'park') THEN r_error
            ELSE c.last_error END,
        parked = CASE
            WHEN r_kind = 'succeeded' THEN NULL
            WHEN r_kind = 'park' THEN r_reason
            ELSE c.parked END,
        parked_at = CASE
            WHEN r_kind = 'succeeded' THEN NULL
            WHEN r_kind = 'park' THEN p_now
            ELSE c.parked_at END,
        abandoned_claims = CASE
            WHEN r_kind IN ('succeeded', 'retry', 'park') THEN 0
            ELSE c.abandoned_claims END
    WHERE c.id = p_chat
    RETURNING c.revision INTO new_revision;
    IF stored_count > p_from THEN
        DELETE FROM {p}messages WHERE chat_id = p_chat AND seq >= p_from;
    END IF;
    IF cardinality(p_messages) > 0 THEN
        INSERT INTO {p}messages (chat_id, seq, body)
        SELECT p_chat, p_from + m.n - 1, m.body
        FROM unnest(p_messages) WITH ORDINALITY AS m(body, n)
        ON CONFLICT DO NOTHING;
        GET DIAGNOSTICS written = ROW_COUNT;
        IF written < cardinality(p_messages) THEN
            RAISE EXCEPTION USING ERRCODE = 'LT409', MESSAGE = 'message stored';
        END IF;
    END IF;
    FOR i IN 1 .. coalesce(cardinality(c_round), 0) LOOP
        IF c_expected[i] IS NULL THEN
            INSERT INTO {p}calls
                (chat_id, round, position, call_id, state, attempt, token, claimed_until, body)
            VALUES (p_chat, c_round[i], c_position[i], c_call_id[i], c_state[i], c_attempt[i],
                    c_token[i], c_until[i], c_body[i])
            ON CONFLICT DO NOTHING;
            IF NOT FOUND THEN
                RAISE EXCEPTION USING ERRCODE = 'LT409', MESSAGE = 'call stored',
                    DETAIL = c_call_id[i];
            END IF;
        ELSE
            UPDATE {p}calls
            SET call_id = c_call_id[i], state = c_state[i], attempt = c_attempt[i],
                token = c_token[i], claimed_until = c_until[i], body = c_body[i]
            WHERE chat_id = p_chat AND round = c_round[i] AND position = c_position[i]
              AND token = c_expected[i];
            IF NOT FOUND THEN
                RAISE EXCEPTION USING ERRCODE = 'LT409', MESSAGE = 'call token seen',
                    DETAIL = c_call_id[i];
            END IF;
        END IF;
    END LOOP;
    RETURN new_revision;
END
$commit$;
",
];

/// The SQLSTATE of a commit's condition that did not hold ([`MIGRATIONS`]' `check`).
const CONDITION_FAILED: &str = "LT409";
/// The condition of the chat's head: the run claim is still the writer's.
const RUN_CLAIM_HELD: &str = "run claim held";
/// The condition of the chat's head: no message is written past the stored ones.
const NO_MESSAGE_GAP: &str = "no message gap";
/// The condition of a call's update: its token is the one the writer saw.
const CALL_TOKEN_SEEN: &str = "call token seen";
/// The condition of a call's insert: no call is stored at its place.
const CALL_NOT_STORED: &str = "call stored";
/// The condition of the messages' insert: none is stored at their places.
const MESSAGE_NOT_STORED: &str = "message stored";

/// How the store connects and where its tables are: a schema and a name prefix, TLS, the
/// connection pool, and the time limits of every wait on the database.
///
/// Settings the connection string gives (`sslmode=verify-full`, `connect_timeout=5`,
/// `keepalives_idle=60`) are used where no builder sets them; a builder's value wins. `Debug`
/// shows no password and no key material.
///
/// ```no_run
/// # async fn example() -> Result<(), llm_tools_core::store::StoreError> {
/// use std::time::Duration;
/// use llm_tools_core::store::{PostgresOptions, PostgresStore, SslMode};
///
/// let options = PostgresOptions::default()
///     .with_ssl_mode(SslMode::VerifyFull)
///     .with_root_certificate_file("/etc/ssl/db-ca.pem")
///     .with_lock_timeout(Duration::from_secs(2));
/// let store = PostgresStore::connect_with("postgres://app@db.internal/app", options).await?;
/// # let _ = store;
/// # Ok(()) }
/// # fn main() { let _ = example; }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PostgresOptions {
    schema: String,
    prefix: String,
    pool_size: usize,
    pool_wait_timeout: Duration,
    migrate: bool,
    tls: tls::TlsSettings,
    connect_timeout: Option<Duration>,
    statement_timeout: Option<Duration>,
    lock_timeout: Option<Duration>,
    idle_transaction_timeout: Option<Duration>,
    keepalive_idle: Option<Duration>,
    /// How far this machine's clock is taken to be off (tests only).
    clock_skew_ms: i64,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        Self {
            schema: "public".into(),
            prefix: "llm_tools_".into(),
            pool_size: 32,
            pool_wait_timeout: Self::DEFAULT_POOL_WAIT_TIMEOUT,
            migrate: true,
            tls: tls::TlsSettings::default(),
            connect_timeout: None,
            statement_timeout: None,
            lock_timeout: None,
            idle_transaction_timeout: None,
            keepalive_idle: None,
            clock_skew_ms: 0,
        }
    }
}

impl PostgresOptions {
    /// How long opening a connection may take, from the TCP connect through TLS to the
    /// password check: 10 s.
    pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

    /// How long a store operation waits for a free connection when every connection of the
    /// pool is busy: 30 s.
    pub const DEFAULT_POOL_WAIT_TIMEOUT: Duration = Duration::from_secs(30);

    /// How long one statement may run on the server before it cancels it (PostgreSQL's
    /// `statement_timeout`, set on each connection): 30 s. A statement past it fails with
    /// [`StoreError::TimedOut`], which [`StoreError::is_retryable`].
    pub const DEFAULT_STATEMENT_TIMEOUT: Duration = Duration::from_secs(30);

    /// How long a statement waits for a row another connection has locked (PostgreSQL's
    /// `lock_timeout`, set on each connection): 5 s. Past it the operation fails with
    /// [`StoreError::Locked`], which [`StoreError::is_retryable`]; nothing of it is written.
    pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(5);

    /// How long a transaction of this process may wait for its next statement before the
    /// server ends it and lets its locks go (PostgreSQL's `idle_in_transaction_session_timeout`,
    /// set on each connection): 2 min. A process stopped or cut off from the server in the
    /// middle of a file's save would otherwise hold the chat's row lock until the connection
    /// dies, and no other process could take the chat over. It is longer than a statement's
    /// limit because the time counts while a statement's data is sent: a 64 MiB file (the
    /// default largest) takes about a minute over a 10 Mbit/s link. Past it the save fails
    /// with a store error and writes nothing.
    pub const DEFAULT_IDLE_TRANSACTION_TIMEOUT: Duration = Duration::from_secs(120);

    /// How long a connection is idle before TCP keepalive probes start: 30 s. Probes go every
    /// third of that (at least 1 s), and after three unanswered ones (or data unacknowledged
    /// for twice the idle time) the connection is closed and its operation fails: a server
    /// that vanished without closing the connection (a half-open connection) is noticed
    /// within about a minute.
    pub const DEFAULT_KEEPALIVE_IDLE: Duration = Duration::from_secs(30);

    /// The schema the tables live in (`public` by default; created if missing). Letters,
    /// digits and `_` only; used as given (a quoted name, case kept).
    #[must_use]
    pub fn with_schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    /// The tables' name prefix (`llm_tools_` by default). Letters, digits and `_` only;
    /// PostgreSQL folds unquoted names to lower case, and so does the store: `MyApp_` and
    /// `myapp_` name the same tables.
    #[must_use]
    pub fn with_table_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// How many connections the store's pool keeps at most (32 by default). A turn can use two
    /// at once (its writes and its run claim's renewal): give a process at least twice as many
    /// as the turns it runs at once (its workers' concurrency).
    #[must_use]
    pub fn with_pool_size(mut self, size: usize) -> Self {
        self.pool_size = size.max(1);
        self
    }

    /// Leaves the schema alone on connect: run [`PostgresStore::migrate`] yourself (a
    /// deployment step, say). The schema's version is still checked: connecting to tables of
    /// another version fails with [`StoreError::NewerSchema`] or [`StoreError::OlderSchema`].
    #[must_use]
    pub fn without_migrations(mut self) -> Self {
        self.migrate = false;
        self
    }

    /// Whether and how to use TLS ([`SslMode`]; the connection string's `sslmode`, or
    /// `prefer`, when not set).
    #[must_use]
    pub fn with_ssl_mode(mut self, mode: SslMode) -> Self {
        self.tls.mode = Some(mode);
        self
    }

    /// Trusts the CA certificates of a PEM file (libpq's `sslrootcert`) instead of the
    /// system's roots. Read when the store connects. With a CA given, `prefer` and `require`
    /// check the server's certificate too (as `verify-ca`).
    #[must_use]
    pub fn with_root_certificate_file(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.tls.roots = Some(tls::Pem::File(path.into()));
        self
    }

    /// [`with_root_certificate_file`](Self::with_root_certificate_file) with the PEM text
    /// itself.
    #[must_use]
    pub fn with_root_certificates_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.tls.roots = Some(tls::Pem::Bytes(pem.into().into()));
        self
    }

    /// Presents a client certificate: PEM files of the certificate (its chain, leaf first) and
    /// of its private key (libpq's `sslcert` and `sslkey`). Read when the store connects.
    #[must_use]
    pub fn with_client_certificate_files(
        mut self,
        certificate: impl Into<std::path::PathBuf>,
        key: impl Into<std::path::PathBuf>,
    ) -> Self {
        self.tls.client = Some((
            tls::Pem::File(certificate.into()),
            tls::Pem::File(key.into()),
        ));
        self
    }

    /// [`with_client_certificate_files`](Self::with_client_certificate_files) with the PEM
    /// texts themselves. The key never shows in `Debug`.
    #[must_use]
    pub fn with_client_certificate_pem(
        mut self,
        certificate: impl Into<Vec<u8>>,
        key: impl Into<Vec<u8>>,
    ) -> Self {
        self.tls.client = Some((
            tls::Pem::Bytes(certificate.into().into()),
            tls::Pem::Bytes(key.into().into()),
        ));
        self
    }

    /// How long a store operation waits for a free connection of the pool
    /// ([`DEFAULT_POOL_WAIT_TIMEOUT`](Self::DEFAULT_POOL_WAIT_TIMEOUT)); past it the operation
    /// fails with [`StoreError::Backend`] ("no connection").
    #[must_use]
    pub fn with_pool_wait_timeout(mut self, timeout: Duration) -> Self {
        self.pool_wait_timeout = timeout;
        self
    }

    /// How long opening a connection may take, from the TCP connect through TLS to the
    /// password check ([`DEFAULT_CONNECT_TIMEOUT`](Self::DEFAULT_CONNECT_TIMEOUT); the
    /// connection string's `connect_timeout` when not set).
    #[must_use]
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = Some(timeout.max(Duration::from_millis(1)));
        self
    }

    /// The server-side limit of one statement
    /// ([`DEFAULT_STATEMENT_TIMEOUT`](Self::DEFAULT_STATEMENT_TIMEOUT)); `Duration::ZERO`
    /// lifts it. Whole milliseconds.
    #[must_use]
    pub fn with_statement_timeout(mut self, timeout: Duration) -> Self {
        self.statement_timeout = Some(timeout);
        self
    }

    /// Takes this machine's clock to be `skew_ms` milliseconds ahead (negative: behind) of
    /// what it reads, as a machine whose clock is off would: for tests of what the store's
    /// clock protects against. Not for applications.
    #[doc(hidden)]
    #[must_use]
    pub fn with_clock_skew_for_testing(mut self, skew_ms: i64) -> Self {
        self.clock_skew_ms = skew_ms;
        self
    }

    /// How long a statement waits for a row another connection holds
    /// ([`DEFAULT_LOCK_TIMEOUT`](Self::DEFAULT_LOCK_TIMEOUT)); `Duration::ZERO` waits without
    /// limit (up to the statement timeout). Whole milliseconds.
    #[must_use]
    pub fn with_lock_timeout(mut self, timeout: Duration) -> Self {
        self.lock_timeout = Some(timeout);
        self
    }

    /// How long a transaction may wait for its next statement
    /// ([`DEFAULT_IDLE_TRANSACTION_TIMEOUT`](Self::DEFAULT_IDLE_TRANSACTION_TIMEOUT));
    /// `Duration::ZERO` lifts it. Whole milliseconds.
    #[must_use]
    pub fn with_idle_transaction_timeout(mut self, timeout: Duration) -> Self {
        self.idle_transaction_timeout = Some(timeout);
        self
    }

    /// How long a connection is idle before TCP keepalive probes start
    /// ([`DEFAULT_KEEPALIVE_IDLE`](Self::DEFAULT_KEEPALIVE_IDLE); the connection string's
    /// `keepalives_idle` when not set). Whole seconds, at least 1.
    #[must_use]
    pub fn with_tcp_keepalive(mut self, idle: Duration) -> Self {
        self.keepalive_idle = Some(idle.max(Duration::from_secs(1)));
        self
    }

    /// Applies the timeouts to a connection's configuration: what the options set, else what
    /// the connection string set, else the defaults.
    fn configure(&self, config: &mut tokio_postgres::Config, split: &tls::Split) {
        if self.connect_timeout.is_some() || !split.sets("connect_timeout") {
            config.connect_timeout(
                self.connect_timeout
                    .unwrap_or(Self::DEFAULT_CONNECT_TIMEOUT),
            );
        }
        if self.keepalive_idle.is_some() || !split.sets("keepalives_idle") {
            config.keepalives_idle(self.keepalive_idle.unwrap_or(Self::DEFAULT_KEEPALIVE_IDLE));
        }
        let idle = config.get_keepalives_idle();
        if !split.sets("keepalives_interval") {
            config.keepalives_interval((idle / 3).max(Duration::from_secs(1)));
        }
        if !split.sets("keepalives_retries") {
            config.keepalives_retries(3);
        }
        if !split.sets("tcp_user_timeout") {
            config.tcp_user_timeout(idle.saturating_mul(2));
        }
        // Session settings go in the startup packet's options: no round trip. A setting the
        // connection string's own `options` makes comes after the defaults (so it wins) and
        // before what a builder set (which wins over it).
        let millis = |d: Duration| d.as_millis();
        let setting = |name: &str, value: Duration| format!("-c {name}={}", millis(value));
        let mut before = Vec::new();
        let mut after = Vec::new();
        for (name, set, default) in [
            (
                "statement_timeout",
                self.statement_timeout,
                Self::DEFAULT_STATEMENT_TIMEOUT,
            ),
            (
                "lock_timeout",
                self.lock_timeout,
                Self::DEFAULT_LOCK_TIMEOUT,
            ),
            (
                "idle_in_transaction_session_timeout",
                self.idle_transaction_timeout,
                Self::DEFAULT_IDLE_TRANSACTION_TIMEOUT,
            ),
        ] {
            match set {
                Some(value) => after.push(setting(name, value)),
                None => before.push(setting(name, default)),
            }
        }
        if let Some(own) = config.get_options() {
            before.push(own.to_owned());
        }
        before.extend(after);
        config.options(before.join(" "));
    }
}

/// Durable chats in PostgreSQL (core feature `postgres`). Clones share one pool.
#[derive(Clone)]
pub struct PostgresStore {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Pool,
    location: String,
    ssl_mode: SslMode,
    /// `"schema".prefix`, ready to put before a table's name.
    qualified: String,
    /// The prefix alone (for index names).
    prefix: String,
    schema: String,
    sql: Sql,
    /// The database server's clock, which claims and leases are measured in.
    clock: clock::ServerClock,
}

/// Every statement, with the table names filled in once.
struct Sql {
    /// The statements both stores write alike.
    shared: Statements,
    insert_chat: String,
    insert_message: String,
    commit: String,
    claim_due: String,
    chat_ids: String,
    file_lock: String,
    file_fence: String,
    file_totals: String,
    file_size: String,
    file_save: String,
    file_load: String,
    file_list: String,
    secret_load: String,
    secret_save: String,
    secret_clear: String,
}

impl Sql {
    fn new(p: &str) -> Self {
        Self {
            shared: Statements::new(p, DIALECT),
            insert_chat: format!(
                "INSERT INTO {p}chats (id, meta, message_count, created_at, updated_at, wake_at)
                 VALUES ($1, $2, $3, $4, $4, $5)"
            ),
            insert_message: format!(
                "INSERT INTO {p}messages (chat_id, seq, body) VALUES ($1, $2, $3)"
            ),
            commit: format!(
                "SELECT {p}commit($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14,
                                  $15, $16, $17, $18, $19, $20, $21, $22)"
            ),
            // The pick, the claims and the parking of chats abandoned too often, one
            // statement ([`lease::claim_due_assignments`]).
            claim_due: format!(
                "UPDATE {p}chats AS c
                 SET {assignments}
                 FROM (SELECT id FROM {p}chats
                       WHERE wake_at IS NOT NULL AND parked IS NULL
                         AND wake_at <= $3 AND run_until <= $3
                       ORDER BY wake_at LIMIT $4
                       FOR UPDATE SKIP LOCKED) AS due
                 WHERE c.id = due.id
                 RETURNING c.id, c.run_token, c.revision, c.parked, c.abandoned_claims",
                assignments = lease::claim_due_assignments("c.", DIALECT),
            ),
            chat_ids: format!("SELECT id FROM {p}chats ORDER BY id"),
            // Saves of one chat's files, from any connection, one at a time (the totals).
            file_lock: format!("SELECT pg_advisory_xact_lock(hashtext('{p}files/' || $1))"),
            // The chat's row stays as it is (its run claim too) until the save commits.
            file_fence: format!(
                "SELECT CASE WHEN run_holder IS NOT NULL THEN run_token END
                 FROM {p}chats WHERE id = $1 FOR SHARE"
            ),
            file_totals: format!(
                "SELECT coalesce(sum(octet_length(content)), 0)::BIGINT, count(*)
                 FROM {p}files WHERE chat_id = $1"
            ),
            file_size: format!(
                "SELECT octet_length(content)::BIGINT FROM {p}files WHERE chat_id = $1 AND name = $2"
            ),
            file_save: format!(
                "INSERT INTO {p}files (chat_id, name, content) VALUES ($1, $2, $3)
                 ON CONFLICT (chat_id, name) DO UPDATE SET content = excluded.content"
            ),
            file_load: format!(
                "SELECT octet_length(content)::BIGINT,
                        CASE WHEN octet_length(content) <= $3::BIGINT THEN content END
                 FROM {p}files WHERE chat_id = $1 AND name = $2"
            ),
            file_list: format!("SELECT name FROM {p}files WHERE chat_id = $1 ORDER BY name"),
            secret_load: format!(
                "SELECT CASE WHEN octet_length(value) <= {max} THEN value END,
                        octet_length(value)::BIGINT
                 FROM {p}secrets WHERE key = $1",
                max = super::contract::MAX_SECRET_BYTES
            ),
            secret_save: format!(
                "INSERT INTO {p}secrets (key, value) VALUES ($1, $2)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value"
            ),
            secret_clear: format!("DELETE FROM {p}secrets WHERE key = $1"),
        }
    }
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("location", &self.inner.location)
            .field("tables", &self.inner.qualified)
            .field("sslmode", &self.inner.ssl_mode)
            .finish_non_exhaustive()
    }
}

/// PostgreSQL's side of the statements the stores share: `$1` parameters, an `INTEGER`
/// failure count that stops at its largest value.
const DIALECT: Dialect = Dialect {
    parameter: '$',
    failures_plus_one: "CASE WHEN failures < 2147483647 THEN failures + 1 ELSE failures END",
    optional_text_first: "$1::TEXT",
};

fn is_identifier(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 40
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit())
}

/// Where a connection goes, for messages: hosts, port and database, never the password.
fn describe(config: &tokio_postgres::Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            // Never the rest of a password (see `connect_now`).
            tokio_postgres::config::Host::Tcp(name) if name.contains('@') => "<host>".to_owned(),
            tokio_postgres::config::Host::Tcp(name) => name.clone(),
            tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!(
        "postgres://{}@{}:{port}/{}",
        config.get_user().unwrap_or(""),
        hosts.join(","),
        config.get_dbname().unwrap_or("")
    )
}

fn failure(location: &str, error: &tokio_postgres::Error) -> StoreError {
    let location = location.to_owned();
    let code = error.code();
    // The error's own text, and its cause (the server's message or the I/O failure).
    let mut message = error.to_string();
    if let Some(db) = error.as_db_error() {
        message = format!("{}: {}", db.severity(), db.message());
    } else if let Some(source) = std::error::Error::source(error) {
        message = format!("{message}: {source}");
    }
    if let Some(failure) = tls::tls_failure(error) {
        return StoreError::Tls {
            location,
            failure,
            message,
        };
    }
    match code {
        Some(c) if *c == SqlState::LOCK_NOT_AVAILABLE || *c == SqlState::T_R_DEADLOCK_DETECTED => {
            StoreError::Locked { location, message }
        }
        // 57014 is also a cancel by hand (`pg_cancel_backend`): only the timeout is retryable.
        Some(c)
            if *c == SqlState::QUERY_CANCELED
                && error
                    .as_db_error()
                    .is_some_and(|db| db.message().contains("statement timeout")) =>
        {
            StoreError::TimedOut {
                location,
                limit: "statement_timeout",
                message,
            }
        }
        _ => StoreError::Backend { location, message },
    }
}

/// A chat's status from a row of [`lease::STATUS_COLUMNS`].
fn status_of(row: &tokio_postgres::Row) -> Result<ChatStatus, tokio_postgres::Error> {
    Ok(StatusRow {
        chat_id: row.try_get(0)?,
        parked: row.try_get(1)?,
        parked_at: row.try_get(2)?,
        failures: i64::from(row.try_get::<_, i32>(3)?),
        last_error: row.try_get(4)?,
        wake_at: row.try_get(5)?,
        abandoned_claims: row.try_get(6)?,
    }
    .into_status())
}

fn pool_failure(location: &str, error: deadpool_postgres::PoolError) -> StoreError {
    match error {
        deadpool_postgres::PoolError::Backend(e) => failure(location, &e),
        other => StoreError::Backend {
            location: location.to_owned(),
            message: format!("no connection: {other}"),
        },
    }
}

/// The values of a statement's `$1`, `$2`, ….
type Params<'p> = [&'p (dyn tokio_postgres::types::ToSql + Sync)];

/// A pooled connection that prepares each statement once (deadpool's statement cache) and
/// turns every failure into the [`StoreError`] naming the store's location.
struct Conn<'s> {
    client: deadpool_postgres::Client,
    location: &'s str,
}

impl Conn<'_> {
    /// A driver error as the store's error.
    fn fail(&self, error: &tokio_postgres::Error) -> StoreError {
        failure(self.location, error)
    }

    async fn statement(&self, sql: &str) -> Result<tokio_postgres::Statement, StoreError> {
        self.client
            .prepare_cached(sql)
            .await
            .map_err(|e| self.fail(&e))
    }

    /// Every row `sql` returns.
    async fn query(
        &self,
        sql: &str,
        params: &Params<'_>,
    ) -> Result<Vec<tokio_postgres::Row>, StoreError> {
        let statement = self.statement(sql).await?;
        self.client
            .query(&statement, params)
            .await
            .map_err(|e| self.fail(&e))
    }

    /// The row `sql` returns, if any.
    async fn query_opt(
        &self,
        sql: &str,
        params: &Params<'_>,
    ) -> Result<Option<tokio_postgres::Row>, StoreError> {
        let statement = self.statement(sql).await?;
        self.client
            .query_opt(&statement, params)
            .await
            .map_err(|e| self.fail(&e))
    }

    /// The row `sql` (whose one parameter is the chat's id) returns for the chat `chat_id`;
    /// [`StoreError::NotFound`] when it returns none (the chat is not stored).
    async fn chat_row(&self, sql: &str, chat_id: &str) -> Result<tokio_postgres::Row, StoreError> {
        self.query_opt(sql, &[&chat_id])
            .await?
            .ok_or_else(|| StoreError::NotFound {
                chat_id: chat_id.to_owned(),
            })
    }

    /// The number of rows `sql` changed.
    async fn execute(&self, sql: &str, params: &Params<'_>) -> Result<u64, StoreError> {
        let statement = self.statement(sql).await?;
        self.client
            .execute(&statement, params)
            .await
            .map_err(|e| self.fail(&e))
    }
}

/// Runs an insert (`expected: None`) or a conditional update of a call with its columns as
/// `$1`…`$9` and the expected token as `$10`.
async fn execute_call<C: tokio_postgres::GenericClient + Sync>(
    client: &C,
    statement: &tokio_postgres::Statement,
    chat_id: &str,
    r: &CallRecord,
    expected: Option<u64>,
) -> Result<u64, tokio_postgres::Error> {
    let (round, token) = (to_i64(r.round), to_i64(r.token));
    let position = i32::try_from(r.position).unwrap_or(i32::MAX);
    let attempt = i32::try_from(r.attempt).unwrap_or(i32::MAX);
    let until = r.claimed_until.map(to_i64);
    let expected = expected.map(to_i64);
    let mut values: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = vec![
        &chat_id, &round, &position, &r.call_id, &r.state, &attempt, &token, &until, &r.body,
    ];
    if let Some(expected) = &expected {
        values.push(expected);
    }
    client.execute(statement, &values).await
}

/// Gives the run claim `token` up as `release` says, with `statement` prepared from
/// [`Statements::release_of`]; returns the rows changed (none when the claim is no longer the
/// token's).
async fn execute_release<C: tokio_postgres::GenericClient + Sync>(
    client: &C,
    statement: &tokio_postgres::Statement,
    chat_id: &str,
    token: u64,
    release: &Release,
    now_ms: u64,
) -> Result<u64, tokio_postgres::Error> {
    let token = to_i64(token);
    match ReleaseArgs::of(release, now_ms) {
        ReleaseArgs::None => client.execute(statement, &[&chat_id, &token]).await,
        ReleaseArgs::Retry { error, retry_at } => {
            client
                .execute(statement, &[&chat_id, &token, &error, &retry_at])
                .await
        }
        ReleaseArgs::Park {
            error,
            reason,
            parked_at,
        } => {
            client
                .execute(statement, &[&chat_id, &token, &error, &reason, &parked_at])
                .await
        }
        ReleaseArgs::ClaimedElsewhere { until, now } => {
            client
                .execute(statement, &[&chat_id, &token, &until, &now])
                .await
        }
    }
}

fn is_unique_violation(error: &tokio_postgres::Error) -> bool {
    error.code() == Some(&SqlState::UNIQUE_VIOLATION)
}

impl PostgresStore {
    /// Connects with a connection string (`postgres://user:password@host:port/db` or
    /// `host=… user=… password=… dbname=…`) and the default options: tables `llm_tools_*` in
    /// `public`, created or migrated now. Errors name the host and database, never the
    /// password.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        Self::connect_with(url, PostgresOptions::default()).await
    }

    /// [`connect`](Self::connect) with options.
    pub async fn connect_with(url: &str, options: PostgresOptions) -> Result<Self, StoreError> {
        Self::boxed_connect(url, options).await
    }

    /// [`connect_with`](Self::connect_with) as a boxed future made here, so that a caller's
    /// crate compiles none of it (as the chat's entry points).
    #[inline(never)]
    fn boxed_connect(
        url: &str,
        options: PostgresOptions,
    ) -> BoxFuture<'_, Result<Self, StoreError>> {
        Box::pin(Self::connect_now(url, options))
    }

    /// [`connect_with`](Self::connect_with)'s work.
    async fn connect_now(url: &str, options: PostgresOptions) -> Result<Self, StoreError> {
        // tokio-postgres does not know `verify-ca`, `verify-full`, `sslrootcert`, `sslcert`
        // and `sslkey`: they are taken out first.
        let split = tls::split_connection_string(url);
        let mut config: tokio_postgres::Config =
            split.rest.parse().map_err(|e| StoreError::Backend {
                location: "postgres".into(),
                message: format!("the connection string does not parse: {e}"),
            })?;
        // A host holding `@` is what is left of a user name or password that holds one unescaped
        // (`postgres://u:p@ss@db/app` reads as the host `ss@db`): refused before anything shows
        // it, or connects to it.
        let holds_at = config.get_hosts().iter().any(
            |host| matches!(host, tokio_postgres::config::Host::Tcp(name) if name.contains('@')),
        );
        if holds_at {
            return Err(StoreError::Backend {
                location: "postgres".into(),
                message: "a host of the connection string holds `@`: an `@` of the user name or \
                          password is written `%40` (the host is not shown: it may hold the rest \
                          of the password)"
                    .into(),
            });
        }
        let location = describe(&config);
        for (what, name) in [
            ("schema", &options.schema),
            ("table prefix", &options.prefix),
        ] {
            if !is_identifier(name) {
                return Err(StoreError::Backend {
                    location,
                    message: format!(
                        "the {what} {name:?} is not a plain name (letters, digits and `_`)"
                    ),
                });
            }
        }
        let tls = options
            .tls
            .completed(&split, &location, tls::only_this_machine(&config))?;
        tls::check_server_named(&tls, &config, &location)?;
        config.ssl_mode(tls.negotiation());
        options.configure(&mut config, &split);
        let connect_timeout = config
            .get_connect_timeout()
            .copied()
            .unwrap_or(PostgresOptions::DEFAULT_CONNECT_TIMEOUT);
        let manager = Manager::from_config(
            config,
            tls.connector(&location)?,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(options.pool_size)
            .wait_timeout(Some(options.pool_wait_timeout))
            .create_timeout(Some(connect_timeout))
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .build()
            .map_err(|e| StoreError::Backend {
                location: location.clone(),
                message: format!("the connection pool: {e}"),
            })?;
        // PostgreSQL folds the unquoted prefix to lower case; the catalogue is asked for the
        // folded names too.
        let prefix = options.prefix.to_ascii_lowercase();
        let qualified = format!("\"{}\".{prefix}", options.schema);
        let store = Self {
            inner: Arc::new(Inner {
                pool,
                location,
                ssl_mode: tls.mode(),
                sql: Sql::new(&qualified),
                qualified,
                prefix,
                schema: options.schema,
                clock: clock::ServerClock::new(options.clock_skew_ms),
            }),
        };
        // Connect once now, so a wrong address or password is an error here; the server's
        // clock is read on the way.
        let client = store.client().await?;
        store.measure_clock(&client).await?;
        drop(client);
        if options.migrate {
            store.migrate().await?;
        } else {
            store.check_schema().await?;
        }
        Ok(store)
    }

    /// Creates or migrates the tables to this library's schema version. Safe to run from many
    /// processes at once (they take turns, each waiting up to the statement timeout for the
    /// one before); refuses a schema from a newer version. Each of its statements runs under
    /// the statement timeout: raise it ([`PostgresOptions::with_statement_timeout`]) for the
    /// store that migrates a large database.
    pub async fn migrate(&self) -> Result<(), StoreError> {
        self.boxed_migrate().await
    }

    /// [`migrate`](Self::migrate) as a boxed future made here.
    #[inline(never)]
    fn boxed_migrate(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(self.migrate_now())
    }

    /// [`migrate`](Self::migrate)'s work.
    async fn migrate_now(&self) -> Result<(), StoreError> {
        let inner = &self.inner;
        let location = inner.location.as_str();
        let fail = |e: tokio_postgres::Error| failure(location, &e);
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(fail)?;
        // Migrations take turns through a lock held until this transaction ends.
        tx.execute(
            "SELECT pg_advisory_xact_lock(hashtext($1))",
            &[&format!("llm-tools-migrate {}", inner.qualified)],
        )
        .await
        .map_err(fail)?;
        tx.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS \"{}\"", inner.schema))
            .await
            .map_err(fail)?;
        // A lock another process holds is waited for up to the statement timeout.
        tx.batch_execute("SET LOCAL lock_timeout = 0")
            .await
            .map_err(fail)?;
        let version_table = format!("{}schema", inner.qualified);
        let version = match self.stored_version(&tx).await? {
            Some(version) => version,
            None => {
                tx.batch_execute(&format!(
                    "CREATE TABLE {version_table} (version INTEGER NOT NULL)"
                ))
                .await
                .map_err(fail)?;
                0
            }
        };
        if version > SCHEMA_VERSION {
            return Err(StoreError::NewerSchema {
                location: location.to_owned(),
                found: version,
                supported: SCHEMA_VERSION,
            });
        }
        if version < SCHEMA_VERSION {
            for script in MIGRATIONS.iter().skip(version as usize) {
                let script = script
                    .replace("{p}", &inner.qualified)
                    .replace("{n}", &inner.prefix);
                tx.batch_execute(&script).await.map_err(fail)?;
            }
            tx.execute(&format!("DELETE FROM {version_table}"), &[])
                .await
                .map_err(fail)?;
            let v = i32::try_from(SCHEMA_VERSION).unwrap_or(i32::MAX);
            tx.execute(
                &format!("INSERT INTO {version_table} (version) VALUES ($1)"),
                &[&v],
            )
            .await
            .map_err(fail)?;
        }
        tx.commit().await.map_err(fail)
    }

    /// The schema's version as stored, `None` when there are no tables yet;
    /// [`StoreError::Foreign`] for tables of this library's names without a version.
    async fn stored_version(
        &self,
        tx: &tokio_postgres::Transaction<'_>,
    ) -> Result<Option<u32>, StoreError> {
        let inner = &self.inner;
        let location = inner.location.as_str();
        let fail = |e: tokio_postgres::Error| failure(location, &e);
        let exists = |table: String| {
            let schema = inner.schema.clone();
            async move {
                tx.query_opt(
                    "SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = $2",
                    &[&schema, &table],
                )
                .await
                .map(|row| row.is_some())
                .map_err(fail)
            }
        };
        let version_table = format!("{}schema", inner.qualified);
        if exists(format!("{}schema", inner.prefix)).await? {
            let row = tx
                .query_one(&format!("SELECT max(version) FROM {version_table}"), &[])
                .await
                .map_err(fail)?;
            let found: Option<i32> = row.try_get(0).map_err(fail)?;
            let found = found.ok_or_else(|| StoreError::Foreign {
                location: location.to_owned(),
                message: format!("{version_table} holds no version"),
            })?;
            return u32::try_from(found)
                .map(Some)
                .map_err(|_| StoreError::Foreign {
                    location: location.to_owned(),
                    message: format!("{version_table} holds version {found}"),
                });
        }
        for table in ["chats", "messages", "calls"] {
            if exists(format!("{}{table}", inner.prefix)).await? {
                return Err(StoreError::Foreign {
                    location: location.to_owned(),
                    message: format!(
                        "a table `{}{table}` without the `{}schema` version table",
                        inner.prefix, inner.prefix
                    ),
                });
            }
        }
        Ok(None)
    }

    /// Checks, without changing anything, that the tables are at this library's schema
    /// version: [`StoreError::NewerSchema`] or [`StoreError::OlderSchema`] otherwise.
    async fn check_schema(&self) -> Result<(), StoreError> {
        let location = self.inner.location.as_str();
        let fail = |e: tokio_postgres::Error| failure(location, &e);
        let mut client = self.client().await?;
        let tx = client
            .build_transaction()
            .read_only(true)
            .start()
            .await
            .map_err(fail)?;
        let found = self.stored_version(&tx).await?.unwrap_or(0);
        tx.commit().await.map_err(fail)?;
        match found.cmp(&SCHEMA_VERSION) {
            std::cmp::Ordering::Equal => Ok(()),
            std::cmp::Ordering::Greater => Err(StoreError::NewerSchema {
                location: location.to_owned(),
                found,
                supported: SCHEMA_VERSION,
            }),
            std::cmp::Ordering::Less => Err(StoreError::OlderSchema {
                location: location.to_owned(),
                found,
                expected: SCHEMA_VERSION,
            }),
        }
    }

    /// Where the store connects (no password), and its tables.
    pub fn location(&self) -> &str {
        &self.inner.location
    }

    /// The ids of every stored chat, sorted.
    pub async fn chat_ids(&self) -> Result<Vec<String>, StoreError> {
        self.boxed_chat_ids().await
    }

    /// [`chat_ids`](Self::chat_ids) as a boxed future made here.
    #[inline(never)]
    fn boxed_chat_ids(&self) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        Box::pin(self.chat_ids_now())
    }

    /// [`chat_ids`](Self::chat_ids)'s work.
    async fn chat_ids_now(&self) -> Result<Vec<String>, StoreError> {
        let conn = self.conn().await?;
        conn.query(&self.inner.sql.chat_ids, &[])
            .await?
            .iter()
            .map(|r| r.try_get(0).map_err(|e| conn.fail(&e)))
            .collect()
    }

    /// A [`FileStore`] for one chat's files, kept in this database (table `<prefix>files`), so
    /// a durable chat's files travel with it to every machine. It keeps the
    /// [limits](crate::files#limits) of every store
    /// ([`with_max_file_size`](PostgresFileStore::with_max_file_size) and the others), saves
    /// one at a time per chat, and fences a durable chat's saves by its run claim
    /// ([`FileStore::fenced`]).
    pub fn file_store(&self, chat_id: impl Into<String>) -> PostgresFileStore {
        PostgresFileStore {
            store: self.clone(),
            chat_id: chat_id.into().into(),
            limits: Limits::default(),
            fence: None,
        }
    }

    async fn client(&self) -> Result<deadpool_postgres::Client, StoreError> {
        self.inner
            .pool
            .get()
            .await
            .map_err(|e| pool_failure(&self.inner.location, e))
    }

    async fn conn(&self) -> Result<Conn<'_>, StoreError> {
        let client = self.client().await?;
        if self.inner.clock.is_due() {
            self.measure_clock(&client).await?;
        }
        Ok(Conn {
            client,
            location: &self.inner.location,
        })
    }

    /// Reads the server's clock, for [`ServerClock`](clock::ServerClock) to keep its offset.
    async fn measure_clock(&self, client: &deadpool_postgres::Client) -> Result<(), StoreError> {
        let location = self.inner.location.as_str();
        let clock = &self.inner.clock;
        // Prepared first (once per connection), so the timed query is one round trip.
        let statement = client
            .prepare_cached(clock::SERVER_NOW)
            .await
            .map_err(|e| failure(location, &e))?;
        let before = std::time::Instant::now();
        let row = client
            .query_one(&statement, &[])
            .await
            .map_err(|e| failure(location, &e))?;
        let after = std::time::Instant::now();
        let server: i64 = row.try_get(0).map_err(|e| failure(location, &e))?;
        clock.measured(before, server, after);
        Ok(())
    }

    async fn read(&self, chat_id: &str) -> Result<ChatRecord, StoreError> {
        let location = self.inner.location.as_str();
        let fail = |e: tokio_postgres::Error| failure(location, &e);
        let sql = &self.inner.sql;
        let mut client = self.client().await?;
        let tx = client
            .build_transaction()
            .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await
            .map_err(fail)?;
        let head = tx
            .query_opt(
                &tx.prepare_cached(&sql.shared.load_head)
                    .await
                    .map_err(fail)?,
                &[&chat_id],
            )
            .await
            .map_err(fail)?
            .ok_or_else(|| StoreError::NotFound {
                chat_id: chat_id.to_owned(),
            })?;
        let meta: String = head.try_get(0).map_err(fail)?;
        let revision: i64 = head.try_get(1).map_err(fail)?;
        let wake_at: Option<i64> = head.try_get(2).map_err(fail)?;
        let cancel_requested: i64 = head.try_get(3).map_err(fail)?;
        let messages = tx
            .query(
                &tx.prepare_cached(&sql.shared.load_messages)
                    .await
                    .map_err(fail)?,
                &[&chat_id],
            )
            .await
            .map_err(fail)?
            .iter()
            .map(|r| r.try_get::<_, String>(0).map_err(fail))
            .collect::<Result<Vec<_>, _>>()?;
        let mut calls = Vec::new();
        for r in tx
            .query(
                &tx.prepare_cached(&sql.shared.load_calls)
                    .await
                    .map_err(fail)?,
                &[&chat_id],
            )
            .await
            .map_err(fail)?
        {
            calls.push(
                CallRow {
                    round: r.try_get(0).map_err(fail)?,
                    position: i64::from(r.try_get::<_, i32>(1).map_err(fail)?),
                    call_id: r.try_get(2).map_err(fail)?,
                    state: r.try_get(3).map_err(fail)?,
                    attempt: i64::from(r.try_get::<_, i32>(4).map_err(fail)?),
                    token: r.try_get(5).map_err(fail)?,
                    claimed_until: r.try_get(6).map_err(fail)?,
                    body: r.try_get(7).map_err(fail)?,
                }
                .into_record(),
            );
        }
        tx.commit().await.map_err(fail)?;
        Ok(lease::chat_record(
            meta,
            messages,
            calls,
            revision,
            wake_at,
            cancel_requested,
        ))
    }

    /// Writes `commit` (and with `release`, gives the run claim up) in one statement, the
    /// `commit` function of [`MIGRATIONS`]: one round trip and one transaction on the server,
    /// whatever the commit holds. Each condition raises an error when it does not hold, which
    /// rolls the statement's transaction back: nothing is written.
    async fn write(
        &self,
        chat_id: &str,
        commit: &Commit,
        release: Option<&Release>,
    ) -> Result<u64, StoreError> {
        let location = self.inner.location.as_str();
        let fail = |e: tokio_postgres::Error| failure(location, &e);
        let stale = |what: String| StoreError::Stale {
            chat_id: chat_id.to_owned(),
            what,
        };
        let sql = &self.inner.sql;
        let client = self.client().await?;
        // Prepared once per connection; later commits find it cached.
        let statement = client.prepare_cached(&sql.commit).await.map_err(fail)?;

        let from = i64::try_from(commit.messages_from).unwrap_or(i64::MAX);
        let count = from.saturating_add(i64::try_from(commit.messages.len()).unwrap_or(i64::MAX));
        let now_ms = self.inner.clock.now_ms();
        let now = to_i64(now_ms);
        // The function gives a claim up past a call claimed elsewhere as `unchanged`
        // ([`ReleaseColumns`]), with the wake time that release writes.
        let wake = match release {
            Some(Release::CallClaimedElsewhere { until }) => Some(to_i64(
                lease::wake_past_call_claim(commit.wake_at, now_ms, *until),
            )),
            _ => commit.wake_at.map(to_i64),
        };
        let run_token = to_i64(commit.run_token);
        let cancel_handled = commit.cancel_handled.map_or(-1, to_i64);
        let calls = CallColumns::of(commit);
        let release = ReleaseColumns::of(release);
        let written = client
            .query_one(
                &statement,
                &[
                    &chat_id,
                    &commit.meta,
                    &count,
                    &now,
                    &wake,
                    &run_token,
                    &cancel_handled,
                    &from,
                    &commit.messages,
                    &calls.round,
                    &calls.position,
                    &calls.call_id,
                    &calls.state,
                    &calls.attempt,
                    &calls.token,
                    &calls.until,
                    &calls.body,
                    &calls.expected,
                    &release.kind,
                    &release.error,
                    &release.retry_at,
                    &release.reason,
                ],
            )
            .await;
        let e = match written {
            Ok(row) => {
                let revision: i64 = row.try_get(0).map_err(fail)?;
                return Ok(to_u64(revision));
            }
            Err(e) => e,
        };
        let Some(db) = e
            .as_db_error()
            .filter(|db| db.code().code() == CONDITION_FAILED)
        else {
            return Err(fail(e));
        };
        let call_id = db.detail().unwrap_or_default();
        Err(match db.message() {
            RUN_CLAIM_HELD => {
                let exists = client
                    .query_opt(sql.shared.held.as_str(), &[&chat_id])
                    .await
                    .map_err(fail)?
                    .is_some();
                if exists {
                    stale("another holder took the chat's run claim since this one got it".into())
                } else {
                    StoreError::NotFound {
                        chat_id: chat_id.to_owned(),
                    }
                }
            }
            NO_MESSAGE_GAP => StoreError::Backend {
                location: location.to_owned(),
                message: format!(
                    "chat `{chat_id}`: messages from {from} on were written, but fewer are stored"
                ),
            },
            MESSAGE_NOT_STORED => stale(format!("a message from {from} on is stored already")),
            CALL_NOT_STORED => stale(format!("call `{call_id}` is stored already")),
            CALL_TOKEN_SEEN => {
                let expected = commit
                    .calls
                    .iter()
                    .find(|write| write.record.call_id == call_id)
                    .and_then(|write| write.expected_token)
                    .unwrap_or_default();
                stale(format!(
                    "call `{call_id}` was claimed again since this holder saw it (token {expected})"
                ))
            }
            _ => fail(e),
        })
    }
}

/// A commit's calls, column by column: the arrays the `commit` function takes.
struct CallColumns<'a> {
    round: Vec<i64>,
    position: Vec<i32>,
    call_id: Vec<&'a str>,
    state: Vec<&'a str>,
    attempt: Vec<i32>,
    token: Vec<i64>,
    until: Vec<Option<i64>>,
    body: Vec<&'a str>,
    /// `None` inserts the call; a token updates it only while its token is still that one.
    expected: Vec<Option<i64>>,
}

impl<'a> CallColumns<'a> {
    fn of(commit: &'a Commit) -> Self {
        let n = commit.calls.len();
        let mut columns = Self {
            round: Vec::with_capacity(n),
            position: Vec::with_capacity(n),
            call_id: Vec::with_capacity(n),
            state: Vec::with_capacity(n),
            attempt: Vec::with_capacity(n),
            token: Vec::with_capacity(n),
            until: Vec::with_capacity(n),
            body: Vec::with_capacity(n),
            expected: Vec::with_capacity(n),
        };
        for write in &commit.calls {
            let r = &write.record;
            columns.round.push(to_i64(r.round));
            columns
                .position
                .push(i32::try_from(r.position).unwrap_or(i32::MAX));
            columns.call_id.push(&r.call_id);
            columns.state.push(&r.state);
            columns
                .attempt
                .push(i32::try_from(r.attempt).unwrap_or(i32::MAX));
            columns.token.push(to_i64(r.token));
            columns.until.push(r.claimed_until.map(to_i64));
            columns.body.push(&r.body);
            columns.expected.push(write.expected_token.map(to_i64));
        }
        columns
    }
}

/// How a commit gives the run claim up, as the `commit` function's `r_` parameters: no kind
/// keeps the claim.
struct ReleaseColumns<'a> {
    kind: Option<&'static str>,
    error: Option<&'a str>,
    retry_at: Option<i64>,
    reason: Option<&'static str>,
}

impl<'a> ReleaseColumns<'a> {
    fn of(release: Option<&'a Release>) -> Self {
        let (kind, error, retry_at, reason) = match release {
            None => (None, None, None, None),
            // The wake time past the call's claim goes as the commit's own (see `write`).
            Some(Release::Unchanged | Release::CallClaimedElsewhere { .. }) => {
                (Some("unchanged"), None, None, None)
            }
            Some(Release::Succeeded) => (Some("succeeded"), None, None, None),
            Some(Release::Retry { error, retry_at }) => (
                Some("retry"),
                Some(error.as_str()),
                Some(to_i64(*retry_at)),
                None,
            ),
            Some(Release::Park { error, reason }) => (
                Some("park"),
                Some(error.as_str()),
                None,
                Some(reason.as_str()),
            ),
        };
        Self {
            kind,
            error,
            retry_at,
            reason,
        }
    }
}

impl Store for PostgresStore {
    /// The database server's clock: read when the store connects, again each minute and after
    /// a suspend or a stepped wall clock, and carried on the monotonic clock in between.
    fn now_ms(&self) -> u64 {
        self.inner.clock.now_ms()
    }

    fn create_chat<'a>(
        &'a self,
        chat_id: &'a str,
        record: &'a ChatRecord,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let location = self.inner.location.as_str();
            let fail = |e: tokio_postgres::Error| failure(location, &e);
            let sql = &self.inner.sql;
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(fail)?;
            let count = i64::try_from(record.messages.len()).unwrap_or(i64::MAX);
            let now = to_i64(self.inner.clock.now_ms());
            let wake = record.wake_at.map(to_i64);
            tx.execute(
                &tx.prepare_cached(&sql.insert_chat).await.map_err(fail)?,
                &[&chat_id, &record.meta, &count, &now, &wake],
            )
            .await
            .map_err(|e| {
                if is_unique_violation(&e) {
                    StoreError::AlreadyExists {
                        chat_id: chat_id.to_owned(),
                    }
                } else {
                    fail(e)
                }
            })?;
            for (seq, body) in record.messages.iter().enumerate() {
                let seq = i64::try_from(seq).unwrap_or(i64::MAX);
                tx.execute(
                    &tx.prepare_cached(&sql.insert_message)
                        .await
                        .map_err(|e| failure(&self.inner.location, &e))?,
                    &[&chat_id, &seq, body],
                )
                .await
                .map_err(fail)?;
            }
            let insert = tx
                .prepare_cached(&sql.shared.insert_call)
                .await
                .map_err(fail)?;
            for r in &record.calls {
                execute_call(&*tx, &insert, chat_id, r, None)
                    .await
                    .map_err(fail)?;
            }
            tx.commit().await.map_err(fail)
        })
    }

    fn load_chat<'a>(&'a self, chat_id: &'a str) -> BoxFuture<'a, Result<ChatRecord, StoreError>> {
        Box::pin(self.read(chat_id))
    }

    fn claim_run<'a>(
        &'a self,
        chat_id: &'a str,
        holder: &'a str,
        now_ms: u64,
        lease: Duration,
    ) -> BoxFuture<'a, Result<RunClaim, StoreError>> {
        Box::pin(async move {
            let sql = &self.inner.sql.shared;
            let conn = self.conn().await?;
            // Never earlier than the server's clock as read now (the connection may just have
            // read it again, after a suspend), whatever the caller read before.
            let now_ms = now_ms.max(self.inner.clock.now_ms());
            let fail = |e| conn.fail(&e);
            let until = lease_end(now_ms, lease);
            let now = to_i64(now_ms);
            if let Some(row) = conn
                .query_opt(&sql.claim_run, &[&chat_id, &holder, &until, &now])
                .await?
            {
                return Ok(lease::granted(
                    row.try_get(0).map_err(fail)?,
                    row.try_get(1).map_err(fail)?,
                ));
            }
            let row = conn.chat_row(&sql.held, chat_id).await?;
            Ok(lease::busy(
                row.try_get(0).map_err(fail)?,
                row.try_get(1).map_err(fail)?,
            ))
        })
    }

    fn renew_run<'a>(
        &'a self,
        chat_id: &'a str,
        token: u64,
        now_ms: u64,
        lease: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            self.renew_run_reading_cancel(chat_id, token, now_ms, lease)
                .await
                .map(|_| ())
        })
    }

    fn renew_run_reading_cancel<'a>(
        &'a self,
        chat_id: &'a str,
        token: u64,
        now_ms: u64,
        lease: Duration,
    ) -> BoxFuture<'a, Result<Option<u64>, StoreError>> {
        Box::pin(async move {
            let conn = self.conn().await?;
            // Never earlier than the server's clock as read now (the connection may just have
            // read it again, after a suspend), whatever the caller read before.
            let now_ms = now_ms.max(self.inner.clock.now_ms());
            let renewed = conn
                .query_opt(
                    &self.inner.sql.shared.renew_run,
                    &[&chat_id, &to_i64(token), &lease_end(now_ms, lease)],
                )
                .await?;
            let at: Option<i64> = renewed
                .map(|row| row.try_get(0))
                .transpose()
                .map_err(|e| conn.fail(&e))?;
            lease::renewed(chat_id, at)
        })
    }

    fn release_run<'a>(
        &'a self,
        chat_id: &'a str,
        token: u64,
        release: &'a Release,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let conn = self.conn().await?;
            let statement = conn
                .statement(self.inner.sql.shared.release_of(release))
                .await?;
            let now = self.inner.clock.now_ms();
            execute_release(&**conn.client, &statement, chat_id, token, release, now)
                .await
                .map(|_| ())
                .map_err(|e| conn.fail(&e))
        })
    }

    fn claim_due<'a>(
        &'a self,
        holder: &'a str,
        now_ms: u64,
        lease: Duration,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<DueChat>, StoreError>> {
        self.claim_due_parking_abandoned(holder, now_ms, lease, limit, DEFAULT_MAX_ABANDONED_CLAIMS)
    }

    fn claim_due_parking_abandoned<'a>(
        &'a self,
        holder: &'a str,
        now_ms: u64,
        lease: Duration,
        limit: usize,
        max_abandoned_claims: u32,
    ) -> BoxFuture<'a, Result<Vec<DueChat>, StoreError>> {
        Box::pin(async move {
            let conn = self.conn().await?;
            // Never earlier than the server's clock as read now (the connection may just have
            // read it again, after a suspend), whatever the caller read before.
            let now_ms = now_ms.max(self.inner.clock.now_ms());
            let fail = |e| conn.fail(&e);
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let bound = i64::from(max_abandoned_claims.max(1));
            let rows = conn
                .query(
                    &self.inner.sql.claim_due,
                    &[
                        &holder,
                        &lease_end(now_ms, lease),
                        &to_i64(now_ms),
                        &limit,
                        &bound,
                    ],
                )
                .await?;
            let mut due = Vec::with_capacity(rows.len());
            for r in &rows {
                let picked = lease::picked(
                    r.try_get(0).map_err(fail)?,
                    r.try_get(1).map_err(fail)?,
                    r.try_get(2).map_err(fail)?,
                    r.try_get(3).map_err(fail)?,
                    r.try_get(4).map_err(fail)?,
                );
                due.extend(picked);
            }
            Ok(due)
        })
    }

    fn commit<'a>(
        &'a self,
        chat_id: &'a str,
        commit: &'a Commit,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        Box::pin(self.write(chat_id, commit, None))
    }

    fn commit_and_release<'a>(
        &'a self,
        chat_id: &'a str,
        commit: &'a Commit,
        release: &'a Release,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        Box::pin(self.write(chat_id, commit, Some(release)))
    }

    fn chat_status<'a>(
        &'a self,
        chat_id: &'a str,
    ) -> BoxFuture<'a, Result<ChatStatus, StoreError>> {
        Box::pin(async move {
            let conn = self.conn().await?;
            let row = conn
                .chat_row(&self.inner.sql.shared.chat_status, chat_id)
                .await?;
            status_of(&row).map_err(|e| conn.fail(&e))
        })
    }

    fn parked_chats<'a>(
        &'a self,
        after: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<ChatStatus>, StoreError>> {
        Box::pin(async move {
            let conn = self.conn().await?;
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            conn.query(&self.inner.sql.shared.parked_chats, &[&after, &limit])
                .await?
                .iter()
                .map(|row| status_of(row).map_err(|e| conn.fail(&e)))
                .collect()
        })
    }

    fn release_parked<'a>(&'a self, chat_id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let sql = &self.inner.sql.shared;
            let conn = self.conn().await?;
            let now = to_i64(self.inner.clock.now_ms());
            if conn.execute(&sql.release_parked, &[&chat_id, &now]).await? > 0 {
                return Ok(true);
            }
            conn.chat_row(&sql.held, chat_id).await?;
            Ok(false)
        })
    }

    fn request_cancel<'a>(
        &'a self,
        chat_id: &'a str,
        now_ms: u64,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let conn = self.conn().await?;
            // Never earlier than the server's clock as read now (the connection may just have
            // read it again, after a suspend), whatever the caller read before.
            let now_ms = now_ms.max(self.inner.clock.now_ms());
            let now = lease::cancel_stamp(now_ms);
            if conn
                .execute(&self.inner.sql.shared.request_cancel, &[&chat_id, &now])
                .await?
                == 0
            {
                return Err(StoreError::NotFound {
                    chat_id: chat_id.to_owned(),
                });
            }
            Ok(())
        })
    }

    fn cancel_requested<'a>(
        &'a self,
        chat_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<u64>, StoreError>> {
        Box::pin(async move {
            let conn = self.conn().await?;
            let row = conn
                .chat_row(&self.inner.sql.shared.cancel_requested, chat_id)
                .await?;
            Ok(lease::cancel_requested(
                row.try_get(0).map_err(|e| conn.fail(&e))?,
            ))
        })
    }

    fn load_secret<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<Vec<u8>>, StoreError>> {
        Box::pin(async move {
            super::contract::check_secret(key, None)?;
            let conn = self.conn().await?;
            // A stored value past the limit (written around this store) is refused unread.
            let Some(row) = conn.query_opt(&self.inner.sql.secret_load, &[&key]).await? else {
                return Ok(None);
            };
            let value: Option<Vec<u8>> = row.try_get(0).map_err(|e| conn.fail(&e))?;
            match value {
                Some(value) => Ok(Some(value)),
                None => {
                    let bytes: i64 = row.try_get(1).map_err(|e| conn.fail(&e))?;
                    Err(super::contract::stored_secret_too_large(
                        u64::try_from(bytes).unwrap_or(0),
                    ))
                }
            }
        })
    }

    fn save_secret<'a>(
        &'a self,
        key: &'a str,
        value: &'a [u8],
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            super::contract::check_secret(key, Some(value))?;
            let conn = self.conn().await?;
            conn.execute(&self.inner.sql.secret_save, &[&key, &value])
                .await?;
            Ok(())
        })
    }

    fn clear_secret<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            super::contract::check_secret(key, None)?;
            let conn = self.conn().await?;
            conn.execute(&self.inner.sql.secret_clear, &[&key]).await?;
            Ok(())
        })
    }
}

/// One chat's files in a [`PostgresStore`]'s database, from [`PostgresStore::file_store`].
///
/// ```no_run
/// use llm_tools_core::files::FileStore;
/// use llm_tools_core::store::PostgresStore;
///
/// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
/// let store = PostgresStore::connect("postgres://app@db.internal/chats").await?;
/// let files = store.file_store("chat-1").with_max_files(100);
/// files.save("notes.md", b"# Notes".to_vec()).await?;
/// assert_eq!(files.load("notes.md").await?, b"# Notes");
/// # Ok(())
/// # }
/// # fn main() { let _ = example; }
/// ```
#[derive(Clone, Debug)]
pub struct PostgresFileStore {
    store: PostgresStore,
    chat_id: Arc<str>,
    limits: Limits,
    /// The durable chat and run claim every save is fenced by ([`FileStore::fenced`]).
    fence: Option<(Arc<str>, u64)>,
}

impl PostgresFileStore {
    crate::files::limit_setters! {
        /// Refuses to save or load a file larger than `bytes`
        /// ([`DEFAULT_MAX_FILE_SIZE`](crate::files::DEFAULT_MAX_FILE_SIZE) unless set).
        max_file_size;
        /// Refuses a save that would bring the chat's files past `bytes` together
        /// ([`DEFAULT_MAX_TOTAL_BYTES`](crate::files::DEFAULT_MAX_TOTAL_BYTES) unless set).
        max_total_bytes;
        /// Refuses a save that would bring the chat past `files` files
        /// ([`DEFAULT_MAX_FILES`](crate::files::DEFAULT_MAX_FILES) unless set).
        max_files;
    }

    /// Saves within the limits and the fence, in one transaction; the outer error is the
    /// database's (or the fence's), the inner one a refusal by a limit.
    async fn save_file(&self, name: &str, bytes: &[u8]) -> Result<io::Result<()>, StoreError> {
        let location = self.store.inner.location.as_str();
        let fail = |e: tokio_postgres::Error| failure(location, &e);
        let sql = &self.store.inner.sql;
        let chat_id: &str = &self.chat_id;
        let mut client = self.store.client().await?;
        let tx = client.transaction().await.map_err(fail)?;
        tx.query_one(
            &tx.prepare_cached(&sql.file_lock).await.map_err(fail)?,
            &[&chat_id],
        )
        .await
        .map_err(fail)?;
        if let Some((fence_chat, token)) = &self.fence {
            let fence_chat: &str = fence_chat;
            let held = tx
                .query_opt(
                    &tx.prepare_cached(&sql.file_fence).await.map_err(fail)?,
                    &[&fence_chat],
                )
                .await
                .map_err(fail)?;
            let Some(row) = held else {
                return Err(lease::unfenceable(fence_chat, name));
            };
            // `NULL` when the claim was given up: fenced out as a claim taken over is.
            let held: Option<i64> = row.try_get(0).map_err(fail)?;
            if held.map(to_u64) != Some(*token) {
                return Err(StoreError::Stale {
                    chat_id: fence_chat.to_owned(),
                    what: format!(
                        "the chat's run claim was taken over or given up since this one got it; the file {name:?} was not saved"
                    ),
                });
            }
        }
        let totals = tx
            .query_one(
                &tx.prepare_cached(&sql.file_totals).await.map_err(fail)?,
                &[&chat_id],
            )
            .await
            .map_err(fail)?;
        let totals = Totals {
            bytes: to_u64(totals.try_get(0).map_err(fail)?),
            files: to_u64(totals.try_get(1).map_err(fail)?),
        };
        let replaced = tx
            .query_opt(
                &tx.prepare_cached(&sql.file_size).await.map_err(fail)?,
                &[&chat_id, &name],
            )
            .await
            .map_err(fail)?
            .map(|row| row.try_get::<_, i64>(0).map(to_u64))
            .transpose()
            .map_err(fail)?;
        let size = len_u64(bytes.len());
        let new_files = u64::from(replaced.is_none());
        if let Err(refused) = self
            .limits
            .check_totals(name, totals, replaced, size, new_files)
        {
            // Dropping the transaction rolls it back.
            return Ok(Err(refused));
        }
        tx.execute(
            &tx.prepare_cached(&sql.file_save).await.map_err(fail)?,
            &[&chat_id, &name, &bytes],
        )
        .await
        .map_err(fail)?;
        tx.commit().await.map_err(fail)?;
        Ok(Ok(()))
    }
}

impl FileStore for PostgresFileStore {
    fn save<'a>(&'a self, name: &'a str, bytes: Vec<u8>) -> BoxFuture<'a, io::Result<String>> {
        Box::pin(async move {
            let name = crate::files::checked_name(name)?.to_owned();
            self.limits.check_size(&name, len_u64(bytes.len()))?;
            self.save_file(&name, &bytes)
                .await
                .map_err(io::Error::other)??;
            Ok(name)
        })
    }

    fn load<'a>(&'a self, name: &'a str) -> BoxFuture<'a, io::Result<Vec<u8>>> {
        Box::pin(async move {
            let name = crate::files::checked_name(name)?;
            let conn = self.store.conn().await.map_err(io::Error::other)?;
            let fail = |e| io::Error::other(conn.fail(&e));
            let chat_id: &str = &self.chat_id;
            let max = to_i64(self.limits.max_file_size);
            let found = conn
                .query_opt(&self.store.inner.sql.file_load, &[&chat_id, &name, &max])
                .await
                .map_err(io::Error::other)?;
            let Some(row) = found else {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("no file named {name:?}"),
                ));
            };
            let size: i64 = row.try_get(0).map_err(fail)?;
            match row.try_get::<_, Option<Vec<u8>>>(1).map_err(fail)? {
                Some(content) => Ok(content),
                None => {
                    self.limits.check_size(name, to_u64(size))?;
                    Err(io::Error::other(format!(
                        "{name:?} could not be read whole"
                    )))
                }
            }
        })
    }

    fn list(&self) -> BoxFuture<'_, io::Result<Vec<String>>> {
        Box::pin(async move {
            let conn = self.store.conn().await.map_err(io::Error::other)?;
            let chat_id: &str = &self.chat_id;
            conn.query(&self.store.inner.sql.file_list, &[&chat_id])
                .await
                .map_err(io::Error::other)?
                .iter()
                .map(|row| row.try_get(0).map_err(|e| io::Error::other(conn.fail(&e))))
                .collect()
        })
    }

    fn max_file_size(&self) -> u64 {
        self.limits.max_file_size
    }

    fn fenced(&self, chat_id: &str, run_token: u64) -> Option<Arc<dyn FileStore>> {
        let mut fenced = self.clone();
        fenced.fence = Some((chat_id.into(), run_token));
        Some(Arc::new(fenced))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configured(url: &str, options: &PostgresOptions) -> tokio_postgres::Config {
        let split = tls::split_connection_string(url);
        let mut config: tokio_postgres::Config = split.rest.parse().expect("parses");
        options.configure(&mut config, &split);
        config
    }

    #[test]
    fn every_connection_gets_the_default_limits() {
        let config = configured("postgres://u@h/db", &PostgresOptions::default());
        assert_eq!(
            config.get_connect_timeout(),
            Some(&PostgresOptions::DEFAULT_CONNECT_TIMEOUT)
        );
        assert!(config.get_keepalives());
        assert_eq!(config.get_keepalives_idle(), Duration::from_secs(30));
        assert_eq!(
            config.get_keepalives_interval(),
            Some(Duration::from_secs(10))
        );
        assert_eq!(config.get_keepalives_retries(), Some(3));
        assert_eq!(
            config.get_tcp_user_timeout(),
            Some(&Duration::from_secs(60))
        );
        assert_eq!(
            config.get_options(),
            Some(
                "-c statement_timeout=30000 -c lock_timeout=5000 \
                 -c idle_in_transaction_session_timeout=120000"
            )
        );
    }

    #[test]
    fn the_connection_string_fills_in_what_no_builder_sets() {
        let url =
            "postgres://u@h/db?connect_timeout=3&keepalives_idle=90&options=-c%20lock_timeout%3D1";
        let config = configured(url, &PostgresOptions::default());
        assert_eq!(config.get_connect_timeout(), Some(&Duration::from_secs(3)));
        assert_eq!(config.get_keepalives_idle(), Duration::from_secs(90));
        // The string's own setting comes after the default, so the server takes it.
        assert_eq!(
            config.get_options(),
            Some(
                "-c statement_timeout=30000 -c lock_timeout=5000 \
                 -c idle_in_transaction_session_timeout=120000 -c lock_timeout=1"
            )
        );
        let options = PostgresOptions::default()
            .with_connect_timeout(Duration::from_secs(7))
            .with_tcp_keepalive(Duration::from_secs(12))
            .with_lock_timeout(Duration::from_millis(250));
        let config = configured(url, &options);
        assert_eq!(config.get_connect_timeout(), Some(&Duration::from_secs(7)));
        assert_eq!(config.get_keepalives_idle(), Duration::from_secs(12));
        assert_eq!(
            config.get_options(),
            Some(
                "-c statement_timeout=30000 -c idle_in_transaction_session_timeout=120000 \
                 -c lock_timeout=1 -c lock_timeout=250"
            )
        );
    }

    #[test]
    fn the_idle_transaction_limit_is_its_own_setting() {
        let options = PostgresOptions::default()
            .with_statement_timeout(Duration::from_secs(5))
            .with_idle_transaction_timeout(Duration::from_millis(900));
        let config = configured("postgres://u@h/db", &options);
        assert_eq!(
            config.get_options(),
            Some(
                "-c lock_timeout=5000 -c statement_timeout=5000 \
                 -c idle_in_transaction_session_timeout=900"
            )
        );
    }

    #[test]
    fn options_debug_shows_no_key_material() {
        let key = "-----BEGIN PRIVATE KEY-----\nQ0FOQVJZLWtleS05YjQx\n-----END PRIVATE KEY-----\n";
        let options = PostgresOptions::default().with_client_certificate_pem("cert", key);
        let text = format!("{options:?}");
        assert!(!text.contains("Q0FOQVJZ"), "{text}");
    }
}
