//! A store in PostgreSQL, for a fleet behind a load balancer: every instance claims
//! through the same unique key.

mod migrate;

use std::time::SystemTime;

use tokio_postgres::{Client, GenericClient, NoTls};

use super::columns::{completion, encode_headers, millis, time};
use super::{Claim, ClaimRequest, ClaimToken, Store, StoreError, StoreFuture};
use crate::fingerprint::Fingerprint;
use crate::record::{Completion, Existing, ExistingState};

/// Claims and responses in PostgreSQL over one pipelined connection.
pub struct PostgresStore {
    client: Client,
}

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
        let (mut client, connection) = tokio_postgres::connect(conninfo, NoTls)
            .await
            .map_err(|e| StoreError::new("connect to PostgreSQL", e))?;
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::warn!(%error, "idempotency store: PostgreSQL connection closed");
            }
        });
        migrate::migrate(&mut client).await?;
        Ok(Self { client })
    }

    async fn claim_now(&self, request: &ClaimRequest) -> Result<Claim, tokio_postgres::Error> {
        claim_in(&self.client, request).await
    }
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
        Box::pin(async move { self.claim_now(request).await.map_err(fail("claim a key")) })
    }

    fn complete<'a>(
        &'a self,
        token: &'a ClaimToken,
        completion: Completion,
        expires_at: SystemTime,
    ) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            complete_in(&self.client, token, &completion, expires_at)
                .await
                .map_err(fail("store a response"))
        })
    }

    fn release<'a>(&'a self, token: &'a ClaimToken) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let scope = &token.scope.as_bytes()[..];
            let deleted = self
                .client
                .execute(RELEASE, &[&scope, &(token.generation as i64)])
                .await
                .map_err(fail("release a key"))?;
            Ok(deleted == 1)
        })
    }

    fn prune(&self, now: SystemTime) -> StoreFuture<'_, u64> {
        Box::pin(async move {
            self.client
                .execute(PRUNE, &[&millis(now)])
                .await
                .map_err(fail("prune keys"))
        })
    }
}
