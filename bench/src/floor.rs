//! P8's floor: what a retry layer must allocate on the success path, one step at a
//! time, on a bare reqwest client with no retry logic at all. From `HandCopy` on,
//! each step adds one thing to the one before, so the difference between two rows
//! is that thing's cost, measured inside a real request rather than in isolation.
//! Each step uses the cheapest way known to do it, so the last row is a floor for a
//! layer with this crate's features (copy, key, request id, timer, attempt record).
//!
//! Also P1/P2's floor reference rows ([`defaults`]): what the crate's defaults
//! must do on a successful single-attempt GET, by hand on bare reqwest.

pub mod defaults;
pub mod deposits;

use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use reqwest::Request;

use crate::row::{drain, Outcome, DEFAULT_ATTEMPT_TIMEOUT};

/// A floor row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Step {
    /// `client.execute(client.get(url).build()?)`: bare reqwest, with the request
    /// built first (what every wrapper does).
    Built,
    /// `Built` + `Request::try_clone()`, the clone sent and the original kept until
    /// the response is in: what reqwest-retry does. Not part of the cumulative
    /// chain: `try_clone` sets the copy's timeout through `timeout_mut()`, which
    /// creates the copy's extension map (3 allocations) only to overwrite it.
    TryClone,
    /// `Built` + a copy made by hand (method, URL, headers, version), sent; the
    /// original kept. The cheapest copy: the URL's string is its only allocation.
    HandCopy,
    /// + an `Idempotency-Key` header (36 bytes) on the copy sent.
    Key,
    /// + a fresh 36-byte `X-Request-Id` header on the copy sent.
    RequestId,
    /// + a 10 s attempt timer, as `tokio::time::timeout` around `execute` (the
    ///   timer lives inside the future; reqwest's own per-request timeout instead
    ///   costs an extension map and a boxed `Sleep`, see the bare + timeout row).
    Timeout,
    /// + one small value inserted into the response's extensions (an attempt
    ///   record handed back with the response).
    ResponseExtension,
}

impl Step {
    /// Every row, in table order.
    pub const ALL: [Step; 7] = [
        Step::Built,
        Step::TryClone,
        Step::HandCopy,
        Step::Key,
        Step::RequestId,
        Step::Timeout,
        Step::ResponseExtension,
    ];

    /// The row's name in the P8 table.
    pub fn name(self) -> &'static str {
        match self {
            Step::Built => "floor: bare, request built then executed",
            Step::TryClone => "floor: bare + `Request::try_clone()` kept",
            Step::HandCopy => "floor: bare + copy by hand kept (method, URL, headers)",
            Step::Key => "floor: … + Idempotency-Key header",
            Step::RequestId => "floor: … + fresh request-id header",
            Step::Timeout => "floor: … + 10 s attempt timer (`tokio::time::timeout`)",
            Step::ResponseExtension => "floor: … + one response extension",
        }
    }

    /// The key in the `P8_VALUES` line.
    pub fn short(self) -> &'static str {
        match self {
            Step::Built => "floor-built",
            Step::TryClone => "floor-try-clone",
            Step::HandCopy => "floor-hand-copy",
            Step::Key => "floor-key",
            Step::RequestId => "floor-request-id",
            Step::Timeout => "floor-timeout",
            Step::ResponseExtension => "floor-response-extension",
        }
    }
}

/// What a retry layer could attach to the response: a fixed-size record.
#[derive(Debug, Clone, Copy)]
struct StepRecord {
    _attempts: u32,
    _elapsed: Duration,
}

/// A 36-byte header value that differs per `serial` (the length of a hyphenated
/// UUID), formatted on the stack: the only allocation is the value's own bytes.
fn id_value(serial: u64) -> HeaderValue {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut text = [b'0'; 36];
    let mut rest = serial;
    for byte in text.iter_mut().rev().take(16) {
        *byte = HEX[(rest & 0xf) as usize];
        rest >>= 4;
    }
    HeaderValue::from_bytes(&text).unwrap_or_else(|_| HeaderValue::from_static("0"))
}

/// A copy of a bodiless request without its extensions (where reqwest keeps its
/// own per-request settings, such as the timeout).
pub fn copy_by_hand(request: &Request) -> Request {
    let mut copy = Request::new(request.method().clone(), request.url().clone());
    *copy.headers_mut() = request.headers().clone();
    *copy.version_mut() = request.version();
    copy
}

/// One GET through `client` as the row `step` describes.
pub async fn get(client: &reqwest::Client, url: &str, step: Step, serial: u64) -> Outcome {
    let Ok(template) = client.get(url).build() else {
        return Outcome { status: None };
    };
    let (mut attempt, kept) = match step {
        Step::Built => (template, None),
        Step::TryClone => match template.try_clone() {
            Some(copy) => (copy, Some(template)),
            None => return Outcome { status: None },
        },
        _ => (copy_by_hand(&template), Some(template)),
    };
    if step >= Step::Key {
        attempt
            .headers_mut()
            .insert(HeaderName::from_static("idempotency-key"), id_value(serial));
    }
    if step >= Step::RequestId {
        attempt.headers_mut().insert(
            HeaderName::from_static("x-request-id"),
            id_value(serial.wrapping_mul(31)),
        );
    }
    let result = if step >= Step::Timeout {
        match tokio::time::timeout(DEFAULT_ATTEMPT_TIMEOUT, client.execute(attempt)).await {
            Ok(result) => result,
            Err(_elapsed) => return Outcome { status: None },
        }
    } else {
        client.execute(attempt).await
    };
    drop(kept);
    match result {
        Ok(mut response) => {
            if step >= Step::ResponseExtension {
                response.extensions_mut().insert(StepRecord {
                    _attempts: 1,
                    _elapsed: Duration::ZERO,
                });
            }
            drain(response).await
        }
        Err(_) => Outcome { status: None },
    }
}
