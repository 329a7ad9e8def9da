//! Gates: the one place that may hold back an attempt the policy would send.
//!
//! Max attempts and the deadline bound one intent. They do nothing for the service
//! when *every* intent is failing: each still makes its full share of attempts, and
//! an outage turns into a retry storm. A gate sees all intents of a policy. The loop
//! asks it before every attempt — the first one before anything else happens (no
//! observer has written anything yet), every retry after the policy decided it is
//! useful and before the pause — and tells it how every attempt ended.
//!
//! The default gate is the [`RetryBudget`] (retries at most a
//! fraction of requests; it never refuses a first attempt). A circuit breaker, an
//! adaptive throttle or a per-tenant quota plug in the same way, through
//! [`RetryPolicyBuilder::gate`](crate::RetryPolicyBuilder::gate); each refusal
//! names the gate that refused.
//!
//! A protection must never cause an outage of its own. So a gate that admitted an
//! attempt another gate then refused hears that nothing was sent
//! ([`Gate::not_sent`]), per-service state is keyed by authority
//! ([`GateScope::authority`]), and the crate's gates never refuse on another
//! authority's record.

pub(crate) mod breaker;
mod budget;
mod contract;
mod gates;
mod per_authority;
mod settings;
mod throttle;

pub(crate) mod authority;
pub(crate) mod ratio;
pub(crate) mod window;

pub use breaker::{CircuitBreaker, CircuitBreakerBuilder, CircuitState, InvalidBreaker};
pub use budget::{InvalidBudget, RetryBudget, RetryBudgetBuilder};
pub use contract::{Gate, GateRefusal, GateScope, RetryCause};
pub(crate) use gates::Gates;
pub use throttle::{AdaptiveThrottle, AdaptiveThrottleBuilder, InvalidThrottle};
