//! The embedded backend: one SQLite file, WAL mode, one writer.
//!
//! SQLite calls block, so each runs on tokio's blocking pool; a mutex around the
//! one connection makes this process a single writer, and claims run in one
//! `BEGIN IMMEDIATE` transaction so two processes sharing the file cannot claim
//! the same intent (the second waits on the busy timeout).

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use rusqlite::{params, Connection, OptionalExtension, Row, TransactionBehavior};

use crate::error::JournalError;
use crate::headers;
use crate::record::{
    duration_millis, from_millis, to_millis, Claimed, IntentRecord, Lease, NewIntent, Outcome,
};
use crate::row::{column_list, sql_limit, RawRow};
use crate::state::IntentState;
use crate::store::{JournalStore, StoreFuture};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS journal_intents (
    key              TEXT PRIMARY KEY NOT NULL,
    key_on_wire      INTEGER NOT NULL,
    method           TEXT NOT NULL,
    url              TEXT NOT NULL,
    headers          BLOB NOT NULL,
    body             BLOB NOT NULL,
    deadline_ms      INTEGER,
    retention_end_ms INTEGER NOT NULL,
    state            TEXT NOT NULL
        CHECK (state IN ('in_flight', 'succeeded', 'failed', 'unknown', 'abandoned')),
    owner            TEXT,
    lease_until_ms   INTEGER,
    fence            INTEGER NOT NULL,
    runs             INTEGER NOT NULL,
    due_at_ms        INTEGER,
    status           INTEGER,
    locator          TEXT,
    detail           TEXT,
    created_ms       INTEGER NOT NULL,
    updated_ms       INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS journal_intents_due
    ON journal_intents (state, due_at_ms, lease_until_ms);
";

/// How long a writer waits for another process's write lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// A journal in one SQLite file (bundled SQLite; WAL; one writer per process).
///
/// Clones share the connection.
#[derive(Clone)]
pub struct SqliteStore {
    conn: Arc<Mutex<Connection>>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens (or creates) the journal file and its schema, in WAL mode.
    ///
    /// # Errors
    /// [`JournalError::Storage`] when the file cannot be opened or migrated.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, JournalError> {
        let conn = Connection::open(path).map_err(JournalError::storage)?;
        conn.query_row("PRAGMA journal_mode = WAL", [], |row| {
            row.get::<_, String>(0)
        })
        .map_err(JournalError::storage)?;
        Self::prepare(conn)
    }

    /// A journal in memory, gone with the store (tests, demos).
    ///
    /// # Errors
    /// [`JournalError::Storage`].
    pub fn open_in_memory() -> Result<Self, JournalError> {
        Self::prepare(Connection::open_in_memory().map_err(JournalError::storage)?)
    }

    fn prepare(conn: Connection) -> Result<Self, JournalError> {
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(JournalError::storage)?;
        conn.execute_batch(SCHEMA).map_err(JournalError::storage)?;
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    /// Runs `work` on the blocking pool with the connection.
    fn run<T, F>(&self, work: F) -> StoreFuture<'static, T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection, i64) -> Result<T, JournalError> + Send + 'static,
    {
        let conn = Arc::clone(&self.conn);
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                let mut conn = conn
                    .lock()
                    .map_err(|_| JournalError::storage("journal connection poisoned"))?;
                work(&mut conn, to_millis(SystemTime::now()))
            })
            .await
            .map_err(JournalError::storage)?
        })
    }
}

fn read_row(row: &Row<'_>) -> rusqlite::Result<RawRow> {
    Ok(RawRow {
        key: row.get(0)?,
        key_on_wire: row.get(1)?,
        method: row.get(2)?,
        url: row.get(3)?,
        headers: row.get(4)?,
        body: row.get(5)?,
        deadline_ms: row.get(6)?,
        retention_end_ms: row.get(7)?,
        state: row.get(8)?,
        owner: row.get(9)?,
        lease_until_ms: row.get(10)?,
        fence: row.get(11)?,
        runs: row.get(12)?,
        due_at_ms: row.get(13)?,
        status: row.get(14)?,
        locator: row.get(15)?,
        detail: row.get(16)?,
        created_ms: row.get(17)?,
        updated_ms: row.get(18)?,
    })
}

fn select_records(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> Result<Vec<IntentRecord>, JournalError> {
    let mut statement = conn.prepare(sql).map_err(JournalError::storage)?;
    let rows = statement
        .query_map(params, read_row)
        .map_err(JournalError::storage)?;
    rows.map(|row| row.map_err(JournalError::storage)?.into_record())
        .collect()
}

impl JournalStore for SqliteStore {
    fn write_ahead<'a>(
        &'a self,
        intent: &'a NewIntent,
        owner: &'a str,
        lease: Duration,
    ) -> StoreFuture<'a, Lease> {
        let intent = intent.clone();
        let owner = owner.to_owned();
        self.run(move |conn, now| {
            let until = now.saturating_add(duration_millis(lease));
            let inserted = conn
                .execute(
                    "INSERT INTO journal_intents (key, key_on_wire, method, url, headers, body,
                        deadline_ms, retention_end_ms, state, owner, lease_until_ms, fence, runs,
                        created_ms, updated_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'in_flight', ?9, ?10, 1, 1, ?11, ?11)
                     ON CONFLICT (key) DO NOTHING",
                    params![
                        intent.key,
                        intent.key_on_wire,
                        intent.method.as_str(),
                        intent.url,
                        headers::encode(&intent.headers),
                        intent.body,
                        intent.deadline.map(duration_millis),
                        now.saturating_add(duration_millis(intent.retention)),
                        owner,
                        until,
                        now,
                    ],
                )
                .map_err(JournalError::storage)?;
            if inserted == 0 {
                return Err(JournalError::duplicate_key(&intent.key));
            }
            Ok(Lease {
                key: intent.key,
                owner,
                fence: 1,
                until: from_millis(until),
            })
        })
    }

    fn claim<'a>(
        &'a self,
        owner: &'a str,
        lease: Duration,
        limit: usize,
    ) -> StoreFuture<'a, Vec<Claimed>> {
        let owner = owner.to_owned();
        self.run(move |conn, now| {
            let until = now.saturating_add(duration_millis(lease));
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(JournalError::storage)?;
            let keys: Vec<String> = {
                let mut due = tx
                    .prepare(
                        "SELECT key FROM journal_intents
                         WHERE (state = 'unknown' AND due_at_ms <= ?1)
                            OR (state = 'in_flight' AND lease_until_ms <= ?1)
                         ORDER BY COALESCE(due_at_ms, lease_until_ms), created_ms
                         LIMIT ?2",
                    )
                    .map_err(JournalError::storage)?;
                let rows = due
                    .query_map(params![now, sql_limit(limit)], |row| row.get(0))
                    .map_err(JournalError::storage)?;
                rows.collect::<Result<_, _>>()
                    .map_err(JournalError::storage)?
            };
            let update = format!(
                "UPDATE journal_intents
                 SET state = 'in_flight', owner = ?1, lease_until_ms = ?2, fence = fence + 1,
                     runs = runs + 1, due_at_ms = NULL, updated_ms = ?3
                 WHERE key = ?4
                 RETURNING {}",
                column_list("")
            );
            let mut claimed = Vec::with_capacity(keys.len());
            for key in keys {
                let raw = tx
                    .query_row(&update, params![owner, until, now, key], read_row)
                    .map_err(JournalError::storage)?;
                let record = raw.into_record()?;
                claimed.push(Claimed {
                    lease: Lease {
                        key: record.key.clone(),
                        owner: owner.clone(),
                        fence: record.fence,
                        until: from_millis(until),
                    },
                    record,
                    now: from_millis(now),
                });
            }
            tx.commit().map_err(JournalError::storage)?;
            Ok(claimed)
        })
    }

    fn record<'a>(&'a self, lease: &'a Lease, outcome: &'a Outcome) -> StoreFuture<'a, ()> {
        let lease = lease.clone();
        let outcome = outcome.clone();
        self.run(move |conn, now| {
            let (status, locator, detail, due_in) = outcome.columns();
            let due_at = due_in.map(|delay| now.saturating_add(duration_millis(delay)));
            let updated = conn
                .execute(
                    "UPDATE journal_intents
                     SET state = ?1, status = COALESCE(?2, status), locator = ?3, detail = ?4,
                         due_at_ms = ?5, lease_until_ms = NULL, updated_ms = ?6
                     WHERE key = ?7 AND fence = ?8 AND state = 'in_flight'",
                    params![
                        outcome.state().as_str(),
                        status,
                        locator,
                        detail,
                        due_at,
                        now,
                        lease.key,
                        lease.fence,
                    ],
                )
                .map_err(JournalError::storage)?;
            if updated == 0 {
                return Err(JournalError::lease_lost(&lease.key, lease.fence));
            }
            Ok(())
        })
    }

    fn get<'a>(&'a self, key: &'a str) -> StoreFuture<'a, Option<IntentRecord>> {
        let key = key.to_owned();
        self.run(move |conn, _| {
            let sql = format!(
                "SELECT {} FROM journal_intents WHERE key = ?1",
                column_list("")
            );
            let raw = conn
                .query_row(&sql, params![key], read_row)
                .optional()
                .map_err(JournalError::storage)?;
            raw.map(RawRow::into_record).transpose()
        })
    }

    fn list<'a>(&'a self, state: IntentState, limit: usize) -> StoreFuture<'a, Vec<IntentRecord>> {
        self.run(move |conn, _| {
            let sql = format!(
                "SELECT {} FROM journal_intents WHERE state = ?1
                 ORDER BY created_ms, key LIMIT ?2",
                column_list("")
            );
            select_records(conn, &sql, params![state.as_str(), sql_limit(limit)])
        })
    }

    fn abandon<'a>(&'a self, key: &'a str, reason: &'a str) -> StoreFuture<'a, bool> {
        let key = key.to_owned();
        let reason = reason.to_owned();
        self.run(move |conn, now| {
            let updated = conn
                .execute(
                    "UPDATE journal_intents
                     SET state = 'abandoned', detail = ?1, fence = fence + 1,
                         lease_until_ms = NULL, due_at_ms = NULL, updated_ms = ?2
                     WHERE key = ?3 AND state IN ('in_flight', 'unknown')",
                    params![reason, now, key],
                )
                .map_err(JournalError::storage)?;
            Ok(updated > 0)
        })
    }

    fn prune<'a>(&'a self, older_than: Duration) -> StoreFuture<'a, u64> {
        self.run(move |conn, now| {
            let deleted = conn
                .execute(
                    "DELETE FROM journal_intents
                     WHERE state IN ('succeeded', 'failed', 'abandoned') AND updated_ms <= ?1",
                    params![now.saturating_sub(duration_millis(older_than))],
                )
                .map_err(JournalError::storage)?;
            Ok(u64::try_from(deleted).unwrap_or(u64::MAX))
        })
    }
}
