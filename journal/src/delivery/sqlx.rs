//! The acknowledgement on an sqlx PostgreSQL connection or transaction (feature
//! `sqlx`).

use sqlx::Row;

use super::statement::{POSTGRES_ACKNOWLEDGE, TERMINAL};
use crate::error::JournalError;
use crate::journal::Journal;

impl Journal {
    /// Acknowledges the result of intent `key` with one statement on `conn` —
    /// pass `&mut *tx` for your `sqlx::Transaction<'_, Postgres>` on the
    /// journal's database, so the acknowledgement commits or rolls back with
    /// your update. Returns `true` when this acknowledged it: apply the result
    /// then, and only then (see
    /// [`acknowledge_tokio_postgres`](Self::acknowledge_tokio_postgres)).
    ///
    /// # Errors
    /// [`JournalError::UnknownKey`] when no intent has this key;
    /// [`JournalError::NotTerminal`] when it has no result yet (nothing was
    /// changed; the transaction is still usable); [`JournalError::Storage`]
    /// when the statement fails.
    pub async fn acknowledge_sqlx(
        &self,
        conn: &mut sqlx::PgConnection,
        key: &str,
    ) -> Result<bool, JournalError> {
        let [succeeded, failed, abandoned] = TERMINAL.map(|state| state.as_str());
        let row = sqlx::query(POSTGRES_ACKNOWLEDGE)
            .bind(key)
            .bind(succeeded)
            .bind(failed)
            .bind(abandoned)
            .fetch_one(conn)
            .await
            .map_err(JournalError::storage)?;
        let state: Option<String> = row.try_get("state").map_err(JournalError::storage)?;
        let first: bool = row.try_get("first").map_err(JournalError::storage)?;
        super::settle_stored(key, first, state.as_deref())
    }
}
