//! Hedges and the circuit breaker over loopback: a half-open circuit's probe is
//! never hedged, and a cancelled copy counts neither as a success nor as a failure.
//!
//! The policy's clock is a `VirtualClock` the test moves past the break, so the
//! breaker's windows and break never depend on real time; the hedge delay and the
//! server's slow answers are real time, asserted only as "not earlier than".

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest_resilience::{
    CircuitBreaker, CircuitState, HedgeEvent, HedgeEventKind, Hedging, IntentObserver,
    RecordingSleeper, ResilientClient, RetryPolicy, VirtualClock,
};

use super::{answer, received, serve, Script, MS};

/// Opens at half failures once 2 attempts are in the window; the break is 30 s of
/// the virtual clock.
const BREAK: Duration = Duration::from_secs(30);

fn breaker() -> CircuitBreaker {
    CircuitBreaker::builder()
        .failure_ratio(0.5)
        .minimum_throughput(2)
        .break_duration(BREAK)
        .build()
        .expect("valid breaker")
}

/// Hears what happened to each hedge.
#[derive(Clone, Default)]
struct Hedges(Arc<Mutex<Vec<HedgeEventKind>>>);

impl IntentObserver for Hedges {
    fn hedge(&self, event: &HedgeEvent<'_>) {
        self.0.lock().unwrap().push(event.kind());
    }
}

impl Hedges {
    fn heard(&self) -> Vec<HedgeEventKind> {
        self.0.lock().unwrap().clone()
    }
}

/// A hedge after 150 ms, 2 attempts, the breaker as the only gate (no retry
/// budget: the breaker alone decides what goes).
fn hedging(breaker: &CircuitBreaker, clock: &VirtualClock, hedges: &Hedges) -> ResilientClient {
    let policy = RetryPolicy::builder()
        .clock(clock.clone())
        .max_attempts(2)
        .no_budget()
        .gate(breaker.clone())
        .observer(hedges.clone())
        .hedging(Hedging::fixed(150 * MS))
        .build()
        .expect("valid policy");
    ResilientClient::with_policy(policy)
}

/// The same breaker (a clone shares its circuits) without hedging and with instant
/// pauses: the circuit's other traffic, whose requests never race a hedge delay.
fn plain(breaker: &CircuitBreaker, clock: &VirtualClock, attempts: u32) -> ResilientClient {
    let policy = RetryPolicy::builder()
        .clock(clock.clone())
        .sleeper(RecordingSleeper::new())
        .max_attempts(attempts)
        .no_budget()
        .gate(breaker.clone())
        .build()
        .expect("valid policy");
    ResilientClient::with_policy(policy)
}

#[tokio::test]
async fn a_half_open_circuit_never_lets_a_hedge_out() {
    // Two 503s open the circuit; then the probe answers slowly, and anything after
    // it (a hedge, were one let out) would answer at once.
    let script = Script::new(vec![
        answer(503, "", 0),
        answer(503, "", 0),
        answer(200, "probe", 600),
        answer(200, "hedge", 0),
    ]);
    let server = serve(&script).await;
    let (clock, breaker, hedges) = (VirtualClock::new(), breaker(), Hedges::default());
    let opener = plain(&breaker, &clock, 1);
    for _ in 0..2 {
        let error = opener.get(server.uri()).send().await.unwrap_err();
        assert!(error.is_attempts_exhausted(), "{error}");
    }
    assert_eq!(breaker.state(&server.uri()), CircuitState::Open);

    clock.advance(BREAK);
    let started = Instant::now();
    let response = hedging(&breaker, &clock, &hedges)
        .get(server.uri())
        .send()
        .await
        .unwrap();
    let took = started.elapsed();

    assert_eq!(response.text().await.unwrap(), "probe");
    assert!(took >= 600 * MS, "the probe's answer was awaited: {took:?}");
    // The hedge delay passed during the probe, and the breaker refused the hedge.
    assert_eq!(hedges.heard(), [HedgeEventKind::RefusedByGate]);
    assert_eq!(
        received(&server).await.len(),
        3,
        "the two failures and the probe, no hedge"
    );
    assert_eq!(
        breaker.state(&server.uri()),
        CircuitState::Closed,
        "the probe's success closed it"
    );
}

/// A cancelled hedge is neither outcome. Counted as a failure, it would open the
/// circuit at once (1 failure of 2 attempts); counted as a success, the next
/// failure would leave it closed (1 of 3) and let a retry out. Counted as nothing,
/// the next failure is 1 of 2: the circuit opens and refuses the retry.
#[tokio::test]
async fn a_cancelled_hedge_loser_is_neither_a_success_nor_a_failure() {
    let script = Script::new(vec![
        answer(200, "first", 600),
        answer(200, "hedge", 3_000),
        answer(503, "", 0),
        answer(200, "retry", 0),
    ]);
    let server = serve(&script).await;
    let (clock, breaker, hedges) = (VirtualClock::new(), breaker(), Hedges::default());

    let response = hedging(&breaker, &clock, &hedges)
        .get(server.uri())
        .send()
        .await
        .unwrap();
    assert_eq!(response.text().await.unwrap(), "first");
    assert_eq!(
        hedges.heard(),
        [HedgeEventKind::Sent, HedgeEventKind::Cancelled],
        "the hedge went out and lost"
    );
    assert_eq!(received(&server).await.len(), 2);
    assert_eq!(
        breaker.state(&server.uri()),
        CircuitState::Closed,
        "the cancelled hedge was no failure"
    );

    // One failed attempt, then a retry the breaker decides on.
    let error = plain(&breaker, &clock, 2)
        .get(server.uri())
        .send()
        .await
        .unwrap_err();
    assert!(error.is_gate_refused(), "the retry was refused: {error}");
    assert_eq!(error.attempts(), 1, "{error}");
    assert_eq!(
        breaker.state(&server.uri()),
        CircuitState::Open,
        "the cancelled hedge was no success"
    );
    assert_eq!(
        received(&server).await.len(),
        3,
        "the retry never reached the server"
    );
}
