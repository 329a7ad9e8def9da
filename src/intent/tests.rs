//! The loop's steps over an in-memory transport.

use std::collections::VecDeque;
use std::sync::Mutex;

use super::*;
use crate::attempt_log::ResponseExt;
use crate::commit_unknown::CommitOutcomeUnknown;
use crate::error::BoxError;
use crate::gate::{Gate, GateRefusal};
use crate::observer::AttemptFinished;
use crate::policy::RetryPolicyBuilder;
use crate::write_ahead::WriteAheadFuture;
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
    /// The timeout the loop handed with each request.
    timeouts: Arc<Mutex<Vec<Option<Duration>>>>,
}

impl Scripted {
    fn new(answers: impl IntoIterator<Item = Answer>) -> Self {
        Self {
            answers: Arc::new(Mutex::new(answers.into_iter().collect())),
            sent: Arc::default(),
            timeouts: Arc::default(),
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
        self.timeouts
            .lock()
            .unwrap()
            .push(request.timeout().copied());
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
        write_ahead: None,
        whole_body: None,
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
async fn each_attempt_carries_its_timeout_cut_to_the_time_left_not_the_callers() {
    let transport = Scripted::new([Answer::Status(503), Answer::Status(201)]);
    let mut intent = intent(transport.clone(), RetryPolicy::builder());
    intent.deadline = Some(Duration::from_millis(1500));
    *intent.request.timeout_mut() = Some(Duration::from_secs(60));
    start(Ok(intent)).await.unwrap();
    let timeouts = transport.timeouts.lock().unwrap().clone();
    assert_eq!(timeouts.len(), 2);
    for timeout in timeouts {
        let timeout = timeout.expect("a deadline bounds every attempt");
        assert!(timeout <= Duration::from_millis(1500), "{timeout:?}");
        assert!(timeout > Duration::from_millis(500), "{timeout:?}");
    }
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

/// How a [`Hooks`] write-ahead answers.
#[derive(Clone, Copy, Default)]
enum WriteAheadAnswer {
    #[default]
    Writes,
    Refuses,
    /// Refuses with a write whose commit outcome is unknown.
    RefusesUnsure,
    /// Writes ahead, then fails to record the end.
    LosesTheEnd,
    /// Refuses, then fails to record the end (its row stays open).
    RefusesThenLosesTheEnd,
}

/// An observer and a write-ahead in one, writing every hook it hears, in order,
/// with how many requests the transport had been handed by then.
#[derive(Clone)]
struct Hooks {
    heard: Arc<Mutex<Vec<String>>>,
    sent: Arc<Mutex<Vec<reqwest::Request>>>,
    answer: WriteAheadAnswer,
}

impl Hooks {
    fn new(transport: &Scripted, answer: WriteAheadAnswer) -> Self {
        Self {
            heard: Arc::default(),
            sent: transport.sent.clone(),
            answer,
        }
    }

    fn hear(&self, hook: &str) {
        let sent = self.sent.lock().unwrap().len();
        self.heard
            .lock()
            .unwrap()
            .push(format!("{hook} sent={sent}"));
    }

    fn heard(&self) -> Vec<String> {
        self.heard.lock().unwrap().clone()
    }
}

impl IntentObserver for Hooks {
    fn attempt_finished(&self, attempt: &AttemptFinished<'_>) {
        self.hear(&format!("attempt {}", attempt.record().number()));
    }

    fn retry_scheduled(&self, _: &RetryScheduled<'_>) {
        self.hear("retry");
    }

    fn finished(&self, _: &IntentEnd<'_>) {
        self.hear("finished");
    }
}

impl WriteAhead for Hooks {
    fn before_first_byte<'a>(
        &'a self,
        intent: &'a IntentStart<'a>,
    ) -> WriteAheadFuture<'a, Result<(), BoxError>> {
        let bytes = intent.body().map_or(0, <[u8]>::len);
        self.hear(&format!("before_first_byte bytes={bytes}"));
        let answer: Result<(), BoxError> = match self.answer {
            WriteAheadAnswer::Writes | WriteAheadAnswer::LosesTheEnd => Ok(()),
            WriteAheadAnswer::Refuses | WriteAheadAnswer::RefusesThenLosesTheEnd => {
                Err("journal unavailable".into())
            }
            WriteAheadAnswer::RefusesUnsure => Err(Box::new(CommitOutcomeUnknown::new(
                "the commit's answer was lost",
            ))),
        };
        Box::pin(std::future::ready(answer))
    }

    fn after_end<'a>(&'a self, _: &'a IntentEnd<'a>) -> WriteAheadFuture<'a, Result<(), BoxError>> {
        self.hear("after_end");
        let answer: Result<(), BoxError> = match self.answer {
            WriteAheadAnswer::LosesTheEnd | WriteAheadAnswer::RefusesThenLosesTheEnd => {
                Err("the end was not recorded".into())
            }
            _ => Ok(()),
        };
        Box::pin(std::future::ready(answer))
    }
}

fn with_hooks(
    transport: &Scripted,
    policy: RetryPolicyBuilder,
    answer: WriteAheadAnswer,
) -> (Intent<Scripted>, Hooks) {
    let hooks = Hooks::new(transport, answer);
    let mut intent = intent(transport.clone(), policy.observer(hooks.clone()));
    intent.request = {
        let mut request = intent.request;
        *request.body_mut() = Some(reqwest::Body::from("amount=500"));
        request
    };
    intent.write_ahead = Some(Arc::new(hooks.clone()));
    (intent, hooks)
}

#[tokio::test]
async fn the_write_ahead_runs_before_the_first_byte_and_hears_the_end_after_the_observers() {
    let transport = Scripted::new([Answer::Status(503), Answer::Status(201)]);
    let (intent, hooks) = with_hooks(&transport, RetryPolicy::builder(), WriteAheadAnswer::Writes);
    let response = start(Ok(intent)).await.unwrap();
    assert_eq!(response.status(), 201);
    assert!(!response.end_not_recorded());
    assert_eq!(
        hooks.heard(),
        [
            "before_first_byte bytes=10 sent=0",
            "attempt 1 sent=1",
            "retry sent=1",
            "attempt 2 sent=2",
            "finished sent=2",
            "after_end sent=2",
        ]
    );
}

#[tokio::test]
async fn a_refusing_write_ahead_sends_nothing_and_still_hears_the_end() {
    // (the write-ahead's answer) -> is the outcome unknown?
    let table = [
        (WriteAheadAnswer::Refuses, false),
        (WriteAheadAnswer::RefusesUnsure, true),
    ];
    for (answer, unknown) in table {
        let transport = Scripted::new([]);
        let (intent, hooks) = with_hooks(&transport, RetryPolicy::builder(), answer);
        let error = start(Ok(intent)).await.unwrap_err();
        assert_eq!(error.is_write_ahead_refused(), !unknown, "{error}");
        assert_eq!(error.is_write_ahead_unconfirmed(), unknown, "{error}");
        assert_eq!(error.is_outcome_unknown(), unknown, "{error}");
        assert!(transport.sent.lock().unwrap().is_empty());
        assert_eq!(
            hooks.heard(),
            [
                "before_first_byte bytes=10 sent=0",
                "finished sent=0",
                "after_end sent=0",
            ]
        );
    }
}

#[tokio::test]
async fn a_gate_refusing_the_first_attempt_is_heard_by_observers_only() {
    struct Closed;
    impl Gate for Closed {
        fn name(&self) -> &str {
            "closed"
        }
        fn admit(&self, _: &GateScope<'_>) -> Result<(), GateRefusal> {
            Err(GateRefusal::new("closed"))
        }
    }
    let transport = Scripted::new([]);
    let (intent, hooks) = with_hooks(
        &transport,
        RetryPolicy::builder().gate(Closed),
        WriteAheadAnswer::Writes,
    );
    let error = start(Ok(intent)).await.unwrap_err();
    assert!(error.is_gate_refused(), "{error}");
    assert!(!error.is_outcome_unknown());
    assert_eq!(hooks.heard(), ["finished sent=0"]);
}

#[tokio::test]
async fn an_end_the_write_ahead_did_not_record_is_marked_on_the_result() {
    let transport = Scripted::new([Answer::Status(201)]);
    let (intent, _) = with_hooks(
        &transport,
        RetryPolicy::builder(),
        WriteAheadAnswer::LosesTheEnd,
    );
    let response = start(Ok(intent)).await.unwrap();
    assert!(response.end_not_recorded(), "the write-ahead may resend it");

    // A refusal says nothing was sent, unless the write-ahead could not close
    // what it wrote: then it may still send the intent.
    let transport = Scripted::new([]);
    let (intent, _) = with_hooks(
        &transport,
        RetryPolicy::builder(),
        WriteAheadAnswer::RefusesThenLosesTheEnd,
    );
    let unrecorded = start(Ok(intent)).await.unwrap_err();
    assert!(!unrecorded.is_write_ahead_refused(), "{unrecorded}");
    assert!(unrecorded.is_write_ahead_unconfirmed(), "{unrecorded}");
    assert!(unrecorded.is_outcome_unknown(), "{unrecorded}");
}

/// Moves the policy's virtual clock when it admits the first attempt: time that
/// passed before the write-ahead was asked.
struct SpendsTime(crate::VirtualClock, Duration);

impl Gate for SpendsTime {
    fn name(&self) -> &str {
        "spends_time"
    }

    fn admit(&self, _: &GateScope<'_>) -> Result<(), GateRefusal> {
        self.0.advance(self.1);
        Ok(())
    }
}

/// A write-ahead that never answers.
struct NeverAnswers;

impl WriteAhead for NeverAnswers {
    fn before_first_byte<'a>(
        &'a self,
        _: &'a IntentStart<'a>,
    ) -> WriteAheadFuture<'a, Result<(), BoxError>> {
        Box::pin(std::future::pending())
    }

    fn after_end<'a>(&'a self, _: &'a IntentEnd<'a>) -> WriteAheadFuture<'a, Result<(), BoxError>> {
        Box::pin(std::future::ready(Ok(())))
    }
}

/// The write-ahead gets the time left on the policy's clock: with 29.9 s of a 30 s
/// deadline gone on the virtual clock, a write-ahead that never answers is cut off
/// after the remaining 100 ms, not after 30 s, and nothing is sent.
#[tokio::test]
async fn the_write_ahead_is_bounded_by_the_time_left_on_the_policys_clock() {
    let clock = crate::VirtualClock::new();
    let transport = Scripted::new([]);
    let policy = RetryPolicy::builder()
        .clock(clock.clone())
        .gate(SpendsTime(clock, Duration::from_millis(29_900)));
    let mut intent = intent(transport.clone(), policy);
    intent.request = {
        let mut request = intent.request;
        *request.body_mut() = Some(reqwest::Body::from("amount=500"));
        request
    };
    intent.write_ahead = Some(Arc::new(NeverAnswers));
    let started = std::time::Instant::now();
    let error = start(Ok(intent)).await.unwrap_err();
    assert!(error.is_deadline_exceeded(), "{error}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(
        transport.sent.lock().unwrap().is_empty(),
        "nothing was sent"
    );
}
