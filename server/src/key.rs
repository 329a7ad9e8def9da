//! The `Idempotency-Key` header: where it is read and what a valid key looks like.
//!
//! The IETF draft sends the key as a Structured Field string (`"…"`); Stripe and most
//! clients send it bare. Both are accepted and mean the same key. A key is visible
//! ASCII without quotes or backslashes, 1 to `max_len` characters (Stripe: 255), so it
//! fits a database column and never needs escaping.

use http::HeaderValue;

/// The request header that carries the key.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// Why a key was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyProblem {
    Empty,
    TooLong,
    BadCharacter,
}

/// A key as the client sent it, without the Structured Field quotes.
///
/// Its `Debug` shows only its length: keys are bearer-like and never logged whole.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Key<'a>(&'a str);

impl<'a> Key<'a> {
    pub fn as_str(&self) -> &'a str {
        self.0
    }
}

impl std::fmt::Debug for Key<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Key(<{} chars>)", self.0.len())
    }
}

/// Reads a key from a header value: `"abc"` and `abc` are the same key.
pub fn parse_key(value: &HeaderValue, max_len: usize) -> Result<Key<'_>, KeyProblem> {
    let raw = value.as_bytes();
    let inner = match raw {
        [b'"', inner @ .., b'"'] => inner,
        _ => raw,
    };
    if inner.is_empty() {
        return Err(KeyProblem::Empty);
    }
    if inner.len() > max_len {
        return Err(KeyProblem::TooLong);
    }
    if !inner.iter().all(|&b| is_key_byte(b)) {
        return Err(KeyProblem::BadCharacter);
    }
    // Every byte is visible ASCII, so this cannot fail.
    std::str::from_utf8(inner)
        .map(Key)
        .map_err(|_| KeyProblem::BadCharacter)
}

fn is_key_byte(b: u8) -> bool {
    (0x21..=0x7e).contains(&b) && b != b'"' && b != b'\\'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_accepted_and_refused() {
        let long = "k".repeat(256);
        let max = "k".repeat(255);
        #[rustfmt::skip]
        let cases: &[(&str, &str, Result<&str, KeyProblem>)] = &[
            ("a bare key", "8e03978e-40d5", Ok("8e03978e-40d5")),
            ("a Structured Field string", "\"8e03978e-40d5\"", Ok("8e03978e-40d5")),
            ("255 characters", &max, Ok(&max)),
            ("256 characters", &long, Err(KeyProblem::TooLong)),
            ("empty", "", Err(KeyProblem::Empty)),
            ("empty quotes", "\"\"", Err(KeyProblem::Empty)),
            ("a space", "a b", Err(KeyProblem::BadCharacter)),
            ("an inner quote", "a\"b", Err(KeyProblem::BadCharacter)),
            ("a backslash", "a\\b", Err(KeyProblem::BadCharacter)),
            ("one quote only", "\"abc", Err(KeyProblem::BadCharacter)),
        ];
        for (name, raw, want) in cases {
            let value = HeaderValue::from_str(raw).unwrap();
            let got = parse_key(&value, 255);
            assert_eq!(
                got.as_ref().map(Key::as_str).map_err(|e| *e),
                *want,
                "{name}"
            );
        }
    }

    #[test]
    fn non_ascii_bytes_are_refused() {
        let value = HeaderValue::from_bytes(b"caf\xc3\xa9").unwrap();
        assert_eq!(parse_key(&value, 255), Err(KeyProblem::BadCharacter));
    }

    #[test]
    fn debug_never_shows_the_key() {
        let value = HeaderValue::from_static("secret-key");
        let key = parse_key(&value, 255).unwrap();
        assert_eq!(format!("{key:?}"), "Key(<10 chars>)");
    }
}
