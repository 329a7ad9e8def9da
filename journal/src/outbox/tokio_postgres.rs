//! The enqueue on a tokio-postgres client or transaction (feature `postgres`).

use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::GenericClient;

use super::statement::{Columns, POSTGRES};
use super::OutboxIntent;
use crate::error::JournalError;
use crate::postgres_error::driver;

impl OutboxIntent {
    /// Enqueues the intent with one `INSERT` on `client` — pass your
    /// `tokio_postgres::Transaction`, on the journal's database, so the intent
    /// commits or rolls back with your changes. Returns the key.
    ///
    /// The statement goes with its parameter types (`query_typed`): one round
    /// trip, no separate prepare.
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
        let params: [(&(dyn ToSql + Sync), Type); 9] = [
            (&c.key, Type::TEXT),
            (&c.key_on_wire, Type::BOOL),
            (&c.method, Type::TEXT),
            (&c.url, Type::TEXT),
            (&c.headers, Type::BYTEA),
            (&c.body, Type::BYTEA),
            (&c.deadline_ms, Type::INT8),
            (&c.retention_ms, Type::INT8),
            (&c.state, Type::TEXT),
        ];
        let inserted = client
            .query_typed(POSTGRES, &params)
            .await
            .map_err(driver)?;
        self.inserted(u64::try_from(inserted.len()).unwrap_or(u64::MAX))
    }
}
