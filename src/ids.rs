//! Per-attempt request ids, and the one place UUIDs are made.
//!
//! A request id names one *attempt* (one delivery) for logs and tracing. It changes
//! on every retry so that two deliveries of one intent are never confused in a log;
//! the idempotency key is what ties them together, never the request id.

use std::fmt;

use http::HeaderValue;
use rand::RngCore;

/// A UUID v4 drawn from the thread-local CSPRNG: no system call per request, unlike
/// `Uuid::new_v4()` with uuid's default `getrandom` source.
pub(crate) fn random_uuid_v4() -> uuid::Uuid {
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    uuid::Builder::from_random_bytes(bytes).into_uuid()
}

/// Identifies one attempt of an intent (a fresh UUID v4 per attempt).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct RequestId(uuid::Uuid);

impl RequestId {
    /// A fresh random request id.
    #[inline]
    pub fn generate() -> Self {
        Self(random_uuid_v4())
    }

    /// The id as a UUID.
    pub fn as_uuid(&self) -> uuid::Uuid {
        self.0
    }

    pub(crate) fn header_value(&self) -> HeaderValue {
        let mut buffer = uuid::Uuid::encode_buffer();
        let text = self.0.hyphenated().encode_lower(&mut buffer);
        // A hyphenated UUID is always a valid header value.
        HeaderValue::from_str(text).unwrap_or_else(|_| HeaderValue::from_static(""))
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0.hyphenated(), f)
    }
}

impl fmt::Debug for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RequestId({})", self.0.hyphenated())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_are_distinct_v4_and_render_as_header() {
        let a = RequestId::generate();
        let b = RequestId::generate();
        assert_ne!(a, b);
        assert_eq!(a.as_uuid().get_version_num(), 4);
        assert_eq!(a.header_value().to_str().unwrap(), a.to_string());
    }
}
