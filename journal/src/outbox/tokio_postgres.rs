//! The enqueue on a tokio-postgres client or transaction (feature `postgres`).

use tokio_postgres::GenericClient;

use super::statement::{Columns, POSTGRES};
use super::OutboxIntent;
use crate::error::JournalError;
use crate::postgres::driver;

impl OutboxIntent {
    /// Enqueues the intent with one `INSERT` on `client` — pass your
    /// `tokio_postgres::Transaction`, on the journal's database, so the intent
    /// commits or rolls back with your changes. Returns the key.
    ///
    /// # Errors
    /// [`JournalError::DuplicateKey`] when the key is already journaled (no row
    /// was inserted; the transaction is still usable); [`JournalError::Storage`]
    /// when the statement fails.
    pub async fn enqueue_tokio_postgres<C>(&self, client: &C) -> Result<&str, JournalError>
    where
        C: GenericClient + Sync,
    {
        let c = Columns::of(&self.intent);
        let rows = client
            .execute(
                POSTGRES,
                &[
                    &c.key,
                    &c.key_on_wire,
                    &c.method,
                    &c.url,
                    &c.headers,
                    &c.body,
                    &c.deadline_ms,
                    &c.retention_ms,
                    &c.state,
                ],
            )
            .await
            .map_err(driver)?;
        self.inserted(rows)
    }
}
