//! How a record is kept in database columns, the same for every SQL store and the
//! same as the client's journal: times as milliseconds since the Unix epoch and
//! headers as `name: value\r\n` lines, both through idempotency-storage's one
//! converter and one encoder (whose decoder still reads this crate's older
//! `name:value\n` rows).

use http::{HeaderName, HeaderValue, StatusCode};

use crate::record::{Completion, NotStored, StoredResponse};

// The columns' unit, saturating (before the epoch: 0; see the module's docs).
pub(crate) use idempotency_storage::millis::{from_time as millis, to_time as time};

/// A finished row's columns as a completion.
pub(crate) fn completion(
    status: Option<u16>,
    headers: Option<Vec<u8>>,
    body: Option<Vec<u8>>,
    not_stored: Option<String>,
) -> Completion {
    let status = status
        .and_then(|s| StatusCode::from_u16(s).ok())
        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    match (not_stored.as_deref().and_then(NotStored::parse), body) {
        (Some(reason), _) => Completion::NotStored { status, reason },
        (None, Some(body)) => match decode_headers(&headers.unwrap_or_default()) {
            Some(headers) => Completion::Stored(StoredResponse {
                status,
                headers,
                body: body.into(),
            }),
            // Headers no build wrote (a damaged row): replaying the body without
            // them (its content type, its location) would be a different response.
            None => Completion::NotStored {
                status,
                reason: NotStored::Failed,
            },
        },
        // A row this build did not write: say so rather than replay an empty body.
        (None, None) => Completion::NotStored {
            status,
            reason: NotStored::Failed,
        },
    }
}

/// The headers column, in idempotency-storage's one form.
pub(crate) fn encode_headers(headers: &[(HeaderName, HeaderValue)]) -> Vec<u8> {
    let pairs = headers
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_bytes()));
    // `HeaderName` and `HeaderValue` never hold what the encoder refuses (a ':'
    // in a name, a CR or LF anywhere), so there is no error to report here.
    idempotency_storage::headers::encode(pairs)
        .expect("http's header types hold no ':' in a name and no CR or LF")
}

/// The headers a column holds, in either form this crate ever wrote; `None` for
/// bytes no build wrote.
fn decode_headers(bytes: &[u8]) -> Option<Vec<(HeaderName, HeaderValue)>> {
    let lines = idempotency_storage::headers::decode(bytes)
        .map_err(|error| tracing::warn!(%error, "a stored response's headers do not read back"))
        .ok()?;
    lines
        .into_iter()
        .map(|(name, value)| {
            Some((
                HeaderName::from_bytes(name).ok()?,
                HeaderValue::from_bytes(value).ok()?,
            ))
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
        assert_eq!(decode_headers(&encode_headers(&headers)), Some(headers));
        assert_eq!(decode_headers(&encode_headers(&[])), Some(vec![]));
    }

    #[test]
    fn rows_of_the_old_form_replay_and_damaged_ones_are_not_replayed() {
        let stored = |headers: &[u8]| {
            completion(
                Some(201),
                Some(headers.to_vec()),
                Some(b"{}".to_vec()),
                None,
            )
        };
        // tower-idempotency 0.1's `name:value\n`.
        let Completion::Stored(old) = stored(b"location:/p/1\ncontent-type:application/json\n")
        else {
            panic!("an old row replays")
        };
        assert_eq!(old.headers.len(), 2);
        assert_eq!(old.headers[0].1, "/p/1");
        for damaged in [&b"location:/p/1"[..], b"no colon\n", b"x: \x7f\r\n"] {
            assert!(
                matches!(
                    stored(damaged),
                    Completion::NotStored {
                        reason: NotStored::Failed,
                        ..
                    }
                ),
                "{damaged:?}"
            );
        }
    }
}
