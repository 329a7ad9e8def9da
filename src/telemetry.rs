//! Tracing spans with OpenTelemetry HTTP client attribute names.
//!
//! OpenTelemetry wants the per-attempt span to be the HTTP client span
//! (`otel.kind = "client"`, named after the method) and anything around the attempts
//! to be an internal span, so the intent span is `otel.kind = "internal"`. The key is
//! logged only as a short prefix; URLs lose their user-info; bodies and headers are
//! never recorded. Fields are evaluated only when a subscriber wants the span.

use std::fmt;

use http::Method;
use tracing::field::Empty;
use tracing::Span;

use crate::idempotency::IdempotencyKey;
use crate::ids::RequestId;

/// Displays a URL without user name and password (OTel `url.full` must not carry
/// credentials).
pub(crate) struct RedactedUrl<'a>(pub(crate) &'a reqwest::Url);

impl fmt::Display for RedactedUrl<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let url = self.0;
        if url.username().is_empty() && url.password().is_none() {
            return f.write_str(url.as_str());
        }
        let mut stripped = url.clone();
        // Only fails for URLs that cannot have credentials, which then have none.
        let _ = stripped.set_username("");
        let _ = stripped.set_password(None);
        f.write_str(stripped.as_str())
    }
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
) -> Span {
    let span = tracing::info_span!(
        "intent",
        otel.name = "intent",
        otel.kind = "internal",
        http.request.method = %method,
        url.full = %RedactedUrl(url),
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
) -> Span {
    let span = tracing::info_span!(
        "attempt",
        otel.name = %method,
        otel.kind = "client",
        http.request.method = %method,
        url.full = %RedactedUrl(url),
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

    #[test]
    fn credentials_are_stripped_from_urls() {
        let url = reqwest::Url::parse("http://user:pw@127.0.0.1:8080/pay?x=1").unwrap();
        assert_eq!(
            RedactedUrl(&url).to_string(),
            "http://127.0.0.1:8080/pay?x=1"
        );
        let plain = reqwest::Url::parse("http://127.0.0.1/").unwrap();
        assert_eq!(RedactedUrl(&plain).to_string(), "http://127.0.0.1/");
    }
}
