//! The attempt loop's facts, seen from the caller's side: which answers the loop
//! reads as what, each at the boundary where a slip in the loop would change the
//! result. (The rules themselves are `decision.rs`'s, tested in its table.)

use std::sync::{Arc, Mutex};

use http::StatusCode;
use reqwest_resilience::{AttemptOutcome, Gate, GateRefusal, GateScope, RetryCause};
use wiremock::matchers::any;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{
    client, client_with, header_values, received, single_key, FailTimes, Scripted,
};

/// A server that answers `503` `failures` times, then `status` for good; every
/// request must arrive `expected` times.
async fn server(failures: usize, status: u16, expected: u64) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(any())
        .respond_with(
            FailTimes::new(failures, ResponseTemplate::new(503))
                .then(ResponseTemplate::new(status)),
        )
        .expect(expected)
        .mount(&server)
        .await;
    server
}

/// `410 Gone` is a final answer, delivered as it is — except on the resend of a keyed
/// intent whose body is read whole, where the server says the key finished without
/// keeping its response (the whole round trip is in tests/e2e/whole_body.rs).
#[tokio::test]
async fn a_410_is_delivered_unless_it_answers_a_keyed_whole_body_resend() {
    let (client, _) = client();
    // A keyed POST, first attempt and after a retry: delivered.
    let first = server(0, 410, 1).await;
    let response = client.post(first.uri()).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::GONE);
    let resend = server(1, 410, 2).await;
    let response = client.post(resend.uri()).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::GONE);
    single_key(&received(&resend).await);
    // Read whole, keyed, on the first attempt: nothing was resent, so delivered.
    let first = server(0, 410, 1).await;
    let response = client.post(first.uri()).whole_body().send().await.unwrap();
    assert_eq!(response.status(), StatusCode::GONE);
    // Read whole without a key, on a resend: no key to have finished, delivered.
    let keyless = server(1, 410, 2).await;
    let response = client
        .put(keyless.uri())
        .without_idempotency_key()
        .whole_body()
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::GONE);
    let keys = header_values(&received(&keyless).await, "idempotency-key");
    assert_eq!(keys, [None, None]);
    // Read whole, keyed, on a resend: the key finished, its response is gone.
    let resend = server(1, 410, 2).await;
    let error = client
        .post(resend.uri())
        .whole_body()
        .send()
        .await
        .unwrap_err();
    assert!(error.is_completed_not_kept(), "{error}");
    assert_eq!(error.last_status(), Some(StatusCode::GONE));
}

/// A gate that admits everything and writes down each scope it is shown.
#[derive(Clone, Default)]
struct Witness(Arc<Mutex<Vec<String>>>);

impl Witness {
    fn saw(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

impl Gate for Witness {
    fn name(&self) -> &str {
        "witness"
    }

    fn admit(&self, scope: &GateScope<'_>) -> Result<(), GateRefusal> {
        let cause = scope.retry_cause().map_or("first", |cause| match cause {
            RetryCause::Transient => "transient",
            RetryCause::Conflict => "conflict",
            _ => "other",
        });
        let line = format!("admit {} {cause}", scope.attempt());
        self.0.lock().unwrap().push(line);
        Ok(())
    }

    fn attempt_finished(&self, scope: &GateScope<'_>, _: &AttemptOutcome, struggling: bool) {
        let line = format!("finished {} struggling={struggling}", scope.attempt());
        self.0.lock().unwrap().push(line);
    }
}

/// Every gate is asked about each attempt under its own number, and told its end.
#[tokio::test]
async fn the_gates_hear_each_attempt_by_its_number() {
    let server = MockServer::start().await;
    Mock::given(any())
        .respond_with(Scripted::new([
            ResponseTemplate::new(503),
            ResponseTemplate::new(409),
            ResponseTemplate::new(200),
        ]))
        .expect(3)
        .mount(&server)
        .await;
    let witness = Witness::default();
    let (client, _) = client_with(|p| p.gate(witness.clone()));
    let response = client.post(server.uri()).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        witness.saw(),
        [
            "admit 1 first",
            "finished 1 struggling=true",
            "admit 2 transient",
            "finished 2 struggling=false",
            "admit 3 conflict",
            "finished 3 struggling=false",
        ]
    );
}

/// Without a deadline no keyed `409` "in progress" is waited out (the deadline holds
/// no pause), so each uses up an attempt: a server that answers `409` forever meets
/// `max_attempts`, not an endless loop (pauses here take no time).
#[tokio::test]
async fn without_a_deadline_a_409_forever_ends_at_max_attempts() {
    let (client, _) = client_with(|policy| policy.max_attempts(3).no_deadline());
    let server = MockServer::start().await;
    Mock::given(any())
        .respond_with(ResponseTemplate::new(409))
        .expect(3)
        .mount(&server)
        .await;
    let sent = client.post(server.uri()).idempotency_key("order-7").send();
    let error = tokio::time::timeout(std::time::Duration::from_secs(10), sent)
        .await
        .expect("the 409s end at max_attempts, not in an endless loop")
        .unwrap_err();
    assert_eq!(error.attempts(), 3, "{error}");
    assert_eq!(error.last_status(), Some(StatusCode::CONFLICT));
}
