//! The total time the caller will wait for an intent: attempts and pauses together.
//!
//! Without one, each layer's fresh timer lets a transient fault outlive the user's
//! patience: the fifth attempt, 30 s later, only burns the server's resources. Every
//! attempt's timeout is therefore `min(attempt timeout, time left)`, and no pause is
//! started that would end at or after the deadline.
//!
//! Each attempt's timeout is decided in two steps, both here: once per intent
//! ([`AttemptTimeout::for_intent`]: the policy's setting, or the one implied by the
//! intent's deadline; a per-request `timeout()` replaces it), and once per attempt
//! ([`Deadline::attempt_timeout`]: cut to the time left). `outgoing` puts the result
//! on the wire.

use std::time::{Duration, Instant};

/// The implied attempt timeout when the deadline is long (or there is none).
pub(crate) const DEFAULT_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);

/// The policy's attempt timeout setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AttemptTimeout {
    /// Derived from each intent's deadline (see [`AttemptTimeout::for_intent`]).
    Implied,
    /// Set by the user.
    Fixed(Duration),
    /// No per-attempt timeout: only the deadline bounds an attempt.
    Off,
}

impl AttemptTimeout {
    /// The timeout of each attempt of an intent with this deadline, before it is cut
    /// to the time left.
    ///
    /// The implied one is 10 s, or half the deadline if that is shorter: an attempt
    /// allowed the whole deadline would leave a server that hangs exactly one
    /// attempt, however many the policy allows. Half still lets a slow but healthy
    /// server (answering in 0.8 s under a 2 s deadline) succeed at the first
    /// attempt. A single-attempt policy has no retry to make room for.
    pub(crate) fn for_intent(
        self,
        deadline: Option<Duration>,
        max_attempts: u32,
    ) -> Option<Duration> {
        match self {
            Self::Fixed(timeout) => Some(timeout),
            Self::Off => None,
            Self::Implied => Some(match deadline {
                None => DEFAULT_ATTEMPT_TIMEOUT,
                Some(deadline) if max_attempts <= 1 => deadline.min(DEFAULT_ATTEMPT_TIMEOUT),
                Some(deadline) => (deadline / 2).min(DEFAULT_ATTEMPT_TIMEOUT),
            }),
        }
    }
}

/// When an intent must be over.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadline {
    started: Instant,
    limit: Option<Duration>,
}

impl Deadline {
    pub(crate) fn new(started: Instant, limit: Option<Duration>) -> Self {
        Self { started, limit }
    }

    /// When the intent started: the deadline counts from here.
    pub(crate) fn started(&self) -> Instant {
        self.started
    }

    /// Time left at `now`; `None` when the intent has no deadline.
    pub(crate) fn remaining(&self, now: Instant) -> Option<Duration> {
        self.limit
            .map(|limit| limit.saturating_sub(now.saturating_duration_since(self.started)))
    }

    /// The timeout for an attempt starting at `now`: `per_attempt` (the intent's,
    /// from [`AttemptTimeout::for_intent`] or the request's own) cut to the time left.
    pub(crate) fn attempt_timeout(
        &self,
        now: Instant,
        per_attempt: Option<Duration>,
    ) -> Option<Duration> {
        self.attempt_timeout_guarded(now, per_attempt, |_| true)
    }

    /// [`attempt_timeout`](Self::attempt_timeout) with its guard kept only where
    /// `holds` says so: the crate always passes `|_| true`, which the compiler folds
    /// away; the model checker's mutation tests switch it off (see `model_rules`).
    pub(crate) fn attempt_timeout_guarded(
        &self,
        now: Instant,
        per_attempt: Option<Duration>,
        holds: impl Fn(Guard) -> bool,
    ) -> Option<Duration> {
        let left = self.remaining(now).filter(|_| holds(Guard::CutToTimeLeft));
        match (left, per_attempt) {
            (Some(left), Some(each)) => Some(left.min(each)),
            (left, each) => left.or(each),
        }
    }
}

/// The guard of [`Deadline::attempt_timeout`] that a mutation test switches off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Guard {
    /// An attempt's timeout is cut to the time left (zero: no attempt starts).
    CutToTimeLeft,
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn attempt_timeout_is_clipped_to_the_time_left() {
        let start = Instant::now();
        let deadline = Deadline::new(start, Some(10 * S));
        assert_eq!(deadline.attempt_timeout(start, Some(3 * S)), Some(3 * S));
        assert_eq!(
            deadline.attempt_timeout(start + 8 * S, Some(3 * S)),
            Some(2 * S)
        );
        assert_eq!(deadline.attempt_timeout(start + 8 * S, None), Some(2 * S));
        assert_eq!(deadline.remaining(start + 11 * S), Some(Duration::ZERO));
        let unbounded = Deadline::new(start, None);
        assert_eq!(unbounded.attempt_timeout(start, Some(3 * S)), Some(3 * S));
        assert_eq!(unbounded.attempt_timeout(start, None), None);
        assert_eq!(unbounded.remaining(start + 100 * S), None);
    }

    #[test]
    fn the_implied_attempt_timeout_by_deadline_and_attempts() {
        let ms = Duration::from_millis;
        // (setting, deadline, max attempts) -> each attempt's timeout
        let table = [
            (AttemptTimeout::Implied, None, 3, Some(10 * S)),
            (AttemptTimeout::Implied, Some(30 * S), 3, Some(10 * S)),
            (AttemptTimeout::Implied, Some(20 * S), 3, Some(10 * S)),
            (AttemptTimeout::Implied, Some(2 * S), 4, Some(S)),
            (AttemptTimeout::Implied, Some(ms(200)), 3, Some(ms(100))),
            (AttemptTimeout::Implied, Some(2 * S), 1, Some(2 * S)),
            (AttemptTimeout::Implied, Some(60 * S), 1, Some(10 * S)),
            (AttemptTimeout::Fixed(3 * S), Some(2 * S), 4, Some(3 * S)),
            (AttemptTimeout::Fixed(3 * S), None, 4, Some(3 * S)),
            (AttemptTimeout::Off, Some(2 * S), 4, None),
        ];
        for (setting, deadline, attempts, expected) in table {
            assert_eq!(
                setting.for_intent(deadline, attempts),
                expected,
                "{setting:?} deadline {deadline:?} attempts {attempts}"
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn an_attempt_never_outlives_the_deadline_nor_its_own_timeout(
            deadline in proptest::option::of(1u64..100_000),
            own in proptest::option::of(1u64..100_000),
            fixed in proptest::option::of(1u64..100_000),
            elapsed in 0u64..200_000,
            attempts in 1u32..10,
        ) {
            let ms = Duration::from_millis;
            let start = Instant::now();
            let setting = fixed.map_or(AttemptTimeout::Implied, |f| AttemptTimeout::Fixed(ms(f)));
            let per_attempt = own.map(ms).or(setting.for_intent(deadline.map(ms), attempts));
            let window = Deadline::new(start, deadline.map(ms));
            let now = start + ms(elapsed);
            let timeout = window.attempt_timeout(now, per_attempt);
            if let Some(left) = window.remaining(now) {
                proptest::prop_assert!(timeout.is_some_and(|t| t <= left));
            }
            if let Some(each) = per_attempt {
                proptest::prop_assert!(timeout.is_some_and(|t| t <= each));
            }
            if let (Some(d), None, None) = (deadline, own, fixed) {
                // The implied timeout leaves room for a second attempt.
                if attempts > 1 {
                    proptest::prop_assert!(per_attempt.unwrap() <= ms(d) / 2);
                }
            }
        }
    }

    #[test]
    fn a_clock_that_goes_backwards_does_not_panic() {
        let start = Instant::now() + 5 * S;
        let deadline = Deadline::new(start, Some(S));
        assert_eq!(deadline.remaining(Instant::now()), Some(S));
    }
}
