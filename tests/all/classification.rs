//! Only transient failures are retried, and POST/PATCH only with a key.

use reqwest_resilience::{
    AttemptOutcome, AttemptView, Decision, DelayReason, GiveUpReason, KeyAttachment, ResponseExt,
    StatusSet,
};
use std::time::Duration;

use http::StatusCode;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{client, client_with, fail_then_ok, received, single_key, Scripted};

#[tokio::test]
async fn each_transient_status_is_retried() {
    for status in [408, 429, 502, 503, 504] {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .respond_with(fail_then_ok(status, 1))
            .expect(2)
            .mount(&server)
            .await;
        let (client, sleeper) = client();
        let response = client.get(server.uri()).send().await.unwrap();
        assert_eq!(response.status(), 200, "after {status}");
        assert_eq!(sleeper.delays().len(), 1, "one pause after {status}");
    }
}

#[tokio::test]
async fn client_errors_and_500_are_returned_at_once() {
    for status in [400, 401, 403, 404, 422, 500, 501] {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(status))
            .expect(1)
            .mount(&server)
            .await;
        let (client, sleeper) = client();
        let response = client.post(server.uri()).send().await.unwrap();
        assert_eq!(response.status(), status);
        assert!(sleeper.delays().is_empty());
        assert_eq!(response.attempt_log().unwrap().len(), 1);
    }
}

#[tokio::test]
async fn status_500_is_opt_in() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(fail_then_ok(500, 1))
        .expect(2)
        .mount(&server)
        .await;
    let (client, _) =
        client_with(|p| p.transient_statuses(StatusSet::transient_default().with(500)));
    assert_eq!(client.get(server.uri()).send().await.unwrap().status(), 200);
}

#[tokio::test]
async fn conflict_on_a_keyed_request_is_waited_out_with_the_same_key() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(Scripted::new(vec![
            ResponseTemplate::new(409),
            ResponseTemplate::new(409),
            ResponseTemplate::new(201).set_body_string(r#"{"payment_id":1}"#),
        ]))
        .expect(3)
        .mount(&server)
        .await;
    let (client, _) = client();
    let response = client.post(server.uri()).send().await.unwrap();
    assert_eq!(response.status(), 201);
    single_key(&received(&server).await);
}

#[tokio::test]
async fn conflicts_do_not_use_up_attempts_the_deadline_bounds_the_wait() {
    let server = MockServer::start().await;
    // More 409s than the 3 attempts allow, then the stored result: a handler longer
    // than three polls must not turn into "outcome unknown". A 503 among them still
    // counts as an attempt.
    let mut script = vec![ResponseTemplate::new(503)];
    script.extend((0..6).map(|_| ResponseTemplate::new(409).insert_header("retry-after", "1")));
    script.push(ResponseTemplate::new(201).set_body_string(r#"{"payment_id":1}"#));
    Mock::given(method("POST"))
        .respond_with(Scripted::new(script))
        .expect(8)
        .mount(&server)
        .await;
    let (client, sleeper) = client();
    let response = client.post(server.uri()).send().await.unwrap();
    assert_eq!(response.status(), 201);
    assert_eq!(response.attempt_log().expect("the log").attempts().len(), 8);
    // Every wait after a 409 is at least the server's Retry-After and the conflict delay.
    assert!(sleeper.delays()[1..]
        .iter()
        .all(|d| *d >= Duration::from_secs(1)));
    single_key(&received(&server).await);
}

#[tokio::test]
async fn too_early_is_retried_once_for_any_method_outcome_known() {
    // A keyless POST too: 425 says the server did not process it (RFC 8470).
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(Scripted::new(vec![
            ResponseTemplate::new(425),
            ResponseTemplate::new(201),
        ]))
        .expect(2)
        .mount(&server)
        .await;
    let (client, _) = client_with(|p| p.key_attachment(KeyAttachment::Never));
    let response = client.post(server.uri()).send().await.unwrap();
    assert_eq!(response.status(), 201);

    // A second 425 is the answer: once is what the RFC asks for.
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(425))
        .expect(2)
        .mount(&server)
        .await;
    let response = client.post(server.uri()).send().await.unwrap();
    assert_eq!(response.status(), 425);
}

#[tokio::test]
async fn conflict_without_a_key_is_final() {
    let server = MockServer::start().await;
    Mock::given(method("PUT"))
        .respond_with(ResponseTemplate::new(409))
        .expect(1)
        .mount(&server)
        .await;
    let (client, _) = client();
    assert_eq!(client.put(server.uri()).send().await.unwrap().status(), 409);
}

#[tokio::test]
async fn payload_mismatch_422_is_returned_at_once_on_a_keyed_request() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(422).set_body_string("key reused with another body"))
        .expect(1)
        .mount(&server)
        .await;
    let (client, _) = client();
    let response = client
        .post(server.uri())
        .idempotency_key("k-1")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 422);
    assert_eq!(
        response.text().await.unwrap(),
        "key reused with another body"
    );
}

#[tokio::test]
async fn post_without_key_is_not_retried_after_a_response() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503))
        .expect(1)
        .mount(&server)
        .await;
    let (client, sleeper) = client();
    let response = client
        .post(server.uri())
        .without_idempotency_key()
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    assert!(sleeper.delays().is_empty());
}

#[tokio::test]
async fn a_user_classifier_decides_first_but_cannot_make_unkeyed_posts_retryable() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(Scripted::new(vec![
            ResponseTemplate::new(500),
            ResponseTemplate::new(503),
            ResponseTemplate::new(200),
        ]))
        .mount(&server)
        .await;
    let (client, _) = client_with(|p| {
        p.classifier(|view: &AttemptView<'_>| match view.status()?.as_u16() {
            500 => Some(Decision::Retry),
            503 => Some(Decision::Stop),
            _ => None,
        })
    });
    // 500 retried by the classifier, then 503 stopped by it.
    let response = client.get(server.uri()).send().await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(received(&server).await.len(), 2);

    let post_server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500))
        .expect(1)
        .mount(&post_server)
        .await;
    let response = client
        .post(post_server.uri())
        .without_idempotency_key()
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 500);
}

#[tokio::test]
async fn attempts_exhausted_carries_the_last_response_and_the_log() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).set_body_string("slow down"))
        .expect(3)
        .mount(&server)
        .await;
    let (client, sleeper) = client();
    let error = client.post(server.uri()).send().await.unwrap_err();
    assert!(error.is_attempts_exhausted(), "{error}");
    assert_eq!(error.reason(), GiveUpReason::AttemptsExhausted);
    assert_eq!(error.attempts(), 3);
    assert_eq!(error.last_status().map(|s| s.as_u16()), Some(429));
    // 429 means "refused before any work": the outcome is known.
    assert!(!error.is_outcome_unknown());
    let key = error.idempotency_key().unwrap().as_str().to_owned();
    assert_eq!(single_key(&received(&server).await), key);
    let log = error.attempt_log();
    assert_eq!(log.len(), 3);
    assert_eq!(sleeper.delays().len(), 2);
    for (record, delay) in log.attempts().iter().zip(sleeper.delays()) {
        let scheduled = record.delay_after().unwrap();
        assert_eq!(scheduled.delay, delay);
        assert_eq!(scheduled.reason, DelayReason::Backoff);
    }
    assert!(log.last().unwrap().delay_after().is_none());
    let response = error.into_response().unwrap();
    assert_eq!(response.text().await.unwrap(), "slow down");
}

#[tokio::test]
async fn a_gateway_error_leaves_the_outcome_unknown() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(504))
        .expect(2)
        .mount(&server)
        .await;
    let (client, _) = client_with(|p| p.max_attempts(2));
    let error = client.post(server.uri()).send().await.unwrap_err();
    assert!(error.is_attempts_exhausted());
    assert!(
        error.is_outcome_unknown(),
        "a 504 may hide a committed payment"
    );
}

#[tokio::test]
async fn the_attempt_log_is_on_the_successful_response() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(fail_then_ok(429, 1))
        .mount(&server)
        .await;
    let (client, _) = client();
    let response = client.get(server.uri()).send().await.unwrap();
    let log = response.attempt_log().expect("log attached");
    let outcomes: Vec<_> = log.attempts().iter().map(|a| *a.outcome()).collect();
    assert_eq!(
        outcomes,
        vec![
            AttemptOutcome::Status(http::StatusCode::TOO_MANY_REQUESTS),
            AttemptOutcome::Status(http::StatusCode::OK)
        ]
    );
    assert_eq!(log.attempts()[0].number(), 1);
    assert_eq!(log.attempts()[1].number(), 2);
    assert_ne!(
        log.attempts()[0].request_id(),
        log.attempts()[1].request_id()
    );
    let ids = crate::support::header_values(&received(&server).await, "x-request-id");
    assert_eq!(
        ids[1].as_deref(),
        Some(log.attempts()[1].request_id().to_string().as_str())
    );
}

#[tokio::test]
async fn a_conflict_that_never_clears_says_how_to_stop_waiting_for_it() {
    let server = MockServer::start().await;
    // 409s "in progress" do not use up attempts while the deadline holds them: 5 s at
    // the 1 s conflict delay holds 5, then the 3 attempts count. (The recording
    // sleeper takes no time, so the count, not the clock, ends the wait here.)
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(409))
        .expect(5 + 3)
        .mount(&server)
        .await;
    let (client, sleeper) = client_with(|p| p.deadline(Duration::from_secs(5)));
    let error = client.post(server.uri()).send().await.unwrap_err();
    assert!(error.is_attempts_exhausted(), "{error}");
    assert_eq!(error.last_status(), Some(StatusCode::CONFLICT));
    let message = error.to_string();
    assert!(
        message.contains("retry_conflict_when_keyed(false)"),
        "{message}"
    );
    assert!(!message.contains(error.idempotency_key().unwrap().as_str()));
    // Paced as a key in progress, not at the backoff's 10 ms.
    assert!(sleeper
        .delays()
        .iter()
        .all(|d| *d >= Duration::from_secs(1)));
    single_key(&received(&server).await);
}
