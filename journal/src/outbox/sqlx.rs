//! The enqueue on an sqlx PostgreSQL connection or transaction (feature `sqlx`).

use super::statement::{Columns, POSTGRES};
use super::OutboxIntent;
use crate::error::JournalError;

impl OutboxIntent {
    /// Enqueues the intent with one `INSERT` on `conn` — pass `&mut *tx` for
    /// your `sqlx::Transaction<'_, Postgres>`, on the journal's database, so the
    /// intent commits or rolls back with your changes. Returns the key.
    ///
    /// # Errors
    /// [`JournalError::DuplicateKey`] when the key is already journaled (no row
    /// was inserted; the transaction is still usable); [`JournalError::Storage`]
    /// when the statement fails.
    pub async fn enqueue_sqlx(&self, conn: &mut sqlx::PgConnection) -> Result<&str, JournalError> {
        let c = Columns::of(&self.intent);
        let done = sqlx::query(POSTGRES)
            .bind(c.key)
            .bind(c.key_on_wire)
            .bind(c.method)
            .bind(c.url)
            .bind(c.headers)
            .bind(c.body)
            .bind(c.deadline_ms)
            .bind(c.retention_ms)
            .bind(c.state)
            .execute(conn)
            .await
            .map_err(JournalError::storage)?;
        self.inserted(done.rows_affected())
    }
}
