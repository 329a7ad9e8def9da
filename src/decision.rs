//! After an attempt: first a [`Decision`] (a classifier's, the server's hint, or
//! the default: retry or stop), then deliver, give up (and why), or pause (how
//! long, and why).
//!
//! The whole answer is one pure function of the facts ([`after_attempt`]), so every
//! rule and every conflict between rules is a row in a table test, without I/O or
//! clocks. The gates (the budget, a breaker) are asked afterwards, by the loop: they
//! count what they admit, so they are asked only about a pause this function chose.

use std::time::Duration;

use crate::attempt_log::DelayReason;
use crate::error::GiveUpReason;
use crate::gate::RetryCause;

/// A classification: retry the intent, or stop here.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Decision {
    /// The failure is transient; another attempt may succeed.
    Retry,
    /// Transient, and the next attempt must not start before this long — e.g. a
    /// vendor header that says when to come back. Treated like a `Retry-After`
    /// (it replaces the header's value): the pause is at least this long, and a
    /// wait beyond the ceiling or the deadline ends the intent at once.
    RetryAfter(Duration),
    /// Final: a success, or a failure that will not change on retry.
    Stop,
}

impl Decision {
    /// True for [`Retry`](Self::Retry) and [`RetryAfter`](Self::RetryAfter).
    pub fn is_retry(&self) -> bool {
        matches!(self, Self::Retry | Self::RetryAfter(_))
    }
}

/// What the loop does after an attempt.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// The caller gets this attempt's response.
    Deliver,
    /// The intent is over, for this reason.
    GiveUp(GiveUpReason),
    /// Pause this long, then try again (if the gates admit the retry).
    Pause {
        delay: Duration,
        reason: DelayReason,
        cause: RetryCause,
    },
}

/// What the attempt ended with, as far as the rules care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// A response; `retry` when its status is transient and a retry is safe.
    Response { retry: bool },
    /// No response; `retry` when the failure is transient and a retry is safe.
    Failed { retry: bool },
    /// reqwest could not build the request: the caller's mistake, nothing sent.
    InvalidRequest,
}

/// The facts the decision is made from.
#[derive(Debug, Clone, Copy)]
pub struct Facts {
    pub ended: Ended,
    /// A 409 on a keyed request: the same key is still executing on the server.
    pub conflict: bool,
    /// The body can be sent again (bytes, none, or a factory).
    pub replayable: bool,
    /// Attempts made so far that count toward `max_attempts` (≥ 1 unless this one
    /// was a 409 waited out): see [`after_attempt`] for the 409s that do not count.
    pub attempts_made: u32,
    pub max_attempts: u32,
    /// Time left before the deadline; `None` without a deadline.
    pub remaining: Option<Duration>,
    /// What the server asked for, if it asked.
    pub retry_after: Option<Duration>,
    pub retry_after_ceiling: Duration,
    /// A resend of an intent read whole was answered `410 Gone`: the server finished
    /// the key but did not keep its response (`RequestBuilder::whole_body`).
    pub completed_not_kept: bool,
    /// This attempt was a `425 Too Early`, and an earlier one was too: a 425 is
    /// retried once (RFC 8470 asks for one resend outside early data).
    pub too_early_again: bool,
    /// The shortest pause after a 409 "same key still in progress".
    pub conflict_delay: Duration,
    /// A 409 may still be waited out without using up an attempt: fewer have been
    /// than [`conflict_wait_limit`] allows.
    pub conflict_waits_left: bool,
    /// The least time an attempt must have after the pause to be worth sending.
    pub min_attempt_window: Duration,
}

/// An attempt left with less than a tenth of the time it could normally have (its
/// timeout, or the whole deadline if that is shorter) would only time out — and a
/// timed-out attempt may still have been delivered, turning a known outcome into an
/// unknown one. With neither a timeout nor a deadline, 10 ms.
pub fn min_attempt_window(
    attempt_timeout: Option<Duration>,
    deadline: Option<Duration>,
) -> Duration {
    let longest_attempt = match (attempt_timeout, deadline) {
        (Some(timeout), Some(deadline)) => Some(timeout.min(deadline)),
        (timeout, deadline) => timeout.or(deadline),
    };
    longest_attempt.map_or(Duration::from_millis(10), |longest| longest / 10)
}

/// Whether this attempt was a keyed 409 "in progress" that does not use up an
/// attempt: it is waited out within the deadline (see [`after_attempt`], rule 4).
pub fn waits_out(facts: Facts) -> bool {
    facts.conflict && facts.conflict_waits_left
}

/// How many 409s an intent waits out without using up attempts: as many pauses of
/// `conflict_delay` (at least 10 ms) as the deadline holds — none without a
/// deadline. The clock ends the wait first in production; this count ends it where
/// pauses take no time (a recording sleeper in tests), so a server that answers 409
/// forever never meets an endless loop.
pub fn conflict_wait_limit(deadline: Option<Duration>, conflict_delay: Duration) -> u32 {
    let pace = conflict_delay.max(Duration::from_millis(10));
    deadline.map_or(0, |deadline| {
        u32::try_from(deadline.as_nanos() / pace.as_nanos()).unwrap_or(u32::MAX)
    })
}

/// Deliver, give up, or pause — in this order of precedence:
/// 1. a request reqwest could not build is the caller's mistake;
/// 2. a final response is delivered (a second `425 Too Early` is final), except a
///    `410` that says a resend's key finished without its response; a failure that is
///    not transient, or whose retry is not safe, ends the intent;
/// 3. a body that cannot be sent again ends it (unless no attempt is left anyway:
///    then running out of attempts is the reason);
/// 4. no time left, or no attempt left — a keyed 409 "in progress" under a deadline
///    always leaves one: the server is executing the intent, so the wait is bounded
///    by the deadline, not by `max_attempts` (waiting it out is the only way to learn
///    the result; giving up makes the outcome unknown). Without a deadline nothing
///    else would bound the wait, so there a 409 counts as an attempt
///    ([`conflict_wait_limit`]);
/// 5. the pause: the backoff (`backoff` is called only here, so no jitter is drawn
///    when no retry can follow), at least `conflict_delay` after a 409, never
///    shorter than the server's Retry-After — unless that is beyond the ceiling or
///    the deadline, which ends the intent at once; and no pause that would leave
///    the next attempt less than its useful window before the deadline.
pub fn after_attempt(facts: Facts, backoff: impl FnOnce() -> Duration) -> Next {
    let retry = match facts.ended {
        Ended::InvalidRequest => return Next::GiveUp(GiveUpReason::InvalidRequest),
        Ended::Response { .. } if facts.completed_not_kept => {
            return Next::GiveUp(GiveUpReason::CompletedNotKept)
        }
        Ended::Response { retry: false } => return Next::Deliver,
        Ended::Response { retry: true } if facts.too_early_again => return Next::Deliver,
        Ended::Failed { retry: false } => return Next::GiveUp(GiveUpReason::NotRetryable),
        Ended::Response { retry: true } | Ended::Failed { retry: true } => true,
    };
    debug_assert!(retry);
    let attempts_left = waits_out(facts) || facts.attempts_made < facts.max_attempts;
    if !facts.replayable && attempts_left {
        return Next::GiveUp(GiveUpReason::BodyNotReplayable);
    }
    if facts.remaining == Some(Duration::ZERO) {
        return Next::GiveUp(GiveUpReason::DeadlineExceeded);
    }
    if !attempts_left {
        return Next::GiveUp(GiveUpReason::AttemptsExhausted);
    }
    // Would an attempt after a pause of `delay` still have a useful window?
    let too_late = |delay: Duration| {
        facts
            .remaining
            .is_some_and(|left| delay.saturating_add(facts.min_attempt_window) > left)
    };
    let cause = if facts.conflict {
        RetryCause::Conflict
    } else {
        RetryCause::Transient
    };
    // A key still executing on the server is not polled at the backoff's pace.
    let backoff = backoff();
    let (floor, floor_reason) = if facts.conflict && facts.conflict_delay > backoff {
        (facts.conflict_delay, DelayReason::Conflict)
    } else {
        (backoff, DelayReason::Backoff)
    };
    // Never come back earlier than the server asked, and do not sleep towards a time
    // already known to be too late. A short (or zero) ask still gets the backoff's
    // jitter, so that throttled clients do not all return at the same instant.
    let (delay, reason) = match facts.retry_after {
        Some(asked) if asked > facts.retry_after_ceiling => {
            return Next::GiveUp(GiveUpReason::RetryAfterBeyondCeiling)
        }
        Some(asked) if too_late(asked) => {
            return Next::GiveUp(GiveUpReason::RetryAfterBeyondDeadline)
        }
        Some(asked) if asked >= floor => (asked, DelayReason::RetryAfter),
        _ => (floor, floor_reason),
    };
    if too_late(delay) {
        return Next::GiveUp(GiveUpReason::DeadlineExceeded);
    }
    Next::Pause {
        delay,
        reason,
        cause,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: Duration = Duration::from_millis(1);

    /// A transient 503 after the first of three attempts, 1 s left, 100 ms backoff.
    fn facts() -> Facts {
        Facts {
            ended: Ended::Response { retry: true },
            conflict: false,
            replayable: true,
            attempts_made: 1,
            max_attempts: 3,
            remaining: Some(1000 * MS),
            retry_after: None,
            retry_after_ceiling: 500 * MS,
            completed_not_kept: false,
            too_early_again: false,
            conflict_delay: 400 * MS,
            conflict_waits_left: true,
            min_attempt_window: 10 * MS,
        }
    }

    fn pause(delay: Duration, reason: DelayReason) -> Next {
        Next::Pause {
            delay,
            reason,
            cause: RetryCause::Transient,
        }
    }

    fn give_up(reason: GiveUpReason) -> Next {
        Next::GiveUp(reason)
    }

    /// Every outcome of the decision, and every conflict between two rules: each
    /// row changes the baseline (`facts()`) and names the rule that must win.
    #[test]
    #[rustfmt::skip]
    fn the_decision_table() {
        use GiveUpReason::*;
        let base = facts();
        let conflict = Facts {
            conflict: true,
            ..base
        };
        let rows: Vec<(&str, Facts, Duration, Next)> = vec![
            ("transient, time and attempts left: the backoff", base, 100 * MS, pause(100 * MS, DelayReason::Backoff)),
            ("a final response is delivered", Facts { ended: Ended::Response { retry: false }, ..base }, 100 * MS, Next::Deliver),
            ("a second 425 Too Early is delivered", Facts { too_early_again: true, ..base }, 100 * MS, Next::Deliver),
            ("a resend's 410: completed, its response not kept", Facts { ended: Ended::Response { retry: false }, completed_not_kept: true, ..base }, 100 * MS, give_up(CompletedNotKept)),
            ("a final response beats no time left", Facts { ended: Ended::Response { retry: false }, remaining: Some(Duration::ZERO), ..base }, 100 * MS, Next::Deliver),
            ("a failure not to retry", Facts { ended: Ended::Failed { retry: false }, ..base }, 100 * MS, give_up(NotRetryable)),
            ("a request reqwest could not build", Facts { ended: Ended::InvalidRequest, ..base }, 100 * MS, give_up(InvalidRequest)),
            ("not retryable beats a stream body", Facts { ended: Ended::Failed { retry: false }, replayable: false, ..base }, 100 * MS, give_up(NotRetryable)),
            ("a stream body cannot be sent again", Facts { replayable: false, ..base }, 100 * MS, give_up(BodyNotReplayable)),
            ("a stream body beats no time left", Facts { replayable: false, remaining: Some(Duration::ZERO), ..base }, 100 * MS, give_up(BodyNotReplayable)),
            ("no attempt left beats a stream body", Facts { replayable: false, attempts_made: 3, ..base }, 100 * MS, give_up(AttemptsExhausted)),
            ("no attempt left", Facts { attempts_made: 3, ..base }, 100 * MS, give_up(AttemptsExhausted)),
            ("no time left beats no attempt left", Facts { attempts_made: 3, remaining: Some(Duration::ZERO), ..base }, 100 * MS, give_up(DeadlineExceeded)),
            ("no time left", Facts { remaining: Some(Duration::ZERO), ..base }, 100 * MS, give_up(DeadlineExceeded)),
            ("a pause that leaves no useful window", Facts { remaining: Some(105 * MS), ..base }, 100 * MS, give_up(DeadlineExceeded)),
            ("a pause that leaves just the useful window", Facts { remaining: Some(110 * MS), ..base }, 100 * MS, pause(100 * MS, DelayReason::Backoff)),
            ("the last attempt left", Facts { attempts_made: 2, ..base }, 100 * MS, pause(100 * MS, DelayReason::Backoff)),
            ("no deadline: any pause fits", Facts { remaining: None, ..base }, 100 * MS, pause(100 * MS, DelayReason::Backoff)),
            ("Retry-After longer than the backoff wins", Facts { retry_after: Some(300 * MS), ..base }, 100 * MS, pause(300 * MS, DelayReason::RetryAfter)),
            ("a shorter Retry-After keeps the jitter", Facts { retry_after: Some(Duration::ZERO), ..base }, 100 * MS, pause(100 * MS, DelayReason::Backoff)),
            ("a Retry-After equal to the backoff is the server's ask", Facts { retry_after: Some(100 * MS), ..base }, 100 * MS, pause(100 * MS, DelayReason::RetryAfter)),
            ("a Retry-After at the ceiling is waited", Facts { retry_after: Some(500 * MS), remaining: None, ..base }, 100 * MS, pause(500 * MS, DelayReason::RetryAfter)),
            ("a Retry-After that leaves just the useful window", Facts { retry_after: Some(290 * MS), remaining: Some(300 * MS), ..base }, 100 * MS, pause(290 * MS, DelayReason::RetryAfter)),
            ("Retry-After beyond the ceiling", Facts { retry_after: Some(600 * MS), remaining: None, ..base }, 100 * MS, give_up(RetryAfterBeyondCeiling)),
            ("Retry-After beyond the ceiling beats beyond the deadline", Facts { retry_after: Some(600 * MS), remaining: Some(300 * MS), ..base }, 100 * MS, give_up(RetryAfterBeyondCeiling)),
            ("Retry-After beyond the deadline", Facts { retry_after: Some(400 * MS), remaining: Some(300 * MS), ..base }, 100 * MS, give_up(RetryAfterBeyondDeadline)),
            ("no attempt left beats Retry-After beyond the ceiling", Facts { retry_after: Some(600 * MS), attempts_made: 3, ..base }, 100 * MS, give_up(AttemptsExhausted)),
            ("a 409 waits at least the conflict delay", conflict, 100 * MS, Next::Pause { delay: 400 * MS, reason: DelayReason::Conflict, cause: RetryCause::Conflict }),
            ("a 409 with a longer Retry-After", Facts { retry_after: Some(450 * MS), ..conflict }, 100 * MS, Next::Pause { delay: 450 * MS, reason: DelayReason::RetryAfter, cause: RetryCause::Conflict }),
            ("a 409 with a longer backoff", conflict, 600 * MS, Next::Pause { delay: 600 * MS, reason: DelayReason::Backoff, cause: RetryCause::Conflict }),
            ("a 409 whose backoff is the conflict delay: the backoff", conflict, 400 * MS, Next::Pause { delay: 400 * MS, reason: DelayReason::Backoff, cause: RetryCause::Conflict }),
            ("a 409 whose wait cannot fit", Facts { remaining: Some(405 * MS), ..conflict }, 100 * MS, give_up(DeadlineExceeded)),
            ("a 409 under a deadline does not use up an attempt", Facts { attempts_made: 3, ..conflict }, 100 * MS, Next::Pause { delay: 400 * MS, reason: DelayReason::Conflict, cause: RetryCause::Conflict }),
            ("a 409 past the waits the deadline holds counts as an attempt", Facts { attempts_made: 3, conflict_waits_left: false, ..conflict }, 100 * MS, give_up(AttemptsExhausted)),
            ("no time left ends a 409's wait", Facts { attempts_made: 3, remaining: Some(Duration::ZERO), ..conflict }, 100 * MS, give_up(DeadlineExceeded)),
            ("a 409's Retry-After beyond the deadline", Facts { attempts_made: 3, retry_after: Some(400 * MS), remaining: Some(300 * MS), ..conflict }, 100 * MS, give_up(RetryAfterBeyondDeadline)),
        ];
        for (rule, facts, backoff, expected) in rows {
            assert_eq!(after_attempt(facts, || backoff), expected, "{rule}");
        }
    }

    #[test]
    fn no_jitter_is_drawn_when_no_retry_can_follow() {
        for facts in [
            Facts {
                attempts_made: 3,
                ..facts()
            },
            Facts {
                ended: Ended::Response { retry: false },
                ..facts()
            },
            Facts {
                replayable: false,
                ..facts()
            },
            Facts {
                remaining: Some(Duration::ZERO),
                ..facts()
            },
        ] {
            let _ = after_attempt(facts, || panic!("drew jitter for {facts:?}"));
        }
    }

    #[test]
    fn the_409s_a_deadline_holds() {
        let s = Duration::from_secs(1);
        #[rustfmt::skip]
        let rows = [
            ("the defaults: 30 s at 1 s", Some(30 * s), s, 30),
            ("no deadline: every 409 counts", None, s, 0),
            ("a shorter pace", Some(s), 250 * MS, 4),
            ("a zero delay is paced at 10 ms", Some(s), Duration::ZERO, 100),
            ("a deadline shorter than one pause", Some(500 * MS), s, 0),
        ];
        for (name, deadline, delay, want) in rows {
            assert_eq!(conflict_wait_limit(deadline, delay), want, "{name}");
        }
    }

    #[test]
    fn the_useful_window_is_a_tenth_of_the_longest_attempt() {
        let s = Duration::from_secs(1);
        assert_eq!(min_attempt_window(Some(2 * s), None), 200 * MS);
        // A per-request deadline shorter than the policy's attempt timeout wins.
        assert_eq!(min_attempt_window(Some(10 * s), Some(s)), 100 * MS);
        assert_eq!(min_attempt_window(None, Some(s)), 100 * MS);
        assert_eq!(min_attempt_window(None, None), 10 * MS);
    }

    proptest! {
        #[test]
        fn a_pause_never_ends_past_the_deadline_nor_before_retry_after(
            attempts_made in 1u32..10, max_attempts in 1u32..10,
            remaining in proptest::option::of(0u64..10_000),
            retry_after in proptest::option::of(0u64..20_000),
            ceiling in 0u64..20_000, backoff in 0u64..5_000, window in 0u64..1_000,
            conflict in any::<bool>(), conflict_delay in 0u64..5_000,
            replayable in any::<bool>(), conflict_waits_left in any::<bool>(),
        ) {
            let f = Facts {
                ended: Ended::Failed { retry: true },
                conflict,
                replayable,
                attempts_made, max_attempts,
                remaining: remaining.map(Duration::from_millis),
                retry_after: retry_after.map(Duration::from_millis),
                retry_after_ceiling: Duration::from_millis(ceiling),
                completed_not_kept: false,
                too_early_again: false,
                conflict_delay: Duration::from_millis(conflict_delay),
                conflict_waits_left,
                min_attempt_window: Duration::from_millis(window),
            };
            let backoff = Duration::from_millis(backoff);
            let floored = if conflict { backoff.max(f.conflict_delay) } else { backoff };
            if let Next::Pause { delay, reason, .. } = after_attempt(f, || backoff) {
                prop_assert!(attempts_made < max_attempts || (conflict && conflict_waits_left));
                prop_assert!(replayable);
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
