//! The enqueue on a rusqlite connection (feature `sqlite`).

use rusqlite::params;

use super::statement::{Columns, SQLITE};
use super::OutboxIntent;
use crate::error::JournalError;
use crate::record::to_millis;

impl OutboxIntent {
    /// Enqueues the intent with one `INSERT` on `conn` — pass your
    /// `rusqlite::Transaction` (it derefs to a `Connection`) on the journal's
    /// own file, so the intent commits or rolls back with your changes. Returns
    /// the key.
    ///
    /// Give your connection a busy timeout: the journal's store writes to the
    /// same file.
    ///
    /// # Errors
    /// [`JournalError::DuplicateKey`] when the key is already journaled (no row
    /// was inserted; the transaction is still usable); [`JournalError::Storage`]
    /// when the statement fails (e.g. the file has no journal table).
    pub fn enqueue_rusqlite(&self, conn: &rusqlite::Connection) -> Result<&str, JournalError> {
        let c = Columns::of(&self.intent);
        let rows = conn
            .prepare_cached(SQLITE)
            .and_then(|mut insert| {
                insert.execute(params![
                    c.key,
                    c.key_on_wire,
                    c.method,
                    c.url,
                    c.headers,
                    c.body,
                    c.deadline_ms,
                    c.retention_ms,
                    c.state,
                    to_millis(std::time::SystemTime::now()),
                ])
            })
            .map_err(JournalError::storage)?;
        self.inserted(u64::try_from(rows).unwrap_or(u64::MAX))
    }
}
