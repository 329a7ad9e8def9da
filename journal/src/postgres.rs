//! The fleet backend: one PostgreSQL table shared by many workers.
//!
//! Claims are one `UPDATE … FROM (SELECT … FOR UPDATE SKIP LOCKED)` statement, so
//! concurrent workers take disjoint intents without waiting on each other, and
//! every timestamp (lease ends, due times, retention) comes from the database's
//! clock, so workers whose clocks drift still agree on when a lease has expired.

use std::sync::Arc;
use std::time::Duration;

use tokio_postgres::{Client, NoTls, Row};

use crate::error::JournalError;
use crate::headers;
use crate::record::{
    duration_millis, from_millis, Claimed, IntentRecord, Lease, NewIntent, Outcome,
};
use crate::row::{column_list, sql_limit, RawRow};
use crate::state::IntentState;
use crate::store::{JournalStore, StoreFuture};

/// The database's clock, in milliseconds since the Unix epoch.
const NOW_MS: &str = "(extract(epoch FROM now()) * 1000)::bigint";

/// Serialises concurrent migrations from several workers (an arbitrary constant).
const MIGRATION_LOCK: i64 = 0x7265_7177_6a6e_6c01;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS journal_intents (
    key              TEXT PRIMARY KEY,
    key_on_wire      BOOLEAN NOT NULL,
    method           TEXT NOT NULL,
    url              TEXT NOT NULL,
    headers          BYTEA NOT NULL,
    body             BYTEA NOT NULL,
    deadline_ms      BIGINT,
    retention_end_ms BIGINT NOT NULL,
    state            TEXT NOT NULL
        CHECK (state IN ('in_flight', 'succeeded', 'failed', 'unknown', 'abandoned')),
    owner            TEXT,
    lease_until_ms   BIGINT,
    fence            BIGINT NOT NULL,
    runs             BIGINT NOT NULL,
    due_at_ms        BIGINT,
    status           INTEGER,
    locator          TEXT,
    detail           TEXT,
    created_ms       BIGINT NOT NULL,
    updated_ms       BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS journal_intents_unknown_due
    ON journal_intents (due_at_ms) WHERE state = 'unknown';
CREATE INDEX IF NOT EXISTS journal_intents_in_flight_lease
    ON journal_intents (lease_until_ms) WHERE state = 'in_flight';
";

/// A journal in a PostgreSQL table (`journal_intents` in the connection's
/// `search_path`), shared by a fleet of workers.
///
/// Clones share the connection (tokio-postgres pipelines concurrent queries).
#[derive(Clone)]
pub struct PostgresStore {
    client: Arc<Client>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore").finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Connects without TLS (e.g. `host=127.0.0.1 port=5432 user=app dbname=app`
    /// or a `postgresql://` URL) and creates the table if missing. For TLS, connect
    /// with your own connector and use [`from_client`](Self::from_client).
    ///
    /// # Errors
    /// [`JournalError::Storage`] when the connection or the migration fails.
    pub async fn connect(config: &str) -> Result<Self, JournalError> {
        let (client, connection) = tokio_postgres::connect(config, NoTls)
            .await
            .map_err(JournalError::storage)?;
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::warn!(%error, "journal: PostgreSQL connection ended");
            }
        });
        Self::from_client(client).await
    }

    /// Uses a connected client (its connection task already spawned) and creates
    /// the table if missing.
    ///
    /// # Errors
    /// [`JournalError::Storage`] when the migration fails.
    pub async fn from_client(client: Client) -> Result<Self, JournalError> {
        client
            .batch_execute(&format!(
                "BEGIN; SELECT pg_advisory_xact_lock({MIGRATION_LOCK}); {SCHEMA} COMMIT;"
            ))
            .await
            .map_err(JournalError::storage)?;
        Ok(Self {
            client: Arc::new(client),
        })
    }
}

fn read_row(row: &Row) -> Result<RawRow, JournalError> {
    let read = || -> Result<RawRow, tokio_postgres::Error> {
        Ok(RawRow {
            key: row.try_get(0)?,
            key_on_wire: row.try_get(1)?,
            method: row.try_get(2)?,
            url: row.try_get(3)?,
            headers: row.try_get(4)?,
            body: row.try_get(5)?,
            deadline_ms: row.try_get(6)?,
            retention_end_ms: row.try_get(7)?,
            state: row.try_get(8)?,
            owner: row.try_get(9)?,
            lease_until_ms: row.try_get(10)?,
            fence: row.try_get(11)?,
            runs: row.try_get(12)?,
            due_at_ms: row.try_get(13)?,
            status: row.try_get::<_, Option<i32>>(14)?.map(i64::from),
            locator: row.try_get(15)?,
            detail: row.try_get(16)?,
            created_ms: row.try_get(17)?,
            updated_ms: row.try_get(18)?,
        })
    };
    read().map_err(JournalError::storage)
}

fn records(rows: &[Row]) -> Result<Vec<IntentRecord>, JournalError> {
    rows.iter()
        .map(|row| read_row(row)?.into_record())
        .collect()
}

impl JournalStore for PostgresStore {
    fn write_ahead<'a>(
        &'a self,
        intent: &'a NewIntent,
        owner: &'a str,
        lease: Duration,
    ) -> StoreFuture<'a, Lease> {
        Box::pin(async move {
            let sql = format!(
                "INSERT INTO journal_intents (key, key_on_wire, method, url, headers, body,
                    deadline_ms, retention_end_ms, state, owner, lease_until_ms, fence, runs,
                    created_ms, updated_ms)
                 SELECT $1, $2, $3, $4, $5, $6, $7, c.ms + $8, 'in_flight', $9, c.ms + $10, 1, 1,
                        c.ms, c.ms
                 FROM (SELECT {NOW_MS} AS ms) c
                 ON CONFLICT (key) DO NOTHING
                 RETURNING lease_until_ms"
            );
            let rows = self
                .client
                .query(
                    &sql,
                    &[
                        &intent.key,
                        &intent.key_on_wire,
                        &intent.method.as_str(),
                        &intent.url,
                        &headers::encode(&intent.headers),
                        &intent.body,
                        &intent.deadline.map(duration_millis),
                        &duration_millis(intent.retention),
                        &owner,
                        &duration_millis(lease),
                    ],
                )
                .await
                .map_err(JournalError::storage)?;
            let row = rows
                .first()
                .ok_or_else(|| JournalError::duplicate_key(&intent.key))?;
            let until: i64 = row.try_get(0).map_err(JournalError::storage)?;
            Ok(Lease {
                key: intent.key.clone(),
                owner: owner.to_owned(),
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
        Box::pin(async move {
            let sql = format!(
                "WITH clock AS (SELECT {NOW_MS} AS ms),
                 due AS (
                     SELECT i.key FROM journal_intents i, clock
                     WHERE (i.state = 'unknown' AND i.due_at_ms <= clock.ms)
                        OR (i.state = 'in_flight' AND i.lease_until_ms <= clock.ms)
                     ORDER BY COALESCE(i.due_at_ms, i.lease_until_ms), i.created_ms
                     LIMIT $3
                     FOR UPDATE OF i SKIP LOCKED)
                 UPDATE journal_intents t
                 SET state = 'in_flight', owner = $1, lease_until_ms = clock.ms + $2,
                     fence = t.fence + 1, runs = t.runs + 1, due_at_ms = NULL,
                     updated_ms = clock.ms
                 FROM due, clock
                 WHERE t.key = due.key
                 RETURNING {}, clock.ms",
                column_list("t.")
            );
            let rows = self
                .client
                .query(&sql, &[&owner, &duration_millis(lease), &sql_limit(limit)])
                .await
                .map_err(JournalError::storage)?;
            rows.iter()
                .map(|row| {
                    let record = read_row(row)?.into_record()?;
                    let now: i64 = row.try_get(19).map_err(JournalError::storage)?;
                    Ok(Claimed {
                        lease: Lease {
                            key: record.key.clone(),
                            owner: owner.to_owned(),
                            fence: record.fence,
                            until: record.lease_until.unwrap_or_else(|| from_millis(now)),
                        },
                        record,
                        now: from_millis(now),
                    })
                })
                .collect()
        })
    }

    fn record<'a>(&'a self, lease: &'a Lease, outcome: &'a Outcome) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let (status, locator, detail, due_in) = outcome.columns();
            let sql = format!(
                "UPDATE journal_intents
                 SET state = $1, status = COALESCE($2, status), locator = $3, detail = $4,
                     due_at_ms = {NOW_MS} + $5, lease_until_ms = NULL, updated_ms = {NOW_MS}
                 WHERE key = $6 AND fence = $7 AND state = 'in_flight'"
            );
            let updated = self
                .client
                .execute(
                    &sql,
                    &[
                        &outcome.state().as_str(),
                        &status.map(i32::from),
                        &locator,
                        &detail,
                        &due_in.map(duration_millis),
                        &lease.key,
                        &lease.fence,
                    ],
                )
                .await
                .map_err(JournalError::storage)?;
            if updated == 0 {
                return Err(JournalError::lease_lost(&lease.key, lease.fence));
            }
            Ok(())
        })
    }

    fn get<'a>(&'a self, key: &'a str) -> StoreFuture<'a, Option<IntentRecord>> {
        Box::pin(async move {
            let sql = format!(
                "SELECT {} FROM journal_intents WHERE key = $1",
                column_list("")
            );
            let rows = self
                .client
                .query(&sql, &[&key])
                .await
                .map_err(JournalError::storage)?;
            Ok(records(&rows)?.into_iter().next())
        })
    }

    fn list<'a>(&'a self, state: IntentState, limit: usize) -> StoreFuture<'a, Vec<IntentRecord>> {
        Box::pin(async move {
            let sql = format!(
                "SELECT {} FROM journal_intents WHERE state = $1
                 ORDER BY created_ms, key LIMIT $2",
                column_list("")
            );
            let rows = self
                .client
                .query(&sql, &[&state.as_str(), &sql_limit(limit)])
                .await
                .map_err(JournalError::storage)?;
            records(&rows)
        })
    }

    fn abandon<'a>(&'a self, key: &'a str, reason: &'a str) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let sql = format!(
                "UPDATE journal_intents
                 SET state = 'abandoned', detail = $1, fence = fence + 1,
                     lease_until_ms = NULL, due_at_ms = NULL, updated_ms = {NOW_MS}
                 WHERE key = $2 AND state IN ('in_flight', 'unknown')"
            );
            let updated = self
                .client
                .execute(&sql, &[&reason, &key])
                .await
                .map_err(JournalError::storage)?;
            Ok(updated > 0)
        })
    }

    fn prune<'a>(&'a self, older_than: Duration) -> StoreFuture<'a, u64> {
        Box::pin(async move {
            let sql = format!(
                "DELETE FROM journal_intents
                 WHERE state IN ('succeeded', 'failed', 'abandoned')
                   AND updated_ms <= {NOW_MS} - $1"
            );
            self.client
                .execute(&sql, &[&duration_millis(older_than)])
                .await
                .map_err(JournalError::storage)
        })
    }
}
