//! The deadline bounds the whole intent: attempts and pauses.

use std::time::{Duration, Instant};

use reqwest_resilience::{Backoff, RecordingSleeper, ResilientClient, RetryPolicy, VirtualClock};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{client_with, received, Scripted, MS};

#[tokio::test]
async fn the_deadline_holds_against_a_slow_server() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(3)))
        .mount(&server)
        .await;
    // Real timer: the deadline must hold in wall time.
    let client = ResilientClient::with_policy(
        RetryPolicy::builder()
            .deadline(Duration::from_millis(600))
            .attempt_timeout(Duration::from_millis(250))
            .backoff(Backoff::constant(Duration::from_millis(20)))
            .max_attempts(10)
            .build()
            .unwrap(),
    );
    let started = Instant::now();
    let error = client.post(server.uri()).send().await.unwrap_err();
    let elapsed = started.elapsed();
    assert!(
        elapsed <= Duration::from_millis(600) + Duration::from_millis(150),
        "{elapsed:?}"
    );
    assert!(error.is_deadline_exceeded(), "{error}");
    assert!(
        error.is_outcome_unknown(),
        "timed-out attempts may have been processed"
    );
    assert!(error.attempts() >= 2, "attempt timeout let a retry happen");
    assert_eq!(received(&server).await.len() as u32, error.attempts());
}

#[tokio::test]
async fn a_slow_attempt_times_out_and_the_retry_succeeds() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(Scripted::new(vec![
            ResponseTemplate::new(200).set_delay(Duration::from_secs(5)),
            ResponseTemplate::new(200).set_body_string("fast"),
        ]))
        .mount(&server)
        .await;
    let (client, _) = client_with(|p| p.attempt_timeout(Duration::from_millis(200)));
    let started = Instant::now();
    let response = client.get(server.uri()).send().await.unwrap();
    assert_eq!(response.text().await.unwrap(), "fast");
    assert!(started.elapsed() < Duration::from_secs(4));
}

#[tokio::test]
async fn no_pause_is_started_that_would_end_past_the_deadline() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(429))
        .expect(1)
        .mount(&server)
        .await;
    let (client, sleeper) = client_with(|p| {
        p.backoff(Backoff::constant(Duration::from_secs(2)))
            .deadline(Duration::from_secs(1))
            .attempt_timeout(Duration::from_secs(1))
    });
    let error = client.get(server.uri()).send().await.unwrap_err();
    assert!(error.is_deadline_exceeded());
    assert!(sleeper.delays().is_empty());
    assert!(!error.is_outcome_unknown());
}

#[tokio::test]
async fn a_per_call_deadline_overrides_the_policy() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(3)))
        .mount(&server)
        .await;
    let (client, _) = client_with(|p| p.no_deadline().attempt_timeout(Duration::from_secs(20)));
    let started = Instant::now();
    let error = client
        .get(server.uri())
        .deadline(300 * MS)
        .send()
        .await
        .unwrap_err();
    assert!(error.is_deadline_exceeded(), "{error}");
    assert!(error.is_timeout(), "the attempt was cut by the deadline");
    assert!(started.elapsed() < Duration::from_secs(1));
}

#[tokio::test]
async fn a_zero_per_call_deadline_is_refused_before_sending() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200))
        .expect(0)
        .mount(&server)
        .await;
    let (client, _) = client_with(|p| p);
    let error = client
        .get(server.uri())
        .deadline(Duration::ZERO)
        .send()
        .await
        .unwrap_err();
    assert!(error.is_invalid_request(), "{error}");
    assert!(error.to_string().contains("deadline"), "{error}");
    assert_eq!(error.attempts(), 0);
}

#[tokio::test]
async fn recorded_pauses_use_up_the_deadline_on_a_virtual_clock() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(503))
        .mount(&server)
        .await;
    let clock = VirtualClock::new();
    let sleeper = RecordingSleeper::advancing(&clock);
    let policy = RetryPolicy::builder()
        .sleeper(sleeper.clone())
        .clock(clock.clone())
        .backoff(Backoff::constant(Duration::from_millis(400)))
        .max_attempts(10)
        .deadline(Duration::from_secs(1))
        .no_budget()
        .build()
        .unwrap();
    let started = Instant::now();
    let error = ResilientClient::with_policy(policy)
        .get(server.uri())
        .send()
        .await
        .unwrap_err();
    // Attempts at 0, 400 and 800 ms (virtual); a third pause would end past 1 s.
    // With pauses that cost nothing, all 10 attempts would have been made.
    assert!(error.is_deadline_exceeded(), "{error}");
    assert_eq!(error.attempts(), 3);
    assert_eq!(sleeper.total(), Duration::from_millis(800));
    assert!(
        error.elapsed() >= Duration::from_millis(800),
        "virtual time counts"
    );
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "and nothing waited"
    );
    assert_eq!(received(&server).await.len(), 3);
}

#[tokio::test]
async fn a_short_per_call_deadline_still_leaves_room_for_retries() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(503).set_delay(100 * MS))
        .mount(&server)
        .await;
    // The policy keeps its 10 s attempt timeout; the call allows 600 ms in all.
    let (client, _) = client_with(|p| p.no_deadline().max_attempts(10));
    let error = client
        .get(server.uri())
        .deadline(600 * MS)
        .send()
        .await
        .unwrap_err();
    assert!(error.is_deadline_exceeded(), "{error}");
    assert!(
        error.attempts() >= 4,
        "100 ms attempts fit several times in 600 ms: {}",
        error.attempts()
    );
    assert_eq!(received(&server).await.len() as u32, error.attempts());
}

#[tokio::test]
async fn a_client_brought_by_the_caller_still_gets_each_attempts_timeout() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(Scripted::new(vec![
            ResponseTemplate::new(200).set_delay(Duration::from_secs(5)),
            ResponseTemplate::new(200).set_body_string("fast"),
        ]))
        .mount(&server)
        .await;
    // No total timeout on this client: the loop must set one on every attempt.
    let http = reqwest_resilience::ResilientClient::reqwest_builder()
        .build()
        .unwrap();
    let sleeper = reqwest_resilience::RecordingSleeper::new();
    let policy = crate::support::policy(&sleeper)
        .attempt_timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    let client = reqwest_resilience::ResilientClient::from_parts(http, policy);
    let started = Instant::now();
    let response = client.get(server.uri()).send().await.unwrap();
    assert_eq!(response.text().await.unwrap(), "fast");
    assert!(started.elapsed() < Duration::from_secs(4));
    assert_eq!(received(&server).await.len(), 2);
}

/// A sleeper whose pauses overrun: each advances the virtual clock by what was asked
/// plus `over` (a suspended process, a coarse timer).
struct Oversleeper {
    clock: VirtualClock,
    over: Duration,
}

impl reqwest_resilience::Sleeper for Oversleeper {
    fn sleep(&self, duration: Duration) -> reqwest_resilience::Sleep {
        self.clock.advance(duration + self.over);
        Box::pin(std::future::ready(()))
    }
}

#[tokio::test]
async fn a_pause_that_overran_the_deadline_ends_the_intent_with_the_previous_result() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(503).insert_header("x-attempt", "first"))
        .mount(&server)
        .await;
    let clock = VirtualClock::new();
    let policy = RetryPolicy::builder()
        .sleeper(Oversleeper {
            clock: clock.clone(),
            over: Duration::from_secs(5),
        })
        .clock(clock.clone())
        .backoff(Backoff::constant(Duration::from_millis(100)))
        .max_attempts(5)
        .deadline(Duration::from_secs(1))
        .no_budget()
        .build()
        .unwrap();
    let error = ResilientClient::with_policy(policy)
        .get(server.uri())
        .send()
        .await
        .unwrap_err();
    // The pause was allowed (100 ms of 1 s) but ended 5 s later: no second attempt
    // starts, and the caller still gets the first attempt's response.
    assert!(error.is_deadline_exceeded(), "{error}");
    assert_eq!(error.attempts(), 1);
    assert_eq!(error.last_status().map(|s| s.as_u16()), Some(503));
    let response = error.response().expect("the previous response is kept");
    assert_eq!(response.headers()["x-attempt"], "first");
    assert!(
        error.elapsed() >= Duration::from_secs(5),
        "{:?}",
        error.elapsed()
    );
    assert_eq!(received(&server).await.len(), 1);
}

/// A write-ahead whose hooks take `started` / `ended` to return.
struct Slow {
    started: Duration,
    ended: Duration,
    ended_calls: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl reqwest_resilience::WriteAhead for Slow {
    fn before_first_byte<'a>(
        &'a self,
        _: &'a reqwest_resilience::IntentStart<'a>,
    ) -> reqwest_resilience::WriteAheadFuture<'a, Result<(), reqwest_resilience::BoxError>> {
        Box::pin(async move {
            tokio::time::sleep(self.started).await;
            Ok(())
        })
    }

    fn after_end<'a>(
        &'a self,
        _: &'a reqwest_resilience::IntentEnd<'a>,
    ) -> reqwest_resilience::WriteAheadFuture<'a, Result<(), reqwest_resilience::BoxError>> {
        self.ended_calls
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Box::pin(async move {
            tokio::time::sleep(self.ended).await;
            Ok(())
        })
    }
}

fn slow(
    started: Duration,
    ended: Duration,
) -> (
    std::sync::Arc<Slow>,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let observer = Slow {
        started,
        ended,
        ended_calls: calls.clone(),
    };
    (std::sync::Arc::new(observer), calls)
}

/// The client model's trace: a write-ahead that takes most of the deadline, then
/// a first attempt whose timeout was cut to the time left at `send()` (not after
/// the write-ahead) and ran past the deadline.
#[tokio::test]
async fn the_first_attempt_after_a_slow_write_ahead_has_only_the_time_left() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(201).set_delay(Duration::from_secs(5)))
        .mount(&server)
        .await;
    let policy = RetryPolicy::builder()
        .deadline(Duration::from_secs(1))
        .attempt_timeout(Duration::from_secs(1))
        .build()
        .unwrap();
    let (write_ahead, _) = slow(800 * MS, Duration::ZERO);
    let started = Instant::now();
    let error = ResilientClient::with_policy(policy)
        .post(server.uri())
        .body("{}")
        .write_ahead(write_ahead)
        .send()
        .await
        .unwrap_err();
    let elapsed = started.elapsed();
    // Timed from `send()`, the attempt would have had its whole second: 1.8 s.
    assert!(
        elapsed >= Duration::from_secs(1) && elapsed < 1500 * MS,
        "{elapsed:?}"
    );
    assert!(error.is_deadline_exceeded(), "{error}");
    assert_eq!(error.attempts(), 1);
}

#[tokio::test]
async fn a_slow_write_ahead_start_cannot_make_send_outlive_the_deadline() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(201))
        .expect(0)
        .mount(&server)
        .await;
    let client =
        ResilientClient::with_policy(RetryPolicy::builder().deadline(300 * MS).build().unwrap());
    let (observer, ended_calls) = slow(Duration::from_secs(5), Duration::ZERO);
    let started = Instant::now();
    let error = client
        .post(server.uri())
        .body("{}")
        .write_ahead(observer)
        .send()
        .await
        .unwrap_err();
    let elapsed = started.elapsed();
    assert!(
        elapsed >= 300 * MS && elapsed < 300 * MS + 250 * MS,
        "{elapsed:?}"
    );
    assert!(error.is_deadline_exceeded(), "{error}");
    assert_eq!(error.attempts(), 0);
    // The observer may have acted (a journal written ahead): not "nothing happened".
    assert!(error.is_outcome_unknown(), "{error}");
    assert_eq!(
        ended_calls.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "told how it ended"
    );
    assert!(received(&server).await.is_empty(), "nothing was sent");
}

#[tokio::test]
async fn a_slow_write_ahead_end_cannot_make_send_outlive_the_deadline() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(Scripted::new(vec![
            ResponseTemplate::new(201),
            ResponseTemplate::new(400),
        ]))
        .expect(2)
        .mount(&server)
        .await;
    let client =
        ResilientClient::with_policy(RetryPolicy::builder().deadline(400 * MS).build().unwrap());
    // A response: the caller gets it at the deadline, unchanged.
    let (observer, _) = slow(Duration::ZERO, Duration::from_secs(5));
    let started = Instant::now();
    let response = client
        .post(server.uri())
        .body("{}")
        .write_ahead(observer)
        .send()
        .await
        .unwrap();
    let elapsed = started.elapsed();
    assert_eq!(response.status(), 201);
    assert!(
        elapsed >= 400 * MS && elapsed < 400 * MS + 250 * MS,
        "{elapsed:?}"
    );
    // The write-ahead did not record it: it may resend, and the response says so.
    assert!(reqwest_resilience::ResponseExt::end_not_recorded(&response));

    // A final 400 likewise.
    let (observer, _) = slow(Duration::ZERO, Duration::from_secs(5));
    let started = Instant::now();
    let response = client
        .post(server.uri())
        .body("{}")
        .without_idempotency_key()
        .write_ahead(observer)
        .send()
        .await
        .unwrap();
    // 400 is a final response: Ok, unchanged, within the deadline.
    assert_eq!(response.status(), 400);
    assert!(started.elapsed() < 400 * MS + 250 * MS);
}

#[tokio::test]
async fn an_unheard_end_makes_a_known_give_up_unknown() {
    // Nothing listens here: every attempt is refused, and that proves nothing was
    // sent — until the write-ahead misses the end.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", closed.local_addr().unwrap());
    drop(closed);
    let client = ResilientClient::with_policy(
        RetryPolicy::builder()
            .deadline(400 * MS)
            .max_attempts(1)
            .build()
            .unwrap(),
    );
    let quick = client.post(&url).body("{}").send().await.unwrap_err();
    assert!(!quick.is_outcome_unknown(), "{quick}");

    let (observer, _) = slow(Duration::ZERO, Duration::from_secs(5));
    let started = Instant::now();
    let error = client
        .post(&url)
        .body("{}")
        .write_ahead(observer)
        .send()
        .await
        .unwrap_err();
    assert!(started.elapsed() < 400 * MS + 250 * MS);
    assert!(error.is_outcome_unknown(), "{error}");
}

/// The resolution of tokio's timer: a timer fires within one tick of its instant.
const TIMER_TICK: Duration = Duration::from_millis(1);

/// Every attempt and every hedged copy expires at an instant fixed when the intent
/// decided to send it: a runtime that first runs the intent late (its only thread
/// blocked right after `send()`) does not move the instant later.
///
/// Each call races a plain timer set one tick after its deadline, the call polled
/// first: a call whose own timer is due no later than that tick has ended by the
/// time the plain timer could win, however late a loaded host runs the thread.
#[test]
fn a_stalled_runtime_does_not_stretch_the_deadline() {
    const DEADLINE: Duration = Duration::from_millis(300);
    const STALL: Duration = Duration::from_millis(200);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        // wiremock serves from a thread of its own: the stall does not hold it.
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(5)))
            .mount(&server)
            .await;
        let single = RetryPolicy::builder().max_attempts(1);
        let retrying = RetryPolicy::builder().max_attempts(3);
        let hedged = RetryPolicy::builder().hedging(reqwest_resilience::Hedging::fixed(
            Duration::from_millis(30),
        ));
        let clients: Vec<ResilientClient> = [single, retrying, hedged]
            .into_iter()
            .map(|policy| ResilientClient::with_policy(policy.deadline(DEADLINE).build().unwrap()))
            .collect();
        let calls: Vec<_> = clients
            .iter()
            .map(|client| {
                let issued = Instant::now();
                let call = client.get(server.uri()).send();
                let late = tokio::time::sleep_until((issued + DEADLINE + TIMER_TICK).into());
                let raced = tokio::spawn(async move {
                    tokio::select! {
                        biased;
                        result = call => Some((result, Instant::now())),
                        () = late => None,
                    }
                });
                (issued + DEADLINE, raced)
            })
            .collect();
        // The only thread is blocked before any intent first runs.
        std::thread::sleep(STALL);
        for (index, (deadline, raced)) in calls.into_iter().enumerate() {
            let Some((result, returned)) = raced.await.unwrap() else {
                panic!("call {index} was still running one timer tick after its deadline");
            };
            let error = result.unwrap_err();
            assert!(error.is_deadline_exceeded(), "call {index}: {error}");
            assert!(returned >= deadline, "call {index} ended early");
        }
    });
}
