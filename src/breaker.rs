//! A circuit breaker gate: when most attempts to a service fail, stop sending the first
//! attempts too. The behaviour is documented on [`CircuitBreaker`].

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::attempt_log::AttemptOutcome;
use crate::gate::{Gate, GateRefusal, GateScope};
use crate::window::{Counts, Epochs, Window};

/// The gate's name in refusals, logs and metrics.
const NAME: &str = "circuit_breaker";
/// Target of the state-change events.
const TARGET: &str = "reqwest_resilience::breaker";
/// Fixed-point scale of the failure ratio (millionths).
const SCALE: u64 = 1_000_000;
/// Most hosts with a circuit of their own; further hosts share one.
const MAX_HOSTS: usize = 1024;

pub(crate) const DEFAULT_FAILURE_RATIO: f64 = 0.5;
pub(crate) const DEFAULT_SAMPLING_DURATION: Duration = Duration::from_secs(10);
pub(crate) const DEFAULT_MINIMUM_THROUGHPUT: u32 = 100;
pub(crate) const DEFAULT_BREAK_DURATION: Duration = Duration::from_secs(5);
pub(crate) const DEFAULT_PROBES: u32 = 1;

const MIN_SAMPLING: Duration = Duration::from_millis(500);
const MAX_SAMPLING: Duration = Duration::from_secs(3600);
const MIN_BREAK: Duration = Duration::from_millis(10);
const MAX_BREAK: Duration = Duration::from_secs(86_400);

/// A circuit breaker: when most attempts to a service fail, stop sending the first
/// attempts too.
///
/// The [`RetryBudget`](crate::RetryBudget) keeps *retries* to a tenth of the
/// traffic, so a total outage costs a dead service about 1.1 requests per intent
/// instead of 3. But every first attempt still goes out: the service keeps
/// receiving all the traffic it fell over under, and every caller pays an attempt
/// (often a whole attempt timeout) to learn what the last hundred intents already
/// knew. A breaker remembers: once the failure ratio over a recent window is high
/// enough, it refuses attempts locally (nothing is sent, the outcome is known)
/// until a break has passed, then lets a bounded number of *probes* through; a
/// probe that succeeds closes the circuit, one that fails opens it again.
///
/// The model is Polly 8's breaker, which Microsoft.Extensions.Http.Resilience puts
/// in its standard pipeline: a **failure ratio** over a **sampling duration**
/// (counted in 10 time buckets, so memory is constant and old outcomes fall out a
/// bucket at a time), a **minimum throughput** below which the circuit never opens
/// (a handful of failures proves nothing), a **break duration**, then half-open.
///
/// * It counts **attempts**, not intents: every attempt's outcome arrives through
///   [`Gate::attempt_finished`], retries included. A failure is an attempt the
///   crate calls *struggling* — a transport failure or a transient status (408,
///   429, 502, 503, 504 and whatever else the policy treats as transient) — and
///   never a 409 "same key still in progress" (the server is healthy and
///   executing) nor another 4xx; those count as successes.
/// * The ratio is compared in exact integer arithmetic (millionths): the circuit
///   opens when `failures / attempts >= failure_ratio` and `attempts >=
///   minimum_throughput` over the window, checked when a failure arrives.
/// * A refused attempt carries the time until the next probe may go
///   ([`GateRefusal::retry_after`]); the error says
///   [`is_gate_refused`](crate::Error::is_gate_refused).
/// * With [`per_host(true)`](CircuitBreakerBuilder::per_host) (the default) every
///   host has its own circuit, so one dead host does not refuse intents to
///   healthy ones. **A host whose traffic stays under the minimum throughput
///   within the sampling duration never opens its circuit**, however many of its
///   attempts fail: the budget and max attempts are all that protect it.
/// * [`isolate`](CircuitBreaker::isolate) forces every circuit open until
///   [`reset`](CircuitBreaker::reset), which also closes them all;
///   [`state`](CircuitBreaker::state) reads one.
/// * In half-open the first outcome to arrive decides, as in Polly: a success
///   closes the circuit (with an empty window), a failure opens it for another
///   break. The gate cannot tell a probe's outcome from the late outcome of an
///   attempt admitted before the circuit opened. A probe whose outcome never
///   arrives (a later gate refused it, the caller dropped the intent) stops
///   counting after one break duration, and another probe may go.
/// * Every change of state is a `tracing` event with target
///   `reqwest_resilience::breaker` (INFO; WARN when a circuit opens), with the
///   fields `gate`, `host`, `from` and `to`.
///
/// Time is the policy's clock ([`GateScope::now`]), so a test that injects a
/// [`VirtualClock`](crate::VirtualClock) drives the break without waiting.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use reqwest_resilience::{CircuitBreaker, CircuitState, RetryPolicy};
///
/// let breaker = CircuitBreaker::builder()
///     .failure_ratio(0.5)
///     .minimum_throughput(20)
///     .break_duration(Duration::from_secs(5))
///     .build()?;
/// // The policy holds a handle; keep another to read or force the state.
/// let policy = RetryPolicy::builder().gate(breaker.clone()).build()?;
/// assert_eq!(breaker.state("api.example.com"), CircuitState::Closed);
/// breaker.isolate(); // maintenance: refuse everything, send nothing
/// assert_eq!(breaker.state("api.example.com"), CircuitState::Isolated);
/// breaker.reset();
/// # drop(policy);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Cloning is cheap and yields a handle to the *same* breaker: give one clone to
/// [`RetryPolicyBuilder::gate`](crate::RetryPolicyBuilder::gate) and keep another
/// to read or force its state.
///
/// # Defaults
///
/// | setting | default | why |
/// |---|---|---|
/// | failure ratio | 0.5 | opens only when most attempts fail: with Polly's 0.1 a service answering 20 % random 503s (still serving 4 in 5) would be cut off; P9 shows 0.5 costs nothing at 5 % and 20 % random 503s |
/// | sampling duration | 10 s | the retry budget's window. With a 0.5 ratio a window full of successes must be half replaced by failures before the circuit opens, so the circuit opens about half a window into an outage: Polly's 30 s would keep it closed for 15 s (all of P9's outage); 10 s opens it after about 5 s |
/// | minimum throughput | 100 attempts | Polly / MEHR's standard value: a few failures prove nothing |
/// | break duration | 5 s | Polly / MEHR's standard value; P9's recovery time is bounded by it |
/// | probes in half-open | 1 | one request tells whether the service is back |
/// | per host | yes | one dead host must not refuse intents to healthy ones (up to 1024 hosts; more share one circuit) |
///
/// Whether a policy has a breaker at all is in [`RetryPolicy`](crate::RetryPolicy)'s
/// Defaults table.
#[derive(Clone)]
pub struct CircuitBreaker {
    inner: Arc<Inner>,
}

/// Builder for [`CircuitBreaker`]; setters never fail, [`build`](Self::build) validates.
#[derive(Debug, Clone)]
pub struct CircuitBreakerBuilder {
    failure_ratio: f64,
    sampling_duration: Duration,
    minimum_throughput: u32,
    break_duration: Duration,
    probes: u32,
    per_host: bool,
}

/// Why a [`CircuitBreakerBuilder`] could not build a breaker.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidBreaker {
    /// The failure ratio was not a finite number in (0, 1].
    #[error("circuit breaker failure ratio must be a finite number in (0, 1], got {0}")]
    FailureRatio(f64),
    /// The sampling duration was shorter than 500 ms or longer than 1 h.
    #[error("circuit breaker sampling duration must be between 500 ms and 1 h, got {0:?}")]
    SamplingDuration(Duration),
    /// The minimum throughput was below 2 (one failure would open the circuit).
    #[error("circuit breaker minimum throughput must be at least 2, got {0}")]
    MinimumThroughput(u32),
    /// The break duration was shorter than 10 ms or longer than a day.
    #[error("circuit breaker break duration must be between 10 ms and 24 h, got {0:?}")]
    BreakDuration(Duration),
    /// Half-open admitted no probe: the circuit could never close by itself.
    #[error("circuit breaker must admit at least one probe in half-open, got 0")]
    Probes,
}

/// Where a circuit stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CircuitState {
    /// Attempts go out; outcomes are counted.
    Closed,
    /// Attempts are refused until the break ends. A circuit whose break has ended
    /// still reads `Open` until the next attempt asks (that one becomes a probe).
    Open,
    /// The break ended: a bounded number of probes may go out; the first to
    /// succeed closes the circuit, one that fails opens it again.
    HalfOpen,
    /// Forced open by [`CircuitBreaker::isolate`] until [`CircuitBreaker::reset`].
    Isolated,
}

impl CircuitState {
    /// The state's name in events: `closed`, `open`, `half_open`, `isolated`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Closed => "closed",
            Self::Open => "open",
            Self::HalfOpen => "half_open",
            Self::Isolated => "isolated",
        }
    }
}

impl fmt::Display for CircuitState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

struct Inner {
    failure_ratio: f64,
    ratio_scaled: u64,
    sampling_duration: Duration,
    epochs: Epochs,
    minimum_throughput: u32,
    break_duration: Duration,
    probes: u32,
    per_host: bool,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    isolated: bool,
    shared: Circuit,
    hosts: HashMap<String, Circuit>,
}

#[derive(Default)]
struct Circuit {
    phase: Phase,
    window: Window<Outcomes>,
}

#[derive(Default, Clone, Copy)]
enum Phase {
    #[default]
    Closed,
    Open {
        until: Instant,
    },
    /// `out` probes admitted and not yet answered; a probe whose outcome never
    /// arrives (a later gate refused it, the caller dropped the intent) stops
    /// counting at `lease_until`.
    HalfOpen {
        out: u32,
        lease_until: Instant,
    },
}

impl Phase {
    fn state(self) -> CircuitState {
        match self {
            Phase::Closed => CircuitState::Closed,
            Phase::Open { .. } => CircuitState::Open,
            Phase::HalfOpen { .. } => CircuitState::HalfOpen,
        }
    }
}

/// What one bucket of a circuit's window counts.
#[derive(Clone, Copy, Default)]
struct Outcomes {
    attempts: u64,
    failures: u64,
}

impl Counts for Outcomes {
    fn saturating_add(self, other: Self) -> Self {
        Outcomes {
            attempts: self.attempts.saturating_add(other.attempts),
            failures: self.failures.saturating_add(other.failures),
        }
    }
}

/// A change of state, logged once the lock is released.
struct Change {
    from: CircuitState,
    to: CircuitState,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Plain counters and a phase, always consistent: ignore poisoning.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn is_tripped(&self, Outcomes { attempts, failures }: Outcomes) -> bool {
        attempts >= u64::from(self.minimum_throughput)
            && u128::from(failures) * u128::from(SCALE)
                >= u128::from(self.ratio_scaled) * u128::from(attempts)
    }

    /// May an attempt go out on `circuit` at `now`? On a refusal, the time until
    /// a probe may go.
    fn admit(&self, circuit: &mut Circuit, now: Instant) -> (Result<(), Duration>, Option<Change>) {
        match circuit.phase {
            Phase::Closed => (Ok(()), None),
            Phase::Open { until } if now < until => (Err(until - now), None),
            Phase::Open { .. } => {
                circuit.phase = Phase::HalfOpen {
                    out: 1,
                    lease_until: now + self.break_duration,
                };
                let change = Change {
                    from: CircuitState::Open,
                    to: CircuitState::HalfOpen,
                };
                (Ok(()), Some(change))
            }
            Phase::HalfOpen { out, lease_until } => {
                let (out, lease_until) = if now >= lease_until {
                    (0, now + self.break_duration) // probes lost: lease new ones
                } else {
                    (out, lease_until)
                };
                if out < self.probes {
                    circuit.phase = Phase::HalfOpen {
                        out: out + 1,
                        lease_until,
                    };
                    (Ok(()), None)
                } else {
                    circuit.phase = Phase::HalfOpen { out, lease_until };
                    (Err(lease_until.saturating_duration_since(now)), None)
                }
            }
        }
    }

    /// Counts an attempt's outcome on `circuit`.
    fn finished(&self, circuit: &mut Circuit, now: Instant, failed: bool) -> Option<Change> {
        match circuit.phase {
            Phase::Closed => {
                let epoch = self.epochs.of(now);
                let bucket = circuit.window.slot(epoch);
                bucket.attempts = bucket.attempts.saturating_add(1);
                bucket.failures = bucket.failures.saturating_add(u64::from(failed));
                if failed && self.is_tripped(circuit.window.sum(epoch)) {
                    circuit.phase = Phase::Open {
                        until: now + self.break_duration,
                    };
                    circuit.window = Window::default();
                    return Some(Change {
                        from: CircuitState::Closed,
                        to: CircuitState::Open,
                    });
                }
                None
            }
            // A late outcome of an attempt admitted before the circuit opened.
            Phase::Open { .. } => None,
            Phase::HalfOpen { .. } if failed => {
                circuit.phase = Phase::Open {
                    until: now + self.break_duration,
                };
                Some(Change {
                    from: CircuitState::HalfOpen,
                    to: CircuitState::Open,
                })
            }
            Phase::HalfOpen { .. } => {
                circuit.phase = Phase::Closed;
                circuit.window = Window::default();
                Some(Change {
                    from: CircuitState::HalfOpen,
                    to: CircuitState::Closed,
                })
            }
        }
    }
}

impl State {
    /// The circuit of `host`, created if there is room.
    fn circuit_mut(&mut self, host: &str, per_host: bool, epoch: u64) -> &mut Circuit {
        if !per_host {
            return &mut self.shared;
        }
        if !self.hosts.contains_key(host) {
            if self.hosts.len() >= MAX_HOSTS {
                // Forget closed circuits with nothing in their window.
                self.hosts.retain(|_, c| {
                    !matches!(c.phase, Phase::Closed) || c.window.sum(epoch).attempts > 0
                });
            }
            if self.hosts.len() >= MAX_HOSTS {
                return &mut self.shared;
            }
            self.hosts.insert(host.to_owned(), Circuit::default());
        }
        self.hosts.get_mut(host).unwrap_or(&mut self.shared)
    }
}

fn log_change(host: &str, change: Option<Change>) {
    let Some(Change { from, to }) = change else {
        return;
    };
    if to == CircuitState::Open {
        tracing::warn!(
            target: TARGET,
            gate = NAME,
            host,
            from = from.as_str(),
            to = to.as_str(),
            "circuit opened: attempts are refused until a probe succeeds"
        );
    } else {
        tracing::info!(
            target: TARGET,
            gate = NAME,
            host,
            from = from.as_str(),
            to = to.as_str(),
            "circuit state changed"
        );
    }
}

impl CircuitBreaker {
    /// A builder starting from the defaults (see [`CircuitBreaker`]'s Defaults).
    pub fn builder() -> CircuitBreakerBuilder {
        CircuitBreakerBuilder {
            failure_ratio: DEFAULT_FAILURE_RATIO,
            sampling_duration: DEFAULT_SAMPLING_DURATION,
            minimum_throughput: DEFAULT_MINIMUM_THROUGHPUT,
            break_duration: DEFAULT_BREAK_DURATION,
            probes: DEFAULT_PROBES,
            per_host: true,
        }
    }

    /// A breaker with every default.
    pub fn new_default() -> CircuitBreaker {
        Self::builder().build_unchecked(Instant::now())
    }

    /// The state of `host`'s circuit (of the one shared circuit unless per host).
    /// With the breaker isolated, [`CircuitState::Isolated`] for every host.
    pub fn state(&self, host: &str) -> CircuitState {
        let state = self.inner.lock();
        if state.isolated {
            return CircuitState::Isolated;
        }
        let circuit = if self.inner.per_host {
            state.hosts.get(host).unwrap_or(&state.shared)
        } else {
            &state.shared
        };
        circuit.phase.state()
    }

    /// Forces every circuit open: every attempt is refused (without a time until a
    /// probe) until [`reset`](Self::reset). For maintenance windows and incident
    /// response.
    pub fn isolate(&self) {
        let was = std::mem::replace(&mut self.inner.lock().isolated, true);
        if !was {
            tracing::warn!(target: TARGET, gate = NAME, host = "*", from = "any", to = "isolated", "circuit isolated by hand");
        }
    }

    /// Forces every circuit closed with an empty window, and ends an
    /// [`isolate`](Self::isolate).
    pub fn reset(&self) {
        let mut state = self.inner.lock();
        state.isolated = false;
        state.shared = Circuit::default();
        state.hosts.clear();
        drop(state);
        tracing::info!(target: TARGET, gate = NAME, host = "*", from = "any", to = "closed", "circuit reset by hand");
    }

    /// The failure ratio at or above which a circuit opens.
    pub fn failure_ratio(&self) -> f64 {
        self.inner.failure_ratio
    }

    /// The window over which the ratio is measured.
    pub fn sampling_duration(&self) -> Duration {
        self.inner.sampling_duration
    }

    /// Attempts needed in the window before a circuit may open.
    pub fn minimum_throughput(&self) -> u32 {
        self.inner.minimum_throughput
    }

    /// How long a circuit stays open before a probe.
    pub fn break_duration(&self) -> Duration {
        self.inner.break_duration
    }

    /// Probes admitted at once in half-open.
    pub fn probes(&self) -> u32 {
        self.inner.probes
    }

    /// Whether each host has its own circuit.
    pub fn is_per_host(&self) -> bool {
        self.inner.per_host
    }
}

/// Asked before every attempt (first ones included): refuses while the host's
/// circuit is open; counts every attempt's outcome.
impl Gate for CircuitBreaker {
    fn name(&self) -> &str {
        NAME
    }

    fn admit(&self, scope: &GateScope<'_>) -> Result<(), GateRefusal> {
        let inner = &*self.inner;
        let now = scope.now();
        let mut state = inner.lock();
        if state.isolated {
            return Err(GateRefusal::new(NAME));
        }
        let epoch = inner.epochs.of(now);
        let circuit = state.circuit_mut(scope.host(), inner.per_host, epoch);
        let (verdict, change) = inner.admit(circuit, now);
        drop(state);
        log_change(scope.host(), change);
        verdict.map_err(|wait| GateRefusal::new(NAME).with_retry_after(wait))
    }

    fn attempt_finished(&self, scope: &GateScope<'_>, _: &AttemptOutcome, struggling: bool) {
        let inner = &*self.inner;
        let now = scope.now();
        let mut state = inner.lock();
        if state.isolated {
            return;
        }
        let epoch = inner.epochs.of(now);
        let circuit = state.circuit_mut(scope.host(), inner.per_host, epoch);
        let change = inner.finished(circuit, now, struggling);
        drop(state);
        log_change(scope.host(), change);
    }
}

impl Default for CircuitBreaker {
    fn default() -> Self {
        Self::new_default()
    }
}

impl fmt::Debug for CircuitBreaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = &*self.inner;
        let state = inner.lock();
        let (isolated, shared, hosts) = (
            state.isolated,
            state.shared.phase.state(),
            state.hosts.len(),
        );
        drop(state);
        f.debug_struct("CircuitBreaker")
            .field("failure_ratio", &inner.failure_ratio)
            .field("sampling_duration", &inner.sampling_duration)
            .field("minimum_throughput", &inner.minimum_throughput)
            .field("break_duration", &inner.break_duration)
            .field("probes", &inner.probes)
            .field("per_host", &inner.per_host)
            .field("isolated", &isolated)
            .field("shared_state", &shared)
            .field("host_circuits", &hosts)
            .finish()
    }
}

impl CircuitBreakerBuilder {
    /// Failure ratio in (0, 1] at or above which a circuit opens (default 0.5).
    /// Applied in millionths, rounded down.
    pub fn failure_ratio(mut self, ratio: f64) -> Self {
        self.failure_ratio = ratio;
        self
    }

    /// Window over which the ratio is measured, 500 ms ..= 1 h (default 10 s),
    /// counted in 10 buckets of a tenth each.
    pub fn sampling_duration(mut self, window: Duration) -> Self {
        self.sampling_duration = window;
        self
    }

    /// Attempts needed within the window before a circuit may open, at least 2
    /// (default 100). A host with less traffic never opens its circuit.
    pub fn minimum_throughput(mut self, attempts: u32) -> Self {
        self.minimum_throughput = attempts;
        self
    }

    /// How long an open circuit refuses before a probe, 10 ms ..= 24 h (default 5 s).
    pub fn break_duration(mut self, duration: Duration) -> Self {
        self.break_duration = duration;
        self
    }

    /// Probes admitted at once in half-open, at least 1 (default 1). A probe whose
    /// outcome never arrives stops counting after one break duration.
    pub fn probes(mut self, probes: u32) -> Self {
        self.probes = probes;
        self
    }

    /// Give each host its own circuit (default `true`; up to 1024 hosts, further
    /// ones share one circuit).
    pub fn per_host(mut self, yes: bool) -> Self {
        self.per_host = yes;
        self
    }

    /// Validate the settings and build the breaker.
    ///
    /// # Errors
    /// [`InvalidBreaker`] names the first setting out of range.
    pub fn build(self) -> Result<CircuitBreaker, InvalidBreaker> {
        let ratio = self.failure_ratio;
        if !(ratio.is_finite() && ratio > 0.0 && ratio <= 1.0) {
            return Err(InvalidBreaker::FailureRatio(ratio));
        }
        if !(MIN_SAMPLING..=MAX_SAMPLING).contains(&self.sampling_duration) {
            return Err(InvalidBreaker::SamplingDuration(self.sampling_duration));
        }
        if self.minimum_throughput < 2 {
            return Err(InvalidBreaker::MinimumThroughput(self.minimum_throughput));
        }
        if !(MIN_BREAK..=MAX_BREAK).contains(&self.break_duration) {
            return Err(InvalidBreaker::BreakDuration(self.break_duration));
        }
        if self.probes == 0 {
            return Err(InvalidBreaker::Probes);
        }
        Ok(self.build_unchecked(Instant::now()))
    }

    fn build_unchecked(self, origin: Instant) -> CircuitBreaker {
        let scale = SCALE as f64;
        // Largest n with n / 10^6 <= ratio.
        let mut ratio_scaled = (self.failure_ratio * scale).floor().clamp(1.0, scale) as u64;
        while ratio_scaled > 1 && ratio_scaled as f64 / scale > self.failure_ratio {
            ratio_scaled -= 1;
        }
        CircuitBreaker {
            inner: Arc::new(Inner {
                failure_ratio: self.failure_ratio,
                ratio_scaled,
                sampling_duration: self.sampling_duration,
                epochs: Epochs::new(origin, self.sampling_duration),
                minimum_throughput: self.minimum_throughput,
                break_duration: self.break_duration,
                probes: self.probes,
                per_host: self.per_host,
                state: Mutex::new(State::default()),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attempt_log::AttemptOutcome;

    const H: &str = "api.example.com";

    fn at(base: Instant, ms: u64) -> GateScope<'static> {
        GateScope {
            host: H,
            now: base + Duration::from_millis(ms),
            attempt: 1,
            retry_cause: None,
        }
    }

    fn on(host: &'static str, base: Instant, ms: u64) -> GateScope<'static> {
        GateScope {
            host,
            ..at(base, ms)
        }
    }

    fn outcome() -> AttemptOutcome {
        AttemptOutcome::Status(http::StatusCode::SERVICE_UNAVAILABLE)
    }

    fn ok() -> AttemptOutcome {
        AttemptOutcome::Status(http::StatusCode::OK)
    }

    /// ratio 0.5, window 10 s, 10 attempts, break 1 s, 1 probe; origin `base`.
    fn breaker(per_host: bool) -> (CircuitBreaker, Instant) {
        let base = Instant::now();
        let b = CircuitBreaker::builder()
            .failure_ratio(0.5)
            .sampling_duration(Duration::from_secs(10))
            .minimum_throughput(10)
            .break_duration(Duration::from_secs(1))
            .per_host(per_host)
            .build_unchecked(base);
        (b, base)
    }

    fn feed(b: &CircuitBreaker, scope: &GateScope<'_>, failures: u32, successes: u32) {
        for _ in 0..successes {
            b.admit(scope).unwrap();
            b.attempt_finished(scope, &ok(), false);
        }
        for _ in 0..failures {
            let _ = b.admit(scope);
            b.attempt_finished(scope, &outcome(), true);
        }
    }

    #[test]
    fn defaults_are_the_documented_ones() {
        let b = CircuitBreaker::default();
        assert_eq!(b.failure_ratio(), 0.5);
        assert_eq!(b.sampling_duration(), Duration::from_secs(10));
        assert_eq!(b.minimum_throughput(), 100);
        assert_eq!(b.break_duration(), Duration::from_secs(5));
        assert_eq!(b.probes(), 1);
        assert!(b.is_per_host());
        assert_eq!(b.state(H), CircuitState::Closed);
        assert_eq!(b.name(), "circuit_breaker");
    }

    #[test]
    fn opens_at_the_ratio_only_with_the_minimum_throughput() {
        let (b, t) = breaker(false);
        // 9 failures: below the minimum throughput of 10, stays closed.
        feed(&b, &at(t, 0), 9, 0);
        assert_eq!(b.state(H), CircuitState::Closed);
        // The ratio, on a fresh breaker.
        let (b, t) = breaker(false);
        feed(&b, &at(t, 0), 4, 6); // 4/10 < 0.5
        assert_eq!(b.state(H), CircuitState::Closed);
        feed(&b, &at(t, 0), 1, 0); // 5/11 < 0.5
        assert_eq!(b.state(H), CircuitState::Closed);
        feed(&b, &at(t, 0), 1, 0); // 6/12 = 0.5: opens
        assert_eq!(b.state(H), CircuitState::Open);
    }

    #[test]
    fn old_outcomes_leave_the_window() {
        let (b, t) = breaker(false);
        feed(&b, &at(t, 0), 9, 0);
        // 10 s later the 9 failures are gone: 9 more still do not reach 10 attempts.
        feed(&b, &at(t, 10_000), 9, 0);
        assert_eq!(b.state(H), CircuitState::Closed);
        feed(&b, &at(t, 10_000), 1, 0);
        assert_eq!(b.state(H), CircuitState::Open);
    }

    #[test]
    fn open_refuses_with_the_time_until_the_probe_then_one_probe_closes_it() {
        let (b, t) = breaker(false);
        feed(&b, &at(t, 0), 10, 0);
        assert_eq!(b.state(H), CircuitState::Open);
        let refusal = b.admit(&at(t, 400)).unwrap_err();
        assert_eq!(refusal.gate(), "circuit_breaker");
        assert_eq!(refusal.retry_after(), Some(Duration::from_millis(600)));
        // The break ends: one probe goes, a second waits for it.
        b.admit(&at(t, 1_000)).unwrap();
        assert_eq!(b.state(H), CircuitState::HalfOpen);
        let second = b.admit(&at(t, 1_100)).unwrap_err();
        assert_eq!(second.retry_after(), Some(Duration::from_millis(900)));
        b.attempt_finished(&at(t, 1_200), &ok(), false);
        assert_eq!(b.state(H), CircuitState::Closed);
        // Closed with an empty window: the outage's failures do not reopen it.
        feed(&b, &at(t, 1_300), 9, 0);
        assert_eq!(b.state(H), CircuitState::Closed);
    }

    #[test]
    fn a_failed_probe_opens_it_for_another_break() {
        let (b, t) = breaker(false);
        feed(&b, &at(t, 0), 10, 0);
        b.admit(&at(t, 1_000)).unwrap();
        b.attempt_finished(&at(t, 1_050), &outcome(), true);
        assert_eq!(b.state(H), CircuitState::Open);
        let refusal = b.admit(&at(t, 1_050)).unwrap_err();
        assert_eq!(refusal.retry_after(), Some(Duration::from_secs(1)));
        b.admit(&at(t, 2_050)).unwrap();
    }

    #[test]
    fn a_probe_that_never_reports_is_replaced_after_a_break() {
        let (b, t) = breaker(false);
        feed(&b, &at(t, 0), 10, 0);
        b.admit(&at(t, 1_000)).unwrap(); // its outcome never arrives
        assert!(b.admit(&at(t, 1_999)).is_err());
        b.admit(&at(t, 2_000)).unwrap();
        assert_eq!(b.state(H), CircuitState::HalfOpen);
    }

    #[test]
    fn several_probes_when_asked() {
        let base = Instant::now();
        let b = CircuitBreaker::builder()
            .minimum_throughput(2)
            .break_duration(Duration::from_secs(1))
            .probes(3)
            .build_unchecked(base);
        feed(&b, &at(base, 0), 2, 0);
        for _ in 0..3 {
            b.admit(&at(base, 1_000)).unwrap();
        }
        assert!(b.admit(&at(base, 1_000)).is_err());
    }

    #[test]
    fn successes_and_non_struggling_outcomes_do_not_count_as_failures() {
        let (b, t) = breaker(false);
        // 409 and 404 arrive with `struggling == false`: never a failure.
        for status in [409, 404, 409, 422, 409, 404, 409, 409, 409, 409, 409, 409] {
            b.admit(&at(t, 0)).unwrap();
            b.attempt_finished(
                &at(t, 0),
                &AttemptOutcome::Status(http::StatusCode::from_u16(status).unwrap()),
                false,
            );
        }
        feed(&b, &at(t, 0), 11, 0); // 11 / 23 < 0.5
        assert_eq!(b.state(H), CircuitState::Closed);
    }

    #[test]
    fn per_host_circuits_are_independent() {
        let (b, t) = breaker(true);
        feed(&b, &on("down.example", t, 0), 10, 0);
        assert_eq!(b.state("down.example"), CircuitState::Open);
        assert_eq!(b.state("up.example"), CircuitState::Closed);
        b.admit(&on("up.example", t, 10)).unwrap();
        assert!(b.admit(&on("down.example", t, 10)).is_err());
        // Shared: the same failures open it for everyone.
        let (b, t) = breaker(false);
        feed(&b, &on("down.example", t, 0), 10, 0);
        assert!(b.admit(&on("up.example", t, 10)).is_err());
    }

    #[test]
    fn isolate_and_reset() {
        let (b, t) = breaker(true);
        b.isolate();
        assert_eq!(b.state(H), CircuitState::Isolated);
        let refusal = b.admit(&at(t, 0)).unwrap_err();
        assert_eq!(refusal.retry_after(), None);
        b.reset();
        assert_eq!(b.state(H), CircuitState::Closed);
        feed(&b, &at(t, 0), 10, 0);
        assert_eq!(b.state(H), CircuitState::Open);
        b.reset();
        assert_eq!(b.state(H), CircuitState::Closed);
        b.admit(&at(t, 1)).unwrap();
    }

    #[test]
    fn builder_rejects_each_bad_setting_with_a_clear_error() {
        let b = CircuitBreaker::builder;
        let cases = [
            (
                b().failure_ratio(0.0).build(),
                InvalidBreaker::FailureRatio(0.0),
            ),
            (
                b().failure_ratio(1.5).build(),
                InvalidBreaker::FailureRatio(1.5),
            ),
            (
                b().sampling_duration(Duration::from_millis(10)).build(),
                InvalidBreaker::SamplingDuration(Duration::from_millis(10)),
            ),
            (
                b().minimum_throughput(1).build(),
                InvalidBreaker::MinimumThroughput(1),
            ),
            (
                b().break_duration(Duration::ZERO).build(),
                InvalidBreaker::BreakDuration(Duration::ZERO),
            ),
            (b().probes(0).build(), InvalidBreaker::Probes),
        ];
        for (result, expected) in cases {
            assert_eq!(result.unwrap_err(), expected);
        }
        assert!(b().failure_ratio(f64::NAN).build().is_err());
        assert!(b().failure_ratio(1.0).minimum_throughput(2).build().is_ok());
        let message = InvalidBreaker::FailureRatio(1.5).to_string();
        assert!(
            message.contains("(0, 1]") && message.contains("1.5"),
            "{message}"
        );
    }

    #[test]
    fn debug_shows_settings_and_state() {
        let (b, _) = breaker(true);
        let text = format!("{b:?} {:?}", CircuitBreaker::builder());
        assert!(
            text.contains("failure_ratio: 0.5") && text.contains("shared_state: Closed"),
            "{text}"
        );
        assert_eq!(CircuitState::HalfOpen.to_string(), "half_open");
    }
}
