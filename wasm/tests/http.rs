//! The client on wasm32-unknown-unknown, over `fetch`, against a tower-idempotency
//! server on 127.0.0.1: in node by default, in headless Chromium with
//! `WASM_BINDGEN_USE_BROWSER=1` (scripts/wasm-tests.sh runs both). Every assertion is
//! on what the server received, or on the time the client took by the host's clock.
#![cfg(all(target_arch = "wasm32", target_os = "unknown"))]

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest_resilience::time::Instant;
use reqwest_resilience::watch::{DelayReason, IntentObserver, RetryScheduled};
use reqwest_resilience::{
    Backoff, ResilientClient, RetryPolicy, RetryPolicyBuilder, TransportFailure,
};
use support::{log_with, Scenario};
use wasm_bindgen_test::wasm_bindgen_test;

const MS: Duration = Duration::from_millis(1);

/// Every pause the client scheduled, and why.
#[derive(Clone, Default)]
struct Pauses(Arc<Mutex<Vec<(Duration, DelayReason)>>>);

impl Pauses {
    fn all(&self) -> Vec<(Duration, DelayReason)> {
        self.0.lock().unwrap().clone()
    }
}

impl IntentObserver for Pauses {
    fn retry_scheduled(&self, retry: &RetryScheduled<'_>) {
        self.0.lock().unwrap().push((retry.delay(), retry.reason()));
    }
}

fn client(policy: RetryPolicyBuilder) -> ResilientClient {
    ResilientClient::with_policy(policy.build().expect("a valid policy"))
}

#[wasm_bindgen_test]
async fn transient_statuses_are_retried_after_jittered_pauses_under_one_key() {
    let scenario = Scenario::new("jitter");
    let pauses = Pauses::default();
    let (base, cap) = (80 * MS, 400 * MS);
    let client = client(
        RetryPolicy::builder()
            .max_attempts(4)
            .backoff(Backoff::full_jitter(base, cap))
            .rng_seed(7)
            .observer(pauses.clone()),
    );
    let response = client
        .post(scenario.url("unavailable/2"))
        .body("1500")
        .send()
        .await
        .expect("the third attempt succeeds");
    assert_eq!(response.status(), 201);

    let log = scenario.log().await;
    assert_eq!(log.statuses(), [503, 503, 201]);
    assert_eq!(log.effects(), 1);
    log.one_key();
    let ids = log.request_ids();
    assert!(
        ids.iter().all(Option::is_some),
        "a request id on every attempt"
    );
    assert!(
        ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2],
        "{ids:?}"
    );

    // Full jitter: each pause is drawn below its exponential ceiling, and the server
    // saw no attempt earlier than the pause before it allowed.
    let pauses = pauses.all();
    assert_eq!(pauses.len(), 2, "{pauses:?}");
    let arrivals = log.arrivals_ms();
    for (n, (delay, reason)) in pauses.iter().enumerate() {
        assert_eq!(*reason, DelayReason::Backoff);
        assert!(*delay <= (base * 2u32.pow(n as u32)).min(cap), "{pauses:?}");
        let gap = arrivals[n + 1] - arrivals[n];
        // The server's clock counts whole milliseconds.
        assert!(
            u128::from(gap) + 1 >= delay.as_millis(),
            "attempt {} came {gap} ms after the one before, the pause was {delay:?}",
            n + 2
        );
    }
}

#[wasm_bindgen_test]
async fn a_retry_after_is_waited_out_before_the_next_attempt() {
    let scenario = Scenario::new("retry-after");
    let pauses = Pauses::default();
    let client = client(
        RetryPolicy::builder()
            .max_attempts(3)
            .backoff(Backoff::constant(10 * MS))
            .observer(pauses.clone()),
    );
    let started = Instant::now();
    let response = client
        .post(scenario.url("retry-after/1"))
        .body("1500")
        .send()
        .await
        .expect("the retry succeeds");
    assert_eq!(response.status(), 201);
    assert!(started.elapsed() >= Duration::from_secs(1));

    let log = scenario.log().await;
    assert_eq!(log.statuses(), [503, 201]);
    log.one_key();
    let arrivals = log.arrivals_ms();
    assert!(
        arrivals[1] - arrivals[0] >= 999,
        "the retry came {} ms after a Retry-After of 1 s",
        arrivals[1] - arrivals[0]
    );
    assert_eq!(
        pauses.all(),
        [(Duration::from_secs(1), DelayReason::RetryAfter)]
    );
}

#[wasm_bindgen_test]
async fn the_deadline_ends_an_intent_against_a_server_that_stays_down() {
    let scenario = Scenario::new("deadline");
    let deadline = 1200 * MS;
    let client = client(
        RetryPolicy::builder()
            .max_attempts(50)
            .backoff(Backoff::constant(150 * MS))
            .deadline(deadline),
    );
    let started = Instant::now();
    let error = client
        .post(scenario.url("down"))
        .body("1500")
        .send()
        .await
        .expect_err("the server stays down");
    let took = started.elapsed();
    assert!(error.is_deadline_exceeded(), "{error}");
    assert_eq!(error.last_status().map(|s| s.as_u16()), Some(503));
    // No pause is started that would end past the deadline: the intent ends before it.
    assert!(took <= deadline + 300 * MS, "took {took:?}");

    let log = scenario.log().await;
    assert!(log.statuses().len() >= 3, "{:?}", log.statuses());
    assert!(log.statuses().len() < 50);
    let key = log.one_key();
    assert_eq!(
        error.idempotency_key().map(|k| k.as_str()),
        Some(key.as_str())
    );
}

#[wasm_bindgen_test]
async fn the_deadline_aborts_a_fetch_in_flight() {
    // The handler takes 3 s; the deadline is 700 ms. reqwest turns the attempt's
    // timeout (the time left) into an AbortSignal: the fetch is cut off then.
    let scenario = Scenario::new("abort");
    let deadline = 700 * MS;
    let client = client(
        RetryPolicy::builder()
            .deadline(deadline)
            .attempt_timeout(deadline),
    );
    let started = Instant::now();
    let error = client
        .post(scenario.url("slow/3000"))
        .body("1500")
        .send()
        .await
        .expect_err("the handler is slower than the deadline");
    let took = started.elapsed();
    assert!(
        took >= deadline - 50 * MS && took <= deadline + 400 * MS,
        "took {took:?}"
    );
    assert!(error.is_timeout(), "{error}");
    assert_eq!(error.transport_failure(), Some(TransportFailure::Timeout));
    // The request had reached the handler: nobody knows whether it paid.
    assert!(error.is_outcome_unknown(), "{error}");

    // The handler finishes on the server after the client has gone.
    let log = log_with(&scenario, 1).await;
    assert_eq!(
        log.statuses(),
        [0],
        "one attempt, cut off before its answer"
    );
    assert_eq!(log.effects(), 1);
}

#[wasm_bindgen_test]
async fn a_409_for_a_key_still_running_is_waited_out_and_the_result_replayed() {
    // The first attempt is cut off after 500 ms while the handler runs for 1.5 s; the
    // retry, with the same key, is told 409 (still running) with a Retry-After, waits,
    // and gets the stored result. One payment.
    let scenario = Scenario::new("conflict");
    let pauses = Pauses::default();
    let client = client(
        RetryPolicy::builder()
            .max_attempts(5)
            .attempt_timeout(500 * MS)
            .deadline(Duration::from_secs(8))
            .backoff(Backoff::constant(50 * MS))
            .observer(pauses.clone()),
    );
    let response = client
        .post(scenario.url("slow/1500"))
        .body("1500")
        .send()
        .await
        .expect("the stored result, replayed");
    assert_eq!(response.status(), 201);
    assert_eq!(
        response
            .headers()
            .get("idempotent-replayed")
            .and_then(|v| v.to_str().ok()),
        Some("true")
    );
    assert_eq!(response.text().await.unwrap(), "effect 1");

    let log = log_with(&scenario, 1).await;
    let statuses = log.statuses();
    // Cut off, told 409 (once or more), then the replay.
    assert_eq!(statuses[0], 0, "{statuses:?}");
    assert!(statuses.contains(&409), "{statuses:?}");
    assert_eq!(statuses.last(), Some(&201), "{statuses:?}");
    assert_eq!(log.effects(), 1);
    log.one_key();
    assert!(
        pauses
            .all()
            .iter()
            .any(|(_, why)| *why == DelayReason::Conflict || *why == DelayReason::RetryAfter),
        "{:?}",
        pauses.all()
    );
}

#[wasm_bindgen_test]
async fn each_intent_has_its_own_key_and_keeps_it_across_attempts() {
    let scenario = Scenario::new("keys");
    let client = client(
        RetryPolicy::builder()
            .max_attempts(3)
            .backoff(Backoff::constant(10 * MS)),
    );
    for _ in 0..2 {
        let response = client
            .post(scenario.url("unavailable/1"))
            .body("1500")
            .send()
            .await
            .expect("the retry succeeds");
        assert_eq!(response.status(), 201);
    }
    let log = scenario.log().await;
    // The first intent: 503 then 201 under one key; the second: 201 under another.
    assert_eq!(log.statuses(), [503, 201, 201]);
    let keys = log.keys();
    assert!(keys.iter().all(Option::is_some), "{keys:?}");
    assert_eq!(keys[0], keys[1]);
    assert_ne!(keys[1], keys[2]);
    assert_eq!(log.effects(), 2);
}

#[wasm_bindgen_test]
async fn a_failed_fetch_may_have_been_processed() {
    // Nothing listens on port 9 (and browsers refuse it): `fetch` throws its
    // `TypeError`, which says nothing of whether the server acted. A keyed POST is
    // retried, then ends with its outcome unknown.
    let client = client(
        RetryPolicy::builder()
            .max_attempts(2)
            .backoff(Backoff::constant(10 * MS)),
    );
    let error = client
        .post("http://127.0.0.1:9/pay")
        .body("1500")
        .send()
        .await
        .expect_err("nothing answers");
    assert_eq!(
        error.transport_failure(),
        Some(TransportFailure::FetchFailed)
    );
    assert_eq!(error.attempts(), 2, "{error}");
    assert!(error.is_outcome_unknown(), "{error}");

    // Unkeyed, the same failure proves too little to resend a POST.
    let error = client
        .post("http://127.0.0.1:9/pay")
        .without_idempotency_key()
        .body("1500")
        .send()
        .await
        .expect_err("nothing answers");
    assert_eq!(error.attempts(), 1, "{error}");
    assert!(error.is_outcome_unknown(), "{error}");
}
