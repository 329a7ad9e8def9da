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
//!
//! Every wait before `COMMIT` ends by the intent's own limit ([`Limit`]), so a
//! full pool or a held lock ends in the journal's error naming what it waited
//! for (nothing written: refused) rather than in the client cutting the write
//! off. A write cut off all the same (the caller's future dropped) never
//! leaves its transaction open on a pooled connection: the connection is
//! closed, and the server rolls the transaction back.

use idempotency_storage::postgres::DriverError;
use tokio_postgres::types::ToSql;

use super::limit::{within, Limit};
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
    limit: Limit,
) -> Result<Option<i64>, JournalError> {
    let conn = within(limit, "wait for a pooled connection", pool.get()).await?;
    let conn = InTransaction(Some(conn));
    let inserted = {
        let begin = conn.client().batch_execute("BEGIN");
        let insert = conn.client().query(&conn.statements().write_ahead, params);
        // Pipelined: one round trip for both.
        let both = bounded(pool, async { tokio::try_join!(begin, insert) });
        within(limit, "write-ahead statement", both).await
    };
    // On an error the guard closes the connection: mid-transaction, never reused.
    let rows = inserted?.1;
    let Some(row) = rows.first() else {
        bounded(pool, conn.client().batch_execute("ROLLBACK")).await?;
        conn.finished();
        return Ok(None);
    };
    let read = || -> Result<(i64, String), tokio_postgres::Error> {
        Ok((row.try_get("lease_until_ms")?, row.try_get("xid")?))
    };
    let (until, xid) = read().map_err(driver)?;
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

/// Sends `COMMIT`; on any failure the connection is closed (its session is in
/// an unknown state) and the failure returned for the status check.
async fn commit(pool: &Pool, conn: InTransaction<'_>) -> Result<(), BoxError> {
    let wait = pool.timeouts().operation();
    match tokio::time::timeout(wait, conn.client().batch_execute("COMMIT")).await {
        Ok(Ok(())) => {
            conn.finished();
            Ok(())
        }
        Ok(Err(error)) => Err(Box::new(DriverError::new(error))),
        Err(_) => Err(format!("no answer to COMMIT within {wait:?}").into()),
    }
}

/// A connection inside the write-ahead's transaction: closed when dropped
/// before the transaction ended (an error, or the caller's future dropped
/// mid-statement), so no later operation runs inside a transaction it did not
/// open, and the server rolls this one back.
struct InTransaction<'a>(Option<Pooled<'a>>);

impl<'a> InTransaction<'a> {
    fn client(&self) -> &tokio_postgres::Client {
        &self.0.as_ref().expect("present until taken").client
    }

    fn statements(&self) -> &super::queries::Statements {
        &self.0.as_ref().expect("present until taken").statements
    }

    /// The transaction ended: the connection may be reused.
    fn finished(mut self) {
        drop(self.0.take());
    }
}

impl Drop for InTransaction<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.0.take() {
            conn.discard();
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
