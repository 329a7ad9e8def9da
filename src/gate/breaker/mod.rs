//! A circuit breaker gate: when most attempts to a service fail, stop sending the first
//! attempts too. The behaviour is documented on [`CircuitBreaker`].

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::attempt_log::AttemptOutcome;
use crate::gate::contract::{Gate, GateRefusal, GateScope, RetryCause};
use crate::gate::per_authority::PerAuthority;
use crate::gate::ratio::Millionths;
use crate::gate::settings::gate_settings;
use crate::gate::window::Epochs;

#[cfg_attr(not(feature = "unstable-model-rules"), allow(unreachable_pub))]
#[cfg_attr(
    feature = "unstable-model-rules",
    allow(missing_docs, missing_debug_implementations)
)]
pub(crate) mod phases;
mod trip;

use phases::{Event, Phase, Rules};
use trip::{Tally, TripRule};

/// The gate's name in refusals, logs and metrics.
const NAME: &str = "circuit_breaker";
/// Target of the state-change events.
const TARGET: &str = "reqwest_resilience::breaker";

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
///   authority — scheme, host and port ([`GateScope::authority`]) — has its own
///   circuit, so one dead service does not refuse intents to healthy ones, even on
///   the same host. **An authority whose traffic stays under the minimum
///   throughput within the sampling duration never opens its circuit**, however
///   many of its attempts fail: the budget and max attempts are all that protect it.
/// * Gates compose: when a gate asked after the breaker refuses an attempt the
///   breaker admitted as a probe, the probe's slot comes back at once
///   ([`Gate::not_sent`]), so the next intent is the probe.
/// * With a [`slow_call_duration`](CircuitBreakerBuilder::slow_call_duration), an
///   attempt that took at least that long counts as a failure whatever it
///   answered; first attempts still outstanding that long count as failed
///   attempts toward opening before they answer (a service that answers its 503s
///   only after a long wait opens the circuit as early as one that answers at
///   once); and a probe holds its slot at most that long.
/// * [`isolate`](CircuitBreaker::isolate) forces every circuit open until
///   [`reset`](CircuitBreaker::reset), which also closes them all;
///   [`state`](CircuitBreaker::state) reads one.
/// * In half-open the first outcome to arrive decides, as in Polly: a success
///   closes the circuit (with an empty window), a failure opens it for another
///   break. The gate cannot tell a probe's outcome from the late outcome of an
///   attempt admitted before the circuit opened. A probe whose outcome never
///   arrives (the caller dropped the intent) stops counting after one break
///   duration (or the slow call duration, when shorter), and another probe may go.
/// * Every change of state is a `tracing` event with target
///   `reqwest_resilience::breaker` (INFO; WARN when a circuit opens), with the
///   fields `gate`, `authority`, `from` and `to`.
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
/// | failure ratio | 0.5 | opens only when most attempts fail: with Polly's 0.1 a service answering 20 % random 503s (still serving 4 in 5) would be cut off, while at 0.5 random failures well under half of the traffic keep the circuit closed |
/// | sampling duration | 5 s | with a 0.5 ratio a window full of successes must be half replaced by failures before the circuit opens, so the circuit opens about half a window into an outage: Polly's 30 s would keep it closed for 15 s; 5 s opens it within about 3 s, after which only probes reach the dead service. Random failures well under half of the traffic (a service answering 20 % 503s) do not reach the ratio over 5 s any more than over 30 s once the minimum throughput is met |
/// | minimum throughput | 50 attempts | a few failures prove nothing, and at a 0.5 ratio 50 means at least 25 failures. Polly / MEHR's 100 is over a 30 s window; over 5 s it would ask 20 attempts a second of every client, and a service that answers its errors only after seconds hides that much of the window's traffic in flight, so a modest client would never open its circuit |
/// | break duration | 5 s | Polly / MEHR's standard value; P9's recovery time is bounded by it |
/// | probes in half-open | 1 | one request tells whether the service is back |
/// | per host | yes, per authority (scheme, host, port) | a down service must not refuse intents to healthy ones, even on the same host; up to 1024 tracked, past that the least recently used idle circuit makes room, or the new authority goes untracked (admitted) — never into another's circuit |
/// | slow call duration | off | a slow success is still a success for a busy payment API; turn it on for a service whose outages show as slow errors |
///
/// Whether a policy has a breaker at all is in [`RetryPolicy`](crate::RetryPolicy)'s
/// Defaults table.
#[derive(Clone)]
pub struct CircuitBreaker {
    inner: Arc<Inner>,
}

gate_settings! {
    /// A breaker's settings, as the builder holds them and the built breaker keeps them.
    struct Settings for CircuitBreaker, CircuitBreakerBuilder {
        /// Failure ratio in (0, 1] at or above which a circuit opens (default 0.5).
        /// Applied in millionths, rounded down.
        failure_ratio: f64 = 0.5
            => /// The failure ratio at or above which a circuit opens.
            failure_ratio;
        /// Window over which the ratio is measured, 500 ms ..= 1 h (default 5 s),
        /// counted in 10 buckets of a tenth each.
        sampling_duration: Duration = Duration::from_secs(5)
            => /// The window over which the ratio is measured.
            sampling_duration;
        /// Attempts needed within the window before a circuit may open, at least 2
        /// (default 50). An authority with less traffic never opens its circuit.
        minimum_throughput: u32 = 50
            => /// Attempts needed in the window before a circuit may open.
            minimum_throughput;
        /// How long an open circuit refuses before a probe, 10 ms ..= 24 h (default 5 s).
        break_duration: Duration = Duration::from_secs(5)
            => /// How long a circuit stays open before a probe.
            break_duration;
        /// Probes admitted at once in half-open, at least 1 (default 1). A probe whose
        /// outcome never arrives stops counting after one break duration (or the slow
        /// call duration, when shorter).
        probes: u32 = 1
            => /// Probes admitted at once in half-open.
            probes;
        /// Give each authority (scheme, host, port) its own circuit (default `true`).
        /// Up to 1024 are tracked; past that a new one takes the place of the least
        /// recently used idle circuit, or, when none is idle, is admitted untracked —
        /// never put into another's circuit.
        per_host: bool = true
            => /// Whether each authority has its own circuit.
            is_per_host;
        /// Count an attempt that took at least this long as a failure, whatever it
        /// answered; count first attempts still outstanding that long as failed
        /// attempts toward opening, before they answer (tracked in whole slots of a
        /// tenth of the sampling duration); and let a probe hold its slot at most that
        /// long (default: off, 10 ms ..= 24 h when set). Off by default because a slow success is still a
        /// success for a payment API that is merely busy; turn it on for a service
        /// whose outages show as slow errors (a gateway answering 503 after its own
        /// timeout), so that they count as soon as they end rather than never.
        slow_call_duration: Option<Duration> = None
            => /// An attempt that takes at least this long counts as a failure, and a probe
            /// holds its slot at most this long; `None` when slow attempts count by their
            /// outcome alone.
            slow_call_duration;
    }
}

/// Builder for [`CircuitBreaker`]; setters never fail, [`build`](Self::build) validates.
#[derive(Debug, Clone)]
pub struct CircuitBreakerBuilder {
    settings: Settings,
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
    /// The slow call duration was shorter than 10 ms or longer than a day.
    #[error("circuit breaker slow call duration must be between 10 ms and 24 h, got {0:?}")]
    SlowCallDuration(Duration),
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
    settings: Settings,
    trip: TripRule,
    rules: Rules,
    /// The circuits, and beside them whether the breaker is isolated.
    circuits: PerAuthority<Circuit, bool>,
}

#[derive(Default)]
struct Circuit {
    phase: Phase,
    tally: Tally,
}

impl Circuit {
    /// Nothing to remember: closed, nothing counted, nothing out.
    fn is_idle(&self, epoch: u64) -> bool {
        self.phase == Phase::Closed && self.tally.is_empty(epoch)
    }
}

impl Inner {
    /// Applies `event` to the circuit of `scope`'s authority; the verdict of an
    /// `Admit`: go, or the time until a probe may go (`None` while isolated). An
    /// authority the breaker cannot track is admitted.
    fn on(&self, scope: &GateScope<'_>, event: Event) -> Result<(), Option<Duration>> {
        let now = scope.now();
        let epoch = self.trip.epochs.of(now);
        let mut circuits = self.circuits.lock();
        let isolated = circuits.extra;
        if isolated {
            return Err(None);
        }
        let Some(circuit) = circuits.entry(scope.authority(), |c| c.is_idle(epoch)) else {
            return Ok(());
        };
        let first = scope.retry_cause().is_none() && scope.attempt() == 1;
        let event = match event {
            Event::Finished { failed, .. } if circuit.phase == Phase::Closed => {
                let tripped = circuit.tally.record(failed, epoch, &self.trip);
                Event::Finished { failed, tripped }
            }
            other => other,
        };
        let mut changes = [None, None];
        let asks = matches!(event, Event::Admit | Event::AdmitHedge);
        if asks
            && circuit.phase == Phase::Closed
            && circuit.tally.is_stalled(now, epoch, &self.trip)
        {
            changes[0] = self.apply(circuit, Event::Stalled, now).change;
        }
        let step = self.apply(circuit, event, now);
        changes[1] = step.change;
        if self.trip.slow_call_duration.is_some() && first {
            self.track_in_flight(circuit, scope, event, step.verdict, epoch);
        }
        drop(circuits);
        for (from, to) in changes.into_iter().flatten() {
            log_change(scope.authority(), from, to);
        }
        step.verdict.unwrap_or(Ok(())).map_err(Some)
    }

    /// `event`'s step on `circuit`; a change of phase starts empty windows.
    fn apply(&self, circuit: &mut Circuit, event: Event, now: Instant) -> phases::Step {
        let step = phases::step(circuit.phase, event, now, self.rules);
        circuit.phase = step.phase;
        if step.change.is_some() {
            circuit.tally = Tally::default();
        }
        step
    }

    /// Counts a first attempt out when admitted, and back in when it ends or is
    /// not sent (in the slot of its admission, which for a first attempt is its
    /// start).
    fn track_in_flight(
        &self,
        circuit: &mut Circuit,
        scope: &GateScope<'_>,
        event: Event,
        verdict: Option<Result<(), Duration>>,
        epoch: u64,
    ) {
        match (event, verdict) {
            (Event::Admit, Some(Ok(()))) => circuit.tally.sent(epoch),
            (Event::Finished { .. } | Event::NotSent, _) => {
                let started = scope.now().checked_sub(scope.attempt_duration());
                circuit.tally.returned(started, &self.trip);
            }
            _ => {}
        }
    }
}

fn log_change(authority: &str, from: CircuitState, to: CircuitState) {
    if to == CircuitState::Open {
        tracing::warn!(
            target: TARGET,
            gate = NAME,
            authority,
            from = from.as_str(),
            to = to.as_str(),
            "circuit opened: attempts are refused until a probe succeeds"
        );
    } else {
        tracing::info!(
            target: TARGET,
            gate = NAME,
            authority,
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
            settings: Settings::default(),
        }
    }

    /// A breaker with every default.
    pub fn new_default() -> CircuitBreaker {
        Self::builder().build_unchecked(Instant::now())
    }

    /// The state of the circuit of `authority` (`scheme://host[:port]`, as
    /// [`GateScope::authority`] spells it; of the one shared circuit unless per
    /// host). An authority the breaker does not track reads `Closed`. With the
    /// breaker isolated, [`CircuitState::Isolated`] for every authority.
    pub fn state(&self, authority: &str) -> CircuitState {
        let circuits = self.inner.circuits.lock();
        let isolated = circuits.extra;
        if isolated {
            return CircuitState::Isolated;
        }
        circuits
            .get(authority)
            .map_or(CircuitState::Closed, |c| c.phase.state())
    }

    /// Forces every circuit open: every attempt is refused (without a time until a
    /// probe) until [`reset`](Self::reset). For maintenance windows and incident
    /// response.
    pub fn isolate(&self) {
        let was = std::mem::replace(&mut self.inner.circuits.lock().extra, true);
        if !was {
            tracing::warn!(target: TARGET, gate = NAME, authority = "*", from = "any", to = "isolated", "circuit isolated by hand");
        }
    }

    /// Forces every circuit closed with an empty window, and ends an
    /// [`isolate`](Self::isolate).
    pub fn reset(&self) {
        let mut circuits = self.inner.circuits.lock();
        circuits.extra = false; // no longer isolated
        circuits.clear();
        drop(circuits);
        tracing::info!(target: TARGET, gate = NAME, authority = "*", from = "any", to = "closed", "circuit reset by hand");
    }
}

/// Asked before every attempt (first ones included): refuses while the
/// authority's circuit is open; counts every attempt's outcome; a probe that a
/// later gate refused gives its slot back at once.
impl Gate for CircuitBreaker {
    fn name(&self) -> &str {
        NAME
    }

    fn admit(&self, scope: &GateScope<'_>) -> Result<(), GateRefusal> {
        // A hedge only while closed: a half-open circuit's probe is never hedged.
        let event = if scope.retry_cause() == Some(RetryCause::Hedge) {
            Event::AdmitHedge
        } else {
            Event::Admit
        };
        self.inner.on(scope, event).map_err(|wait| {
            let refusal = GateRefusal::new(NAME).with_authority(scope.authority());
            match wait {
                Some(wait) => refusal.with_retry_after(wait),
                None => refusal, // isolated: no time to promise
            }
        })
    }

    fn attempt_finished(&self, scope: &GateScope<'_>, _: &AttemptOutcome, struggling: bool) {
        let slow = self
            .inner
            .settings
            .slow_call_duration
            .is_some_and(|slow| scope.attempt_duration() >= slow);
        let failed = struggling || slow;
        let _ = self.inner.on(
            scope,
            Event::Finished {
                failed,
                tripped: false,
            },
        );
    }

    fn not_sent(&self, scope: &GateScope<'_>) {
        let _ = self.inner.on(scope, Event::NotSent);
    }

    /// A cancelled copy is neither a success nor a failure: like an attempt not
    /// sent, a half-open probe slot comes back and nothing is counted.
    fn attempt_cancelled(&self, scope: &GateScope<'_>) {
        let _ = self.inner.on(scope, Event::NotSent);
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
        let circuits = inner.circuits.lock();
        let (isolated, shared, authorities) = (
            circuits.extra,
            circuits.shared().phase.state(),
            circuits.tracked(),
        );
        drop(circuits);
        f.debug_struct("CircuitBreaker")
            .field("settings", &inner.settings)
            .field("isolated", &isolated)
            .field("shared_state", &shared)
            .field("authority_circuits", &authorities)
            .finish()
    }
}

impl CircuitBreakerBuilder {
    /// Validate the settings and build the breaker.
    ///
    /// # Errors
    /// [`InvalidBreaker`] names the first setting out of range.
    pub fn build(self) -> Result<CircuitBreaker, InvalidBreaker> {
        let s = self.settings;
        let ratio = s.failure_ratio;
        if !(ratio.is_finite() && ratio > 0.0 && ratio <= 1.0) {
            return Err(InvalidBreaker::FailureRatio(ratio));
        }
        if !(MIN_SAMPLING..=MAX_SAMPLING).contains(&s.sampling_duration) {
            return Err(InvalidBreaker::SamplingDuration(s.sampling_duration));
        }
        if s.minimum_throughput < 2 {
            return Err(InvalidBreaker::MinimumThroughput(s.minimum_throughput));
        }
        if !(MIN_BREAK..=MAX_BREAK).contains(&s.break_duration) {
            return Err(InvalidBreaker::BreakDuration(s.break_duration));
        }
        if s.probes == 0 {
            return Err(InvalidBreaker::Probes);
        }
        if let Some(slow) = s.slow_call_duration {
            if !(MIN_BREAK..=MAX_BREAK).contains(&slow) {
                return Err(InvalidBreaker::SlowCallDuration(slow));
            }
        }
        Ok(self.build_unchecked(Instant::now()))
    }

    fn build_unchecked(self, origin: Instant) -> CircuitBreaker {
        let s = self.settings;
        let probe_lease = s
            .slow_call_duration
            .map_or(s.break_duration, |slow| slow.min(s.break_duration));
        CircuitBreaker {
            inner: Arc::new(Inner {
                settings: s,
                trip: TripRule {
                    // At least a millionth: a ratio of 0 would open on any failure.
                    ratio: Millionths::floor(s.failure_ratio, 1).max(Millionths::floor(1e-6, 1)),
                    minimum_throughput: u64::from(s.minimum_throughput),
                    slow_call_duration: s.slow_call_duration,
                    epochs: Epochs::new(origin, s.sampling_duration),
                },
                rules: Rules {
                    break_duration: s.break_duration,
                    probes: s.probes,
                    probe_lease,
                },
                circuits: PerAuthority::new(s.per_host, false),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attempt_log::AttemptOutcome;
    use crate::gate::authority::MAX_AUTHORITIES;

    const H: &str = "https://api.example.com";

    fn at(base: Instant, ms: u64) -> GateScope<'static> {
        GateScope {
            host: "api.example.com",
            authority: H,
            now: base + Duration::from_millis(ms),
            attempt: 1,
            retry_cause: None,
            attempt_duration: Duration::ZERO,
        }
    }

    fn on(authority: &'static str, base: Instant, ms: u64) -> GateScope<'static> {
        GateScope {
            authority,
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
        assert_eq!(b.sampling_duration(), Duration::from_secs(5));
        assert_eq!(b.minimum_throughput(), 50);
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
    fn circuits_are_per_authority_not_per_host_name() {
        let (b, t) = breaker(true);
        let down = "http://127.0.0.1:8081";
        let up = "http://127.0.0.1:8082";
        feed(&b, &on(down, t, 0), 10, 0);
        assert_eq!(b.state(down), CircuitState::Open);
        assert_eq!(b.state(up), CircuitState::Closed);
        for _ in 0..1_000 {
            b.admit(&on(up, t, 10)).unwrap();
        }
        let refusal = b.admit(&on(down, t, 10)).unwrap_err();
        assert_eq!(refusal.authority(), Some(down));
        let text = refusal.to_string();
        assert!(
            text.contains("circuit_breaker") && text.contains(down) && text.contains("990 ms"),
            "{text}"
        );
    }

    #[test]
    fn a_probe_that_was_not_sent_gives_its_slot_back_at_once() {
        let (b, t) = breaker(false);
        feed(&b, &at(t, 0), 10, 0);
        b.admit(&at(t, 1_000)).unwrap(); // the probe; a later gate refuses it
        b.not_sent(&at(t, 1_000));
        b.admit(&at(t, 1_001)).unwrap(); // the next intent is the probe
        assert_eq!(b.state(H), CircuitState::HalfOpen);
        b.attempt_finished(&at(t, 1_002), &ok(), false);
        assert_eq!(b.state(H), CircuitState::Closed);
    }

    #[test]
    fn slow_attempts_count_as_failures_and_a_slow_probe_frees_its_slot() {
        let base = Instant::now();
        let b = CircuitBreaker::builder()
            .minimum_throughput(10)
            .break_duration(Duration::from_secs(5))
            .slow_call_duration(Some(Duration::from_secs(1)))
            .build_unchecked(base);
        let slow = GateScope {
            attempt_duration: Duration::from_millis(1_000),
            ..at(base, 0)
        };
        // Ten slow successes: a slow service opens the circuit.
        for _ in 0..10 {
            b.admit(&at(base, 0)).unwrap();
            b.attempt_finished(&slow, &ok(), false);
        }
        assert_eq!(b.state(H), CircuitState::Open);
        // The probe goes at 5 s and hangs; its slot is free after 1 s, not 5 s.
        b.admit(&at(base, 5_000)).unwrap();
        assert!(b.admit(&at(base, 5_999)).is_err());
        b.admit(&at(base, 6_000)).unwrap();
        // Without the setting a slow success is a success.
        let (b, t) = breaker(false);
        let slow = GateScope {
            attempt_duration: Duration::from_secs(60),
            ..at(t, 0)
        };
        for _ in 0..20 {
            b.admit(&at(t, 0)).unwrap();
            b.attempt_finished(&slow, &ok(), false);
        }
        assert_eq!(b.state(H), CircuitState::Closed);
    }

    #[test]
    fn first_attempts_outstanding_past_the_slow_call_duration_count_toward_opening() {
        let base = Instant::now();
        let b = CircuitBreaker::builder()
            .sampling_duration(Duration::from_secs(10)) // slots of 1 s
            .minimum_throughput(10)
            .slow_call_duration(Some(Duration::from_secs(1)))
            .build_unchecked(base);
        feed(&b, &at(base, 0), 0, 20); // 20 successes
                                       // 30 first attempts go out at 1 s; 25 answer within 500 ms, 5 hang.
        for _ in 0..30 {
            b.admit(&at(base, 1_000)).unwrap();
        }
        let answered = GateScope {
            attempt_duration: Duration::from_millis(500),
            ..at(base, 1_500)
        };
        for _ in 0..25 {
            b.attempt_finished(&answered, &ok(), false);
        }
        // 5 stalled against 45 answered: far from the ratio.
        b.admit(&at(base, 3_000)).unwrap();
        assert_eq!(b.state(H), CircuitState::Closed);
        // 40 more hang from 3 s: once their slot is a whole second old (5 s),
        // 45 stalled against 45 successes reach the ratio before any answers.
        for _ in 0..40 {
            b.admit(&at(base, 3_000)).unwrap();
        }
        b.admit(&at(base, 4_999)).unwrap();
        assert_eq!(b.state(H), CircuitState::Closed);
        let refusal = b.admit(&at(base, 5_000)).unwrap_err();
        assert_eq!(refusal.retry_after(), Some(Duration::from_secs(5)));
        assert_eq!(b.state(H), CircuitState::Open);
        // Without the setting, nothing counts until it ends.
        let (b, t) = breaker(false);
        feed(&b, &at(t, 0), 0, 20);
        for _ in 0..100 {
            b.admit(&at(t, 1_000)).unwrap();
        }
        b.admit(&at(t, 9_000)).unwrap();
        assert_eq!(b.state(H), CircuitState::Closed);
    }

    #[test]
    fn past_the_bound_a_new_authority_never_shares_a_circuit() {
        let (b, t) = breaker(true);
        // Every tracked circuit busy (open).
        for i in 0..MAX_AUTHORITIES {
            let authority: &'static str = Box::leak(format!("http://h{i}").into_boxed_str());
            feed(&b, &on(authority, t, 0), 10, 0);
        }
        // A new authority is admitted, untracked, however it fails.
        let new = "http://new.example";
        feed(&b, &on(new, t, 0), 50, 0);
        b.admit(&on(new, t, 1)).unwrap();
        assert_eq!(b.state(new), CircuitState::Closed);
        // Once the old circuits have closed and emptied, it gets its own.
        for i in 0..MAX_AUTHORITIES {
            let authority: &'static str = Box::leak(format!("http://h{i}").into_boxed_str());
            b.admit(&on(authority, t, 1_000)).unwrap();
            b.attempt_finished(&on(authority, t, 1_000), &ok(), false);
        }
        feed(&b, &on(new, t, 1_000), 10, 0);
        assert_eq!(b.state(new), CircuitState::Open);
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
