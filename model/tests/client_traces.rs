//! Trace validation of the client crate's real attempt loop: many seeded scenarios
//! (statuses, `Retry-After`, dropped connections, hanging servers, hedging, keys on
//! and off, safe and unsafe methods) run the crate's own `ResilientClient` against
//! a scripted HTTP server on 127.0.0.1; every trace the server records is checked
//! against the properties of `reqwest_resilience_model::client::trace`.
//!
//! Time: the client runs on a `VirtualClock` with a `RecordingSleeper` that moves
//! it forward by every pause, and the server stamps arrivals on the same clock, so
//! a 3 s `Retry-After` costs nothing and is still measured.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::Method;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use reqwest_resilience::reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest_resilience::time::{Clock, RecordingSleeper, Sleep, Sleeper, VirtualClock};
use reqwest_resilience::{
    AttemptOutcome, Backoff, BoxError, Gate, GateRefusal, GateScope, Hedging, IntentEnd,
    IntentStart, ResilientClient, ResponseExt, RetryBudget, RetryPolicy, WriteAhead,
    WriteAheadFuture,
};
use reqwest_resilience_model::client::trace::{self, Act, Intent, Received, Told, Trace};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Scenarios per run: each is one intent, a few milliseconds of real time.
const SCENARIOS: u64 = 240;
/// Held races (`Intent::held_race`) after them: rare among the scenarios above,
/// and the only traces in which a hedged race's `Retry-After` is judged.
const HELD_RACES: u64 = 24;
/// How long a hanging server holds an answer back (real time): well past the
/// attempt timeout.
const HANG: Duration = Duration::from_millis(400);
/// The attempt timeout of every scenario (real time: a hang costs this much).
const ATTEMPT_TIMEOUT: Duration = Duration::from_millis(60);
/// The longest the held race's server and sleeper wait for the other side (real
/// time), and that race's attempt timeout.
const HELD_RACE_CAP: Duration = Duration::from_millis(500);

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
    let forced_race = seed >= SCENARIOS;
    let method = if forced_race { Method::GET } else { method };
    let unsafe_method = method == Method::POST || method == Method::PATCH;
    let keyed = unsafe_method && rng.random_bool(0.5);
    let hedged = forced_race || (method == Method::GET && rng.random_bool(0.5));
    let held_race = forced_race || (hedged && rng.random_bool(0.5));
    // The world in front of the server, each in about a quarter of the scenarios:
    // refused connections, and (for the plain loop) a write-ahead (keyed: a
    // journal), a gate standing for a breaker, a retry budget.
    let refuse_connects = match rng.random_range(0..8) {
        0 => 1,
        1 => 2,
        _ => 0,
    };
    // The held race's order needs both copies to reach the server.
    let refuse_connects = if held_race { 0 } else { refuse_connects };
    let write_ahead = (keyed && rng.random_bool(0.3)).then(|| rng.random_bool(0.3));
    let gate_refuses = (!hedged && rng.random_bool(0.2)).then(|| rng.random_range(1..=3));
    let budget_reserve = (!hedged && rng.random_bool(0.25)).then(|| rng.random_range(0..=1));
    // The held race's Retry-After, and its deadline: room for the hold and a copy
    // after it, or too little for that and just enough for a hedge (the first
    // copy's end then waits for the hedge, and a late hedge timer fires).
    let hold_secs = rng.random_range(1..=2);
    let held_deadline = match rng.random_bool(0.5) {
        true => Duration::from_secs(6),
        false => Duration::from_secs(hold_secs) + Duration::from_millis(40),
    };
    let intent = Intent {
        method,
        keyed,
        // Every copy is an attempt: the crate refuses hedging with one. The held
        // race needs a third copy, and time for it after a 2 s Retry-After.
        max_attempts: rng.random_range(
            if held_race {
                3
            } else if hedged {
                2
            } else {
                1
            }..=4,
        ),
        deadline: match held_race {
            true => held_deadline,
            false => Duration::from_secs(rng.random_range(2..=8)),
        },
        hedged,
        held_race,
        refuse_connects,
        write_ahead,
        gate_refuses,
        budget_reserve,
    };
    let script: Vec<Act> = (0..6)
        .map(|_| match rng.random_range(0..13) {
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
            // A keyed request still in progress at the server (a 409 without a key
            // is a final answer); 400 and 408 round the statuses off.
            10 | 11 => Act::Status {
                status: 409,
                retry_after: rng.random_bool(0.5).then(|| rng.random_range(1..=2)),
            },
            12 => Act::Status {
                status: [400, 408][rng.random_range(0..2)],
                retry_after: None,
            },
            n => Act::Status {
                status: [500, 502, 503, 429, 504, 503][usize::from(n as u8 - 4)],
                retry_after: rng.random_bool(0.6).then(|| rng.random_range(0..=3)),
            },
        })
        .collect();
    let script = match held_race {
        // With refused connections, no hang: those scenarios get a long attempt
        // timeout (see `run`), so that a slow runtime never takes a refused connect
        // for a timed-out one.
        false if refuse_connects > 0 => script
            .into_iter()
            .map(|act| if act == Act::Hang { Act::Drop } else { act })
            .collect::<Vec<_>>(),
        false => script,
        true => vec![
            Act::Status {
                status: 503,
                retry_after: Some(hold_secs),
            },
            Act::Drop,
        ],
    };
    Scenario { intent, script }
}

/// The server's shared state: its script, what it received, and the clock it
/// stamps arrivals with.
struct Server {
    script: Vec<Act>,
    /// The scenario is a held race (`Intent::held_race`).
    held_race: bool,
    /// Pauses of a second or more the client started (the held race's sleeper).
    holds_started: AtomicU32,
    /// Requests the server dropped.
    dropped: AtomicU32,
    /// Hedge delays the held race's sleeper let pass late.
    late_hedge_timers: AtomicU32,
    received: Mutex<Vec<Received>>,
    clock: VirtualClock,
    started: Instant,
}

impl Server {
    /// Waits (in real time, at most `HELD_RACE_CAP`) until `done`.
    async fn until(&self, done: impl Fn() -> bool) {
        let started = Instant::now();
        while !done() && started.elapsed() < HELD_RACE_CAP {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

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
        if self.held_race {
            // The first copy's answer waits for the hedge; the hedge's failure for
            // the client to start waiting out that answer's Retry-After.
            match index {
                0 => {
                    self.until(|| self.received.lock().unwrap().len() >= 2)
                        .await
                }
                1 => {
                    let waiting = || {
                        self.holds_started.load(Ordering::SeqCst) > 0
                            || self.late_hedge_timers.load(Ordering::SeqCst) > 0
                    };
                    self.until(waiting).await;
                }
                _ => {}
            }
        }
        let (status, retry_after) = match act {
            Act::Drop => {
                self.dropped.fetch_add(1, Ordering::SeqCst);
                return;
            }
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

/// The held race's sleeper: a pause of a second or more (a `Retry-After` hold)
/// tells the server it started, lasts until the server dropped the hedge (and the
/// client had a moment to read that), and only then moves the clock on. The first
/// hedge delay passes at once; a later one only once the first copy's answer is
/// out (a hedge timer that fires late, on a loaded runtime). So a copy sent during
/// the hold is stamped before the hold's end.
struct HoldSleeper {
    clock: VirtualClock,
    server: Arc<Server>,
    hedge_delays: AtomicU32,
}

impl Sleeper for HoldSleeper {
    fn sleep(&self, duration: Duration) -> Sleep {
        let clock = self.clock.clone();
        if duration < Duration::from_secs(1) {
            if self.hedge_delays.fetch_add(1, Ordering::SeqCst) == 0 {
                clock.advance(duration);
                return Box::pin(async {});
            }
            let server = self.server.clone();
            return Box::pin(async move {
                let answered = || {
                    let received = server.received.lock().unwrap();
                    received.first().is_some_and(|r| r.answered_at.is_some())
                };
                server.until(answered).await;
                tokio::time::sleep(Duration::from_millis(20)).await;
                clock.advance(duration);
                server.late_hedge_timers.fetch_add(1, Ordering::SeqCst);
            });
        }
        self.server.holds_started.fetch_add(1, Ordering::SeqCst);
        let server = self.server.clone();
        Box::pin(async move {
            server
                .until(|| server.dropped.load(Ordering::SeqCst) > 0)
                .await;
            tokio::time::sleep(Duration::from_millis(20)).await;
            clock.advance(duration);
        })
    }
}

/// Resolves the scenario's host name: to a closed port for the first
/// `refuse` lookups (each connection attempt makes one: the server answers
/// `connection: close`), then to the server. Counts the refused ones.
struct Resolver {
    refuse: u32,
    refused: Arc<AtomicU32>,
    opened: Arc<AtomicU32>,
    closed: SocketAddr,
    open: SocketAddr,
}

impl Resolve for Resolver {
    fn resolve(&self, _: Name) -> Resolving {
        let refused = self
            .refused
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < self.refuse).then_some(n + 1)
            })
            .is_ok();
        let addr = match refused {
            true => self.closed,
            false => {
                self.opened.fetch_add(1, Ordering::SeqCst);
                self.open
            }
        };
        let addrs: Addrs = Box::new(std::iter::once(addr));
        Box::pin(async move { Ok::<_, BoxError>(addrs) })
    }
}

/// A write-ahead that writes nothing down: it records when it was asked (the
/// attempts made by then) and how often it heard an end, and refuses if told to.
struct Recorder {
    refuses: bool,
    server: Arc<Server>,
    refused: Arc<AtomicU32>,
    asked: Mutex<Vec<u32>>,
    ends: AtomicU32,
}

impl WriteAhead for Recorder {
    fn before_first_byte<'a>(
        &'a self,
        _: &'a IntentStart<'a>,
    ) -> WriteAheadFuture<'a, Result<(), BoxError>> {
        let made = self.refused.load(Ordering::SeqCst)
            + u32::try_from(self.server.received.lock().unwrap().len()).unwrap();
        self.asked.lock().unwrap().push(made);
        let refuses = self.refuses;
        Box::pin(async move {
            match refuses {
                true => Err("the journal refuses this intent".into()),
                false => Ok(()),
            }
        })
    }

    fn after_end<'a>(&'a self, _: &'a IntentEnd<'a>) -> WriteAheadFuture<'a, Result<(), BoxError>> {
        self.ends.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Ok(()) })
    }
}

/// A gate that refuses the `refuses`-th attempt it is asked about (a breaker that
/// opened, as the loop sees it).
struct Refuses {
    refuses: u32,
    asked: AtomicU32,
}

impl Gate for Refuses {
    fn name(&self) -> &str {
        "scripted_breaker"
    }

    fn admit(&self, _: &GateScope<'_>) -> Result<(), GateRefusal> {
        match self.asked.fetch_add(1, Ordering::SeqCst) + 1 == self.refuses {
            true => Err(GateRefusal::new("scripted_breaker")),
            false => Ok(()),
        }
    }
}

/// Runs `scenario` through the crate's client and returns the server's trace.
async fn run(seed: u64, scenario: Scenario) -> Trace {
    let clock = VirtualClock::new();

    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let server_addr = listener.local_addr().unwrap();
    // A port bound and let go: nothing listens there, so a connection is refused.
    let closed = {
        let let_go = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let_go.local_addr().unwrap()
    };
    let url = "http://trace.test/payments";
    let server = Arc::new(Server {
        script: scenario.script.clone(),
        held_race: scenario.intent.held_race,
        holds_started: AtomicU32::new(0),
        dropped: AtomicU32::new(0),
        late_hedge_timers: AtomicU32::new(0),
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
        .attempt_timeout(match intent.held_race || intent.refuse_connects > 0 {
            // Nothing hangs there: a long attempt timeout keeps a slow runtime
            // from ending the first copy before its answer is read, or a
            // refused connect before it is seen refused.
            true => HELD_RACE_CAP,
            false => ATTEMPT_TIMEOUT,
        })
        .backoff(Backoff::full_jitter(
            Duration::from_millis(50),
            Duration::from_millis(800),
        ))
        .clock(clock.clone())
        .rng_seed(seed)
        .no_budget();
    policy = match intent.held_race {
        true => policy.sleeper(HoldSleeper {
            clock: clock.clone(),
            server: server.clone(),
            hedge_delays: AtomicU32::new(0),
        }),
        false => policy.sleeper(RecordingSleeper::advancing(&clock)),
    };
    if intent.hedged {
        policy = policy.hedging(Hedging::fixed(Duration::from_millis(20)).max_copies(2));
    }
    if let Some(reserve) = intent.budget_reserve {
        let budget = RetryBudget::builder().ratio(0.1).reserve(reserve).build();
        policy = policy.budget(budget.expect("a valid budget"));
    }
    if let Some(refuses) = intent.gate_refuses {
        policy = policy.gate(Refuses {
            refuses,
            asked: AtomicU32::new(0),
        });
    }
    let refused = Arc::new(AtomicU32::new(0));
    let recorder = Arc::new(Recorder {
        refuses: intent.write_ahead == Some(true),
        server: server.clone(),
        refused: refused.clone(),
        asked: Mutex::new(Vec::new()),
        ends: AtomicU32::new(0),
    });
    if intent.write_ahead.is_some() {
        policy = policy.write_ahead(SharedRecorder(recorder.clone()));
    }
    let policy = policy.build().expect("a valid policy");
    let opened = Arc::new(AtomicU32::new(0));
    let resolver = Resolver {
        refuse: intent.refuse_connects,
        refused: refused.clone(),
        opened: opened.clone(),
        closed,
        open: server_addr,
    };
    let builder = ResilientClient::reqwest_builder_for(&policy).dns_resolver(Arc::new(resolver));
    let client = ResilientClient::from_builder(builder, policy).expect("a client");
    let mut request = client.request(intent.method.clone(), url).body("x");
    if !intent.keyed {
        request = request.without_idempotency_key();
    }
    // Bounded in real time whatever the loop does.
    let result = tokio::time::timeout(Duration::from_secs(10), request.send())
        .await
        .expect("the intent ends");
    let told = match &result {
        Ok(response) => Told::Response(response.status().as_u16()),
        Err(e) => Told::Error {
            outcome_unknown: e.is_outcome_unknown(),
            write_ahead_unconfirmed: e.is_write_ahead_unconfirmed(),
        },
    };
    let log = match &result {
        Ok(response) => response.attempt_log(),
        Err(e) => Some(e.attempt_log()),
    };
    let statuses_read = log.map_or_else(Vec::new, |log| {
        log.attempts()
            .iter()
            .filter(|a| matches!(a.outcome(), AttemptOutcome::Status(_)))
            .map(|a| a.request_id().to_string())
            .collect()
    });
    drop(result);
    // A copy cancelled by the race's winner may still be arriving.
    tokio::time::sleep(Duration::from_millis(5)).await;
    accept.abort();
    let received = server.received.lock().unwrap().clone();
    let write_ahead_asked = recorder.asked.lock().unwrap().clone();
    Trace {
        seed,
        intent: scenario.intent,
        received,
        refused: refused.load(Ordering::SeqCst),
        opened: opened.load(Ordering::SeqCst),
        write_ahead_asked,
        write_ahead_ends: recorder.ends.load(Ordering::SeqCst),
        told,
        statuses_read,
    }
}

/// The recorder, shared with the test that reads it after the intent.
struct SharedRecorder(Arc<Recorder>);

impl WriteAhead for SharedRecorder {
    fn before_first_byte<'a>(
        &'a self,
        intent: &'a IntentStart<'a>,
    ) -> WriteAheadFuture<'a, Result<(), BoxError>> {
        self.0.before_first_byte(intent)
    }

    fn after_end<'a>(
        &'a self,
        end: &'a IntentEnd<'a>,
    ) -> WriteAheadFuture<'a, Result<(), BoxError>> {
        self.0.after_end(end)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_trace_of_the_real_loop_holds_every_property() {
    let mut broken = Vec::new();
    let mut retried = 0;
    let mut after_retry_after = 0;
    let mut reached = Reached::default();
    for seed in 0..SCENARIOS + HELD_RACES {
        let t = run(seed, scenario(seed)).await;
        reached.count(&t);
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
                )
                // Read by the client: only then does its Retry-After bind.
                && t.received[0]
                    .request_id
                    .as_ref()
                    .is_some_and(|id| t.statuses_read.contains(id)),
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
    println!("{reached:?}");
    reached.assert_enough();
}

/// How often the scenarios reach what the new properties are about.
#[derive(Debug, Default)]
struct Reached {
    /// An unkeyed POST or PATCH sent after refused connections.
    unkeyed_unsafe_after_refusal: usize,
    /// A keyed 409 followed by another attempt.
    keyed_409_retried: usize,
    /// A gate refused an attempt that would otherwise have gone.
    gate_refused: usize,
    /// A budget refused a retry.
    budget_refused: usize,
    /// A write-ahead ran and let the intent go; one refused it.
    write_ahead_ran: usize,
    write_ahead_refused: usize,
    /// A held race in which a third copy went.
    held_race_third_copy: usize,
    /// The caller was told the outcome is unknown; told it is known.
    unknown: usize,
    known: usize,
}

impl Reached {
    fn count(&mut self, t: &Trace) {
        let i = &t.intent;
        let unsafe_method = i.method == Method::POST || i.method == Method::PATCH;
        self.unkeyed_unsafe_after_refusal +=
            usize::from(!i.keyed && unsafe_method && t.refused > 0 && !t.received.is_empty());
        let last = t.received.len().saturating_sub(1);
        self.keyed_409_retried += usize::from(
            i.keyed
                && t.received[..last]
                    .iter()
                    .any(|r| matches!(r.act, Act::Status { status: 409, .. })),
        );
        self.gate_refused += usize::from(
            i.gate_refuses
                .is_some_and(|n| t.attempts() + 1 == n as usize && n <= i.max_attempts),
        );
        self.budget_refused += usize::from(i.budget_reserve == Some(0) && t.received.len() == 1);
        self.write_ahead_ran += usize::from(i.write_ahead == Some(false) && !t.received.is_empty());
        self.write_ahead_refused +=
            usize::from(i.write_ahead == Some(true) && t.write_ahead_asked == [0]);
        self.held_race_third_copy += usize::from(i.held_race && t.received.len() > 2);
        match t.told {
            Told::Error {
                outcome_unknown: true,
                ..
            } => self.unknown += 1,
            Told::Error { .. } => self.known += 1,
            Told::Response(_) => {}
        }
    }

    fn assert_enough(&self) {
        let least = [
            self.unkeyed_unsafe_after_refusal,
            self.keyed_409_retried,
            self.gate_refused,
            self.budget_refused,
            self.write_ahead_ran,
            self.write_ahead_refused,
            self.held_race_third_copy,
            self.unknown,
            self.known,
        ];
        assert!(least.iter().all(|&n| n >= 2), "{self:?}");
    }
}
