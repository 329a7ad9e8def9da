//! The blocking client against real HTTP servers on 127.0.0.1: the same intent
//! (key, request ids, Retry-After, deadline, budget, typed errors) as the async
//! client's tests, sent from threads without a runtime. Each test hosts its wiremock
//! server on a runtime of its own, as a separate service would be.

use std::io::Read;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use reqwest_resilience::blocking::ResilientClient;
use reqwest_resilience::testing::{
    assert_distinct_request_ids, assert_same_idempotency_key, test_policy, FailTimes,
    RecordingSleeper, RetryAfter,
};
use reqwest_resilience::{ResponseExt, RetryBudget, RetryPolicy, TransportFailure};
use wiremock::matchers::{any, method};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

/// A wiremock server and the runtime that serves it (from its own threads).
struct Server {
    runtime: tokio::runtime::Runtime,
    mock: MockServer,
}

impl Server {
    fn answering(template: impl wiremock::Respond + 'static) -> Self {
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        let mock = runtime.block_on(async {
            let mock = MockServer::start().await;
            Mock::given(any()).respond_with(template).mount(&mock).await;
            mock
        });
        Self { runtime, mock }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.mock.uri())
    }

    fn received(&self) -> Vec<Request> {
        self.runtime
            .block_on(self.mock.received_requests())
            .expect("recording is on")
    }
}

fn client(
    customise: impl FnOnce(
        reqwest_resilience::RetryPolicyBuilder,
    ) -> reqwest_resilience::RetryPolicyBuilder,
) -> (ResilientClient, RecordingSleeper) {
    let sleeper = RecordingSleeper::new();
    let policy = customise(test_policy(&sleeper))
        .build()
        .expect("valid policy");
    (ResilientClient::with_policy(policy), sleeper)
}

#[test]
fn a_post_is_retried_under_one_key_with_a_fresh_request_id_per_attempt() {
    let server = Server::answering(
        FailTimes::new(2, ResponseTemplate::new(503))
            .then(ResponseTemplate::new(201).set_body_string("created")),
    );
    let (client, sleeper) = client(|policy| policy.max_attempts(3));

    let response = client
        .post(server.url("/payments"))
        .body(r#"{"amount":500}"#)
        .send()
        .expect("the third attempt succeeds");

    assert_eq!(response.status(), 201);
    let log = response.attempt_log().expect("an attempt log").clone();
    assert_eq!(log.len(), 3);
    assert_eq!(response.text().unwrap(), "created");
    let received = server.received();
    assert_eq!(received.len(), 3);
    let key = assert_same_idempotency_key(&received);
    assert_eq!(
        Some(key.as_str()),
        log.idempotency_key().map(|k| k.as_str())
    );
    assert_distinct_request_ids(&received);
    assert!(received.iter().all(|r| r.body == br#"{"amount":500}"#));
    assert_eq!(
        sleeper.delays().len(),
        2,
        "two pauses, through the policy's sleeper"
    );
}

#[test]
fn retry_after_is_waited_out_before_the_next_attempt() {
    let server = Server::answering(
        FailTimes::new(1, RetryAfter::seconds(503, 1).template()).then(ResponseTemplate::new(200)),
    );
    // The real sleeper: the client's thread really waits.
    let client = ResilientClient::with_policy(RetryPolicy::builder().no_budget().build().unwrap());

    let started = Instant::now();
    let response = client
        .get(server.url("/orders/7"))
        .send()
        .expect("the retry succeeds");

    assert_eq!(response.status(), 200);
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "not earlier than the server asked"
    );
    let received = server.received();
    assert_eq!(received.len(), 2);
    assert_distinct_request_ids(&received);
}

#[test]
fn the_deadline_bounds_the_whole_intent() {
    let server = Server::answering(ResponseTemplate::new(200).set_delay(Duration::from_secs(5)));
    let client = ResilientClient::with_policy(RetryPolicy::builder().no_budget().build().unwrap());

    let started = Instant::now();
    let error = client
        .post(server.url("/payments"))
        .body("{}")
        .deadline(Duration::from_millis(400))
        .send()
        .expect_err("the server answers after the deadline");
    let elapsed = started.elapsed();

    assert!(error.is_deadline_exceeded(), "{error}");
    assert!(
        error.is_outcome_unknown(),
        "the POST may have been processed: {error}"
    );
    assert!(
        error.idempotency_key().is_some(),
        "the key to retry later with"
    );
    assert!(elapsed >= Duration::from_millis(400), "{elapsed:?}");
    assert!(
        elapsed < Duration::from_secs(4),
        "bounded by the deadline: {elapsed:?}"
    );
}

#[test]
fn clones_share_the_retry_budget() {
    let server = Server::answering(ResponseTemplate::new(503));
    let budget = RetryBudget::builder()
        .ratio(0.001)
        .reserve(2)
        .build()
        .unwrap();
    let (first, _) = client(|policy| policy.budget(budget));
    let clone = first.clone();

    let error = first.get(server.url("/")).send().unwrap_err();
    assert!(
        error.is_attempts_exhausted(),
        "used both retries in reserve: {error}"
    );
    let error = clone.get(server.url("/")).send().unwrap_err();
    assert!(
        error.is_budget_exhausted(),
        "the clone shares the budget: {error}"
    );
    assert_eq!(error.attempts(), 1);
    assert_eq!(server.received().len(), 4);
}

#[test]
fn errors_are_the_async_clients_typed_errors() {
    // A port nothing listens on: the connect is refused, nothing was sent.
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/payments", closed.local_addr().unwrap());
    drop(closed);
    let (client, _) = client(|policy| policy.max_attempts(2));

    let error = client.post(&url).body("{}").send().unwrap_err();
    assert!(error.is_attempts_exhausted(), "{error}");
    assert_eq!(error.attempts(), 2);
    assert_eq!(error.transport_failure(), Some(TransportFailure::Connect));
    assert!(
        !error.is_outcome_unknown(),
        "a refused connect proves nothing was sent"
    );

    let server = Server::answering(ResponseTemplate::new(422));
    let response = client
        .post(server.url("/payments"))
        .send()
        .expect("a final answer");
    assert_eq!(
        response.status(),
        422,
        "a final status is a response, as in reqwest"
    );

    let error = client
        .post(server.url("/payments"))
        .idempotency_key("bad\nkey")
        .send()
        .unwrap_err();
    assert!(error.is_invalid_request(), "{error}");
    assert_eq!(server.received().len(), 1, "the invalid key sent nothing");
}

#[test]
fn the_body_reads_through_read_in_pieces() {
    let body: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let server = Server::answering(ResponseTemplate::new(200).set_body_bytes(body.clone()));
    let (client, _) = client(|policy| policy);

    let mut response = client.get(server.url("/report")).send().unwrap();
    let mut first = [0u8; 7];
    response.read_exact(&mut first).unwrap();
    let mut rest = Vec::new();
    response.read_to_end(&mut rest).unwrap();

    assert_eq!([&first[..], &rest[..]].concat(), body);
}

#[tokio::test]
async fn sending_on_an_async_runtime_thread_panics_before_anything_is_sent() {
    let mock = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(201))
        .mount(&mock)
        .await;
    // Building (and dropping) a blocking client is allowed here; waiting is not.
    let client = ResilientClient::new();
    let url = format!("{}/payments", mock.uri());

    let refused = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        client.post(&url).body("{}").send()
    }))
    .expect_err("blocking on a runtime thread is refused");
    let message = refused
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| refused.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    assert!(
        message.contains("Cannot block the current thread from within a runtime"),
        "{message}"
    );
    assert!(
        mock.received_requests().await.unwrap().is_empty(),
        "nothing was sent"
    );

    // Where blocking belongs in an async program, the same client works.
    let response = tokio::task::spawn_blocking(move || client.post(&url).body("{}").send())
        .await
        .unwrap()
        .expect("sent from a blocking thread");
    assert_eq!(response.status(), 201);
    assert_eq!(mock.received_requests().await.unwrap().len(), 1);
}

#[test]
fn an_open_breaker_refuses_before_anything_is_sent() {
    let server = Server::answering(ResponseTemplate::new(503));
    let breaker = reqwest_resilience::gate::CircuitBreaker::builder()
        .failure_ratio(0.5)
        .minimum_throughput(6)
        .break_duration(Duration::from_secs(60))
        .build()
        .unwrap();
    let (client, _) = client(|policy| policy.max_attempts(3).gate(breaker));

    // Two intents of three failed attempts each: six failures open the circuit.
    for _ in 0..2 {
        let error = client.get(server.url("/")).send().unwrap_err();
        assert!(error.is_attempts_exhausted(), "{error}");
    }
    assert_eq!(server.received().len(), 6);

    let error = client.get(server.url("/")).send().unwrap_err();
    assert!(error.is_gate_refused(), "{error}");
    assert!(error.is_first_attempt_refused(), "{error}");
    assert!(!error.is_outcome_unknown(), "nothing was sent: {error}");
    assert_eq!(server.received().len(), 6, "the refusal sent nothing");
}
