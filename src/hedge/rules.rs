//! The hedge decisions as pure functions, each beside its table test: whether an
//! intent is hedged at all, whether a hedge may go now, what a copy's end means
//! for the race. (The adaptive delay is `estimator.rs`'s.)

use std::time::Duration;

use http::Method;

use super::Hedging;
use crate::attempt_log::{DelayReason, NotHedged};
use crate::clock::Instant;
use crate::decision::Next;
use crate::error::GiveUpReason;

/// Is this intent hedged? Only a method listed in the settings, never with a key
/// or a write-ahead (a deduplicating server answers a parallel copy 409, see the
/// module docs), only with a body that can be sent again, and only when
/// `max_attempts` leaves room for a second copy. `Err`: why not, for the attempt
/// log.
pub(crate) fn eligible(
    hedging: &Hedging,
    method: &Method,
    keyed: bool,
    write_ahead: bool,
    replayable: bool,
    max_attempts: u32,
) -> Result<(), NotHedged> {
    if !hedging.methods.contains(method) {
        Err(NotHedged::Method)
    } else if keyed {
        Err(NotHedged::Keyed)
    } else if write_ahead {
        Err(NotHedged::Durable)
    } else if !replayable {
        Err(NotHedged::BodyNotReplayable)
    } else if max_attempts < 2 {
        Err(NotHedged::SingleAttempt)
    } else {
        Ok(())
    }
}

/// What the race does after a copy ended, given the ordinary decision on it
/// (`decision::after_attempt`, asked with a zero backoff: a hedged intent sends
/// the next copy at once, as gRPC A6 does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// A final answer: the caller gets it now; the other copies are cancelled.
    Win,
    /// A failure while another copy still runs: a failure never beats a running
    /// copy, so wait for it (this result is kept in case every copy fails).
    Wait,
    /// A transient failure: send the next copy now (if the gates admit it).
    LaunchNow,
    /// A transient failure with `Retry-After`: no new copy before this long.
    LaunchAfter(Duration),
    /// Nothing else runs and no copy may follow: the intent ends so.
    GiveUp(GiveUpReason),
}

/// The step after a copy ended with `next`, while `others_running` copies are in
/// flight.
pub fn after_copy(next: Next, others_running: bool) -> Step {
    match next {
        Next::Deliver => Step::Win,
        Next::GiveUp(_) if others_running => Step::Wait,
        Next::GiveUp(reason) => Step::GiveUp(reason),
        Next::Pause {
            delay,
            reason: DelayReason::RetryAfter,
            ..
        } => Step::LaunchAfter(delay),
        Next::Pause { .. } => Step::LaunchNow,
    }
}

/// A copy ended at `now`, its answer asking for `asked` (a `Retry-After`): the
/// race's hold after it (the latest time any copy's answer allows the next copy),
/// and the `Retry-After` to decide this copy's end with (what is left of the hold).
///
/// The server asked every copy of the intent to stay away until then, not only the
/// one it answered: a copy that fails without `Retry-After`, or a hedge whose delay
/// passes, while another copy's `Retry-After` still holds waits for it too.
pub fn hold(
    held_until: Option<Instant>,
    asked: Option<Duration>,
    now: Instant,
) -> (Option<Instant>, Option<Duration>) {
    let asked_until = asked.map(|asked| now + asked);
    let held_until = held_until.max(asked_until);
    let left = held_until
        .map(|until| until.saturating_duration_since(now))
        .filter(|left| !left.is_zero() || asked.is_some());
    (held_until, left)
}

/// The facts a hedge (a copy sent because the delay passed) is decided on.
#[derive(Debug, Clone, Copy)]
pub struct HedgeFacts {
    pub in_flight: u32,
    pub max_copies: u32,
    /// Copies sent so far: each counts toward `max_attempts`.
    pub sent: u32,
    pub max_attempts: u32,
    pub remaining: Option<Duration>,
    /// The least time a copy must have to be worth sending
    /// (`decision::min_attempt_window`).
    pub min_attempt_window: Duration,
    /// A `Retry-After` still holds new copies back.
    pub held: bool,
}

/// Why no hedge goes now (the running copies carry on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoHedge {
    CopiesInFlight,
    AttemptsUsed,
    TooLate,
    Held,
}

/// May a hedge go now? Before the cap and the gates are asked (they count what
/// they admit).
pub fn may_hedge(facts: HedgeFacts) -> Result<(), NoHedge> {
    if facts.held {
        return Err(NoHedge::Held);
    }
    if facts.in_flight >= facts.max_copies {
        return Err(NoHedge::CopiesInFlight);
    }
    if facts.sent >= facts.max_attempts {
        return Err(NoHedge::AttemptsUsed);
    }
    if facts
        .remaining
        .is_some_and(|left| left < facts.min_attempt_window || left.is_zero())
    {
        return Err(NoHedge::TooLate);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::RetryCause;

    const MS: Duration = Duration::from_millis(1);

    /// name, settings, method, keyed, durable, replayable, max attempts → hedged, or why not
    type EligibleRow<'a> = (
        &'a str,
        &'a Hedging,
        Method,
        bool,
        bool,
        bool,
        u32,
        Result<(), NotHedged>,
    );
    /// name, held until, asked, now (ms) → held until, the `Retry-After` to decide with
    type HoldRow = (
        &'static str,
        Option<Instant>,
        Option<Duration>,
        u32,
        Option<Instant>,
        Option<Duration>,
    );

    #[test]
    fn which_intents_are_hedged() {
        let default = Hedging::default();
        let with_put = Hedging::default().methods([Method::GET, Method::PUT]);
        #[rustfmt::skip]
        let rows: [EligibleRow<'_>; 9] = [
            ("a GET",                         &default,  Method::GET,    false, false, true,  3, Ok(())),
            ("a HEAD",                        &default,  Method::HEAD,   false, false, true,  3, Ok(())),
            ("a PUT not listed",              &default,  Method::PUT,    false, false, true,  3, Err(NotHedged::Method)),
            ("a PUT listed",                  &with_put, Method::PUT,    false, false, true,  3, Ok(())),
            ("a POST is never hedged",        &default,  Method::POST,   true,  false, true,  3, Err(NotHedged::Method)),
            ("a keyed GET",                   &default,  Method::GET,    true,  false, true,  3, Err(NotHedged::Keyed)),
            ("a durable GET",                 &default,  Method::GET,    false, true,  true,  3, Err(NotHedged::Durable)),
            ("a streamed body",               &with_put, Method::PUT,    false, false, false, 3, Err(NotHedged::BodyNotReplayable)),
            ("one attempt leaves no copy",    &default,  Method::GET,    false, false, true,  1, Err(NotHedged::SingleAttempt)),
        ];
        for (name, hedging, method, keyed, durable, replayable, attempts, hedged) in rows {
            assert_eq!(
                eligible(hedging, &method, keyed, durable, replayable, attempts),
                hedged,
                "{name}"
            );
        }
    }

    #[test]
    fn what_a_copys_end_means() {
        let pause = |delay, reason| Next::Pause {
            delay,
            reason,
            cause: RetryCause::Transient,
        };
        #[rustfmt::skip]
        let rows: [(&str, Next, bool, Step); 9] = [
            ("a final answer wins at once",             Next::Deliver, true,  Step::Win),
            ("the last copy's final answer wins",       Next::Deliver, false, Step::Win),
            ("a 503 while another runs: launch now",    pause(Duration::ZERO, DelayReason::Backoff), true, Step::LaunchNow),
            ("a 503 alone: launch now",                 pause(Duration::ZERO, DelayReason::Backoff), false, Step::LaunchNow),
            ("Retry-After holds the next copy",         pause(300 * MS, DelayReason::RetryAfter), true, Step::LaunchAfter(300 * MS)),
            ("attempts used while another runs: wait",  Next::GiveUp(GiveUpReason::AttemptsExhausted), true, Step::Wait),
            ("a failure never beats a running copy",    Next::GiveUp(GiveUpReason::NotRetryable), true, Step::Wait),
            ("the last copy's failure ends it",         Next::GiveUp(GiveUpReason::AttemptsExhausted), false, Step::GiveUp(GiveUpReason::AttemptsExhausted)),
            ("out of time, nothing running",            Next::GiveUp(GiveUpReason::DeadlineExceeded), false, Step::GiveUp(GiveUpReason::DeadlineExceeded)),
        ];
        for (name, next, others, step) in rows {
            assert_eq!(after_copy(next, others), step, "{name}");
        }
    }

    #[test]
    fn a_retry_after_holds_every_copy() {
        let t = Instant::now();
        let at = |ms: u32| t + ms * MS;
        #[rustfmt::skip]
        let rows: [HoldRow; 7] = [
            ("nothing asked, nothing held",             None,          None,            100, None,          None),
            ("an ask starts a hold",                    None,          Some(300 * MS),  100, Some(at(400)), Some(300 * MS)),
            ("a zero ask is still an ask",              None,          Some(Duration::ZERO), 100, Some(at(100)), Some(Duration::ZERO)),
            // The model checker's trace: a copy's 503 with `Retry-After` (beyond the
            // deadline, so the copy waited for the others), then another copy's
            // failure without one; the next copy went before the first ask.
            ("a failure without an ask keeps the hold", Some(at(400)), None,            100, Some(at(400)), Some(300 * MS)),
            ("a shorter ask keeps the longer hold",     Some(at(400)), Some(100 * MS),  100, Some(at(400)), Some(300 * MS)),
            ("a longer ask extends the hold",           Some(at(400)), Some(500 * MS),  100, Some(at(600)), Some(500 * MS)),
            ("a hold that passed holds nothing",        Some(at(400)), None,            500, Some(at(400)), None),
        ];
        for (name, held, asked, now, expected_hold, expected_left) in rows {
            assert_eq!(
                hold(held, asked, at(now)),
                (expected_hold, expected_left),
                "{name}"
            );
        }
    }

    #[test]
    fn when_a_hedge_may_go() {
        let ok = HedgeFacts {
            in_flight: 1,
            max_copies: 2,
            sent: 1,
            max_attempts: 3,
            remaining: Some(1000 * MS),
            min_attempt_window: 100 * MS,
            held: false,
        };
        #[rustfmt::skip]
        let rows: [(&str, HedgeFacts, Result<(), NoHedge>); 8] = [
            ("one copy out, room for another", ok, Ok(())),
            ("just the least time for a copy", HedgeFacts { remaining: Some(100 * MS), ..ok }, Ok(())),
            ("no deadline",                    HedgeFacts { remaining: None, ..ok }, Ok(())),
            ("copies in flight at the most",   HedgeFacts { in_flight: 2, ..ok }, Err(NoHedge::CopiesInFlight)),
            ("every copy counts as an attempt", HedgeFacts { sent: 3, ..ok }, Err(NoHedge::AttemptsUsed)),
            ("too little time for a copy",     HedgeFacts { remaining: Some(99 * MS), ..ok }, Err(NoHedge::TooLate)),
            ("no time at all",                 HedgeFacts { remaining: Some(Duration::ZERO), min_attempt_window: Duration::ZERO, ..ok }, Err(NoHedge::TooLate)),
            ("a Retry-After holds copies",     HedgeFacts { held: true, ..ok }, Err(NoHedge::Held)),
        ];
        for (name, facts, expected) in rows {
            assert_eq!(may_hedge(facts), expected, "{name}");
        }
    }
}
