//! Retry-After is honoured: never an attempt earlier than asked, never a sleep past
//! the deadline or the ceiling, garbage ignored.

use std::time::{Duration, Instant, SystemTime};

use reqwest_resilience::testing::RetryAfter;
use reqwest_resilience::{DelayReason, ResilientClient, RetryPolicy};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{client, client_with, received, Scripted};

async fn server_with(first: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(Scripted::new(vec![first, ResponseTemplate::new(200)]))
        .mount(&server)
        .await;
    server
}

#[tokio::test]
async fn retry_after_seconds_sets_the_pause() {
    let server = server_with(ResponseTemplate::new(503).insert_header("Retry-After", "1")).await;
    let (client, sleeper) = client();
    client.get(server.uri()).send().await.unwrap();
    assert_eq!(sleeper.delays(), vec![Duration::from_secs(1)]);
}

#[tokio::test]
async fn retry_after_http_date_is_not_undercut() {
    // 5 s ahead: under a loaded machine the response may be classified a second or
    // two after the date was made; at least 2 s must still be asked for.
    let at = SystemTime::now() + Duration::from_secs(5);
    let server = server_with(
        ResponseTemplate::new(429)
            .insert_header("Retry-After", RetryAfter::at(429, at).header_value()),
    )
    .await;
    let (client, sleeper) = client();
    let response = client.get(server.uri()).send().await.unwrap();
    let delays = sleeper.delays();
    assert_eq!(delays.len(), 1);
    // Whole-second date, 5 s ahead: never more than asked, and not undercut.
    assert!(delays[0] >= Duration::from_secs(2), "{delays:?}");
    assert!(delays[0] <= Duration::from_secs(5), "{delays:?}");
    let log = reqwest_resilience::ResponseExt::attempt_log(&response).unwrap();
    assert_eq!(
        log.attempts()[0].delay_after().unwrap().reason,
        DelayReason::RetryAfter
    );
}

#[tokio::test]
async fn retry_after_beyond_the_deadline_fails_fast_with_the_requested_time() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(503).insert_header("Retry-After", "20"))
        .expect(1)
        .mount(&server)
        .await;
    let (client, sleeper) = client_with(|p| p.deadline(Duration::from_secs(5)));
    let started = Instant::now();
    let error = client.get(server.uri()).send().await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(error.is_retry_after_too_long(), "{error}");
    assert_eq!(error.retry_after(), Some(Duration::from_secs(20)));
    assert!(sleeper.delays().is_empty(), "no sleeping before failing");
    assert_eq!(error.into_response().unwrap().status(), 503);
}

#[tokio::test]
async fn retry_after_beyond_the_ceiling_fails_fast() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(
            ResponseTemplate::new(429).insert_header("Retry-After", "99999999999999999999"),
        )
        .expect(1)
        .mount(&server)
        .await;
    let (client, sleeper) = client_with(|p| p.no_deadline());
    let error = client.get(server.uri()).send().await.unwrap_err();
    assert_eq!(
        error.reason(),
        reqwest_resilience::GiveUpReason::RetryAfterBeyondCeiling
    );
    assert_eq!(
        error.retry_after(),
        Some(reqwest_resilience::RETRY_AFTER_SATURATION)
    );
    assert!(sleeper.delays().is_empty());
}

#[tokio::test]
async fn garbage_retry_after_falls_back_to_backoff() {
    for garbage in ["soon", "-5", "1.5", "Sun, 06 Nov 1994 08:49:37 PST", ""] {
        let server =
            server_with(ResponseTemplate::new(503).insert_header("Retry-After", garbage)).await;
        let (client, sleeper) = client();
        let response = client.get(server.uri()).send().await.unwrap();
        let log = reqwest_resilience::ResponseExt::attempt_log(&response).unwrap();
        let scheduled = log.attempts()[0].delay_after().unwrap();
        assert_eq!(scheduled.reason, DelayReason::Backoff, "{garbage:?}");
        assert!(sleeper.delays()[0] <= Duration::from_millis(10));
    }
}

#[tokio::test]
async fn repeated_retry_after_fields_take_the_longest_valid_one() {
    let server = server_with(
        ResponseTemplate::new(503)
            .append_header("Retry-After", "1")
            .append_header("Retry-After", "junk")
            .append_header("Retry-After", "2"),
    )
    .await;
    let (client, sleeper) = client();
    client.get(server.uri()).send().await.unwrap();
    assert_eq!(sleeper.delays(), vec![Duration::from_secs(2)]);
}

#[tokio::test]
async fn with_the_real_timer_the_retry_never_arrives_early() {
    let server = server_with(ResponseTemplate::new(503).insert_header("Retry-After", "1")).await;
    let client = ResilientClient::with_policy(RetryPolicy::builder().no_budget().build().unwrap());
    let started = Instant::now();
    let response = client.get(server.uri()).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(received(&server).await.len(), 2);
}
