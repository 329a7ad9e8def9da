//! The store's statements and how rows map to records.

use std::time::SystemTime;

use rusqlite::{params, Connection, OptionalExtension, Transaction};

use crate::fingerprint::Fingerprint;
use crate::record::{Completion, Existing, ExistingState};
use crate::scope::ScopeId;
use crate::store::columns::{completion, encode_headers, millis, time};
use crate::store::{Claim, ClaimRequest, ClaimToken};

/// Takes the key if it has no row or its row expired, in one statement: the unique
/// key and `ON CONFLICT` decide, never a read followed by a write. The row is read
/// back only when the statement took nothing.
pub(super) fn claim(tx: &Transaction<'_>, request: &ClaimRequest) -> rusqlite::Result<Claim> {
    let now = millis(request.now);
    let taken = tx
        .query_row(
            "INSERT INTO idempotency_keys (scope, fingerprint, generation, expires_at)
             VALUES (?1, ?2, random(), ?3)
             ON CONFLICT (scope) DO UPDATE SET
                 fingerprint = excluded.fingerprint,
                 generation = excluded.generation,
                 expires_at = excluded.expires_at,
                 reclaimed = (completed = 0),
                 completed = 0, status = NULL, headers = NULL, body = NULL, not_stored = NULL
             WHERE idempotency_keys.expires_at <= ?4
             RETURNING generation, reclaimed",
            params![
                &request.scope.as_bytes()[..],
                request.fingerprint.as_bytes(),
                millis(request.now + request.lease),
                now
            ],
            |row| Ok((row.get::<_, i64>(0)?, row.get::<_, bool>(1)?)),
        )
        .optional()?;
    if let Some((generation, reclaimed)) = taken {
        return Ok(Claim::Acquired {
            token: ClaimToken {
                scope: request.scope,
                generation: generation as u64,
            },
            reclaimed,
        });
    }
    // The upsert took nothing, so in this transaction the row exists and is unexpired.
    let existing = existing(tx, &request.scope, request.now)?;
    existing
        .map(Claim::Existing)
        .ok_or(rusqlite::Error::QueryReturnedNoRows)
}

/// The key's record if it has one that has not expired at `now`. On its own (the
/// reader) this only reports: whoever finds `None` must still claim atomically.
pub(super) fn existing(
    conn: &Connection,
    scope: &ScopeId,
    now: SystemTime,
) -> rusqlite::Result<Option<Existing>> {
    conn.query_row(
        "SELECT fingerprint, expires_at, completed, status, headers, body, not_stored
         FROM idempotency_keys WHERE scope = ?1 AND expires_at > ?2",
        params![&scope.as_bytes()[..], millis(now)],
        |row| {
            let fingerprint = Fingerprint::from_bytes(row.get::<_, Vec<u8>>(0)?);
            let expires_at = time(row.get(1)?);
            let state = if row.get::<_, bool>(2)? {
                ExistingState::Completed(completion(
                    row.get::<_, Option<u16>>(3)?,
                    row.get::<_, Option<Vec<u8>>>(4)?,
                    row.get::<_, Option<Vec<u8>>>(5)?,
                    row.get::<_, Option<String>>(6)?,
                ))
            } else {
                ExistingState::InProgress {
                    lease_until: expires_at,
                }
            };
            Ok(Existing { fingerprint, state })
        },
    )
    .optional()
}

pub(super) fn complete(
    tx: &Transaction<'_>,
    token: &ClaimToken,
    done: &Completion,
    expires_at: SystemTime,
) -> rusqlite::Result<bool> {
    let (status, headers, body, not_stored) = match done {
        Completion::Stored(r) => (
            r.status,
            Some(encode_headers(&r.headers)),
            Some(r.body.to_vec()),
            None,
        ),
        Completion::NotStored { status, reason } => (*status, None, None, Some(reason.as_str())),
    };
    let updated = tx.execute(
        "UPDATE idempotency_keys
         SET completed = 1, status = ?3, headers = ?4, body = ?5, not_stored = ?6, expires_at = ?7
         WHERE scope = ?1 AND generation = ?2 AND completed = 0",
        params![
            &token.scope.as_bytes()[..],
            token.generation as i64,
            status.as_u16(),
            headers,
            body,
            not_stored,
            millis(expires_at)
        ],
    )?;
    Ok(updated == 1)
}

pub(super) fn release(tx: &Transaction<'_>, token: &ClaimToken) -> rusqlite::Result<bool> {
    let deleted = tx.execute(
        "DELETE FROM idempotency_keys WHERE scope = ?1 AND generation = ?2 AND completed = 0",
        params![&token.scope.as_bytes()[..], token.generation as i64],
    )?;
    Ok(deleted == 1)
}

pub(super) fn prune(tx: &Transaction<'_>, now: SystemTime) -> rusqlite::Result<u64> {
    let deleted = tx.execute(
        "DELETE FROM idempotency_keys WHERE expires_at <= ?1",
        [millis(now)],
    )?;
    Ok(deleted as u64)
}
