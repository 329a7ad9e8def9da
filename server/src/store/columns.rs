//! How a record is kept in database columns, the same for every SQL store: times as
//! milliseconds since the Unix epoch, headers as `name:value` lines.

use std::time::{Duration, SystemTime};

use http::{HeaderName, HeaderValue, StatusCode};

use crate::record::{Completion, NotStored, StoredResponse};

/// Milliseconds since the Unix epoch (the columns' unit).
pub(crate) fn millis(time: SystemTime) -> i64 {
    let since = time
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

/// The time a [`millis`] column holds.
pub(crate) fn time(millis: i64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_millis(millis.max(0) as u64)
}

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
pub(crate) fn encode_headers(headers: &[(HeaderName, HeaderValue)]) -> Vec<u8> {
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
