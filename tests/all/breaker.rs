//! The circuit breaker over a real loopback server: it opens in an outage, refused
//! intents send nothing and say when the probe will go, a probe closes it once the
//! server is back, and a 409 "in progress" never opens it.
//!
//! The policy's clock is a `VirtualClock` moved by the recording sleeper and by the
//! test itself, so the break passes without waiting.

use std::time::Duration;

use reqwest_resilience::{
    CircuitBreaker, CircuitState, RecordingSleeper, ResilientClient, RetryPolicy, VirtualClock,
};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::log_capture::capture_traces;
use crate::support::{policy, received};

const BREAK: Duration = Duration::from_secs(5);

/// Opens at half failures once 6 attempts are in the window; 5 s break.
fn breaker() -> CircuitBreaker {
    CircuitBreaker::builder()
        .failure_ratio(0.5)
        .minimum_throughput(6)
        .break_duration(BREAK)
        .build()
        .expect("valid breaker")
}

fn client(breaker: &CircuitBreaker, clock: &VirtualClock) -> ResilientClient {
    let sleeper = RecordingSleeper::advancing(clock);
    let policy: RetryPolicy = policy(&sleeper)
        .clock(clock.clone())
        .max_attempts(3)
        .gate(breaker.clone())
        .build()
        .expect("valid policy");
    ResilientClient::with_policy(policy)
}

async fn answering(status: u16) -> MockServer {
    let server = MockServer::start().await;
    mount(&server, status).await;
    server
}

async fn mount(server: &MockServer, status: u16) {
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(status))
        .mount(server)
        .await;
}

#[tokio::test]
async fn an_outage_opens_it_refusals_send_nothing_and_a_probe_closes_it() {
    let (logs, _guard) = capture_traces();
    let server = answering(503).await;
    let clock = VirtualClock::new();
    let breaker = breaker();
    let client = client(&breaker, &clock);

    // Two intents of 3 attempts each: 6 failed attempts open the circuit.
    for _ in 0..2 {
        let error = client.get(server.uri()).send().await.unwrap_err();
        assert!(error.is_attempts_exhausted(), "{error}");
    }
    assert_eq!(received(&server).await.len(), 6);
    assert_eq!(breaker.state(&server.uri()), CircuitState::Open);

    // Refused before anything is sent, with the time until the probe.
    for _ in 0..5 {
        let error = client.get(server.uri()).send().await.unwrap_err();
        assert!(error.is_gate_refused(), "{error}");
        assert!(!error.is_outcome_unknown(), "nothing was sent: {error}");
        assert_eq!(error.attempts(), 0);
        let refusal = error.gate_refusal().expect("a gate refused");
        assert_eq!(refusal.gate(), "circuit_breaker");
        let until_probe = refusal.retry_after().expect("time until the probe");
        assert!(
            until_probe <= BREAK && until_probe > BREAK - Duration::from_secs(1),
            "{until_probe:?}"
        );
    }
    assert_eq!(
        received(&server).await.len(),
        6,
        "refused intents sent nothing"
    );

    // Later in the break, the time until the probe is shorter.
    clock.advance(Duration::from_secs(3));
    let error = client.get(server.uri()).send().await.unwrap_err();
    let until_probe = error.gate_refusal().unwrap().retry_after().unwrap();
    assert!(until_probe <= Duration::from_secs(2), "{until_probe:?}");

    // The server recovers; once the break is over one probe goes and closes it.
    server.reset().await;
    mount(&server, 200).await;
    clock.advance(Duration::from_secs(2));
    let response = client.get(server.uri()).send().await.expect("the probe");
    assert_eq!(response.status(), 200);
    assert_eq!(breaker.state(&server.uri()), CircuitState::Closed);
    for _ in 0..3 {
        let response = client.get(server.uri()).send().await.expect("closed");
        assert_eq!(response.status(), 200);
    }
    assert_eq!(
        received(&server).await.len(),
        4,
        "the probe, then 3 intents"
    );

    let text = logs.text();
    for change in [
        "from=\"closed\" to=\"open\"",
        "from=\"open\" to=\"half_open\"",
        "from=\"half_open\" to=\"closed\"",
    ] {
        let line = text
            .lines()
            .find(|line| line.contains(change))
            .unwrap_or_else(|| panic!("no {change} event in:\n{text}"));
        assert!(line.contains("reqwest_resilience::breaker"), "{line}");
        assert!(line.contains("gate=\"circuit_breaker\""), "{line}");
        assert!(
            line.contains(&format!("authority=\"{}\"", server.uri())),
            "{line}"
        );
    }
}

#[tokio::test]
async fn a_failed_probe_keeps_it_open_for_another_break() {
    let server = answering(503).await;
    let clock = VirtualClock::new();
    let breaker = breaker();
    let client = client(&breaker, &clock);
    for _ in 0..2 {
        let _ = client.get(server.uri()).send().await;
    }
    assert_eq!(breaker.state(&server.uri()), CircuitState::Open);
    clock.advance(BREAK);
    // The probe's intent: one attempt, which fails and opens the circuit again;
    // its retry is then refused by the breaker.
    let error = client.get(server.uri()).send().await.unwrap_err();
    assert!(error.is_gate_refused(), "{error}");
    assert_eq!(error.attempts(), 1);
    assert_eq!(error.last_status().unwrap(), 503);
    assert_eq!(received(&server).await.len(), 7);
    assert_eq!(breaker.state(&server.uri()), CircuitState::Open);
}

#[tokio::test]
async fn conflicts_never_open_it() {
    let server = answering(404).await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(409))
        .mount(&server)
        .await;
    let clock = VirtualClock::new();
    let breaker = breaker();
    let client = client(&breaker, &clock);
    // 5 keyed intents, each waiting the 409 "in progress" out until its deadline
    // (409s do not use up attempts): dozens of attempts, none of them a failure.
    let mut attempts = 0;
    for _ in 0..5 {
        let error = client
            .post(server.uri())
            .body("{}")
            .send()
            .await
            .unwrap_err();
        assert_eq!(error.last_status().unwrap(), 409, "{error}");
        assert!(!error.is_gate_refused(), "{error}");
        assert!(error.attempts() > 3, "{error}");
        attempts += error.attempts() as usize;
    }
    assert_eq!(received(&server).await.len(), attempts);
    assert_eq!(breaker.state(&server.uri()), CircuitState::Closed);
    // And 404s neither.
    for _ in 0..8 {
        let response = client.get(server.uri()).send().await.expect("a 404");
        assert_eq!(response.status(), 404);
    }
    assert_eq!(received(&server).await.len(), attempts + 8);
    assert_eq!(breaker.state(&server.uri()), CircuitState::Closed);
}

#[tokio::test]
async fn connection_refused_counts_as_a_failure() {
    // A port that was just free: nothing listens there.
    let address = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port");
    let clock = VirtualClock::new();
    let breaker = breaker();
    let client = client(&breaker, &clock);
    for _ in 0..2 {
        let error = client
            .get(format!("http://{address}/"))
            .send()
            .await
            .unwrap_err();
        assert!(error.is_attempts_exhausted(), "{error}");
    }
    assert_eq!(
        breaker.state(&format!("http://{address}")),
        CircuitState::Open
    );
    let error = client
        .get(format!("http://{address}/"))
        .send()
        .await
        .unwrap_err();
    assert!(error.is_gate_refused(), "{error}");
}

#[tokio::test]
async fn isolate_refuses_everything_and_reset_closes_it() {
    let server = answering(200).await;
    let clock = VirtualClock::new();
    let breaker = breaker();
    let client = client(&breaker, &clock);
    breaker.isolate();
    let error = client.get(server.uri()).send().await.unwrap_err();
    assert!(error.is_gate_refused(), "{error}");
    assert_eq!(error.gate_refusal().unwrap().retry_after(), None);
    assert!(received(&server).await.is_empty());
    breaker.reset();
    assert_eq!(client.get(server.uri()).send().await.unwrap().status(), 200);
}
