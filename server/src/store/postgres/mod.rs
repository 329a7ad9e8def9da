//! A store in PostgreSQL, for a fleet behind a load balancer: every instance claims
//! through the same unique key.

mod generation;
mod kept;
mod migrate;
mod queries;
mod strong;

use std::future::Future;
use std::num::NonZeroUsize;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use idempotency_storage::postgres::{
    Connect, DriverError, Pool, PoolError, Pooled, DURABLE_COMMITS,
};
use tokio_postgres::{Client, NoTls, Transaction};

use super::columns::millis;
use super::{Claim, ClaimRequest, ClaimToken, Store, StoreError, StoreFuture, Transacted};
use crate::clock::Clock;
use crate::record::{Completion, StoredResponse};
use queries::{claim_in, complete_in, PRUNE, RELEASE};

/// Claims and responses in PostgreSQL on a pool of connections: each claim,
/// completion or strong-mode transaction takes a connection of its own, at most
/// [`MAX_POSTGRES_TRANSACTIONS`] at once. A connection the server closed (a
/// restart, a failover, an idle timeout) is replaced on next use, no more often
/// than the pool's reconnect backoff allows; calls in between fail (the layer
/// answers 503 with `Retry-After`).
///
/// A response it could not store (or a key it could not release) while its
/// database was away is kept and written again in the background once the
/// database is back (within a minute), so the key replays it instead of
/// running the handler again when its lease lapses.
///
/// Its sessions commit durably whatever the server's tuning: where
/// `synchronous_commit` is `off`, the store sets it to `on` for its own
/// connections (any other value is kept, never lowered), so an answer it
/// stored survives a crash of the database.
pub struct PostgresStore {
    /// Shared with the background writes of kept results (see `kept`).
    pool: Arc<Pool<Connector>>,
}

/// How many connections the store opens at most: each claim, completion or
/// strong-mode transaction runs on one of its own.
pub const MAX_POSTGRES_TRANSACTIONS: usize = 8;

/// How long a call waits for a free connection before it fails.
const POOL_WAIT: Duration = Duration::from_secs(30);

/// The future a strong-mode effect returns, borrowing its transaction.
pub type EffectFuture<'t, E> = Pin<Box<dyn Future<Output = Result<StoredResponse, E>> + Send + 't>>;

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("pool_size", &self.pool.size())
            .finish_non_exhaustive()
    }
}

/// Opens the store's connections (without TLS).
struct Connector {
    conninfo: String,
}

impl Connect for Connector {
    type Connection = Client;
    type Error = StoreError;

    async fn connect(&self) -> Result<Client, StoreError> {
        open(&self.conninfo).await
    }

    fn is_closed(client: &Client) -> bool {
        client.is_closed()
    }
}

impl PostgresStore {
    /// Connects (without TLS: the database is on a private network or localhost) and
    /// migrates.
    ///
    /// # Errors
    ///
    /// The connection or the migration failed (including a schema newer than this build).
    pub async fn connect(conninfo: &str) -> Result<Self, StoreError> {
        let mut client = open(conninfo).await?;
        migrate::migrate(&mut client).await?;
        let connector = Connector {
            conninfo: conninfo.to_owned(),
        };
        Ok(Self {
            pool: Arc::new(Pool::new(
                connector,
                "idempotency store",
                NonZeroUsize::new(MAX_POSTGRES_TRANSACTIONS).unwrap_or(NonZeroUsize::MIN),
                POOL_WAIT,
                Some(client),
            )),
        })
    }

    /// The strong mode: claims `request.scope` and, if it was free, runs `effect` in
    /// the same transaction, storing the response it returns with its writes.
    ///
    /// Either the claim, the effect's writes and the response commit together, or
    /// (the process dies, the connection drops, this future is dropped, `effect`
    /// returns `Err`) none of them do. A concurrent request with a key in flight waits
    /// for its row lock at most [`PostgresStore::CLAIM_LOCK_TIMEOUT`], then is told the
    /// key is in progress (409), giving its connection back. The response is kept
    /// until `retention` after the effect finished, read from `clock` just before the
    /// commit (as the layer counts it).
    ///
    /// # Errors
    ///
    /// The database could not be reached or written (the transaction rolled back).
    pub async fn transact<E, F>(
        &self,
        request: ClaimRequest,
        retention: Duration,
        clock: Arc<dyn Clock>,
        effect: F,
    ) -> Result<Transacted<E>, StoreError>
    where
        F: for<'t> FnOnce(&'t Transaction<'t>) -> EffectFuture<'t, E>,
    {
        let mut client = self.client().await?;
        strong::transact_on(&mut client, &request, retention, clock.as_ref(), effect)
            .await
            .map_err(fail("run the transaction"))
    }

    /// Runs `effect` in one transaction without a key (a route whose key is optional
    /// and absent): committed when it returns `Ok`.
    pub(crate) async fn transact_unkeyed<E, F>(
        &self,
        effect: F,
    ) -> Result<Result<StoredResponse, E>, StoreError>
    where
        F: for<'t> FnOnce(&'t Transaction<'t>) -> EffectFuture<'t, E>,
    {
        let mut client = self.client().await?;
        async {
            let tx = client.transaction().await?;
            let out = effect(&tx).await;
            if out.is_ok() {
                tx.commit().await?;
            } else {
                tx.rollback().await?;
            }
            Ok(out)
        }
        .await
        .map_err(fail("run the transaction"))
    }

    /// A connection of this call's own from the pool.
    async fn client(&self) -> Result<Pooled<'_, Connector>, StoreError> {
        self.pool.get().await.map_err(|error| match error {
            PoolError::Connect(error) => error,
            other => StoreError::new("take a PostgreSQL connection", other),
        })
    }
}

/// Connects and makes the session's commits durable ([`DURABLE_COMMITS`]): a
/// stored answer the server acknowledged must survive a crash of the database,
/// or a resend would run its effect again.
async fn open(conninfo: &str) -> Result<Client, StoreError> {
    let (client, connection) = tokio_postgres::connect(conninfo, NoTls)
        .await
        .map_err(|e| StoreError::new("connect to PostgreSQL", DriverError::new(e)))?;
    tokio::spawn(async move {
        if let Err(error) = connection.await {
            tracing::warn!(%error, "idempotency store: PostgreSQL connection closed");
        }
    });
    client
        .batch_execute(DURABLE_COMMITS)
        .await
        .map_err(fail("set up the session"))?;
    Ok(client)
}

fn fail(what: &'static str) -> impl Fn(tokio_postgres::Error) -> StoreError {
    move |e| StoreError::new(what, DriverError::new(e))
}

impl Store for PostgresStore {
    fn claim<'a>(&'a self, request: &'a ClaimRequest) -> StoreFuture<'a, Claim> {
        Box::pin(async move {
            let client = self.client().await?;
            let generation = generation::fresh();
            let claimed = claim_in(&*client, request, generation).await;
            if claimed.is_err() {
                // The upsert may have committed with its answer lost: the layer
                // runs nothing for this request, so the claim is released once
                // the database is back rather than left "in progress" until its
                // lease lapses. A claim that never landed deletes nothing.
                let token = ClaimToken {
                    scope: request.scope,
                    generation: generation as u64,
                };
                kept::keep(Arc::clone(&self.pool), token, kept::End::LostClaim);
            }
            claimed.map_err(fail("claim a key"))
        })
    }

    fn complete<'a>(
        &'a self,
        token: &'a ClaimToken,
        completion: Completion,
        expires_at: SystemTime,
    ) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let stored = async {
                let client = self.client().await?;
                complete_in(&*client, token, &completion, expires_at)
                    .await
                    .map_err(fail("store a response"))
            }
            .await;
            if stored.is_err() {
                // The handler ran: keep its result rather than let the key
                // run again when its lease lapses.
                let end = kept::End::Complete(completion, expires_at);
                kept::keep(Arc::clone(&self.pool), token.clone(), end);
            }
            stored
        })
    }

    fn release<'a>(&'a self, token: &'a ClaimToken) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let released = async {
                let scope = &token.scope.as_bytes()[..];
                let deleted = self
                    .client()
                    .await?
                    .execute(RELEASE, &[&scope, &(token.generation as i64)])
                    .await
                    .map_err(fail("release a key"))?;
                Ok(deleted == 1)
            }
            .await;
            if released.is_err() {
                kept::keep(Arc::clone(&self.pool), token.clone(), kept::End::Release);
            }
            released
        })
    }

    fn prune(&self, now: SystemTime) -> StoreFuture<'_, u64> {
        Box::pin(async move {
            self.client()
                .await?
                .execute(PRUNE, &[&millis(now)])
                .await
                .map_err(fail("prune keys"))
        })
    }
}
