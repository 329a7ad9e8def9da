//! The embedded backend: one SQLite file, WAL mode, one writer.
//!
//! SQLite calls block, so each runs on tokio's blocking pool; a mutex around the
//! one connection makes this process a single writer, and claims run in one
//! `BEGIN IMMEDIATE` transaction so two processes sharing the file cannot claim
//! the same intent (the second waits on the busy timeout).

mod adopt;
mod delivery;
#[cfg(test)]
mod plan_tests;
mod queries;
mod shape;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use idempotency_storage::limit::Limit;
use idempotency_storage::sqlite::{is_busy, prepare_owner_only, quick_check, switch_to_wal};
use rusqlite::{named_params, Connection, OptionalExtension, Row, TransactionBehavior};

use crate::backlog::Backlog;
use crate::error::JournalError;
use crate::headers;
use crate::listing::ListCursor;
use crate::record::{
    duration_millis, from_millis, to_millis, Claimed, IntentRecord, Lease, NewIntent, Outcome,
};
use crate::row::{count, read_row, sql_limit, RawRow};
use crate::state::IntentState;
use crate::state::IntentState::{Abandoned, Failed, InFlight, Queued, Succeeded, Unknown};
use crate::store::{JournalStore, StoreFuture};
use crate::worker::Worker;

/// The default [`SqliteStoreBuilder::busy_timeout`]: idempotency-storage's, the
/// same constant tower-idempotency's `SqliteStore` opens with.
pub use idempotency_storage::sqlite::DEFAULT_BUSY_TIMEOUT;

/// A journal in one SQLite file (bundled SQLite; WAL; one writer per process).
///
/// Clones share the connection. On Unix a journal file it creates is readable and
/// writable by its owner only (0600, whatever the umask), and so are its `-wal`
/// and `-shm` files; an existing file open to others is reported with a
/// `tracing` warning, not changed.
///
/// # Durability
/// WAL with `synchronous = FULL`: a write-ahead that returned survives a power
/// loss, not only a crash of the process.
#[derive(Clone)]
pub struct SqliteStore {
    conn: Arc<Mutex<Connection>>,
    busy_timeout: Duration,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("busy_timeout", &self.busy_timeout)
            .finish_non_exhaustive()
    }
}

/// Opens a [`SqliteStore`] with settings; see [`SqliteStore::builder`].
#[derive(Debug, Clone)]
#[must_use]
pub struct SqliteStoreBuilder {
    path: Option<PathBuf>,
    busy_timeout: Duration,
    check_on_open: bool,
}

impl SqliteStoreBuilder {
    /// How long a write waits for another connection's write lock (another
    /// process on the same file) before it fails with
    /// [`JournalError::Timeout`] (default [`DEFAULT_BUSY_TIMEOUT`], 5 s). A
    /// durable send whose write-ahead times out is refused: nothing is sent. A
    /// write-ahead stops waiting shortly before its send's deadline when that
    /// comes first ([`idempotency_storage::limit`]), with the same error.
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// Whether `open` checks the file's structure first (SQLite's `PRAGMA
    /// quick_check`; default on): a damaged page is reported at once, naming
    /// the file, instead of when a resume first reads it. It reads the whole
    /// file: prune terminal rows to keep it short, or turn it off for a very
    /// large journal.
    pub fn check_on_open(mut self, check: bool) -> Self {
        self.check_on_open = check;
        self
    }

    /// Opens (or creates) the journal and brings its schema to the latest
    /// version, recorded in the file's `journal_schema_versions` table. The
    /// file may hold the application's tables too; `PRAGMA user_version` is
    /// left to the application. A journal file made before that table (0.1.0,
    /// or 0.2.0 before its release) is adopted at the version its
    /// `journal_intents` table has, then migrated.
    ///
    /// # Errors
    /// [`JournalError::File`] when the file cannot be created or opened, or is
    /// damaged (it names the file and the step),
    /// [`JournalError::Schema`] when it cannot be migrated (or was migrated by a
    /// newer version of this crate, or holds a `journal_intents` table of no
    /// shape the journal ever had: the error names what it lacks),
    /// [`JournalError::Timeout`] when another connection held the write lock
    /// past the busy timeout.
    pub fn open(self) -> Result<SqliteStore, JournalError> {
        let conn = match &self.path {
            Some(path) => {
                prepare_owner_only(path, "idempotency keys and request bodies")?;
                Connection::open(path).map_err(JournalError::file(path, "open"))?
            }
            None => Connection::open_in_memory().map_err(JournalError::storage)?,
        };
        let store = SqliteStore {
            conn: Arc::new(Mutex::new(conn)),
            busy_timeout: self.busy_timeout,
        };
        store.with_conn(|conn| {
            conn.busy_timeout(store.busy_timeout)
                .map_err(JournalError::storage)?;
            if let Some(path) = &self.path {
                if self.check_on_open {
                    quick_check(conn, path)?;
                }
                switch_to_wal(conn, store.busy_timeout).map_err(JournalError::storage)?;
            }
            conn.pragma_update(None, "synchronous", "FULL")
                .map_err(JournalError::storage)?;
            idempotency_storage::sqlite::migrate_adopting(
                conn,
                &crate::migrations::SQLITE,
                adopt::adopt,
            )
            .map_err(JournalError::schema)
        })?;
        Ok(store)
    }
}

impl SqliteStore {
    /// Opens (or creates) the journal file with the default settings.
    ///
    /// # Errors
    /// As [`SqliteStoreBuilder::open`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self, JournalError> {
        Self::builder(path).open()
    }

    /// A builder for a journal file: `SqliteStore::builder(path).busy_timeout(…).open()`.
    pub fn builder(path: impl AsRef<Path>) -> SqliteStoreBuilder {
        SqliteStoreBuilder {
            path: Some(path.as_ref().to_owned()),
            busy_timeout: DEFAULT_BUSY_TIMEOUT,
            check_on_open: true,
        }
    }

    /// A journal in memory, gone with the store (tests, demos).
    ///
    /// # Errors
    /// [`JournalError::Storage`].
    pub fn open_in_memory() -> Result<Self, JournalError> {
        SqliteStoreBuilder {
            path: None,
            busy_timeout: DEFAULT_BUSY_TIMEOUT,
            check_on_open: false,
        }
        .open()
    }

    /// The journal's schema version, as recorded in the file's
    /// `journal_schema_versions` table (never `PRAGMA user_version`, which is
    /// the application's).
    ///
    /// # Errors
    /// [`JournalError::Storage`].
    pub fn schema_version(&self) -> Result<u32, JournalError> {
        self.with_conn(|conn| {
            idempotency_storage::sqlite::recorded_version(conn, &crate::migrations::SQLITE)
                .map_err(JournalError::schema)
        })
    }

    fn with_conn<T>(
        &self,
        work: impl FnOnce(&mut Connection) -> Result<T, JournalError>,
    ) -> Result<T, JournalError> {
        let mut conn = self
            .conn
            .lock()
            .map_err(|_| JournalError::storage("journal connection poisoned"))?;
        work(&mut conn).map_err(|error| timed_out(error, self.busy_timeout))
    }

    /// Runs `work` on the blocking pool with the connection and the time.
    fn run<T, F>(&self, work: F) -> StoreFuture<'static, T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection, i64) -> Result<T, JournalError> + Send + 'static,
    {
        let this = self.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                this.with_conn(|conn| work(conn, to_millis(SystemTime::now())))
            })
            .await
            .map_err(JournalError::storage)?
        })
    }
}

impl SqliteStore {
    /// [`run`](Self::run) for a caller with a deadline: waiting for this
    /// process's connection and for another connection's write lock ends by
    /// `limit`, in [`JournalError::Timeout`] naming the write lock (see
    /// [`idempotency_storage::limit`]).
    fn run_within<T, F>(&self, limit: Limit, work: F) -> StoreFuture<'static, T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection, i64) -> Result<T, JournalError> + Send + 'static,
    {
        let this = self.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                let mut conn = this.lock_within(limit)?;
                let busy = limit.shorter(this.busy_timeout, std::time::Instant::now());
                conn.busy_timeout(busy).map_err(JournalError::storage)?;
                let result = work(&mut conn, to_millis(SystemTime::now()));
                // The connection's own setting again, for the next caller.
                let restored = conn
                    .busy_timeout(this.busy_timeout)
                    .map_err(JournalError::storage);
                let result = result.map_err(|error| timed_out(error, busy));
                restored.and(result)
            })
            .await
            .map_err(JournalError::storage)?
        })
    }

    /// This process's connection, waited for until `limit` (another operation
    /// of this process may be waiting on the write lock with it).
    fn lock_within(
        &self,
        limit: Limit,
    ) -> Result<std::sync::MutexGuard<'_, Connection>, JournalError> {
        let started = std::time::Instant::now();
        loop {
            match self.conn.try_lock() {
                Ok(conn) => return Ok(conn),
                Err(std::sync::TryLockError::Poisoned(_)) => {
                    return Err(JournalError::storage("journal connection poisoned"))
                }
                Err(std::sync::TryLockError::WouldBlock) => {}
            }
            if limit.left(std::time::Instant::now()) == Some(Duration::ZERO) {
                return Err(JournalError::Timeout {
                    operation: "write lock",
                    after: started.elapsed(),
                });
            }
            // Without a limit this blocks as every other operation does.
            if limit == Limit::NONE {
                return self
                    .conn
                    .lock()
                    .map_err(|_| JournalError::storage("journal connection poisoned"));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

/// SQLite's "database is locked" after the busy timeout, as a timeout.
fn timed_out(error: JournalError, after: Duration) -> JournalError {
    let busy = match &error {
        JournalError::Storage(source) => source
            .downcast_ref::<rusqlite::Error>()
            .is_some_and(is_busy),
        _ => false,
    };
    if busy {
        JournalError::Timeout {
            operation: "write lock",
            after,
        }
    } else {
        error
    }
}

fn raw_row(row: &Row<'_>) -> rusqlite::Result<RawRow> {
    Ok(read_row!(row, get))
}

impl JournalStore for SqliteStore {
    fn write_ahead<'a>(
        &'a self,
        intent: &'a NewIntent,
        worker: &'a Worker,
        lease: Duration,
    ) -> StoreFuture<'a, Lease> {
        // Fixed now: the intent's deadline counts from its send, just before.
        let limit = Limit::for_deadline(intent.deadline);
        let intent = intent.clone();
        let worker = worker.clone();
        self.run_within(limit, move |conn, now| {
            let until = now.saturating_add(duration_millis(lease));
            let inserted = conn
                .execute(
                    queries::WRITE_AHEAD,
                    named_params! {
                        ":key": intent.key,
                        ":key_on_wire": intent.key_on_wire,
                        ":method": intent.method.as_str(),
                        ":url": intent.url,
                        ":headers": headers::encode(&intent.headers),
                        ":body": intent.body,
                        ":deadline_ms": intent.deadline.map(duration_millis),
                        ":retention_end_ms": now.saturating_add(duration_millis(intent.retention)),
                        ":in_flight": InFlight.as_str(),
                        ":owner": worker.name(),
                        ":incarnation": worker.incarnation(),
                        ":lease_until_ms": until,
                        ":now": now,
                    },
                )
                .map_err(JournalError::storage)?;
            if inserted == 0 {
                return Err(JournalError::duplicate_key(&intent.key));
            }
            Ok(Lease {
                key: intent.key,
                owner: worker.name().to_owned(),
                fence: 1,
                until: from_millis(until),
            })
        })
    }

    fn claim<'a>(
        &'a self,
        worker: &'a Worker,
        lease: Duration,
        limit: usize,
    ) -> StoreFuture<'a, Vec<Claimed>> {
        let worker = worker.clone();
        self.run(move |conn, now| {
            let until = now.saturating_add(duration_millis(lease));
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(JournalError::storage)?;
            let keys: Vec<String> = {
                let mut due = tx
                    .prepare_cached(queries::CLAIMABLE_KEYS)
                    .map_err(JournalError::storage)?;
                let rows = due
                    .query_map(
                        named_params! {
                            ":unknown": Unknown.as_str(),
                            ":queued": Queued.as_str(),
                            ":in_flight": InFlight.as_str(),
                            ":owner": worker.name(),
                            ":incarnation": worker.incarnation(),
                            ":now": now,
                            ":limit": sql_limit(limit),
                        },
                        |row| row.get(0),
                    )
                    .map_err(JournalError::storage)?;
                rows.collect::<Result<_, _>>()
                    .map_err(JournalError::storage)?
            };
            let mut claimed = Vec::with_capacity(keys.len());
            for key in keys {
                let raw = tx
                    .query_row(
                        queries::CLAIM_ONE,
                        named_params! {
                            ":in_flight": InFlight.as_str(),
                            ":owner": worker.name(),
                            ":incarnation": worker.incarnation(),
                            ":lease_until_ms": until,
                            ":now": now,
                            ":key": key,
                        },
                        raw_row,
                    )
                    .map_err(JournalError::storage)?;
                let record = raw.into_record()?;
                claimed.push(Claimed {
                    lease: Lease {
                        key: record.key.clone(),
                        owner: worker.name().to_owned(),
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

    fn take_over<'a>(
        &'a self,
        key: &'a str,
        worker: &'a Worker,
        lease: Duration,
    ) -> StoreFuture<'a, Option<Claimed>> {
        let key = key.to_owned();
        let worker = worker.clone();
        self.run(move |conn, now| {
            let until = now.saturating_add(duration_millis(lease));
            let raw = conn
                .prepare_cached(queries::TAKE_OVER)
                .and_then(|mut statement| {
                    statement
                        .query_row(
                            named_params! {
                                ":in_flight": InFlight.as_str(),
                                ":unknown": Unknown.as_str(),
                            ":queued": Queued.as_str(),
                                ":owner": worker.name(),
                                ":incarnation": worker.incarnation(),
                                ":lease_until_ms": until,
                                ":now": now,
                                ":key": key,
                            },
                            raw_row,
                        )
                        .optional()
                })
                .map_err(JournalError::storage)?;
            let Some(raw) = raw else {
                return Ok(None);
            };
            let record = raw.into_record()?;
            Ok(Some(Claimed {
                lease: Lease {
                    key: record.key.clone(),
                    owner: worker.name().to_owned(),
                    fence: record.fence,
                    until: from_millis(until),
                },
                record,
                now: from_millis(now),
            }))
        })
    }

    fn record<'a>(&'a self, lease: &'a Lease, outcome: &'a Outcome) -> StoreFuture<'a, ()> {
        let lease = lease.clone();
        let outcome = outcome.clone();
        self.run(move |conn, now| {
            let (status, locator, detail, due_in) = outcome.columns();
            let updated = conn
                .prepare_cached(queries::RECORD)
                .and_then(|mut statement| {
                    statement.execute(named_params! {
                        ":state": outcome.state().as_str(),
                        ":status": status,
                        ":locator": locator,
                        ":detail": detail,
                        ":due_at_ms": due_in.map(|delay| now.saturating_add(duration_millis(delay))),
                        ":now": now,
                        ":key": lease.key,
                        ":fence": lease.fence,
                        ":in_flight": InFlight.as_str(),
                        ":runs_given_back": outcome.runs_given_back(),
                    })
                })
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
            let raw = conn
                .query_row(queries::GET, named_params! { ":key": key }, raw_row)
                .optional()
                .map_err(JournalError::storage)?;
            raw.map(RawRow::into_record).transpose()
        })
    }

    fn list<'a>(
        &'a self,
        state: IntentState,
        after: Option<&'a ListCursor>,
        limit: usize,
    ) -> StoreFuture<'a, Vec<IntentRecord>> {
        let after = after.cloned().unwrap_or_else(ListCursor::start);
        self.run(move |conn, _| {
            let mut statement = conn.prepare(queries::LIST).map_err(JournalError::storage)?;
            let rows = statement
                .query_map(
                    named_params! {
                        ":state": state.as_str(),
                        ":after_created_ms": after.created_ms,
                        ":after_key": after.key,
                        ":limit": sql_limit(limit),
                    },
                    raw_row,
                )
                .map_err(JournalError::storage)?;
            rows.map(|row| row.map_err(JournalError::storage)?.into_record())
                .collect()
        })
    }

    fn backlog<'a>(&'a self, worker: &'a Worker) -> StoreFuture<'a, Backlog> {
        let worker = worker.clone();
        self.run(move |conn, now| {
            conn.query_row(
                queries::BACKLOG,
                named_params! {
                    ":unknown": Unknown.as_str(),
                            ":queued": Queued.as_str(),
                    ":in_flight": InFlight.as_str(),
                    ":owner": worker.name(),
                    ":incarnation": worker.incarnation(),
                    ":now": now,
                },
                |row| {
                    Ok(Backlog {
                        due: count(row.get("due")?),
                        leased: count(row.get("leased")?),
                        leased_until: row
                            .get::<_, Option<i64>>("leased_until_ms")?
                            .map(from_millis),
                        waiting: count(row.get("waiting")?),
                        next_due: row.get::<_, Option<i64>>("next_due_ms")?.map(from_millis),
                        now: from_millis(now),
                    })
                },
            )
            .map_err(JournalError::storage)
        })
    }

    fn abandon<'a>(&'a self, key: &'a str, reason: &'a str) -> StoreFuture<'a, bool> {
        let key = key.to_owned();
        let reason = reason.to_owned();
        self.run(move |conn, now| {
            let updated = conn
                .execute(
                    queries::ABANDON,
                    named_params! {
                        ":abandoned": Abandoned.as_str(),
                        ":reason": reason,
                        ":now": now,
                        ":key": key,
                        ":in_flight": InFlight.as_str(),
                        ":unknown": Unknown.as_str(),
                            ":queued": Queued.as_str(),
                    },
                )
                .map_err(JournalError::storage)?;
            Ok(updated > 0)
        })
    }

    fn unacknowledged(&self, limit: usize) -> StoreFuture<'_, Vec<IntentRecord>> {
        self.unacknowledged_page(limit)
    }

    fn acknowledge<'a>(&'a self, key: &'a str) -> StoreFuture<'a, bool> {
        self.acknowledge_now(key)
    }

    fn prune<'a>(&'a self, older_than: Duration) -> StoreFuture<'a, u64> {
        self.run(move |conn, now| {
            let deleted = conn
                .execute(
                    queries::PRUNE,
                    named_params! {
                        ":succeeded": Succeeded.as_str(),
                        ":failed": Failed.as_str(),
                        ":abandoned": Abandoned.as_str(),
                        ":before": now.saturating_sub(duration_millis(older_than)),
                    },
                )
                .map_err(JournalError::storage)?;
            Ok(u64::try_from(deleted).unwrap_or(u64::MAX))
        })
    }
}
