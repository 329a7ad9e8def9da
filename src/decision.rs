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
    // The server's word beats the backoff: never come back earlier than asked, and
    // do not sleep towards a time we already know is too late.
    let (delay, reason) = match facts.retry_after {
        Some(asked) if asked > facts.retry_after_ceiling => {
            return NextStep::GiveUp(GiveUp::RetryAfterBeyondCeiling)
        }
        Some(asked) if facts.remaining.is_some_and(|left| asked >= left) => {
            return NextStep::GiveUp(GiveUp::RetryAfterBeyondDeadline)
        }
        Some(asked) => (asked, DelayReason::RetryAfter),
        None => (facts.backoff, DelayReason::Backoff),
    };
    if facts.remaining.is_some_and(|left| delay >= left) {
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
        }
    }

    #[test]
    fn waits_the_backoff_when_the_server_says_nothing() {
        assert_eq!(
            next_step(facts()),
            NextStep::Wait(100 * MS, DelayReason::Backoff)
        );
    }

    #[test]
    fn retry_after_wins_over_backoff_even_when_shorter() {
        let f = Facts {
            retry_after: Some(20 * MS),
            ..facts()
        };
        assert_eq!(
            next_step(f),
            NextStep::Wait(20 * MS, DelayReason::RetryAfter)
        );
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
            ceiling in 0u64..20_000, backoff in 0u64..5_000,
        ) {
            let f = Facts {
                attempts_made, max_attempts,
                remaining: remaining.map(Duration::from_millis),
                retry_after: retry_after.map(Duration::from_millis),
                retry_after_ceiling: Duration::from_millis(ceiling),
                backoff: Duration::from_millis(backoff),
            };
            if let NextStep::Wait(delay, reason) = next_step(f) {
                prop_assert!(attempts_made < max_attempts);
                if let Some(left) = f.remaining { prop_assert!(delay < left); }
                if let Some(asked) = f.retry_after {
                    prop_assert_eq!(delay, asked);
                    prop_assert_eq!(reason, DelayReason::RetryAfter);
                    prop_assert!(asked <= f.retry_after_ceiling);
                }
            }
        }
    }
}
