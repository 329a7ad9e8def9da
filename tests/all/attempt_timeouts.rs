//! Each attempt's timeout is `min(the request's own timeout or the policy's attempt
//! timeout, the time left)`, whatever timeout the caller, the client or a middleware
//! set — on every transport and every body path, on the first attempt and on a retry.
//!
//! One table, over a real loopback server that hangs (answers after 10 s). Every row
//! runs at once (the rows are independent), so the table costs about one deadline.
//! Each row asserts when each of its attempts was cut off: never earlier than the
//! rule says (reqwest's timer does not fire early), and at most `TOLERANCE` later.

use std::time::{Duration, Instant};

use futures_util::future::join_all;
use reqwest_resilience::{
    AttemptOutcome, Error, RecordingSleeper, ResilientClient, RetryPolicy, TransportFailure,
};
use wiremock::matchers::path;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{Scripted, MS};

/// The policy's deadline: its implied attempt timeout is half of it.
const DEADLINE: Duration = Duration::from_millis(2000);
const IMPLIED: Duration = Duration::from_millis(1000);
/// How late a timer may fire on a loaded 2-core machine.
const TOLERANCE: Duration = Duration::from_millis(400);
/// The bookkeeping between two attempts (classification, an instant pause).
const SLACK: Duration = Duration::from_millis(50);
/// The server's answer comes long after every timeout here.
const HANG: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Copy, PartialEq)]
enum Transport {
    /// `ResilientClient::with_policy` (the client carries the attempt timeout).
    Builder,
    /// `ResilientClient::from_parts` with a client whose own timeout is 30 s.
    Parts,
    /// `ResilienceMiddleware` in a reqwest-middleware chain.
    #[cfg(feature = "middleware")]
    Middleware,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Body {
    None,
    Bytes,
    Stream,
    Factory,
    /// Bytes, under a single-attempt policy: the request is moved, not copied.
    SendOnce,
}

#[derive(Debug, Clone, Copy)]
struct Row {
    transport: Transport,
    body: Body,
    /// The caller's `.timeout()`.
    own: Option<Duration>,
    /// The caller's `.deadline()` (else the policy's).
    deadline: Option<Duration>,
    /// A quick 503 first, so the attempt measured is a retry.
    retry: bool,
}

impl Row {
    fn deadline(&self) -> Duration {
        self.deadline.unwrap_or(DEADLINE)
    }

    fn max_attempts(&self) -> u32 {
        if self.body == Body::SendOnce {
            1
        } else {
            3
        }
    }

    /// What the rule says the measured attempt's timeout is, before the time left.
    fn attempt_timeout(&self) -> Duration {
        self.own.unwrap_or(if self.max_attempts() == 1 {
            self.deadline().min(Duration::from_secs(10))
        } else {
            (self.deadline() / 2).min(Duration::from_secs(10))
        })
    }
}

fn rows() -> Vec<Row> {
    let owns = [
        None,
        Some(400 * MS),  // shorter than the attempt timeout
        Some(IMPLIED),   // equal to it (and to a client's built-in timeout)
        Some(1500 * MS), // longer than it, shorter than the deadline
        Some(5000 * MS), // longer than the deadline
    ];
    let transports = [
        Transport::Builder,
        Transport::Parts,
        #[cfg(feature = "middleware")]
        Transport::Middleware,
    ];
    let mut rows = Vec::new();
    for transport in transports {
        for body in [
            Body::None,
            Body::Bytes,
            Body::Stream,
            Body::Factory,
            Body::SendOnce,
        ] {
            #[cfg(feature = "middleware")]
            if transport == Transport::Middleware && body == Body::Factory {
                continue; // no body_fn through a middleware chain
            }
            for own in owns {
                for retry in [false, true] {
                    if retry && matches!(body, Body::Stream | Body::SendOnce) {
                        continue; // sent once: there is no retry to measure
                    }
                    rows.push(Row {
                        transport,
                        body,
                        own,
                        deadline: None,
                        retry,
                    });
                }
            }
            // A per-request deadline equal to the client's built-in timeout, beside
            // a longer own timeout (the case that once escaped the deadline).
            rows.push(Row {
                transport,
                body,
                own: Some(5000 * MS),
                deadline: Some(IMPLIED),
                retry: false,
            });
        }
    }
    rows
}

/// The clients under test, built before any timing starts (building one loads the
/// TLS roots: slow enough to delay the timers of rows already running).
struct Clients {
    builder: [ResilientClient; 2],
    parts: [ResilientClient; 2],
    #[cfg(feature = "middleware")]
    middleware: [reqwest_middleware::ClientWithMiddleware; 2],
}

impl Clients {
    fn new() -> Self {
        let policy = |attempts: u32| {
            RetryPolicy::builder()
                .deadline(DEADLINE)
                .max_attempts(attempts)
                .sleeper(RecordingSleeper::new())
                .no_budget()
                .build()
                .unwrap()
        };
        let parts = |policy: RetryPolicy| {
            let http = ResilientClient::reqwest_builder_for(&policy)
                .timeout(Duration::from_secs(30))
                .build()
                .unwrap();
            ResilientClient::from_parts(http, policy)
        };
        #[cfg(feature = "middleware")]
        let middleware = |policy: RetryPolicy| {
            reqwest_middleware::ClientBuilder::new(
                ResilientClient::reqwest_builder().build().unwrap(),
            )
            .with(reqwest_resilience::ResilienceMiddleware::new(policy))
            .build()
        };
        Self {
            builder: [
                ResilientClient::with_policy(policy(3)),
                ResilientClient::with_policy(policy(1)),
            ],
            parts: [parts(policy(3)), parts(policy(1))],
            #[cfg(feature = "middleware")]
            middleware: [middleware(policy(3)), middleware(policy(1))],
        }
    }
}

/// Sends the row's intent to `url`; returns the result and the wall time it took.
async fn run(
    clients: &Clients,
    row: Row,
    url: String,
) -> (Result<reqwest::Response, Error>, Duration) {
    let single = usize::from(row.max_attempts() == 1);
    let body = || reqwest::Body::from("{\"amount\":500}");
    let stream = || {
        let chunks: Vec<Result<&'static str, std::io::Error>> =
            vec![Ok("{\"amount\":"), Ok("500}")];
        reqwest::Body::wrap_stream(futures_util::stream::iter(chunks))
    };
    let started = Instant::now();
    let result = match row.transport {
        Transport::Builder | Transport::Parts => {
            let client = if row.transport == Transport::Builder {
                &clients.builder[single]
            } else {
                &clients.parts[single]
            };
            let mut request = match row.body {
                Body::None => client.get(&url),
                Body::Bytes | Body::SendOnce => client.post(&url).body(body()),
                Body::Stream => client.post(&url).body(stream()),
                Body::Factory => client.post(&url).body_fn(body),
            };
            if let Some(own) = row.own {
                request = request.timeout(own);
            }
            if let Some(deadline) = row.deadline {
                request = request.deadline(deadline);
            }
            request.send().await
        }
        #[cfg(feature = "middleware")]
        Transport::Middleware => {
            let chain = &clients.middleware[single];
            let mut request = match row.body {
                Body::None => chain.get(&url),
                Body::Bytes | Body::SendOnce => chain.post(&url).body(body()),
                Body::Stream => chain.post(&url).body(stream()),
                Body::Factory => unreachable!("skipped in rows()"),
            };
            if let Some(own) = row.own {
                request = request.timeout(own);
            }
            let mut options = reqwest_resilience::IntentOptions::new();
            if let Some(deadline) = row.deadline {
                options = options.deadline(deadline);
            }
            request
                .with_extension(options)
                .send()
                .await
                .map_err(|error| match error {
                    reqwest_middleware::Error::Middleware(error) => {
                        error.downcast::<Error>().expect("the crate's error")
                    }
                    other => panic!("not the crate's error: {other}"),
                })
        }
    };
    (result, started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_attempt_is_cut_off_at_its_timeout_or_the_deadline_whichever_comes_first() {
    let server = MockServer::start().await;
    let clients = Clients::new();
    let rows = rows();
    for (number, row) in rows.iter().enumerate() {
        let hang = ResponseTemplate::new(200).set_delay(HANG);
        let script = if row.retry {
            vec![ResponseTemplate::new(503), hang]
        } else {
            vec![hang]
        };
        Mock::given(path(format!("/row/{number}")))
            .respond_with(Scripted::new(script))
            .mount(&server)
            .await;
    }
    let results = join_all(
        rows.iter()
            .enumerate()
            .map(|(number, row)| run(&clients, *row, format!("{}/row/{number}", server.uri()))),
    )
    .await;

    let mut failures = Vec::new();
    for (row, (result, elapsed)) in rows.iter().zip(results) {
        let error = match result {
            Ok(response) => {
                failures.push(format!(
                    "{row:?}: got {} after {elapsed:?}",
                    response.status()
                ));
                continue;
            }
            Err(error) => error,
        };
        let log = error.attempt_log().attempts();
        if log.len() < if row.retry { 2 } else { 1 } {
            failures.push(format!("{row:?}: {} attempts ({error})", log.len()));
        }
        // Every attempt that hung was cut off at min(its timeout, the time left when
        // it started); the pauses are instant, so the time left is the deadline less
        // the attempts before it (up to a little bookkeeping: SLACK).
        let mut before = Duration::ZERO;
        for attempt in log {
            let duration = attempt.duration();
            let expected = row
                .attempt_timeout()
                .min(row.deadline().saturating_sub(before));
            let timed_out = attempt.outcome() == &AttemptOutcome::Failed(TransportFailure::Timeout);
            if timed_out && (duration + SLACK < expected || duration > expected + TOLERANCE) {
                failures.push(format!(
                    "{row:?}: attempt {} cut off after {duration:?}, expected {expected:?}: {error}",
                    attempt.number()
                ));
            }
            before += duration;
        }
        if elapsed > row.deadline() + TOLERANCE {
            failures.push(format!("{row:?}: outlived the deadline ({elapsed:?})"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
}

/// The report that opened the deadline issue, as a user wrote it.
#[tokio::test]
async fn a_keyed_post_with_a_longer_timeout_gives_up_at_a_short_deadline() {
    let server = MockServer::start().await;
    Mock::given(path("/payments"))
        .respond_with(ResponseTemplate::new(200).set_delay(900 * MS))
        .mount(&server)
        .await;
    let client =
        ResilientClient::with_policy(RetryPolicy::builder().deadline(200 * MS).build().unwrap());
    let started = Instant::now();
    let error = client
        .post(format!("{}/payments", server.uri()))
        .idempotency_key("order-1842")
        .timeout(Duration::from_secs(5))
        .body("{}")
        .send()
        .await
        .unwrap_err();
    let elapsed = started.elapsed();
    assert!(error.is_deadline_exceeded(), "{error}");
    assert!(elapsed >= 200 * MS, "{elapsed:?}");
    assert!(elapsed < 200 * MS + TOLERANCE, "{elapsed:?}");
}

/// A short deadline against a server that hangs still leaves room for a retry.
#[tokio::test]
async fn a_short_deadline_against_a_hang_still_retries() {
    let server = MockServer::start().await;
    Mock::given(path("/hang"))
        .respond_with(ResponseTemplate::new(200).set_delay(HANG))
        .mount(&server)
        .await;
    let client = ResilientClient::with_policy(
        RetryPolicy::builder()
            .max_attempts(4)
            .deadline(Duration::from_secs(2))
            .build()
            .unwrap(),
    );
    let started = Instant::now();
    let error = client
        .get(format!("{}/hang", server.uri()))
        .send()
        .await
        .unwrap_err();
    let elapsed = started.elapsed();
    assert!(error.is_deadline_exceeded(), "{error}");
    assert!(error.attempts() >= 2, "{error}");
    // The first attempt had half the deadline, so the second had the rest.
    let first = error.attempt_log().attempts()[0].duration();
    assert!(
        first >= IMPLIED && first <= IMPLIED + TOLERANCE,
        "{first:?}"
    );
    assert!(elapsed >= Duration::from_secs(2) - 10 * MS, "{elapsed:?}");
    assert!(elapsed <= Duration::from_secs(2) + TOLERANCE, "{elapsed:?}");
    let received = server.received_requests().await.unwrap();
    assert_eq!(received.len() as u32, error.attempts());
}

/// ...and a slow but healthy server within it still succeeds at the first attempt.
#[tokio::test]
async fn a_short_deadline_lets_a_slow_but_healthy_server_answer() {
    let server = MockServer::start().await;
    Mock::given(path("/slow"))
        .respond_with(ResponseTemplate::new(200).set_delay(800 * MS))
        .expect(1)
        .mount(&server)
        .await;
    let client = ResilientClient::with_policy(
        RetryPolicy::builder()
            .max_attempts(4)
            .deadline(Duration::from_secs(2))
            .build()
            .unwrap(),
    );
    let response = client
        .get(format!("{}/slow", server.uri()))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}
