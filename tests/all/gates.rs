//! The gates on their worst day, over real loopback servers: a breaker and a
//! throttle together (both orders) let a recovered service back within their
//! stated bound, a cold throttle refuses nothing after one failure, and a down
//! authority never causes a refusal for a healthy one (same host, other port; or
//! another host).

use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest_resilience::{
    AdaptiveThrottle, CircuitBreaker, CircuitState, Clock, RecordingSleeper, ResilientClient,
    RetryBudget, RetryPolicyBuilder, VirtualClock,
};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::support::{fail_then_ok, policy};

/// Answers 503 while `down`, else 200.
#[derive(Clone, Default)]
struct Switch {
    down: Arc<AtomicBool>,
}

impl Switch {
    fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }
}

impl Respond for Switch {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        ResponseTemplate::new(if self.down.load(Ordering::SeqCst) {
            503
        } else {
            200
        })
    }
}

async fn switched_server() -> (MockServer, Switch) {
    let server = MockServer::builder()
        .disable_request_recording()
        .start()
        .await;
    let switch = Switch::default();
    Mock::given(method("GET"))
        .respond_with(switch.clone())
        .mount(&server)
        .await;
    (server, switch)
}

#[derive(Debug, Clone, Copy)]
enum Order {
    BreakerFirst,
    ThrottleFirst,
}

/// A policy with the breaker and the throttle in `order` (none: the throttle
/// alone), then the default budget; 2 attempts per intent, instant recorded pauses.
fn gated(
    sleeper: &RecordingSleeper,
    order: Option<Order>,
    breaker: &CircuitBreaker,
    throttle: &AdaptiveThrottle,
) -> RetryPolicyBuilder {
    let policy = policy(sleeper)
        .budget(RetryBudget::new_default())
        .max_attempts(2);
    match order {
        Some(Order::BreakerFirst) => policy.gate(breaker.clone()).gate(throttle.clone()),
        Some(Order::ThrottleFirst) => policy.gate(throttle.clone()).gate(breaker.clone()),
        None => policy.gate(throttle.clone()),
    }
}

/// What one intent did, at what time relative to the service's recovery.
struct Outcome {
    at: f64,
    ok: bool,
    refused_first: bool,
}

/// With the defaults and time on a `VirtualClock` (100 intents/s, one at a time):
/// 2 s healthy, an 8 s outage, then healthy. From one break or one throttle window
/// after recovery, whichever is longer (5 s with the defaults), every intent
/// succeeds — in both orders.
#[tokio::test]
async fn breaker_and_throttle_recover_within_the_exact_bound_on_a_virtual_clock() {
    for order in [Order::BreakerFirst, Order::ThrottleFirst] {
        let (server, switch) = switched_server().await;
        let clock = VirtualClock::new();
        let sleeper = RecordingSleeper::advancing(&clock);
        let breaker = CircuitBreaker::default();
        let throttle = AdaptiveThrottle::builder().seed(11).build().unwrap();
        let bound = breaker.break_duration().max(throttle.window());
        let policy = gated(&sleeper, Some(order), &breaker, &throttle)
            .clock(clock.clone())
            .build()
            .unwrap();
        let client = ResilientClient::with_policy(policy);

        let start = clock.now();
        let mut recovered_at = None;
        let mut outcomes = Vec::new();
        loop {
            let elapsed = clock.now() - start;
            if elapsed >= Duration::from_secs(2) && recovered_at.is_none() {
                switch.set_down(elapsed < Duration::from_secs(10));
                if elapsed >= Duration::from_secs(10) {
                    recovered_at = Some(clock.now());
                }
            }
            if let Some(at) = recovered_at {
                if clock.now() - at > bound + Duration::from_secs(2) {
                    break;
                }
            }
            let result = client.get(server.uri()).send().await;
            let at = match recovered_at {
                Some(r) => (clock.now() - r).as_secs_f64(),
                None => -(elapsed.as_secs_f64()),
            };
            outcomes.push(Outcome {
                at,
                ok: result.is_ok(),
                refused_first: result
                    .as_ref()
                    .err()
                    .is_some_and(|e| e.is_first_attempt_refused()),
            });
            clock.advance(Duration::from_millis(10));
        }
        let refused = outcomes.iter().filter(|o| o.refused_first).count();
        assert!(refused > 100, "{order:?}: the outage was refused locally");
        let late: Vec<_> = outcomes
            .iter()
            .filter(|o| o.at >= bound.as_secs_f64())
            .collect();
        assert!(late.len() > 100, "{order:?}: {} intents", late.len());
        let failed = late.iter().filter(|o| !o.ok).count();
        assert_eq!(
            failed,
            0,
            "{order:?}: {failed} of {} intents failed from {bound:?} after recovery",
            late.len()
        );
        assert_eq!(breaker.state(&server.uri()), CircuitState::Closed);
    }
}

/// Real time, open-loop arrivals (one intent every 5 ms, each in its own task):
/// 1 s healthy, a 2 s outage, 4 s healthy; a 1 s break and a 1 s throttle window.
/// Some 1-s window starting within 3 s of recovery (three times the bound) has
/// at least 99 % success — in both orders at once, on two servers.
#[tokio::test]
async fn breaker_and_throttle_recover_over_loopback_in_both_orders() {
    let runs = [Order::BreakerFirst, Order::ThrottleFirst].map(|order| async move {
        let (server, switch) = switched_server().await;
        let sleeper = RecordingSleeper::new();
        let breaker = CircuitBreaker::builder()
            .minimum_throughput(20)
            .sampling_duration(Duration::from_secs(2))
            .break_duration(Duration::from_secs(1))
            .build()
            .unwrap();
        let throttle = AdaptiveThrottle::builder()
            .window(Duration::from_secs(1))
            .seed(5)
            .build()
            .unwrap();
        let client = ResilientClient::with_policy(
            gated(&sleeper, Some(order), &breaker, &throttle)
                .build()
                .unwrap(),
        );
        let start = Instant::now();
        let (outage, recovery, end) = (1.0, 3.0, 7.0);
        let mut tasks = Vec::new();
        let mut ticks = tokio::time::interval(Duration::from_millis(5));
        loop {
            ticks.tick().await;
            let t = start.elapsed().as_secs_f64();
            if t >= end {
                break;
            }
            switch.set_down((outage..recovery).contains(&t));
            let client = client.clone();
            let url = server.uri();
            tasks.push(tokio::spawn(async move {
                let ok = tokio::time::timeout(Duration::from_secs(5), client.get(url).send())
                    .await
                    .is_ok_and(|r| r.is_ok());
                (t - recovery, ok)
            }));
        }
        let mut outcomes = Vec::new();
        for task in tasks {
            outcomes.push(task.await.unwrap());
        }
        (order, outcomes)
    });
    let [a, b] = runs;
    let (a, b) = tokio::join!(a, b);
    for (order, outcomes) in [a, b] {
        let refused_in_outage = outcomes
            .iter()
            .filter(|(at, ok)| (-1.5..0.0).contains(at) && !ok)
            .count();
        assert!(refused_in_outage > 100, "{order:?}: the outage failed");
        let recovered = (0..=30).map(|step| f64::from(step) * 0.1).find(|&from| {
            let window: Vec<_> = outcomes
                .iter()
                .filter(|(at, _)| (from..from + 1.0).contains(at))
                .collect();
            let ok = window.iter().filter(|(_, ok)| *ok).count();
            window.len() >= 100 && ok * 100 >= window.len() * 99
        });
        assert!(
            recovered.is_some(),
            "{order:?}: no 1-s window with 99 % success within 3 s of recovery"
        );
    }
}

/// A cold start: the server fails only its very first request. Neither the
/// throttle alone nor with the breaker (either order) refuses any intent.
#[tokio::test]
async fn a_cold_start_refuses_nothing_after_one_failure() {
    for order in [None, Some(Order::BreakerFirst), Some(Order::ThrottleFirst)] {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .respond_with(fail_then_ok(503, 1))
            .mount(&server)
            .await;
        let sleeper = RecordingSleeper::new();
        let (breaker, throttle) = (CircuitBreaker::default(), AdaptiveThrottle::default());
        let policy = gated(&sleeper, order, &breaker, &throttle)
            .max_attempts(1)
            .build()
            .unwrap();
        let client = ResilientClient::with_policy(policy);
        let mut refused = 0;
        for _ in 0..300 {
            if let Err(error) = client.get(server.uri()).send().await {
                refused += usize::from(error.gate_refusal().is_some());
            }
        }
        assert_eq!(refused, 0, "{order:?}: refused after one failure");
        let served = server.received_requests().await.unwrap().len();
        assert_eq!(served, 300, "{order:?}: every intent was sent");
    }
}

/// A down service and two healthy ones — the same host on another port, and
/// another host (127.0.0.2). With the breaker and the throttle in either order,
/// the down one is refused locally (the refusal names the gate and the
/// authority) and the healthy ones never are.
#[tokio::test]
async fn a_down_authority_never_causes_a_refusal_for_another() {
    for order in [Order::BreakerFirst, Order::ThrottleFirst] {
        let (down, switch) = switched_server().await;
        switch.set_down(true);
        let (other_port, _) = switched_server().await;
        let listener = TcpListener::bind("127.0.0.2:0").expect("bind 127.0.0.2");
        let other_host = MockServer::builder().listener(listener).start().await;
        Mock::given(method("GET"))
            .respond_with(ResponseTemplate::new(200))
            .mount(&other_host)
            .await;
        let sleeper = RecordingSleeper::new();
        let breaker = CircuitBreaker::default();
        let throttle = AdaptiveThrottle::builder().seed(3).build().unwrap();
        let client = ResilientClient::with_policy(
            gated(&sleeper, Some(order), &breaker, &throttle)
                .build()
                .unwrap(),
        );
        let mut refusal = None;
        for _ in 0..400 {
            let error = client.get(down.uri()).send().await.unwrap_err();
            if error.is_first_attempt_refused() {
                assert!(!error.is_retry_refused());
                refusal.get_or_insert(error);
            }
            for healthy in [&other_port, &other_host] {
                let response = client.get(healthy.uri()).send().await;
                assert!(
                    response.is_ok(),
                    "{order:?}: {} refused: {}",
                    healthy.uri(),
                    response.unwrap_err()
                );
            }
        }
        let refusal = refusal.expect("the down service was refused locally");
        let text = refusal.to_string();
        let by = refusal.gate_refusal().unwrap();
        assert_eq!(by.authority(), Some(down.uri().as_str()), "{text}");
        assert!(text.contains(&down.uri()), "{text}");
        assert!(
            text.contains(by.gate()) && text.contains("nothing was sent"),
            "{text}"
        );
        match by.gate() {
            "circuit_breaker" => assert!(text.contains("admits again in"), "{text}"),
            "adaptive_throttle" => assert!(text.contains("% of attempts"), "{text}"),
            other => panic!("{other}"),
        }
        assert_eq!(breaker.state(&down.uri()), CircuitState::Open);
        assert_eq!(breaker.state(&other_port.uri()), CircuitState::Closed);
    }
}
