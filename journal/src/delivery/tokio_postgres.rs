//! The acknowledgement on a tokio-postgres client or transaction (feature
//! `postgres`).

use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::GenericClient;

use super::statement::{POSTGRES_ACKNOWLEDGE, TERMINAL};
use crate::error::JournalError;
use crate::journal::Journal;
use crate::postgres_error::driver;

impl Journal {
    /// Acknowledges the result of intent `key` with one statement on `client`
    /// — pass your `tokio_postgres::Transaction` on the journal's database, so
    /// the acknowledgement commits or rolls back with your update. Returns
    /// `true` when this acknowledged it: apply the result then, and only then.
    /// `false`: it was acknowledged already — apply nothing. Two transactions
    /// acknowledging at once take turns on the row: the second sees `false`
    /// once the first commits (under `READ COMMITTED`, the default; a stricter
    /// isolation level fails the second with a serialization error instead).
    ///
    /// The statement goes with its parameter types (`query_typed`): one round
    /// trip, no separate prepare.
    ///
    /// # Errors
    /// [`JournalError::UnknownKey`] when no intent has this key;
    /// [`JournalError::NotTerminal`] when it has no result yet (nothing was
    /// changed; the transaction is still usable); [`JournalError::Storage`]
    /// when the statement fails.
    pub async fn acknowledge_tokio_postgres<C>(
        &self,
        client: &C,
        key: &str,
    ) -> Result<bool, JournalError>
    where
        C: GenericClient + Sync,
    {
        let [succeeded, failed, abandoned] = TERMINAL.map(|state| state.as_str());
        let params: [(&(dyn ToSql + Sync), Type); 4] = [
            (&key, Type::TEXT),
            (&succeeded, Type::TEXT),
            (&failed, Type::TEXT),
            (&abandoned, Type::TEXT),
        ];
        let rows = client
            .query_typed(POSTGRES_ACKNOWLEDGE, &params)
            .await
            .map_err(driver)?;
        let row = rows
            .first()
            .ok_or_else(|| JournalError::storage("the acknowledgement returned no row"))?;
        let state: Option<&str> = row.try_get("state").map_err(driver)?;
        let first: bool = row.try_get("first").map_err(driver)?;
        super::settle_stored(key, first, state)
    }
}
