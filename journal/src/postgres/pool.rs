//! The journal's connections, pooled by the storage crate's
//! [`Pool`](idempotency_storage::postgres::Pool): each operation takes a
//! connection to itself (the write-ahead runs a transaction on it), so
//! concurrent durable sends commit in parallel, up to the pool's size. A
//! connection that ended is replaced on next use, no more often than the pool's
//! reconnect backoff allows; operations in between fail fast with
//! [`JournalError::Storage`]; none hangs.

use std::num::NonZeroUsize;

use idempotency_storage::postgres::{self as storage, Connect, PoolError};
use tokio_postgres::Config;

use super::connection::{connect, Live, Timeouts};
use crate::error::JournalError;

/// Makes the journal's connections: connected, migrated, statements prepared.
#[derive(Debug)]
pub(super) struct Connector {
    /// `None` for a store around the caller's client: it cannot reconnect.
    config: Option<Config>,
    timeouts: Timeouts,
}

impl Connect for Connector {
    type Connection = Live;
    type Error = JournalError;

    async fn connect(&self) -> Result<Live, JournalError> {
        match &self.config {
            Some(config) => connect(config, self.timeouts).await,
            None => Err(JournalError::storage(
                "the PostgreSQL connection ended; a store made with from_client cannot \
                 reconnect (use PostgresStore::connect)",
            )),
        }
    }

    fn is_closed(live: &Live) -> bool {
        live.client.is_closed()
    }
}

/// A connection taken from the pool; see [`storage::Pooled`].
pub(super) type Pooled<'a> = storage::Pooled<'a, Connector>;

/// Up to `size` connections, each used by one operation at a time.
#[derive(Debug)]
pub(super) struct Pool(storage::Pool<Connector>);

impl Pool {
    /// Connects the first connection (migrating the schema) and keeps it.
    pub(super) async fn open(
        config: Config,
        timeouts: Timeouts,
        size: NonZeroUsize,
    ) -> Result<Self, JournalError> {
        let first = connect(&config, timeouts).await?;
        Ok(Self::new(Some(config), timeouts, size, first))
    }

    /// Around one connection the caller made: a pool of one that cannot
    /// reconnect.
    pub(super) fn around(live: Live, timeouts: Timeouts) -> Self {
        Self::new(None, timeouts, NonZeroUsize::MIN, live)
    }

    fn new(config: Option<Config>, timeouts: Timeouts, size: NonZeroUsize, first: Live) -> Self {
        let connector = Connector { config, timeouts };
        // A slot is waited for no longer than one operation may take.
        let wait = timeouts.operation();
        Self(storage::Pool::new(
            connector,
            "journal",
            size,
            wait,
            Some(first),
        ))
    }

    pub(super) fn timeouts(&self) -> Timeouts {
        self.0.connector().timeouts
    }

    /// How the pool connects; `None` for a store around the caller's client.
    pub(super) fn config(&self) -> Option<&Config> {
        self.0.connector().config.as_ref()
    }

    pub(super) fn size(&self) -> usize {
        self.0.size()
    }

    /// A connection of this operation's own: an idle one, or a new one.
    pub(super) async fn get(&self) -> Result<Pooled<'_>, JournalError> {
        self.0.get().await.map_err(|error| match error {
            PoolError::Exhausted { waited } => JournalError::Timeout {
                operation: "wait for a pooled connection",
                after: waited,
            },
            PoolError::Connect(error) => error,
            PoolError::Backoff { retry_in, cause } => {
                JournalError::storage(format!(
                "no PostgreSQL connection; the next reconnect attempt is in {} ms (the last one \
                 failed: {})",
                retry_in.as_millis(),
                cause.strip_prefix("journal storage failed: ").unwrap_or(&cause)
            ))
            }
            other => JournalError::storage(format!("PostgreSQL: {other}")),
        })
    }
}
