//! tokio-postgres errors with the server's message on their top line.

use std::fmt;

/// A driver error that prints the server's message (`ERROR: permission denied
/// for schema app`); tokio-postgres prints only "db error" and keeps the
/// message in the source chain.
#[derive(Debug)]
pub struct DriverError(tokio_postgres::Error);

impl DriverError {
    /// Wraps the driver's error.
    pub fn new(error: tokio_postgres::Error) -> Self {
        Self(error)
    }

    /// The driver's error.
    pub fn get_ref(&self) -> &tokio_postgres::Error {
        &self.0
    }
}

impl From<tokio_postgres::Error> for DriverError {
    fn from(error: tokio_postgres::Error) -> Self {
        Self(error)
    }
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&message(&self.0))
    }
}

impl std::error::Error for DriverError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// The server's message, or the driver's own when the server said nothing (a
/// connection refused, a closed connection).
pub fn message(error: &tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => db.to_string(),
        None => error.to_string(),
    }
}
