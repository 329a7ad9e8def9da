//! P9 — overload: what a dead service receives, and how fast intents succeed again
//! once it is back, with the budget alone, a circuit breaker, an adaptive throttle.
//!
//! Its own loopback server (hyper, own thread), because one phase must *refuse
//! connections*: the listener is closed and every open connection dropped, then the
//! same port is bound again for the recovery.
//!
//! * Outage run (real time, real sleeps): open-loop Poisson arrivals at 200
//!   intents/s (seeded), healthy, then down — `503` without Retry-After for the
//!   first half, connection refused for the second — then healthy again.
//!   Attempts per intent are the client's attempts (a refused connection counts:
//!   it was sent to the host) of the intents that arrived in the outage's steady
//!   state. Recovery is the time from the server's recovery to the start of the
//!   first 500 ms bin of arrivals from which every bin has ≥ 99 % successes.
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
const ARRIVAL_SEED: u64 = 9;
const SERVER_SEED: u64 = 0x9e37_79b9_7f4a_7c15;
const BIN: Duration = Duration::from_millis(500);
const VIRTUAL_TASKS: usize = 16;

const HEALTHY: u8 = 0;
const DOWN_503: u8 = 1;
const REFUSED: u8 = 2;
const RANDOM: u8 = 3;
const STOP: u8 = 4;

/// The gates compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Row {
    BudgetOnly,
    Breaker,
    Throttle,
}

impl Row {
    const ALL: [Row; 3] = [Row::BudgetOnly, Row::Breaker, Row::Throttle];

    fn name(self) -> &'static str {
        match self {
            Row::BudgetOnly => "budget only (policy defaults)",
            Row::Breaker => "+ CircuitBreaker::new_default()",
            Row::Throttle => "+ AdaptiveThrottle (K 2, 10 s, seeded)",
        }
    }

    fn policy(self, clock: Option<(&VirtualClock, &RecordingSleeper)>) -> RetryPolicy {
        let builder = RetryPolicy::builder().rng_seed(21);
        let builder = match clock {
            Some((clock, sleeper)) => builder.clock(clock.clone()).sleeper(sleeper.clone()),
            None => builder,
        };
        let builder = match self {
            Row::BudgetOnly => builder,
            Row::Breaker => builder.gate(CircuitBreaker::new_default()),
            Row::Throttle => builder.gate(
                AdaptiveThrottle::builder()
                    .seed(21)
                    .build()
                    .expect("valid throttle"),
            ),
        };
        builder.build().expect("valid policy")
    }

    fn client(self, clock: Option<(&VirtualClock, &RecordingSleeper)>) -> ResilientClient {
        let builder = reqwest::Client::builder()
            .no_proxy()
            .tcp_nodelay(true)
            .pool_max_idle_per_host(256);
        ResilientClient::from_builder(builder, self.policy(clock)).expect("reqwest client")
    }
}

/// Phase lengths.
#[derive(Debug, Clone, Copy)]
struct Phases {
    healthy: Duration,
    down: Duration,
    after: Duration,
    /// Steady state starts this long after the outage does.
    settle: Duration,
    random_503_intents: usize,
    random_5pct_intents: usize,
}

impl Phases {
    fn new(quick: bool) -> Phases {
        if quick {
            Phases {
                healthy: Duration::from_secs(2),
                down: Duration::from_secs(6),
                after: Duration::from_secs(7),
                settle: Duration::from_secs(2),
                random_503_intents: 10_000,
                random_5pct_intents: 60_000,
            }
        } else {
            Phases {
                healthy: Duration::from_secs(15),
                down: Duration::from_secs(15),
                after: Duration::from_secs(15),
                settle: Duration::from_secs(5),
                random_503_intents: 60_000,
                random_5pct_intents: 60_000,
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
    thread: Option<std::thread::JoinHandle<()>>,
}

impl P9Server {
    fn start() -> std::io::Result<P9Server> {
        let probe = std::net::TcpListener::bind("127.0.0.1:0")?;
        let addr = probe.local_addr()?;
        drop(probe);
        let mode = Arc::new(AtomicU8::new(HEALTHY));
        let ppm = Arc::new(AtomicU64::new(0));
        let (control, watcher) = watch::channel(HEALTHY);
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (thread_mode, thread_ppm) = (mode.clone(), ppm.clone());
        let thread = std::thread::Builder::new()
            .name("p9-server".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("server runtime");
                runtime.block_on(serve(addr, thread_mode, thread_ppm, watcher, ready_tx));
            })?;
        ready_rx
            .recv_timeout(Duration::from_secs(5))
            .map_err(|_| std::io::Error::other("p9 server did not start"))??;
        Ok(P9Server {
            addr,
            mode,
            control,
            ppm,
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
                    connections.spawn(async move {
                        let service = service_fn(move |_request| {
                            let status = match mode.load(Ordering::Relaxed) {
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
                            async move { Ok::<_, std::convert::Infallible>(response) }
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

// ---------------------------------------------------------------- the outage run

/// One intent of the outage run.
struct Arrival {
    at: Duration,
    ok: bool,
    attempts: u32,
}

struct OutageFigures {
    attempts_per_intent: f64,
    steady_intents: usize,
    /// `None`: never back to 99 % within the run.
    recovery: Option<Duration>,
    intents: usize,
    unfinished: usize,
}

async fn outage_run(row: Row, phases: Phases) -> OutageFigures {
    let server = Arc::new(P9Server::start().expect("p9 server"));
    let client = row.client(None);
    let url: Arc<str> = server.url().into();
    // Warm the pool and the crate (not counted).
    let _ = client.get(&*url).send().await;

    let total = phases.healthy + phases.down + phases.after;
    let down_at = phases.healthy;
    let refuse_at = phases.healthy + phases.down / 2;
    let recover_at = phases.healthy + phases.down;
    let started = tokio::time::Instant::now();
    let controller = {
        let server = server.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until(started + down_at).await;
            server.set(DOWN_503);
            tokio::time::sleep_until(started + refuse_at).await;
            server.set(REFUSED);
            tokio::time::sleep_until(started + recover_at).await;
            server.set(HEALTHY);
        })
    };

    let mut rng = rand::rngs::StdRng::seed_from_u64(ARRIVAL_SEED);
    let mut at = Duration::ZERO;
    let mut tasks = Vec::new();
    loop {
        let gap: f64 = -(1.0 - rng.random::<f64>()).ln() / RATE;
        at += Duration::from_secs_f64(gap);
        if at >= total {
            break;
        }
        tokio::time::sleep_until(started + at).await;
        let (client, url) = (client.clone(), url.clone());
        tasks.push(tokio::spawn(async move {
            match client.get(&*url).send().await {
                Ok(response) => Arrival {
                    at,
                    ok: response.status() == StatusCode::OK,
                    attempts: response.attempt_log().map_or(1, |log| log.len() as u32),
                },
                Err(error) => Arrival {
                    at,
                    ok: false,
                    attempts: error.attempts(),
                },
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

    let steady: Vec<&Arrival> = arrivals
        .iter()
        .filter(|a| a.at >= down_at + phases.settle && a.at < recover_at)
        .collect();
    let attempts: u64 = steady.iter().map(|a| u64::from(a.attempts)).sum();
    let attempts_per_intent = attempts as f64 / steady.len().max(1) as f64;

    // 500 ms bins of arrivals after the recovery; the last (partial) bin is dropped.
    let bins = (phases.after.as_nanos() / BIN.as_nanos()) as usize;
    let mut counts = vec![(0usize, 0usize); bins];
    for a in arrivals.iter().filter(|a| a.at >= recover_at) {
        let bin = ((a.at - recover_at).as_nanos() / BIN.as_nanos()) as usize;
        if let Some((ok, all)) = counts.get_mut(bin) {
            *all += 1;
            *ok += usize::from(a.ok);
        }
    }
    let good = |&(ok, all): &(usize, usize)| all > 0 && ok * 100 >= all * 99;
    let first_good_tail = (0..bins).find(|&k| counts[k..].iter().all(good));
    let recovery = first_good_tail.map(|k| BIN * k as u32);
    OutageFigures {
        attempts_per_intent,
        steady_intents: steady.len(),
        recovery,
        intents: arrivals.len(),
        unfinished,
    }
}

// ---------------------------------------------------------------- random 503s

struct RandomFigures {
    success_rate: f64,
    refused: usize,
    first_refused: usize,
}

async fn random_run(row: Row, share: f64, intents: usize) -> RandomFigures {
    let server = P9Server::start().expect("p9 server");
    server.random_503(share);
    let clock = VirtualClock::new();
    let sleeper = RecordingSleeper::new();
    let client = row.client(Some((&clock, &sleeper)));
    let url: Arc<str> = server.url().into();
    let next = Arc::new(AtomicUsize::new(0));
    let limit = Instant::now() + Duration::from_secs(120);
    let mut tasks = Vec::new();
    for _ in 0..VIRTUAL_TASKS {
        let (client, url, next, clock) = (client.clone(), url.clone(), next.clone(), clock.clone());
        tasks.push(tokio::spawn(async move {
            let (mut ok, mut refused, mut first_refused) = (0, 0, 0);
            while Instant::now() < limit && next.fetch_add(1, Ordering::Relaxed) < intents {
                clock.advance(Duration::from_secs_f64(1.0 / RATE));
                match client.get(&*url).send().await {
                    Ok(response) => ok += usize::from(response.status() == StatusCode::OK),
                    Err(error) if error.is_gate_refused() || error.is_budget_exhausted() => {
                        refused += 1;
                        first_refused += usize::from(error.attempts() == 0);
                    }
                    Err(_) => {}
                }
            }
            (ok, refused, first_refused)
        }));
    }
    let (mut ok, mut refused, mut first_refused) = (0, 0, 0);
    for task in tasks {
        let (o, r, f) = task.await.expect("p9 worker");
        ok += o;
        refused += r;
        first_refused += f;
    }
    let done = next.load(Ordering::Relaxed).min(intents);
    RandomFigures {
        success_rate: ok as f64 / done.max(1) as f64,
        refused,
        first_refused,
    }
}

// ---------------------------------------------------------------- the figure

/// Runs P9 and adds its section (and its targets) to `report`.
pub async fn run(plan: &Plan, report: &mut Report) {
    let phases = Phases::new(plan.p9_quick);
    let mut rows = Vec::new();
    for row in Row::ALL {
        let outage = outage_run(row, phases).await;
        let at_20 = random_run(row, 0.20, phases.random_503_intents).await;
        let at_5 = random_run(row, 0.05, phases.random_5pct_intents).await;
        let recovery = outage.recovery.map_or_else(
            || format!("> {:.1}", phases.after.as_secs_f64()),
            |d| format!("{:.1}", d.as_secs_f64()),
        );
        let mut note = format!(
            "{} intents, {} in the steady state",
            outage.intents, outage.steady_intents
        );
        if outage.unfinished > 0 {
            let _ = write!(note, "; {} unfinished at the time limit", outage.unfinished);
        }
        if at_5.refused > 0 {
            let _ = write!(
                note,
                "; 5 %: {} refused before any attempt",
                at_5.first_refused
            );
        }
        rows.push((row, outage, at_20, at_5, recovery, note));
    }
    let budget_20 = rows
        .iter()
        .find(|r| r.0 == Row::BudgetOnly)
        .map_or(0.0, |r| r.2.success_rate);
    let mut table_rows = Vec::new();
    for (row, outage, at_20, at_5, recovery, note) in &rows {
        if *row == Row::Breaker {
            let break_s = CircuitBreaker::new_default().break_duration().as_secs_f64();
            report.summary.p9_outage = Some(outage.attempts_per_intent);
            report.summary.p9_recovery_s = outage.recovery.map(|d| d.as_secs_f64());
            report.summary.p9_refused_at_5pct = Some(at_5.refused);
            report.target(
                "P9",
                "breaker: ≤ 0.15 attempts per intent in the outage's steady state".into(),
                format!("{:.3}", outage.attempts_per_intent),
                outage.attempts_per_intent <= 0.15,
            );
            report.target(
                "P9",
                format!(
                    "breaker: recovery ≤ break duration + 1 s = {:.0} s",
                    break_s + 1.0
                ),
                recovery.clone(),
                outage
                    .recovery
                    .is_some_and(|d| d.as_secs_f64() <= break_s + 1.0),
            );
            report.target(
                "P9",
                "breaker: success at 20 % random 503s ≥ budget-only − 0.5 pt".into(),
                format!(
                    "{:.2} % vs {:.2} %",
                    at_20.success_rate * 100.0,
                    budget_20 * 100.0
                ),
                at_20.success_rate >= budget_20 - 0.005,
            );
            report.target(
                "P9",
                "breaker: 0 intents refused at 5 % random 503s".into(),
                at_5.refused.to_string(),
                at_5.refused == 0,
            );
        }
        table_rows.push(vec![
            row.name().to_owned(),
            format!("{:.3}", outage.attempts_per_intent),
            recovery.clone(),
            format!("{:.2} %", at_20.success_rate * 100.0),
            at_5.refused.to_string(),
            note.clone(),
        ]);
    }
    let mut text = format!(
        "\n## P9 — overload: outage, recovery, random 503s\n\n\
         Policy defaults (3 attempts, full jitter 100 ms–2 s, 30 s deadline, 10 % budget) \
         plus the row's gate. Outage run: open-loop Poisson arrivals at {RATE:.0} intents/s \
         (seeded), real time: healthy {h} s, down {d} s (`503` without Retry-After for \
         {d2:.1} s, then connection refused: listener closed, connections dropped), healthy \
         {a} s. Attempts per intent: the client's attempts of the intents arriving from \
         {s} s after the outage starts to its end. Recovery: from the server's recovery to \
         the first 500 ms bin of arrivals from which every bin has ≥ 99 % successes. \
         Random-503 columns: a virtual-clock run against the same loopback server (16 \
         tasks back to back, clock moved 5 ms per intent, pauses recorded, not slept), \
         {n20} intents at 20 % (success = final 200) and {n5} intents at 5 % (refused = \
         ended by a gate, the budget included). reqwest-retry has no breaker or throttle \
         and is not a row.{quick}\n\n",
        h = phases.healthy.as_secs(),
        d = phases.down.as_secs(),
        d2 = phases.down.as_secs_f64() / 2.0,
        a = phases.after.as_secs(),
        s = phases.settle.as_secs(),
        n20 = phases.random_503_intents,
        n5 = phases.random_5pct_intents,
        quick = if plan.p9_quick {
            " Quick form: shorter phases (2 s / 6 s / 7 s) and a 2 s settle."
        } else {
            ""
        },
    );
    text.push_str(&table(
        &[
            " gate",
            "attempts per intent (outage steady state)",
            "recovery s",
            "success at 20 % 503",
            "refused at 5 % 503",
            " notes",
        ],
        &table_rows,
    ));
    report.section(&text);
}
