//! The store's statements and how rows map to records.

use std::time::{Duration, SystemTime};

use http::{HeaderName, HeaderValue, StatusCode};
use rusqlite::{params, OptionalExtension, Transaction};

use crate::fingerprint::Fingerprint;
use crate::record::{Completion, Existing, ExistingState, NotStored, StoredResponse};
use crate::store::{Claim, ClaimRequest, ClaimToken};

/// Milliseconds since the Unix epoch (the columns' unit).
pub(super) fn millis(time: SystemTime) -> i64 {
    let since = time
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

fn time(millis: i64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_millis(millis.max(0) as u64)
}

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
    let existing = tx.query_row(
        "SELECT fingerprint, expires_at, completed, status, headers, body, not_stored
         FROM idempotency_keys WHERE scope = ?1",
        [&request.scope.as_bytes()[..]],
        |row| {
            let fingerprint = Fingerprint::from_bytes(row.get::<_, Vec<u8>>(0)?);
            let expires_at = time(row.get(1)?);
            let state = if row.get::<_, bool>(2)? {
                ExistingState::Completed(completion(
                    row.get(3)?,
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
    )?;
    Ok(Claim::Existing(existing))
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

fn completion(
    status: u16,
    headers: Option<Vec<u8>>,
    body: Option<Vec<u8>>,
    not_stored: Option<String>,
) -> Completion {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    match (not_stored.as_deref().and_then(NotStored::parse), body) {
        (Some(reason), _) => Completion::NotStored { status, reason },
        (None, Some(body)) => Completion::Stored(StoredResponse {
            status,
            headers: decode_headers(&headers.unwrap_or_default()),
            body: body.into(),
        }),
        // A row this build did not write: say so rather than replay an empty body.
        (None, None) => Completion::NotStored {
            status,
            reason: NotStored::Failed,
        },
    }
}

/// `name:value` lines: names have no `:` and values no newline (HTTP forbids both).
fn encode_headers(headers: &[(HeaderName, HeaderValue)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, value) in headers {
        out.extend_from_slice(name.as_str().as_bytes());
        out.push(b':');
        out.extend_from_slice(value.as_bytes());
        out.push(b'\n');
    }
    out
}

fn decode_headers(bytes: &[u8]) -> Vec<(HeaderName, HeaderValue)> {
    bytes
        .split(|&b| b == b'\n')
        .filter_map(|line| {
            let colon = line.iter().position(|&b| b == b':')?;
            let name = HeaderName::from_bytes(&line[..colon]).ok()?;
            let value = HeaderValue::from_bytes(&line[colon + 1..]).ok()?;
            Some((name, value))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip() {
        let headers = vec![
            (
                http::header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
            (
                http::header::LOCATION,
                HeaderValue::from_static("/p/1?a=b:c"),
            ),
            (
                http::header::LOCATION,
                HeaderValue::from_bytes(b"\xff\xfe").unwrap(),
            ),
        ];
        assert_eq!(decode_headers(&encode_headers(&headers)), headers);
        assert!(decode_headers(&encode_headers(&[])).is_empty());
    }
}
