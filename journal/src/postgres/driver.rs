//! tokio-postgres errors with the server's message on their top line.

use std::fmt;

use crate::error::JournalError;

/// A driver error that prints the server's message (`ERROR: permission denied
/// for schema app`); tokio-postgres prints only "db error" and keeps it in the
/// source chain.
#[derive(Debug)]
struct Driver(tokio_postgres::Error);

impl fmt::Display for Driver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&Self::message(&self.0))
    }
}

impl std::error::Error for Driver {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// A failed PostgreSQL call as [`JournalError::Storage`].
pub(super) fn driver(error: tokio_postgres::Error) -> JournalError {
    JournalError::Storage(Box::new(Driver(error)))
}

/// The server's message, or the driver's when the server said nothing.
pub(super) fn message(error: &tokio_postgres::Error) -> String {
    Driver::message(error)
}

impl Driver {
    fn message(error: &tokio_postgres::Error) -> String {
        match error.as_db_error() {
            Some(db) => db.to_string(),
            None => error.to_string(),
        }
    }
}
