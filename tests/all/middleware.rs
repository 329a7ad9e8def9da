//! reqwest-middleware users get the same intent semantics (feature `middleware`).
#![cfg(feature = "middleware")]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use http::Extensions;
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware, Middleware, Next};
use reqwest_resilience::{IntentOptions, ResilienceMiddleware, ResilientClient, ResponseExt};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{assert_distinct_request_ids, fail_then_ok, policy, received, single_key};

/// Counts the requests that pass through it (a per-attempt middleware).
#[derive(Clone, Default)]
struct Counter(Arc<AtomicUsize>);

#[async_trait::async_trait]
impl Middleware for Counter {
    async fn handle(
        &self,
        request: reqwest::Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        self.0.fetch_add(1, Ordering::SeqCst);
        next.run(request, extensions).await
    }
}

fn chain(counter: &Counter, twice: bool) -> ClientWithMiddleware {
    let sleeper = reqwest_resilience::RecordingSleeper::new();
    let middleware = ResilienceMiddleware::new(policy(&sleeper).build().unwrap());
    let mut builder = ClientBuilder::new(ResilientClient::reqwest_builder().build().unwrap())
        .with(middleware.clone());
    if twice {
        builder = builder.with(middleware);
    }
    builder.with(counter.clone()).build()
}

#[tokio::test]
async fn the_middleware_retries_a_keyed_post_with_one_key_and_fresh_request_ids() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(fail_then_ok(503, 2))
        .expect(3)
        .mount(&server)
        .await;
    let counter = Counter::default();
    let response = chain(&counter, false)
        .post(server.uri())
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.attempt_log().unwrap().len(), 3);
    let requests = received(&server).await;
    single_key(&requests);
    assert_distinct_request_ids(&requests);
    assert_eq!(
        counter.0.load(Ordering::SeqCst),
        3,
        "inner middleware runs per attempt"
    );
}

#[tokio::test]
async fn two_resilience_middlewares_do_not_stack_retries() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(503))
        .expect(3)
        .mount(&server)
        .await;
    let counter = Counter::default();
    let error = chain(&counter, true)
        .get(server.uri())
        .send()
        .await
        .unwrap_err();
    // 3 attempts, not 3 × 3.
    assert_eq!(received(&server).await.len(), 3);
    let reqwest_middleware::Error::Middleware(error) = error else {
        panic!("expected a middleware error, got {error:?}");
    };
    let error = error
        .downcast_ref::<reqwest_resilience::Error>()
        .expect("our typed error");
    assert!(error.is_attempts_exhausted());
    assert_eq!(error.attempts(), 3);
}

#[tokio::test]
async fn intent_options_set_the_key_and_the_deadline() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(fail_then_ok(502, 1))
        .mount(&server)
        .await;
    let counter = Counter::default();
    let client = chain(&counter, false);
    client
        .post(server.uri())
        .with_extension(IntentOptions::new().idempotency_key("mw-key-1"))
        .send()
        .await
        .unwrap();
    assert_eq!(single_key(&received(&server).await), "mw-key-1");

    let error = client
        .post(server.uri())
        .with_extension(IntentOptions::new().idempotency_key("bad\nkey"))
        .send()
        .await
        .unwrap_err();
    assert!(error.to_string().contains("invalid request"), "{error}");
    assert_eq!(
        received(&server).await.len(),
        2,
        "nothing sent for the bad key"
    );
}

#[tokio::test]
async fn intent_options_deadline_and_no_key_are_honoured() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503))
        .mount(&server)
        .await;
    let counter = Counter::default();
    let client = chain(&counter, false);

    // Without a key a POST is sent once and its 503 is the answer.
    let response = client
        .post(server.uri())
        .with_extension(IntentOptions::new().without_idempotency_key())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    let requests = received(&server).await;
    assert_eq!(requests.len(), 1);
    assert!(requests[0].headers.get("idempotency-key").is_none());

    // A zero deadline is refused before anything is sent.
    let error = client
        .post(server.uri())
        .with_extension(IntentOptions::new().deadline(std::time::Duration::ZERO))
        .send()
        .await
        .unwrap_err();
    assert!(error.to_string().contains("deadline"), "{error}");
    assert_eq!(received(&server).await.len(), 1);

    // A slow server: the per-request deadline ends the intent; no_deadline() lifts
    // a policy deadline so that every attempt (each cut by its own timeout) is made.
    let slow = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_delay(std::time::Duration::from_secs(2)))
        .mount(&slow)
        .await;
    let sleeper = reqwest_resilience::RecordingSleeper::new();
    let short = ResilienceMiddleware::new(
        policy(&sleeper)
            .deadline(std::time::Duration::from_millis(350))
            .attempt_timeout(std::time::Duration::from_millis(150))
            .build()
            .unwrap(),
    );
    let client = ClientBuilder::new(ResilientClient::reqwest_builder().build().unwrap())
        .with(short)
        .build();
    let give_up = |error: reqwest_middleware::Error| match error {
        reqwest_middleware::Error::Middleware(error) => error
            .downcast::<reqwest_resilience::Error>()
            .expect("our typed error"),
        other => panic!("expected our error, got {other:?}"),
    };
    let error = give_up(
        client
            .get(slow.uri())
            .with_extension(IntentOptions::new().deadline(std::time::Duration::from_millis(100)))
            .send()
            .await
            .unwrap_err(),
    );
    assert!(error.is_deadline_exceeded(), "{error}");
    assert_eq!(error.attempts(), 1, "100 ms leave room for one attempt");
    // The policy's 350 ms deadline cuts the third 150 ms attempt short…
    let error = give_up(client.get(slow.uri()).send().await.unwrap_err());
    assert!(error.is_deadline_exceeded(), "{error}");
    // …and without it all three run to their own timeouts.
    let error = give_up(
        client
            .get(slow.uri())
            .with_extension(IntentOptions::new().no_deadline())
            .send()
            .await
            .unwrap_err(),
    );
    assert!(error.is_attempts_exhausted(), "{error}");
    assert_eq!(error.attempts(), 3);
}
