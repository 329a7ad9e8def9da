//! A store in PostgreSQL, for a fleet behind a load balancer: every instance claims
//! through the same unique key.

mod migrate;

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, SystemTime};

use std::sync::Arc;

use tokio::sync::{Mutex, RwLock, Semaphore};
use tokio_postgres::{Client, GenericClient, NoTls, Transaction};

use super::columns::{completion, encode_headers, millis, time};
use super::{Claim, ClaimRequest, ClaimToken, Store, StoreError, StoreFuture, Transacted};
use crate::fingerprint::Fingerprint;
use crate::record::{Completion, Existing, ExistingState, StoredResponse};

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

const CLAIM: &str = "INSERT INTO idempotency_keys (scope, fingerprint, generation, expires_at)
     VALUES ($1, $2, nextval('idempotency_generation'), $3)
     ON CONFLICT (scope) DO UPDATE SET
         fingerprint = EXCLUDED.fingerprint,
         generation = EXCLUDED.generation,
         expires_at = EXCLUDED.expires_at,
         reclaimed = NOT idempotency_keys.completed,
         completed = false, status = NULL, headers = NULL, body = NULL, not_stored = NULL
     WHERE idempotency_keys.expires_at <= $4
     RETURNING generation, reclaimed";

const EXISTING: &str =
    "SELECT fingerprint, expires_at, completed, status, headers, body, not_stored
     FROM idempotency_keys WHERE scope = $1";

const COMPLETE: &str = "UPDATE idempotency_keys
     SET completed = true, status = $3, headers = $4, body = $5, not_stored = $6, expires_at = $7
     WHERE scope = $1 AND generation = $2 AND NOT completed";

const RELEASE: &str =
    "DELETE FROM idempotency_keys WHERE scope = $1 AND generation = $2 AND NOT completed";

const PRUNE: &str = "DELETE FROM idempotency_keys WHERE expires_at <= $1";

/// How many times a claim is tried when the row it lost to vanished before it could
/// be read (released or pruned in between).
const CLAIM_TRIES: usize = 3;

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

/// The claim on any client or transaction: the upsert decides, the read only reports.
pub(crate) async fn claim_in<C: GenericClient>(
    client: &C,
    request: &ClaimRequest,
) -> Result<Claim, tokio_postgres::Error> {
    let scope = &request.scope.as_bytes()[..];
    let now = millis(request.now);
    let until = millis(request.now + request.lease);
    for _ in 0..CLAIM_TRIES {
        let taken = client
            .query_opt(
                CLAIM,
                &[&scope, &request.fingerprint.as_bytes(), &until, &now],
            )
            .await?;
        if let Some(row) = taken {
            let generation: i64 = row.get(0);
            return Ok(Claim::Acquired {
                token: ClaimToken {
                    scope: request.scope,
                    generation: generation as u64,
                },
                reclaimed: row.get(1),
            });
        }
        if let Some(row) = client.query_opt(EXISTING, &[&scope]).await? {
            let fingerprint = Fingerprint::from_bytes(row.get::<_, Vec<u8>>(0));
            let state = if row.get::<_, bool>(2) {
                ExistingState::Completed(completion(
                    row.get::<_, Option<i32>>(3)
                        .and_then(|s| u16::try_from(s).ok()),
                    row.get(4),
                    row.get(5),
                    row.get(6),
                ))
            } else {
                ExistingState::InProgress {
                    lease_until: time(row.get(1)),
                }
            };
            return Ok(Claim::Existing(Existing { fingerprint, state }));
        }
    }
    // Lost to a row that vanished three times running: report it as in progress for
    // the shortest lease, so the client retries rather than executing blind.
    Ok(Claim::Existing(Existing {
        fingerprint: request.fingerprint.clone(),
        state: ExistingState::InProgress {
            lease_until: request.now,
        },
    }))
}

pub(crate) async fn complete_in<C: GenericClient>(
    client: &C,
    token: &ClaimToken,
    done: &Completion,
    expires_at: SystemTime,
) -> Result<bool, tokio_postgres::Error> {
    let (status, headers, body, not_stored) = match done {
        Completion::Stored(r) => (
            r.status,
            Some(encode_headers(&r.headers)),
            Some(r.body.to_vec()),
            None,
        ),
        Completion::NotStored { status, reason } => (*status, None, None, Some(reason.as_str())),
    };
    let updated = client
        .execute(
            COMPLETE,
            &[
                &&token.scope.as_bytes()[..],
                &(token.generation as i64),
                &i32::from(status.as_u16()),
                &headers,
                &body,
                &not_stored,
                &millis(expires_at),
            ],
        )
        .await?;
    Ok(updated == 1)
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
