//! The fleet backend: one PostgreSQL table shared by many workers.
//!
//! Claims are one `UPDATE … FROM (SELECT … FOR UPDATE SKIP LOCKED)` statement, so
//! concurrent workers take disjoint intents without waiting on each other, and
//! every timestamp (lease ends, due times, retention) comes from the database's
//! clock, so workers whose clocks drift still agree on when a lease has expired.
//!
//! # Privileges
//! The first connection (and one after an upgrade of this crate) migrates: it
//! needs `CREATE` on the schema the connection's `search_path` points at, and
//! creates `journal_intents` and `journal_schema_versions` there. After that the
//! journal needs only `SELECT, INSERT, UPDATE, DELETE ON journal_intents` and
//! `SELECT ON journal_schema_versions` — e.g. migrate once with the owning role,
//! then run workers as a role granted just that. No sequence, no function other
//! than the built-in `pg_advisory_xact_lock`.

mod claiming;
mod connection;
mod delivery;
mod limit;
mod listen;
mod migrate;
#[cfg(all(test, feature = "test-util"))]
mod plan_tests;
mod pool;
mod queries;
mod unsent;
mod write_ahead;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, Config, Row};

use crate::backlog::Backlog;
use crate::error::JournalError;
use crate::headers;
use crate::listing::ListCursor;
use crate::postgres_error::driver;
use crate::record::{
    duration_millis, from_millis, Claimed, IntentRecord, Lease, NewIntent, Outcome,
};
use crate::row::{count, read_row, sql_limit, RawRow};
use crate::state::IntentState;
use crate::state::IntentState::{Abandoned, Failed, InFlight, Queued, Succeeded, Unknown};
use crate::store::{JournalStore, Listening, StoreFuture};
use crate::worker::Worker;
use connection::{prepare, Live, Timeouts};
use pool::Pool;

/// The default [`PostgresStoreBuilder::connect_timeout`].
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The default [`PostgresStoreBuilder::statement_timeout`].
pub const DEFAULT_STATEMENT_TIMEOUT: Duration = Duration::from_secs(5);
/// The default [`PostgresStoreBuilder::pool_size`]: enough for concurrent
/// durable sends to commit in parallel (PostgreSQL groups their commits), few
/// enough that a fleet of workers stays far below `max_connections` (100 by
/// default).
pub const DEFAULT_POOL_SIZE: usize = 8;

/// A journal in a PostgreSQL table (`journal_intents` in the connection's
/// `search_path`), shared by a fleet of workers.
///
/// Clones share a pool of connections ([`PostgresStoreBuilder::pool_size`]),
/// made as concurrent operations need them; each operation has its connection
/// to itself. A connection that ended is replaced by the next operation (at
/// once; after a failed attempt, attempts back off, jittered, from 100 ms to 1 s and
/// operations in between fail fast), and the log says so. Connects and
/// statements are bounded by timeouts; see [`PostgresStore::builder`].
///
/// # A write-ahead whose commit answer is lost
/// Each write-ahead is its own transaction. When the answer to its `COMMIT` is
/// lost (no answer within the statement timeout plus a second — e.g. a
/// synchronous standby that lags — or a cut connection), the store asks the
/// transaction's status (`pg_xact_status`) on another connection: committed, the
/// write-ahead holds; aborted, it failed and nothing was written; still in
/// progress or no answer, it fails with [`JournalError::CommitUnknown`] and the
/// durable send reports its outcome as unknown.
///
/// # Durable whatever the server's tuning
/// A store's connections commit durably: where `synchronous_commit` is `off`
/// (a common tuning, in which a server crash loses commits it already
/// answered), the store sets it to `on` for its own sessions, so a write-ahead
/// or a result it acknowledged survives a crash of the server. Any other value
/// is kept: the store never lowers `synchronous_commit` or any other
/// durability setting.
#[derive(Clone)]
pub struct PostgresStore {
    pool: std::sync::Arc<Pool>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("timeouts", &self.pool.timeouts())
            .field("pool_size", &self.pool.size())
            .finish_non_exhaustive()
    }
}

/// Connects a [`PostgresStore`] with settings; see [`PostgresStore::builder`].
#[derive(Debug, Clone)]
#[must_use]
pub struct PostgresStoreBuilder {
    config: String,
    timeouts: Timeouts,
    pool_size: usize,
}

impl PostgresStoreBuilder {
    /// How long connecting (TCP, startup, authentication) may take before
    /// [`JournalError::Timeout`] (default [`DEFAULT_CONNECT_TIMEOUT`], 5 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.timeouts.connect = timeout;
        self
    }

    /// The session's `statement_timeout` (default [`DEFAULT_STATEMENT_TIMEOUT`],
    /// 5 s): the server aborts a longer statement, nothing of it is committed,
    /// and the call fails with [`JournalError::Timeout`]. The client gives up one
    /// second later if the server does not answer at all. A durable send whose
    /// write-ahead statement times out is refused: nothing was written, nothing
    /// is sent. A `COMMIT` that takes longer is resolved by its transaction's
    /// status (see [`PostgresStore`]).
    pub fn statement_timeout(mut self, timeout: Duration) -> Self {
        self.timeouts.statement = timeout;
        self
    }

    /// How many connections the store may hold (default [`DEFAULT_POOL_SIZE`],
    /// 8): as many operations run at once; more wait for a free connection, at
    /// most one statement timeout plus a second. One is made when the store
    /// connects, the others when concurrent operations need them.
    ///
    /// A durable send's write-ahead stops waiting — for a connection or for its
    /// statement — shortly before the send's deadline
    /// ([`idempotency_storage::limit`]), whatever these timeouts say: it is
    /// refused with [`JournalError::Timeout`] naming the wait, nothing written.
    pub fn pool_size(mut self, size: usize) -> Self {
        self.pool_size = size;
        self
    }

    /// Connects without TLS and brings the schema to the latest version.
    ///
    /// # Errors
    /// [`JournalError::InvalidConfig`] for a connection string that does not
    /// parse, a zero timeout or a pool size of zero; [`JournalError::Storage`] or
    /// [`JournalError::Timeout`] when the connection fails;
    /// [`JournalError::Schema`] when the migration fails.
    pub async fn connect(self) -> Result<PostgresStore, JournalError> {
        let config: Config = self.config.parse().map_err(|e| {
            JournalError::InvalidConfig(format!("PostgreSQL connection string: {e}"))
        })?;
        if self.timeouts.connect.is_zero() || self.timeouts.statement.is_zero() {
            return Err(JournalError::InvalidConfig(
                "PostgreSQL timeouts must be above zero".to_owned(),
            ));
        }
        let Some(pool_size) = std::num::NonZeroUsize::new(self.pool_size) else {
            return Err(JournalError::InvalidConfig(
                "the PostgreSQL pool size must be at least 1".to_owned(),
            ));
        };
        Ok(PostgresStore {
            pool: std::sync::Arc::new(Pool::open(config, self.timeouts, pool_size).await?),
        })
    }
}

impl PostgresStore {
    /// Connects without TLS (e.g. `host=127.0.0.1 port=5432 user=app dbname=app`
    /// or a `postgresql://` URL) with the default timeouts, and brings the schema
    /// to the latest version. For TLS, connect with your own connector and use
    /// [`from_client`](Self::from_client).
    ///
    /// # Errors
    /// As [`PostgresStoreBuilder::connect`].
    pub async fn connect(config: &str) -> Result<Self, JournalError> {
        Self::builder(config).connect().await
    }

    /// A builder: `PostgresStore::builder(conninfo).statement_timeout(…).connect()`.
    pub fn builder(config: &str) -> PostgresStoreBuilder {
        PostgresStoreBuilder {
            config: config.to_owned(),
            timeouts: Timeouts {
                connect: DEFAULT_CONNECT_TIMEOUT,
                statement: DEFAULT_STATEMENT_TIMEOUT,
            },
            pool_size: DEFAULT_POOL_SIZE,
        }
    }

    /// Uses a connected client (its connection task already spawned) with the
    /// default statement timeout, and brings the schema to the latest version.
    /// Such a store has this one connection (operations take turns) and cannot
    /// reconnect: when the client's connection ends, a write-ahead's `COMMIT`
    /// answer is lost, or a write-ahead is cut off mid-transaction (its future
    /// dropped, e.g. at its send's deadline), every later operation fails.
    ///
    /// # Errors
    /// [`JournalError::Storage`] or [`JournalError::Schema`] when the migration
    /// fails.
    pub async fn from_client(client: Client) -> Result<Self, JournalError> {
        let timeouts = Timeouts {
            connect: DEFAULT_CONNECT_TIMEOUT,
            statement: DEFAULT_STATEMENT_TIMEOUT,
        };
        let mut client = client;
        let statements = prepare(&mut client, timeouts).await?;
        let live = Live { client, statements };
        Ok(Self {
            pool: std::sync::Arc::new(Pool::around(live, timeouts)),
        })
    }

    /// Runs one operation bounded by the statement timeout.
    async fn bounded<T>(
        &self,
        work: impl Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, JournalError> {
        bounded(self.pool.timeouts(), work).await
    }
}

/// Runs one step bounded by the statement timeout (plus a second); a statement
/// the server cancelled (`statement_timeout`) is a timeout too.
async fn bounded<T>(
    timeouts: Timeouts,
    work: impl Future<Output = Result<T, tokio_postgres::Error>>,
) -> Result<T, JournalError> {
    let timed_out = JournalError::Timeout {
        operation: "statement",
        after: timeouts.statement,
    };
    match tokio::time::timeout(timeouts.operation(), work).await {
        Err(_) => Err(timed_out),
        Ok(Err(error)) if error.code() == Some(&SqlState::QUERY_CANCELED) => Err(timed_out),
        Ok(result) => result.map_err(driver),
    }
}

fn raw_row(row: &Row) -> Result<RawRow, JournalError> {
    let read = || -> Result<RawRow, tokio_postgres::Error> { Ok(read_row!(row, try_get)) };
    read().map_err(driver)
}

/// A row returned by a claim (`RETURNING t.*, clock.ms AS now_ms`).
fn claimed(row: &Row, worker: &Worker) -> Result<Claimed, JournalError> {
    let record = raw_row(row)?.into_record()?;
    let now: i64 = row.try_get("now_ms").map_err(driver)?;
    Ok(Claimed {
        lease: Lease {
            key: record.key.clone(),
            owner: worker.name().to_owned(),
            fence: record.fence,
            until: record.lease_until.unwrap_or_else(|| from_millis(now)),
        },
        record,
        now: from_millis(now),
    })
}

fn records(rows: &[Row]) -> Result<Vec<IntentRecord>, JournalError> {
    rows.iter().map(|row| raw_row(row)?.into_record()).collect()
}

impl JournalStore for PostgresStore {
    fn write_ahead<'a>(
        &'a self,
        intent: &'a NewIntent,
        worker: &'a Worker,
        lease: Duration,
    ) -> StoreFuture<'a, Lease> {
        // Fixed now: the intent's deadline counts from its send, just before.
        let limit = limit::Limit::for_deadline(intent.deadline);
        Box::pin(async move {
            let written = write_ahead::write_ahead(
                &self.pool,
                &intent.key,
                &[
                    &intent.key,
                    &intent.key_on_wire,
                    &intent.method.as_str(),
                    &intent.url,
                    &headers::encode(&intent.headers),
                    &intent.body,
                    &intent.deadline.map(duration_millis),
                    &duration_millis(intent.retention),
                    &worker.name(),
                    &worker.incarnation(),
                    &duration_millis(lease),
                    &InFlight.as_str(),
                ],
                limit,
            )
            .await;
            if matches!(&written, Err(error) if error.is_commit_unknown()) {
                // The first run's lease: fence 1.
                let leases = vec![(intent.key.clone(), 1)];
                unsent::end_leases_once_back(Arc::clone(&self.pool), leases, worker, lease);
            }
            let until = written?.ok_or_else(|| JournalError::duplicate_key(&intent.key))?;
            Ok(Lease {
                key: intent.key.clone(),
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
        Box::pin(async move {
            let live = self.pool.get().await?;
            // When the answer to `COMMIT` is lost, the pass sends none of the
            // rows it may hold (`claiming.rs`).
            let (name, incarnation) = (worker.name(), worker.incarnation());
            let (unknown, in_flight, queued) =
                (Unknown.as_str(), InFlight.as_str(), Queued.as_str());
            let (lease_ms, limit) = (duration_millis(lease), sql_limit(limit));
            let params: [&(dyn tokio_postgres::types::ToSql + Sync); 7] = [
                &name,
                &incarnation,
                &unknown,
                &in_flight,
                &lease_ms,
                &limit,
                &queued,
            ];
            let claim = live.statements.claim.clone();
            self.claim_in_transaction(live, &claim, &params, worker, lease)
                .await
        })
    }

    fn take_over<'a>(
        &'a self,
        key: &'a str,
        worker: &'a Worker,
        lease: Duration,
    ) -> StoreFuture<'a, Option<Claimed>> {
        Box::pin(async move {
            let live = self.pool.get().await?;
            let (unknown, in_flight, queued) =
                (Unknown.as_str(), InFlight.as_str(), Queued.as_str());
            let lease_ms = duration_millis(lease);
            let params: [&(dyn tokio_postgres::types::ToSql + Sync); 7] = [
                &worker.name(),
                &worker.incarnation(),
                &unknown,
                &in_flight,
                &lease_ms,
                &key,
                &queued,
            ];
            // When the answer to `COMMIT` is lost, the join sends nothing and the
            // lease it may hold ends once the database is back (`claiming.rs`).
            let take_over = live.statements.take_over.clone();
            let taken = self
                .claim_in_transaction(live, &take_over, &params, worker, lease)
                .await?;
            Ok(taken.into_iter().next())
        })
    }

    fn record<'a>(&'a self, lease: &'a Lease, outcome: &'a Outcome) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let (status, locator, detail, due_in) = outcome.columns();
            let live = self.pool.get().await?;
            let updated = self
                .bounded(live.client.execute(
                    &live.statements.record,
                    &[
                        &outcome.state().as_str(),
                        &status.map(i32::from),
                        &locator,
                        &detail,
                        &due_in.map(duration_millis),
                        &lease.key,
                        &lease.fence,
                        &InFlight.as_str(),
                        &outcome.runs_given_back(),
                    ],
                ))
                .await?;
            if updated == 0 {
                return Err(JournalError::lease_lost(&lease.key, lease.fence));
            }
            Ok(())
        })
    }

    fn get<'a>(&'a self, key: &'a str) -> StoreFuture<'a, Option<IntentRecord>> {
        Box::pin(async move {
            let live = self.pool.get().await?;
            let rows = self
                .bounded(live.client.query(&live.statements.get, &[&key]))
                .await?;
            Ok(records(&rows)?.into_iter().next())
        })
    }

    fn list<'a>(
        &'a self,
        state: IntentState,
        after: Option<&'a ListCursor>,
        limit: usize,
    ) -> StoreFuture<'a, Vec<IntentRecord>> {
        Box::pin(async move {
            let start = ListCursor::start();
            let after = after.unwrap_or(&start);
            let live = self.pool.get().await?;
            let rows = self
                .bounded(live.client.query(
                    &live.statements.list,
                    &[
                        &state.as_str(),
                        &after.created_ms,
                        &after.key,
                        &sql_limit(limit),
                    ],
                ))
                .await?;
            records(&rows)
        })
    }

    fn backlog<'a>(&'a self, worker: &'a Worker) -> StoreFuture<'a, Backlog> {
        Box::pin(async move {
            let live = self.pool.get().await?;
            let row = self
                .bounded(live.client.query_one(
                    &live.statements.backlog,
                    &[
                        &worker.name(),
                        &worker.incarnation(),
                        &Unknown.as_str(),
                        &InFlight.as_str(),
                        &Queued.as_str(),
                    ],
                ))
                .await?;
            let read = || -> Result<Backlog, tokio_postgres::Error> {
                Ok(Backlog {
                    due: count(row.try_get("due")?),
                    leased: count(row.try_get("leased")?),
                    leased_until: row
                        .try_get::<_, Option<i64>>("leased_until_ms")?
                        .map(from_millis),
                    waiting: count(row.try_get("waiting")?),
                    next_due: row
                        .try_get::<_, Option<i64>>("next_due_ms")?
                        .map(from_millis),
                    now: from_millis(row.try_get("now_ms")?),
                })
            };
            read().map_err(driver)
        })
    }

    fn abandon<'a>(&'a self, key: &'a str, reason: &'a str) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let live = self.pool.get().await?;
            let updated = self
                .bounded(live.client.execute(
                    &live.statements.abandon,
                    &[
                        &reason,
                        &key,
                        &Abandoned.as_str(),
                        &InFlight.as_str(),
                        &Unknown.as_str(),
                        &Queued.as_str(),
                    ],
                ))
                .await?;
            Ok(updated > 0)
        })
    }

    fn unacknowledged(&self, limit: usize) -> StoreFuture<'_, Vec<IntentRecord>> {
        Box::pin(self.unacknowledged_page(limit))
    }

    fn acknowledge<'a>(&'a self, key: &'a str) -> StoreFuture<'a, bool> {
        Box::pin(self.acknowledge_now(key))
    }

    fn announce(&self) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            let live = self.pool.get().await?;
            self.bounded(live.client.execute(&live.statements.announce, &[]))
                .await?;
            Ok(())
        })
    }

    fn listen(&self, wake: Arc<Notify>) -> Option<Listening> {
        let config = self.pool.config()?.clone();
        Some(Listening::new(listen::spawn(
            config,
            self.pool.timeouts(),
            wake,
        )))
    }

    fn prune<'a>(&'a self, older_than: Duration) -> StoreFuture<'a, u64> {
        Box::pin(async move {
            let live = self.pool.get().await?;
            self.bounded(live.client.execute(
                &live.statements.prune,
                &[
                    &duration_millis(older_than),
                    &Succeeded.as_str(),
                    &Failed.as_str(),
                    &Abandoned.as_str(),
                ],
            ))
            .await
        })
    }
}
