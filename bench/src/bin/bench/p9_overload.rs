//! P9 — overload, judged on the bad day and per client instance: what a dead
//! service receives, how fast every instance succeeds again once it is back, what
//! a cold start and a second healthy authority suffer — with the budget alone, a
//! circuit breaker, an adaptive throttle, and both in either order.
//!
//! Its own loopback servers (hyper, own thread each), because one kind of outage
//! must *refuse connections*: the listener is closed and every open connection
//! dropped, then the same port is bound again for the recovery.
//!
//! * Outage runs (real time, real sleeps): open-loop Poisson arrivals at 200
//!   intents/s (seeded) shared at random among `INSTANCES` independent clients
//!   (each its own gates and budget): healthy, then down for the outage — `503`
//!   at once, `503` after 2 s, or connection refused — then healthy again.
//!   Attempts per intent: the client's attempts (a refused connection counts) of
//!   the intents arriving from 3 s after the outage starts to its end. Recovery:
//!   from the outage's end to the start of the first 1-s window of arrivals (slid
//!   in 0.1 s steps) with ≥ 99 % successes. Each figure is the **worst instance**
//!   over `RUNS` runs with seeds fixed here.
//! * Cold start: fresh clients against a server that fails only the first
//!   request each client sends; every local refusal counts.
//! * Isolation: two servers on one host (other ports); one is down (fast 503),
//!   the other healthy; arrivals split between them. Warm: both healthy first;
//!   cold: down from the start. Every refusal of an intent to the healthy one counts.
//! * Random-503 runs (virtual clock): intents driven back to back by 16 tasks
//!   against the real loopback server, the policy's `VirtualClock` moved 5 ms per
//!   intent (200 intents/s of virtual time); pauses are recorded, not slept, and
//!   take no virtual time. The server answers `503` to a seeded pseudo-random
//!   share of the requests (by arrival number).

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper::{Response, StatusCode};
use hyper_util::rt::TokioIo;
use rand::{Rng, SeedableRng};
use reqwest_resilience::{
    AdaptiveThrottle, CircuitBreaker, RecordingSleeper, ResilientClient, ResponseExt, RetryPolicy,
    VirtualClock,
};
use reqwest_resilience_bench::markdown::table;
use tokio::sync::watch;

use crate::plan::Plan;
use crate::report::Report;

const RATE: f64 = 200.0;
/// Independent client instances per row.
const INSTANCES: usize = 8;
/// The arrival seeds of the runs, one per run, fixed before any run.
const RUN_SEEDS: [u64; 3] = [9, 10, 11];
const SERVER_SEED: u64 = 0x9e37_79b9_7f4a_7c15;
const VIRTUAL_TASKS: usize = 16;
/// How long a slow outage takes to answer its 503.
const SLOW: Duration = Duration::from_secs(2);
/// The breaker's slow call duration in the runs that set one.
const SLOW_CALL: Duration = Duration::from_secs(1);
/// Attempts per intent are counted from this long after the outage starts.
const SETTLE: Duration = Duration::from_secs(3);
/// The recovery window, and its step.
const WINDOW: Duration = Duration::from_secs(1);
const STEP: Duration = Duration::from_millis(100);

const HEALTHY: u8 = 0;
const DOWN_503: u8 = 1;
const REFUSED: u8 = 2;
const RANDOM: u8 = 3;
const STOP: u8 = 4;
const SLOW_503: u8 = 5;

/// The gates compared, in the order the policy asks them (the budget last).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Row {
    BudgetOnly,
    Breaker,
    Throttle,
    BreakerThrottle,
    ThrottleBreaker,
}

impl Row {
    const ALL: [Row; 5] = [
        Row::BudgetOnly,
        Row::Breaker,
        Row::Throttle,
        Row::BreakerThrottle,
        Row::ThrottleBreaker,
    ];

    fn name(self) -> &'static str {
        match self {
            Row::BudgetOnly => "budget only (policy defaults)",
            Row::Breaker => "+ breaker",
            Row::Throttle => "+ throttle",
            Row::BreakerThrottle => "+ breaker, then throttle",
            Row::ThrottleBreaker => "+ throttle, then breaker",
        }
    }

    fn has_breaker(self) -> bool {
        matches!(
            self,
            Row::Breaker | Row::BreakerThrottle | Row::ThrottleBreaker
        )
    }

    /// The row's policy at the defaults (with `slow`, the breaker counts attempts
    /// outstanding past `SLOW_CALL` as failures); `seed` seeds the jitter and the
    /// throttle.
    fn policy(
        self,
        seed: u64,
        slow: bool,
        clock: Option<(&VirtualClock, &RecordingSleeper)>,
    ) -> RetryPolicy {
        let builder = RetryPolicy::builder().rng_seed(seed);
        let builder = match clock {
            Some((clock, sleeper)) => builder.clock(clock.clone()).sleeper(sleeper.clone()),
            None => builder,
        };
        let breaker = || {
            CircuitBreaker::builder()
                .slow_call_duration(slow.then_some(SLOW_CALL))
                .build()
                .expect("valid breaker")
        };
        let throttle = || {
            AdaptiveThrottle::builder()
                .seed(seed)
                .build()
                .expect("valid throttle")
        };
        let builder = match self {
            Row::BudgetOnly => builder,
            Row::Breaker => builder.gate(breaker()),
            Row::Throttle => builder.gate(throttle()),
            Row::BreakerThrottle => builder.gate(breaker()).gate(throttle()),
            Row::ThrottleBreaker => builder.gate(throttle()).gate(breaker()),
        };
        builder.build().expect("valid policy")
    }

    fn client(
        self,
        seed: u64,
        slow: bool,
        clock: Option<(&VirtualClock, &RecordingSleeper)>,
    ) -> ResilientClient {
        let builder = reqwest::Client::builder()
            .no_proxy()
            .tcp_nodelay(true)
            .pool_max_idle_per_host(256);
        ResilientClient::from_builder(builder, self.policy(seed, slow, clock))
            .expect("reqwest client")
    }
}

/// The kinds of outage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outage {
    Fast503,
    Slow503,
    Refused,
}

impl Outage {
    const ALL: [Outage; 3] = [Outage::Fast503, Outage::Slow503, Outage::Refused];

    fn name(self) -> &'static str {
        match self {
            Outage::Fast503 => "503",
            Outage::Slow503 => "503 after 2 s",
            Outage::Refused => "refused",
        }
    }

    fn mode(self) -> u8 {
        match self {
            Outage::Fast503 => DOWN_503,
            Outage::Slow503 => SLOW_503,
            Outage::Refused => REFUSED,
        }
    }
}

/// Phase lengths.
#[derive(Debug, Clone, Copy)]
struct Phases {
    healthy: Duration,
    down: Duration,
    after: Duration,
    runs: usize,
    random_20pct_intents: usize,
    random_5pct_intents: usize,
    cold_intents: usize,
}

impl Phases {
    fn new(quick: bool) -> Phases {
        if quick {
            Phases {
                healthy: Duration::from_secs(3),
                down: Duration::from_secs(6),
                after: Duration::from_secs(8),
                runs: 1,
                random_20pct_intents: 10_000,
                random_5pct_intents: 20_000,
                cold_intents: 200,
            }
        } else {
            Phases {
                healthy: Duration::from_secs(8),
                down: Duration::from_secs(15),
                after: Duration::from_secs(8),
                runs: RUN_SEEDS.len(),
                random_20pct_intents: 20_000,
                random_5pct_intents: 60_000,
                cold_intents: 500,
            }
        }
    }
}

// ---------------------------------------------------------------- the server

struct P9Server {
    addr: SocketAddr,
    mode: Arc<AtomicU8>,
    control: watch::Sender<u8>,
    /// Answer 503 to this many per million requests in `RANDOM` mode.
    ppm: Arc<AtomicU64>,
    /// Answer 503 to this many requests before healthy answers (a cold start).
    fail_next: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl P9Server {
    fn start() -> std::io::Result<P9Server> {
        let probe = std::net::TcpListener::bind("127.0.0.1:0")?;
        let addr = probe.local_addr()?;
        drop(probe);
        let mode = Arc::new(AtomicU8::new(HEALTHY));
        let ppm = Arc::new(AtomicU64::new(0));
        let fail_next = Arc::new(AtomicU64::new(0));
        let (control, watcher) = watch::channel(HEALTHY);
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (thread_mode, thread_ppm, thread_fail) = (mode.clone(), ppm.clone(), fail_next.clone());
        let thread = std::thread::Builder::new()
            .name("p9-server".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("server runtime");
                runtime.block_on(serve(
                    addr,
                    thread_mode,
                    thread_ppm,
                    thread_fail,
                    watcher,
                    ready_tx,
                ));
            })?;
        ready_rx
            .recv_timeout(Duration::from_secs(5))
            .map_err(|_| std::io::Error::other("p9 server did not start"))??;
        Ok(P9Server {
            addr,
            mode,
            control,
            ppm,
            fail_next,
            thread: Some(thread),
        })
    }

    fn url(&self) -> String {
        format!("http://{}/p9", self.addr)
    }

    fn set(&self, mode: u8) {
        self.mode.store(mode, Ordering::SeqCst);
        let _ = self.control.send(mode);
    }

    /// Healthy, except for the next `n` requests.
    fn fail_next(&self, n: u64) {
        self.fail_next.store(n, Ordering::SeqCst);
        self.set(HEALTHY);
    }

    fn random_503(&self, share: f64) {
        self.ppm
            .store((share * 1e6).round() as u64, Ordering::SeqCst);
        self.set(RANDOM);
    }
}

impl Drop for P9Server {
    fn drop(&mut self) {
        self.set(STOP);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn bind(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(1024)
}

/// SplitMix64: the server's seeded coin for request number `n`.
fn coin(n: u64) -> u64 {
    let mut z = n
        .wrapping_add(SERVER_SEED)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

async fn serve(
    addr: SocketAddr,
    mode: Arc<AtomicU8>,
    ppm: Arc<AtomicU64>,
    fail_next: Arc<AtomicU64>,
    mut control: watch::Receiver<u8>,
    ready: std::sync::mpsc::Sender<std::io::Result<()>>,
) {
    let served = Arc::new(AtomicU64::new(0));
    let mut ready = Some(ready);
    loop {
        // Listening (bounded: each pass is one phase of a run).
        let listener = match bind(addr) {
            Ok(listener) => listener,
            Err(error) => {
                if let Some(ready) = ready.take() {
                    let _ = ready.send(Err(error));
                    return;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
                continue;
            }
        };
        if let Some(ready) = ready.take() {
            let _ = ready.send(Ok(()));
        }
        let mut connections = tokio::task::JoinSet::new();
        loop {
            tokio::select! {
                changed = control.changed() => {
                    let now = *control.borrow_and_update();
                    if changed.is_err() || now == REFUSED || now == STOP {
                        break;
                    }
                }
                accepted = listener.accept() => {
                    let Ok((stream, _)) = accepted else { continue };
                    let _ = stream.set_nodelay(true);
                    let (mode, ppm, served) = (mode.clone(), ppm.clone(), served.clone());
                    let fail_next = fail_next.clone();
                    connections.spawn(async move {
                        let service = service_fn(move |_request| {
                            let mode = mode.load(Ordering::Relaxed);
                            let status = match mode {
                                HEALTHY if fail_next
                                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                                    .is_ok() => StatusCode::SERVICE_UNAVAILABLE,
                                HEALTHY => StatusCode::OK,
                                RANDOM => {
                                    let n = served.fetch_add(1, Ordering::Relaxed);
                                    if coin(n) % 1_000_000 < ppm.load(Ordering::Relaxed) {
                                        StatusCode::SERVICE_UNAVAILABLE
                                    } else {
                                        StatusCode::OK
                                    }
                                }
                                _ => StatusCode::SERVICE_UNAVAILABLE,
                            };
                            let mut response = Response::new(Full::new(Bytes::from_static(b"p9")));
                            *response.status_mut() = status;
                            async move {
                                if mode == SLOW_503 {
                                    tokio::time::sleep(SLOW).await;
                                }
                                Ok::<_, std::convert::Infallible>(response)
                            }
                        });
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
            }
        }
        // Refuse: close the listener and every open connection.
        connections.abort_all();
        drop(listener);
        loop {
            let now = *control.borrow_and_update();
            if now == STOP {
                return;
            }
            if now != REFUSED {
                break;
            }
            if control.changed().await.is_err() {
                return;
            }
        }
    }
}

// ---------------------------------------------------------------- open-loop runs

/// One intent of an open-loop run.
struct Arrival {
    instance: usize,
    /// Which of the run's servers it went to.
    target: usize,
    at: Duration,
    ok: bool,
    attempts: u32,
    /// Ended by a gate (the budget included).
    refused: bool,
}

/// A change of a server's mode, `at` into the run.
struct Event {
    at: Duration,
    server: usize,
    mode: u8,
}

/// Poisson arrivals at `RATE` for `total`, each to a random instance and a random
/// server (seeded); the servers change mode as `events` say. Returns every intent
/// that finished within the time limit, and how many did not.
async fn open_loop(
    clients: &[ResilientClient],
    servers: &[Arc<P9Server>],
    total: Duration,
    seed: u64,
    events: Vec<Event>,
) -> (Vec<Arrival>, usize) {
    let urls: Vec<Arc<str>> = servers.iter().map(|s| s.url().into()).collect();
    // Warm every pool and the crate (not counted).
    for client in clients {
        for url in &urls {
            let _ = client.get(&**url).send().await;
        }
    }
    let started = tokio::time::Instant::now();
    let controller = {
        let servers = servers.to_vec();
        tokio::spawn(async move {
            for event in events {
                tokio::time::sleep_until(started + event.at).await;
                servers[event.server].set(event.mode);
            }
        })
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut at = Duration::ZERO;
    let mut tasks = Vec::new();
    loop {
        let gap: f64 = -(1.0 - rng.random::<f64>()).ln() / RATE;
        at += Duration::from_secs_f64(gap);
        if at >= total {
            break;
        }
        let instance = rng.random_range(0..clients.len());
        let target = rng.random_range(0..urls.len());
        tokio::time::sleep_until(started + at).await;
        let (client, url) = (clients[instance].clone(), urls[target].clone());
        tasks.push(tokio::spawn(async move {
            let (ok, attempts, refused) = match client.get(&*url).send().await {
                Ok(response) => (
                    response.status() == StatusCode::OK,
                    response.attempt_log().map_or(1, |log| log.len() as u32),
                    false,
                ),
                Err(error) => (false, error.attempts(), error.gate_refusal().is_some()),
            };
            Arrival {
                instance,
                target,
                at,
                ok,
                attempts,
                refused,
            }
        }));
    }
    let _ = controller.await;
    // Bounded: the default deadline is 30 s; nothing here hangs that long.
    let limit = Instant::now() + Duration::from_secs(40);
    let mut arrivals = Vec::with_capacity(tasks.len());
    let mut unfinished = 0;
    for task in tasks {
        let left = limit.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, task).await {
            Ok(Ok(arrival)) => arrivals.push(arrival),
            _ => unfinished += 1,
        }
    }
    (arrivals, unfinished)
}

/// The start of the first window of `WINDOW` (slid by `STEP`) from `from` on
/// whose arrivals succeed at ≥ 99 %; `None` within `span`.
fn recovery(arrivals: &[&Arrival], from: Duration, span: Duration) -> Option<Duration> {
    let steps = ((span.saturating_sub(WINDOW)).as_nanos() / STEP.as_nanos()) as u32;
    (0..=steps).map(|k| STEP * k).find(|&offset| {
        let (start, end) = (from + offset, from + offset + WINDOW);
        let window = arrivals.iter().filter(|a| a.at >= start && a.at < end);
        let (ok, all) = window.fold((0, 0), |(ok, all), a| (ok + usize::from(a.ok), all + 1));
        all > 0 && ok * 100 >= all * 99
    })
}

/// One instance's figures in one outage run.
#[derive(Clone, Copy)]
struct InstanceFigures {
    attempts_per_intent: f64,
    recovery: Option<Duration>,
}

async fn outage_run(
    row: Row,
    slow: bool,
    outage: Outage,
    seed: u64,
    phases: Phases,
) -> (Vec<InstanceFigures>, usize) {
    let server = Arc::new(P9Server::start().expect("p9 server"));
    let clients: Vec<_> = (0..INSTANCES)
        .map(|i| row.client(seed * 100 + i as u64, slow, None))
        .collect();
    let down_at = phases.healthy;
    let recover_at = phases.healthy + phases.down;
    let events = vec![
        Event {
            at: down_at,
            server: 0,
            mode: outage.mode(),
        },
        Event {
            at: recover_at,
            server: 0,
            mode: HEALTHY,
        },
    ];
    let total = recover_at + phases.after;
    let (arrivals, unfinished) = open_loop(&clients, &[server], total, seed, events).await;
    let figures = (0..INSTANCES)
        .map(|instance| {
            let mine: Vec<&Arrival> = arrivals.iter().filter(|a| a.instance == instance).collect();
            let steady: Vec<_> = mine
                .iter()
                .filter(|a| a.at >= down_at + SETTLE && a.at < recover_at)
                .collect();
            let attempts: u64 = steady.iter().map(|a| u64::from(a.attempts)).sum();
            InstanceFigures {
                attempts_per_intent: attempts as f64 / steady.len().max(1) as f64,
                recovery: recovery(&mine, recover_at, phases.after),
            }
        })
        .collect();
    (figures, unfinished)
}

/// Two servers on one host; server 0 is down (fast 503) for `phases.down`, from
/// the start (cold) or after `phases.healthy` (warm). Intents refused locally:
/// (to the healthy server, to the down one).
async fn isolation_run(row: Row, warm: bool, seed: u64, phases: Phases) -> (usize, usize) {
    let down = Arc::new(P9Server::start().expect("p9 server"));
    let healthy = Arc::new(P9Server::start().expect("p9 server"));
    let clients: Vec<_> = (0..INSTANCES)
        .map(|i| row.client(seed * 100 + i as u64, false, None))
        .collect();
    let down_at = if warm { phases.healthy } else { Duration::ZERO };
    if !warm {
        down.set(DOWN_503);
    }
    let events = vec![Event {
        at: down_at,
        server: 0,
        mode: DOWN_503,
    }];
    let total = down_at + phases.down;
    let (arrivals, _) = open_loop(&clients, &[down, healthy], total, seed, events).await;
    let refused = |target| {
        arrivals
            .iter()
            .filter(|a| a.target == target && a.refused)
            .count()
    };
    (refused(1), refused(0))
}

/// Fresh clients, each against a server that fails only the first request it
/// sends, then `phases.cold_intents` intents back to back: intents refused locally.
async fn cold_run(row: Row, phases: Phases) -> usize {
    let server = P9Server::start().expect("p9 server");
    let url = server.url();
    let mut refused = 0;
    for instance in 0..INSTANCES {
        server.fail_next(1);
        let client = row.client(instance as u64, false, None);
        for _ in 0..phases.cold_intents {
            if let Err(error) = client.get(&url).send().await {
                refused += usize::from(error.gate_refusal().is_some());
            }
        }
    }
    refused
}

// ---------------------------------------------------------------- random 503s

struct RandomFigures {
    success_rate: f64,
    refused: usize,
}

async fn random_run(row: Row, share: f64, intents: usize) -> RandomFigures {
    let server = P9Server::start().expect("p9 server");
    server.random_503(share);
    let clock = VirtualClock::new();
    let sleeper = RecordingSleeper::new();
    let client = row.client(21, false, Some((&clock, &sleeper)));
    let url: Arc<str> = server.url().into();
    let next = Arc::new(AtomicUsize::new(0));
    let limit = Instant::now() + Duration::from_secs(120);
    let mut tasks = Vec::new();
    for _ in 0..VIRTUAL_TASKS {
        let (client, url, next, clock) = (client.clone(), url.clone(), next.clone(), clock.clone());
        tasks.push(tokio::spawn(async move {
            let (mut ok, mut refused) = (0, 0);
            while Instant::now() < limit && next.fetch_add(1, Ordering::Relaxed) < intents {
                clock.advance(Duration::from_secs_f64(1.0 / RATE));
                match client.get(&*url).send().await {
                    Ok(response) => ok += usize::from(response.status() == StatusCode::OK),
                    Err(error) => refused += usize::from(error.gate_refusal().is_some()),
                }
            }
            (ok, refused)
        }));
    }
    let (mut ok, mut refused) = (0, 0);
    for task in tasks {
        let (o, r) = task.await.expect("p9 worker");
        ok += o;
        refused += r;
    }
    let done = next.load(Ordering::Relaxed).min(intents);
    RandomFigures {
        success_rate: ok as f64 / done.max(1) as f64,
        refused,
    }
}

// ---------------------------------------------------------------- the figure

fn seconds(recovery: Option<Duration>, span: Duration) -> String {
    recovery.map_or_else(
        || format!("> {:.1}", span.saturating_sub(WINDOW).as_secs_f64()),
        |d| format!("{:.1}", d.as_secs_f64()),
    )
}

/// The worst of two recoveries (`None`, never recovered, is the worst).
fn worse(a: Option<Option<Duration>>, b: Option<Duration>) -> Option<Option<Duration>> {
    Some(match (a, b) {
        (None, b) => b,
        (Some(None), _) | (_, None) => None,
        (Some(Some(a)), Some(b)) => Some(a.max(b)),
    })
}

/// Runs P9 and adds its section (and its targets) to `report`.
pub async fn run(plan: &Plan, report: &mut Report) {
    let phases = Phases::new(plan.p9_quick);
    let break_s = CircuitBreaker::new_default().break_duration().as_secs_f64();
    let target_recovery = 6.0_f64.min(break_s + 1.0);

    // Outage runs: the worst instance per row and kind over the runs.
    let mut outage_rows = Vec::new();
    let (mut worst_breaker_outage, mut worst_recovery) = (0.0_f64, Some(Some(Duration::ZERO)));
    for row in Row::ALL {
        let mut cells = vec![row.name().to_owned()];
        // Every kind at the defaults; a slow outage also with the slow call setting.
        let runs = Outage::ALL
            .into_iter()
            .map(|outage| (outage, false))
            .chain(Some((Outage::Slow503, true)));
        for (outage, slow) in runs {
            if slow && !row.has_breaker() {
                cells.push("–".to_owned());
                continue;
            }
            let (mut per_intent, mut rec, mut unfinished) = (0.0_f64, None, 0);
            for &seed in &RUN_SEEDS[..phases.runs] {
                let (figures, left) = outage_run(row, slow, outage, seed, phases).await;
                unfinished += left;
                for f in figures {
                    per_intent = per_intent.max(f.attempts_per_intent);
                    rec = worse(rec, f.recovery);
                }
            }
            let rec = rec.flatten();
            let rec_text = seconds(rec, phases.after);
            let kind = if slow {
                format!("{}, slow call {} s", outage.name(), SLOW_CALL.as_secs())
            } else {
                outage.name().to_owned()
            };
            // A slow outage at the defaults is reported, not judged: the issue
            // judges it with the slow call setting on.
            let judged = outage != Outage::Slow503 || slow;
            if row.has_breaker() {
                report.target(
                    "P9",
                    format!(
                        "{}, {kind}: ≤ 0.15 attempts per intent from 3 s into the outage{}",
                        row.name(),
                        if judged { "" } else { " (reported)" }
                    ),
                    format!("{per_intent:.3}"),
                    per_intent <= 0.15 || !judged,
                );
                if judged {
                    worst_breaker_outage = worst_breaker_outage.max(per_intent);
                }
            }
            report.target(
                "P9",
                format!(
                    "{}, {kind}: recovery ≤ {target_recovery:.0} s (worst instance)",
                    row.name()
                ),
                rec_text.clone(),
                rec.is_some_and(|d| d.as_secs_f64() <= target_recovery),
            );
            worst_recovery = worse(worst_recovery, rec);
            let mut cell = format!("{per_intent:.3} / {rec_text}");
            if unfinished > 0 {
                let _ = write!(cell, " ({unfinished} unfinished)");
            }
            cells.push(cell);
        }
        outage_rows.push(cells);
    }

    // Random 503s, cold start, isolation.
    let mut other_rows = Vec::new();
    let (mut refused_5, mut cold_total, mut isolation_total) = (0, 0, 0);
    let mut budget_20 = 0.0;
    for row in Row::ALL {
        let at_20 = random_run(row, 0.20, phases.random_20pct_intents).await;
        let at_5 = random_run(row, 0.05, phases.random_5pct_intents).await;
        if row == Row::BudgetOnly {
            budget_20 = at_20.success_rate;
        }
        let gated = row != Row::BudgetOnly;
        let (cold, warm_iso, cold_iso) = if gated {
            let cold = cold_run(row, phases).await;
            let warm_iso = isolation_run(row, true, RUN_SEEDS[0], phases).await;
            let cold_iso = isolation_run(row, false, RUN_SEEDS[0], phases).await;
            (Some(cold), Some(warm_iso), Some(cold_iso))
        } else {
            (None, None, None)
        };
        if gated {
            refused_5 = refused_5.max(at_5.refused);
            let (cold, warm_iso, cold_iso) = (
                cold.unwrap_or(0),
                warm_iso.unwrap_or_default(),
                cold_iso.unwrap_or_default(),
            );
            cold_total += cold;
            isolation_total += warm_iso.0 + cold_iso.0;
            report.target(
                "P9",
                format!("{}: 0 refused at 5 % random 503s", row.name()),
                at_5.refused.to_string(),
                at_5.refused == 0,
            );
            report.target(
                "P9",
                format!(
                    "{}: success at 20 % random 503s ≥ budget-only − 0.5 pt",
                    row.name()
                ),
                format!(
                    "{:.2} % vs {:.2} %",
                    at_20.success_rate * 100.0,
                    budget_20 * 100.0
                ),
                at_20.success_rate >= budget_20 - 0.005,
            );
            report.target(
                "P9",
                format!(
                    "{}: 0 refused after one failure from a cold start",
                    row.name()
                ),
                cold.to_string(),
                cold == 0,
            );
            report.target(
                "P9",
                format!(
                    "{}: 0 refused for a healthy authority beside a down one (warm, cold)",
                    row.name()
                ),
                format!("{}, {}", warm_iso.0, cold_iso.0),
                warm_iso.0 + cold_iso.0 == 0,
            );
        }
        let or_dash = |v: Option<String>| v.unwrap_or_else(|| "–".to_owned());
        other_rows.push(vec![
            row.name().to_owned(),
            format!("{:.2} %", at_20.success_rate * 100.0),
            at_5.refused.to_string(),
            or_dash(cold.map(|c| c.to_string())),
            or_dash(warm_iso.map(|(h, d)| format!("{h} ({d})"))),
            or_dash(cold_iso.map(|(h, d)| format!("{h} ({d})"))),
        ]);
    }

    report.summary.p9_outage = Some(worst_breaker_outage);
    report.summary.p9_recovery_s = worst_recovery.flatten().map(|d| d.as_secs_f64());
    report.summary.p9_refused_at_5pct = Some(refused_5);
    report.summary.p9_cold_refused = Some(cold_total);
    report.summary.p9_isolation_refused = Some(isolation_total);

    let mut text = format!(
        "\n## P9 — overload on the bad day: outage, recovery, cold start, isolation\n\n\
         Policy defaults (3 attempts, full jitter 100 ms–2 s, 30 s deadline, 10 % budget) plus \
         the row's gates at their defaults, asked in the order named. {INSTANCES} independent \
         client instances per row (each its own gates and budget) share open-loop Poisson \
         arrivals at {RATE:.0} intents/s (seeded, the instance drawn at random per intent), \
         real time: healthy {h} s, down {d} s, healthy {a} s. Kinds of outage: `503` at once, \
         `503` after 2 s, connection refused (listener closed, connections dropped). Each \
         cell: attempts per intent of the intents arriving from 3 s into the outage to its \
         end / recovery in s — from the outage's end to the start of the first 1-s window \
         of arrivals (slid in 0.1 s steps) with ≥ 99 % successes — both the **worst \
         instance** over {runs} run(s) (arrival seeds {seeds:?}). `> x`: not recovered \
         within the run. The last column repeats the slow outage with the breaker's slow \
         call duration set (first attempts outstanding that long count toward opening); \
         the ≤ 0.15 target judges a slow outage there, the defaults' figure is reported.\
         {quick}\n\n",
        h = phases.healthy.as_secs(),
        d = phases.down.as_secs(),
        a = phases.after.as_secs(),
        runs = phases.runs,
        seeds = &RUN_SEEDS[..phases.runs],
        quick = if plan.p9_quick {
            " Quick form: shorter phases, one run."
        } else {
            ""
        },
    );
    let mut headers = vec![" gates".to_owned()];
    headers.extend(
        Outage::ALL
            .iter()
            .map(|o| format!("{}: attempts/intent / recovery s", o.name())),
    );
    headers.push(format!(
        "{}, breaker's slow call {} s: attempts/intent / recovery s",
        Outage::Slow503.name(),
        SLOW_CALL.as_secs()
    ));
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    text.push_str(&table(&headers, &outage_rows));
    let _ = write!(
        text,
        "\nRandom 503s: a virtual-clock run against the same loopback server (16 tasks back \
         to back, clock moved 5 ms per intent, pauses recorded, not slept), {n20} intents at \
         20 % (success = final 200) and {n5} at 5 % (refused = ended by a gate, the budget \
         included). Cold start: {INSTANCES} fresh clients, each against a server that fails \
         only its first request, {cold} intents each back to back; refused intents. \
         Isolation: two servers on 127.0.0.1 (other ports), arrivals split between them, one \
         down (`503`) for {d} s — warm (after {h} s healthy) and cold (from the start); \
         refused intents to the healthy one (to the down one in brackets).\n\n",
        n20 = phases.random_20pct_intents,
        n5 = phases.random_5pct_intents,
        cold = phases.cold_intents,
        d = phases.down.as_secs(),
        h = phases.healthy.as_secs(),
    );
    text.push_str(&table(
        &[
            " gates",
            "success at 20 % 503",
            "refused at 5 % 503",
            "cold start: refused",
            "isolation, warm: refused",
            "isolation, cold: refused",
        ],
        &other_rows,
    ));
    report.section(&text);
}
