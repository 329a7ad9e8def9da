//! Gates: the one place that may hold back an attempt the policy would send.
//!
//! Max attempts and the deadline bound one intent. They do nothing for the service
//! when *every* intent is failing: each still makes its full share of attempts, and
//! an outage turns into a retry storm. A gate sees all intents of a policy. The loop
//! asks it before every attempt — the first one before anything else happens (no
//! observer has written anything yet), every retry after the policy decided it is
//! useful and before the pause — and tells it how every attempt ended.
//!
//! The default gate is the [`RetryBudget`](crate::RetryBudget) (retries at most a
//! fraction of requests; it never refuses a first attempt). A circuit breaker, an
//! adaptive throttle or a per-tenant quota plug in the same way, through
//! [`RetryPolicyBuilder::gate`](crate::RetryPolicyBuilder::gate); each refusal
//! names the gate that refused.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::attempt_log::AttemptOutcome;

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
    /// attempt and withdraws for a retry), so it should be the last gate whose
    /// consent costs something.
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
}

/// Asks every gate, in order, until one refuses.
#[inline]
pub(crate) fn admit_all(gates: &[Arc<dyn Gate>], scope: &GateScope<'_>) -> Result<(), GateRefusal> {
    gates.iter().try_for_each(|gate| gate.admit(scope))
}

/// Tells every gate how an attempt ended.
#[inline]
pub(crate) fn tell_all(
    gates: &[Arc<dyn Gate>],
    scope: &GateScope<'_>,
    outcome: &AttemptOutcome,
    struggling: bool,
) {
    for gate in gates {
        gate.attempt_finished(scope, outcome, struggling);
    }
}

/// Where and when a gate is consulted.
#[derive(Debug, Clone, Copy)]
pub struct GateScope<'a> {
    pub(crate) host: &'a str,
    pub(crate) now: Instant,
    pub(crate) attempt: u32,
    pub(crate) retry_cause: Option<RetryCause>,
}

impl<'a> GateScope<'a> {
    /// The request's host (empty when the URL has none).
    pub fn host(&self) -> &'a str {
        self.host
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
    /// attempt (and in [`Gate::attempt_finished`]).
    pub fn retry_cause(&self) -> Option<RetryCause> {
        self.retry_cause
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
}

/// A gate held an attempt back: which gate, and when it may admit again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateRefusal {
    gate: Cow<'static, str>,
    retry_after: Option<Duration>,
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
            retry_after: None,
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

    /// The refusing gate's name.
    pub fn gate(&self) -> &str {
        &self.gate
    }

    /// When the gate expects to admit again, if it said.
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }
}

impl fmt::Display for GateRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "held back by the {} gate", self.gate)?;
        if let Some(delay) = self.retry_after {
            write!(f, " (admits again in {} ms)", delay.as_millis())?;
        }
        Ok(())
    }
}
