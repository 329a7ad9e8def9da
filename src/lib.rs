//! Send an HTTP request through [`reqwest`] as **one intent**, and survive the network.
//!
//! A client that sent `POST /payments` and got a timeout cannot tell "the request
//! never arrived" from "the payment was made and the response was lost". Not retrying
//! loses payments; retrying blindly pays twice. This crate retries the safe way:
//!
//! * one **idempotency key** per intent, generated before the first attempt (or
//!   supplied by you) and sent unchanged on every retry, plus a fresh **request id**
//!   per attempt for logs;
//! * only **transient** failures are retried (connect errors, timeouts, lost
//!   connections, 408/429/502/503/504, 409 "in progress" on keyed requests), and POST
//!   or PATCH only with a key — or when the failure proves the request never left
//!   (see [`TransportFailure`] for the taxonomy);
//! * pauses use **full or decorrelated jitter** and honour **`Retry-After`**;
//! * an intent stops at **max attempts**, at its **deadline**, or when the shared
//!   **retry budget** is spent, with a typed [`Error`] that says why and whether the
//!   **outcome is unknown**.
//!
//! Exactly-once delivery does not exist: this is at-least-once delivery plus the
//! server's deduplication inside its own window. The key protects you only while the
//! server remembers it.
//!
//! # Example
//! ```no_run
//! use std::time::Duration;
//! use reqwest_resilience::{ResilientClient, ResponseExt, RetryPolicy};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let policy = RetryPolicy::builder()
//!     .max_attempts(4)
//!     .deadline(Duration::from_secs(10))
//!     .build()?;
//! let client = ResilientClient::with_policy(policy);
//!
//! match client
//!     .post("http://127.0.0.1:8080/payments")
//!     .idempotency_key("order-1842-payment") // or let the client generate one
//!     .body(r#"{"amount": 500, "currency": "EUR"}"#)
//!     .send()
//!     .await
//! {
//!     Ok(response) => {
//!         let attempts = response.attempt_log().map_or(0, |log| log.len());
//!         println!("{} after {attempts} attempt(s)", response.status());
//!     }
//!     Err(error) if error.is_outcome_unknown() => {
//!         // Do not resend with a new key: reconcile, or retry later with this key.
//!         let key = error.idempotency_key().map(|key| key.as_str().to_owned());
//!         eprintln!("payment state unknown ({error}); retry later with key {key:?}");
//!     }
//!     Err(error) => eprintln!("payment not made: {error}"),
//! }
//! # Ok(()) }
//! ```
//!
//! # Where things are
//!
//! At the root, what sending an intent needs: [`ResilientClient`] and its
//! [`RequestBuilder`], [`RetryPolicy`] and its builder, [`Backoff`], [`Hedging`],
//! [`IntentOptions`] and [`PreparedIntent`], the [`IdempotencyKey`] and [`RequestId`],
//! and what comes back: [`Error`] with its [`GiveUpReason`] and [`TransportFailure`],
//! the response's [`AttemptLog`] ([`ResponseExt`]). The rest, by what you reach for:
//!
//! | module | what is in it |
//! |---|---|
//! | [`gate`] | what may hold back an attempt: the [`Gate`] contract, the [`RetryBudget`], the [`CircuitBreaker`], the [`AdaptiveThrottle`] |
//! | [`watch`] | what watches or journals an intent: [`IntentObserver`] and its events, [`WriteAhead`], each attempt's record |
//! | [`classification`] | what is retried: the [`Classifier`] contract, [`Decision`], the `Retry-After` parsers |
//! | [`time`] | the [`Clock`] and the [`Sleeper`], injectable for tests |
//! | `testing` (feature `testing`) | wiremock responders and assertions for your own tests |
//! | [`RetryPolicyConfig`] (feature `serde`) | a policy from TOML/JSON and environment variables |
//!
//! # Defaults
//!
//! Every default, with the reason for it, is in one table: [`RetryPolicy`]'s
//! "Defaults" section. In short: 3 attempts, full jitter (100 ms base, 2 s cap), a
//! 30 s deadline, a key on POST/PATCH, 408/429/502/503/504 retried, a budget of 10 %.
//!
//! # Extension points
//! * [`IntentObserver`] — told, synchronously, after each attempt, when a retry is
//!   scheduled, and when the intent ends: metrics, audit;
//! * [`WriteAhead`] — at most one per intent: awaited before its first byte (able
//!   to refuse it) and, then, at its end: a durable journal;
//! * [`Gate`] — asked before every attempt (the first one too), told every outcome:
//!   the [`RetryBudget`] is one, a circuit breaker another;
//! * [`Classifier`] — decides what is transient, and may say when to come back
//!   ([`Decision::RetryAfter`]).
//!
//! # Testing your code
//! Inject [`RecordingSleeper`] (instant, records every pause) and a seed
//! ([`RetryPolicyBuilder::rng_seed`]) and run against a wiremock server: the retries
//! happen for real over HTTP, in no time, with repeatable delays. Add a
//! [`VirtualClock`] ([`RecordingSleeper::advancing`] and
//! [`RetryPolicyBuilder::clock`]) and the recorded pauses also use up the deadline
//! and the budget window as real ones would. The `testing`
//! feature adds ready-made wiremock responders and assertions (`testing` module).
//!
//! # Install
//! ```sh
//! cargo add reqwest-resilience                      # HTTPS (rustls) and HTTP/2 included
//! cargo add reqwest-resilience --features json      # .json(&body), as in reqwest
//! cargo add reqwest-resilience-journal              # durable intents (SQLite by default)
//! ```
//! This crate re-exports the [`reqwest`] it is built on: `reqwest_resilience::reqwest::Certificate`
//! trusts a private CA without a second, version-matched `reqwest` dependency.
//!
//! # Features
//! On by default, mirroring reqwest 0.13's defaults so that HTTPS works out of the box:
//! `default-tls` (TLS through **rustls with the aws-lc-rs provider**, reqwest's
//! `default-tls`), `charset`, `http2`, `system-proxy` (reqwest's features of the same
//! name). Off by default — in these docs each gated item is marked with the feature it
//! needs:
//!
//! | you want | feature |
//! |---|---|
//! | [`RequestBuilder::json`] / `query` / `form` (without it: error E0599, no method `json`) | `json`, `query`, `form` |
//! | [`ResilienceMiddleware`] in a `reqwest_middleware` chain | `middleware` |
//! | [`RetryPolicyConfig`]: a policy from TOML/JSON, environment variables laid over it, durations like `"250ms"` | `serde` |
//! | the `testing` module: wiremock responders and assertions for your tests | `testing` |
//! | [`Metrics`]: OpenTelemetry-named metrics through the `metrics` facade (a Prometheus exporter: [`examples/metrics_prometheus.rs`](https://docs.rs/crate/reqwest-resilience/latest/source/examples/metrics_prometheus.rs)) | `metrics` |
//! | the platform's TLS (OpenSSL on Linux) instead of rustls | `native-tls` (with `default-features = false`) |
//! | rustls with a crypto provider you install yourself | `rustls-no-provider` |
//!
//! With both TLS backends compiled in, reqwest picks native-tls unless the client
//! builder calls `.tls_backend_rustls()`.
//!
//! Bringing your own reqwest? Use `default-features = false` and enable the TLS
//! backend on your `reqwest` dependency, but keep this crate's `rustls-no-provider`
//! (or `native-tls`) and `http2` on: without them certificate errors and HTTP/2
//! refusals cannot be recognised (see [`TransportFailure`]) and are retried like
//! connect failures. Without any TLS backend an `https` URL fails at once with
//! [`TransportFailure::NoTlsBackend`].
//!
//! # Where to read more
//! * Every default and its reason: [`RetryPolicy`]'s Defaults table.
//! * The connect timeout every client gets, and why: [`ResilientClient`]'s
//!   "Connect timeout" section.
//! * What a transport failure proves, and what is retried: [`TransportFailure`].
//! * Why a budget, its arithmetic and defaults: [`RetryBudget`].
//! * Why an intent gave up, and what to do next: [`Error`]; what happened on each
//!   attempt: [`AttemptLog`] (its `Display` prints one line per attempt).
//! * `reqwest_middleware` placement and errors: [`ResilienceMiddleware`].
//!
//! # Tracing
//! Each intent is an `intent` span (INFO, `otel.kind = "internal"`) around one
//! `attempt` span per delivery (INFO, `otel.kind = "client"`, `otel.name` the
//! method): OpenTelemetry wants the per-attempt span to be the HTTP client span. Field
//! names follow the OpenTelemetry HTTP client conventions where they exist:
//!
//! | span | field | value |
//! |---|---|---|
//! | both | `http.request.method` | `POST` |
//! | both | `url.full` | the URL without user name and password; the values of `AWSAccessKeyId`, `Signature`, `sig`, `X-Goog-Signature` and of [`RetryPolicyBuilder::redact_query_params`] shown as `REDACTED` |
//! | `intent` | `idempotency_key` | a short prefix only (at most 8 characters, then `…`); never the whole key |
//! | `intent` | `attempts`, `outcome` | attempts made; `response`, or the [`GiveUpReason`] label (`deadline_exceeded`…) |
//! | `attempt` | `server.address`, `server.port` | host and port |
//! | `attempt` | `http.request.resend_count` | absent on the first attempt, 1 on the first retry |
//! | `attempt` | `http.response.status_code` | the status, when a response arrived |
//! | `attempt` | `error.type` | the status for 4xx/5xx, or the [`TransportFailure::as_str`] label (`timeout`, `connection_lost`…) |
//! | `attempt` | `request_id` | this attempt's request id |
//!
//! Events: `transient failure; retrying` (INFO, with `attempt`, `delay_ms`, `reason`),
//! `retry budget exhausted; not retrying` and `intent gave up` (WARN, with `reason`,
//! `attempts`, `outcome_unknown`). Bodies, cookies and headers (authorization
//! included) are never recorded. Fields are computed only when a subscriber wants the
//! span. `cargo run --example tracing` prints them.
//!

// Links to feature-gated items resolve when the feature is on (docs.rs builds with all
// of them); without it they point at the Features table instead of breaking the build.
#![cfg_attr(not(feature = "json"), doc = "[`RequestBuilder::json`]: #features")]
#![cfg_attr(
    not(feature = "middleware"),
    doc = "[`ResilienceMiddleware`]: #features"
)]
#![cfg_attr(not(feature = "serde"), doc = "[`RetryPolicyConfig`]: #features")]
#![cfg_attr(not(feature = "metrics"), doc = "[`Metrics`]: #features")]
#![deny(missing_docs)]
#![warn(missing_debug_implementations, rust_2018_idioms, unreachable_pub)]
#![forbid(unsafe_code)]
// docs.rs (and .ci/run) build with `--cfg docsrs`: every item behind a feature gets a
// badge naming it. Since Rust 1.92 `doc_cfg` also badges `#[cfg]` items on its own
// (the former `doc_auto_cfg`).
#![cfg_attr(docsrs, feature(doc_cfg))]

mod attempt_log;
// Its pure rules are `pub` for `model_rules`.
#[cfg_attr(not(feature = "unstable-model-rules"), allow(unreachable_pub))]
#[cfg_attr(
    feature = "unstable-model-rules",
    allow(missing_docs, missing_debug_implementations)
)]
mod attempt_timeout;
mod backoff;
// Its pure rules are `pub` for `model_rules`.
#[cfg_attr(not(feature = "unstable-model-rules"), allow(unreachable_pub))]
#[cfg_attr(
    feature = "unstable-model-rules",
    allow(missing_docs, missing_debug_implementations)
)]
mod classify;
mod client;
mod clock;
mod commit_unknown;
// Its pure rules are `pub` for `model_rules`.
#[cfg_attr(not(feature = "unstable-model-rules"), allow(unreachable_pub))]
#[cfg_attr(
    feature = "unstable-model-rules",
    allow(missing_docs, missing_debug_implementations)
)]
mod deadline;
// Its pure rules are `pub` for `model_rules`.
#[cfg_attr(not(feature = "unstable-model-rules"), allow(unreachable_pub))]
#[cfg_attr(
    feature = "unstable-model-rules",
    allow(missing_docs, missing_debug_implementations)
)]
mod decision;
mod error;
mod failure;
pub mod gate;
mod hedge;
mod idempotency;
mod ids;
mod intent;
mod observer;
mod options;
mod outgoing;
mod policy;
mod prepared;
mod retry_after;
mod sleeper;
mod telemetry;
mod template;
mod transport;
mod whole_body;
mod write_ahead;

#[cfg(feature = "serde")]
mod config;
#[cfg(feature = "metrics")]
mod metrics;
#[cfg(feature = "middleware")]
mod middleware;
#[cfg(feature = "testing")]
pub mod testing;

pub mod classification;
pub mod time;
pub mod watch;

#[cfg(feature = "unstable-model-rules")]
#[doc(hidden)]
pub mod model_rules;

// The everyday types: what building a client, sending an intent and handling its
// result need. The rest is grouped by what a user reaches for: `gate`, `watch`,
// `time`, `classification`, `testing`.
pub use attempt_log::{AttemptLog, ResponseExt};
pub use backoff::{Backoff, Delays};
pub use client::{RequestBuilder, ResilientClient, MAX_CONNECT_TIMEOUT};
pub use error::{BoxError, Error, GiveUpReason};
pub use failure::TransportFailure;
pub use hedge::Hedging;
pub use idempotency::{IdempotencyKey, InvalidKey, KeyAttachment, KeyFormat, MAX_KEY_LEN};
pub use ids::RequestId;
pub use options::IntentOptions;
pub use policy::{BuildError, RetryPolicy, RetryPolicyBuilder};
pub use prepared::PreparedIntent;
pub use whole_body::DEFAULT_WHOLE_BODY_LIMIT;

#[cfg(feature = "serde")]
pub use config::{ConfigError, RetryPolicyConfig};
#[cfg(feature = "middleware")]
pub use middleware::ResilienceMiddleware;

// The names that moved into the groups, still at the root so that code written
// against 0.2 builds unchanged; the docs show each at its group's path only
// (CHANGELOG.md, "The public surface grouped", lists them).
#[doc(hidden)]
pub use classification::{
    is_idempotent_method, parse_retry_after, parse_retry_after_bytes, retry_after_of,
    AttemptResult, AttemptView, Classifier, Decision, StatusSet, RETRY_AFTER_SATURATION,
};
#[doc(hidden)]
pub use gate::{
    AdaptiveThrottle, AdaptiveThrottleBuilder, CircuitBreaker, CircuitBreakerBuilder, CircuitState,
    Gate, GateRefusal, GateScope, InvalidBreaker, InvalidBudget, InvalidThrottle, RetryBudget,
    RetryBudgetBuilder, RetryCause,
};
#[doc(hidden)]
pub use time::{Clock, RecordingSleeper, Sleep, Sleeper, SystemClock, TokioSleeper, VirtualClock};
#[cfg(feature = "metrics")]
#[doc(hidden)]
pub use watch::Metrics;
#[doc(hidden)]
pub use watch::{
    AttemptFinished, AttemptOutcome, AttemptRecord, CommitOutcomeUnknown, DelayReason,
    EndNotRecorded, HedgeEvent, HedgeEventKind, IntentEnd, IntentObserver, IntentStart,
    RetryScheduled, ScheduledDelay, WriteAhead, WriteAheadFuture,
};

/// The `reqwest` this crate is built on (0.13), with the features this crate turned on:
/// build a [`reqwest::Certificate`], a [`reqwest::ClientBuilder`] for
/// [`ResilientClient::from_builder`], or match a [`reqwest::StatusCode`] without adding a
/// second, version-matched `reqwest` dependency.
pub use reqwest;

/// The README's examples, compiled as doc tests.
#[cfg(all(doctest, feature = "json", feature = "testing"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// Compile-time proof that the public handles can cross threads.
fn _assert_impls() {
    fn send_sync<T: Send + Sync>() {}
    fn clone<T: Clone>() {}
    send_sync::<ResilientClient>();
    fn send<T: Send>(_: &T) {}
    fn send_future(client: &ResilientClient) {
        // What `tokio::spawn` needs: the builder and the future it returns are Send.
        let builder = client.get("http://127.0.0.1/");
        send(&builder);
        send(&builder.send());
    }
    let _ = send_future;
    send_sync::<RetryPolicy>();
    send_sync::<Error>();
    send_sync::<RetryBudget>();
    clone::<ResilientClient>();
    clone::<RetryPolicy>();
    clone::<RetryBudget>();
}
