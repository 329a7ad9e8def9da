//! Shared helpers for the end-to-end tests: client builders, bounded waiting, and
//! the servers: the reference idempotent server (the oracle), the layer server
//! (`tower-idempotency` in front of an axum route; both answer [`IdempotentServer`]),
//! and a raw TCP server for responses hyper would never write.

#![allow(dead_code)]

pub mod idempotent_server;
pub mod layer_server;
pub mod raw_server;
pub mod reference_server;

use std::future::Future;
use std::time::{Duration, Instant};

use reqwest_resilience::{
    AttemptOutcome, Backoff, RecordingSleeper, ResilientClient, RetryPolicy, RetryPolicyBuilder,
    TransportFailure,
};

pub use idempotent_server::IdempotentServer;
pub use layer_server::LayerServer;
pub use reference_server::{Config, Expected, Fault, Handled, ReferenceServer};

pub const MS: Duration = Duration::from_millis(1);

/// A connection closed with no response.
pub const LOST: AttemptOutcome = AttemptOutcome::Failed(TransportFailure::ConnectionLost);

/// An attempt answered with `code`.
pub fn status(code: u16) -> AttemptOutcome {
    AttemptOutcome::Status(http::StatusCode::from_u16(code).expect("a valid status"))
}

/// A policy for tests: instant recorded sleeps, seeded jitter, no budget limit.
pub fn recording_policy(sleeper: &RecordingSleeper) -> RetryPolicyBuilder {
    RetryPolicy::builder()
        .sleeper(sleeper.clone())
        .rng_seed(42)
        .backoff(Backoff::full_jitter(MS, 10 * MS))
        .no_budget()
}

/// A client built from `customise(recording_policy(..))`, and its sleeper.
pub fn recording_client(
    customise: impl FnOnce(RetryPolicyBuilder) -> RetryPolicyBuilder,
) -> (ResilientClient, RecordingSleeper) {
    let sleeper = RecordingSleeper::new();
    let policy = customise(recording_policy(&sleeper))
        .build()
        .expect("valid test policy");
    (ResilientClient::with_policy(policy), sleeper)
}

/// Polls `condition` every few milliseconds until it holds; panics with `what`
/// after `limit`. Bounded in time (and so in iterations).
pub async fn wait_until(what: &str, limit: Duration, mut condition: impl FnMut() -> bool) {
    let started = Instant::now();
    while !condition() {
        assert!(
            started.elapsed() < limit,
            "timed out after {limit:?} waiting for {what}"
        );
        tokio::time::sleep(2 * MS).await;
    }
}

/// Runs `future` with a hard limit, so a hung intent fails the test instead of
/// hanging the binary.
pub async fn within<T>(limit: Duration, what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(limit, future)
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within {limit:?}"))
}

/// The `"id"` field of a payment response body.
pub fn result_id(body: &str) -> String {
    let value: serde_json::Value =
        serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body:?}"));
    value["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no id in {body}"))
        .to_owned()
}

/// Reads a final response: (status, result id if any, attempt outcomes).
pub async fn read_payment(
    response: reqwest::Response,
) -> (u16, Option<String>, Vec<AttemptOutcome>) {
    let outcomes = outcomes_of(&response);
    let status = response.status().as_u16();
    let body = response.text().await.expect("response body");
    let id = serde_json::from_str::<serde_json::Value>(&body)
        .ok()
        .and_then(|value| value["id"].as_str().map(str::to_owned));
    (status, id, outcomes)
}

/// The outcome of every attempt of the intent that produced `response`.
pub fn outcomes_of(response: &reqwest::Response) -> Vec<AttemptOutcome> {
    reqwest_resilience::ResponseExt::attempt_log(response)
        .expect("every response carries its attempt log")
        .attempts()
        .iter()
        .map(|attempt| *attempt.outcome())
        .collect()
}

/// A payment payload.
pub fn payment(amount: u64) -> serde_json::Value {
    serde_json::json!({ "amount": amount, "currency": "EUR", "customer": "cus_42" })
}

/// A keyed `POST /payments` of `payload` as one intent (JSON written by hand, so
/// the binary does not need the crate's `json` feature).
pub fn post_payment(
    client: &ResilientClient,
    server: &impl IdempotentServer,
    key: &str,
    payload: &serde_json::Value,
) -> reqwest_resilience::RequestBuilder {
    client
        .post(server.at("/payments"))
        .bearer_auth("tok_alice")
        .idempotency_key(key)
        .header("content-type", "application/json")
        .body(payload.to_string())
}
