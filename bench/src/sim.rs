//! P6: Marc Brooker's OCC contention simulation ("Exponential Backoff And Jitter",
//! AWS Architecture Blog, 2015), in virtual time, no network.
//!
//! # The model (as in the published simulator, `aws-samples/aws-arch-backoff-simulator`,
//! `src/backoff_simulator.py` — a Python program, not Java)
//!
//! One server holds one row with a version number. N clients start at t = 0 and each
//! wants to update the row exactly once:
//!
//! 1. the client sends a *read*; it reaches the server one network delay later and
//!    the server answers with the current version, which reaches the client one
//!    delay later;
//! 2. the client at once sends a conditional *write* carrying that version; one delay
//!    later the server applies it iff the row still has that version (then bumps it),
//!    and answers success or failure, one delay later;
//! 3. on failure the client increments its attempt counter `n` (so the first retry
//!    has `n = 1`) and sends a new read, which reaches the server after one delay
//!    **plus** `backoff(n)`; on success it stops.
//!
//! Every hop's delay is `|Normal(mean 10 ms, sd 2 ms)|`, drawn independently. Events
//! are processed in time order from a priority queue. A **call** is one *write*
//! reaching the server (the original increments `stats.calls` in `write` only;
//! reads are not counted), so N is the minimum. The **completion time** is the time
//! of the last event, i.e. when the last client learns that its write succeeded.
//! Both are averaged over the runs. Base 5 ms, cap 2 s.
//!
//! Strategies, with `v = min(cap, base · 2ⁿ)`:
//! * none — 0;
//! * exponential, no jitter — `v` (**local to this bench**: not in the crate);
//! * full jitter — `U(0, v)`: the crate's `Backoff::full_jitter(base, cap)
//!   .delays(seed)`, one sequence per client;
//! * equal jitter — `v/2 + U(0, v/2)` (**local to this bench**: not in the crate);
//! * decorrelated — `min(cap, U(base, 3 · previous))`, previous starting at base:
//!   the crate's `Backoff::decorrelated_jitter(base, cap).delays(seed)`
//!   (the crate clips the upper bound to the cap before drawing, the original clips
//!   the draw; both stay within [base, cap]).
//!
//! The crate's own retry loop numbers retries from 0 (`delay(0, …)` for the first
//! retry); the simulator passes the original's `n` (1 for the first retry) so the
//! numbers are comparable with the published ones.
//!
//! Normal samples come from Box–Muller over a seeded `StdRng`, which also drives the
//! jitter, so every figure is repeatable.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use reqwest_resilience::{Backoff, Delays};

pub const BASE_MS: f64 = 5.0;
pub const CAP_MS: f64 = 2000.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    None,
    Exponential,
    FullJitter,
    EqualJitter,
    Decorrelated,
}

impl Strategy {
    pub const ALL: [Strategy; 5] = [
        Strategy::None,
        Strategy::Exponential,
        Strategy::FullJitter,
        Strategy::EqualJitter,
        Strategy::Decorrelated,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Strategy::None => "no backoff",
            Strategy::Exponential => "exponential, no jitter (local)",
            Strategy::FullJitter => "full jitter (crate)",
            Strategy::EqualJitter => "equal jitter (local)",
            Strategy::Decorrelated => "decorrelated jitter (crate)",
        }
    }

    pub fn short(self) -> &'static str {
        match self {
            Strategy::None => "none",
            Strategy::Exponential => "exponential",
            Strategy::FullJitter => "full",
            Strategy::EqualJitter => "equal",
            Strategy::Decorrelated => "decorrelated",
        }
    }

    /// Calls at N = 100 from a rerun of the published simulator (none given for
    /// no backoff).
    pub fn reference_calls_at_100(self) -> Option<f64> {
        match self {
            Strategy::None => None,
            Strategy::Exponential => Some(1852.0),
            Strategy::FullJitter => Some(796.0),
            Strategy::EqualJitter => Some(812.0),
            Strategy::Decorrelated => Some(999.0),
        }
    }
}

/// Box–Muller normal sampler over the seeded generator (keeps the spare sample).
struct Normal {
    spare: Option<f64>,
}

impl Normal {
    fn sample(&mut self, rng: &mut StdRng, mean: f64, sd: f64) -> f64 {
        if let Some(z) = self.spare.take() {
            return mean + sd * z;
        }
        // u1 in (0, 1] so that ln(u1) is finite.
        let u1: f64 = 1.0 - rng.random::<f64>();
        let u2: f64 = rng.random::<f64>();
        let radius = (-2.0 * u1.ln()).sqrt();
        let angle = std::f64::consts::TAU * u2;
        self.spare = Some(radius * angle.sin());
        mean + sd * radius * angle.cos()
    }
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    /// A read reaches the server.
    Read,
    /// The read's answer (the version) reaches the client.
    ReadAnswer(u64),
    /// A conditional write reaches the server.
    Write(u64),
    /// The write's answer reaches the client.
    WriteAnswer(bool),
}

struct Event {
    time: f64,
    seq: u64,
    client: usize,
    kind: Kind,
}

impl PartialEq for Event {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Event {}
impl PartialOrd for Event {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Event {
    /// Reversed, so that `BinaryHeap` pops the earliest event (ties: first queued).
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .time
            .total_cmp(&self.time)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

/// One client's retry count and its own jittered delay sequences (the crate's
/// `Backoff::delays`, seeded from the run's generator).
struct ClientState {
    attempt: u32,
    full: Delays,
    decorrelated: Delays,
}

impl ClientState {
    fn new(rng: &mut StdRng, full: Backoff, decorrelated: Backoff) -> Self {
        let mut full = full.delays(rng.random());
        // The model's first retry is n = 1 (window 2·base): skip the n = 0 draw.
        full.next();
        Self {
            attempt: 0,
            full,
            decorrelated: decorrelated.delays(rng.random()),
        }
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn backoff_ms(strategy: Strategy, client: &mut ClientState, rng: &mut StdRng) -> f64 {
    let n = client.attempt;
    let window = (BASE_MS * 2f64.powi(n.min(60) as i32)).min(CAP_MS);
    match strategy {
        Strategy::None => 0.0,
        Strategy::Exponential => window,
        Strategy::FullJitter => client.full.next().map_or(0.0, ms),
        Strategy::EqualJitter => window / 2.0 + rng.random_range(0.0..=window / 2.0),
        Strategy::Decorrelated => client.decorrelated.next().map_or(0.0, ms),
    }
}

/// One run: (write calls, completion time in ms).
fn run_once(strategy: Strategy, clients: usize, rng: &mut StdRng) -> (u64, f64) {
    let base = Duration::from_secs_f64(BASE_MS / 1000.0);
    let cap = Duration::from_secs_f64(CAP_MS / 1000.0);
    let full = Backoff::full_jitter(base, cap);
    let decorrelated = Backoff::decorrelated_jitter(base, cap);
    let mut normal = Normal { spare: None };
    let mut net = |rng: &mut StdRng| normal.sample(rng, 10.0, 2.0).abs();

    let mut states: Vec<ClientState> = (0..clients)
        .map(|_| ClientState::new(rng, full, decorrelated))
        .collect();
    let mut queue = BinaryHeap::with_capacity(clients * 2);
    let mut seq = 0u64;
    let mut push = |queue: &mut BinaryHeap<Event>, time: f64, client: usize, kind: Kind| {
        seq += 1;
        queue.push(Event {
            time,
            seq,
            client,
            kind,
        });
    };
    for client in 0..clients {
        let time = net(rng);
        push(&mut queue, time, client, Kind::Read);
    }
    let mut version = 0u64;
    let mut calls = 0u64;
    let mut now = 0.0f64;
    // Bounded: every client succeeds within a finite number of rounds; the guard
    // only protects against a modelling mistake.
    let mut guard = 0u64;
    while let Some(event) = queue.pop() {
        guard += 1;
        assert!(guard < 200_000_000, "simulation did not converge");
        debug_assert!(event.time >= now);
        now = event.time;
        let client = event.client;
        match event.kind {
            Kind::Read => {
                let time = now + net(rng);
                push(&mut queue, time, client, Kind::ReadAnswer(version));
            }
            Kind::ReadAnswer(seen) => {
                let time = now + net(rng);
                push(&mut queue, time, client, Kind::Write(seen));
            }
            Kind::Write(expected) => {
                calls += 1;
                let success = expected == version;
                if success {
                    version += 1;
                }
                let time = now + net(rng);
                push(&mut queue, time, client, Kind::WriteAnswer(success));
            }
            Kind::WriteAnswer(true) => {}
            Kind::WriteAnswer(false) => {
                let state = &mut states[client];
                state.attempt += 1;
                let pause = backoff_ms(strategy, state, rng);
                let time = now + net(rng) + pause;
                push(&mut queue, time, client, Kind::Read);
            }
        }
    }
    (calls, now)
}

/// Mean calls and mean completion time (ms) over `runs` runs with N `clients`.
#[derive(Debug, Clone, Copy)]
pub struct Point {
    pub clients: usize,
    pub calls: f64,
    pub time_ms: f64,
}

pub fn simulate(strategy: Strategy, clients: usize, runs: u32, seed: u64) -> Point {
    let mut rng = StdRng::seed_from_u64(seed);
    let (mut calls, mut time) = (0u64, 0.0f64);
    for _ in 0..runs {
        let (c, t) = run_once(strategy, clients, &mut rng);
        calls += c;
        time += t;
    }
    Point {
        clients,
        calls: calls as f64 / f64::from(runs),
        time_ms: time / f64::from(runs),
    }
}
