//! [`SqliteStore`]: durable chats in one SQLite file, shared by every process on the machine.
//!
//! The file is in WAL mode (readers never wait for the writer; checkpoints every 4,000 pages,
//! so rewriting the same rows often stays cheap) with `synchronous = NORMAL` (a commit can be
//! taken back by power loss, never by a killed process; `FULL` on request, see
//! [`SqliteOptions`]), each write is one `BEGIN
//! IMMEDIATE` transaction, a connection waits up to five seconds for another one's lock, and
//! the schema is created and migrated on open (its version is in `llm_tools_schema`). SQLite
//! itself is compiled into the crate (`rusqlite` with `bundled`), so no system library is
//! needed; its calls run on Tokio's blocking pool.

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OptionalExtension as _, TransactionBehavior, params};

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

/// The schema, one script per version: `MIGRATIONS[n]` takes a database from version `n` to
/// `n + 1`.
const MIGRATIONS: &[&str] = &[
    "
CREATE TABLE llm_tools_chats (
    id TEXT PRIMARY KEY NOT NULL,
    meta TEXT NOT NULL,
    revision INTEGER NOT NULL DEFAULT 0,
    message_count INTEGER NOT NULL DEFAULT 0,
    run_holder TEXT,
    run_token INTEGER NOT NULL DEFAULT 0,
    run_until INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE TABLE llm_tools_messages (
    chat_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (chat_id, seq)
) WITHOUT ROWID;
CREATE TABLE llm_tools_calls (
    chat_id TEXT NOT NULL,
    round INTEGER NOT NULL,
    position INTEGER NOT NULL,
    call_id TEXT NOT NULL,
    state TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    token INTEGER NOT NULL,
    claimed_until INTEGER,
    body TEXT NOT NULL,
    PRIMARY KEY (chat_id, round, position)
) WITHOUT ROWID;
CREATE INDEX llm_tools_calls_by_state ON llm_tools_calls (state, claimed_until);
CREATE TABLE llm_tools_files (
    chat_id TEXT NOT NULL,
    name TEXT NOT NULL,
    content BLOB NOT NULL,
    PRIMARY KEY (chat_id, name)
) WITHOUT ROWID;
",
    "
ALTER TABLE llm_tools_chats ADD COLUMN wake_at INTEGER;
CREATE INDEX llm_tools_chats_due ON llm_tools_chats (wake_at) WHERE wake_at IS NOT NULL;
",
    "
ALTER TABLE llm_tools_chats ADD COLUMN failures INTEGER NOT NULL DEFAULT 0;
ALTER TABLE llm_tools_chats ADD COLUMN last_error TEXT;
ALTER TABLE llm_tools_chats ADD COLUMN parked TEXT;
ALTER TABLE llm_tools_chats ADD COLUMN parked_at INTEGER;
DROP INDEX llm_tools_chats_due;
CREATE INDEX llm_tools_chats_due ON llm_tools_chats (wake_at)
    WHERE wake_at IS NOT NULL AND parked IS NULL;
CREATE INDEX llm_tools_chats_parked ON llm_tools_chats (id) WHERE parked IS NOT NULL;
",
    "
ALTER TABLE llm_tools_chats ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0;
",
    // Version 5 changed the PostgreSQL store only (the check its commits raise errors with).
    "",
    // Version 6 changed the PostgreSQL store only (its commit as one function).
    "",
    "
CREATE TABLE llm_tools_secrets (
    key TEXT PRIMARY KEY,
    value BLOB NOT NULL
);
",
    // A chat holds one round at a time, its calls keyed by the place of the message that made
    // them; compacting the history moves that place back, so a new round's key can be an older
    // round's. The first call a round writes removes the chat's calls of every other round
    // (all retired), in the commit's own transaction, after its checks.
    "
CREATE TRIGGER llm_tools_calls_retire_rounds BEFORE INSERT ON llm_tools_calls
BEGIN
    DELETE FROM llm_tools_calls WHERE chat_id = NEW.chat_id AND round <> NEW.round;
END;
",
    // Version 9 changed PostgreSQL's commit function (a cancel request still pending after a
    // commit keeps the chat due); SQLite's commit is a statement of the library's, changed
    // with it.
    "SELECT 1;",
    // Version 10: how many times in a row the chat's run claim was taken over after its holder
    // abandoned it (the worker died mid-turn); a worker's pick parks the chat at the bound.
    "
ALTER TABLE llm_tools_chats ADD COLUMN abandoned_claims INTEGER NOT NULL DEFAULT 0;
",
    // Version 11 changed PostgreSQL's commit function (a claim given up fences a late commit
    // out); SQLite's commit is a statement of the library's, changed with it.
    "SELECT 1;",
];

/// Durable chats in a SQLite file (core feature `sqlite`). Clones share one connection; open
/// the same file from as many processes as you like.
///
/// ```
/// use llm_tools_core::store::SqliteStore;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let path = std::env::temp_dir().join(format!("llm-tools-open-{}.db", std::process::id()));
/// let store = SqliteStore::open(&path).await?;
/// assert!(store.chat_ids().await?.is_empty());
/// # drop(store);
/// # for suffix in ["", "-wal", "-shm"] { let _ = std::fs::remove_file(format!("{}{suffix}", path.display())); }
/// # Ok::<_, llm_tools_core::store::StoreError>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

/// How a [`SqliteStore`] opens its file.
///
/// # Power loss and "results exactly once"
///
/// A kill of the process never loses a commit: once [`Store::commit`] returns, a tool's result
/// is stored and the call is not run again. Power loss or an operating-system crash is where the
/// two `synchronous` settings differ (the file stays consistent with both):
///
/// - `NORMAL` (the default): a commit is written to the WAL but not flushed to the disk until
///   the next checkpoint; power loss can take back the last commits. A call whose result was
///   among them is pending again after the restart and **runs a second time** (at least once).
///   About an fsync per checkpoint instead of one per commit.
/// - `FULL` ([`with_full_sync`](Self::with_full_sync)): each commit is flushed to the disk
///   before it returns; a stored result survives power loss, and a call is run again only when
///   its result was not yet committed — which an idempotent or approval-gated tool handles.
///   One fsync per commit: slower writes, more so on disks without a write cache.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqliteOptions {
    busy_timeout: Duration,
    full_sync: bool,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            busy_timeout: Self::DEFAULT_BUSY_TIMEOUT,
            full_sync: false,
        }
    }
}

impl SqliteOptions {
    /// How long a write waits for another connection's lock before it fails with
    /// [`StoreError::Locked`]: 5 s.
    pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

    /// How long a write waits for another connection's lock
    /// ([`DEFAULT_BUSY_TIMEOUT`](Self::DEFAULT_BUSY_TIMEOUT)).
    #[must_use]
    pub fn with_busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// `PRAGMA synchronous = FULL`: every commit is on the disk before it returns, so a stored
    /// result survives power loss (see the type's docs). `NORMAL` by default.
    #[must_use]
    pub fn with_full_sync(mut self) -> Self {
        self.full_sync = true;
        self
    }
}

struct Inner {
    connection: Mutex<Connection>,
    location: String,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("location", &self.inner.location)
            .finish_non_exhaustive()
    }
}

/// How a rusqlite error reads as a store error.
fn failure(location: &str, error: &rusqlite::Error) -> StoreError {
    let location = location.to_owned();
    let message = error.to_string();
    match error.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
            StoreError::Locked { location, message }
        }
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => {
            StoreError::Corrupt { location, message }
        }
        _ => StoreError::Backend { location, message },
    }
}

fn is_constraint(error: &rusqlite::Error) -> bool {
    error.sqlite_error_code() == Some(ErrorCode::ConstraintViolation)
}

/// SQLite's side of the statements the stores share: `?1` parameters, 64-bit counts.
const DIALECT: Dialect = Dialect {
    parameter: '?',
    failures_plus_one: "failures + 1",
    optional_text_first: "?1",
};

/// The shared statements ([`Statements`]) for the `llm_tools_` tables, written once.
static SQL: LazyLock<Statements> = LazyLock::new(|| Statements::new("llm_tools_", DIALECT));

/// A worker's pick of due chats: one writer's `UPDATE … RETURNING`, so two pickers never take
/// the same chat (SQLite's counterpart of `FOR UPDATE SKIP LOCKED`), and a chat abandoned too
/// often is parked by the same statement ([`lease::claim_due_assignments`]).
static CLAIM_DUE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "UPDATE llm_tools_chats
         SET {assignments}
         WHERE id IN (
             SELECT id FROM llm_tools_chats
             WHERE wake_at IS NOT NULL AND parked IS NULL
               AND wake_at <= ?3 AND run_until <= ?3
             ORDER BY wake_at LIMIT ?4)
         RETURNING {columns}",
        assignments = lease::claim_due_assignments("", DIALECT),
        columns = lease::PICKED_COLUMNS,
    )
});

impl SqliteStore {
    /// Opens (or creates) the database file at `path`: WAL mode, the schema created or
    /// migrated. Fails with [`StoreError::Corrupt`] for a file that is not a database,
    /// [`StoreError::Foreign`] for one with tables of this library's names that it did not
    /// make, [`StoreError::NewerSchema`] for one written by a newer version, and
    /// [`StoreError::Locked`] when another connection keeps it locked.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open_with(path, SqliteOptions::default()).await
    }

    /// [`open`](Self::open), waiting at most `busy_timeout` (instead of five seconds) for
    /// another connection's lock before a write fails with [`StoreError::Locked`].
    pub async fn open_with_busy_timeout(
        path: impl AsRef<Path>,
        busy_timeout: Duration,
    ) -> Result<Self, StoreError> {
        Self::open_with(
            path,
            SqliteOptions::default().with_busy_timeout(busy_timeout),
        )
        .await
    }

    /// [`open`](Self::open) with options: how long to wait for another connection's lock,
    /// and whether each commit is on disk before it returns ([`SqliteOptions`]).
    pub async fn open_with(
        path: impl AsRef<Path>,
        options: SqliteOptions,
    ) -> Result<Self, StoreError> {
        Self::boxed_open(path.as_ref().to_owned(), options).await
    }

    /// [`open_with`](Self::open_with) as a boxed future made here, so that a caller's crate
    /// compiles none of it (as the chat's entry points).
    #[inline(never)]
    fn boxed_open(
        path: std::path::PathBuf,
        options: SqliteOptions,
    ) -> BoxFuture<'static, Result<Self, StoreError>> {
        Box::pin(async move {
            let location = path.display().to_string();
            let opened = tokio::task::spawn_blocking({
                let location = location.clone();
                move || open_connection(&path, &location, &options)
            })
            .await
            .map_err(|e| StoreError::Backend {
                location: location.clone(),
                message: format!("the opening task failed: {e}"),
            })??;
            Ok(Self {
                inner: Arc::new(Inner {
                    connection: Mutex::new(opened),
                    location,
                }),
            })
        })
    }

    /// The file's path, as given.
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
        Box::pin(self.blocking(|conn, location| {
            let mut statement = conn
                .prepare_cached("SELECT id FROM llm_tools_chats ORDER BY id")
                .map_err(|e| failure(location, &e))?;
            let rows = statement
                .query_map([], |row| row.get::<_, String>(0))
                .map_err(|e| failure(location, &e))?;
            rows.collect::<Result<Vec<_>, _>>()
                .map_err(|e| failure(location, &e))
        }))
    }

    /// A [`FileStore`] for one chat's files, kept in this database.
    pub fn file_store(&self, chat_id: impl Into<String>) -> SqliteFileStore {
        SqliteFileStore {
            store: self.clone(),
            chat_id: chat_id.into().into(),
            limits: Limits::default(),
            fence: None,
        }
    }

    /// Runs `f` on the connection, on the blocking pool.
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection, &str) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || {
            let mut conn = inner
                .connection
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            f(&mut conn, &inner.location)
        })
        .await
        .map_err(|e| StoreError::Backend {
            location: self.inner.location.clone(),
            message: format!("the database task failed: {e}"),
        })?
    }
}

/// How many prepared statements a connection keeps: more than the store has.
const STATEMENT_CACHE: usize = 64;

fn open_connection(
    path: &Path,
    location: &str,
    options: &SqliteOptions,
) -> Result<Connection, StoreError> {
    let mut conn = Connection::open(path).map_err(|e| failure(location, &e))?;
    // Every statement the store runs stays prepared (about 30; rusqlite keeps 16 by default,
    // and a round's commits would parse some again each time).
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    conn.busy_timeout(options.busy_timeout)
        .map_err(|e| failure(location, &e))?;
    // The first read of the file: a file that is not a database fails here.
    conn.query_row("PRAGMA journal_mode = WAL", [], |row| {
        row.get::<_, String>(0)
    })
    .map_err(|e| failure(location, &e))?;
    let synchronous = if options.full_sync { "FULL" } else { "NORMAL" };
    conn.execute_batch(&format!(
        "PRAGMA synchronous = {synchronous}; PRAGMA wal_autocheckpoint = 4000;"
    ))
    .map_err(|e| failure(location, &e))?;
    migrate(&mut conn, location)?;
    Ok(conn)
}

fn migrate(conn: &mut Connection, location: &str) -> Result<(), StoreError> {
    let fail = |e: rusqlite::Error| failure(location, &e);
    let foreign = |message: String| StoreError::Foreign {
        location: location.to_owned(),
        message,
    };
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(fail)?;
    let table_exists = |name: &str| -> Result<bool, StoreError> {
        tx.query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [name],
            |row| row.get::<_, i64>(0),
        )
        .map(|n| n > 0)
        .map_err(fail)
    };
    let version = if table_exists("llm_tools_schema")? {
        let found: Option<i64> = tx
            .query_row("SELECT max(version) FROM llm_tools_schema", [], |row| {
                row.get(0)
            })
            .map_err(|e| foreign(format!("llm_tools_schema holds no version ({e})")))?;
        let found = found.ok_or_else(|| foreign("llm_tools_schema holds no version".into()))?;
        u32::try_from(found)
            .map_err(|_| foreign(format!("llm_tools_schema holds version {found}")))?
    } else {
        for table in ["llm_tools_chats", "llm_tools_messages", "llm_tools_calls"] {
            if table_exists(table)? {
                return Err(foreign(format!(
                    "a table `{table}` without the `llm_tools_schema` version table"
                )));
            }
        }
        tx.execute_batch("CREATE TABLE llm_tools_schema (version INTEGER NOT NULL);")
            .map_err(fail)?;
        0
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
            tx.execute_batch(script).map_err(fail)?;
        }
        tx.execute("DELETE FROM llm_tools_schema", [])
            .map_err(fail)?;
        tx.execute(
            "INSERT INTO llm_tools_schema (version) VALUES (?1)",
            [SCHEMA_VERSION],
        )
        .map_err(fail)?;
    }
    tx.commit().map_err(fail)
}

fn read_chat(
    conn: &mut Connection,
    location: &str,
    chat_id: &str,
) -> Result<ChatRecord, StoreError> {
    let fail = |e: rusqlite::Error| failure(location, &e);
    let tx = conn.transaction().map_err(fail)?;
    let head: Option<(String, i64, Option<i64>, i64)> = tx
        .prepare_cached(&SQL.load_head)
        .and_then(|mut s| {
            s.query_row([chat_id], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
            })
            .optional()
        })
        .map_err(fail)?;
    let Some((meta, revision, wake_at, cancel_requested)) = head else {
        return Err(StoreError::NotFound {
            chat_id: chat_id.to_owned(),
        });
    };
    let messages = {
        let mut s = tx.prepare_cached(&SQL.load_messages).map_err(fail)?;
        let rows = s
            .query_map([chat_id], |row| row.get::<_, String>(0))
            .map_err(fail)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(fail)?
    };
    let calls = {
        let mut s = tx.prepare_cached(&SQL.load_calls).map_err(fail)?;
        let rows = s
            .query_map([chat_id], |row| {
                Ok(CallRow {
                    round: row.get(0)?,
                    position: row.get(1)?,
                    call_id: row.get(2)?,
                    state: row.get(3)?,
                    attempt: row.get(4)?,
                    token: row.get(5)?,
                    claimed_until: row.get(6)?,
                    body: row.get(7)?,
                }
                .into_record())
            })
            .map_err(fail)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(fail)?
    };
    drop(tx);
    Ok(lease::chat_record(
        meta,
        messages,
        calls,
        revision,
        wake_at,
        cancel_requested,
    ))
}

/// Runs an insert (`expected: None`) or a conditional update of a call with its columns as
/// `?1`…`?9` and the expected token as `?10`.
fn execute_call(
    statement: &mut rusqlite::CachedStatement<'_>,
    chat_id: &str,
    r: &CallRecord,
    expected: Option<u64>,
) -> rusqlite::Result<usize> {
    let (round, token) = (to_i64(r.round), to_i64(r.token));
    let until = r.claimed_until.map(to_i64);
    let expected = expected.map(to_i64);
    let mut values: Vec<&dyn rusqlite::ToSql> = vec![
        &chat_id,
        &round,
        &r.position,
        &r.call_id,
        &r.state,
        &r.attempt,
        &token,
        &until,
        &r.body,
    ];
    if let Some(expected) = &expected {
        values.push(expected);
    }
    statement.execute(&*values)
}

fn write_commit(
    conn: &mut Connection,
    location: &str,
    chat_id: &str,
    commit: &Commit,
    release: Option<&Release>,
    now_ms: u64,
) -> Result<u64, StoreError> {
    let fail = |e: rusqlite::Error| failure(location, &e);
    let stale = |what: String| StoreError::Stale {
        chat_id: chat_id.to_owned(),
        what,
    };
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(fail)?;
    let stored: Option<(i64, i64, bool)> = tx
        .prepare_cached(
            "SELECT run_token, message_count, run_holder IS NOT NULL
             FROM llm_tools_chats WHERE id = ?1",
        )
        .and_then(|mut s| {
            s.query_row([chat_id], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
                .optional()
        })
        .map_err(fail)?;
    let Some((run_token, message_count, held)) = stored else {
        return Err(StoreError::NotFound {
            chat_id: chat_id.to_owned(),
        });
    };
    if to_u64(run_token) != commit.run_token {
        return Err(stale(
            "another holder took the chat's run claim since this one got it".into(),
        ));
    }
    // A claim given up is stale too: a write that comes late (a commit whose turn was dropped
    // goes on, on the blocking pool) lands under no claim.
    if !held {
        return Err(stale(
            "the chat's run claim was given up since this one got it".into(),
        ));
    }
    let from = i64::try_from(commit.messages_from).unwrap_or(i64::MAX);
    if from > message_count {
        return Err(StoreError::Backend {
            location: location.to_owned(),
            message: format!(
                "chat `{chat_id}`: messages from {from} on were written, but only {message_count} are stored"
            ),
        });
    }
    if from < message_count {
        tx.prepare_cached("DELETE FROM llm_tools_messages WHERE chat_id = ?1 AND seq >= ?2")
            .and_then(|mut s| s.execute(params![chat_id, from]))
            .map_err(fail)?;
    }
    {
        let mut insert = tx
            .prepare_cached(
                "INSERT INTO llm_tools_messages (chat_id, seq, body) VALUES (?1, ?2, ?3)",
            )
            .map_err(fail)?;
        for (offset, body) in commit.messages.iter().enumerate() {
            let seq = from.saturating_add(i64::try_from(offset).unwrap_or(i64::MAX));
            insert.execute(params![chat_id, seq, body]).map_err(|e| {
                if is_constraint(&e) {
                    stale(format!("message {seq} is stored already"))
                } else {
                    fail(e)
                }
            })?;
        }
    }
    {
        let mut insert = tx.prepare_cached(&SQL.insert_call).map_err(fail)?;
        let mut update = tx
            .prepare_cached(
                "UPDATE llm_tools_calls
                 SET call_id = ?4, state = ?5, attempt = ?6, token = ?7, claimed_until = ?8, body = ?9
                 WHERE chat_id = ?1 AND round = ?2 AND position = ?3 AND token = ?10",
            )
            .map_err(fail)?;
        for write in &commit.calls {
            let r = &write.record;
            match write.expected_token {
                None => {
                    execute_call(&mut insert, chat_id, r, None).map_err(|e| {
                        if is_constraint(&e) {
                            stale(format!("call `{}` is stored already", r.call_id))
                        } else {
                            fail(e)
                        }
                    })?;
                }
                Some(expected) => {
                    let changed =
                        execute_call(&mut update, chat_id, r, Some(expected)).map_err(fail)?;
                    if changed == 0 {
                        return Err(stale(format!(
                            "call `{}` was claimed again since this holder saw it (token {expected})",
                            r.call_id
                        )));
                    }
                }
            }
        }
    }
    let count = from.saturating_add(i64::try_from(commit.messages.len()).unwrap_or(i64::MAX));
    let revision: i64 = tx
        .prepare_cached(
            "UPDATE llm_tools_chats
             SET meta = ?2, message_count = ?3, revision = revision + 1, updated_at = ?4,
                 wake_at = CASE WHEN cancel_requested > 0 AND cancel_requested > ?6
                                     AND (?5 IS NULL OR ?5 > ?4) THEN ?4
                                ELSE ?5 END,
                 cancel_requested = CASE WHEN cancel_requested <= ?6 THEN 0
                                         ELSE cancel_requested END
             WHERE id = ?1 RETURNING revision",
        )
        .and_then(|mut s| {
            s.query_row(
                params![
                    chat_id,
                    commit.meta,
                    count,
                    to_i64(now_ms),
                    commit.wake_at.map(to_i64),
                    commit.cancel_handled.map_or(-1, to_i64)
                ],
                |row| row.get(0),
            )
        })
        .map_err(fail)?;
    if let Some(release) = release {
        release_in(&tx, chat_id, commit.run_token, release).map_err(fail)?;
    }
    tx.commit().map_err(fail)?;
    Ok(to_u64(revision))
}

/// A chat's status from a row of [`lease::STATUS_COLUMNS`].
fn status_of(row: &rusqlite::Row<'_>) -> rusqlite::Result<ChatStatus> {
    Ok(StatusRow {
        chat_id: row.get(0)?,
        parked: row.get(1)?,
        parked_at: row.get(2)?,
        failures: row.get(3)?,
        last_error: row.get(4)?,
        wake_at: row.get(5)?,
        abandoned_claims: row.get(6)?,
    }
    .into_status())
}

/// Gives the run claim `token` up as `release` says (nothing when the claim is no longer that
/// token's); returns the rows changed.
fn release_in(
    conn: &Connection,
    chat_id: &str,
    token: u64,
    release: &Release,
) -> rusqlite::Result<usize> {
    let token = to_i64(token);
    let mut statement = conn.prepare_cached(SQL.release_of(release))?;
    match ReleaseArgs::of(release, crate::clock::now_ms()) {
        ReleaseArgs::None => statement.execute(params![chat_id, token]),
        ReleaseArgs::Retry { error, retry_at } => {
            statement.execute(params![chat_id, token, error, retry_at])
        }
        ReleaseArgs::Park {
            error,
            reason,
            parked_at,
        } => statement.execute(params![chat_id, token, error, reason, parked_at]),
        ReleaseArgs::ClaimedElsewhere { until, now } => {
            statement.execute(params![chat_id, token, until, now])
        }
    }
}

impl Store for SqliteStore {
    fn create_chat<'a>(
        &'a self,
        chat_id: &'a str,
        record: &'a ChatRecord,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let chat_id = chat_id.to_owned();
        let meta = record.meta.clone();
        let messages = record.messages.clone();
        let calls = record.calls.clone();
        let wake_at = record.wake_at.map(to_i64);
        Box::pin(self.blocking(move |conn, location| {
            let fail = |e: rusqlite::Error| failure(location, &e);
            let now = to_i64(crate::clock::now_ms());
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(fail)?;
            let count = i64::try_from(messages.len()).unwrap_or(i64::MAX);
            tx.execute(
                "INSERT INTO llm_tools_chats
                 (id, meta, message_count, created_at, updated_at, wake_at)
                 VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                params![chat_id, meta, count, now, wake_at],
            )
            .map_err(|e| {
                if is_constraint(&e) {
                    StoreError::AlreadyExists {
                        chat_id: chat_id.clone(),
                    }
                } else {
                    fail(e)
                }
            })?;
            for (seq, body) in messages.iter().enumerate() {
                tx.execute(
                    "INSERT INTO llm_tools_messages (chat_id, seq, body) VALUES (?1, ?2, ?3)",
                    params![chat_id, i64::try_from(seq).unwrap_or(i64::MAX), body],
                )
                .map_err(fail)?;
            }
            let mut insert = tx.prepare_cached(&SQL.insert_call).map_err(fail)?;
            for r in &calls {
                execute_call(&mut insert, &chat_id, r, None).map_err(fail)?;
            }
            drop(insert);
            tx.commit().map_err(fail)
        }))
    }

    fn load_chat<'a>(&'a self, chat_id: &'a str) -> BoxFuture<'a, Result<ChatRecord, StoreError>> {
        let chat_id = chat_id.to_owned();
        Box::pin(self.blocking(move |conn, location| read_chat(conn, location, &chat_id)))
    }

    fn claim_run<'a>(
        &'a self,
        chat_id: &'a str,
        holder: &'a str,
        now_ms: u64,
        lease: Duration,
    ) -> BoxFuture<'a, Result<RunClaim, StoreError>> {
        let chat_id = chat_id.to_owned();
        let holder = holder.to_owned();
        Box::pin(self.blocking(move |conn, location| {
            let fail = |e: rusqlite::Error| failure(location, &e);
            let granted: Option<(i64, i64)> = conn
                .prepare_cached(&SQL.claim_run)
                .and_then(|mut s| {
                    s.query_row(
                        params![chat_id, holder, lease_end(now_ms, lease), to_i64(now_ms)],
                        |row| Ok((row.get(0)?, row.get(1)?)),
                    )
                    .optional()
                })
                .map_err(fail)?;
            if let Some((token, revision)) = granted {
                return Ok(lease::granted(token, revision));
            }
            chat_row(conn, location, &SQL.held, chat_id, |row| {
                Ok(lease::busy(row.get(0)?, row.get(1)?))
            })
        }))
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
        let chat_id = chat_id.to_owned();
        Box::pin(self.blocking(move |conn, location| {
            let renewed: Option<i64> = conn
                .prepare_cached(&SQL.renew_run)
                .and_then(|mut s| {
                    s.query_row(
                        params![chat_id, to_i64(token), lease_end(now_ms, lease)],
                        |row| row.get(0),
                    )
                    .optional()
                })
                .map_err(|e| failure(location, &e))?;
            lease::renewed(&chat_id, renewed)
        }))
    }

    fn release_run<'a>(
        &'a self,
        chat_id: &'a str,
        token: u64,
        release: &'a Release,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let chat_id = chat_id.to_owned();
        let release = release.clone();
        Box::pin(self.blocking(move |conn, location| {
            release_in(conn, &chat_id, token, &release)
                .map(|_| ())
                .map_err(|e| failure(location, &e))
        }))
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
        let holder = holder.to_owned();
        Box::pin(self.blocking(move |conn, location| {
            // One writer at a time: the pick, the claims and the parking of chats abandoned
            // too often are one statement.
            let mut s = conn
                .prepare_cached(&CLAIM_DUE)
                .map_err(|e| failure(location, &e))?;
            let rows = s
                .query_map(
                    params![
                        holder,
                        lease_end(now_ms, lease),
                        to_i64(now_ms),
                        i64::try_from(limit).unwrap_or(i64::MAX),
                        i64::from(max_abandoned_claims.max(1)),
                    ],
                    |row| {
                        Ok(lease::picked(
                            row.get(0)?,
                            row.get(1)?,
                            row.get(2)?,
                            row.get(3)?,
                            row.get(4)?,
                        ))
                    },
                )
                .map_err(|e| failure(location, &e))?;
            let picked = rows
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| failure(location, &e))?;
            Ok(picked.into_iter().flatten().collect())
        }))
    }

    fn commit<'a>(
        &'a self,
        chat_id: &'a str,
        commit: &'a Commit,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        let chat_id = chat_id.to_owned();
        let commit = commit.clone();
        Box::pin(self.blocking(move |conn, location| {
            write_commit(
                conn,
                location,
                &chat_id,
                &commit,
                None,
                crate::clock::now_ms(),
            )
        }))
    }

    fn commit_and_release<'a>(
        &'a self,
        chat_id: &'a str,
        commit: &'a Commit,
        release: &'a Release,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        let chat_id = chat_id.to_owned();
        let commit = commit.clone();
        let release = release.clone();
        Box::pin(self.blocking(move |conn, location| {
            let now = crate::clock::now_ms();
            write_commit(conn, location, &chat_id, &commit, Some(&release), now)
        }))
    }

    fn chat_status<'a>(
        &'a self,
        chat_id: &'a str,
    ) -> BoxFuture<'a, Result<ChatStatus, StoreError>> {
        let chat_id = chat_id.to_owned();
        Box::pin(self.blocking(move |conn, location| {
            chat_row(conn, location, &SQL.chat_status, chat_id, status_of)
        }))
    }

    fn parked_chats<'a>(
        &'a self,
        after: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<ChatStatus>, StoreError>> {
        let after = after.map(str::to_owned);
        Box::pin(self.blocking(move |conn, location| {
            let mut s = conn
                .prepare_cached(&SQL.parked_chats)
                .map_err(|e| failure(location, &e))?;
            let rows = s
                .query_map(
                    params![after, i64::try_from(limit).unwrap_or(i64::MAX)],
                    status_of,
                )
                .map_err(|e| failure(location, &e))?;
            rows.collect::<Result<Vec<_>, _>>()
                .map_err(|e| failure(location, &e))
        }))
    }

    fn release_parked<'a>(&'a self, chat_id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        let chat_id = chat_id.to_owned();
        Box::pin(self.blocking(move |conn, location| {
            let fail = |e: rusqlite::Error| failure(location, &e);
            let now = to_i64(crate::clock::now_ms());
            let released = conn
                .prepare_cached(&SQL.release_parked)
                .and_then(|mut s| s.execute(params![chat_id, now]))
                .map_err(fail)?;
            if released > 0 {
                return Ok(true);
            }
            // Nothing was parked: false for a stored chat, NotFound for an unknown one.
            chat_row(conn, location, &SQL.held, chat_id, |_| Ok(()))?;
            Ok(false)
        }))
    }

    fn request_cancel<'a>(
        &'a self,
        chat_id: &'a str,
        now_ms: u64,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let chat_id = chat_id.to_owned();
        Box::pin(
            self.blocking(move |conn, location| {
                request_cancel_in(conn, location, &chat_id, now_ms)
            }),
        )
    }

    fn cancel_requested<'a>(
        &'a self,
        chat_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<u64>, StoreError>> {
        let chat_id = chat_id.to_owned();
        Box::pin(self.blocking(move |conn, location| {
            chat_row(conn, location, &SQL.cancel_requested, chat_id, |row| {
                Ok(lease::cancel_requested(row.get(0)?))
            })
        }))
    }

    fn load_secret<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<Vec<u8>>, StoreError>> {
        let key = key.to_owned();
        Box::pin(self.blocking(move |conn, location| {
            super::contract::check_secret(&key, None)?;
            // A stored value past the limit (written around this store) is refused unread.
            let row: Option<(Option<Vec<u8>>, i64)> = conn
                .prepare_cached(
                    "SELECT CASE WHEN length(value) <= ?2 THEN value END, length(value)
                     FROM llm_tools_secrets WHERE key = ?1",
                )
                .and_then(|mut s| {
                    s.query_row(
                        rusqlite::params![&key, super::contract::MAX_SECRET_BYTES as i64],
                        |row| Ok((row.get(0)?, row.get(1)?)),
                    )
                    .optional()
                })
                .map_err(|e| failure(location, &e))?;
            match row {
                None => Ok(None),
                Some((Some(value), _)) => Ok(Some(value)),
                Some((None, bytes)) => Err(super::contract::stored_secret_too_large(
                    u64::try_from(bytes).unwrap_or(0),
                )),
            }
        }))
    }

    fn save_secret<'a>(
        &'a self,
        key: &'a str,
        value: &'a [u8],
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let (key, value) = (key.to_owned(), value.to_vec());
        Box::pin(self.blocking(move |conn, location| {
            super::contract::check_secret(&key, Some(&value))?;
            conn.prepare_cached(
                "INSERT INTO llm_tools_secrets (key, value) VALUES (?1, ?2)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            )
            .and_then(|mut s| s.execute(rusqlite::params![key, value]))
            .map(|_| ())
            .map_err(|e| failure(location, &e))
        }))
    }

    fn clear_secret<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        let key = key.to_owned();
        Box::pin(self.blocking(move |conn, location| {
            super::contract::check_secret(&key, None)?;
            conn.prepare_cached("DELETE FROM llm_tools_secrets WHERE key = ?1")
                .and_then(|mut s| s.execute([&key]))
                .map(|_| ())
                .map_err(|e| failure(location, &e))
        }))
    }
}

/// What `read` makes of the one row `sql` returns for the chat `chat_id` (its only parameter);
/// [`StoreError::NotFound`] when it returns none (the chat is not stored).
fn chat_row<T>(
    conn: &Connection,
    location: &str,
    sql: &str,
    chat_id: String,
    read: impl FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> Result<T, StoreError> {
    conn.prepare_cached(sql)
        .and_then(|mut s| s.query_row([&chat_id], read).optional())
        .map_err(|e| failure(location, &e))?
        .ok_or(StoreError::NotFound { chat_id })
}

fn request_cancel_in(
    conn: &mut Connection,
    location: &str,
    chat_id: &str,
    now_ms: u64,
) -> Result<(), StoreError> {
    let now = lease::cancel_stamp(now_ms);
    let changed = conn
        .prepare_cached(&SQL.request_cancel)
        .and_then(|mut s| s.execute(params![chat_id, now]))
        .map_err(|e| failure(location, &e))?;
    if changed == 0 {
        return Err(StoreError::NotFound {
            chat_id: chat_id.to_owned(),
        });
    }
    Ok(())
}

/// One chat's files, kept in its [`SqliteStore`]'s database (table `llm_tools_files`), so a
/// durable chat's spilled results travel with it. From [`SqliteStore::file_store`].
///
/// It keeps the [limits](crate::files#limits) of every store, for the chat's files:
/// [`with_max_file_size`](Self::with_max_file_size) (a larger file is neither saved nor
/// loaded: its size is read with SQL `octet_length` before its content is),
/// [`with_max_total_bytes`](Self::with_max_total_bytes) and
/// [`with_max_files`](Self::with_max_files). A save measures the chat's files and writes in one
/// `BEGIN IMMEDIATE` transaction, so saves at the same moment, from any connection or process,
/// never pass a total together.
///
/// ```
/// use llm_tools_core::files::FileStore;
/// use llm_tools_core::store::SqliteStore;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// # let path = std::env::temp_dir().join(format!("llm-tools-files-{}.db", std::process::id()));
/// let store = SqliteStore::open(&path).await?;
/// let files = store
///     .file_store("chat-1")
///     .with_max_file_size(1024 * 1024)
///     .with_max_total_bytes(8 * 1024 * 1024)
///     .with_max_files(100);
/// files.save("notes.md", b"# Notes".to_vec()).await?;
/// assert_eq!(files.load("notes.md").await?, b"# Notes");
/// # drop((files, store));
/// # for suffix in ["", "-wal", "-shm"] { let _ = std::fs::remove_file(format!("{}{suffix}", path.display())); }
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct SqliteFileStore {
    store: SqliteStore,
    chat_id: Arc<str>,
    limits: Limits,
    /// The durable chat and run claim every save is fenced by ([`FileStore::fenced`]).
    fence: Option<(Arc<str>, u64)>,
}

impl SqliteFileStore {
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
}

fn io_error(error: StoreError) -> io::Error {
    io::Error::other(error)
}

/// Saves `bytes` as the file `name` of `chat_id` within `limits`, in one immediate
/// transaction; the outer error is the database's, the inner one a refusal by a limit. With a
/// `fence` (a chat and its run claim's token), refused as [`StoreError::Stale`] when the
/// chat's run claim has another token now.
fn save_file(
    conn: &mut Connection,
    location: &str,
    (chat_id, name): (&str, &str),
    bytes: &[u8],
    limits: Limits,
    fence: Option<(&str, u64)>,
    given_up: &AtomicBool,
) -> Result<io::Result<()>, StoreError> {
    let fail = |e: rusqlite::Error| failure(location, &e);
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(fail)?;
    if let Some((fence_chat, token)) = fence {
        // The claim's token, when the claim is held (a claim given up fences out as a taken
        // one does).
        let held: Option<Option<i64>> = tx
            .prepare_cached(
                "SELECT CASE WHEN run_holder IS NOT NULL THEN run_token END
                 FROM llm_tools_chats WHERE id = ?1",
            )
            .and_then(|mut s| s.query_row([fence_chat], |row| row.get(0)).optional())
            .map_err(fail)?;
        match held {
            Some(Some(held)) if to_u64(held) == token => {}
            Some(_) => {
                return Err(StoreError::Stale {
                    chat_id: fence_chat.to_owned(),
                    what: format!(
                        "the chat's run claim was taken over or given up since this one got it; the file {name:?} was not saved"
                    ),
                });
            }
            None => return Err(lease::unfenceable(fence_chat, name)),
        }
    }
    let (total, files) = tx
        .prepare_cached(
            "SELECT coalesce(sum(octet_length(content)), 0), count(*)
             FROM llm_tools_files WHERE chat_id = ?1",
        )
        .and_then(|mut s| {
            s.query_row([chat_id], |row| {
                Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)?))
            })
        })
        .map_err(fail)?;
    let replaced = tx
        .prepare_cached(
            "SELECT octet_length(content) FROM llm_tools_files WHERE chat_id = ?1 AND name = ?2",
        )
        .and_then(|mut s| {
            s.query_row([chat_id, name], |row| row.get::<_, i64>(0))
                .optional()
        })
        .map_err(fail)?
        .map(to_u64);
    let totals = Totals {
        bytes: to_u64(total),
        files: to_u64(files),
    };
    let size = len_u64(bytes.len());
    let new_files = u64::from(replaced.is_none());
    if let Err(refused) = limits.check_totals(name, totals, replaced, size, new_files) {
        // Dropping the transaction rolls it back.
        return Ok(Err(refused));
    }
    tx.prepare_cached(
        "INSERT INTO llm_tools_files (chat_id, name, content) VALUES (?1, ?2, ?3)
         ON CONFLICT (chat_id, name) DO UPDATE SET content = excluded.content",
    )
    .and_then(|mut s| s.execute(params![chat_id, name, bytes]))
    .map_err(fail)?;
    // The save's future was dropped (its call cancelled or out of time): the file does not
    // land, and dropping the transaction rolls it back.
    if given_up.load(Ordering::Acquire) {
        return Ok(Err(crate::files::given_up_error()));
    }
    tx.commit().map_err(fail)?;
    Ok(Ok(()))
}

impl FileStore for SqliteFileStore {
    fn save<'a>(&'a self, name: &'a str, bytes: Vec<u8>) -> BoxFuture<'a, io::Result<String>> {
        Box::pin(async move {
            let name = crate::files::checked_name(name)?.to_owned();
            self.limits.check_size(&name, len_u64(bytes.len()))?;
            let chat_id = Arc::clone(&self.chat_id);
            let limits = self.limits;
            let saved = name.clone();
            let fence = self.fence.clone();
            // Set when this future is dropped: the write, which runs on, then does not commit.
            let given_up = Arc::new(AtomicBool::new(false));
            let _gives_up_on_drop = crate::files::GivesUpOnDrop(Arc::clone(&given_up));
            self.store
                .blocking(move |conn, location| {
                    let fence = fence.as_ref().map(|(chat, token)| (&**chat, *token));
                    let file = (&*chat_id, &*name);
                    save_file(conn, location, file, &bytes, limits, fence, &given_up)
                })
                .await
                .map_err(io_error)??;
            Ok(saved)
        })
    }

    fn load<'a>(&'a self, name: &'a str) -> BoxFuture<'a, io::Result<Vec<u8>>> {
        Box::pin(async move {
            let name = crate::files::checked_name(name)?.to_owned();
            let chat_id = Arc::clone(&self.chat_id);
            let wanted = name.clone();
            let max = to_i64(self.limits.max_file_size);
            // The size first; the content only when it is within the limit.
            let found = self
                .store
                .blocking(move |conn, location| {
                    conn.prepare_cached(
                        "SELECT octet_length(content),
                                CASE WHEN octet_length(content) <= ?3 THEN CAST(content AS BLOB) END
                         FROM llm_tools_files WHERE chat_id = ?1 AND name = ?2",
                    )
                    .and_then(|mut s| {
                        s.query_row(params![&*chat_id, wanted, max], |row| {
                            Ok((row.get::<_, i64>(0)?, row.get::<_, Option<Vec<u8>>>(1)?))
                        })
                        .optional()
                    })
                    .map_err(|e| failure(location, &e))
                })
                .await
                .map_err(io_error)?;
            match found {
                None => Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("no file named {name:?}"),
                )),
                Some((_, Some(content))) => Ok(content),
                Some((size, None)) => {
                    self.limits.check_size(&name, to_u64(size))?;
                    // Within the limit yet not read: it changed between the two columns.
                    Err(io::Error::other(format!(
                        "{name:?} could not be read whole"
                    )))
                }
            }
        })
    }

    fn list(&self) -> BoxFuture<'_, io::Result<Vec<String>>> {
        Box::pin(async move {
            let chat_id = Arc::clone(&self.chat_id);
            self.store
                .blocking(move |conn, location| {
                    let mut s = conn
                        .prepare_cached(
                            "SELECT name FROM llm_tools_files WHERE chat_id = ?1 ORDER BY name",
                        )
                        .map_err(|e| failure(location, &e))?;
                    let rows = s
                        .query_map([&*chat_id], |row| row.get::<_, String>(0))
                        .map_err(|e| failure(location, &e))?;
                    rows.collect::<Result<Vec<_>, _>>()
                        .map_err(|e| failure(location, &e))
                })
                .await
                .map_err(io_error)
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

    fn synchronous(store: &SqliteStore) -> i64 {
        let conn = store
            .inner
            .connection
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        conn.query_row("PRAGMA synchronous", [], |row| row.get(0))
            .unwrap_or(-1)
    }

    /// A file save whose future is dropped while its write waits for the connection does not
    /// commit: the call it belongs to was cancelled, and the model is told so.
    #[tokio::test]
    // The connection is held across one poll of the save on purpose: the save's write waits
    // for it on the blocking pool, never on this task.
    #[allow(clippy::await_holding_lock)]
    async fn a_file_save_given_up_before_its_commit_leaves_the_file_as_it_was() {
        let dir = std::env::temp_dir().join(format!(
            "llm-tools-sqlite-given-up-{}-{}",
            std::process::id(),
            crate::clock::now_ms()
        ));
        std::fs::create_dir_all(&dir).expect("a temporary folder");
        let store = SqliteStore::open(dir.join("files.db"))
            .await
            .expect("opens");
        let files = store.file_store("chat-1");
        files
            .save("kept.txt", b"before".to_vec())
            .await
            .expect("saved");
        // Each write on the blocking pool holds the store while it runs.
        let idle = Arc::strong_count(&store.inner);
        for name in ["kept.txt", "new.txt"] {
            let held = store.inner.connection.lock().expect("the connection");
            let mut save = files.save(name, b"after".to_vec());
            // One poll: the name and size are checked and the write is handed to the pool.
            assert!(futures::poll!(&mut save).is_pending());
            drop(save);
            drop(held);
            while Arc::strong_count(&store.inner) != idle {
                tokio::task::yield_now().await;
                std::thread::yield_now();
            }
        }
        assert_eq!(files.load("kept.txt").await.expect("kept"), b"before");
        assert_eq!(
            files.load("new.txt").await.map_err(|e| e.kind()).err(),
            Some(io::ErrorKind::NotFound)
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn full_sync_is_on_only_when_asked_for() {
        let dir = std::env::temp_dir().join(format!(
            "llm-tools-sqlite-sync-{}-{}",
            std::process::id(),
            crate::clock::now_ms()
        ));
        std::fs::create_dir_all(&dir).expect("a temporary folder");
        let normal = SqliteStore::open(dir.join("normal.db")).await;
        let full = SqliteStore::open_with(
            dir.join("full.db"),
            SqliteOptions::default().with_full_sync(),
        )
        .await;
        let (normal, full) = (normal.expect("opens"), full.expect("opens"));
        // SQLite's numbers: 1 is NORMAL, 2 is FULL.
        assert_eq!(synchronous(&normal), 1);
        assert_eq!(synchronous(&full), 2);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
