//! What one client model checks: the intents, the policy's settings in ticks, which
//! gates stand in front of the attempts, and which guard (if any) is switched off.

use std::time::Duration;

use super::rules::{self as model_rules, BreakerRules};

use super::answer::Answer;
use super::intent::IntentKind;

/// One tick of the model's clock: half a second, so that a `Retry-After` of
/// delay-seconds is a whole number of ticks, every pause ends on a tick, and a
/// hedged copy's useful window (a tenth of its longest attempt) is more than a tick.
pub(super) const TICK: Duration = Duration::from_millis(500);

/// The duration of `ticks` ticks.
pub(super) fn ticks(ticks: u8) -> Duration {
    TICK * u32::from(ticks)
}

/// The first tick at or after `duration` from tick 0: a timer of `duration` fires
/// then or later, never earlier.
pub(super) fn ticks_ceil(duration: Duration) -> u8 {
    let whole = duration.as_nanos().div_ceil(TICK.as_nanos());
    u8::try_from(whole).unwrap_or(u8::MAX)
}

/// Hedging's settings (fixed delay).
#[derive(Debug, Clone, Copy)]
pub struct HedgeConfig {
    /// The hedge delay.
    pub delay: u8,
    /// Copies in flight at most (`Hedging::max_copies`).
    pub max_copies: u32,
    /// Hedges the cap grants this intent (its share plus burst).
    pub cap: u8,
}

/// One configuration of the client model.
#[derive(Debug, Clone)]
pub struct Config {
    /// The report's name.
    pub name: &'static str,
    /// The intents checked (one per run; each is an initial state).
    pub kinds: Vec<IntentKind>,
    /// The server's answers and the transport's outcomes an attempt may meet.
    pub answers: Vec<Answer>,
    /// The intent's deadline, in ticks.
    pub deadline: u8,
    /// `max_attempts`.
    pub max_attempts: u32,
    /// The policy's attempt timeout; `None`: implied by the deadline.
    pub attempt_timeout: Option<Duration>,
    /// `retry_after_ceiling`, in ticks.
    pub retry_after_ceiling: u8,
    /// `conflict_delay`, in ticks.
    pub conflict_delay: u8,
    /// The backoff (full jitter, drawn at either end of its range).
    pub backoff: reqwest_resilience::Backoff,
    /// Hedged intents (GET only), or the plain loop.
    pub hedging: Option<HedgeConfig>,
    /// A circuit breaker stands in front of the attempts, with these rules.
    pub breaker: Option<BreakerRules>,
    /// How many times other intents may change the breaker during one run.
    pub breaker_events: u8,
    /// The retry budget may refuse a retry or a hedge (other intents drain it).
    pub budget: bool,
    /// The first attempt's timeout counts from `send()` (as the loop did) instead
    /// of from the end of the write-ahead.
    pub first_attempt_from_send: bool,
}

impl Config {
    /// The deadline as a duration.
    pub fn deadline(&self) -> Duration {
        ticks(self.deadline)
    }

    /// Each attempt's timeout before it is cut to the time left.
    pub fn attempt_timeout(&self) -> Option<Duration> {
        self.attempt_timeout.or_else(|| {
            model_rules::implied_attempt_timeout(Some(self.deadline()), self.max_attempts)
        })
    }

    /// The least time an attempt must have to be worth sending.
    pub fn min_attempt_window(&self) -> Duration {
        model_rules::min_attempt_window(self.attempt_timeout(), Some(self.deadline()))
    }

    /// The clock stops here: one tick past the deadline, so that a late wake-up
    /// meets the deadline's own check.
    pub fn horizon(&self) -> u8 {
        self.deadline + 1
    }
}
