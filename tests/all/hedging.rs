//! Hedged requests over a real loopback server: each rule of the race, asserted
//! on what the server received. Slow answers are wiremock delays; every timing
//! assertion is "not earlier than" or a generous bound.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest_resilience::{
    AttemptOutcome, BoxError, DelayReason, Hedging, IntentEnd, IntentStart, ResilientClient,
    ResponseExt, RetryPolicy, WriteAhead, WriteAheadFuture,
};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

mod breaker;

const MS: Duration = Duration::from_millis(1);

/// Answers the n-th request (from 0) with `answers[n]` (the last one again past
/// the end), and notes when each arrived.
#[derive(Clone)]
struct Script {
    answers: Arc<Vec<ResponseTemplate>>,
    seen: Arc<AtomicUsize>,
    arrivals: Arc<Mutex<Vec<Instant>>>,
}

impl Script {
    fn new(answers: Vec<ResponseTemplate>) -> Self {
        Self {
            answers: Arc::new(answers),
            seen: Arc::default(),
            arrivals: Arc::default(),
        }
    }
}

impl Respond for Script {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        self.arrivals.lock().unwrap().push(Instant::now());
        let n = self.seen.fetch_add(1, Ordering::SeqCst);
        self.answers[n.min(self.answers.len() - 1)].clone()
    }
}

fn answer(status: u16, body: &str, delay_ms: u64) -> ResponseTemplate {
    ResponseTemplate::new(status)
        .set_body_string(body)
        .set_delay(Duration::from_millis(delay_ms))
}

async fn serve(script: &Script) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(wiremock::matchers::any())
        .respond_with(script.clone())
        .mount(&server)
        .await;
    server
}

fn client(hedging: Hedging) -> ResilientClient {
    let policy = RetryPolicy::builder()
        .hedging(hedging)
        .rng_seed(7)
        .build()
        .unwrap();
    ResilientClient::with_policy(policy)
}

async fn received(server: &MockServer) -> Vec<Request> {
    server.received_requests().await.unwrap()
}

#[tokio::test]
async fn a_slow_first_copy_is_overtaken_by_a_hedge() {
    let script = Script::new(vec![answer(200, "first", 3_000), answer(200, "hedge", 0)]);
    let server = serve(&script).await;
    let started = Instant::now();
    let response = client(Hedging::fixed(50 * MS))
        .get(format!("{}/item", server.uri()))
        .send()
        .await
        .unwrap();
    assert!(
        started.elapsed() < 2_000 * MS,
        "the slow copy was not awaited"
    );
    let log = response.attempt_log().unwrap().clone();
    assert_eq!(response.text().await.unwrap(), "hedge");
    let requests = received(&server).await;
    assert_eq!(requests.len(), 2);
    // Two copies of one intent: each with its own request id.
    let ids: Vec<_> = requests
        .iter()
        .map(|r| r.headers["x-request-id"].clone())
        .collect();
    assert_ne!(ids[0], ids[1]);
    // The log, in the order sent: the first cancelled, the hedge's answer.
    let attempts = log.attempts();
    assert_eq!(attempts.len(), 2);
    assert_eq!(*attempts[0].outcome(), AttemptOutcome::Cancelled);
    let hedge = attempts[0].delay_after().unwrap();
    assert_eq!(hedge.reason, DelayReason::Hedge);
    assert!(hedge.delay >= 50 * MS);
    assert_eq!(
        attempts[1].outcome(),
        &AttemptOutcome::Status(http::StatusCode::OK)
    );
}

#[tokio::test]
async fn a_fast_first_copy_sends_no_hedge() {
    let script = Script::new(vec![answer(200, "first", 0)]);
    let server = serve(&script).await;
    let response = client(Hedging::fixed(500 * MS))
        .get(server.uri())
        .send()
        .await
        .unwrap();
    assert_eq!(response.text().await.unwrap(), "first");
    // Wait past the hedge delay: nothing more arrives.
    tokio::time::sleep(700 * MS).await;
    assert_eq!(received(&server).await.len(), 1);
}

#[tokio::test]
async fn a_503_on_one_copy_does_not_end_the_intent_while_another_runs() {
    // The hedge fails fast; the first copy answers later, and wins.
    let script = Script::new(vec![answer(200, "first", 400), answer(503, "", 0)]);
    let server = serve(&script).await;
    let policy = RetryPolicy::builder()
        .max_attempts(2)
        .hedging(Hedging::fixed(50 * MS))
        .build()
        .unwrap();
    let response = ResilientClient::with_policy(policy)
        .get(server.uri())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.text().await.unwrap(), "first");
    assert_eq!(received(&server).await.len(), 2);
}

#[tokio::test]
async fn a_final_404_wins_at_once() {
    let script = Script::new(vec![answer(200, "first", 3_000), answer(404, "gone", 0)]);
    let server = serve(&script).await;
    let started = Instant::now();
    let response = client(Hedging::fixed(50 * MS))
        .get(server.uri())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    assert!(
        started.elapsed() < 2_000 * MS,
        "the 404 did not wait for the first copy"
    );
    assert_eq!(received(&server).await.len(), 2);
}

#[tokio::test]
async fn retry_after_holds_the_next_copy() {
    let script = Script::new(vec![
        ResponseTemplate::new(503).insert_header("retry-after", "1"),
        answer(200, "later", 0),
    ]);
    let server = serve(&script).await;
    let response = client(Hedging::fixed(50 * MS))
        .get(server.uri())
        .send()
        .await
        .unwrap();
    assert_eq!(response.text().await.unwrap(), "later");
    let arrivals = script.arrivals.lock().unwrap().clone();
    assert_eq!(arrivals.len(), 2, "no hedge went out during the hold");
    assert!(
        arrivals[1] - arrivals[0] >= 1_000 * MS,
        "not earlier than asked"
    );
}

#[tokio::test]
async fn the_cap_refuses_hedges_after_its_burst() {
    // Every answer is slow enough to be hedged; the cap allows one hedge.
    let script = Script::new(vec![answer(200, "slow", 200)]);
    let server = serve(&script).await;
    let client = client(Hedging::fixed(20 * MS).cap(0.000_001, 1));
    for _ in 0..3 {
        let response = client.get(server.uri()).send().await.unwrap();
        assert_eq!(response.status(), 200);
    }
    // 2 copies for the first intent, then 1 each: the refused hedges never
    // made an intent fail.
    assert_eq!(received(&server).await.len(), 4);
}

/// The adaptive delay over loopback: no hedge before `min_samples` answers were
/// seen, then a hedge after the percentile of what was seen, not before.
#[tokio::test]
async fn the_adaptive_delay_waits_for_its_samples_then_hedges_after_the_percentile() {
    let script = Script::new(vec![
        answer(200, "a", 200),
        answer(200, "b", 200),
        // Slow, but only 2 answers of 3 were seen: not hedged.
        answer(200, "c", 700),
        answer(200, "slow", 3_000),
        answer(200, "hedge", 0),
    ]);
    let server = serve(&script).await;
    let refresh = 300 * MS;
    let client = client(
        Hedging::adaptive(50.0)
            .min_samples(3)
            .floor(10 * MS)
            .refresh(refresh),
    );
    for body in ["a", "b", "c"] {
        let response = client.get(server.uri()).send().await.unwrap();
        assert_eq!(response.text().await.unwrap(), body);
    }
    assert_eq!(
        received(&server).await.len(),
        3,
        "no hedge before 3 samples"
    );
    // The estimate is worked out on the next refresh.
    tokio::time::sleep(refresh).await;

    // Samples of at least 200, 200 and 700 ms: the median is at least 200 ms.
    let started = Instant::now();
    let response = client.get(server.uri()).send().await.unwrap();
    assert_eq!(response.text().await.unwrap(), "hedge");
    assert!(
        started.elapsed() < 2_000 * MS,
        "the slow copy was not awaited"
    );
    let arrivals = script.arrivals.lock().unwrap().clone();
    assert_eq!(arrivals.len(), 5);
    let hedged_after = arrivals[4] - arrivals[3];
    assert!(
        hedged_after >= 200 * MS,
        "hedged before the percentile: {hedged_after:?}"
    );
}

/// PUT and DELETE are hedged only when listed, never by default; a listed PUT's
/// hedge carries the same body.
#[tokio::test]
async fn put_and_delete_are_hedged_only_when_listed() {
    use http::Method;

    let default = Hedging::fixed(50 * MS);
    let listed = Hedging::fixed(50 * MS).methods([Method::GET, Method::PUT, Method::DELETE]);
    for (hedging, copies) in [(default, 1), (listed, 2)] {
        for method in [Method::PUT, Method::DELETE] {
            let script = Script::new(vec![answer(200, "slow", 400), answer(200, "hedge", 0)]);
            let server = serve(&script).await;
            let response = client(hedging.clone())
                .request(method.clone(), format!("{}/item/7", server.uri()))
                .body("{\"v\":1}")
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 200);
            let requests = received(&server).await;
            assert_eq!(requests.len(), copies, "{method} with {hedging:?}");
            for request in &requests {
                assert_eq!(request.method.as_str(), method.as_str());
                assert_eq!(request.url.path(), "/item/7");
                assert_eq!(request.body, b"{\"v\":1}");
                assert!(
                    !request.headers.contains_key("idempotency-key"),
                    "{method} is unkeyed by default"
                );
            }
        }
    }
}

#[tokio::test]
async fn a_post_with_a_key_is_never_hedged() {
    let script = Script::new(vec![answer(201, "paid", 300)]);
    let server = serve(&script).await;
    let hedging = Hedging::fixed(20 * MS).methods([http::Method::GET, http::Method::PUT]);
    let response = client(hedging)
        .post(server.uri())
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let requests = received(&server).await;
    assert_eq!(requests.len(), 1);
    assert!(requests[0].headers.contains_key("idempotency-key"));
}

/// A write-ahead that writes nothing: it makes the intent durable.
struct Durable;

impl WriteAhead for Durable {
    fn before_first_byte<'a>(
        &'a self,
        _: &'a IntentStart<'a>,
    ) -> WriteAheadFuture<'a, Result<(), BoxError>> {
        Box::pin(async { Ok(()) })
    }

    fn after_end<'a>(&'a self, _: &'a IntentEnd<'a>) -> WriteAheadFuture<'a, Result<(), BoxError>> {
        Box::pin(async { Ok(()) })
    }
}

#[tokio::test]
async fn a_durable_intent_is_never_hedged() {
    let script = Script::new(vec![answer(200, "slow", 300)]);
    let server = serve(&script).await;
    let policy = RetryPolicy::builder()
        .hedging(Hedging::fixed(20 * MS))
        .write_ahead(Durable)
        .build()
        .unwrap();
    let response = ResilientClient::with_policy(policy)
        .get(server.uri())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(received(&server).await.len(), 1);
}

#[tokio::test]
async fn the_deadline_bounds_every_copy() {
    let script = Script::new(vec![answer(200, "too late", 5_000)]);
    let server = serve(&script).await;
    let policy = RetryPolicy::builder()
        .deadline(600 * MS)
        // As long as the deadline: the hedge, sent 100 ms later, would outlive it
        // unless its timeout is cut to the time left.
        .attempt_timeout(600 * MS)
        .hedging(Hedging::fixed(100 * MS))
        .build()
        .unwrap();
    let started = Instant::now();
    let error = ResilientClient::with_policy(policy)
        .get(server.uri())
        .send()
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert!(took >= 600 * MS && took < 1_500 * MS, "took {took:?}");
    assert_eq!(received(&server).await.len(), 2);
    assert!(
        error.is_deadline_exceeded() || error.attempts() == 2,
        "{error}"
    );
    assert!(error.attempts() >= 2, "{error}");
}

#[tokio::test]
async fn bad_hedging_settings_are_refused_at_build_naming_the_setting() {
    let error = RetryPolicy::builder()
        .hedging(Hedging::fixed(50 * MS).max_copies(9))
        .build()
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "hedging.max_copies must be between 2 and 5, got 9"
    );
    let error = RetryPolicy::builder()
        .max_attempts(1)
        .hedging(Hedging::default())
        .build()
        .unwrap_err();
    assert!(error.to_string().starts_with("hedging "), "{error}");
}

/// The client model's trace: the hedge's 503 asks for `Retry-After: 1`, then the
/// first copy times out; the next copy must still wait for the second the server
/// asked for (it went at once).
#[tokio::test]
async fn a_retry_after_holds_the_next_copy_though_another_copy_failed_without_one() {
    let script = Script::new(vec![
        answer(200, "first", 3_000),
        answer(503, "hedge", 0).insert_header("retry-after", "1"),
        answer(200, "third", 0),
    ]);
    let server = serve(&script).await;
    let policy = RetryPolicy::builder()
        .hedging(Hedging::fixed(50 * MS))
        .attempt_timeout(400 * MS)
        .rng_seed(7)
        .build()
        .unwrap();
    let response = ResilientClient::with_policy(policy)
        .get(format!("{}/item", server.uri()))
        .send()
        .await
        .unwrap();
    assert_eq!(response.text().await.unwrap(), "third");
    let arrivals = script.arrivals.lock().unwrap().clone();
    assert_eq!(arrivals.len(), 3);
    let after_the_ask = arrivals[2].duration_since(arrivals[1]);
    assert!(after_the_ask >= Duration::from_secs(1), "{after_the_ask:?}");
}

/// A request a hedging policy will not hedge runs without copies, and its attempt
/// log says why.
#[tokio::test]
async fn a_request_the_policy_will_not_hedge_says_so_in_its_log() {
    let script = Script::new(vec![answer(200, "one", 100)]);
    let server = serve(&script).await;
    let client = client(Hedging::fixed(10 * MS));
    let response = client.post(server.uri()).send().await.unwrap();
    let log = response.attempt_log().unwrap().clone();
    assert_eq!(
        log.not_hedged(),
        Some(reqwest_resilience::NotHedged::Method)
    );
    assert!(log.to_string().ends_with("| not hedged: method"), "{log}");
    let keyed = client
        .get(server.uri())
        .idempotency_key("order-1")
        .send()
        .await
        .unwrap();
    let log = keyed.attempt_log().unwrap();
    assert_eq!(log.not_hedged(), Some(reqwest_resilience::NotHedged::Keyed));
    // Only one copy each, though every answer took ten hedge delays.
    assert_eq!(received(&server).await.len(), 2);
    // A hedged intent's log has no such line.
    let hedged = client.get(server.uri()).send().await.unwrap();
    assert_eq!(hedged.attempt_log().unwrap().not_hedged(), None);
}
