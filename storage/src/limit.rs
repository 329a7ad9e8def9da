//! How long a store may wait on behalf of one caller that has a deadline.
//!
//! A durable send's deadline covers its write-ahead, and the client cuts off a
//! write still running when the deadline comes: the caller then reads "deadline
//! exceeded, outcome unknown", with the cause lost and the outcome called
//! unknown although nothing was written. So a store ends its own waits (for a
//! pooled connection, a lock, a slow statement) [`MARGIN`] before the caller's
//! deadline and says what it waited for: nothing written, the send refused
//! with that cause.

use std::time::{Duration, Instant};

/// How long before the caller's deadline a store stops waiting: room for its
/// error to reach the caller before the caller's own timer fires, on a busy
/// machine too.
pub const MARGIN: Duration = Duration::from_millis(200);

/// The instant by which a store stops waiting for one caller, if the caller
/// has a deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    by: Option<Instant>,
}

impl Limit {
    /// No limit: the store's own timeouts alone bound its waits.
    pub const NONE: Limit = Limit { by: None };

    /// The limit for a caller whose `deadline` (if any) counts from about now:
    /// [`MARGIN`] before it, and never less than half of it (a short deadline
    /// still leaves the store a fair share).
    pub fn for_deadline(deadline: Option<Duration>) -> Limit {
        Self::for_deadline_from(Instant::now(), deadline)
    }

    /// As [`for_deadline`](Self::for_deadline), counting from `start`.
    pub fn for_deadline_from(start: Instant, deadline: Option<Duration>) -> Limit {
        Limit {
            by: deadline.map(|deadline| start + share(deadline)),
        }
    }

    /// The time left at `now`: `None` without a limit, zero once it passed.
    pub fn left(&self, now: Instant) -> Option<Duration> {
        self.by.map(|by| by.saturating_duration_since(now))
    }

    /// `wait`, cut to the time left at `now`.
    pub fn shorter(&self, wait: Duration, now: Instant) -> Duration {
        self.left(now).map_or(wait, |left| left.min(wait))
    }
}

/// The part of a deadline a store may wait.
fn share(deadline: Duration) -> Duration {
    deadline.saturating_sub(MARGIN).max(deadline / 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_stops_the_margin_before_the_deadline_and_keeps_half_of_a_short_one() {
        let start = Instant::now();
        let cases = [
            (3_000, 2_800),
            (1_000, 800),
            (400, 200),
            (300, 150),
            (100, 50),
            (0, 0),
        ];
        for (deadline_ms, left_ms) in cases {
            let limit = Limit::for_deadline_from(start, Some(Duration::from_millis(deadline_ms)));
            assert_eq!(
                limit.left(start),
                Some(Duration::from_millis(left_ms)),
                "deadline {deadline_ms} ms"
            );
        }
    }

    #[test]
    fn without_a_deadline_nothing_is_cut_and_past_the_limit_nothing_is_left() {
        let start = Instant::now();
        assert_eq!(Limit::NONE.left(start), None);
        assert_eq!(
            Limit::NONE.shorter(Duration::from_secs(5), start),
            Duration::from_secs(5)
        );
        let limit = Limit::for_deadline_from(start, Some(Duration::from_secs(1)));
        assert_eq!(
            limit.shorter(Duration::from_secs(5), start),
            Duration::from_millis(800)
        );
        assert_eq!(
            limit.shorter(Duration::from_millis(100), start),
            Duration::from_millis(100)
        );
        let later = start + Duration::from_secs(2);
        assert_eq!(limit.left(later), Some(Duration::ZERO));
    }
}
