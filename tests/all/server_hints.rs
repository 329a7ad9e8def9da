//! A server's explicit retry hint (e.g. `Stripe-Should-Retry`) overrides the status.

use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{client_with, received};

async fn server_answering(first: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(crate::support::Scripted::new(vec![
            first,
            ResponseTemplate::new(200),
        ]))
        .mount(&server)
        .await;
    server
}

#[tokio::test]
async fn should_retry_true_retries_a_status_that_is_otherwise_final() {
    let server =
        server_answering(ResponseTemplate::new(500).insert_header("Stripe-Should-Retry", "true"))
            .await;
    let (client, _) = client_with(|p| p.server_hint_header("Stripe-Should-Retry"));
    let response = client.post(server.uri()).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(received(&server).await.len(), 2);
}

#[tokio::test]
async fn should_retry_false_stops_a_status_that_is_otherwise_transient() {
    let server =
        server_answering(ResponseTemplate::new(503).insert_header("Stripe-Should-Retry", "false"))
            .await;
    let (client, _) = client_with(|p| p.server_hint_header("Stripe-Should-Retry"));
    let response = client.post(server.uri()).send().await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(received(&server).await.len(), 1);
}

#[tokio::test]
async fn hints_are_ignored_unless_configured_and_cannot_make_unkeyed_posts_retryable() {
    let server =
        server_answering(ResponseTemplate::new(503).insert_header("Stripe-Should-Retry", "false"))
            .await;
    let (plain, _) = client_with(|p| p);
    assert_eq!(plain.post(server.uri()).send().await.unwrap().status(), 200);

    let other =
        server_answering(ResponseTemplate::new(500).insert_header("Stripe-Should-Retry", "true"))
            .await;
    let (hinted, _) = client_with(|p| p.server_hint_header("Stripe-Should-Retry"));
    let response = hinted
        .post(other.uri())
        .without_idempotency_key()
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 500, "method safety still applies");
    assert_eq!(received(&other).await.len(), 1);
}

#[tokio::test]
async fn an_invalid_hint_header_name_is_rejected_at_build_time() {
    let result = reqwest_resilience::RetryPolicy::builder()
        .server_hint_header("bad header")
        .build();
    assert!(matches!(
        result,
        Err(reqwest_resilience::BuildError::InvalidHeaderName {
            setting: "server_hint_header",
            ..
        })
    ));
}
