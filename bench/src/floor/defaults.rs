//! P1/P2's floor reference rows: what reqwest-resilience's defaults must do on a
//! successful single-attempt GET, done by hand on bare reqwest as cheaply as we
//! know how, so that crate ÷ floor is what the crate costs beyond its features.
//!
//! [`complete`] is the floor: all of the defaults' per-request work. [`partial`]
//! is the floor as it was before the budget deposit, the classification, the spans
//! and the clock reads were added; it stays as a reference row because the
//! no-regression gate was set against it.
//!
//! Neither carries a per-request timer: as the crate does with a client it builds,
//! the 10 s attempt timeout is the client's own timeout (see
//! [`Peer::Floor`](crate::peers::Peer::Floor)). On a first attempt the time left
//! before the 30 s deadline is the whole deadline, longer than the attempt
//! timeout, so the deadline changes nothing on the wire either.

use std::time::{Duration, Instant};

use rand::RngCore;
use reqwest::header::{HeaderName, HeaderValue};
use reqwest::{Method, StatusCode};
use tracing::field::Empty;
use tracing::Instrument;

use super::copy_by_hand;
use super::deposits::DepositWindow;
use crate::row::{drain, Outcome};

/// What the complete floor hands back in the response's extensions, as the crate
/// hands back its attempt log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptRecord {
    /// Attempts made (the floor never retries: always 1).
    pub attempts: u32,
    /// From the attempt's start to its response head.
    pub elapsed: Duration,
    /// The crate would retry this response (see [`retry_worthy`]).
    pub retry_worthy: bool,
}

/// The crate's default classification of a response, by hand: a transient status
/// (408, 429, 502, 503, 504) on a method that may be repeated (RFC 9110 §9.2.2).
/// The floor's requests carry no idempotency key, so the method alone decides.
pub fn retry_worthy(method: &Method, status: StatusCode) -> bool {
    matches!(status.as_u16(), 408 | 429 | 502 | 503 | 504) && method.is_idempotent()
}

/// A fresh UUID v4 made as reqwest-resilience makes one (`src/ids.rs`): 16 bytes
/// from the thread-local CSPRNG.
fn random_uuid_v4() -> uuid::Uuid {
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    uuid::Builder::from_random_bytes(bytes).into_uuid()
}

/// The id hyphenated in lower case, formatted on the stack.
fn request_id_value(id: uuid::Uuid) -> HeaderValue {
    let mut buffer = uuid::Uuid::encode_buffer();
    let text = id.hyphenated().encode_lower(&mut buffer);
    HeaderValue::from_str(text).unwrap_or_else(|_| HeaderValue::from_static(""))
}

fn request_id_header() -> HeaderName {
    HeaderName::from_static("x-request-id")
}

/// One GET with all of the defaults' per-request work, the body read.
pub async fn complete(client: &reqwest::Client, deposits: &DepositWindow, url: &str) -> Outcome {
    match send(client, deposits, url).await {
        Ok(response) => drain(response).await,
        Err(_) => Outcome { status: None },
    }
}

/// The complete floor up to the response head, in the crate's order: the request
/// built; an intent span, disabled with tracing off; the clock read at the start;
/// a deposit into the retry budget; a fresh UUID v4 request id; an attempt span; a
/// copy by hand sent with the id, the original kept until the response is in (for a
/// retry); the clock read at the end; the status classified and recorded on the
/// attempt span; the level check before the intent span's outcome is recorded; an
/// [`AttemptRecord`] in the response's extensions. The floor never retries: a
/// response worth retrying is handed back like any other, with its record saying so.
pub async fn send(
    client: &reqwest::Client,
    deposits: &DepositWindow,
    url: &str,
) -> reqwest::Result<reqwest::Response> {
    let template = client.get(url).build()?;
    let intent_span = tracing::info_span!(
        "intent",
        otel.kind = "internal",
        http.request.method = %template.method(),
        url.full = %template.url(),
        attempts = Empty,
        outcome = Empty,
    );
    async move {
        let started = Instant::now();
        deposits.deposit(started);
        let request_id = random_uuid_v4();
        let attempt_span = tracing::info_span!(
            "attempt",
            otel.kind = "client",
            http.request.method = %template.method(),
            url.full = %template.url(),
            http.response.status_code = Empty,
            request_id = %request_id,
        );
        let mut attempt = copy_by_hand(&template);
        attempt
            .headers_mut()
            .insert(request_id_header(), request_id_value(request_id));
        let mut sending = std::pin::pin!(client.execute(attempt).instrument(attempt_span));
        let result = sending.as_mut().await;
        let ended = Instant::now();
        let mut response = result?;
        let status = response.status();
        sending
            .span()
            .record("http.response.status_code", status.as_u16());
        let record = AttemptRecord {
            attempts: 1,
            elapsed: ended.saturating_duration_since(started),
            retry_worthy: retry_worthy(template.method(), status),
        };
        drop(template);
        if tracing::level_enabled!(tracing::Level::INFO) {
            let span = tracing::Span::current();
            span.record("attempts", record.attempts);
            span.record("outcome", "response");
        }
        response.extensions_mut().insert(record);
        Ok(response)
    }
    .instrument(intent_span)
    .await
}

/// The partial floor: a copy by hand sent with a fresh UUID v4 `x-request-id`, the
/// original kept until the response is in, one value in the response's extensions,
/// the body read.
pub async fn partial(client: &reqwest::Client, url: &str) -> Outcome {
    let Ok(template) = client.get(url).build() else {
        return Outcome { status: None };
    };
    let mut attempt = copy_by_hand(&template);
    attempt
        .headers_mut()
        .insert(request_id_header(), request_id_value(random_uuid_v4()));
    let result = client.execute(attempt).await;
    drop(template);
    match result {
        Ok(mut response) => {
            response.extensions_mut().insert(AttemptRecord {
                attempts: 1,
                elapsed: Duration::ZERO,
                retry_worthy: false,
            });
            drain(response).await
        }
        Err(_) => Outcome { status: None },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_worthy_as_the_crate_classifies_by_default() {
        for code in [408, 429, 502, 503, 504] {
            let status = StatusCode::from_u16(code).expect("a status");
            assert!(retry_worthy(&Method::GET, status), "{code}");
            assert!(retry_worthy(&Method::PUT, status), "{code}");
            assert!(!retry_worthy(&Method::POST, status), "{code}: no key");
        }
        for code in [200, 201, 400, 404, 409, 500, 501] {
            let status = StatusCode::from_u16(code).expect("a status");
            assert!(!retry_worthy(&Method::GET, status), "{code}");
        }
    }
}
