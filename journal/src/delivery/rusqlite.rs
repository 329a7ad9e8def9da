//! The acknowledgement on a rusqlite connection (feature `sqlite`): the
//! application's transaction, or the SQLite store's own connection.

use rusqlite::{params, Connection, OptionalExtension};

pub(crate) use super::statement::SQLITE_UNACKNOWLEDGED as UNACKNOWLEDGED;
use super::statement::{SQLITE_ACKNOWLEDGE, SQLITE_STATE, TERMINAL};
use crate::error::JournalError;
use crate::journal::Journal;
use crate::record::to_millis;

impl Journal {
    /// Acknowledges the result of intent `key` with the statements run on
    /// `conn` — pass your `rusqlite::Transaction` on the journal's own file, so
    /// the acknowledgement commits or rolls back with your update. Returns
    /// `true` when this acknowledged it: apply the result then, and only then.
    /// `false`: it was acknowledged already (by the fast path, an earlier
    /// catch-up, another process) — apply nothing.
    ///
    /// ```no_run
    /// # use reqwest_resilience_journal::rusqlite;
    /// # fn run(journal: &reqwest_resilience_journal::Journal, conn: &mut rusqlite::Connection, key: &str) -> Result<(), Box<dyn std::error::Error>> {
    /// let tx = conn.transaction()?;
    /// if journal.acknowledge_rusqlite(&tx, key)? {
    ///     tx.execute("UPDATE orders SET paid = 1 WHERE payment_key = ?1", [key])?;
    /// }
    /// tx.commit()?; // the order is paid exactly when the result is acknowledged
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`JournalError::UnknownKey`] when no intent has this key;
    /// [`JournalError::NotTerminal`] when it has no result yet (nothing was
    /// changed; the transaction is still usable); [`JournalError::Storage`]
    /// when a statement fails.
    pub fn acknowledge_rusqlite(&self, conn: &Connection, key: &str) -> Result<bool, JournalError> {
        acknowledge(conn, key, to_millis(std::time::SystemTime::now()))
    }
}

/// The acknowledgement's update and, when it changed nothing, the row's state,
/// under one savepoint: the update takes SQLite's write lock, so nobody changes
/// the row before the state is read, inside the caller's transaction or not.
pub(crate) fn acknowledge(conn: &Connection, key: &str, now: i64) -> Result<bool, JournalError> {
    conn.execute_batch("SAVEPOINT journal_acknowledge")
        .map_err(JournalError::storage)?;
    let read = || -> rusqlite::Result<(bool, Option<String>)> {
        let [succeeded, failed, abandoned] = TERMINAL.map(|state| state.as_str());
        let changed = conn
            .prepare_cached(SQLITE_ACKNOWLEDGE)?
            .execute(params![key, now, succeeded, failed, abandoned])?;
        if changed > 0 {
            return Ok((true, None));
        }
        let state = conn
            .prepare_cached(SQLITE_STATE)?
            .query_row([key], |row| row.get(0))
            .optional()?;
        Ok((false, state))
    };
    let read = read();
    let end = if read.is_ok() {
        "RELEASE journal_acknowledge"
    } else {
        "ROLLBACK TO journal_acknowledge; RELEASE journal_acknowledge"
    };
    conn.execute_batch(end).map_err(JournalError::storage)?;
    let (first, state) = read.map_err(JournalError::storage)?;
    super::settle_stored(key, first, state.as_deref())
}
