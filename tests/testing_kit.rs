//! `reqwest_resilience::testing`: each responder against a real wiremock server and
//! a `ResilientClient`, and each assertion on good and bad input.

#![cfg(feature = "testing")]

use std::time::{Duration, SystemTime};

use http::Method;
use reqwest_resilience::testing::{
    assert_distinct_request_ids, assert_distinct_request_ids_in, assert_same_idempotency_key,
    assert_same_idempotency_key_in, idempotency_keys, idempotency_keys_in, request_ids,
    request_ids_in, test_policy, FailTimes, RecordingSleeper, RetryAfter, Scripted,
};
use reqwest_resilience::{ResilientClient, RetryPolicyBuilder};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

fn client_with(
    customise: impl FnOnce(RetryPolicyBuilder) -> RetryPolicyBuilder,
) -> (ResilientClient, RecordingSleeper) {
    let sleeper = RecordingSleeper::new();
    let policy = customise(test_policy(&sleeper))
        .build()
        .expect("valid test policy");
    (ResilientClient::with_policy(policy), sleeper)
}

async fn received(server: &MockServer) -> Vec<Request> {
    server.received_requests().await.expect("recording is on")
}

/// A request as wiremock records it, with the given headers.
fn request(headers: &[(&str, &str)]) -> Request {
    let mut map = http::HeaderMap::new();
    for (name, value) in headers {
        map.append(
            http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            value.parse().unwrap(),
        );
    }
    Request {
        url: "http://127.0.0.1/".parse().unwrap(),
        method: Method::POST,
        headers: map,
        body: Vec::new(),
    }
}

#[tokio::test]
async fn fail_times_fails_n_times_then_succeeds() {
    let server = MockServer::start().await;
    let flaky = FailTimes::new(2, ResponseTemplate::new(503))
        .then(ResponseTemplate::new(201).set_body_string("created"));
    Mock::given(method("POST"))
        .and(path("/payments"))
        .respond_with(flaky.clone())
        .mount(&server)
        .await;
    let (client, sleeper) = client_with(|policy| policy);

    let response = client
        .post(format!("{}/payments", server.uri()))
        .body("{}")
        .send()
        .await
        .unwrap();

    assert_eq!(response.status(), 201);
    assert_eq!(response.text().await.unwrap(), "created");
    assert_eq!(flaky.served(), 3);
    let requests = received(&server).await;
    assert_eq!(requests.len(), 3);
    assert_eq!(sleeper.delays().len(), 2);
    assert!(sleeper.total() <= Duration::from_millis(20), "{sleeper:?}");
    let key = assert_same_idempotency_key(&requests);
    assert_eq!(idempotency_keys(&requests), vec![Some(key); 3]);
    assert_distinct_request_ids(&requests);
    assert!(request_ids(&requests).iter().all(Option::is_some));
}

#[tokio::test]
async fn fail_times_answers_200_by_default_and_counts_across_intents() {
    let server = MockServer::start().await;
    let flaky = FailTimes::new(1, ResponseTemplate::new(502));
    Mock::given(method("GET"))
        .respond_with(flaky.clone())
        .mount(&server)
        .await;
    let (client, _sleeper) = client_with(|policy| policy);
    assert_eq!(client.get(server.uri()).send().await.unwrap().status(), 200);
    assert_eq!(client.get(server.uri()).send().await.unwrap().status(), 200);
    assert_eq!(flaky.served(), 3);
}

#[tokio::test]
async fn fail_times_more_than_the_attempts_gives_up() {
    let server = MockServer::start().await;
    let flaky = FailTimes::new(5, ResponseTemplate::new(503));
    Mock::given(method("GET"))
        .respond_with(flaky.clone())
        .mount(&server)
        .await;
    let (client, _sleeper) = client_with(|policy| policy.max_attempts(3));
    let result = client.get(server.uri()).send().await;
    // Either the last 503 or an error: what matters is that it stopped at 3.
    if let Ok(response) = result {
        assert_eq!(response.status(), 503);
    }
    assert_eq!(flaky.served(), 3);
}

#[tokio::test]
async fn retry_after_seconds_is_the_recorded_pause() {
    let server = MockServer::start().await;
    let throttle = RetryAfter::seconds(429, 1);
    assert_eq!(throttle.header_value(), "1");
    // The responder itself, once; then a plain success.
    Mock::given(method("GET"))
        .respond_with(throttle)
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&server)
        .await;
    let (client, sleeper) = client_with(|policy| policy);

    let response = client.get(server.uri()).send().await.unwrap();

    assert_eq!(response.status(), 200);
    assert_eq!(sleeper.delays(), vec![Duration::from_secs(1)]);
    let requests = received(&server).await;
    assert_eq!(requests.len(), 2);
    assert_distinct_request_ids(&requests);
}

#[tokio::test]
async fn retry_after_an_http_date_is_not_undercut() {
    let server = MockServer::start().await;
    // A whole second 3–4 s ahead, so that truncation to seconds cannot shorten it.
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap();
    let at = SystemTime::UNIX_EPOCH + Duration::from_secs(now.as_secs() + 4);
    let throttle = RetryAfter::at(503, at);
    assert!(throttle.header_value().ends_with(" GMT"), "{throttle:?}");
    assert_eq!(
        reqwest_resilience::parse_retry_after(throttle.header_value(), at),
        Some(Duration::ZERO)
    );
    let script = FailTimes::new(1, throttle.into());
    Mock::given(method("GET"))
        .respond_with(script.clone())
        .mount(&server)
        .await;
    let (client, sleeper) = client_with(|policy| policy);

    let response = client.get(server.uri()).send().await.unwrap();

    assert_eq!(response.status(), 200);
    assert_eq!(script.served(), 2);
    let delays = sleeper.delays();
    assert_eq!(delays.len(), 1);
    // Never earlier than asked (minus the time the exchange took).
    assert!(delays[0] >= Duration::from_secs(2), "{delays:?}");
    assert!(delays[0] <= Duration::from_secs(4), "{delays:?}");
}

#[test]
fn retry_after_templates_carry_the_status_and_header() {
    let template = RetryAfter::seconds(503, 7).template();
    let debug = format!("{template:?}");
    assert!(debug.contains("503"), "{debug}");
    assert!(debug.contains("retry-after"), "{debug}");
    let epoch_plus = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777);
    assert_eq!(
        RetryAfter::at(429, epoch_plus).header_value(),
        "Sun, 06 Nov 1994 08:49:37 GMT"
    );
}

#[test]
#[should_panic(expected = "1000 is not a valid status code")]
fn retry_after_rejects_an_invalid_status() {
    let _ = RetryAfter::seconds(1000, 1);
}

#[tokio::test]
async fn scripted_serves_in_order_then_repeats_the_last() {
    let server = MockServer::start().await;
    let script = Scripted::new(vec![
        ResponseTemplate::new(502),
        RetryAfter::seconds(503, 2).into(),
        ResponseTemplate::new(200).set_body_string("third"),
    ]);
    Mock::given(method("PUT"))
        .respond_with(script.clone())
        .mount(&server)
        .await;
    let (client, sleeper) = client_with(|policy| policy.max_attempts(5));

    let response = client.put(server.uri()).body("x").send().await.unwrap();

    assert_eq!(response.status(), 200);
    assert_eq!(response.text().await.unwrap(), "third");
    assert_eq!(script.served(), 3);
    let delays = sleeper.delays();
    assert_eq!(delays.len(), 2);
    assert!(
        delays[0] <= Duration::from_millis(10),
        "backoff: {delays:?}"
    );
    assert_eq!(delays[1], Duration::from_secs(2), "Retry-After: {delays:?}");

    // The last template repeats.
    let again = client.put(server.uri()).body("x").send().await.unwrap();
    assert_eq!(again.text().await.unwrap(), "third");
    assert_eq!(script.served(), 4);
}

#[test]
#[should_panic(expected = "Scripted::new needs at least one response")]
fn scripted_needs_a_response() {
    let _ = Scripted::new(Vec::new());
}

#[tokio::test]
async fn custom_header_names_have_their_own_assertions() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(FailTimes::new(1, ResponseTemplate::new(503)))
        .mount(&server)
        .await;
    let (client, _sleeper) = client_with(|policy| {
        policy
            .key_header("X-Idempotency-Key")
            .request_id_header("X-Correlation-Id")
    });

    client.post(server.uri()).send().await.unwrap();

    let requests = received(&server).await;
    assert_eq!(idempotency_keys(&requests), vec![None, None]);
    let key = assert_same_idempotency_key_in(&requests, client.policy().key_header());
    assert_eq!(
        idempotency_keys_in(&requests, "x-idempotency-key"),
        vec![Some(key.clone()), Some(key)]
    );
    assert_distinct_request_ids_in(&requests, "X-Correlation-Id");
    assert_eq!(request_ids_in(&requests, "X-Correlation-Id").len(), 2);
    assert_eq!(request_ids(&requests), vec![None, None]);
}

#[test]
fn assertions_accept_good_input() {
    let requests = [
        request(&[("Idempotency-Key", "k1"), ("X-Request-Id", "a")]),
        request(&[("Idempotency-Key", "k1"), ("X-Request-Id", "b")]),
    ];
    assert_eq!(assert_same_idempotency_key(&requests), "k1");
    assert_distinct_request_ids(&requests);
    assert_distinct_request_ids(&[]);
}

#[test]
#[should_panic(
    expected = "expected all attempts of one intent to carry the same idempotency-key header; got attempt 1: \"k1\", attempt 2: \"k2\""
)]
fn same_key_panics_when_keys_differ() {
    assert_same_idempotency_key(&[
        request(&[("Idempotency-Key", "k1")]),
        request(&[("Idempotency-Key", "k2")]),
    ]);
}

#[test]
#[should_panic(expected = "attempt 1: \"k1\", attempt 2: (none)")]
fn same_key_panics_when_a_key_is_missing() {
    assert_same_idempotency_key(&[request(&[("Idempotency-Key", "k1")]), request(&[])]);
}

#[test]
#[should_panic(expected = "attempt 1: (none)")]
fn same_key_panics_when_no_request_has_a_key() {
    assert_same_idempotency_key(&[request(&[])]);
}

#[test]
#[should_panic(expected = "no requests were received")]
fn same_key_panics_on_no_requests() {
    assert_same_idempotency_key(&[]);
}

#[test]
#[should_panic(expected = "request 1 carries the idempotency-key header 2 times")]
fn same_key_panics_on_a_repeated_header() {
    assert_same_idempotency_key(&[request(&[
        ("Idempotency-Key", "k1"),
        ("Idempotency-Key", "k1"),
    ])]);
}

#[test]
#[should_panic(
    expected = "the same x-idempotency-key header; got attempt 1: \"k1\", attempt 2: \"k2\""
)]
fn same_key_in_panics_with_the_custom_header() {
    assert_same_idempotency_key_in(
        &[
            request(&[("X-Idempotency-Key", "k1")]),
            request(&[("X-Idempotency-Key", "k2")]),
        ],
        "x-idempotency-key",
    );
}

#[test]
#[should_panic(
    expected = "expected a distinct x-request-id on every attempt, but some repeat; got attempt 1: \"a\", attempt 2: \"a\""
)]
fn distinct_ids_panics_on_a_repeat() {
    assert_distinct_request_ids(&[
        request(&[("X-Request-Id", "a")]),
        request(&[("X-Request-Id", "a")]),
    ]);
}

#[test]
#[should_panic(
    expected = "expected every attempt to carry the x-request-id header; got attempt 1: \"a\", attempt 2: (none)"
)]
fn distinct_ids_panics_on_a_missing_id() {
    assert_distinct_request_ids(&[request(&[("X-Request-Id", "a")]), request(&[])]);
}

#[test]
#[should_panic(expected = "repeat; got attempt 1: \"a\", attempt 2: \"b\", attempt 3: \"a\"")]
fn distinct_ids_in_panics_with_the_custom_header() {
    assert_distinct_request_ids_in(
        &[
            request(&[("X-Correlation-Id", "a")]),
            request(&[("X-Correlation-Id", "b")]),
            request(&[("X-Correlation-Id", "a")]),
        ],
        "X-Correlation-Id",
    );
}
