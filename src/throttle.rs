//! Adaptive throttling (Google SRE client-side throttling) as a gate. The behaviour
//! is documented on [`AdaptiveThrottle`].

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::attempt_log::AttemptOutcome;
use crate::gate::{Gate, GateRefusal, GateScope};
use crate::window::{Counts, Epochs, Window};

const NAME: &str = "adaptive_throttle";
/// Fixed-point scale of K (millionths).
const SCALE: u64 = 1_000_000;

pub(crate) const DEFAULT_K: f64 = 2.0;
pub(crate) const DEFAULT_WINDOW: Duration = Duration::from_secs(10);
const MIN_WINDOW: Duration = Duration::from_millis(500);
const MAX_WINDOW: Duration = Duration::from_secs(3600);
const MAX_K: f64 = 1000.0;

/// Adaptive throttling: reject locally, with a probability that grows as the
/// backend accepts less of what it is sent.
///
/// Google's SRE book ("Handling Overload", client-side throttling) has every
/// client remember, over a recent window, how many **requests** the application
/// asked for and how many the backend **accepted**, and reject a new request
/// locally with probability
///
/// ```text
/// max(0, (requests − K · accepts) / (requests + 1))
/// ```
///
/// While the backend accepts everything the probability is 0 (K ≥ 1). With K = 2
/// local rejection starts only once more than half of the requests fail, and the
/// backend then keeps receiving about K times what it accepts: enough to notice
/// when it recovers, far less than a full retry storm. Rejected requests count
/// as requests, so a backend that accepts nothing is sent almost nothing.
///
/// Here a *request* is an **attempt** (first attempts and retries alike): one the
/// throttle rejected, counted when it rejects it, or one that went out, counted
/// when its outcome arrives ([`Gate::attempt_finished`]). Attempts still in
/// flight are not counted yet: otherwise a burst of first attempts at start-up
/// (requests counted, no accept arrived yet) would already be throttled, and
/// every rejection would push the probability higher — a spiral the formula is
/// slow to leave. An *accept* is an attempt whose outcome was not *struggling*:
/// a response that is neither a transient status nor a transport failure — a
/// 409 "in progress" or a 404 is an accept, the backend did its job. Counts live
/// in 10 buckets of `window / 10` each.
///
/// Once the probability is near 1 (the backend accepted nothing for a whole
/// window), only about one attempt in `requests + 1` goes out, and each accept
/// lowers it by K requests' worth: after an outage the throttle eases off over
/// several windows, not at once (see P9 in the benchmark).
///
/// Unlike a circuit breaker the throttle has no break and no probe: it eases off
/// as the accepts come back, so after an outage it recovers over about half a
/// window rather than at once. Its randomness can be seeded
/// ([`AdaptiveThrottleBuilder::seed`]) for repeatable tests and benchmarks.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use reqwest_resilience::{AdaptiveThrottle, RetryPolicy};
///
/// let throttle = AdaptiveThrottle::builder()
///     .k(2.0)
///     .window(Duration::from_secs(10))
///     .build()?;
/// let policy = RetryPolicy::builder().gate(throttle).build()?;
/// # drop(policy);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Cloning is cheap and yields a handle to the *same* throttle (one window for
/// every host of the policies holding it).
///
/// # Defaults
///
/// | setting | default | why |
/// |---|---|---|
/// | K | 2 | the SRE book's value: rejection starts past 50 % failures; the backend keeps seeing about 2× what it accepts |
/// | window | 10 s | the retry budget's window; the SRE book uses 2 min, which reacts to a 15 s outage not at all (P9) |
/// | randomness | seeded from the thread-local RNG | seed it for repeatable tests |
///
/// Whether a policy has a throttle at all is in [`RetryPolicy`](crate::RetryPolicy)'s
/// Defaults table (it does not: see P9).
#[derive(Clone)]
pub struct AdaptiveThrottle {
    inner: Arc<Inner>,
}

/// Builder for [`AdaptiveThrottle`]; setters never fail, [`build`](Self::build) validates.
#[derive(Debug, Clone)]
pub struct AdaptiveThrottleBuilder {
    k: f64,
    window: Duration,
    seed: Option<u64>,
}

/// Why an [`AdaptiveThrottleBuilder`] could not build a throttle.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidThrottle {
    /// K was not a finite number in [1, 1000].
    #[error("adaptive throttle K must be a finite number in [1, 1000], got {0}")]
    K(f64),
    /// The window was shorter than 500 ms or longer than 1 h.
    #[error("adaptive throttle window must be between 500 ms and 1 h, got {0:?}")]
    Window(Duration),
}

struct Inner {
    k: f64,
    k_scaled: u64,
    window: Duration,
    epochs: Epochs,
    state: Mutex<State>,
}

struct State {
    window: Window<Traffic>,
    rng: StdRng,
}

/// What one bucket of the window counts.
#[derive(Clone, Copy, Default)]
struct Traffic {
    requests: u64,
    accepts: u64,
}

impl Counts for Traffic {
    fn saturating_add(self, other: Self) -> Self {
        Traffic {
            requests: self.requests.saturating_add(other.requests),
            accepts: self.accepts.saturating_add(other.accepts),
        }
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The rejection probability as (numerator, denominator) in millionths:
    /// `max(0, requests − K·accepts) / (requests + 1)`, exactly.
    fn odds(&self, Traffic { requests, accepts }: Traffic) -> (u128, u128) {
        let asked = u128::from(requests) * u128::from(SCALE);
        let earned = u128::from(accepts) * u128::from(self.k_scaled);
        let denominator = (u128::from(requests) + 1) * u128::from(SCALE);
        (asked.saturating_sub(earned), denominator)
    }
}

impl AdaptiveThrottle {
    /// A builder starting from the defaults (see [`AdaptiveThrottle`]'s Defaults).
    pub fn builder() -> AdaptiveThrottleBuilder {
        AdaptiveThrottleBuilder {
            k: DEFAULT_K,
            window: DEFAULT_WINDOW,
            seed: None,
        }
    }

    /// A throttle with every default.
    pub fn new_default() -> AdaptiveThrottle {
        Self::builder().build_unchecked(Instant::now())
    }

    /// The probability that an attempt asked about at `now` is rejected, from the
    /// counts in the window (for logs and tests).
    pub fn rejection_probability_at(&self, now: Instant) -> f64 {
        let inner = &*self.inner;
        let counts = inner.lock().window.sum(inner.epochs.of(now));
        let (numerator, denominator) = inner.odds(counts);
        numerator as f64 / denominator as f64
    }

    /// The multiplier K.
    pub fn k(&self) -> f64 {
        self.inner.k
    }

    /// The window over which requests and accepts are counted.
    pub fn window(&self) -> Duration {
        self.inner.window
    }
}

/// Asked before every attempt: rejects it with the SRE probability (a rejection
/// counts as a request at once); every attempt that went out counts as a request
/// when it ends, and as an accept too when it was not struggling.
impl Gate for AdaptiveThrottle {
    fn name(&self) -> &str {
        NAME
    }

    fn admit(&self, scope: &GateScope<'_>) -> Result<(), GateRefusal> {
        let inner = &*self.inner;
        let epoch = inner.epochs.of(scope.now());
        let mut state = inner.lock();
        let (numerator, denominator) = inner.odds(state.window.sum(epoch));
        if numerator == 0 || state.rng.random_range(0..denominator) >= numerator {
            // Counted once its outcome is known (`attempt_finished`).
            return Ok(());
        }
        let bucket = state.window.slot(epoch);
        bucket.requests = bucket.requests.saturating_add(1);
        drop(state);
        Err(GateRefusal::new(NAME))
    }

    fn attempt_finished(&self, scope: &GateScope<'_>, _: &AttemptOutcome, struggling: bool) {
        let inner = &*self.inner;
        let epoch = inner.epochs.of(scope.now());
        let mut state = inner.lock();
        let bucket = state.window.slot(epoch);
        bucket.requests = bucket.requests.saturating_add(1);
        bucket.accepts = bucket.accepts.saturating_add(u64::from(!struggling));
    }
}

impl Default for AdaptiveThrottle {
    fn default() -> Self {
        Self::new_default()
    }
}

impl fmt::Debug for AdaptiveThrottle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = &*self.inner;
        let Traffic { requests, accepts } =
            inner.lock().window.sum(inner.epochs.of(Instant::now()));
        f.debug_struct("AdaptiveThrottle")
            .field("k", &inner.k)
            .field("window", &inner.window)
            .field("requests_in_window", &requests)
            .field("accepts_in_window", &accepts)
            .finish()
    }
}

impl AdaptiveThrottleBuilder {
    /// The multiplier K in [1, 1000] (default 2). Lower rejects earlier: K = 1.1
    /// starts once about 10 % of requests fail. Applied in millionths, rounded down.
    pub fn k(mut self, k: f64) -> Self {
        self.k = k;
        self
    }

    /// The window over which requests and accepts are counted, 500 ms ..= 1 h
    /// (default 10 s), in 10 buckets of a tenth each.
    pub fn window(mut self, window: Duration) -> Self {
        self.window = window;
        self
    }

    /// Seed the random draws, for repeatable tests and benchmarks.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Validate the settings and build the throttle.
    ///
    /// # Errors
    /// [`InvalidThrottle`] names the first setting out of range.
    pub fn build(self) -> Result<AdaptiveThrottle, InvalidThrottle> {
        if !(self.k.is_finite() && (1.0..=MAX_K).contains(&self.k)) {
            return Err(InvalidThrottle::K(self.k));
        }
        if !(MIN_WINDOW..=MAX_WINDOW).contains(&self.window) {
            return Err(InvalidThrottle::Window(self.window));
        }
        Ok(self.build_unchecked(Instant::now()))
    }

    fn build_unchecked(self, origin: Instant) -> AdaptiveThrottle {
        let seed = self.seed.unwrap_or_else(|| rand::rng().random());
        AdaptiveThrottle {
            inner: Arc::new(Inner {
                k: self.k,
                k_scaled: (self.k * SCALE as f64).floor() as u64,
                window: self.window,
                epochs: Epochs::new(origin, self.window),
                state: Mutex::new(State {
                    window: Window::default(),
                    rng: StdRng::seed_from_u64(seed),
                }),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(now: Instant) -> GateScope<'static> {
        GateScope {
            host: "api.example.com",
            now,
            attempt: 1,
            retry_cause: None,
        }
    }

    fn throttle(k: f64, seed: u64) -> (AdaptiveThrottle, Instant) {
        let base = Instant::now();
        let t = AdaptiveThrottle::builder()
            .k(k)
            .seed(seed)
            .build_unchecked(base);
        (t, base)
    }

    fn outcome() -> AttemptOutcome {
        AttemptOutcome::Status(http::StatusCode::OK)
    }

    /// One attempt to a failing backend: `true` if the throttle rejected it.
    fn fail(t: &AdaptiveThrottle, now: &GateScope<'_>) -> bool {
        match t.admit(now) {
            Ok(()) => {
                let failed = AttemptOutcome::Status(http::StatusCode::SERVICE_UNAVAILABLE);
                t.attempt_finished(now, &failed, true);
                false
            }
            Err(_) => true,
        }
    }

    /// The SRE formula, in floats, as the book writes it.
    fn formula(requests: u64, accepts: u64, k: f64) -> f64 {
        ((requests as f64 - k * accepts as f64) / (requests as f64 + 1.0)).max(0.0)
    }

    #[test]
    fn defaults_are_the_documented_ones() {
        let t = AdaptiveThrottle::default();
        assert_eq!(t.k(), 2.0);
        assert_eq!(t.window(), Duration::from_secs(10));
        assert_eq!(t.name(), "adaptive_throttle");
    }

    #[test]
    fn a_healthy_backend_is_never_throttled() {
        let (t, base) = throttle(2.0, 7);
        for _ in 0..10_000 {
            t.admit(&scope(base)).unwrap();
            t.attempt_finished(&scope(base), &outcome(), false);
        }
        assert_eq!(t.rejection_probability_at(base), 0.0);
    }

    /// Seeded: with the window holding `accepts` accepted requests and then
    /// `failures` failed ones, the number of 20,000 further attempts (all failing)
    /// that are rejected equals the sum of the formula's probabilities at each
    /// step (every attempt, rejected or failed, adds a request) within 4 standard
    /// deviations of that binomial sum plus 0.2 % of the draws.
    #[test]
    fn rejection_rate_follows_the_sre_formula() {
        for (k, accepts, failures, seed) in [
            (2.0, 1_000u32, 1_000u32, 1u64),
            (2.0, 1_000, 3_000, 2),
            (1.5, 500, 2_000, 3),
            (1.1, 2_000, 500, 4),
        ] {
            let (t, base) = throttle(k, seed);
            let now = scope(base);
            for _ in 0..accepts {
                t.admit(&now).unwrap();
                t.attempt_finished(&now, &outcome(), false);
            }
            let mut requests = u64::from(accepts);
            for _ in 0..failures {
                fail(&t, &now);
                requests += 1;
            }
            let draws = 20_000u32;
            let (mut expected, mut variance, mut rejected) = (0.0, 0.0, 0u32);
            for _ in 0..draws {
                let p = formula(requests, u64::from(accepts), k);
                assert!((t.rejection_probability_at(base) - p).abs() < 1e-9);
                expected += p;
                variance += p * (1.0 - p);
                rejected += u32::from(fail(&t, &now));
                requests += 1;
            }
            let tolerance = 4.0 * f64::sqrt(variance) + 0.002 * f64::from(draws);
            let observed = f64::from(rejected);
            assert!(
                (observed - expected).abs() <= tolerance,
                "K {k}, {accepts} accepts, {failures} failures: rejected {observed}, \
                 formula {expected:.0} ± {tolerance:.0}"
            );
            assert!(expected > 100.0, "the case exercises rejection");
        }
    }

    #[test]
    fn attempts_in_flight_are_not_requests_yet() {
        let (t, base) = throttle(2.0, 3);
        // A burst of 1,000 first attempts before any outcome: none throttled.
        for _ in 0..1_000 {
            t.admit(&scope(base)).unwrap();
        }
        assert_eq!(t.rejection_probability_at(base), 0.0);
    }

    #[test]
    fn the_same_seed_rejects_the_same_attempts() {
        let run = || {
            let (t, base) = throttle(2.0, 99);
            (0..2_000)
                .map(|_| fail(&t, &scope(base)))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(), run());
    }

    #[test]
    fn counts_leave_the_window_and_refusals_name_the_gate() {
        let (t, base) = throttle(2.0, 5);
        for _ in 0..1_000 {
            fail(&t, &scope(base));
        }
        assert!(t.rejection_probability_at(base) > 0.99);
        let refusal = (0..100)
            .find_map(|_| t.admit(&scope(base)).err())
            .expect("a refusal");
        assert_eq!(refusal.gate(), "adaptive_throttle");
        let later = base + Duration::from_secs(10);
        assert_eq!(t.rejection_probability_at(later), 0.0);
        t.admit(&scope(later)).unwrap();
    }

    #[test]
    fn builder_rejects_each_bad_setting_with_a_clear_error() {
        let b = AdaptiveThrottle::builder;
        assert_eq!(b().k(0.5).build().unwrap_err(), InvalidThrottle::K(0.5));
        assert!(b().k(f64::INFINITY).build().is_err());
        assert!(b().k(f64::NAN).build().is_err());
        assert_eq!(
            b().window(Duration::ZERO).build().unwrap_err(),
            InvalidThrottle::Window(Duration::ZERO)
        );
        assert!(b().k(1.0).window(Duration::from_secs(3600)).build().is_ok());
        let message = InvalidThrottle::K(0.5).to_string();
        assert!(
            message.contains("[1, 1000]") && message.contains("0.5"),
            "{message}"
        );
        let text = format!("{:?} {:?}", b(), AdaptiveThrottle::default());
        assert!(text.contains("requests_in_window: 0"), "{text}");
    }
}
