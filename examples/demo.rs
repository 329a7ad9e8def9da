//! One payment intent against a flaky payments server, end to end.
//!
//! Starts its own server on 127.0.0.1 (a tiny payments API whose route sits behind
//! `tower-idempotency`'s layer, the server half of this crate), then:
//! 1. sends one payment that meets `503 + Retry-After: 1`, then a connection dropped
//!    *after* the server committed the payment and its layer stored the response,
//!    then gets the stored `201` replayed by the layer — one payment, not two;
//! 2. reuses the key with a different amount → the layer's `422`
//!    (`application/problem+json`), returned at once;
//! 3. calls an endpoint slower than the deadline → a typed "deadline exceeded" error
//!    that says the outcome is unknown.
//!
//! Run: `cargo run --example demo`

use std::time::{Duration, Instant};

use reqwest_resilience::{AttemptLog, Backoff, ResilientClient, ResponseExt, RetryPolicy};

#[path = "support/payments_server.rs"]
mod payments_server;
use payments_server::{Fault, PaymentsServer};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = PaymentsServer::start(vec![Fault::Unavailable, Fault::CommitThenDrop]).await?;
    let policy = RetryPolicy::builder()
        .max_attempts(4)
        .backoff(Backoff::full_jitter(
            Duration::from_millis(100),
            Duration::from_secs(2),
        ))
        .deadline(Duration::from_secs(5))
        .build()?;
    let client = ResilientClient::with_policy(policy);
    let started = Instant::now();

    println!("1) POST /payments {{\"amount\":500}} — server: 503 + Retry-After: 1, then a lost response, then the stored result\n");
    let response = client
        .post(format!("{}/payments", server.url))
        .header("content-type", "application/json")
        .body(r#"{"amount":500,"currency":"EUR"}"#)
        .send()
        .await?;
    let status = response.status();
    let replayed = replayed(&response);
    let log = response.attempt_log().cloned().unwrap_or_default();
    // The generated key, to keep with the order (here: to reuse it in step 2).
    let key = log
        .idempotency_key()
        .map(|key| key.as_str().to_owned())
        .unwrap_or_default();
    print_log(&log);
    println!(
        "   -> {status} {} (replayed: {replayed})   payments created on the server: {}\n",
        response.text().await?,
        server.effects()
    );

    println!("2) the same key with a different amount");
    let response = client
        .post(format!("{}/payments", server.url))
        .idempotency_key(key.clone())
        .body(r#"{"amount":900,"currency":"EUR"}"#)
        .send()
        .await?;
    let status = response.status();
    let problem: serde_json::Value = serde_json::from_str(&response.text().await?)?;
    println!(
        "   -> {status}, problem: {:?}   payments created: {} (refused before any effect)\n",
        problem["title"].as_str().unwrap_or_default(),
        server.effects()
    );
    assert_eq!(server.effects(), 1, "one intent, one payment");

    println!("3) an endpoint slower than a 1.2 s deadline (attempt timeout 0.5 s)");
    let slow_client = ResilientClient::with_policy(
        RetryPolicy::builder()
            .max_attempts(5)
            .deadline(Duration::from_millis(1200))
            .attempt_timeout(Duration::from_millis(500))
            .build()?,
    );
    let error = slow_client
        .post(format!("{}/slow", server.url))
        .send()
        .await
        .expect_err("the deadline must end this intent");
    print_log(error.attempt_log());
    println!(
        "   -> error: {error}\n      reason={} outcome_unknown={} (reconcile, or retry later with the same key)\n",
        error.reason().as_str(),
        error.is_outcome_unknown()
    );
    println!("demo finished in {:.1?}", started.elapsed());
    Ok(())
}

/// Whether the server's idempotency layer answered with a stored response.
fn replayed(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(tower_idempotency::IDEMPOTENT_REPLAYED)
        .is_some_and(|value| value == "true")
}

/// The attempt log's own `Display`: one line per attempt (number, request id, the
/// key's prefix, outcome, duration, the pause that followed and why).
fn print_log(log: &AttemptLog) {
    for line in log.to_string().lines() {
        println!("   {line}");
    }
}
