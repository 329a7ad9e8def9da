//! A store in PostgreSQL, for a fleet behind a load balancer: every instance claims
//! through the same unique key.

mod migrate;
mod queries;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::{Mutex, RwLock, Semaphore};
use tokio_postgres::{Client, NoTls, Transaction};

use super::columns::millis;
use super::{Claim, ClaimRequest, ClaimToken, Store, StoreError, StoreFuture, Transacted};
use crate::record::{Completion, StoredResponse};
use queries::{claim_in, complete_in, PRUNE, RELEASE};

/// Claims and responses in PostgreSQL: the layer's calls share one pipelined
/// connection; each strong-mode transaction takes a connection of its own (kept for
/// reuse, at most [`MAX_POSTGRES_TRANSACTIONS`] at once).
pub struct PostgresStore {
    // Replaced by a new connection when the server closed it (a restart, a failover,
    // an idle timeout); calls in flight on the old one fail and are answered 503.
    client: RwLock<Arc<Client>>,
    conninfo: String,
    idle: Mutex<Vec<Client>>,
    transactions: Semaphore,
}

/// How many strong-mode transactions run at once, each on its own connection.
pub const MAX_POSTGRES_TRANSACTIONS: usize = 8;

/// The future a strong-mode effect returns, borrowing its transaction.
pub type EffectFuture<'t, E> = Pin<Box<dyn Future<Output = Result<StoredResponse, E>> + Send + 't>>;

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore").finish_non_exhaustive()
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
        Ok(Self {
            client: RwLock::new(Arc::new(client)),
            conninfo: conninfo.to_owned(),
            idle: Mutex::new(Vec::new()),
            transactions: Semaphore::new(MAX_POSTGRES_TRANSACTIONS),
        })
    }

    /// The strong mode: claims `request.scope` and, if it was free, runs `effect` in
    /// the same transaction, storing the response it returns with its writes.
    ///
    /// Either the claim, the effect's writes and the response commit together, or
    /// (the process dies, the connection drops, `effect` returns `Err`) none of them
    /// do. A concurrent request with the key waits on the row's lock, then finds the
    /// key finished. The response is kept until `request.now + retention`.
    ///
    /// # Errors
    ///
    /// The database could not be reached or written (the transaction rolled back).
    pub async fn transact<E, F>(
        &self,
        request: ClaimRequest,
        retention: Duration,
        effect: F,
    ) -> Result<Transacted<E>, StoreError>
    where
        F: for<'t> FnOnce(&'t Transaction<'t>) -> EffectFuture<'t, E>,
    {
        let (_permit, mut client) = self.checkout().await?;
        let outcome = transact_on(&mut client, &request, retention, effect)
            .await
            .map_err(fail("run the transaction"));
        self.checkin(client).await;
        outcome
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
        let (_permit, mut client) = self.checkout().await?;
        let outcome = async {
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
        .map_err(fail("run the transaction"));
        self.checkin(client).await;
        outcome
    }

    /// A connection of its own for one transaction, with its slot.
    async fn checkout(&self) -> Result<(tokio::sync::SemaphorePermit<'_>, Client), StoreError> {
        let permit = self
            .transactions
            .acquire()
            .await
            .map_err(|e| StoreError::new("wait for a transaction slot", e))?;
        let idle = self.idle.lock().await.pop();
        let client = match idle {
            Some(client) if !client.is_closed() => client,
            _ => open(&self.conninfo).await?,
        };
        Ok((permit, client))
    }

    async fn checkin(&self, client: Client) {
        if !client.is_closed() {
            self.idle.lock().await.push(client);
        }
    }

    /// The shared connection, reopened first if the server closed it.
    async fn client(&self) -> Result<Arc<Client>, StoreError> {
        let current = Arc::clone(&*self.client.read().await);
        if !current.is_closed() {
            return Ok(current);
        }
        let mut slot = self.client.write().await;
        if slot.is_closed() {
            *slot = Arc::new(open(&self.conninfo).await?);
            tracing::info!("idempotency store: reconnected to PostgreSQL");
        }
        Ok(Arc::clone(&slot))
    }
}

async fn open(conninfo: &str) -> Result<Client, StoreError> {
    let (client, connection) = tokio_postgres::connect(conninfo, NoTls)
        .await
        .map_err(|e| StoreError::new("connect to PostgreSQL", e))?;
    tokio::spawn(async move {
        if let Err(error) = connection.await {
            tracing::warn!(%error, "idempotency store: PostgreSQL connection closed");
        }
    });
    Ok(client)
}

async fn transact_on<E, F>(
    client: &mut Client,
    request: &ClaimRequest,
    retention: Duration,
    effect: F,
) -> Result<Transacted<E>, tokio_postgres::Error>
where
    F: for<'t> FnOnce(&'t Transaction<'t>) -> EffectFuture<'t, E>,
{
    let tx = client.transaction().await?;
    let token = match claim_in(&tx, request).await? {
        Claim::Acquired { token, .. } => token,
        Claim::Existing(existing) => {
            tx.rollback().await?;
            return Ok(Transacted::Existing(existing));
        }
    };
    let response = match effect(&tx).await {
        Ok(response) => response,
        Err(rollback) => {
            tx.rollback().await?;
            return Ok(Transacted::RolledBack(rollback));
        }
    };
    let done = Completion::Stored(response.clone());
    complete_in(&tx, &token, &done, request.now + retention).await?;
    tx.commit().await?;
    Ok(Transacted::Executed(response))
}

fn fail(what: &'static str) -> impl Fn(tokio_postgres::Error) -> StoreError {
    move |e| StoreError::new(what, e)
}

impl Store for PostgresStore {
    fn claim<'a>(&'a self, request: &'a ClaimRequest) -> StoreFuture<'a, Claim> {
        Box::pin(async move {
            let client = self.client().await?;
            claim_in(&*client, request)
                .await
                .map_err(fail("claim a key"))
        })
    }

    fn complete<'a>(
        &'a self,
        token: &'a ClaimToken,
        completion: Completion,
        expires_at: SystemTime,
    ) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let client = self.client().await?;
            complete_in(&*client, token, &completion, expires_at)
                .await
                .map_err(fail("store a response"))
        })
    }

    fn release<'a>(&'a self, token: &'a ClaimToken) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let scope = &token.scope.as_bytes()[..];
            let deleted = self
                .client()
                .await?
                .execute(RELEASE, &[&scope, &(token.generation as i64)])
                .await
                .map_err(fail("release a key"))?;
            Ok(deleted == 1)
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
