//! P13's loopback server: each request's latency (and, in one shape, a fast `503`)
//! drawn by the server from a seeded RNG, one draw per request received, so every
//! row meets the same distribution whatever client sends to it.
//!
//! The waits are timed by a thread of its own (a heap of deadlines and a condition
//! variable), not by tokio's timer: tokio's wheel ticks in whole milliseconds, and
//! a 2 ms base would be 2–3 ms. The server's runtime is single-threaded on its own
//! thread, as the other figures' servers.
//!
//! Two routes: [`WARMUP_PATH`] answers from the row's distribution ([`Shape::warmup`]: the healthy tail in an outage);
//! [`MEASURED_PATH`] answers from the row's shape. Each route has its own RNG and
//! counter, so the n-th measured request received draws the same in every row of a
//! run.

use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::sync::oneshot;

/// Every request's base latency.
pub const BASE: Duration = Duration::from_millis(2);
/// The share of requests slower than the base (the tail)…
pub const SLOW_SHARE: f64 = 0.03;
/// …by a uniform draw in this range of milliseconds.
pub const SLOW_EXTRA_MS: (f64, f64) = (20.0, 100.0);
/// In [`Shape::Tail503`], the share of requests answered `503` at once.
pub const FAST_503_SHARE: f64 = 0.02;
/// [`Shape::Lognormal`]: the median, and the spread giving a p99 of about 40 ms
/// (`ln(40 / 2) / z(0.99)`, z(0.99) = 2.326).
pub const LOGNORMAL_MEDIAN_MS: f64 = 2.0;
pub const LOGNORMAL_SIGMA: f64 = 1.288;
/// [`Shape::Bimodal`]: a fast mode, and a share of requests in a slow one.
pub const BIMODAL_BASE: Duration = Duration::from_millis(1);
pub const BIMODAL_SLOW_SHARE: f64 = 0.02;
pub const BIMODAL_SLOW_MS: (f64, f64) = (150.0, 250.0);
/// No drawn latency is longer (the lognormal's far tail).
const LONGEST: Duration = Duration::from_secs(2);
/// In [`Shape::Outage`], every measured request's latency.
pub const OUTAGE: Duration = Duration::from_millis(50);

pub const WARMUP_PATH: &str = "/w";
pub const MEASURED_PATH: &str = "/m";

/// What the measured route answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `BASE`, and `SLOW_SHARE` of the requests `BASE` + U(20, 100) ms; all `200`.
    Tail,
    /// As `Tail`, and `FAST_503_SHARE` more answered `503` at once.
    Tail503,
    /// Every request `OUTAGE`, `200`.
    Outage,
    /// Lognormal: median `LOGNORMAL_MEDIAN_MS`, p99 about 40 ms; all `200`.
    Lognormal,
    /// `BIMODAL_BASE`, and `BIMODAL_SLOW_SHARE` of the requests U(150, 250) ms
    /// (a GC-pause-like mode); all `200`.
    Bimodal,
}

impl Shape {
    fn code(self) -> u8 {
        match self {
            Shape::Tail => 0,
            Shape::Tail503 => 1,
            Shape::Outage => 2,
            Shape::Lognormal => 3,
            Shape::Bimodal => 4,
        }
    }

    fn of(code: u8) -> Shape {
        match code {
            1 => Shape::Tail503,
            2 => Shape::Outage,
            3 => Shape::Lognormal,
            4 => Shape::Bimodal,
            _ => Shape::Tail,
        }
    }

    /// What the warm-up route answers while the measured one answers `self`:
    /// the same distribution (the adaptive hedgers learn it), healthy in an
    /// outage.
    pub fn warmup(self) -> Shape {
        match self {
            Shape::Outage | Shape::Tail503 => Shape::Tail,
            shape => shape,
        }
    }

    /// The answer for a draw: `u` and `v` uniform in [0, 1) (both drawn for
    /// every request, so the stream stays aligned).
    fn answer(self, u: f64, v: f64) -> (Duration, StatusCode) {
        let ms = |ms: f64| Duration::from_secs_f64(ms / 1000.0).min(LONGEST);
        let extra_ms = SLOW_EXTRA_MS.0 + v * (SLOW_EXTRA_MS.1 - SLOW_EXTRA_MS.0);
        let slow = BASE + ms(extra_ms);
        match self {
            Shape::Lognormal => {
                // Box–Muller: one standard normal from the two uniforms.
                let z = (-2.0 * (1.0 - u).ln()).sqrt() * (std::f64::consts::TAU * v).cos();
                (
                    ms(LOGNORMAL_MEDIAN_MS * (LOGNORMAL_SIGMA * z).exp()),
                    StatusCode::OK,
                )
            }
            Shape::Bimodal if u < BIMODAL_SLOW_SHARE => {
                let (low, high) = BIMODAL_SLOW_MS;
                (ms(low + v * (high - low)), StatusCode::OK)
            }
            Shape::Bimodal => (BIMODAL_BASE, StatusCode::OK),
            Shape::Outage => (OUTAGE, StatusCode::OK),
            Shape::Tail503 if u < FAST_503_SHARE => {
                (Duration::ZERO, StatusCode::SERVICE_UNAVAILABLE)
            }
            Shape::Tail503 if u < FAST_503_SHARE + SLOW_SHARE => (slow, StatusCode::OK),
            Shape::Tail if u < SLOW_SHARE => (slow, StatusCode::OK),
            Shape::Tail | Shape::Tail503 => (BASE, StatusCode::OK),
        }
    }
}

/// One route's RNG and count.
struct Route {
    rng: Mutex<StdRng>,
    received: AtomicU64,
}

impl Route {
    fn new(seed: u64) -> Route {
        Route {
            rng: Mutex::new(StdRng::seed_from_u64(seed)),
            received: AtomicU64::new(0),
        }
    }

    fn reset(&self, seed: u64) {
        *lock(&self.rng) = StdRng::seed_from_u64(seed);
        self.received.store(0, Ordering::Relaxed);
    }

    fn draw(&self) -> (f64, f64) {
        self.received.fetch_add(1, Ordering::Relaxed);
        let mut rng = lock(&self.rng);
        let u = rng.random::<f64>();
        let v = rng.random::<f64>();
        (u, v)
    }
}

struct State {
    shape: AtomicU8,
    warmup: Route,
    measured: Route,
    timer: Timer,
}

/// A running server; stops on drop.
pub struct LatencyServer {
    pub addr: SocketAddr,
    state: Arc<State>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    timer_thread: Option<std::thread::JoinHandle<()>>,
}

impl LatencyServer {
    pub fn start() -> std::io::Result<LatencyServer> {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let (timer, timer_thread) = Timer::start()?;
        let state = Arc::new(State {
            shape: AtomicU8::new(Shape::Tail.code()),
            warmup: Route::new(0),
            measured: Route::new(0),
            timer,
        });
        let (stop_tx, stop_rx) = oneshot::channel();
        let thread_state = state.clone();
        let thread = std::thread::Builder::new()
            .name("p13-server".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("server runtime");
                runtime.block_on(serve(std_listener, thread_state, stop_rx));
            })?;
        Ok(LatencyServer {
            addr,
            state,
            stop: Some(stop_tx),
            thread: Some(thread),
            timer_thread: Some(timer_thread),
        })
    }

    /// A new row: the measured route answers from `shape`, both RNGs start again
    /// from `seed`, the counts from zero.
    pub fn reset(&self, shape: Shape, seed: u64) {
        self.state.shape.store(shape.code(), Ordering::Relaxed);
        self.state.warmup.reset(seed ^ 0x5eed_f00d);
        self.state.measured.reset(seed);
    }

    /// Requests the measured route received since the last reset.
    pub fn measured(&self) -> u64 {
        self.state.measured.received.load(Ordering::Relaxed)
    }
}

impl Drop for LatencyServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.state.timer.stop();
        if let Some(thread) = self.timer_thread.take() {
            let _ = thread.join();
        }
    }
}

async fn serve(
    std_listener: std::net::TcpListener,
    state: Arc<State>,
    mut stop: oneshot::Receiver<()>,
) {
    let listener = tokio::net::TcpListener::from_std(std_listener).expect("listener");
    loop {
        let accepted = tokio::select! {
            _ = &mut stop => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _)) = accepted else {
            tokio::time::sleep(Duration::from_millis(1)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        let state = state.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request| handle(state.clone(), request));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn handle(
    state: Arc<State>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (route, shape) = if request.uri().path() == MEASURED_PATH {
        (
            &state.measured,
            Shape::of(state.shape.load(Ordering::Relaxed)),
        )
    } else {
        let shape = Shape::of(state.shape.load(Ordering::Relaxed));
        (&state.warmup, shape.warmup())
    };
    let (u, v) = route.draw();
    let (delay, status) = shape.answer(u, v);
    if !delay.is_zero() {
        let _ = state.timer.sleep(delay).await;
    }
    let body: &'static [u8] = if status == StatusCode::OK {
        b"ok"
    } else {
        b"unavailable"
    };
    let mut response = Response::new(Full::new(Bytes::from_static(body)));
    *response.status_mut() = status;
    Ok(response)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Waits timed by a thread of its own, to within the kernel's timer slack
/// (tens of microseconds), not tokio's millisecond ticks.
struct Timer {
    shared: Arc<TimerShared>,
}

struct TimerShared {
    queue: Mutex<Queue>,
    wake: Condvar,
}

#[derive(Default)]
struct Queue {
    due: BinaryHeap<Due>,
    next: u64,
    stopped: bool,
}

/// A wait's end; the heap's top is the earliest.
struct Due {
    at: Instant,
    seq: u64,
    done: oneshot::Sender<()>,
}

impl PartialEq for Due {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at && self.seq == other.seq
    }
}

impl Eq for Due {}

impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}

impl Ord for Due {
    fn cmp(&self, other: &Self) -> CmpOrdering {
        // Reversed: BinaryHeap is a max-heap, the earliest must be on top.
        other
            .at
            .cmp(&self.at)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

impl Timer {
    fn start() -> std::io::Result<(Timer, std::thread::JoinHandle<()>)> {
        let shared = Arc::new(TimerShared {
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
        });
        let thread_shared = shared.clone();
        let thread = std::thread::Builder::new()
            .name("p13-timer".into())
            .spawn(move || run_timer(&thread_shared))?;
        Ok((Timer { shared }, thread))
    }

    /// Resolves `delay` from now.
    fn sleep(&self, delay: Duration) -> oneshot::Receiver<()> {
        let (done, wait) = oneshot::channel();
        let at = Instant::now() + delay;
        let mut queue = lock(&self.shared.queue);
        let earliest = queue.due.peek().is_none_or(|top| at < top.at);
        queue.next += 1;
        let seq = queue.next;
        queue.due.push(Due { at, seq, done });
        drop(queue);
        if earliest {
            self.shared.wake.notify_one();
        }
        wait
    }

    fn stop(&self) {
        lock(&self.shared.queue).stopped = true;
        self.shared.wake.notify_one();
    }
}

fn run_timer(shared: &TimerShared) {
    let mut queue = lock(&shared.queue);
    loop {
        if queue.stopped {
            return;
        }
        let now = Instant::now();
        while queue.due.peek().is_some_and(|top| top.at <= now) {
            if let Some(due) = queue.due.pop() {
                let _ = due.done.send(());
            }
        }
        queue = match queue.due.peek().map(|top| top.at - now) {
            Some(wait) => {
                shared
                    .wake
                    .wait_timeout(queue, wait)
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
            None => shared.wake.wait(queue).unwrap_or_else(|e| e.into_inner()),
        };
    }
}
