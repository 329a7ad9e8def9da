//! The crate's pure rules, re-exported for the workspace's model checker (`model/`) only.
//!
//! Behind the `unstable-model-rules` feature and hidden from the docs: no part of the
//! crate's API, no promise of stability. These are the functions the crate itself
//! runs, unchanged; the model adapts its own state to their types.

use std::time::Duration;

pub use crate::attempt_timeout::{of_attempt, AttemptTimeout};
pub use crate::classify::{classify, Rules as ClassifyRules, Verdict};
pub use crate::deadline::Deadline;
pub use crate::decision::{
    after_attempt, conflict_wait_limit, min_attempt_window, waits_out, Ended, Facts, Next,
};
pub use crate::gate::breaker::phases::{
    step as breaker_step, Event as BreakerEvent, Phase as BreakerPhase, Rules as BreakerRules,
    Step as BreakerStep,
};
pub use crate::hedge::rules::{after_copy, hold, may_hedge, HedgeFacts, NoHedge, Step};

/// `Backoff::delay`: the pause before retry number `retry` (0 for the first), with
/// `rng` as the jitter's source.
pub fn backoff_delay(
    backoff: &crate::Backoff,
    retry: u32,
    previous: Option<Duration>,
    rng: &mut dyn rand::RngCore,
) -> Duration {
    backoff.delay(retry, previous, rng)
}

/// An [`AttemptView`](crate::classification::AttemptView), as the attempt loop makes
/// one for [`classify`].
pub fn attempt_view<'a>(
    method: &'a http::Method,
    url: &'a reqwest::Url,
    attempt: u32,
    keyed: bool,
    result: crate::classification::AttemptResult<'a>,
) -> crate::classification::AttemptView<'a> {
    crate::classification::AttemptView {
        method,
        url,
        attempt,
        keyed,
        result,
    }
}
