//! The loop's steps over an in-memory transport.

use std::collections::VecDeque;
use std::sync::Mutex;

use super::*;
use crate::gate::{Gate, GateRefusal};
use crate::policy::RetryPolicyBuilder;
use crate::{RecordingSleeper, RetryPolicy};

/// What the in-memory transport answers to each attempt, in order.
enum Answer {
    Status(u16),
    /// A failure further down a middleware chain (a `reqwest::Error` cannot be
    /// built by hand): never retried.
    Other,
}

/// An in-memory transport: scripted answers, and every request it was handed.
#[derive(Clone, Default)]
struct Scripted {
    answers: Arc<Mutex<VecDeque<Answer>>>,
    sent: Arc<Mutex<Vec<reqwest::Request>>>,
}

impl Scripted {
    fn new(answers: impl IntoIterator<Item = Answer>) -> Self {
        Self {
            answers: Arc::new(Mutex::new(answers.into_iter().collect())),
            sent: Arc::default(),
        }
    }

    fn headers(&self, name: &str) -> Vec<String> {
        let sent = self.sent.lock().unwrap();
        sent.iter()
            .map(|request| request.headers()[name].to_str().unwrap().to_owned())
            .collect()
    }
}

impl Transport for Scripted {
    fn send(
        &mut self,
        request: reqwest::Request,
    ) -> impl Future<Output = Result<reqwest::Response, TransportError>> + Send {
        self.sent.lock().unwrap().push(request);
        let answer = self.answers.lock().unwrap().pop_front();
        async move {
            match answer.expect("an answer for every attempt") {
                Answer::Status(status) => {
                    let response = http::Response::builder().status(status).body("").unwrap();
                    Ok(reqwest::Response::from(response))
                }
                Answer::Other => Err(TransportError::Other("a signing middleware failed".into())),
            }
        }
    }
}

fn intent(transport: Scripted, policy: RetryPolicyBuilder) -> Intent<Scripted> {
    let policy = policy
        .sleeper(RecordingSleeper::new())
        .rng_seed(1)
        .build()
        .unwrap();
    Intent {
        transport,
        policy: policy.inner,
        request: reqwest::Request::new(
            http::Method::POST,
            "http://127.0.0.1:1/pay".parse().unwrap(),
        ),
        body_factory: None,
        key: Some(IdempotencyKey::new("order-1").unwrap()),
        deadline: Some(Duration::from_secs(30)),
        observers: Vec::new(),
    }
}

#[tokio::test]
async fn a_transient_status_is_retried_with_one_key_and_a_request_id_per_attempt() {
    let transport = Scripted::new([Answer::Status(503), Answer::Status(201)]);
    let response = start(Ok(intent(transport.clone(), RetryPolicy::builder())))
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let log = response.extensions().get::<AttemptLog>().unwrap();
    assert_eq!(log.len(), 2);
    assert_eq!(transport.headers("idempotency-key"), ["order-1", "order-1"]);
    let ids = transport.headers("x-request-id");
    assert_ne!(ids[0], ids[1]);
    assert_eq!(ids[0], log.attempts()[0].request_id().to_string());
}

#[tokio::test]
async fn another_middlewares_failure_is_not_retried() {
    let transport = Scripted::new([Answer::Other]);
    let error = start(Ok(intent(transport.clone(), RetryPolicy::builder())))
        .await
        .unwrap_err();
    assert!(error.is_not_retryable(), "{error}");
    assert_eq!(error.attempts(), 1);
    assert_eq!(transport.sent.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_final_status_is_delivered_and_attempts_run_out() {
    let transport = Scripted::new([Answer::Status(422)]);
    let response = start(Ok(intent(transport, RetryPolicy::builder())))
        .await
        .unwrap();
    assert_eq!(response.status(), 422);

    let transport = Scripted::new([Answer::Status(503), Answer::Status(503)]);
    let error = start(Ok(intent(
        transport,
        RetryPolicy::builder().max_attempts(2),
    )))
    .await
    .unwrap_err();
    assert!(error.is_attempts_exhausted(), "{error}");
    assert_eq!(error.last_status().map(|s| s.as_u16()), Some(503));
}

/// Admits the first attempt, refuses every retry.
struct NoRetries;

impl Gate for NoRetries {
    fn name(&self) -> &str {
        "no_retries"
    }

    fn admit(&self, scope: &GateScope<'_>) -> Result<(), GateRefusal> {
        match scope.retry_cause() {
            None => Ok(()),
            Some(_) => Err(GateRefusal::new("no_retries")),
        }
    }
}

#[tokio::test]
async fn a_refused_retry_keeps_the_earlier_attempts_result() {
    let transport = Scripted::new([Answer::Status(503)]);
    let error = start(Ok(intent(
        transport,
        RetryPolicy::builder().gate(NoRetries),
    )))
    .await
    .unwrap_err();
    assert!(error.is_gate_refused(), "{error}");
    assert_eq!(error.attempts(), 1);
    assert_eq!(error.last_status().map(|s| s.as_u16()), Some(503));
    assert!(error.is_outcome_unknown(), "a 503 may have been processed");
}
