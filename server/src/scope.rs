//! Where a key lives: one principal, one endpoint. The store sees only a digest of the
//! three, so neither the key nor the principal reaches the database or the logs.

use http::Method;
use sha2::{Digest, Sha256};

use crate::key::Key;
use crate::principal::Principal;

/// The identity of one key in one scope (principal, method, path): a SHA-256 digest.
///
/// Its `Debug` and `Display` show the first 8 hex digits only, enough to follow one
/// key through the logs.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ScopeId([u8; 32]);

impl ScopeId {
    /// The scope of `key` for `principal` on `method` `path`.
    pub fn new(principal: &Principal, method: &Method, path: &str, key: &Key<'_>) -> Self {
        let principal = principal.as_str();
        let mut hash = Sha256::new();
        for part in [principal, method.as_str(), path, key.as_str()] {
            // Length-prefixed, so no two different tuples hash the same bytes.
            hash.update((part.len() as u64).to_be_bytes());
            hash.update(part.as_bytes());
        }
        Self(hash.finalize().into())
    }

    /// A scope id from its 32 bytes (as a store reads it back).
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// The digest's bytes (what a store keeps as its unique key).
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl std::fmt::Display for ScopeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for b in &self.0[..4] {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl std::fmt::Debug for ScopeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ScopeId({self}…)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::parse_key;

    fn id(principal: &str, method: Method, path: &str, key: &str) -> ScopeId {
        let value = http::HeaderValue::from_str(key).unwrap();
        let key = parse_key(&value, 255).unwrap();
        ScopeId::new(&Principal::new(principal), &method, path, &key)
    }

    #[test]
    fn each_part_of_the_scope_separates_keys() {
        let base = id("alice", Method::POST, "/payments", "k1");
        let others = [
            id("bob", Method::POST, "/payments", "k1"),
            id("alice", Method::PATCH, "/payments", "k1"),
            id("alice", Method::POST, "/refunds", "k1"),
            id("alice", Method::POST, "/payments", "k2"),
            // Boundaries are length-prefixed: moving a character between parts differs.
            id("alic", Method::POST, "e/payments", "k1"),
        ];
        for other in others {
            assert_ne!(base, other);
        }
        assert_eq!(base, id("alice", Method::POST, "/payments", "k1"));
    }

    #[test]
    fn display_is_a_short_prefix() {
        let id = ScopeId::from_bytes([0xab; 32]);
        assert_eq!(id.to_string(), "abababab");
        assert_eq!(format!("{id:?}"), "ScopeId(abababab…)");
    }
}
