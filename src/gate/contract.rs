//! The gate contract: what a gate is asked and told ([`Gate`]), where and when
//! ([`GateScope`], [`RetryCause`]), what it says when it refuses ([`GateRefusal`]),
//! and how a list of gates is asked in order.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::attempt_log::AttemptOutcome;
use crate::clock::Instant;

/// Asked before every attempt of every intent of a policy; told about every attempt.
///
/// Implementations are shared by all clones of the policy, so they use interior
/// mutability (atomics, a mutex). The calls are synchronous and on the request
/// path: keep them cheap and never block.
///
/// # Examples
/// A gate that holds back every attempt to a host after five transient failures
/// in a row (a minimal circuit breaker: a real one would also let a probe through
/// after a while):
/// ```
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use reqwest_resilience::{AttemptOutcome, Gate, GateRefusal, GateScope, RetryPolicy};
///
/// #[derive(Default)]
/// struct Breaker {
///     failures_in_a_row: AtomicU32,
/// }
///
/// impl Gate for Breaker {
///     fn name(&self) -> &str {
///         "five_in_a_row"
///     }
///
///     fn admit(&self, _: &GateScope<'_>) -> Result<(), GateRefusal> {
///         if self.failures_in_a_row.load(Ordering::Relaxed) < 5 {
///             Ok(())
///         } else {
///             Err(GateRefusal::new("five_in_a_row"))
///         }
///     }
///
///     fn attempt_finished(&self, _: &GateScope<'_>, _: &AttemptOutcome, struggling: bool) {
///         if struggling {
///             self.failures_in_a_row.fetch_add(1, Ordering::Relaxed);
///         } else {
///             self.failures_in_a_row.store(0, Ordering::Relaxed);
///         }
///     }
/// }
///
/// // Asked before the budget: the budget is charged only for attempts that happen.
/// let policy = RetryPolicy::builder().gate(Breaker::default()).build()?;
/// # drop(policy);
/// # Ok::<(), reqwest_resilience::BuildError>(())
/// ```
pub trait Gate: Send + Sync + 'static {
    /// A short, stable name (`retry_budget`, `circuit_breaker`): it names the gate in
    /// refusals, logs and metrics.
    fn name(&self) -> &str;

    /// May this attempt go out? [`GateScope::retry_cause`] is `None` for an
    /// intent's first attempt. Asked of every gate in order until one refuses; a
    /// gate that admits may count the attempt (the budget deposits for a first
    /// attempt and withdraws for a retry, a breaker in half-open hands out a probe
    /// slot), and when a later gate refuses, every gate that admitted hears
    /// [`not_sent`](Self::not_sent) and gives back what it counted — so gates
    /// compose in any order.
    ///
    /// A refusal of the first attempt ends the intent before anything is sent or
    /// written (outcome known); a refusal of a retry ends it with the earlier
    /// attempt's result and outcome.
    fn admit(&self, scope: &GateScope<'_>) -> Result<(), GateRefusal> {
        let _ = scope;
        Ok(())
    }

    /// An attempt ended with `outcome`. `struggling` is true when it says the
    /// service or the network is in trouble: a transport failure or a status the
    /// policy treats as transient — never a 409 "same key still in progress" (the
    /// server is healthy and executing) nor another 4xx.
    fn attempt_finished(&self, scope: &GateScope<'_>, outcome: &AttemptOutcome, struggling: bool) {
        let _ = (scope, outcome, struggling);
    }

    /// This gate admitted the attempt `scope` describes, then a gate asked after it
    /// refused: nothing will be sent. Undo what [`admit`](Self::admit) counted — a
    /// breaker's probe slot comes back at once, a budget's withdrawal is returned —
    /// so that one gate's refusal never makes another hold back traffic it would
    /// have let through. Called with the same scope, at once, in reverse order of
    /// the gates that admitted.
    fn not_sent(&self, scope: &GateScope<'_>) {
        let _ = scope;
    }

    /// An attempt this gate admitted was sent, then cancelled before it ended:
    /// another copy of the same intent (a hedge, see [`RetryCause::Hedge`])
    /// answered first, and this copy's future was dropped. It is neither a success
    /// nor a failure — the service did not answer it either way — so nothing is
    /// counted; a gate that handed something out for it (a breaker's half-open
    /// probe slot) gives it back at once. The scope is the attempt's own (its
    /// number and [`retry_cause`](GateScope::retry_cause)), with
    /// [`attempt_duration`](GateScope::attempt_duration) the time it ran.
    fn attempt_cancelled(&self, scope: &GateScope<'_>) {
        let _ = scope;
    }
}

/// Asks every gate, in order, until one refuses; the gates that admitted before
/// the refusal hear that nothing is sent.
pub(super) fn admit_all(gates: &[Arc<dyn Gate>], scope: &GateScope<'_>) -> Result<(), GateRefusal> {
    for (asked, gate) in gates.iter().enumerate() {
        if let Err(refusal) = gate.admit(scope) {
            return Err(refused(&gates[..asked], scope, refusal));
        }
    }
    Ok(())
}

/// A gate refused: the gates that admitted before it (`earlier`) hear that
/// nothing is sent, in reverse order.
pub(super) fn refused(
    earlier: &[Arc<dyn Gate>],
    scope: &GateScope<'_>,
    mut refusal: GateRefusal,
) -> GateRefusal {
    for gate in earlier.iter().rev() {
        gate.not_sent(scope);
    }
    refusal.first_attempt = scope.retry_cause.is_none();
    refusal
}

/// Tells every gate how an attempt ended.
pub(super) fn tell_all(
    gates: &[Arc<dyn Gate>],
    scope: &GateScope<'_>,
    outcome: &AttemptOutcome,
    struggling: bool,
) {
    for gate in gates {
        gate.attempt_finished(scope, outcome, struggling);
    }
}

/// Tells every gate that an attempt was cancelled (a hedge's loser).
pub(super) fn cancel_all(gates: &[Arc<dyn Gate>], scope: &GateScope<'_>) {
    for gate in gates {
        gate.attempt_cancelled(scope);
    }
}

/// Where and when a gate is consulted.
#[derive(Debug, Clone, Copy)]
pub struct GateScope<'a> {
    pub(crate) host: &'a str,
    pub(crate) authority: &'a str,
    pub(crate) now: Instant,
    pub(crate) attempt: u32,
    pub(crate) retry_cause: Option<RetryCause>,
    pub(crate) attempt_duration: Duration,
}

impl<'a> GateScope<'a> {
    /// The request's host (empty when the URL has none).
    pub fn host(&self) -> &'a str {
        self.host
    }

    /// The request's origin, `scheme://host[:port]` with the port left out when it
    /// is the scheme's default (as the URL spells it) and never any credentials:
    /// what per-authority gates key their state by, so that two services on one
    /// host at different ports never share a circuit.
    pub fn authority(&self) -> &'a str {
        self.authority
    }

    /// Now, on the policy's clock.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// In [`Gate::admit`], the attempt about to be sent (1 for the first); in
    /// [`Gate::attempt_finished`], the attempt that ended.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// In [`Gate::admit`], why the intent wants this retry; `None` for a first
    /// attempt (and in [`Gate::attempt_finished`]). In [`Gate::not_sent`] and
    /// [`Gate::attempt_cancelled`], the cause it was admitted with.
    pub fn retry_cause(&self) -> Option<RetryCause> {
        self.retry_cause
    }

    /// In [`Gate::attempt_finished`], how long the attempt took; zero in
    /// [`Gate::admit`] and [`Gate::not_sent`].
    pub fn attempt_duration(&self) -> Duration {
        self.attempt_duration
    }
}

/// Why the intent wants another attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RetryCause {
    /// A transient failure: the server or the network is struggling.
    Transient,
    /// A 409 on a keyed request: the server is healthy and still executing the same
    /// key. Waiting it out is not outage load, so the budget does not charge for it.
    Conflict,
    /// A hedge: the intent's earlier copy is still running, and a copy more goes
    /// out to cut the tail latency (see [`Hedging`](crate::Hedging)). Extra load
    /// like a retry: the budget charges it as one; a breaker admits it only while
    /// its circuit is closed (a half-open probe is never hedged). A refusal never
    /// ends the intent: the running copy carries on.
    Hedge,
}

/// A gate held an attempt back: which gate, and when it may admit again.
#[derive(Debug, Clone, PartialEq)]
pub struct GateRefusal {
    gate: Cow<'static, str>,
    authority: Option<Box<str>>,
    retry_after: Option<Duration>,
    rejection_probability: Option<f64>,
    /// Set by the loop: the refused attempt was the intent's first.
    first_attempt: bool,
    /// The retry budget's refusal: the error says `is_budget_exhausted()`.
    pub(crate) budget: bool,
}

impl GateRefusal {
    /// The retry budget's refusal (see [`crate::Error::is_budget_exhausted`]).
    pub(crate) fn budget_exhausted() -> Self {
        Self {
            budget: true,
            ..Self::new("retry_budget")
        }
    }

    /// A refusal by the gate named `gate` (its [`Gate::name`]).
    pub fn new(gate: impl Into<Cow<'static, str>>) -> Self {
        Self {
            gate: gate.into(),
            authority: None,
            retry_after: None,
            rejection_probability: None,
            first_attempt: false,
            budget: false,
        }
    }

    /// The gate expects to admit again after `delay` (a breaker's time until its
    /// probe). Reported by [`crate::Error::gate_refusal`]; it is the client's own
    /// estimate, never mixed up with the server's `Retry-After`
    /// ([`crate::Error::retry_after`]).
    pub fn with_retry_after(mut self, delay: Duration) -> Self {
        self.retry_after = Some(delay);
        self
    }

    /// The refusal concerns `authority` (`scheme://host[:port]`, see
    /// [`GateScope::authority`]): the gate keeps its state per authority.
    pub fn with_authority(mut self, authority: &str) -> Self {
        self.authority = Some(authority.into());
        self
    }

    /// The gate refused at random with this probability (a throttle), in [0, 1].
    pub fn with_rejection_probability(mut self, probability: f64) -> Self {
        self.rejection_probability = Some(probability);
        self
    }

    /// The refused attempt was the intent's first (nothing was sent); otherwise it
    /// was a retry. Set when the policy asks its gates, whatever the gate said.
    pub fn is_first_attempt(&self) -> bool {
        self.first_attempt
    }

    /// The refusing gate's name.
    pub fn gate(&self) -> &str {
        &self.gate
    }

    /// The authority whose state refused, when the gate keeps state per authority.
    pub fn authority(&self) -> Option<&str> {
        self.authority.as_deref()
    }

    /// The probability with which the gate was refusing when it refused, if it
    /// refuses at random.
    pub fn rejection_probability(&self) -> Option<f64> {
        self.rejection_probability
    }

    /// When the gate expects to admit again, if it said.
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }
}

impl fmt::Display for GateRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "held back by the {} gate", self.gate)?;
        if let Some(authority) = &self.authority {
            write!(f, " for {authority}")?;
        }
        if let Some(delay) = self.retry_after {
            write!(f, " (admits again in {} ms)", delay.as_millis())?;
        }
        if let Some(p) = self.rejection_probability {
            write!(f, " (rejecting {:.1} % of attempts)", p * 100.0)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AdaptiveThrottle, CircuitBreaker, RetryBudget};
    use proptest::prelude::*;

    const A: &str = "http://127.0.0.1:8080";

    fn scope(now: Instant, retry_cause: Option<RetryCause>) -> GateScope<'static> {
        GateScope {
            host: "127.0.0.1",
            authority: A,
            now,
            attempt: if retry_cause.is_some() { 2 } else { 1 },
            retry_cause,
            attempt_duration: Duration::ZERO,
        }
    }

    fn failed() -> AttemptOutcome {
        AttemptOutcome::Status(http::StatusCode::SERVICE_UNAVAILABLE)
    }

    fn ok() -> AttemptOutcome {
        AttemptOutcome::Status(http::StatusCode::OK)
    }

    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Kind {
        Budget,
        Breaker,
        Throttle,
    }

    const ORDERS: [[Kind; 3]; 6] = {
        use Kind::*;
        [
            [Budget, Breaker, Throttle],
            [Budget, Throttle, Breaker],
            [Breaker, Budget, Throttle],
            [Breaker, Throttle, Budget],
            [Throttle, Budget, Breaker],
            [Throttle, Breaker, Budget],
        ]
    };

    /// The three gates, each either about to refuse or about to admit at a cost:
    /// the breaker's break is over (its next admission is the probe), the budget
    /// holds one retry, the throttle admits (an admission costs it nothing).
    struct Setup {
        budget: RetryBudget,
        breaker: CircuitBreaker,
        throttle: AdaptiveThrottle,
        now: Instant,
    }

    fn setup(refuser: Kind) -> Setup {
        let built = Instant::now();
        let budget = RetryBudget::builder()
            .ratio(0.000_001)
            .reserve(u32::from(refuser != Kind::Budget))
            .per_host(true)
            .build()
            .unwrap();
        let breaker = CircuitBreaker::builder()
            .minimum_throughput(2)
            .break_duration(Duration::from_secs(1))
            .build()
            .unwrap();
        let throttle = AdaptiveThrottle::builder()
            .max_rejection_probability(0.999_999)
            .min_requests(2)
            .seed(1)
            .build()
            .unwrap();
        let at = built + Duration::from_secs(1);
        for _ in 0..2 {
            breaker.attempt_finished(&scope(at, None), &failed(), true);
        }
        let now = if refuser == Kind::Breaker {
            at + Duration::from_millis(500) // inside the break
        } else {
            at + Duration::from_secs(1) // the break is over: a probe may go
        };
        if refuser == Kind::Throttle {
            for _ in 0..1_000 {
                throttle.attempt_finished(&scope(now, None), &failed(), true);
            }
        }
        Setup {
            budget,
            breaker,
            throttle,
            now,
        }
    }

    impl Setup {
        fn gate(&self, kind: Kind) -> Arc<dyn Gate> {
            match kind {
                Kind::Budget => Arc::new(self.budget.clone()),
                Kind::Breaker => Arc::new(self.breaker.clone()),
                Kind::Throttle => Arc::new(self.throttle.clone()),
            }
        }
    }

    /// Every order of the three gates, each one refusing in turn: the gates
    /// asked before the refusal get back what they gave — the breaker's probe
    /// slot (the next attempt is the probe) and the budget's retry.
    #[test]
    fn a_refusal_gives_back_what_the_earlier_gates_admitted() {
        for order in ORDERS {
            for refuser in order {
                let row = format!("{order:?}, {refuser:?} refuses");
                let s = setup(refuser);
                let gates: Vec<_> = order.iter().map(|&kind| s.gate(kind)).collect();
                let retry = scope(s.now, Some(RetryCause::Transient));
                let refusal = admit_all(&gates, &retry).expect_err(&row);
                let expected = match refuser {
                    Kind::Budget => "retry_budget",
                    Kind::Breaker => "circuit_breaker",
                    Kind::Throttle => "adaptive_throttle",
                };
                assert_eq!(refusal.gate(), expected, "{row}");
                if refuser != Kind::Budget {
                    // The budget's retry is still there (returned, or never taken).
                    assert_eq!(s.budget.available_at(A, s.now), 1, "{row}");
                }
                if refuser != Kind::Breaker {
                    // The probe slot is free (returned, or never taken): this
                    // admission is the probe, and the next is refused.
                    s.breaker.admit(&retry).expect(&row);
                    assert!(s.breaker.admit(&retry).is_err(), "{row}");
                }
            }
        }
    }

    /// Simulated traffic against one authority, healthy, down, then healthy again,
    /// through the three gates in a given order. Each tick of 100 ms brings
    /// `per_tick` intents; a failed first attempt is retried once if the gates
    /// admit it. Outcomes arrive at once.
    struct Run {
        gates: Vec<Arc<dyn Gate>>,
        start: Instant,
    }

    impl Run {
        /// The last tick (in ms after `start`) at which a first attempt was refused.
        fn last_refusal(&self, per_tick: u32, outage_ms: (u64, u64), end_ms: u64) -> Option<u64> {
            let mut last = None;
            for tick in (0..end_ms).step_by(100) {
                let now = self.start + Duration::from_millis(tick);
                let down = (outage_ms.0..outage_ms.1).contains(&tick);
                for _ in 0..per_tick {
                    if admit_all(&self.gates, &scope(now, None)).is_err() {
                        last = Some(tick);
                        continue;
                    }
                    let (outcome, struggling) = if down {
                        (failed(), true)
                    } else {
                        (ok(), false)
                    };
                    tell_all(&self.gates, &scope(now, None), &outcome, struggling);
                    let retry = scope(now, Some(RetryCause::Transient));
                    if struggling && admit_all(&self.gates, &retry).is_ok() {
                        tell_all(&self.gates, &retry, &outcome, true);
                    }
                }
            }
            last
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        /// No order of the gates leaves a recovered service refused longer than
        /// the longest gate's own recovery rule: the breaker lets a probe go one
        /// break after it opened, the throttle forgets an outage one window after
        /// its last failure, the budget never refuses a first attempt.
        #[test]
        fn no_order_outlasts_the_longest_recovery_rule(
            order in 0usize..6,
            per_tick in 1u32..12,
            outage_s in 1u64..20,
            break_ms in 100u64..6_000,
            window_ms in 500u64..8_000,
            min_throughput in 2u32..150,
            seed in any::<u64>(),
        ) {
            let start = Instant::now();
            let budget = RetryBudget::builder().per_host(true).build().unwrap();
            let breaker = CircuitBreaker::builder()
                .minimum_throughput(min_throughput)
                .break_duration(Duration::from_millis(break_ms))
                .build()
                .unwrap();
            let throttle = AdaptiveThrottle::builder()
                .window(Duration::from_millis(window_ms))
                .seed(seed)
                .build()
                .unwrap();
            let s = Setup { budget, breaker, throttle, now: start };
            let gates = ORDERS[order].iter().map(|&kind| s.gate(kind)).collect();
            let run = Run { gates, start: start + Duration::from_millis(1) };
            let outage = (10_000, 10_000 + outage_s * 1_000);
            let bound = break_ms.max(window_ms);
            let end = outage.1 + bound + 5_000;
            let last = run.last_refusal(per_tick, outage, end);
            if let Some(last) = last {
                prop_assert!(
                    last < outage.1 + bound,
                    "{:?}: refused at {} ms, {} ms after recovery (bound {} ms)",
                    ORDERS[order], last, last - outage.1.min(last), bound
                );
            }
        }
    }
}
