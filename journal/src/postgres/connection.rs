//! One PostgreSQL connection: connected within the connect timeout, its session
//! set up, the schema migrated, the statements prepared.

use std::time::Duration;

use idempotency_storage::postgres::DURABLE_COMMITS;
use tokio_postgres::tls::NoTlsStream;
use tokio_postgres::{Client, Config, Connection, NoTls, Socket};

use super::migrate::migrate;
use super::queries::Statements;
use crate::error::JournalError;
use crate::postgres_error::driver;

/// A connected client with its statements prepared.
#[derive(Debug)]
pub(super) struct Live {
    pub(super) client: Client,
    pub(super) statements: Statements,
}

/// Connect and statement timeouts; see `PostgresStoreBuilder`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Timeouts {
    pub(super) connect: Duration,
    pub(super) statement: Duration,
}

impl Timeouts {
    /// How long the client waits for one operation: the server's own
    /// `statement_timeout` plus a second, so the server aborts a slow statement
    /// first. A `COMMIT` is not bounded by `statement_timeout` (it may wait for a
    /// synchronous standby): one that runs past this is not an abort, and the
    /// write-ahead asks the transaction's status instead.
    pub(super) fn operation(&self) -> Duration {
        self.statement.saturating_add(Duration::from_secs(1))
    }
}

/// A connection and the task that drives it (the caller polls or spawns it),
/// connected within the connect timeout.
pub(super) type Connected = (Client, Connection<Socket, NoTlsStream>);

/// Connects, bounded by the connect timeout.
pub(super) async fn open(config: &Config, timeouts: Timeouts) -> Result<Connected, JournalError> {
    let mut config = config.clone();
    config.connect_timeout(timeouts.connect);
    tokio::time::timeout(timeouts.connect, config.connect(NoTls))
        .await
        .map_err(|_| JournalError::Timeout {
            operation: "connect",
            after: timeouts.connect,
        })?
        .map_err(driver)
}

/// Connects (bounded by the connect timeout), spawns the connection task,
/// migrates and prepares.
pub(super) async fn connect(config: &Config, timeouts: Timeouts) -> Result<Live, JournalError> {
    let (mut client, connection) = open(config, timeouts).await?;
    tokio::spawn(async move {
        match connection.await {
            Ok(()) => {
                tracing::warn!("journal: PostgreSQL connection closed; reconnecting on next use")
            }
            Err(error) => {
                tracing::warn!(%error, "journal: PostgreSQL connection ended; reconnecting on next use")
            }
        }
    });
    let statements = prepare(&mut client, timeouts).await?;
    Ok(Live { client, statements })
}

/// Sets the session's statement timeout and durable commits, migrates,
/// prepares the statements.
pub(super) async fn prepare(
    client: &mut Client,
    timeouts: Timeouts,
) -> Result<Statements, JournalError> {
    let setup = async {
        let millis = timeouts.statement.as_millis().max(1);
        client
            .batch_execute(&format!(
                "SET statement_timeout = {millis}; {DURABLE_COMMITS}"
            ))
            .await
            .map_err(driver)?;
        migrate(client).await?;
        Statements::prepare(client).await.map_err(driver)
    };
    // Migrating may wait on another worker's migration lock: allow it a while.
    let limit = timeouts.operation().saturating_mul(4);
    tokio::time::timeout(limit, setup)
        .await
        .map_err(|_| JournalError::Timeout {
            operation: "migration",
            after: limit,
        })?
}
