//! After a transient failure: wait how long, or give up and why.
//!
//! A pure function of the facts (attempts made, time left, the server's Retry-After,
//! the backoff's proposal), so every branch is tested without I/O or clocks.

use std::time::Duration;

use crate::attempt_log::DelayReason;

/// The facts the decision is made from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Facts {
    /// Attempts made so far (≥ 1).
    pub(crate) attempts_made: u32,
    pub(crate) max_attempts: u32,
    /// Time left before the deadline; `None` without a deadline.
    pub(crate) remaining: Option<Duration>,
    /// What the server asked for, if it asked.
    pub(crate) retry_after: Option<Duration>,
    pub(crate) retry_after_ceiling: Duration,
    /// What the backoff strategy proposes.
    pub(crate) backoff: Duration,
    /// The shortest pause after a 409 "same key still in progress"; `None` otherwise.
    pub(crate) conflict_floor: Option<Duration>,
    /// The least time an attempt must have after the pause to be worth sending.
    pub(crate) min_attempt_window: Duration,
}

/// An attempt left with less than a tenth of the time it could normally have (its
/// timeout, or the whole deadline if that is shorter) would only time out — and a
/// timed-out attempt may still have been delivered, turning a known outcome into an
/// unknown one. With neither a timeout nor a deadline, 10 ms.
pub(crate) fn min_attempt_window(
    attempt_timeout: Option<Duration>,
    deadline: Option<Duration>,
) -> Duration {
    let longest_attempt = match (attempt_timeout, deadline) {
        (Some(timeout), Some(deadline)) => Some(timeout.min(deadline)),
        (timeout, deadline) => timeout.or(deadline),
    };
    longest_attempt.map_or(Duration::from_millis(10), |longest| longest / 10)
}

/// What to do next.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NextStep {
    Wait(Duration, DelayReason),
    GiveUp(GiveUp),
}

/// Why the decision gave up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GiveUp {
    DeadlineExceeded,
    AttemptsExhausted,
    RetryAfterBeyondCeiling,
    RetryAfterBeyondDeadline,
}

pub(crate) fn next_step(facts: Facts) -> NextStep {
    if facts.remaining == Some(Duration::ZERO) {
        return NextStep::GiveUp(GiveUp::DeadlineExceeded);
    }
    if facts.attempts_made >= facts.max_attempts {
        return NextStep::GiveUp(GiveUp::AttemptsExhausted);
    }
    // Would an attempt after a pause of `delay` still have a useful window?
    let too_late = |delay: Duration| {
        facts
            .remaining
            .is_some_and(|left| delay.saturating_add(facts.min_attempt_window) > left)
    };
    // Never come back earlier than the server asked, and do not sleep towards a time
    // already known to be too late. A short (or zero) ask still gets the backoff's
    // jitter, so that throttled clients do not all return at the same instant.
    // A key still executing on the server is not polled at the backoff's pace.
    let (backoff, backoff_reason) = match facts.conflict_floor {
        Some(floor) if floor > facts.backoff => (floor, DelayReason::Conflict),
        _ => (facts.backoff, DelayReason::Backoff),
    };
    let (delay, reason) = match facts.retry_after {
        Some(asked) if asked > facts.retry_after_ceiling => {
            return NextStep::GiveUp(GiveUp::RetryAfterBeyondCeiling)
        }
        Some(asked) if too_late(asked) => {
            return NextStep::GiveUp(GiveUp::RetryAfterBeyondDeadline)
        }
        Some(asked) if asked >= backoff => (asked, DelayReason::RetryAfter),
        _ => (backoff, backoff_reason),
    };
    if too_late(delay) {
        return NextStep::GiveUp(GiveUp::DeadlineExceeded);
    }
    NextStep::Wait(delay, reason)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: Duration = Duration::from_millis(1);

    fn facts() -> Facts {
        Facts {
            attempts_made: 1,
            max_attempts: 3,
            remaining: Some(1000 * MS),
            retry_after: None,
            retry_after_ceiling: 500 * MS,
            backoff: 100 * MS,
            conflict_floor: None,
            min_attempt_window: 10 * MS,
        }
    }

    #[test]
    fn a_key_in_progress_is_not_polled_faster_than_the_conflict_floor() {
        let conflict = Facts {
            conflict_floor: Some(400 * MS),
            ..facts()
        };
        assert_eq!(
            next_step(conflict),
            NextStep::Wait(400 * MS, DelayReason::Conflict)
        );
        // The server's longer ask still wins; a longer backoff too.
        let asked = Facts {
            retry_after: Some(450 * MS),
            ..conflict
        };
        assert_eq!(
            next_step(asked),
            NextStep::Wait(450 * MS, DelayReason::RetryAfter)
        );
        let long_backoff = Facts {
            backoff: 600 * MS,
            ..conflict
        };
        assert_eq!(
            next_step(long_backoff),
            NextStep::Wait(600 * MS, DelayReason::Backoff)
        );
        // A floor that cannot fit before the deadline ends the intent.
        let late = Facts {
            conflict_floor: Some(995 * MS),
            ..facts()
        };
        assert_eq!(next_step(late), NextStep::GiveUp(GiveUp::DeadlineExceeded));
    }

    #[test]
    fn waits_the_backoff_when_the_server_says_nothing() {
        assert_eq!(
            next_step(facts()),
            NextStep::Wait(100 * MS, DelayReason::Backoff)
        );
    }

    #[test]
    fn retry_after_is_never_undercut_and_a_shorter_ask_keeps_the_jitter() {
        let longer = Facts {
            retry_after: Some(300 * MS),
            ..facts()
        };
        assert_eq!(
            next_step(longer),
            NextStep::Wait(300 * MS, DelayReason::RetryAfter)
        );
        let shorter = Facts {
            retry_after: Some(Duration::ZERO),
            ..facts()
        };
        assert_eq!(
            next_step(shorter),
            NextStep::Wait(100 * MS, DelayReason::Backoff)
        );
    }

    #[test]
    fn no_retry_without_a_useful_window_after_the_pause() {
        let f = Facts {
            remaining: Some(105 * MS),
            ..facts()
        };
        // 100 ms of pause would leave 5 ms, less than the 10 ms window.
        assert_eq!(next_step(f), NextStep::GiveUp(GiveUp::DeadlineExceeded));
        let s = Duration::from_secs(1);
        assert_eq!(min_attempt_window(Some(2 * s), None), 200 * MS);
        // A per-request deadline shorter than the policy's attempt timeout wins.
        assert_eq!(min_attempt_window(Some(10 * s), Some(s)), 100 * MS);
        assert_eq!(min_attempt_window(None, Some(s)), 100 * MS);
        assert_eq!(min_attempt_window(None, None), 10 * MS);
    }

    #[test]
    fn retry_after_beyond_ceiling_or_deadline_gives_up_at_once() {
        let beyond_ceiling = Facts {
            retry_after: Some(600 * MS),
            remaining: None,
            ..facts()
        };
        assert_eq!(
            next_step(beyond_ceiling),
            NextStep::GiveUp(GiveUp::RetryAfterBeyondCeiling)
        );
        let beyond_deadline = Facts {
            retry_after: Some(400 * MS),
            remaining: Some(300 * MS),
            ..facts()
        };
        assert_eq!(
            next_step(beyond_deadline),
            NextStep::GiveUp(GiveUp::RetryAfterBeyondDeadline)
        );
    }

    #[test]
    fn attempts_and_deadline_end_the_intent() {
        let exhausted = Facts {
            attempts_made: 3,
            ..facts()
        };
        assert_eq!(
            next_step(exhausted),
            NextStep::GiveUp(GiveUp::AttemptsExhausted)
        );
        let expired = Facts {
            attempts_made: 3,
            remaining: Some(Duration::ZERO),
            ..facts()
        };
        assert_eq!(
            next_step(expired),
            NextStep::GiveUp(GiveUp::DeadlineExceeded)
        );
        let pause_too_long = Facts {
            remaining: Some(100 * MS),
            ..facts()
        };
        assert_eq!(
            next_step(pause_too_long),
            NextStep::GiveUp(GiveUp::DeadlineExceeded)
        );
    }

    proptest! {
        #[test]
        fn a_pause_never_ends_past_the_deadline_nor_before_retry_after(
            attempts_made in 1u32..10, max_attempts in 1u32..10,
            remaining in proptest::option::of(0u64..10_000),
            retry_after in proptest::option::of(0u64..20_000),
            ceiling in 0u64..20_000, backoff in 0u64..5_000, window in 0u64..1_000,
            floor in proptest::option::of(0u64..5_000),
        ) {
            let f = Facts {
                attempts_made, max_attempts,
                remaining: remaining.map(Duration::from_millis),
                retry_after: retry_after.map(Duration::from_millis),
                retry_after_ceiling: Duration::from_millis(ceiling),
                backoff: Duration::from_millis(backoff),
                conflict_floor: floor.map(Duration::from_millis),
                min_attempt_window: Duration::from_millis(window),
            };
            let floored = f.backoff.max(f.conflict_floor.unwrap_or_default());
            if let NextStep::Wait(delay, reason) = next_step(f) {
                prop_assert!(attempts_made < max_attempts);
                if let Some(left) = f.remaining {
                    prop_assert!(delay + f.min_attempt_window <= left);
                }
                if let Some(asked) = f.retry_after {
                    prop_assert!(delay >= asked, "never earlier than asked");
                    prop_assert_eq!(delay, asked.max(floored));
                    prop_assert!(asked <= f.retry_after_ceiling);
                } else {
                    prop_assert_eq!(delay, floored);
                    prop_assert!(matches!(reason, DelayReason::Backoff | DelayReason::Conflict));
                }
            }
        }
    }
}
