//! The store's statements and how rows map to records, on any client or transaction.

use std::time::SystemTime;

use tokio_postgres::GenericClient;

use crate::fingerprint::Fingerprint;
use crate::record::{Completion, Existing, ExistingState};
use crate::store::columns::{completion, encode_headers, millis, time};
use crate::store::{Claim, ClaimRequest, ClaimToken};

const CLAIM: &str = "INSERT INTO idempotency_keys (scope, fingerprint, generation, expires_at)
     VALUES ($1, $2, $5, $3)
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

pub(super) const RELEASE: &str =
    "DELETE FROM idempotency_keys WHERE scope = $1 AND generation = $2 AND NOT completed";

pub(super) const PRUNE: &str = "DELETE FROM idempotency_keys WHERE expires_at <= $1";

/// How many times a claim is tried when the row it lost to vanished before it could
/// be read (released or pruned in between).
const CLAIM_TRIES: usize = 3;
/// The claim on any client or transaction, writing `generation` (chosen by the
/// caller: see `generation.rs`): the upsert decides, the read only reports.
pub(super) async fn claim_in<C: GenericClient>(
    client: &C,
    request: &ClaimRequest,
    generation: i64,
) -> Result<Claim, tokio_postgres::Error> {
    let scope = &request.scope.as_bytes()[..];
    let now = millis(request.now);
    let until = millis(request.now + request.lease);
    for _ in 0..CLAIM_TRIES {
        let taken = client
            .query_opt(
                CLAIM,
                &[
                    &scope,
                    &request.fingerprint.as_bytes(),
                    &until,
                    &now,
                    &generation,
                ],
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

pub(super) async fn complete_in<C: GenericClient>(
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
