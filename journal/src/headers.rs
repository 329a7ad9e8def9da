//! Which headers define a request, and how they are stored.
//!
//! Credentials are never written: `Authorization`, `Proxy-Authorization`, `Cookie`
//! and any header the journal was told to leave out. The resume hook signs the
//! request again. Headers are stored through idempotency-storage's one encoder,
//! in HTTP's own `name: value` line format (values may hold any byte a header
//! value may), and read back through its one decoder.

use http::header::{HeaderName, HeaderValue, AUTHORIZATION, COOKIE, PROXY_AUTHORIZATION};
use http::HeaderMap;

use crate::error::JournalError;

/// Headers never written to the journal, whatever the configuration.
pub const ALWAYS_EXCLUDED: [HeaderName; 3] = [AUTHORIZATION, PROXY_AUTHORIZATION, COOKIE];

/// The headers to journal: everything but credentials, the user's excluded names,
/// and the idempotency key header (stored in its own column and re-added by the
/// client on resume).
pub(crate) fn defining_headers(
    sent: &HeaderMap,
    excluded: &[HeaderName],
    key_header: Option<&HeaderName>,
) -> HeaderMap {
    let mut kept = HeaderMap::new();
    for (name, value) in sent {
        let secret = ALWAYS_EXCLUDED.contains(name) || excluded.contains(name);
        if !secret && Some(name) != key_header {
            kept.append(name.clone(), value.clone());
        }
    }
    kept
}

/// The headers as a stored column, in idempotency-storage's one form (shared
/// with tower-idempotency: `name: value\r\n`).
pub(crate) fn encode(headers: &HeaderMap) -> Vec<u8> {
    let pairs = headers
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_bytes()));
    // `HeaderName` and `HeaderValue` never hold what the encoder refuses (a ':'
    // in a name, a CR or LF anywhere), so there is no error to report here.
    idempotency_storage::headers::encode(pairs)
        .expect("http's header types hold no ':' in a name and no CR or LF")
}

/// A stored column's headers, in any form either store ever wrote (see
/// `idempotency_storage::headers::decode`).
pub(crate) fn decode(bytes: &[u8]) -> Result<HeaderMap, JournalError> {
    let invalid = |what: String| JournalError::InvalidRecord(format!("stored headers: {what}"));
    let mut headers = HeaderMap::new();
    for (name, value) in
        idempotency_storage::headers::decode(bytes).map_err(|e| invalid(e.to_string()))?
    {
        let name = HeaderName::from_bytes(name).map_err(|_| invalid("bad name".into()))?;
        let value = HeaderValue::from_bytes(value).map_err(|_| invalid("bad value".into()))?;
        headers.append(name, value);
    }
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_and_named_headers_are_left_out() {
        let mut sent = HeaderMap::new();
        sent.insert(AUTHORIZATION, HeaderValue::from_static("Bearer s3cret"));
        sent.insert(PROXY_AUTHORIZATION, HeaderValue::from_static("Basic eA=="));
        sent.insert(COOKIE, HeaderValue::from_static("session=1"));
        sent.insert("x-api-key", HeaderValue::from_static("k"));
        sent.insert("idempotency-key", HeaderValue::from_static("key-1"));
        sent.insert("content-type", HeaderValue::from_static("application/json"));
        sent.append("accept", HeaderValue::from_static("a/b"));
        sent.append("accept", HeaderValue::from_static("c/d"));
        let key_header = HeaderName::from_static("idempotency-key");
        let kept = defining_headers(
            &sent,
            &[HeaderName::from_static("x-api-key")],
            Some(&key_header),
        );
        let names: Vec<_> = kept.keys().map(|n| n.as_str()).collect();
        assert_eq!(names, ["content-type", "accept"]);
        assert_eq!(kept.get_all("accept").iter().count(), 2);
    }

    #[test]
    fn encoding_round_trips_opaque_values() {
        let mut headers = HeaderMap::new();
        headers.insert("x-opaque", HeaderValue::from_bytes(b"a:b \xff\tc").unwrap());
        headers.append("accept", HeaderValue::from_static("a/b"));
        headers.append("accept", HeaderValue::from_static("c/d"));
        headers.insert("x-empty", HeaderValue::from_static(""));
        assert_eq!(decode(&encode(&headers)).unwrap(), headers);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(decode(b"no colon\r\n").is_err());
        assert!(decode(b"bad name: v\r\n").is_err());
        assert!(decode(b"x: \x7f\r\n").is_err(), "DEL is no header byte");
        assert!(decode(b"x: v\r\ny: cut").is_err());
    }

    #[test]
    fn the_server_halfs_old_form_reads_as_the_same_headers() {
        // tower-idempotency 0.1 wrote `name:value\n`; one decoder reads both.
        let decoded = decode(b"accept:a/b\naccept:c/d\nx-empty:\n").unwrap();
        let mut expected = HeaderMap::new();
        expected.append("accept", HeaderValue::from_static("a/b"));
        expected.append("accept", HeaderValue::from_static("c/d"));
        expected.insert("x-empty", HeaderValue::from_static(""));
        assert_eq!(decoded, expected);
    }
}
