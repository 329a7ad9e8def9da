//! tokio-postgres errors with their cause on their top line.

use std::error::Error as _;
use std::fmt;

use tokio_postgres::error::SqlState;

/// A driver error that prints what happened: the server's message and its
/// SQLSTATE (`ERROR: permission denied for schema app (SQLSTATE 42501)`), the
/// I/O failure under a lost connection, and in plain words a backend the server
/// terminated or a server that is starting up or shutting down.
/// tokio-postgres prints only "db error" or "error communicating with the
/// server" and keeps the cause in the source chain.
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

/// What happened, in one line: the server's message with its SQLSTATE (and
/// what a connection-ending one means), or the driver's own words followed by
/// their causes (a refused connect, a reset connection).
pub fn message(error: &tokio_postgres::Error) -> String {
    if let Some(db) = error.as_db_error() {
        let code = db.code();
        let meaning = match code {
            c if *c == SqlState::ADMIN_SHUTDOWN => {
                "the server terminated this connection's backend (pg_terminate_backend, or a \
                 shutdown): "
            }
            c if *c == SqlState::CRASH_SHUTDOWN => {
                "the server is restarting after a crash and ended this connection: "
            }
            c if *c == SqlState::CANNOT_CONNECT_NOW => {
                "the server is starting up or shutting down and accepts no connection yet: "
            }
            _ => "",
        };
        return format!("{meaning}{db} (SQLSTATE {})", code.code());
    }
    let mut text = error.to_string();
    if error.is_closed() {
        text.push_str(" (the server ended it, or the network cut it)");
    }
    let mut cause = error.source();
    while let Some(next) = cause {
        text.push_str(": ");
        text.push_str(&next.to_string());
        cause = next.source();
    }
    text
}
