//! Adaptive throttling (Google SRE client-side throttling) as a gate. The behaviour
//! is documented on [`AdaptiveThrottle`].

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::attempt_log::AttemptOutcome;
use crate::clock::Instant;
use crate::gate::contract::{Gate, GateRefusal, GateScope};
use crate::gate::per_authority::PerAuthority;
use crate::gate::ratio::{whole, Millionths, SCALE};
use crate::gate::settings::gate_settings;
use crate::gate::window::{counts, Counts, Epochs, Window};

const NAME: &str = "adaptive_throttle";

const MIN_WINDOW: Duration = Duration::from_millis(500);
const MAX_WINDOW: Duration = Duration::from_secs(3600);
const MAX_K: f64 = 1000.0;

/// Adaptive throttling: reject locally, with a probability that grows as the
/// backend accepts less of what it is sent.
///
/// Google's SRE book ("Handling Overload", client-side throttling) has every
/// client remember, over a recent window, how many **requests** it sent and how
/// many the backend **accepted**, and reject a new request locally with
/// probability
///
/// ```text
/// min(max_rejection, max(0, (requests − K · accepts) / (requests + 1)))
/// ```
///
/// and not at all while fewer than `min_requests` requests are in the window.
/// That is Envoy's admission control: the SRE formula, a **maximum rejection
/// probability** so that a share of the traffic always tests the service, and a
/// **traffic threshold** below which it never rejects (a cold client that saw one
/// failure has learned nothing). While the backend accepts everything the
/// probability is 0 (K ≥ 1); with K = 2 rejection starts only once more than
/// half of the requests fail.
///
/// * A *request* is an **attempt that was sent** (first attempts and retries
///   alike), counted when its outcome arrives ([`Gate::attempt_finished`]). The
///   throttle's own rejections, and attempts another gate refused, are never
///   counted: a window full of local rejections would read a recovered service as
///   still down, and the throttle would never let traffic back.
/// * An *accept* is a sent attempt whose outcome was not *struggling*: a response
///   that is neither a transient status nor a transport failure — a 409 "in
///   progress" or a 404 is an accept, the backend did its job.
/// * The window forgets at a stated rate: counts live in 10 buckets of
///   `window / 10` each, so a tenth of the outage leaves the window every tenth
///   of a window, and an outage is forgotten entirely one window after its last
///   failure. Once the service answers again, its accepts bring the probability
///   down sooner: with K = 2 it is near 0 once the accepts in the window match the
///   failures still in it, about half a window after recovery. **One window after
///   the service recovers, the throttle rejects nothing** — the bound the tests
///   check.
/// * With [`per_host(true)`](AdaptiveThrottleBuilder::per_host) (the default)
///   every authority (scheme, host, port) has its own window: a down service
///   never causes a refusal for another. Past 1024 authorities a new one takes
///   the place of the least recently used idle window, or goes untracked (never
///   refused) when none is idle.
/// * A refusal names the gate, the authority and the rejection probability at
///   that moment ([`GateRefusal::rejection_probability`]).
///
/// Its randomness can be seeded ([`AdaptiveThrottleBuilder::seed`]) for
/// repeatable tests and benchmarks.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use reqwest_resilience::{AdaptiveThrottle, RetryPolicy};
///
/// let throttle = AdaptiveThrottle::builder()
///     .k(2.0)
///     .window(Duration::from_secs(5))
///     .build()?;
/// let policy = RetryPolicy::builder().gate(throttle).build()?;
/// # drop(policy);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Cloning is cheap and yields a handle to the *same* throttle.
///
/// # Defaults
///
/// | setting | default | why |
/// |---|---|---|
/// | K | 2 | the SRE book's value: rejection starts past 50 % failures; the backend keeps seeing about 2× what it accepts |
/// | window | 5 s | recovery takes about half a window and ends within one, so a 5 s window keeps it inside a 6 s target; the SRE book's 2 min would keep a recovered service throttled for a minute |
/// | minimum requests | 20 per window | Envoy's traffic threshold: below it a handful of failures proves nothing, and a cold client never rejects after one failure |
/// | maximum rejection probability | 0.8 | Envoy's value: at least one attempt in five still tests the service, so the accepts that end the throttling arrive as soon as it recovers; higher saves the dead service little (the budget and the breaker do that) and slows the proof of recovery |
/// | per host | yes | a down service must not refuse intents to healthy ones |
/// | randomness | seeded from the thread-local RNG | seed it for repeatable tests |
///
/// Whether a policy has a throttle at all is in [`RetryPolicy`](crate::RetryPolicy)'s
/// Defaults table.
#[derive(Clone)]
pub struct AdaptiveThrottle {
    inner: Arc<Inner>,
}

gate_settings! {
    /// A throttle's settings, as the builder holds them and the built throttle keeps them.
    struct Settings for AdaptiveThrottle, AdaptiveThrottleBuilder {
        /// The multiplier K in [1, 1000] (default 2). Lower rejects earlier: K = 1.1
        /// starts once about 10 % of requests fail. Applied in millionths, rounded down.
        k: f64 = 2.0
            => /// The multiplier K.
            k;
        /// The window over which requests and accepts are counted, 500 ms ..= 1 h
        /// (default 5 s), in 10 buckets of a tenth each. The throttle forgets an
        /// outage one window after its last failure.
        window: Duration = Duration::from_secs(5)
            => /// The window over which requests and accepts are counted.
            window;
        /// Requests (sent attempts) in the window below which the throttle never
        /// rejects (default 20; 0 applies the formula from the first failure).
        min_requests: u32 = 20
            => /// Requests in the window below which the throttle never rejects.
            min_requests;
        /// The highest rejection probability, in [0, 1) (default 0.8): at least this
        /// complement of the attempts always goes out to test the service. Applied in
        /// millionths, rounded down.
        max_rejection_probability: f64 = 0.8
            => /// The highest rejection probability.
            max_rejection_probability;
        /// Give each authority (scheme, host, port) its own window (default `true`).
        per_host: bool = true
            => /// Whether each authority has its own window.
            is_per_host;
    }
}

/// Builder for [`AdaptiveThrottle`]; setters never fail, [`build`](Self::build) validates.
#[derive(Debug, Clone)]
pub struct AdaptiveThrottleBuilder {
    settings: Settings,
    /// Consumed by `build`: the throttle keeps its random source, not the seed.
    seed: Option<u64>,
}

/// Why an [`AdaptiveThrottleBuilder`] could not build a throttle.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum InvalidThrottle {
    /// K was not a finite number in [1, 1000].
    K(f64),
    /// The window was shorter than 500 ms or longer than 1 h.
    Window(Duration),
    /// The maximum rejection probability was not a finite number in [0, 1).
    MaxRejection(f64),
}

impl fmt::Display for InvalidThrottle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::K(value) => write!(f, "adaptive throttle K must be a finite number in [1, 1000], got {value}"),
            Self::Window(value) => write!(f, "adaptive throttle window must be between 500 ms and 1 h, got {value:?}"),
            Self::MaxRejection(value) => write!(f, "adaptive throttle maximum rejection probability must be a finite number in [0, 1), got {value}"),
        }
    }
}

impl std::error::Error for InvalidThrottle {}

/// The settings the probability is computed from, in exact integers.
#[derive(Debug, Clone, Copy)]
struct Rule {
    k: Millionths,
    min_requests: u64,
    max_rejection: Millionths,
}

struct Inner {
    settings: Settings,
    rule: Rule,
    epochs: Epochs,
    /// The windows, and beside them the random source of the draws.
    windows: PerAuthority<Window<Traffic>, StdRng>,
}

counts! {
    /// What one bucket of the window counts.
    struct Traffic {
        requests,
        accepts,
    }
}

/// The rejection probability in millionths (rounded down) for the counts in a
/// window: 0 under the traffic threshold, else the SRE formula capped at the
/// maximum.
fn rejection_probability(Traffic { requests, accepts }: Traffic, rule: Rule) -> Millionths {
    if requests < rule.min_requests {
        return Millionths::from_millionths(0);
    }
    let asked = whole(requests);
    let earned = rule.k.of(accepts);
    let numerator = asked.saturating_sub(earned) * u128::from(SCALE);
    let denominator = whole(requests.saturating_add(1));
    let p = u64::try_from(numerator / denominator).unwrap_or(SCALE);
    Millionths::from_millionths(p).min(rule.max_rejection)
}

impl AdaptiveThrottle {
    /// A builder starting from the defaults (see [`AdaptiveThrottle`]'s Defaults).
    pub fn builder() -> AdaptiveThrottleBuilder {
        AdaptiveThrottleBuilder {
            settings: Settings::default(),
            seed: None,
        }
    }

    /// A throttle with every default.
    pub fn new_default() -> AdaptiveThrottle {
        Self::builder().build_unchecked(Instant::now())
    }

    /// The probability that an attempt to `authority` asked about at `now` is
    /// rejected, from the counts in its window (for logs and tests). Unless per
    /// host, `authority` is ignored.
    pub fn rejection_probability_at(&self, authority: &str, now: Instant) -> f64 {
        let inner = &*self.inner;
        let epoch = inner.epochs.of(now);
        let windows = inner.windows.lock();
        let counts = windows
            .get(authority)
            .map_or_else(Traffic::default, |w| w.sum(epoch));
        drop(windows);
        rejection_probability(counts, inner.rule).get() as f64 / SCALE as f64
    }
}

/// Asked before every attempt: rejects it with the probability its authority's
/// window gives (a rejection is not counted); every attempt that was sent counts
/// as a request when it ends, and as an accept too when it was not struggling.
impl Gate for AdaptiveThrottle {
    fn name(&self) -> &str {
        NAME
    }

    fn admit(&self, scope: &GateScope<'_>) -> Result<(), GateRefusal> {
        let inner = &*self.inner;
        let epoch = inner.epochs.of(scope.now());
        let mut windows = inner.windows.lock();
        let counts = windows
            .entry(scope.authority(), |w| w.sum(epoch) == Traffic::default())
            .map(|w| w.sum(epoch));
        let p = counts.map_or(0, |counts| rejection_probability(counts, inner.rule).get());
        let rng = &mut windows.extra;
        if p == 0 || rng.random_range(0..SCALE) >= p {
            // Counted once its outcome is known (`attempt_finished`).
            return Ok(());
        }
        drop(windows);
        Err(GateRefusal::new(NAME)
            .with_authority(scope.authority())
            .with_rejection_probability(p as f64 / SCALE as f64))
    }

    fn attempt_finished(&self, scope: &GateScope<'_>, _: &AttemptOutcome, struggling: bool) {
        let inner = &*self.inner;
        let epoch = inner.epochs.of(scope.now());
        let mut windows = inner.windows.lock();
        if let Some(window) =
            windows.entry(scope.authority(), |w| w.sum(epoch) == Traffic::default())
        {
            let bucket = window.slot(epoch);
            bucket.requests = bucket.requests.saturating_add(1);
            bucket.accepts = bucket.accepts.saturating_add(u64::from(!struggling));
        }
    }

    // `not_sent`: nothing to undo, an admitted attempt counts only when it ends.
}

impl Default for AdaptiveThrottle {
    fn default() -> Self {
        Self::new_default()
    }
}

impl fmt::Debug for AdaptiveThrottle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = &*self.inner;
        let epoch = inner.epochs.of(Instant::now());
        let windows = inner.windows.lock();
        let Traffic { requests, accepts } = windows.all().fold(Traffic::default(), |sum, w| {
            sum.saturating_add(w.sum(epoch))
        });
        let authorities = windows.tracked();
        drop(windows);
        f.debug_struct("AdaptiveThrottle")
            .field("settings", &inner.settings)
            .field("requests_in_window", &requests)
            .field("accepts_in_window", &accepts)
            .field("authority_windows", &authorities)
            .finish()
    }
}

impl AdaptiveThrottleBuilder {
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
        let s = &self.settings;
        if !(s.k.is_finite() && (1.0..=MAX_K).contains(&s.k)) {
            return Err(InvalidThrottle::K(s.k));
        }
        if !(MIN_WINDOW..=MAX_WINDOW).contains(&s.window) {
            return Err(InvalidThrottle::Window(s.window));
        }
        if !(s.max_rejection_probability.is_finite()
            && (0.0..1.0).contains(&s.max_rejection_probability))
        {
            return Err(InvalidThrottle::MaxRejection(s.max_rejection_probability));
        }
        Ok(self.build_unchecked(Instant::now()))
    }

    fn build_unchecked(self, origin: Instant) -> AdaptiveThrottle {
        let s = self.settings;
        let seed = self.seed.unwrap_or_else(|| rand::rng().random());
        AdaptiveThrottle {
            inner: Arc::new(Inner {
                settings: s,
                rule: Rule {
                    k: Millionths::floor(s.k, MAX_K as u64),
                    min_requests: u64::from(s.min_requests),
                    max_rejection: Millionths::floor(s.max_rejection_probability, 1),
                },
                epochs: Epochs::new(origin, s.window),
                windows: PerAuthority::new(s.per_host, StdRng::seed_from_u64(seed)),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::authority::MAX_AUTHORITIES;

    const A: &str = "http://api.example.com";

    fn scope(authority: &'static str, now: Instant) -> GateScope<'static> {
        GateScope {
            host: "api.example.com",
            authority,
            now,
            attempt: 1,
            retry_cause: None,
            attempt_duration: Duration::ZERO,
        }
    }

    fn throttle(builder: AdaptiveThrottleBuilder) -> (AdaptiveThrottle, Instant) {
        let base = Instant::now();
        (builder.seed(7).build_unchecked(base), base)
    }

    fn ok() -> AttemptOutcome {
        AttemptOutcome::Status(http::StatusCode::OK)
    }

    fn unavailable() -> AttemptOutcome {
        AttemptOutcome::Status(http::StatusCode::SERVICE_UNAVAILABLE)
    }

    /// `n` attempts sent to `authority` at `now` that ended `struggling` (or not).
    fn sent(t: &AdaptiveThrottle, authority: &'static str, now: Instant, n: u32, struggling: bool) {
        let outcome = if struggling { unavailable() } else { ok() };
        for _ in 0..n {
            t.attempt_finished(&scope(authority, now), &outcome, struggling);
        }
    }

    fn rule(k: f64, min_requests: u64, max: f64) -> Rule {
        Rule {
            k: Millionths::floor(k, 1000),
            min_requests,
            max_rejection: Millionths::floor(max, 1),
        }
    }

    #[test]
    fn defaults_are_the_documented_ones() {
        let t = AdaptiveThrottle::default();
        assert_eq!(t.k(), 2.0);
        assert_eq!(t.window(), Duration::from_secs(5));
        assert_eq!(t.min_requests(), 20);
        assert_eq!(t.max_rejection_probability(), 0.8);
        assert!(t.is_per_host());
        assert_eq!(t.name(), "adaptive_throttle");
    }

    #[test]
    fn the_probability() {
        let traffic = |requests, accepts| Traffic { requests, accepts };
        #[rustfmt::skip]
        let rows = [
            ("cold: one failure",                  traffic(1, 0),      rule(2.0, 20, 0.8),  0),
            ("under the threshold",                traffic(19, 0),     rule(2.0, 20, 0.8),  0),
            ("at the threshold, capped",           traffic(20, 0),     rule(2.0, 20, 0.8),  800_000),
            ("no threshold: one failure",          traffic(1, 0),      rule(2.0, 0, 0.99),  500_000),
            ("healthy",                            traffic(1_000, 1_000), rule(2.0, 20, 0.8), 0),
            ("half failing, K = 2",                traffic(1_000, 500), rule(2.0, 20, 0.8), 0),
            ("three in four failing",              traffic(1_000, 250), rule(2.0, 20, 0.8), 499_500),
            ("rounded down",                       traffic(3, 1),      rule(1.0, 0, 0.99),  500_000),
            ("rounded down, thirds",               traffic(2, 0),      rule(1.0, 0, 0.99),  666_666),
            ("K = 1.1 starts near 10 % failures",  traffic(1_000, 900), rule(1.1, 20, 0.8), 9_990),
            ("the cap binds",                      traffic(10_000, 0), rule(2.0, 20, 0.5),  500_000),
            ("a cap of 0 never rejects",           traffic(10_000, 0), rule(2.0, 20, 0.0),  0),
            ("saturated counts",                   traffic(u64::MAX, 0), rule(2.0, 20, 0.8), 800_000),
        ];
        for (name, counts, rule, expected) in rows {
            assert_eq!(
                rejection_probability(counts, rule).get(),
                expected,
                "{name}"
            );
        }
    }

    #[test]
    fn a_cold_throttle_never_rejects_after_one_failure() {
        let (t, base) = throttle(AdaptiveThrottle::builder());
        sent(&t, A, base, 1, true);
        assert_eq!(t.rejection_probability_at(A, base), 0.0);
        for _ in 0..10_000 {
            t.admit(&scope(A, base)).unwrap();
        }
    }

    #[test]
    fn a_healthy_backend_is_never_throttled() {
        let (t, base) = throttle(AdaptiveThrottle::builder());
        for _ in 0..10_000 {
            t.admit(&scope(A, base)).unwrap();
            t.attempt_finished(&scope(A, base), &ok(), false);
        }
        assert_eq!(t.rejection_probability_at(A, base), 0.0);
    }

    /// Seeded: with the counts fixed (rejections are not counted, admitted
    /// attempts never end here), the share rejected matches the probability
    /// within 4 standard deviations.
    #[test]
    fn rejects_at_the_probability_and_its_rejections_do_not_count() {
        for (failures, accepts, max) in [(1_000, 0, 0.8), (1_000, 250, 0.8), (600, 100, 0.5)] {
            let (t, base) = throttle(AdaptiveThrottle::builder().max_rejection_probability(max));
            sent(&t, A, base, failures, true);
            sent(&t, A, base, accepts, false);
            let p = t.rejection_probability_at(A, base);
            let draws = 20_000u32;
            let rejected = (0..draws)
                .filter(|_| t.admit(&scope(A, base)).is_err())
                .count() as f64;
            assert_eq!(
                t.rejection_probability_at(A, base),
                p,
                "rejections uncounted"
            );
            let expected = p * f64::from(draws);
            let tolerance = 4.0 * (expected * (1.0 - p)).sqrt();
            assert!(
                (rejected - expected).abs() <= tolerance,
                "p {p}: rejected {rejected}, expected {expected:.0} ± {tolerance:.0}"
            );
        }
    }

    #[test]
    fn an_outage_is_forgotten_one_window_after_its_last_failure() {
        let (t, base) = throttle(AdaptiveThrottle::builder());
        let window = Duration::from_secs(5);
        sent(&t, A, base, 1_000, true);
        assert_eq!(t.rejection_probability_at(A, base), 0.8);
        // A tenth of the window later, still all failures.
        let tenth = base + window / 10;
        assert_eq!(t.rejection_probability_at(A, tenth), 0.8);
        // Accepts bring it down before the window has passed ...
        sent(&t, A, tenth, 1_000, false);
        assert_eq!(t.rejection_probability_at(A, tenth), 0.0);
        // ... and without any, one window after the last failure nothing is left.
        let (t, base) = throttle(AdaptiveThrottle::builder());
        sent(&t, A, base, 1_000, true);
        assert_eq!(
            t.rejection_probability_at(A, base + window - Duration::from_millis(1)),
            0.8
        );
        assert_eq!(t.rejection_probability_at(A, base + window), 0.0);
        t.admit(&scope(A, base + window)).unwrap();
    }

    #[test]
    fn a_down_authority_never_refuses_another() {
        let (t, base) = throttle(AdaptiveThrottle::builder());
        let other_port = "http://api.example.com:8080";
        sent(&t, A, base, 1_000, true);
        for _ in 0..1_000 {
            t.admit(&scope(other_port, base)).unwrap();
        }
        let refusal = (0..100)
            .find_map(|_| t.admit(&scope(A, base)).err())
            .expect("a refusal");
        assert_eq!(refusal.gate(), "adaptive_throttle");
        assert_eq!(refusal.authority(), Some(A));
        assert_eq!(refusal.rejection_probability(), Some(0.8));
        assert!(refusal.to_string().contains("80.0 %"), "{refusal}");
        // Shared: one window for everyone.
        let (t, base) = throttle(AdaptiveThrottle::builder().per_host(false));
        sent(&t, A, base, 1_000, true);
        assert_eq!(t.rejection_probability_at(other_port, base), 0.8);
    }

    #[test]
    fn past_the_bound_a_new_authority_never_takes_a_busy_window() {
        let (t, base) = throttle(AdaptiveThrottle::builder());
        let authorities: Vec<&'static str> = (0..MAX_AUTHORITIES)
            .map(|i| &*Box::leak(format!("http://h{i}").into_boxed_str()))
            .collect();
        for &authority in &authorities {
            sent(&t, authority, base, 20, true);
        }
        // Every window busy: a new authority goes untracked, admitted, and its
        // failures are counted nowhere — above all not in another's window.
        let new = "http://new.example";
        sent(&t, new, base, 1_000, true);
        for _ in 0..1_000 {
            t.admit(&scope(new, base)).unwrap();
        }
        assert_eq!(t.rejection_probability_at(new, base), 0.0);
        for &authority in &authorities {
            assert_eq!(
                t.rejection_probability_at(authority, base),
                0.8,
                "{authority}"
            );
        }
        // A window later every old window is idle: the new authority takes a place.
        let later = base + Duration::from_secs(5);
        sent(&t, new, later, 20, true);
        assert_eq!(t.rejection_probability_at(new, later), 0.8);
    }

    #[test]
    fn the_same_seed_rejects_the_same_attempts() {
        let run = || {
            let (t, base) = throttle(AdaptiveThrottle::builder());
            sent(&t, A, base, 100, true);
            (0..2_000)
                .map(|_| t.admit(&scope(A, base)).is_err())
                .collect::<Vec<_>>()
        };
        assert_eq!(run(), run());
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
        for p in [1.0, -0.1, f64::NAN] {
            assert!(matches!(
                b().max_rejection_probability(p).build(),
                Err(InvalidThrottle::MaxRejection(_))
            ));
        }
        assert!(b().k(1.0).window(Duration::from_secs(3600)).build().is_ok());
        assert!(b()
            .max_rejection_probability(0.0)
            .min_requests(0)
            .build()
            .is_ok());
        let message = InvalidThrottle::K(0.5).to_string();
        assert!(
            message.contains("[1, 1000]") && message.contains("0.5"),
            "{message}"
        );
        let text = format!("{:?} {:?}", b(), AdaptiveThrottle::default());
        assert!(text.contains("requests_in_window: 0"), "{text}");
    }
}
