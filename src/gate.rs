//! The retry gate: the one place that may refuse a retry the policy would allow.
//!
//! Max attempts and the deadline bound one intent. They do nothing for the service
//! when *every* intent is failing: each still makes its full share of attempts, and
//! an outage turns into a retry storm. A gate sees all intents of a policy. The loop
//! tells it when an intent starts and how every attempt ended, and asks it before
//! every retry. The default gate is the [`RetryBudget`](crate::RetryBudget) (retries
//! at most a fraction of requests); a circuit breaker, an adaptive limiter or a
//! per-tenant quota plug in the same way, through [`RetryPolicyBuilder::retry_gate`].
//!
//! [`RetryPolicyBuilder::retry_gate`]: crate::RetryPolicyBuilder::retry_gate

use std::time::Instant;

use crate::attempt_log::AttemptOutcome;

/// Asked before every retry of every intent of a policy; told about every attempt.
///
/// Implementations are shared by all clones of the policy, so they use interior
/// mutability (atomics, a mutex). The calls are synchronous and on the request
/// path: keep them cheap and never block.
///
/// # Examples
/// A gate that stops retrying a host after five failures in a row (a minimal
/// circuit breaker: a real one would also close again after a while):
/// ```
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use reqwest_resilience::{AttemptOutcome, GateScope, RetryCause, RetryGate, RetryPolicy};
///
/// #[derive(Default)]
/// struct Breaker {
///     failures_in_a_row: AtomicU32,
/// }
///
/// impl RetryGate for Breaker {
///     fn attempt_finished(&self, _: &GateScope<'_>, _: &AttemptOutcome, transient: bool) {
///         if transient {
///             self.failures_in_a_row.fetch_add(1, Ordering::Relaxed);
///         } else {
///             self.failures_in_a_row.store(0, Ordering::Relaxed);
///         }
///     }
///
///     fn allow_retry(&self, _: &GateScope<'_>, _: RetryCause) -> bool {
///         self.failures_in_a_row.load(Ordering::Relaxed) < 5
///     }
/// }
///
/// // Asked before the budget: the budget is charged only for retries that happen.
/// let policy = RetryPolicy::builder().retry_gate(Breaker::default()).build()?;
/// # drop(policy);
/// # Ok::<(), reqwest_resilience::BuildError>(())
/// ```
pub trait RetryGate: Send + Sync + 'static {
    /// An intent is about to send its first attempt.
    fn intent_started(&self, scope: &GateScope<'_>) {
        let _ = scope;
    }

    /// An attempt ended with `outcome`; `transient` is the classification's verdict
    /// (another attempt might succeed).
    fn attempt_finished(&self, scope: &GateScope<'_>, outcome: &AttemptOutcome, transient: bool) {
        let _ = (scope, outcome, transient);
    }

    /// May the intent retry? Asked after the policy decided a retry is useful and
    /// safe, before the pause. `false` ends the intent with
    /// [`GiveUpReason::BudgetExhausted`](crate::GiveUpReason::BudgetExhausted).
    fn allow_retry(&self, scope: &GateScope<'_>, cause: RetryCause) -> bool;
}

/// Where and when a gate is consulted.
#[derive(Debug, Clone, Copy)]
pub struct GateScope<'a> {
    pub(crate) host: &'a str,
    pub(crate) now: Instant,
    pub(crate) attempt: u32,
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

    /// The attempt just made (1 for the first); 0 in `intent_started`.
    pub fn attempt(&self) -> u32 {
        self.attempt
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
