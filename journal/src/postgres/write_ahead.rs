//! The write-ahead as its own transaction, and what to do when the answer to its
//! `COMMIT` is lost.
//!
//! A timed-out or cut-off `COMMIT` is not a rolled-back one: the server may have
//! committed (or still be committing, waiting for a synchronous standby) when the
//! client stopped listening. A read-back by key proves nothing either — until the
//! commit completes, the row is invisible to every other session. So the
//! transaction's id is taken before `COMMIT`, and after a lost answer its status
//! is asked on another connection: `committed` and `aborted` are answers; `in
//! progress`, no status, or no connection leave the outcome unknown, and the
//! durable send says so ([`JournalError::CommitUnknown`]). Durability settings
//! are never touched to make a fault go away.

use tokio_postgres::types::ToSql;

use super::pool::{Pool, Pooled};
use super::queries::XACT_STATUS;
use crate::commit_verdict::{verdict, Verdict};
use crate::error::{BoxError, JournalError};
use crate::postgres_error::driver;

/// The inserted row's `lease_until_ms`, or `None` when the key was already
/// journaled (nothing inserted, the transaction rolled back).
///
/// # Errors
/// A failure before `COMMIT` was sent (nothing committed: the server aborts a
/// transaction that never commits); after it, as the verdict says.
pub(super) async fn write_ahead(
    pool: &Pool,
    key: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Option<i64>, JournalError> {
    let conn = pool.get().await?;
    let inserted = {
        let begin = conn.client.batch_execute("BEGIN");
        let insert = conn.client.query(&conn.statements.write_ahead, params);
        // Pipelined: one round trip for both.
        bounded(pool, async { tokio::try_join!(begin, insert) }).await
    };
    let rows = match inserted {
        Ok(((), rows)) => rows,
        Err(error) => {
            conn.discard(); // mid-transaction: never reuse
            return Err(error);
        }
    };
    let Some(row) = rows.first() else {
        return match bounded(pool, conn.client.batch_execute("ROLLBACK")).await {
            Ok(()) => Ok(None),
            Err(error) => {
                conn.discard();
                Err(error)
            }
        };
    };
    let read = || -> Result<(i64, String), tokio_postgres::Error> {
        Ok((row.try_get("lease_until_ms")?, row.try_get("xid")?))
    };
    let (until, xid) = match read() {
        Ok(read) => read,
        Err(error) => {
            conn.discard();
            return Err(driver(error));
        }
    };
    match commit(pool, conn).await {
        Ok(()) => Ok(Some(until)),
        Err(lost) => match status(pool, &xid).await {
            Verdict::Committed => {
                tracing::info!("journal: write-ahead committed though its answer was lost");
                Ok(Some(until))
            }
            Verdict::Aborted => Err(JournalError::storage(lost)),
            Verdict::Unknown => {
                tracing::warn!(error = %lost, "journal: write-ahead may have committed; outcome unknown");
                Err(JournalError::commit_unknown(key, lost))
            }
        },
    }
}

/// Sends `COMMIT`; on any failure the connection is dropped (its session is in
/// an unknown state) and the failure returned for the status check.
async fn commit(pool: &Pool, conn: Pooled<'_>) -> Result<(), BoxError> {
    let wait = pool.timeouts().operation();
    match tokio::time::timeout(wait, conn.client.batch_execute("COMMIT")).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => {
            conn.discard();
            Err(error.into())
        }
        Err(_) => {
            conn.discard();
            Err(format!("no answer to COMMIT within {wait:?}").into())
        }
    }
}

/// The transaction's status, asked on another connection.
async fn status(pool: &Pool, xid: &str) -> Verdict {
    let ask = async {
        let conn = pool.get().await?;
        let row = conn
            .client
            .query_one(XACT_STATUS, &[&xid])
            .await
            .map_err(driver)?;
        row.try_get::<_, Option<String>>(0).map_err(driver)
    };
    let wait = pool.timeouts().operation();
    match tokio::time::timeout(wait, ask).await {
        Ok(Ok(status)) => verdict(status.as_deref()),
        Ok(Err(error)) => {
            tracing::warn!(%error, "journal: could not ask a write-ahead's transaction status");
            Verdict::Unknown
        }
        Err(_) => {
            tracing::warn!(
                ?wait,
                "journal: no answer about a write-ahead's transaction status"
            );
            Verdict::Unknown
        }
    }
}

/// One step bounded by the operation timeout; a statement the server cancelled
/// (`statement_timeout`) is a timeout.
async fn bounded<T>(
    pool: &Pool,
    work: impl std::future::Future<Output = Result<T, tokio_postgres::Error>>,
) -> Result<T, JournalError> {
    super::bounded(pool.timeouts(), work).await
}
