//! The blocking client, as a script or a command-line tool would use it: no async
//! runtime in sight. A payment meets a `503` with `Retry-After: 1` and then a lost
//! response; the client waits, resends under the same key, and the server's
//! idempotency layer replays the stored result. One payment, not two.
//!
//! (The payments server is async and runs on a runtime of its own, as a separate
//! service would; the client's side is plain blocking code.)
//!
//! Run: `cargo run --example blocking --features blocking`

use std::time::Duration;

use reqwest_resilience::{blocking, ResponseExt, RetryPolicy};

#[path = "support/payments_server.rs"]
mod payments_server;
use payments_server::{Fault, PaymentsServer};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server_runtime = tokio::runtime::Runtime::new()?;
    let server = server_runtime.block_on(PaymentsServer::start(vec![
        Fault::Unavailable,
        Fault::CommitThenDrop,
    ]))?;

    let policy = RetryPolicy::builder()
        .max_attempts(4)
        .deadline(Duration::from_secs(10))
        .build()?;
    let client = blocking::ResilientClient::with_policy(policy);

    let response = client
        .post(format!("{}/payments", server.url))
        .header("content-type", "application/json")
        .body(r#"{"amount":500,"currency":"EUR","order":"1842"}"#)
        .send()?;

    let log = response.attempt_log().cloned().unwrap_or_default();
    let replayed = response
        .headers()
        .get(tower_idempotency::IDEMPOTENT_REPLAYED)
        .is_some();
    println!("attempts:\n{log}");
    println!(
        "{} {} (replayed by the server: {replayed})",
        response.status(),
        response.text()?
    );
    println!("payments on the server: {}", server.effects());
    assert_eq!(server.effects(), 1, "one intent, one payment");
    assert_eq!(log.len(), 3);
    Ok(())
}
