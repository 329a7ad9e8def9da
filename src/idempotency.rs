//! The idempotency key: the name of one intent.
//!
//! A client that timed out cannot tell "the request never arrived" from "the payment
//! was made and the response was lost". The only safe retry is one the server can
//! recognise as a repeat, so every attempt of one intent carries the same key,
//! generated once *before* the first attempt. A new key per attempt would turn each
//! retry into a new payment.
//!
//! The key is a bearer of authority over the intent's result, so it is never logged
//! whole: [`IdempotencyKey`]'s `Debug` and [`IdempotencyKey::redacted`] show a short
//! prefix only.

use std::fmt;

use http::HeaderValue;

/// The longest key accepted, in bytes (Stripe's limit, and a sane bound for a header).
pub const MAX_KEY_LEN: usize = 255;

/// Identifies one intent; sent unchanged on every attempt.
///
/// Either generated (UUID v4, [`IdempotencyKey::generate`]) or supplied by the caller
/// ([`IdempotencyKey::new`]), e.g. created when a payment form opened and persisted
/// across restarts so that a resubmission after a crash is still the same intent.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(Box<str>);

impl IdempotencyKey {
    /// Wraps a caller-supplied key after checking it can travel in a header unchanged.
    ///
    /// # Errors
    /// [`InvalidKey`] when the key is empty, longer than [`MAX_KEY_LEN`] bytes, has
    /// leading or trailing whitespace, or contains a byte outside printable ASCII
    /// (control characters such as a newline would allow header injection; non-ASCII
    /// bytes are not portable in header values).
    pub fn new(key: impl Into<String>) -> Result<Self, InvalidKey> {
        let key = key.into();
        if key.is_empty() {
            return Err(InvalidKey::Empty);
        }
        if key.len() > MAX_KEY_LEN {
            return Err(InvalidKey::TooLong(key.len()));
        }
        if let Some(position) = key.bytes().position(|b| !(0x20..=0x7e).contains(&b)) {
            return Err(InvalidKey::ForbiddenByte { position });
        }
        if key.starts_with(' ') || key.ends_with(' ') {
            return Err(InvalidKey::SurroundingWhitespace);
        }
        Ok(Self(key.into_boxed_str()))
    }

    /// A fresh random key (UUID v4, lower-case hyphenated).
    pub fn generate() -> Self {
        let mut buffer = uuid::Uuid::encode_buffer();
        let text = crate::ids::random_uuid_v4()
            .hyphenated()
            .encode_lower(&mut buffer);
        Self(Box::from(&*text))
    }

    /// The whole key. Do not log it: use [`IdempotencyKey::redacted`].
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A short prefix that is safe to log: at most 8 characters and never more
    /// than half the key, followed by `…` (so even a short key is never shown whole).
    pub fn redacted(&self) -> String {
        let shown = (self.0.chars().count() / 2).min(8);
        let prefix: String = self.0.chars().take(shown).collect();
        format!("{prefix}…")
    }

    /// Reads a key header set by hand: in the sf-string format a quoted value is
    /// unquoted first, so that resending the exact header value sent before is the
    /// same intent, not a key wrapped in quotes twice.
    pub(crate) fn from_header(value: &[u8], format: KeyFormat) -> Result<Self, InvalidKey> {
        let text = String::from_utf8_lossy(value);
        let unquoted = match format {
            KeyFormat::SfString => unquote_sf_string(&text),
            KeyFormat::Token => None,
        };
        Self::new(unquoted.unwrap_or_else(|| text.into_owned()))
    }

    /// The header value for this key in the given wire format. `new` admits
    /// printable ASCII only, so this cannot fail for a key built here; the error is
    /// still reported rather than sending an empty key.
    pub(crate) fn header_value(&self, format: KeyFormat) -> Result<HeaderValue, InvalidKey> {
        let text = match format {
            KeyFormat::Token => self.0.to_string(),
            KeyFormat::SfString => {
                let mut quoted = String::with_capacity(self.0.len() + 2);
                quoted.push('"');
                for c in self.0.chars() {
                    if c == '"' || c == '\\' {
                        quoted.push('\\');
                    }
                    quoted.push(c);
                }
                quoted.push('"');
                quoted
            }
        };
        HeaderValue::from_str(&text).map_err(|_| InvalidKey::ForbiddenByte { position: 0 })
    }
}

/// The content of a Structured Field string (RFC 8941 §3.3.3), or `None` when the
/// value is not one.
fn unquote_sf_string(value: &str) -> Option<String> {
    let inner = value.strip_prefix('"')?.strip_suffix('"')?;
    let mut unquoted = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next()? {
                escaped @ ('"' | '\\') => unquoted.push(escaped),
                _ => return None,
            },
            '"' => return None,
            c => unquoted.push(c),
        }
    }
    Some(unquoted)
}

impl fmt::Debug for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("IdempotencyKey")
            .field(&self.redacted())
            .finish()
    }
}

/// How the key is written on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum KeyFormat {
    /// The bare key, `Idempotency-Key: 8e03978e-...` — what Stripe and most APIs accept.
    #[default]
    Token,
    /// A quoted Structured Field string, `Idempotency-Key: "8e03978e-..."`, as
    /// draft-ietf-httpapi-idempotency-key-header-07 §2.1 defines it.
    SfString,
}

/// Which requests get a generated key when the caller supplied none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum KeyAttachment {
    /// Only non-idempotent methods (POST, PATCH and unknown methods) — the default:
    /// they are the ones a key makes safe to retry.
    #[default]
    UnsafeMethods,
    /// Every request, including GET and PUT.
    Always,
    /// Never generate one; POST/PATCH are then retried only when the connection
    /// provably was never established.
    Never,
}

/// Why a caller-supplied idempotency key was refused before anything was sent.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum InvalidKey {
    /// The key is the empty string.
    Empty,
    /// The key is longer than [`MAX_KEY_LEN`] bytes.
    TooLong(usize),
    /// The key contains a control character or a non-ASCII byte.
    ForbiddenByte {
        /// Byte offset of the first offending byte.
        position: usize,
    },
    /// The key starts or ends with a space, which header parsing would strip.
    SurroundingWhitespace,
}

impl fmt::Display for InvalidKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => f.write_str("idempotency key is empty"),
            Self::TooLong(value) => write!(
                f,
                "idempotency key is {value} bytes long; at most 255 are allowed"
            ),
            Self::ForbiddenByte { position } => write!(
                f,
                "idempotency key has a control character or non-ASCII byte at byte {position}"
            ),
            Self::SurroundingWhitespace => {
                f.write_str("idempotency key starts or ends with whitespace")
            }
        }
    }
}

impl std::error::Error for InvalidKey {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_are_uuid_v4_and_distinct() {
        let a = IdempotencyKey::generate();
        let b = IdempotencyKey::generate();
        assert_ne!(a, b);
        let parsed = uuid::Uuid::parse_str(a.as_str()).expect("uuid");
        assert_eq!(parsed.get_version_num(), 4);
    }

    #[test]
    fn caller_key_is_kept_verbatim() {
        let key = IdempotencyKey::new("order-42/attempt \"a\"").unwrap();
        assert_eq!(key.as_str(), "order-42/attempt \"a\"");
        assert_eq!(
            key.header_value(KeyFormat::Token).unwrap(),
            "order-42/attempt \"a\""
        );
        assert_eq!(
            key.header_value(KeyFormat::SfString).unwrap(),
            r#""order-42/attempt \"a\"""#
        );
    }

    #[test]
    fn bad_keys_are_refused() {
        assert_eq!(IdempotencyKey::new(""), Err(InvalidKey::Empty));
        assert_eq!(
            IdempotencyKey::new("a\nb"),
            Err(InvalidKey::ForbiddenByte { position: 1 })
        );
        assert_eq!(
            IdempotencyKey::new("ключ"),
            Err(InvalidKey::ForbiddenByte { position: 0 })
        );
        assert_eq!(
            IdempotencyKey::new("x".repeat(256)),
            Err(InvalidKey::TooLong(256))
        );
        assert!(IdempotencyKey::new("x".repeat(255)).is_ok());
        assert_eq!(
            IdempotencyKey::new(" k"),
            Err(InvalidKey::SurroundingWhitespace)
        );
    }

    #[test]
    fn a_hand_set_sf_string_header_is_unquoted() {
        let quoted = br#""order-\"77\"""#;
        let key = IdempotencyKey::from_header(quoted, KeyFormat::SfString).unwrap();
        assert_eq!(key.as_str(), r#"order-"77""#);
        assert_eq!(
            key.header_value(KeyFormat::SfString).unwrap().as_bytes(),
            quoted
        );
        let bare = IdempotencyKey::from_header(b"order-77", KeyFormat::SfString).unwrap();
        assert_eq!(bare.as_str(), "order-77");
        let token = IdempotencyKey::from_header(br#""q""#, KeyFormat::Token).unwrap();
        assert_eq!(token.as_str(), r#""q""#);
    }

    #[test]
    fn short_keys_are_never_shown_whole() {
        for key in ["a", "ab", "abcdefgh", "abcdefghi"] {
            let shown = IdempotencyKey::new(key).unwrap().redacted();
            assert!(!shown.contains(key), "{key} -> {shown}");
        }
    }

    #[test]
    fn debug_never_shows_the_whole_key() {
        let key = IdempotencyKey::new("secret-key-123456789").unwrap();
        let shown = format!("{key:?}");
        assert!(!shown.contains("secret-key-123456789"), "{shown}");
        assert!(shown.contains("secret-k"));
    }
}
