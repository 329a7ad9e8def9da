//! The client crate's pure rules (`reqwest_resilience::model_rules`), adapted to
//! the model's plain, hashable types.
//!
//! Every function here calls the crate's own rule, unchanged; the types are mirrors
//! of the crate's, so that the model can hash them. Times are durations since one
//! origin (the first call's `Instant`), so the model can count in whole ticks.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use http::{HeaderMap, HeaderValue, Method, StatusCode};

use reqwest_resilience::classification::{AttemptResult, StatusSet};
use reqwest_resilience::gate::RetryCause;
use reqwest_resilience::model_rules::{self as crate_rules, HedgeFacts, Next, Step};
use reqwest_resilience::time::SystemClock;
use reqwest_resilience::{Backoff, DelayReason, GiveUpReason};

pub use reqwest_resilience::TransportFailure as Failure;

fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

fn at(since_origin: Duration) -> Instant {
    origin() + since_origin
}

fn since_origin(instant: Instant) -> Duration {
    instant.saturating_duration_since(origin())
}

// ---- classification ----

/// What the crate's classifier concluded about one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Verdict {
    /// Another attempt may succeed, and the method/key rules allow one.
    pub retry: bool,
    /// A keyed 409 "in progress".
    pub conflict: bool,
    /// A `425 Too Early`.
    pub too_early: bool,
    /// The earliest the next attempt may start, when a retry follows.
    pub retry_after: Option<Duration>,
    /// What a breaker counts as a failure.
    pub struggling: bool,
}

impl From<crate_rules::Verdict> for Verdict {
    fn from(v: crate_rules::Verdict) -> Self {
        Verdict {
            retry: v.retry(),
            conflict: v.conflict,
            too_early: v.too_early,
            retry_after: v.retry_after,
            struggling: v.struggling(),
        }
    }
}

fn default_rules() -> crate_rules::ClassifyRules<'static> {
    static TRANSIENT: StatusSet = StatusSet::transient_default();
    crate_rules::ClassifyRules {
        classifier: None,
        server_hint_header: None,
        transient_statuses: &TRANSIENT,
        retry_conflict_when_keyed: true,
    }
}

fn url() -> &'static reqwest::Url {
    static URL: OnceLock<reqwest::Url> = OnceLock::new();
    URL.get_or_init(|| reqwest::Url::parse("http://model.invalid/").expect("a valid URL"))
}

/// The default classification of a response `status`, with `Retry-After:
/// <retry_after_secs>` when given (parsed by the crate's own parser).
pub fn classify_response(
    method: &Method,
    keyed: bool,
    status: u16,
    retry_after_secs: Option<u64>,
) -> Verdict {
    let mut headers = HeaderMap::new();
    if let Some(secs) = retry_after_secs {
        headers.insert(http::header::RETRY_AFTER, HeaderValue::from(secs));
    }
    let view = crate_rules::attempt_view(
        method,
        url(),
        1,
        keyed,
        AttemptResult::Response {
            status: StatusCode::from_u16(status).expect("a valid status"),
            headers: &headers,
        },
    );
    crate_rules::classify(&default_rules(), &view, &SystemClock).into()
}

/// The default classification of a transport `failure`.
pub fn classify_failure(method: &Method, keyed: bool, failure: Failure) -> Verdict {
    // The default classification reads only the failure's kind; the error itself
    // is for a user's classifier.
    static ERROR: OnceLock<reqwest::Error> = OnceLock::new();
    let error = ERROR.get_or_init(|| {
        let relative = http::Request::builder()
            .uri("/relative")
            .body(Vec::<u8>::new())
            .expect("a request");
        reqwest::Request::try_from(relative).expect_err("a relative URL is refused")
    });
    let view = crate_rules::attempt_view(
        method,
        url(),
        1,
        keyed,
        AttemptResult::Error { failure, error },
    );
    crate_rules::classify(&default_rules(), &view, &SystemClock).into()
}

// ---- the decision after an attempt ----

/// How an attempt ended, as `decision::after_attempt` reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ended {
    /// A response; `retry` when a retry is useful and safe.
    Response {
        /// As [`Verdict::retry`].
        retry: bool,
    },
    /// No response.
    Failed {
        /// As [`Verdict::retry`].
        retry: bool,
    },
}

/// The facts `decision::after_attempt` decides on (its `Facts`, less what the model
/// never varies: a replayable body, no whole-body read).
#[derive(Debug, Clone, Copy)]
pub struct Facts {
    /// How the attempt ended.
    pub ended: Ended,
    /// A keyed 409.
    pub conflict: bool,
    /// Attempts that count toward `max_attempts`.
    pub attempts_made: u32,
    /// The policy's `max_attempts`.
    pub max_attempts: u32,
    /// Time left; `None` without a deadline.
    pub remaining: Option<Duration>,
    /// What the server asked for.
    pub retry_after: Option<Duration>,
    /// The policy's ceiling on `Retry-After`.
    pub retry_after_ceiling: Duration,
    /// A second `425`.
    pub too_early_again: bool,
    /// The least pause after a 409.
    pub conflict_delay: Duration,
    /// A 409 may still be waited out without using up an attempt.
    pub conflict_waits_left: bool,
    /// See [`min_attempt_window`].
    pub min_attempt_window: Duration,
}

impl Facts {
    fn crate_facts(self) -> crate_rules::Facts {
        crate_rules::Facts {
            ended: match self.ended {
                Ended::Response { retry } => crate_rules::Ended::Response { retry },
                Ended::Failed { retry } => crate_rules::Ended::Failed { retry },
            },
            conflict: self.conflict,
            replayable: true,
            attempts_made: self.attempts_made,
            max_attempts: self.max_attempts,
            remaining: self.remaining,
            retry_after: self.retry_after,
            retry_after_ceiling: self.retry_after_ceiling,
            completed_not_kept: false,
            too_early_again: self.too_early_again,
            conflict_delay: self.conflict_delay,
            conflict_waits_left: self.conflict_waits_left,
            min_attempt_window: self.min_attempt_window,
        }
    }
}

/// What the loop does after an attempt (`decision::Next`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum After {
    /// The caller gets the response.
    Deliver,
    /// The intent ends, for this reason.
    GiveUp(GiveUpReason),
    /// Pause this long, then try again.
    Pause {
        /// How long.
        delay: Duration,
        /// Whether the pause is the server's `Retry-After`.
        retry_after: bool,
        /// A 409's wait (the budget does not charge it).
        conflict: bool,
    },
}

fn after_of(next: Next) -> After {
    match next {
        Next::Deliver => After::Deliver,
        Next::GiveUp(why) => After::GiveUp(why),
        Next::Pause {
            delay,
            reason,
            cause,
        } => After::Pause {
            delay,
            retry_after: reason == DelayReason::RetryAfter,
            conflict: cause == RetryCause::Conflict,
        },
    }
}

fn next_of(after: After) -> Next {
    match after {
        After::Deliver => Next::Deliver,
        After::GiveUp(why) => Next::GiveUp(why),
        After::Pause {
            delay,
            retry_after,
            conflict,
        } => Next::Pause {
            delay,
            reason: if retry_after {
                DelayReason::RetryAfter
            } else {
                DelayReason::Backoff
            },
            cause: if conflict {
                RetryCause::Conflict
            } else {
                RetryCause::Transient
            },
        },
    }
}

/// `decision::after_attempt` with `backoff` as the backoff's draw.
pub fn after_attempt(facts: Facts, backoff: Duration) -> After {
    after_of(crate_rules::after_attempt(facts.crate_facts(), || backoff))
}

/// `decision::waits_out`: this attempt was a keyed 409 that uses up no attempt.
pub fn waits_out(facts: Facts) -> bool {
    crate_rules::waits_out(facts.crate_facts())
}

/// `decision::conflict_wait_limit`.
pub fn conflict_wait_limit(deadline: Option<Duration>, conflict_delay: Duration) -> u32 {
    crate_rules::conflict_wait_limit(deadline, conflict_delay)
}

/// `decision::min_attempt_window`.
pub fn min_attempt_window(
    attempt_timeout: Option<Duration>,
    deadline: Option<Duration>,
) -> Duration {
    crate_rules::min_attempt_window(attempt_timeout, deadline)
}

// ---- time ----

/// The implied attempt timeout (`AttemptTimeout::for_intent`).
pub fn implied_attempt_timeout(deadline: Option<Duration>, max_attempts: u32) -> Option<Duration> {
    crate_rules::AttemptTimeout::Implied.for_intent(deadline, max_attempts)
}

/// `attempt_timeout::of_attempt` for an attempt starting `elapsed` after `send()`.
pub fn attempt_timeout(
    deadline: Option<Duration>,
    elapsed: Duration,
    per_attempt: Option<Duration>,
) -> Option<Duration> {
    crate_rules::of_attempt(per_attempt, remaining(deadline, elapsed))
}

/// `Deadline::remaining` at `elapsed` after `send()`.
pub fn remaining(deadline: Option<Duration>, elapsed: Duration) -> Option<Duration> {
    crate_rules::Deadline::new(at(Duration::ZERO), deadline).remaining(at(elapsed))
}

/// The backoff's draw before retry number `retry` (0 for the first) at one end of
/// its jitter range: `high` false for the least delay, true for the most.
pub fn backoff_delay(
    backoff: Backoff,
    retry: u32,
    previous: Option<Duration>,
    high: bool,
) -> Duration {
    crate_rules::backoff_delay(
        &backoff,
        retry,
        previous,
        &mut Extreme(if high { u64::MAX } else { 0 }),
    )
}

/// A random source that always draws the same bits: the ends of a jitter range.
struct Extreme(u64);

impl rand::RngCore for Extreme {
    fn next_u32(&mut self) -> u32 {
        self.0 as u32
    }

    fn next_u64(&mut self) -> u64 {
        self.0
    }

    fn fill_bytes(&mut self, dst: &mut [u8]) {
        dst.fill(self.0 as u8);
    }
}

// ---- hedging ----

/// What a hedged race does after a copy ended (`hedge::Step`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyStep {
    /// The caller gets this copy's answer; the others are cancelled.
    Win,
    /// Wait for the copies still running.
    Wait,
    /// Send the next copy now.
    LaunchNow,
    /// No new copy before this long.
    LaunchAfter(Duration),
    /// Nothing runs and nothing may follow.
    GiveUp(GiveUpReason),
}

/// `hedge::after_copy`.
pub fn after_copy(next: After, others_running: bool) -> CopyStep {
    match crate_rules::after_copy(next_of(next), others_running) {
        Step::Win => CopyStep::Win,
        Step::Wait => CopyStep::Wait,
        Step::LaunchNow => CopyStep::LaunchNow,
        Step::LaunchAfter(delay) => CopyStep::LaunchAfter(delay),
        Step::GiveUp(why) => CopyStep::GiveUp(why),
    }
}

/// `hedge::hold` at `now`, times since the origin: the race's hold after a copy's
/// answer asked for `asked`, and the `Retry-After` to decide the copy's end with.
pub fn hold(
    held_until: Option<Duration>,
    asked: Option<Duration>,
    now: Duration,
) -> (Option<Duration>, Option<Duration>) {
    let (held_until, left) = crate_rules::hold(held_until.map(at), asked, at(now));
    (held_until.map(since_origin), left)
}

/// The facts a copy is decided on (`hedge::HedgeFacts`).
#[derive(Debug, Clone, Copy)]
pub struct CopyFacts {
    /// Copies in flight.
    pub in_flight: u32,
    /// The cap on copies in flight.
    pub max_copies: u32,
    /// Copies sent so far.
    pub sent: u32,
    /// The policy's `max_attempts`.
    pub max_attempts: u32,
    /// Time left.
    pub remaining: Option<Duration>,
    /// See [`min_attempt_window`].
    pub min_attempt_window: Duration,
    /// A `Retry-After` still holds new copies back.
    pub held: bool,
}

/// Why no copy goes (`hedge::NoHedge`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoCopy {
    /// The cap on copies in flight.
    CopiesInFlight,
    /// Every attempt used.
    AttemptsUsed,
    /// Too little time left.
    TooLate,
    /// A `Retry-After` holds copies back.
    Held,
}

/// `hedge::may_hedge`.
pub fn may_copy(facts: CopyFacts) -> Result<(), NoCopy> {
    let facts = HedgeFacts {
        in_flight: facts.in_flight,
        max_copies: facts.max_copies,
        sent: facts.sent,
        max_attempts: facts.max_attempts,
        remaining: facts.remaining,
        min_attempt_window: facts.min_attempt_window,
        held: facts.held,
    };
    crate_rules::may_hedge(facts).map_err(|no| match no {
        crate_rules::NoHedge::CopiesInFlight => NoCopy::CopiesInFlight,
        crate_rules::NoHedge::AttemptsUsed => NoCopy::AttemptsUsed,
        crate_rules::NoHedge::TooLate => NoCopy::TooLate,
        crate_rules::NoHedge::Held => NoCopy::Held,
    })
}

// ---- the breaker's phases ----

/// A circuit's phase (`gate::breaker::phases::Phase`), times since the origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BreakerPhase {
    /// Closed.
    Closed,
    /// Open until then.
    Open {
        /// When the break ends.
        until: Duration,
    },
    /// Half-open, `out` probes out.
    HalfOpen {
        /// Probes out.
        out: u32,
        /// When their leases end.
        lease_until: Duration,
    },
}

/// What happened to the circuit (`gate::breaker::phases::Event`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerEvent {
    /// An attempt asks to go.
    Admit,
    /// A hedge asks to go.
    AdmitHedge,
    /// An admitted attempt was not sent, or was cancelled.
    NotSent,
    /// An attempt ended; `tripped`: the window's failures reach the ratio.
    Finished {
        /// It failed (was struggling).
        failed: bool,
        /// The failures reach the ratio.
        tripped: bool,
    },
}

/// The breaker's settings the phases follow.
#[derive(Debug, Clone, Copy)]
pub struct BreakerRules {
    /// How long the circuit stays open.
    pub break_duration: Duration,
    /// Probes at once while half-open.
    pub probes: u32,
    /// How long a probe holds its slot.
    pub probe_lease: Duration,
}

/// `gate::breaker::phases::step` at `now` (since the origin): the next phase, and for an
/// admission, go (`Ok`) or wait.
pub fn breaker_step(
    phase: BreakerPhase,
    event: BreakerEvent,
    now: Duration,
    rules: BreakerRules,
) -> (BreakerPhase, Option<Result<(), Duration>>) {
    let phase = match phase {
        BreakerPhase::Closed => crate_rules::BreakerPhase::Closed,
        BreakerPhase::Open { until } => crate_rules::BreakerPhase::Open { until: at(until) },
        BreakerPhase::HalfOpen { out, lease_until } => crate_rules::BreakerPhase::HalfOpen {
            out,
            lease_until: at(lease_until),
        },
    };
    let event = match event {
        BreakerEvent::Admit => crate_rules::BreakerEvent::Admit,
        BreakerEvent::AdmitHedge => crate_rules::BreakerEvent::AdmitHedge,
        BreakerEvent::NotSent => crate_rules::BreakerEvent::NotSent,
        BreakerEvent::Finished { failed, tripped } => {
            crate_rules::BreakerEvent::Finished { failed, tripped }
        }
    };
    let rules = crate_rules::BreakerRules {
        break_duration: rules.break_duration,
        probes: rules.probes,
        probe_lease: rules.probe_lease,
    };
    let step = crate_rules::breaker_step(phase, event, at(now), rules);
    let next = match step.phase {
        crate_rules::BreakerPhase::Closed => BreakerPhase::Closed,
        crate_rules::BreakerPhase::Open { until } => BreakerPhase::Open {
            until: since_origin(until),
        },
        crate_rules::BreakerPhase::HalfOpen { out, lease_until } => BreakerPhase::HalfOpen {
            out,
            lease_until: since_origin(lease_until),
        },
    };
    (next, step.verdict)
}
