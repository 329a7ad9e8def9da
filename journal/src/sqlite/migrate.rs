//! Applies the SQLite migrations under the database's write lock.

use rusqlite::{Connection, TransactionBehavior};

use crate::error::JournalError;
use crate::migrations::{pending, SQLITE};

/// Brings the schema to the latest version: `BEGIN IMMEDIATE` takes the write
/// lock (a second process opening the file at the same time waits on the busy
/// timeout, then finds the work done), the pending steps run in order, and
/// `PRAGMA user_version` records the version — all in one transaction.
pub(super) fn migrate(conn: &mut Connection) -> Result<u32, JournalError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(JournalError::storage)?;
    let current: u32 = tx
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .map_err(JournalError::storage)?;
    let steps = pending(SQLITE, current)?;
    for step in steps {
        tx.execute_batch(step.sql)
            .map_err(|error| JournalError::Schema(format!("{}: {error}", step.name)))?;
    }
    let version = steps.last().map_or(current, |step| step.version);
    tx.pragma_update(None, "user_version", version)
        .map_err(JournalError::storage)?;
    tx.commit().map_err(JournalError::storage)?;
    Ok(version)
}
