//! One PostgreSQL connection that comes back: when it ends (the server restarted,
//! a proxy cut it), the next operation connects again — at once the first time,
//! then no more often than a bounded backoff allows — and says so in the log.
//! Operations in between fail fast with [`JournalError::Storage`]; none hangs.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Mutex;
use tokio::time::Instant;
use tokio_postgres::{Client, Config, NoTls};

use super::migrate::migrate;
use super::queries::Statements;
use crate::error::JournalError;

/// The first pause after a failed reconnect; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// The longest pause between two reconnect attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

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
    /// `statement_timeout` plus a second, so the server aborts first (nothing is
    /// committed) unless it does not answer at all.
    pub(super) fn operation(&self) -> Duration {
        self.statement.saturating_add(Duration::from_secs(1))
    }
}

#[derive(Debug)]
struct Reconnect {
    /// No attempt before this instant (after a failed one).
    not_before: Option<Instant>,
    backoff: Duration,
}

/// The current connection and how to make a new one.
#[derive(Debug)]
pub(super) struct Connection {
    config: Option<Config>,
    timeouts: Timeouts,
    current: std::sync::Mutex<Arc<Live>>,
    reconnect: Mutex<Reconnect>,
}

impl Connection {
    /// Connects, migrates and prepares.
    pub(super) async fn open(config: Config, timeouts: Timeouts) -> Result<Self, JournalError> {
        let live = connect(&config, timeouts).await?;
        Ok(Self::new(Some(config), timeouts, live))
    }

    /// Around a client the caller connected: it cannot be replaced when it ends.
    pub(super) async fn from_client(
        mut client: Client,
        timeouts: Timeouts,
    ) -> Result<Self, JournalError> {
        let live = prepare(&mut client, timeouts).await?;
        Ok(Self::new(
            None,
            timeouts,
            Live {
                client,
                statements: live,
            },
        ))
    }

    fn new(config: Option<Config>, timeouts: Timeouts, live: Live) -> Self {
        Self {
            config,
            timeouts,
            current: std::sync::Mutex::new(Arc::new(live)),
            reconnect: Mutex::new(Reconnect {
                not_before: None,
                backoff: FIRST_BACKOFF,
            }),
        }
    }

    pub(super) fn timeouts(&self) -> Timeouts {
        self.timeouts
    }

    fn current(&self) -> Arc<Live> {
        Arc::clone(&self.current.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The live connection, connecting again if it ended.
    pub(super) async fn live(&self) -> Result<Arc<Live>, JournalError> {
        let live = self.current();
        if !live.client.is_closed() {
            return Ok(live);
        }
        let Some(config) = &self.config else {
            return Err(JournalError::storage(
                "the PostgreSQL connection ended; a store made with from_client cannot \
                 reconnect (use PostgresStore::connect)",
            ));
        };
        let mut reconnect = self.reconnect.lock().await;
        let live = self.current();
        if !live.client.is_closed() {
            return Ok(live); // another task reconnected meanwhile
        }
        if let Some(not_before) = reconnect.not_before {
            if Instant::now() < not_before {
                return Err(JournalError::storage(format!(
                    "the PostgreSQL connection ended; next reconnect attempt in {:?}",
                    not_before - Instant::now()
                )));
            }
        }
        match connect(config, self.timeouts).await {
            Ok(fresh) => {
                tracing::info!("journal: reconnected to PostgreSQL");
                let fresh = Arc::new(fresh);
                *self.current.lock().unwrap_or_else(|e| e.into_inner()) = Arc::clone(&fresh);
                reconnect.not_before = None;
                reconnect.backoff = FIRST_BACKOFF;
                Ok(fresh)
            }
            Err(error) => {
                tracing::warn!(%error, retry_in = ?reconnect.backoff, "journal: PostgreSQL reconnect failed");
                reconnect.not_before = Some(Instant::now() + reconnect.backoff);
                reconnect.backoff = (reconnect.backoff * 2).min(MAX_BACKOFF);
                Err(error)
            }
        }
    }
}

/// Connects (bounded by the connect timeout), spawns the connection task,
/// migrates and prepares.
async fn connect(config: &Config, timeouts: Timeouts) -> Result<Live, JournalError> {
    let mut config = config.clone();
    config.connect_timeout(timeouts.connect);
    let connecting = config.connect(NoTls);
    let (mut client, connection) = tokio::time::timeout(timeouts.connect, connecting)
        .await
        .map_err(|_| JournalError::Timeout {
            operation: "connect",
            after: timeouts.connect,
        })?
        .map_err(JournalError::storage)?;
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

/// Sets the session's statement timeout, migrates, prepares the statements.
async fn prepare(client: &mut Client, timeouts: Timeouts) -> Result<Statements, JournalError> {
    let setup = async {
        let millis = timeouts.statement.as_millis().max(1);
        client
            .batch_execute(&format!("SET statement_timeout = {millis}"))
            .await
            .map_err(JournalError::storage)?;
        migrate(client).await?;
        Statements::prepare(client)
            .await
            .map_err(JournalError::storage)
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
