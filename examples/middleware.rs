//! reqwest-middleware users: the same intent semantics as a middleware.
//!
//! Run: `cargo run --example middleware --features middleware`

use std::time::Duration;

use reqwest_middleware::ClientBuilder;
use reqwest_resilience::{
    IntentOptions, ResilienceMiddleware, ResilientClient, ResponseExt, RetryPolicy,
};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = MockServer::start().await; // 127.0.0.1, random port
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503).insert_header("retry-after", "0"))
        .up_to_n_times(2)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(201).set_body_string(r#"{"payment_id":"pay_1"}"#))
        .mount(&server)
        .await;

    let policy = RetryPolicy::builder()
        .deadline(Duration::from_secs(5))
        .build()?;
    // Outermost: everything added after it runs once per attempt.
    let client = ClientBuilder::new(ResilientClient::reqwest_builder().build()?)
        .with(ResilienceMiddleware::new(policy))
        .build();

    let response = client
        .post(format!("{}/payments", server.uri()))
        .with_extension(IntentOptions::new().idempotency_key("order-1842"))
        .body(r#"{"amount":500}"#)
        .send()
        .await?;
    let attempts = response.attempt_log().map_or(0, |log| log.len());
    println!("{} after {attempts} attempts", response.status());
    for request in server.received_requests().await.unwrap_or_default() {
        println!(
            "  server saw key={:?} request-id={:?}",
            request.headers.get("idempotency-key"),
            request.headers.get("x-request-id"),
        );
    }
    Ok(())
}
