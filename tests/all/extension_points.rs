//! Observers, the write-ahead, retry gates and classifier delays, against a real
//! server.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use reqwest_resilience::testing::RetryAfter;
use reqwest_resilience::{
    AttemptFinished, AttemptOutcome, BoxError, Decision, DelayReason, Gate, GateRefusal, GateScope,
    GiveUpReason, IntentEnd, IntentObserver, IntentStart, RecordingSleeper, ResilientClient,
    RetryBudget, RetryCause, VirtualClock, WriteAhead, WriteAheadFuture,
};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::support::{client_with, fail_then_ok, header_values, policy, received, single_key, MS};

/// Everything a recorder was told, as observer and write-ahead, in order.
#[derive(Default)]
struct Seen {
    events: Mutex<Vec<String>>,
    started_body: Mutex<Option<Vec<u8>>>,
    request_ids: Mutex<Vec<String>>,
}

#[derive(Clone)]
struct Recorder {
    seen: Arc<Seen>,
    refuse: bool,
    /// Set once `before_first_byte` has run: the server checks it on arrival.
    written_ahead: Arc<AtomicBool>,
}

impl Recorder {
    fn new(seen: &Arc<Seen>) -> Self {
        Self {
            seen: seen.clone(),
            refuse: false,
            written_ahead: Arc::new(AtomicBool::new(false)),
        }
    }
}

impl WriteAhead for Recorder {
    fn before_first_byte<'a>(
        &'a self,
        intent: &'a IntentStart<'a>,
    ) -> WriteAheadFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            let key = intent.key().map(|key| key.as_str().to_owned());
            self.seen.events.lock().unwrap().push(format!(
                "started {} key={}",
                intent.method(),
                key.is_some()
            ));
            *self.seen.started_body.lock().unwrap() = intent.body().map(<[u8]>::to_vec);
            if self.refuse {
                return Err("journal unavailable".into());
            }
            self.written_ahead.store(true, Ordering::SeqCst);
            Ok(())
        })
    }

    fn after_end<'a>(
        &'a self,
        end: &'a IntentEnd<'a>,
    ) -> WriteAheadFuture<'a, Result<(), BoxError>> {
        let line = format!(
            "ended status={:?} gave_up={:?} unknown={} attempts={}",
            end.status().map(|status| status.as_u16()),
            end.gave_up(),
            end.is_outcome_unknown(),
            end.attempt_log().map_or(0, |log| log.len()),
        );
        Box::pin(async move {
            self.seen.events.lock().unwrap().push(line);
            Ok(())
        })
    }
}

impl IntentObserver for Recorder {
    fn attempt_finished(&self, attempt: &AttemptFinished<'_>) {
        let outcome = match attempt.record().outcome() {
            AttemptOutcome::Status(status) => status.as_u16().to_string(),
            other => format!("{other:?}"),
        };
        self.seen.events.lock().unwrap().push(format!(
            "attempt {} {outcome} retryable={}",
            attempt.record().number(),
            attempt.is_retryable()
        ));
        self.seen
            .request_ids
            .lock()
            .unwrap()
            .push(attempt.record().request_id().as_uuid().to_string());
    }
}

/// Answers 503 until `ok_after` requests, then 201; fails the test if a request
/// arrives before the observer wrote the intent ahead.
struct RequiresWriteAhead {
    written_ahead: Arc<AtomicBool>,
    arrivals_before_write: Arc<AtomicU32>,
    served: AtomicU32,
    ok_after: u32,
}

impl Respond for RequiresWriteAhead {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        if !self.written_ahead.load(Ordering::SeqCst) {
            self.arrivals_before_write.fetch_add(1, Ordering::SeqCst);
        }
        if self.served.fetch_add(1, Ordering::SeqCst) < self.ok_after {
            ResponseTemplate::new(503)
        } else {
            ResponseTemplate::new(201)
        }
    }
}

#[tokio::test]
async fn the_write_ahead_runs_before_the_first_byte_observers_hear_each_attempt_then_it_hears_the_end(
) {
    let server = MockServer::start().await;
    let seen = Arc::new(Seen::default());
    let recorder = Recorder::new(&seen);
    let arrivals_before_write = Arc::new(AtomicU32::new(0));
    Mock::given(method("POST"))
        .respond_with(RequiresWriteAhead {
            written_ahead: recorder.written_ahead.clone(),
            arrivals_before_write: arrivals_before_write.clone(),
            served: AtomicU32::new(0),
            ok_after: 2,
        })
        .expect(3)
        .mount(&server)
        .await;
    let (client, _) = client_with(|p| p.observer(recorder.clone()).write_ahead(recorder));

    let response = client
        .post(server.uri())
        .body("amount=500")
        .send()
        .await
        .unwrap();

    assert_eq!(response.status(), 201);
    assert_eq!(arrivals_before_write.load(Ordering::SeqCst), 0);
    assert_eq!(
        *seen.events.lock().unwrap(),
        vec![
            "started POST key=true",
            "attempt 1 503 retryable=true",
            "attempt 2 503 retryable=true",
            "attempt 3 201 retryable=false",
            "ended status=Some(201) gave_up=None unknown=false attempts=3",
        ]
    );
    assert_eq!(
        seen.started_body.lock().unwrap().as_deref(),
        Some(&b"amount=500"[..])
    );
    // The observer saw the request ids the server received, in order.
    let requests = received(&server).await;
    let sent_ids: Vec<String> = header_values(&requests, "x-request-id")
        .into_iter()
        .map(Option::unwrap)
        .collect();
    assert_eq!(*seen.request_ids.lock().unwrap(), sent_ids);
    single_key(&requests);
}

#[tokio::test]
async fn a_write_ahead_that_refuses_stops_the_intent_before_anything_is_sent() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(201))
        .expect(0)
        .mount(&server)
        .await;
    let seen = Arc::new(Seen::default());
    let recorder = Recorder {
        refuse: true,
        ..Recorder::new(&seen)
    };
    let (client, _) = client_with(|p| p.observer(recorder.clone()).write_ahead(recorder));

    let error = client.post(server.uri()).send().await.unwrap_err();

    assert!(error.is_write_ahead_refused(), "{error}");
    assert_eq!(error.reason(), GiveUpReason::WriteAheadRefused);
    assert!(
        error
            .to_string()
            .contains("refused by the intent's write-ahead"),
        "{error}"
    );
    // The old names still work for one release.
    #[allow(deprecated)]
    {
        assert!(error.is_observer_refused());
        assert!(matches!(error.reason(), GiveUpReason::ObserverRefused));
    }
    assert_eq!(error.attempts(), 0);
    assert!(!error.is_outcome_unknown());
    assert!(
        error.idempotency_key().is_some(),
        "the key is still reported"
    );
    let source = std::error::Error::source(&error).expect("the write-ahead's error");
    assert_eq!(source.to_string(), "journal unavailable");
    assert!(error.to_string().contains("journal unavailable"), "{error}");
    // A write-ahead whose `before_first_byte` ran hears how the intent ended,
    // even when it refused it (a journal that wrote ahead closes its row).
    assert_eq!(
        *seen.events.lock().unwrap(),
        vec![
            "started POST key=true",
            "ended status=None gave_up=Some(WriteAheadRefused) unknown=false attempts=0"
        ]
    );
    assert!(received(&server).await.is_empty());
}

#[tokio::test]
async fn a_per_intent_write_ahead_sees_a_give_up_with_the_outcome_unknown() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(502))
        .expect(2)
        .mount(&server)
        .await;
    let seen = Arc::new(Seen::default());
    let (client, _) = client_with(|p| p.max_attempts(2));

    let error = client
        .post(server.uri())
        .write_ahead(Arc::new(Recorder::new(&seen)))
        .send()
        .await
        .unwrap_err();

    assert!(error.is_attempts_exhausted());
    assert_eq!(
        seen.events.lock().unwrap().last().unwrap(),
        "ended status=Some(502) gave_up=Some(AttemptsExhausted) unknown=true attempts=2"
    );
}

#[tokio::test]
async fn a_body_fn_is_made_into_bytes_once_for_the_write_ahead() {
    let server = MockServer::start().await;
    Mock::given(method("PUT"))
        .respond_with(fail_then_ok(503, 1))
        .expect(2)
        .mount(&server)
        .await;
    let seen = Arc::new(Seen::default());
    let calls = Arc::new(AtomicU32::new(0));
    let counter = calls.clone();
    let (client, _) = client_with(|p| p);

    client
        .put(server.uri())
        .body_fn(move || {
            // A different body on each call: only the first may ever be sent.
            let n = counter.fetch_add(1, Ordering::SeqCst);
            reqwest::Body::from(Bytes::from(format!("report v{n}")))
        })
        .write_ahead(Arc::new(Recorder::new(&seen)))
        .send()
        .await
        .unwrap();

    assert_eq!(calls.load(Ordering::SeqCst), 1, "the factory ran once");
    assert_eq!(
        seen.started_body.lock().unwrap().as_deref(),
        Some(&b"report v0"[..])
    );
    for request in received(&server).await {
        assert_eq!(
            request.body, b"report v0",
            "the journaled bytes are what is sent"
        );
    }
}

/// A gate that allows `allowed` retries, and counts what it is told.
struct CountingGate {
    allowed: u32,
    asked: AtomicU32,
    started: AtomicU32,
    finished_transient: AtomicU32,
    causes: Mutex<Vec<RetryCause>>,
}

impl CountingGate {
    fn new(allowed: u32) -> Arc<Self> {
        Arc::new(Self {
            allowed,
            asked: AtomicU32::new(0),
            started: AtomicU32::new(0),
            finished_transient: AtomicU32::new(0),
            causes: Mutex::new(Vec::new()),
        })
    }
}

struct Shared(Arc<CountingGate>);

impl Gate for Shared {
    fn name(&self) -> &str {
        "counting"
    }

    fn admit(&self, scope: &GateScope<'_>) -> Result<(), GateRefusal> {
        assert_eq!(scope.host(), "127.0.0.1");
        let Some(cause) = scope.retry_cause() else {
            assert_eq!(scope.attempt(), 1);
            self.0.started.fetch_add(1, Ordering::SeqCst);
            return Ok(());
        };
        self.0.causes.lock().unwrap().push(cause);
        if self.0.asked.fetch_add(1, Ordering::SeqCst) < self.0.allowed {
            Ok(())
        } else {
            Err(GateRefusal::new("counting").with_retry_after(Duration::from_secs(3)))
        }
    }

    fn attempt_finished(&self, _: &GateScope<'_>, _: &AttemptOutcome, struggling: bool) {
        if struggling {
            self.0.finished_transient.fetch_add(1, Ordering::SeqCst);
        }
    }
}

#[tokio::test]
async fn a_custom_gate_is_asked_before_every_retry_and_its_no_ends_the_intent() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(503))
        .expect(2)
        .mount(&server)
        .await;
    let gate = CountingGate::new(1);
    let budget = RetryBudget::builder().reserve(5).build().unwrap();
    let (client, sleeper) = client_with(|p| {
        p.max_attempts(5)
            .budget(budget.clone())
            .gate(Shared(gate.clone()))
    });
    let before = budget.available_at("127.0.0.1", std::time::Instant::now());

    let error = client.get(server.uri()).send().await.unwrap_err();

    // The refusal names the gate; it is not the budget's.
    assert!(error.is_gate_refused(), "{error}");
    assert!(!error.is_budget_exhausted());
    let refusal = error.gate_refusal().unwrap();
    assert_eq!(refusal.gate(), "counting");
    assert_eq!(refusal.retry_after(), Some(Duration::from_secs(3)));
    assert_eq!(
        error.retry_after(),
        None,
        "the gate's estimate is not the server's word"
    );
    assert!(error.to_string().contains("counting"), "{error}");
    // The earlier attempt's outcome stands: a 503 may have been processed.
    assert!(error.is_outcome_unknown());
    assert_eq!(error.attempts(), 2);
    assert_eq!(gate.started.load(Ordering::SeqCst), 1);
    assert_eq!(gate.finished_transient.load(Ordering::SeqCst), 2);
    assert_eq!(gate.asked.load(Ordering::SeqCst), 2);
    assert_eq!(sleeper.delays().len(), 1);
    // The budget (asked after the gate) paid only for the retry that happened.
    let after = budget.available_at("127.0.0.1", std::time::Instant::now());
    assert_eq!(
        before - after,
        1,
        "one retry withdrawn, the refused one not"
    );
}

#[tokio::test]
async fn waiting_out_a_409_is_paced_by_the_conflict_delay_and_not_charged_to_the_budget() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(fail_then_ok(409, 2))
        .expect(3)
        .mount(&server)
        .await;
    let gate = CountingGate::new(u32::MAX);
    // A budget with nothing to spend: a transient retry would be refused.
    let empty = RetryBudget::builder().reserve(0).build().unwrap();
    let (client, sleeper) = client_with(|p| {
        p.budget(empty)
            .conflict_delay(250 * MS)
            .gate(Shared(gate.clone()))
    });

    let response = client.post(server.uri()).send().await.unwrap();

    assert_eq!(response.status(), 200);
    assert_eq!(sleeper.delays(), vec![250 * MS, 250 * MS]);
    let log = reqwest_resilience::ResponseExt::attempt_log(&response).unwrap();
    assert_eq!(
        log.attempts()[0].delay_after().unwrap().reason,
        DelayReason::Conflict
    );
    assert_eq!(
        *gate.causes.lock().unwrap(),
        vec![RetryCause::Conflict, RetryCause::Conflict]
    );
    single_key(&received(&server).await);
}

#[tokio::test]
async fn a_classifier_can_say_when_to_come_back() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(
            crate::support::FailTimes::new(
                1,
                ResponseTemplate::new(400).insert_header("x-vendor-retry-ms", "700"),
            )
            .then(ResponseTemplate::new(200)),
        )
        .expect(2)
        .mount(&server)
        .await;
    let (client, sleeper) = client_with(|p| {
        p.classifier(|attempt: &reqwest_resilience::AttemptView<'_>| {
            let ms: u64 = attempt
                .headers()?
                .get("x-vendor-retry-ms")?
                .to_str()
                .ok()?
                .parse()
                .ok()?;
            Some(Decision::RetryAfter(Duration::from_millis(ms)))
        })
    });

    let response = client.get(server.uri()).send().await.unwrap();

    assert_eq!(response.status(), 200);
    let delays = sleeper.delays();
    assert_eq!(delays.len(), 1);
    assert!(
        delays[0] >= 700 * MS,
        "never earlier than asked: {delays:?}"
    );
}

#[tokio::test]
async fn the_virtual_clock_also_moves_http_dates_closer() {
    let server = MockServer::start().await;
    let clock = VirtualClock::new();
    let sleeper = RecordingSleeper::advancing(&clock);
    // The server asks for a date 10 s from (real) now; the client's clock is
    // already 6 s ahead, so only about 4 s are left to wait.
    let asked = RetryAfter::at(503, SystemTime::now() + Duration::from_secs(10));
    Mock::given(method("GET"))
        .respond_with(
            crate::support::FailTimes::new(1, asked.template()).then(ResponseTemplate::new(200)),
        )
        .expect(2)
        .mount(&server)
        .await;
    clock.advance(Duration::from_secs(6));
    let policy = policy(&sleeper).clock(clock).build().unwrap();
    let client = ResilientClient::with_policy(policy);

    client.get(server.uri()).send().await.unwrap();

    let delays = sleeper.delays();
    assert_eq!(delays.len(), 1);
    assert!(
        delays[0] > Duration::from_secs(2) && delays[0] <= Duration::from_secs(4),
        "the date is measured on the policy's clock: {delays:?}"
    );
}

/// A gate that holds back every attempt (a breaker that is open).
struct Closed;

impl Gate for Closed {
    fn name(&self) -> &str {
        "closed"
    }

    fn admit(&self, _: &GateScope<'_>) -> Result<(), GateRefusal> {
        Err(GateRefusal::new("closed").with_retry_after(Duration::from_secs(5)))
    }
}

#[tokio::test]
async fn a_gate_refusing_the_first_attempt_sends_nothing_and_the_write_ahead_never_hears_of_it() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(201))
        .expect(0)
        .mount(&server)
        .await;
    let seen = Arc::new(Seen::default());
    let budget = RetryBudget::builder().reserve(5).build().unwrap();
    let (client, _) = client_with(|p| {
        p.gate(Closed)
            .budget(budget.clone())
            .write_ahead(Recorder::new(&seen))
    });
    let before = budget.available_at("127.0.0.1", std::time::Instant::now());

    let error = client
        .post(server.uri())
        .body("{}")
        .send()
        .await
        .unwrap_err();

    assert!(error.is_gate_refused(), "{error}");
    assert_eq!(error.attempts(), 0);
    assert!(
        !error.is_outcome_unknown(),
        "nothing was sent: the outcome is known"
    );
    assert_eq!(error.gate_refusal().unwrap().gate(), "closed");
    assert_eq!(
        error.gate_refusal().unwrap().retry_after(),
        Some(Duration::from_secs(5))
    );
    assert!(error.to_string().contains("nothing was sent"), "{error}");
    assert!(
        error.idempotency_key().is_some(),
        "the key is still reported"
    );
    // Asked before the write-ahead: a journal would have written nothing (neither
    // of its hooks ran).
    assert!(seen.events.lock().unwrap().is_empty());
    assert!(received(&server).await.is_empty());
    // The budget, asked after the refusing gate, was never charged.
    assert_eq!(
        budget.available_at("127.0.0.1", std::time::Instant::now()),
        before
    );
}

/// One write-ahead per intent: the request's replaces the policy's, and only the
/// one that ran `before_first_byte` hears the end.
#[tokio::test]
async fn the_requests_write_ahead_replaces_the_policys() {
    // (the policy's refuses, the request's refuses) -> the request's is the one
    let table = [(false, false), (true, false), (false, true), (true, true)];
    for (policy_refuses, request_refuses) in table {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(201))
            .expect(u64::from(!request_refuses))
            .mount(&server)
            .await;
        let (policys, requests) = (Arc::new(Seen::default()), Arc::new(Seen::default()));
        let policy_write_ahead = Recorder {
            refuse: policy_refuses,
            ..Recorder::new(&policys)
        };
        let (client, _) = client_with(|p| p.write_ahead(policy_write_ahead));
        let result = client
            .post(server.uri())
            .body("{}")
            .write_ahead(Arc::new(Recorder {
                refuse: request_refuses,
                ..Recorder::new(&requests)
            }))
            .send()
            .await;
        let case = (policy_refuses, request_refuses);
        assert_eq!(result.is_err(), request_refuses, "{case:?}");
        assert!(policys.events.lock().unwrap().is_empty(), "{case:?}");
        let events = requests.events.lock().unwrap();
        assert_eq!(events.len(), 2, "{case:?}: {events:?}");
        let gave_up = if request_refuses {
            "status=None gave_up=Some(WriteAheadRefused)"
        } else {
            "status=Some(201) gave_up=None"
        };
        assert!(events[1].contains(gave_up), "{case:?}: {events:?}");
    }
}

/// An observer (a metrics counter) hears each attempt, each scheduled retry and
/// the end, in order.
#[tokio::test]
async fn an_observer_hears_attempts_scheduled_retries_and_the_end() {
    #[derive(Default)]
    struct Heard {
        events: Mutex<Vec<String>>,
    }
    struct Counter(Arc<Heard>);
    impl IntentObserver for Counter {
        fn attempt_finished(&self, attempt: &AttemptFinished<'_>) {
            self.0.events.lock().unwrap().push(format!(
                "attempt {} of {}",
                attempt.record().number(),
                attempt.intent_id()
            ));
        }
        fn retry_scheduled(&self, retry: &reqwest_resilience::RetryScheduled<'_>) {
            self.0.events.lock().unwrap().push(format!(
                "retry after {} ({:?}, {:?}) of {}",
                retry.record().number(),
                retry.reason(),
                retry.cause(),
                retry.intent_id()
            ));
        }
        fn finished(&self, end: &IntentEnd<'_>) {
            self.0.events.lock().unwrap().push(format!(
                "finished {:?} of {}",
                end.status().map(|status| status.as_u16()),
                end.intent_id()
            ));
        }
    }
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(fail_then_ok(503, 1))
        .expect(2)
        .mount(&server)
        .await;
    let observer = Arc::new(Heard::default());
    // A gate that holds back the first attempt: the end hook still hears of it.
    let (closed, _) = client_with(|p| p.gate(Closed).observer(Counter(observer.clone())));
    assert!(closed.get(server.uri()).send().await.is_err());
    let refused = std::mem::take(&mut *observer.events.lock().unwrap());
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(refused[0].starts_with("finished None of "), "{refused:?}");

    let (client, _) = client_with(|p| p.observer(Counter(observer.clone())));
    let response = client.get(server.uri()).send().await.unwrap();
    assert_eq!(response.status(), 200);
    // The intent id is the first attempt's request id, the same in every hook.
    let requests = received(&server).await;
    let first_id = header_values(&requests, "x-request-id")[0].clone().unwrap();
    assert_eq!(
        *observer.events.lock().unwrap(),
        vec![
            format!("attempt 1 of {first_id}"),
            format!("retry after 1 (Backoff, Transient) of {first_id}"),
            format!("attempt 2 of {first_id}"),
            format!("finished Some(200) of {first_id}"),
        ]
    );
}
