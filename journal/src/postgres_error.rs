//! Driver errors as the journal's, with the server's message on their top line
//! (the storage crate's [`DriverError`]).

use idempotency_storage::postgres::DriverError;

use crate::error::JournalError;

/// A failed PostgreSQL call as [`JournalError::Storage`].
pub(crate) fn driver(error: tokio_postgres::Error) -> JournalError {
    JournalError::Storage(Box::new(DriverError::new(error)))
}
