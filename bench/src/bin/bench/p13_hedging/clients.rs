//! The clients P13 compares, behind one `get`: this crate with hedging off, fixed
//! or adaptive, and `tower::hedge::Hedge` around reqwest's own tower service.
//! Every one is a reqwest 0.13 client from the same builder (the other figures'
//! common settings, reqwest's retry layer off).

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use reqwest_resilience::{
    HedgeEvent, HedgeEventKind, Hedging, IntentObserver, ResilientClient, RetryPolicy,
};
use reqwest_resilience_bench::peers::{bare_reqwest_builder, drain};
use tower::hedge::{Hedge, Policy};
use tower::Service;

use super::server::MEASURED_PATH;

/// The deadline every intent of this crate's rows carries (the outage's rows:
/// [`OUTAGE_DEADLINE`]).
pub const DEADLINE: Duration = Duration::from_secs(1);
/// The outage rows' deadline: shorter than the outage's latency, so that every
/// intent ends at its deadline and the overrun is measured on each.
pub const OUTAGE_DEADLINE: Duration = Duration::from_millis(40);
/// The fixed row's delay: about the distribution's p95 (base 2 ms, answered in
/// 2.1–2.5 ms on a quiet host), rounded up to the millisecond tokio's timer keeps.
pub const FIXED_DELAY: Duration = Duration::from_millis(3);
/// The hedge cap of the crate's rows (its defaults, set out loud).
pub const CAP_RATIO: f64 = 0.05;
pub const CAP_BURST: u32 = 10;
/// tower's percentile: the one this crate's default derives from its 5 % cap.
pub const PERCENTILE: f64 = 95.0;
/// tower's `min_data_points`: this crate's default `min_samples`.
pub const MIN_SAMPLES: u32 = 20;
/// tower's rotating histogram period: it hedges from the previous period's
/// latencies, so the warm-up lasts one period at least.
pub const TOWER_PERIOD: Duration = Duration::from_secs(1);

/// Which client a row drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Who {
    /// This crate, hedging off (the policy's defaults otherwise).
    Off,
    /// `Hedging::fixed(FIXED_DELAY).cap(CAP_RATIO, CAP_BURST)`.
    Fixed,
    /// `Hedging::default()`: the adaptive delay at its defaults.
    Defaults,
    /// `tower::hedge::Hedge` at `PERCENTILE`, `MIN_SAMPLES`, `TOWER_PERIOD`.
    Tower,
}

impl Who {
    pub fn name(self) -> &'static str {
        match self {
            Who::Off => "reqwest-resilience, hedging off",
            Who::Fixed => "reqwest-resilience, fixed 3 ms, cap 5 % + 10",
            Who::Defaults => "reqwest-resilience, hedging at its defaults",
            Who::Tower => "tower::hedge 0.5, p95",
        }
    }

    pub fn is_crate(self) -> bool {
        self != Who::Tower
    }

    pub fn hedges(self) -> bool {
        self != Who::Off
    }

    fn hedging(self) -> Option<Hedging> {
        match self {
            Who::Off | Who::Tower => None,
            Who::Fixed => Some(Hedging::fixed(FIXED_DELAY).cap(CAP_RATIO, CAP_BURST)),
            Who::Defaults => Some(Hedging::default()),
        }
    }
}

/// What the observer saw of a crate row's hedges.
#[derive(Default)]
pub struct HedgeLog {
    /// When each hedge went out (warm-up and measured intents alike: the cap
    /// counts both).
    pub sent_at: Mutex<Vec<Instant>>,
    /// Measured intents only.
    pub sent: AtomicU64,
    pub won: AtomicU64,
    pub refused_by_cap: AtomicU64,
    pub refused_by_gate: AtomicU64,
    /// The first few errors intents ended with, for the run's log.
    pub errors: Mutex<Vec<String>>,
}

/// Errors kept per row.
const ERRORS_KEPT: usize = 5;

struct Watch(Arc<HedgeLog>);

impl IntentObserver for Watch {
    fn hedge(&self, event: &HedgeEvent<'_>) {
        let log = &self.0;
        if event.kind() == HedgeEventKind::Sent {
            log.sent_at
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(Instant::now());
        }
        if event.url().path() != MEASURED_PATH {
            return;
        }
        let counter = match event.kind() {
            HedgeEventKind::Sent => &log.sent,
            HedgeEventKind::Won => &log.won,
            HedgeEventKind::RefusedByCap => &log.refused_by_cap,
            HedgeEventKind::RefusedByGate => &log.refused_by_gate,
            _ => return,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// tower's hedge policy for reqwest: any request whose body can be copied (a GET's can).
#[derive(Clone)]
pub struct Copyable;

impl Policy<reqwest::Request> for Copyable {
    fn clone_request(&self, request: &reqwest::Request) -> Option<reqwest::Request> {
        request.try_clone()
    }

    fn can_retry(&self, _: &reqwest::Request) -> bool {
        true
    }
}

/// A row's client.
pub enum RowClient {
    Crate {
        client: ResilientClient,
        log: Arc<HedgeLog>,
        /// The intents' deadline, for the control timer.
        deadline: Duration,
    },
    Tower {
        /// `Hedge` is not `Clone`: every intent calls it under the lock (it is
        /// always ready: reqwest's service is), and awaits its future outside it.
        hedge: Mutex<Hedge<reqwest::Client, Copyable>>,
        client: reqwest::Client,
    },
}

/// What one intent ended with.
#[derive(Debug, Clone, Copy)]
pub struct Answer {
    pub status: Option<StatusCode>,
    /// From the call to the response (or error) returned, before the body is read.
    pub returned: Duration,
    /// When the call was made (this crate deposits into its cap then).
    pub called: Instant,
    /// For this crate's intents that returned after their deadline: how long after
    /// a plain timer armed at the call for the deadline, polled in the same task,
    /// had fired. The runtime's own lateness (a busy thread, the timer wheel's
    /// tick) delays both alike; what is left is the crate's.
    pub beyond_control: Option<Duration>,
}

impl RowClient {
    /// The row's client, built now; `seed` seeds the crate's jitter, `deadline`
    /// bounds its intents.
    pub fn build(who: Who, seed: u64, deadline: Duration) -> RowClient {
        if who == Who::Tower {
            let client = bare_reqwest_builder().build().expect("reqwest client");
            let hedge = Hedge::new::<reqwest::Request>(
                client.clone(),
                Copyable,
                u64::from(MIN_SAMPLES),
                (PERCENTILE / 100.0) as f32,
                TOWER_PERIOD,
            );
            return RowClient::Tower {
                hedge: Mutex::new(hedge),
                client,
            };
        }
        let log = Arc::new(HedgeLog::default());
        let builder = RetryPolicy::builder()
            .deadline(deadline)
            .rng_seed(seed)
            .observer(Watch(log.clone()));
        let builder = match who.hedging() {
            Some(hedging) => builder.hedging(hedging),
            None => builder,
        };
        let policy = builder.build().expect("valid policy");
        let client =
            ResilientClient::from_builder(bare_reqwest_builder(), policy).expect("reqwest client");
        RowClient::Crate {
            client,
            log,
            deadline,
        }
    }

    pub fn log(&self) -> Option<&Arc<HedgeLog>> {
        match self {
            RowClient::Crate { log, .. } => Some(log),
            RowClient::Tower { .. } => None,
        }
    }

    /// One GET, its body read.
    pub async fn get(&self, url: &str) -> Answer {
        let called = Instant::now();
        let mut beyond_control = None;
        let (status, returned) = match self {
            RowClient::Crate {
                client,
                log,
                deadline,
            } => {
                let (sent, control_fired) =
                    against_control(client.get(url).send(), called + *deadline).await;
                beyond_control = control_fired.map(|fired| fired.elapsed());
                match sent {
                    Ok(response) => {
                        let returned = called.elapsed();
                        (drain(response).await.status, returned)
                    }
                    Err(error) => {
                        let returned = called.elapsed();
                        {
                            let mut errors = log.errors.lock().unwrap_or_else(|e| e.into_inner());
                            if errors.len() < ERRORS_KEPT {
                                errors.push(format!("{url}: {error}"));
                            }
                        }
                        let status = error.last_status();
                        match error.into_response() {
                            Some(response) => (drain(response).await.status, returned),
                            None => (status, returned),
                        }
                    }
                }
            }
            RowClient::Tower { hedge, client } => {
                let Ok(request) = client.get(url).build() else {
                    return Answer {
                        status: None,
                        returned: called.elapsed(),
                        called,
                        beyond_control,
                    };
                };
                let future = {
                    let mut hedge = hedge.lock().unwrap_or_else(|e| e.into_inner());
                    let mut cx = Context::from_waker(Waker::noop());
                    match hedge.poll_ready(&mut cx) {
                        Poll::Ready(Ok(())) => Some(hedge.call(request)),
                        _ => None,
                    }
                };
                match future {
                    Some(future) => match future.await {
                        Ok(response) => {
                            let returned = called.elapsed();
                            (drain(response).await.status, returned)
                        }
                        Err(_) => (None, called.elapsed()),
                    },
                    None => (None, called.elapsed()),
                }
            }
        };
        Answer {
            status,
            returned,
            called,
            beyond_control,
        }
    }
}

/// Awaits `send`, and beside it, in the same task, a plain tokio timer for
/// `deadline`: when the send is still pending as the timer fires, returns the
/// instant it fired. The timer is polled first, so when both are ready in one
/// poll the instant is taken before the send's result is.
async fn against_control<F: Future>(send: F, deadline: Instant) -> (F::Output, Option<Instant>) {
    let mut send = std::pin::pin!(send);
    let mut control = std::pin::pin!(tokio::time::sleep_until(deadline.into()));
    let mut fired = None;
    let output = std::future::poll_fn(|cx| {
        if fired.is_none() && control.as_mut().poll(cx).is_ready() {
            fired = Some(Instant::now());
        }
        send.as_mut().poll(cx)
    })
    .await;
    (output, fired)
}
