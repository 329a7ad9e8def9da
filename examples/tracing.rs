//! The spans an intent produces, printed by tracing-subscriber: one `intent` span
//! (`otel.kind=internal`) around one `attempt` span per delivery (`otel.kind=client`)
//! with OpenTelemetry HTTP attribute names. The key appears only as a prefix.
//!
//! Run: `cargo run --example tracing`

use reqwest_resilience::{ResilientClient, RetryPolicy};
use tracing_subscriber::fmt::format::FmtSpan;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_span_events(FmtSpan::CLOSE)
        .with_target(false)
        .with_ansi(false)
        .init();

    let server = MockServer::start().await; // 127.0.0.1, random port
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(502))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(201))
        .mount(&server)
        .await;

    let client = ResilientClient::with_policy(RetryPolicy::default());
    let response = client
        .post(format!("{}/payments", server.uri()))
        .idempotency_key("a-long-secret-idempotency-key")
        .bearer_auth("never-logged")
        .body(r#"{"amount":500}"#)
        .send()
        .await?;
    println!("final status: {}", response.status());
    Ok(())
}
