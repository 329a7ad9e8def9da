//! Tracing spans with OpenTelemetry HTTP client attribute names.
//!
//! What users see — the two spans, every field, the events, what is redacted — is
//! documented once, in the crate docs' "Tracing" section (`src/lib.rs`); keep that
//! table in step with the fields declared here.
//!
//! OpenTelemetry wants the per-attempt span to be the HTTP client span and anything
//! around the attempts to be an internal span. Fields are evaluated only when a
//! subscriber wants the span. `url.full`: the OpenTelemetry HTTP conventions ask for
//! the values of `AWSAccessKeyId`, `Signature`, `sig` and `X-Goog-Signature` to be
//! replaced by `REDACTED` by default; the policy can name more
//! ([`crate::RetryPolicyBuilder::redact_query_params`]).

use std::fmt;

use http::Method;
use tracing::field::Empty;
use tracing::Span;

use crate::idempotency::IdempotencyKey;
use crate::ids::RequestId;

/// Query parameters OpenTelemetry says to redact by default.
const OTEL_REDACTED_PARAMS: [&str; 4] = ["AWSAccessKeyId", "Signature", "sig", "X-Goog-Signature"];

/// Displays a URL without user name and password (OTel `url.full` must not carry
/// credentials) and with the values of secret query parameters replaced.
pub(crate) struct RedactedUrl<'a> {
    pub(crate) url: &'a reqwest::Url,
    /// More parameter names to redact, besides [`OTEL_REDACTED_PARAMS`].
    pub(crate) extra: &'a [String],
}

impl fmt::Display for RedactedUrl<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let url = self.url;
        let has_credentials = !url.username().is_empty() || url.password().is_some();
        let query = url.query().map(|query| redact_query(query, self.extra));
        let redacted_query = matches!(&query, Some(std::borrow::Cow::Owned(_)));
        if !has_credentials && !redacted_query {
            return f.write_str(url.as_str());
        }
        let mut stripped = url.clone();
        // Only fails for URLs that cannot have credentials, which then have none.
        let _ = stripped.set_username("");
        let _ = stripped.set_password(None);
        if let Some(query) = &query {
            stripped.set_query(Some(query));
        }
        f.write_str(stripped.as_str())
    }
}

/// The query with each secret parameter's value replaced by `REDACTED`; borrowed
/// when nothing needed redacting.
fn redact_query<'q>(query: &'q str, extra: &[String]) -> std::borrow::Cow<'q, str> {
    let secret = |name: &str| {
        let name = percent_decoded(name);
        OTEL_REDACTED_PARAMS
            .iter()
            .copied()
            .chain(extra.iter().map(String::as_str))
            .any(|secret| secret.eq_ignore_ascii_case(&name))
    };
    if !query
        .split('&')
        .any(|pair| secret(pair.split('=').next().unwrap_or("")))
    {
        return std::borrow::Cow::Borrowed(query);
    }
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| {
            let name = pair.split('=').next().unwrap_or("");
            if secret(name) {
                format!("{name}=REDACTED")
            } else {
                pair.to_owned()
            }
        })
        .collect();
    std::borrow::Cow::Owned(pairs.join("&"))
}

/// A query parameter name as a server reads it (`+` is a space, `%XX` a byte), so
/// that `X%2DGoog-Signature` cannot slip past the list.
fn percent_decoded(name: &str) -> String {
    let bytes = name.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(high), Some(low)) => {
                    out.push(u8::try_from(high * 16 + low).unwrap_or(b'%'));
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            byte => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Displays a key's short prefix only.
struct RedactedKey<'a>(&'a IdempotencyKey);

impl fmt::Display for RedactedKey<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.redacted())
    }
}

pub(crate) fn intent_span(
    method: &Method,
    url: &reqwest::Url,
    key: Option<&IdempotencyKey>,
    redact: &[String],
) -> Span {
    let span = tracing::info_span!(
        "intent",
        otel.name = "intent",
        otel.kind = "internal",
        http.request.method = %method,
        url.full = %RedactedUrl { url, extra: redact },
        idempotency_key = Empty,
        attempts = Empty,
        outcome = Empty,
    );
    if let Some(key) = key {
        span.record("idempotency_key", tracing::field::display(RedactedKey(key)));
    }
    span
}

pub(crate) fn attempt_span(
    method: &Method,
    url: &reqwest::Url,
    attempt: u32,
    request_id: RequestId,
    redact: &[String],
) -> Span {
    let span = tracing::info_span!(
        "attempt",
        otel.name = %method,
        otel.kind = "client",
        http.request.method = %method,
        url.full = %RedactedUrl { url, extra: redact },
        server.address = url.host_str().unwrap_or(""),
        server.port = url.port_or_known_default().unwrap_or(0),
        http.request.resend_count = Empty,
        http.response.status_code = Empty,
        error.type = Empty,
        request_id = %request_id,
    );
    // OTel: absent on the first attempt, 1 on the first retry.
    if attempt > 1 {
        span.record("http.request.resend_count", attempt - 1);
    }
    span
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redacted(url: &str, extra: &[String]) -> String {
        let url = reqwest::Url::parse(url).unwrap();
        RedactedUrl { url: &url, extra }.to_string()
    }

    #[test]
    fn credentials_are_stripped_from_urls() {
        assert_eq!(
            redacted("http://user:pw@127.0.0.1:8080/pay?x=1", &[]),
            "http://127.0.0.1:8080/pay?x=1"
        );
        assert_eq!(redacted("http://127.0.0.1/", &[]), "http://127.0.0.1/");
    }

    #[test]
    fn otel_signature_parameters_are_redacted_by_default() {
        assert_eq!(
            redacted(
                "https://127.0.0.1/o?AWSAccessKeyId=AKIA&Expires=9&Signature=abc%2Bdef&sig=s&X-Goog-Signature=g&x=1",
                &[]
            ),
            "https://127.0.0.1/o?AWSAccessKeyId=REDACTED&Expires=9&Signature=REDACTED&sig=REDACTED&X-Goog-Signature=REDACTED&x=1"
        );
        // Encoded or differently cased names are the same parameter to a server.
        assert_eq!(
            redacted("http://u:p@127.0.0.1/?X%2DGoog-SIGNATURE=g&empty&sig", &[]),
            "http://127.0.0.1/?X%2DGoog-SIGNATURE=REDACTED&empty&sig=REDACTED"
        );
        // Names that only contain a secret name are left alone.
        assert_eq!(
            redacted("http://127.0.0.1/?signature_version=4&mysig=1#sig=x", &[]),
            "http://127.0.0.1/?signature_version=4&mysig=1#sig=x"
        );
    }

    #[test]
    fn users_name_more_parameters() {
        let extra = vec!["api_key".to_owned(), "Token".to_owned()];
        assert_eq!(
            redacted("http://127.0.0.1/p?api_key=k1&token=t&page=2", &extra),
            "http://127.0.0.1/p?api_key=REDACTED&token=REDACTED&page=2"
        );
    }

    #[test]
    fn percent_decoding_never_panics_on_malformed_names() {
        for name in ["%", "%4", "%zz", "a%", "%%41", "+%41+", "\u{e9}%C3%A9"] {
            let _ = percent_decoded(name);
        }
        assert_eq!(percent_decoded("%41+b%2d"), "A b-");
    }
}
