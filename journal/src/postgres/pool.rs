//! A small pool of PostgreSQL connections that come back.
//!
//! Each operation takes a connection to itself (the write-ahead runs a
//! transaction on it), so concurrent durable sends commit in parallel, up to the
//! pool's size. Connections are made when needed. One that ended (the server
//! restarted, a proxy cut it) or that an operation gave up on is dropped, and the
//! next operation connects again — at once the first time, then no more often
//! than a bounded backoff allows — and says so in the log. Operations in between
//! fail fast with [`JournalError::Storage`]; none hangs.

use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::{Semaphore, SemaphorePermit};
use tokio::time::Instant;
use tokio_postgres::Config;

use super::connection::{connect, Live, Timeouts};
use crate::error::JournalError;

/// The first pause after a failed reconnect; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// The longest pause between two reconnect attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

#[derive(Debug)]
struct Reconnect {
    /// No attempt before this instant (after a failed one).
    not_before: Option<Instant>,
    backoff: Duration,
}

/// Up to `size` connections, each used by one operation at a time.
#[derive(Debug)]
pub(super) struct Pool {
    /// `None` for a store around the caller's client: it cannot reconnect.
    config: Option<Config>,
    timeouts: Timeouts,
    size: usize,
    idle: Mutex<Vec<Live>>,
    permits: Semaphore,
    reconnect: Mutex<Reconnect>,
}

/// A connection taken from the pool; it goes back when dropped, unless it
/// ended or was [discarded](Self::discard).
#[derive(Debug)]
pub(super) struct Pooled<'a> {
    live: Option<Live>,
    pool: &'a Pool,
    _permit: SemaphorePermit<'a>,
}

impl std::ops::Deref for Pooled<'_> {
    type Target = Live;
    fn deref(&self) -> &Live {
        self.live.as_ref().expect("present until dropped")
    }
}

impl Pooled<'_> {
    /// Drops the connection instead of giving it back: an operation gave up on
    /// it halfway (its session state is unknown).
    pub(super) fn discard(mut self) {
        self.live = None;
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        if let Some(live) = self.live.take() {
            if !live.client.is_closed() {
                self.pool.idle().push(live);
            }
        }
    }
}

impl Pool {
    /// Connects the first connection (migrating the schema) and keeps it.
    pub(super) async fn open(
        config: Config,
        timeouts: Timeouts,
        size: usize,
    ) -> Result<Self, JournalError> {
        let first = connect(&config, timeouts).await?;
        Ok(Self::new(Some(config), timeouts, size, first))
    }

    /// Around one connection the caller made: a pool of one that cannot
    /// reconnect.
    pub(super) fn around(live: Live, timeouts: Timeouts) -> Self {
        Self::new(None, timeouts, 1, live)
    }

    fn new(config: Option<Config>, timeouts: Timeouts, size: usize, first: Live) -> Self {
        Self {
            config,
            timeouts,
            size,
            idle: Mutex::new(vec![first]),
            permits: Semaphore::new(size),
            reconnect: Mutex::new(Reconnect {
                not_before: None,
                backoff: FIRST_BACKOFF,
            }),
        }
    }

    pub(super) fn timeouts(&self) -> Timeouts {
        self.timeouts
    }

    pub(super) fn size(&self) -> usize {
        self.size
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Live>> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A connection of this operation's own: an idle one, or a new one. Waits for
    /// a free slot no longer than one operation may take.
    pub(super) async fn get(&self) -> Result<Pooled<'_>, JournalError> {
        let wait = self.timeouts.operation();
        let permit = tokio::time::timeout(wait, self.permits.acquire())
            .await
            .map_err(|_| JournalError::Timeout {
                operation: "wait for a pooled connection",
                after: wait,
            })?
            .map_err(JournalError::storage)?;
        let reused = loop {
            let Some(live) = self.idle().pop() else {
                break None;
            };
            if !live.client.is_closed() {
                break Some(live);
            }
        };
        let live = match reused {
            Some(live) => live,
            None => self.connect_again().await?,
        };
        Ok(Pooled {
            live: Some(live),
            pool: self,
            _permit: permit,
        })
    }

    /// A new connection, unless the last attempt failed too recently.
    async fn connect_again(&self) -> Result<Live, JournalError> {
        let Some(config) = &self.config else {
            return Err(JournalError::storage(
                "the PostgreSQL connection ended; a store made with from_client cannot \
                 reconnect (use PostgresStore::connect)",
            ));
        };
        let (not_before, backoff) = {
            let reconnect = self.reconnect.lock().unwrap_or_else(|e| e.into_inner());
            (reconnect.not_before, reconnect.backoff)
        };
        if let Some(not_before) = not_before {
            let now = Instant::now();
            if now < not_before {
                return Err(JournalError::storage(format!(
                    "no PostgreSQL connection; next reconnect attempt in {:?}",
                    not_before - now
                )));
            }
        }
        let result = connect(config, self.timeouts).await;
        let mut reconnect = self.reconnect.lock().unwrap_or_else(|e| e.into_inner());
        match &result {
            Ok(_) => {
                if reconnect.not_before.take().is_some() {
                    tracing::info!("journal: reconnected to PostgreSQL");
                }
                reconnect.backoff = FIRST_BACKOFF;
            }
            Err(error) => {
                tracing::warn!(%error, retry_in = ?backoff, "journal: PostgreSQL connect failed");
                reconnect.not_before = Some(Instant::now() + reconnect.backoff);
                reconnect.backoff = (reconnect.backoff * 2).min(MAX_BACKOFF);
            }
        }
        result
    }
}
