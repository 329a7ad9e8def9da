//! A keyed payment whose key survives a crash.
//!
//! The key is created when the payment form opens and persisted (here: a file in
//! the temp directory) *before* the first attempt. The first process sends the
//! payment; the server commits it, but the response is lost, and the process "dies"
//! with an unknown outcome. The restarted process reads the same key and sends the
//! same intent again: the server's idempotency layer (`tower-idempotency`) replays
//! the stored result. One payment, not two.
//!
//! Run: `cargo run --example payments`

use std::path::PathBuf;
use std::time::Duration;

use reqwest_resilience::{IdempotencyKey, ResilientClient, RetryPolicy};

#[path = "support/payments_server.rs"]
mod payments_server;
use payments_server::{Fault, PaymentsServer};

const BODY: &str = r#"{"amount":500,"currency":"EUR","order":"1842"}"#;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = PaymentsServer::start(vec![Fault::CommitThenDrop]).await?;
    let key_file = std::env::temp_dir().join(format!("payment-key-{}", std::process::id()));

    // Process 1: the form opens, the key is persisted, the payment is sent.
    let key = IdempotencyKey::generate();
    std::fs::write(&key_file, key.as_str())?;
    println!(
        "form opened; key {} persisted to {}",
        key.redacted(),
        key_file.display()
    );
    // One attempt only, to play a process that dies right after the lost response.
    let outcome = pay(&client(), &server.url, &key_file, Some(1)).await;
    match outcome {
        Err(error) if error.is_outcome_unknown() => println!(
            "process 1: {error}\n  -> the payment may exist; keep the key, do not make a new one"
        ),
        other => println!("process 1: unexpected {other:?}"),
    }
    println!("payments on the server: {}\n", server.effects());

    // Process 2: restarted; it finds the persisted key and resends the same intent.
    let response = pay(&client(), &server.url, &key_file, None).await?;
    let replayed = response
        .headers()
        .get(tower_idempotency::IDEMPOTENT_REPLAYED)
        .is_some_and(|value| value == "true");
    println!(
        "process 2: {} {} (replayed: {replayed})",
        response.status(),
        response.text().await?
    );
    println!(
        "payments on the server: {} (the retry got the stored result)",
        server.effects()
    );
    std::fs::remove_file(&key_file)?;
    assert_eq!(server.effects(), 1);
    Ok(())
}

/// The client one process builds at start-up (a restarted process builds a new one).
fn client() -> ResilientClient {
    ResilientClient::with_policy(
        RetryPolicy::builder()
            .deadline(Duration::from_secs(5))
            .build()
            .expect("valid policy"),
    )
}

async fn pay(
    client: &ResilientClient,
    url: &str,
    key_file: &PathBuf,
    attempts: Option<u32>,
) -> Result<reqwest::Response, reqwest_resilience::Error> {
    let key = std::fs::read_to_string(key_file).expect("the key was persisted");
    let mut request = client
        .post(format!("{url}/payments"))
        .idempotency_key(key)
        .header("content-type", "application/json")
        .body(BODY);
    if let Some(attempts) = attempts {
        // This one call only; the client's pool and budget stay the same.
        request = request.adjust_policy(|policy| policy.max_attempts(attempts));
    }
    request.send().await
}
