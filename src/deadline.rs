//! The total time the caller will wait for an intent: attempts and pauses together.
//!
//! Without one, each layer's fresh timer lets a transient fault outlive the user's
//! patience: the fifth attempt, 30 s later, only burns the server's resources. Every
//! attempt's timeout is therefore `min(attempt timeout, time left)`, and no pause is
//! started that would end at or after the deadline.
//! (`attempt_timeout::of_attempt` cuts each attempt's timeout to [`Deadline::remaining`].)

use std::time::{Duration, Instant};

/// When an intent must be over.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    started: Instant,
    limit: Option<Duration>,
}

impl Deadline {
    pub fn new(started: Instant, limit: Option<Duration>) -> Self {
        Self { started, limit }
    }

    /// When the intent started: the deadline counts from here.
    pub(crate) fn started(&self) -> Instant {
        self.started
    }

    /// Time left at `now`; `None` when the intent has no deadline.
    pub fn remaining(&self, now: Instant) -> Option<Duration> {
        self.limit
            .map(|limit| limit.saturating_sub(now.saturating_duration_since(self.started)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn the_time_left_never_goes_below_zero() {
        let start = Instant::now();
        let deadline = Deadline::new(start, Some(10 * S));
        assert_eq!(deadline.remaining(start + 8 * S), Some(2 * S));
        assert_eq!(deadline.remaining(start + 11 * S), Some(Duration::ZERO));
        let unbounded = Deadline::new(start, None);
        assert_eq!(unbounded.remaining(start + 100 * S), None);
    }

    #[test]
    fn a_clock_that_goes_backwards_does_not_panic() {
        let start = Instant::now() + 5 * S;
        let deadline = Deadline::new(start, Some(S));
        assert_eq!(deadline.remaining(Instant::now()), Some(S));
    }
}
