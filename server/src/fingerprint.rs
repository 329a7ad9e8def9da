//! What makes two requests "the same payload": a key reused with another fingerprint
//! is refused with 422 instead of replaying a response that answers another request.

use http::request::Parts;
use http::HeaderName;
use sha2::{Digest, Sha256};

/// An opaque digest of the request parts a [`Fingerprinter`] chose.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Fingerprint(Box<[u8]>);

impl Fingerprint {
    /// A fingerprint from its bytes (a custom fingerprinter's digest, or a store's read).
    pub fn from_bytes(bytes: impl Into<Box<[u8]>>) -> Self {
        Self(bytes.into())
    }

    /// The digest's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

/// Computes a request's fingerprint from its head and its whole body.
///
/// The default is [`Sha256Fingerprinter`]. Write your own to compare, say, a
/// canonical form of a JSON body, or to leave out a field that legitimately changes
/// between retries (a client timestamp).
pub trait Fingerprinter: Send + Sync + 'static {
    /// The fingerprint of one request.
    fn fingerprint(&self, parts: &Parts, body: &[u8]) -> Fingerprint;
}

/// SHA-256 over the method, the path, the query, the chosen headers and the body.
///
/// # Default
///
/// Headers: `content-type` only (a JSON body and a form body with the same bytes
/// are different requests; a new `user-agent` or tracing header is not).
#[derive(Debug, Clone)]
pub struct Sha256Fingerprinter {
    headers: Vec<HeaderName>,
}

impl Sha256Fingerprinter {
    /// Fingerprints with `content-type` as the only header.
    pub fn new() -> Self {
        Self {
            headers: vec![http::header::CONTENT_TYPE],
        }
    }

    /// Fingerprints with exactly these headers (all values of each, in order).
    pub fn with_headers(headers: impl IntoIterator<Item = HeaderName>) -> Self {
        Self {
            headers: headers.into_iter().collect(),
        }
    }
}

impl Default for Sha256Fingerprinter {
    fn default() -> Self {
        Self::new()
    }
}

impl Fingerprinter for Sha256Fingerprinter {
    fn fingerprint(&self, parts: &Parts, body: &[u8]) -> Fingerprint {
        let mut hash = Sha256::new();
        let mut field = |bytes: &[u8]| {
            hash.update((bytes.len() as u64).to_be_bytes());
            hash.update(bytes);
        };
        field(parts.method.as_str().as_bytes());
        field(parts.uri.path().as_bytes());
        field(parts.uri.query().unwrap_or("").as_bytes());
        for name in &self.headers {
            field(name.as_str().as_bytes());
            for value in parts.headers.get_all(name) {
                field(value.as_bytes());
            }
        }
        field(body);
        Fingerprint(hash.finalize().to_vec().into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(
        f: &Sha256Fingerprinter,
        method: &str,
        uri: &str,
        ctype: Option<&str>,
        extra: Option<(&str, &str)>,
        body: &[u8],
    ) -> Fingerprint {
        let mut req = http::Request::builder().method(method).uri(uri);
        if let Some(c) = ctype {
            req = req.header("content-type", c);
        }
        if let Some((n, v)) = extra {
            req = req.header(n, v);
        }
        let (parts, ()) = req.body(()).unwrap().into_parts();
        f.fingerprint(&parts, body)
    }

    #[test]
    fn what_changes_the_default_fingerprint() {
        let f = Sha256Fingerprinter::new();
        let base = fp(
            &f,
            "POST",
            "/pay?x=1",
            Some("application/json"),
            None,
            b"{\"a\":1}",
        );
        #[rustfmt::skip]
        let cases: &[(&str, Fingerprint, bool)] = &[
            ("same request", fp(&f, "POST", "/pay?x=1", Some("application/json"), None, b"{\"a\":1}"), true),
            ("another header", fp(&f, "POST", "/pay?x=1", Some("application/json"), Some(("user-agent", "x")), b"{\"a\":1}"), true),
            ("another body", fp(&f, "POST", "/pay?x=1", Some("application/json"), None, b"{\"a\":2}"), false),
            ("another method", fp(&f, "PATCH", "/pay?x=1", Some("application/json"), None, b"{\"a\":1}"), false),
            ("another path", fp(&f, "POST", "/pays?x=1", Some("application/json"), None, b"{\"a\":1}"), false),
            ("another query", fp(&f, "POST", "/pay?x=2", Some("application/json"), None, b"{\"a\":1}"), false),
            ("another content type", fp(&f, "POST", "/pay?x=1", Some("text/plain"), None, b"{\"a\":1}"), false),
            ("no content type", fp(&f, "POST", "/pay?x=1", None, None, b"{\"a\":1}"), false),
        ];
        for (name, other, same) in cases {
            assert_eq!(&base == other, *same, "{name}");
        }
    }

    #[test]
    fn chosen_headers_count() {
        let f = Sha256Fingerprinter::with_headers([HeaderName::from_static("x-account")]);
        let a = fp(&f, "POST", "/", None, Some(("x-account", "1")), b"");
        let b = fp(&f, "POST", "/", None, Some(("x-account", "2")), b"");
        assert_ne!(a, b);
    }
}
