//! Trace validation of the client crate's real attempt loop: many seeded scenarios
//! (statuses, `Retry-After`, dropped connections, hanging servers, hedging, keys on
//! and off, safe and unsafe methods) run the crate's own `ResilientClient` against
//! a scripted HTTP server on 127.0.0.1; every trace the server records is checked
//! against the properties of `reqwest_resilience_model::client::trace`.
//!
//! Time: the client runs on a `VirtualClock` with a `RecordingSleeper` that moves
//! it forward by every pause, and the server stamps arrivals on the same clock, so
//! a 3 s `Retry-After` costs nothing and is still measured.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::Method;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use reqwest_resilience::time::{Clock, RecordingSleeper, VirtualClock};
use reqwest_resilience::{Backoff, Hedging, ResilientClient, RetryPolicy};
use reqwest_resilience_model::client::trace::{self, Act, Intent, Received, Trace};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Scenarios per run: each is one intent, a few milliseconds of real time.
const SCENARIOS: u64 = 240;
/// How long a hanging server holds an answer back (real time): well past the
/// attempt timeout.
const HANG: Duration = Duration::from_millis(400);
/// The attempt timeout of every scenario (real time: a hang costs this much).
const ATTEMPT_TIMEOUT: Duration = Duration::from_millis(60);

/// One scenario: the intent and what the server does with each request in turn
/// (a 200 once the script is used up).
#[derive(Debug, Clone)]
struct Scenario {
    intent: Intent,
    script: Vec<Act>,
}

fn scenario(seed: u64) -> Scenario {
    let mut rng = StdRng::seed_from_u64(seed);
    let method = [
        Method::GET,
        Method::POST,
        Method::POST,
        Method::PATCH,
        Method::PUT,
        Method::DELETE,
    ][rng.random_range(0..6)]
    .clone();
    let unsafe_method = method == Method::POST || method == Method::PATCH;
    let keyed = unsafe_method && rng.random_bool(0.5);
    let hedged = method == Method::GET && rng.random_bool(0.5);
    let intent = Intent {
        method,
        keyed,
        // Every copy is an attempt: the crate refuses hedging with one.
        max_attempts: rng.random_range(if hedged { 2 } else { 1 }..=4),
        deadline: Duration::from_secs(rng.random_range(2..=8)),
        hedged,
    };
    let script = (0..6)
        .map(|_| match rng.random_range(0..10) {
            0 => Act::Drop,
            1 => Act::Hang,
            2 => Act::Status {
                status: 425,
                retry_after: None,
            },
            3 => Act::Status {
                status: 200,
                retry_after: None,
            },
            n => Act::Status {
                status: [500, 502, 503, 429, 504, 503][usize::from(n as u8 - 4)],
                retry_after: rng.random_bool(0.6).then(|| rng.random_range(0..=3)),
            },
        })
        .collect();
    Scenario { intent, script }
}

/// The server's shared state: its script, what it received, and the clock it
/// stamps arrivals with.
struct Server {
    script: Vec<Act>,
    received: Mutex<Vec<Received>>,
    clock: VirtualClock,
    started: Instant,
}

impl Server {
    fn since_start(&self) -> Duration {
        self.clock.now().saturating_duration_since(self.started)
    }

    async fn serve(self: Arc<Self>, mut stream: TcpStream) {
        let Some(head) = read_request(&mut stream).await else {
            return;
        };
        let header = |name: &str| {
            head.lines()
                .filter_map(|line| line.split_once(':'))
                .find(|(n, _)| n.trim().eq_ignore_ascii_case(name))
                .map(|(_, v)| v.trim().to_owned())
        };
        let (index, act) = {
            let mut received = self.received.lock().unwrap();
            let index = received.len();
            let act = self.script.get(index).copied().unwrap_or(Act::Status {
                status: 200,
                retry_after: None,
            });
            received.push(Received {
                at: self.since_start(),
                request_id: header("x-request-id"),
                key: header("idempotency-key"),
                act,
                answered_at: None,
            });
            (index, act)
        };
        let (status, retry_after) = match act {
            Act::Drop => return,
            Act::Hang => {
                tokio::time::sleep(HANG).await;
                (200, None)
            }
            Act::Status {
                status,
                retry_after,
            } => (status, retry_after),
        };
        let retry_after = retry_after
            .map(|secs| format!("retry-after: {secs}\r\n"))
            .unwrap_or_default();
        let response = format!(
            "HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n{retry_after}\r\n"
        );
        // Stamped before the write: the client cannot have read it earlier.
        self.received.lock().unwrap()[index].answered_at = Some(self.since_start());
        let _ = stream.write_all(response.as_bytes()).await;
        let _ = stream.shutdown().await;
    }
}

/// Reads one request (head and `content-length` body); `None` if the client went.
async fn read_request(stream: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 || buf.len() > 64 * 1024 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let length: usize = head
        .lines()
        .filter_map(|line| line.split_once(':'))
        .find(|(n, _)| n.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Some(head)
}

/// Runs `scenario` through the crate's client and returns the server's trace.
async fn run(seed: u64, scenario: Scenario) -> Trace {
    let clock = VirtualClock::new();
    let sleeper = RecordingSleeper::advancing(&clock);
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let url = format!("http://{}/payments", listener.local_addr().unwrap());
    let server = Arc::new(Server {
        script: scenario.script.clone(),
        received: Mutex::new(Vec::new()),
        clock: clock.clone(),
        started: clock.now(),
    });
    let accept = {
        let server = server.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(server.clone().serve(stream));
            }
        })
    };
    let intent = &scenario.intent;
    let mut policy = RetryPolicy::builder()
        .max_attempts(intent.max_attempts)
        .deadline(intent.deadline)
        .attempt_timeout(ATTEMPT_TIMEOUT)
        .backoff(Backoff::full_jitter(
            Duration::from_millis(50),
            Duration::from_millis(800),
        ))
        .clock(clock.clone())
        .sleeper(sleeper)
        .rng_seed(seed)
        .no_budget();
    if intent.hedged {
        policy = policy.hedging(Hedging::fixed(Duration::from_millis(20)).max_copies(2));
    }
    let client = ResilientClient::with_policy(policy.build().expect("a valid policy"));
    let mut request = client.request(intent.method.clone(), &url).body("x");
    if !intent.keyed {
        request = request.without_idempotency_key();
    }
    // Bounded in real time whatever the loop does.
    let _ = tokio::time::timeout(Duration::from_secs(10), request.send())
        .await
        .expect("the intent ends");
    // A copy cancelled by the race's winner may still be arriving.
    tokio::time::sleep(Duration::from_millis(5)).await;
    accept.abort();
    let received = server.received.lock().unwrap().clone();
    Trace {
        seed,
        intent: scenario.intent,
        received,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_trace_of_the_real_loop_holds_every_property() {
    let mut broken = Vec::new();
    let mut retried = 0;
    let mut after_retry_after = 0;
    for seed in 0..SCENARIOS {
        let t = run(seed, scenario(seed)).await;
        retried += usize::from(t.received.len() > 1);
        after_retry_after += usize::from(
            !t.intent.hedged
                && t.received.len() > 1
                && matches!(
                    t.received[0].act,
                    Act::Status {
                        retry_after: Some(1..),
                        ..
                    }
                ),
        );
        for why in trace::check(&t) {
            broken.push(format!(
                "seed {seed}: {why}\n  {:?}\n  {:?}",
                t.intent, t.received
            ));
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
    // The scenarios reach what the properties are about.
    assert!(
        retried > SCENARIOS as usize / 4,
        "only {retried} intents retried"
    );
    assert!(
        after_retry_after > 5,
        "only {after_retry_after} retries after Retry-After"
    );
}
