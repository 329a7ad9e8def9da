//! One call under other retry settings, without a second client: same pool, same
//! budget.

use reqwest_resilience::RetryBudget;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{client_with, received};

#[tokio::test]
async fn one_call_can_allow_more_attempts_and_still_spends_the_clients_budget() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(503))
        .expect(2 + 5)
        .mount(&server)
        .await;
    let budget = RetryBudget::builder().reserve(50).build().unwrap();
    let (client, sleeper) = client_with(|p| p.max_attempts(2).budget(budget.clone()));
    let now = std::time::Instant::now;
    let before = budget.available_at("127.0.0.1", now());

    let usual = client.get(server.uri()).send().await.unwrap_err();
    let patient = client
        .get(server.uri())
        .adjust_policy(|policy| policy.max_attempts(5))
        .send()
        .await
        .unwrap_err();

    assert_eq!(usual.attempts(), 2);
    assert_eq!(patient.attempts(), 5, "{patient}");
    // The adjusted policy kept the client's sleeper and budget: 1 + 4 retries.
    assert_eq!(sleeper.delays().len(), 1 + 4);
    assert_eq!(before - budget.available_at("127.0.0.1", now()), 1 + 4);
    assert_eq!(received(&server).await.len(), 7);
}

#[tokio::test]
async fn an_adjusted_policy_that_does_not_build_fails_before_sending() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200))
        .expect(0)
        .mount(&server)
        .await;
    let (client, _) = client_with(|p| p);
    let error = client
        .get(server.uri())
        .adjust_policy(|policy| policy.max_attempts(0))
        .send()
        .await
        .unwrap_err();
    assert!(error.is_invalid_request(), "{error}");
    let source = std::error::Error::source(&error).map(ToString::to_string);
    assert_eq!(
        source.as_deref(),
        Some("max_attempts must be between 1 and 50, got 0")
    );
}

#[cfg(feature = "middleware")]
#[tokio::test]
async fn through_the_middleware_intent_options_carry_the_policy() {
    use reqwest_resilience::{IntentOptions, ResilienceMiddleware, ResilientClient};

    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(503))
        .expect(1 + 4)
        .mount(&server)
        .await;
    let sleeper = reqwest_resilience::RecordingSleeper::new();
    let policy = crate::support::policy(&sleeper)
        .max_attempts(1)
        .build()
        .unwrap();
    let chain =
        reqwest_middleware::ClientBuilder::new(ResilientClient::reqwest_builder().build().unwrap())
            .with(ResilienceMiddleware::new(policy.clone()))
            .build();
    let once = chain.get(server.uri()).send().await;
    assert!(once.is_err());
    let patient = policy.to_builder().max_attempts(4).build().unwrap();
    let error = chain
        .get(server.uri())
        .with_extension(IntentOptions::new().policy(patient))
        .send()
        .await
        .unwrap_err();
    assert!(error.to_string().contains("4 attempts"), "{error}");
    assert_eq!(sleeper.delays().len(), 3);
}
