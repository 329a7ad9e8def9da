//! A small pool of database connections that come back.
//!
//! Each operation takes a connection to itself, so concurrent operations run in
//! parallel up to the pool's size. Connections are made when needed. One that
//! ended (the server restarted, a proxy cut it) or that an operation gave up on
//! is dropped, and the next operation connects again — at once the first time,
//! then no more often than a bounded, jittered backoff allows (so a fleet of
//! workers does not knock on a restarting server in step) — and says so in the
//! log. Operations in between fail fast with [`PoolError::Backoff`]; none
//! hangs, and none waits longer than its own deadline for a database that is
//! away.

use std::future::Future;
use std::num::NonZeroUsize;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::{Semaphore, SemaphorePermit};
use tokio::time::Instant;

/// The first pause after a failed reconnect; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// The longest pause between two reconnect attempts: short, so a database that
/// is back is used within about a second.
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// How a pool makes a connection and tells a dead one: the store's own
/// (connect with its timeouts, set the session up, prepare its statements).
pub trait Connect: Send + Sync {
    /// A connection with whatever the store keeps beside it.
    type Connection: Send;
    /// Why a connection could not be made.
    type Error: std::fmt::Display;

    /// Makes a new connection.
    fn connect(&self) -> impl Future<Output = Result<Self::Connection, Self::Error>> + Send;

    /// True when the connection ended and must not be used again.
    fn is_closed(connection: &Self::Connection) -> bool;
}

/// Why the pool gave no connection.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PoolError<E> {
    /// Every connection stayed in use for the whole wait.
    #[error("no pooled connection became free within {waited:?}")]
    Exhausted {
        /// How long the call waited.
        waited: Duration,
    },
    /// The last connect failed too recently to try again.
    #[error("no database connection; next reconnect attempt in {retry_in:?} (the last one failed: {cause})")]
    Backoff {
        /// When the next attempt may be made.
        retry_in: Duration,
        /// Why the last attempt failed, as its error said.
        cause: String,
    },
    /// Connecting failed.
    #[error(transparent)]
    Connect(E),
}

#[derive(Debug)]
struct Reconnect {
    /// No attempt before this instant (after a failed one).
    not_before: Option<Instant>,
    backoff: Duration,
    /// Why the last attempt failed.
    cause: String,
}

/// Up to `size` connections, each used by one operation at a time.
#[derive(Debug)]
pub struct Pool<C: Connect> {
    connector: C,
    /// What the log calls the store ("journal", "idempotency store").
    label: &'static str,
    size: usize,
    wait: Duration,
    idle: Mutex<Vec<C::Connection>>,
    permits: Semaphore,
    reconnect: Mutex<Reconnect>,
}

/// A connection taken from the pool; it goes back when dropped, unless it
/// ended or was [discarded](Self::discard).
pub struct Pooled<'a, C: Connect> {
    connection: Option<C::Connection>,
    pool: &'a Pool<C>,
    _permit: SemaphorePermit<'a>,
}

impl<C: Connect> std::fmt::Debug for Pooled<'_, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pooled")
            .field("label", &self.pool.label)
            .finish_non_exhaustive()
    }
}

impl<C: Connect> std::ops::Deref for Pooled<'_, C> {
    type Target = C::Connection;
    fn deref(&self) -> &C::Connection {
        self.connection.as_ref().expect("present until dropped")
    }
}

impl<C: Connect> std::ops::DerefMut for Pooled<'_, C> {
    fn deref_mut(&mut self) -> &mut C::Connection {
        self.connection.as_mut().expect("present until dropped")
    }
}

impl<C: Connect> Pooled<'_, C> {
    /// Drops the connection instead of giving it back: an operation gave up on
    /// it halfway (its session state is unknown).
    pub fn discard(mut self) {
        self.connection = None;
    }
}

impl<C: Connect> Drop for Pooled<'_, C> {
    fn drop(&mut self) {
        if let Some(connection) = self.connection.take() {
            if !C::is_closed(&connection) {
                self.pool.idle().push(connection);
            }
        }
    }
}

impl<C: Connect> Pool<C> {
    /// A pool of up to `size` connections made by `connector`;
    /// [`get`](Self::get) waits up to `wait` for a free one. `first`, a
    /// connection already made (e.g. the one that migrated the schema), is kept
    /// as the first idle one. `label` names the store in the log.
    pub fn new(
        connector: C,
        label: &'static str,
        size: NonZeroUsize,
        wait: Duration,
        first: Option<C::Connection>,
    ) -> Self {
        let size = size.get();
        Self {
            connector,
            label,
            size,
            wait,
            idle: Mutex::new(first.into_iter().collect()),
            permits: Semaphore::new(size),
            reconnect: Mutex::new(Reconnect {
                not_before: None,
                backoff: FIRST_BACKOFF,
                cause: String::new(),
            }),
        }
    }

    /// The most connections open at once.
    pub fn size(&self) -> usize {
        self.size
    }

    /// How long [`get`](Self::get) waits for a free connection.
    pub fn wait(&self) -> Duration {
        self.wait
    }

    /// What makes the connections.
    pub fn connector(&self) -> &C {
        &self.connector
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<C::Connection>> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A connection of this operation's own: an idle one, or a new one.
    ///
    /// # Errors
    /// [`PoolError::Exhausted`] when none became free within the wait,
    /// [`PoolError::Backoff`] when the last connect failed too recently,
    /// [`PoolError::Connect`] when connecting failed.
    pub async fn get(&self) -> Result<Pooled<'_, C>, PoolError<C::Error>> {
        let exhausted = PoolError::Exhausted { waited: self.wait };
        let permit = match tokio::time::timeout(self.wait, self.permits.acquire()).await {
            Ok(Ok(permit)) => permit,
            // The semaphore is never closed; a closed one is as good as none free.
            Ok(Err(_)) | Err(_) => return Err(exhausted),
        };
        let reused = loop {
            let Some(connection) = self.idle().pop() else {
                break None;
            };
            if !C::is_closed(&connection) {
                break Some(connection);
            }
        };
        let connection = match reused {
            Some(connection) => connection,
            None => self.connect_again().await?,
        };
        Ok(Pooled {
            connection: Some(connection),
            pool: self,
            _permit: permit,
        })
    }

    /// A new connection, unless the last attempt failed too recently.
    async fn connect_again(&self) -> Result<C::Connection, PoolError<C::Error>> {
        let backoff = {
            let reconnect = self.reconnect.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(not_before) = reconnect.not_before {
                let now = Instant::now();
                if now < not_before {
                    return Err(PoolError::Backoff {
                        retry_in: not_before - now,
                        cause: reconnect.cause.clone(),
                    });
                }
            }
            reconnect.backoff
        };
        let result = self.connector.connect().await;
        let mut reconnect = self.reconnect.lock().unwrap_or_else(|e| e.into_inner());
        match &result {
            Ok(_) => {
                if reconnect.not_before.take().is_some() {
                    tracing::info!(store = self.label, "reconnected to the database");
                }
                reconnect.backoff = FIRST_BACKOFF;
            }
            Err(error) => {
                tracing::warn!(
                    store = self.label,
                    %error,
                    retry_in = ?backoff,
                    "connecting to the database failed"
                );
                reconnect.not_before = Some(Instant::now() + jittered(reconnect.backoff));
                reconnect.backoff = (reconnect.backoff * 2).min(MAX_BACKOFF);
                reconnect.cause = error.to_string();
            }
        }
        result.map_err(PoolError::Connect)
    }
}

/// Half of `backoff`, plus a random share of the other half ("equal jitter").
fn jittered(backoff: Duration) -> Duration {
    let half = backoff / 2;
    half + half.mul_f64(rand::random::<f64>())
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::*;

    /// Connections are numbers; `down` makes connecting fail, and a connection
    /// whose `closed` flag is set has ended.
    #[derive(Debug, Default)]
    struct Fake {
        made: AtomicUsize,
        down: AtomicBool,
    }

    struct FakeConnection {
        id: usize,
        closed: Arc<AtomicBool>,
    }

    impl Connect for Fake {
        type Connection = FakeConnection;
        type Error = String;

        async fn connect(&self) -> Result<FakeConnection, String> {
            if self.down.load(Ordering::SeqCst) {
                return Err("server down".to_owned());
            }
            Ok(FakeConnection {
                id: self.made.fetch_add(1, Ordering::SeqCst),
                closed: Arc::default(),
            })
        }

        fn is_closed(connection: &FakeConnection) -> bool {
            connection.closed.load(Ordering::SeqCst)
        }
    }

    fn pool(size: usize) -> Pool<Fake> {
        Pool::new(
            Fake::default(),
            "test",
            NonZeroUsize::new(size).unwrap(),
            Duration::from_millis(50),
            None,
        )
    }

    #[tokio::test]
    async fn a_returned_connection_is_reused_and_a_closed_one_replaced() {
        let pool = pool(2);
        let first = pool.get().await.unwrap();
        assert_eq!(first.id, 0);
        let closed = Arc::clone(&first.closed);
        drop(first);
        assert_eq!(pool.get().await.unwrap().id, 0, "reused");
        closed.store(true, Ordering::SeqCst);
        assert_eq!(pool.get().await.unwrap().id, 1, "a closed one is replaced");
        pool.get().await.unwrap().discard();
        assert_eq!(
            pool.get().await.unwrap().id,
            2,
            "a discarded one is not reused"
        );
    }

    #[tokio::test]
    async fn a_full_pool_makes_the_caller_wait_then_gives_up() {
        let pool = pool(1);
        let held = pool.get().await.unwrap();
        let started = Instant::now();
        let error = pool.get().await.unwrap_err();
        assert!(matches!(error, PoolError::Exhausted { .. }), "{error}");
        assert!(started.elapsed() >= Duration::from_millis(50));
        drop(held);
        pool.get().await.unwrap();
    }

    #[test]
    fn the_jitter_stays_within_half_and_whole_of_the_backoff() {
        let samples: Vec<_> = (0..200).map(|_| jittered(MAX_BACKOFF)).collect();
        assert!(samples
            .iter()
            .all(|d| *d >= MAX_BACKOFF / 2 && *d <= MAX_BACKOFF));
        let first = samples[0];
        assert!(samples.iter().any(|d| *d != first), "jittered");
    }

    #[tokio::test]
    async fn after_a_failed_connect_the_next_waits_for_the_backoff() {
        let pool = pool(1);
        pool.connector().down.store(true, Ordering::SeqCst);
        assert!(matches!(pool.get().await, Err(PoolError::Connect(_))));
        pool.connector().down.store(false, Ordering::SeqCst);
        let Err(PoolError::Backoff { retry_in, cause }) = pool.get().await else {
            panic!("a second attempt within the backoff is refused at once");
        };
        assert!(retry_in <= FIRST_BACKOFF);
        assert_eq!(cause, "server down", "says why the last attempt failed");
        tokio::time::sleep(retry_in + Duration::from_millis(5)).await;
        assert_eq!(
            pool.get().await.unwrap().id,
            0,
            "connected after the backoff"
        );
    }
}
