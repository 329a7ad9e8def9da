//! One intent's state between two await points of the loop, and the ghost facts the
//! properties read (what was sent when, and what the server had asked for).

use super::rules::BreakerPhase;

use super::intent::IntentKind;

/// The whole state: the intent, the clock, the shared gates, the ghost record.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct State {
    /// The intent being sent.
    pub kind: IntentKind,
    /// Ticks since `send()`.
    pub now: u8,
    /// Where the loop is.
    pub stage: Stage,
    /// Copies in flight (one at most without hedging), sorted: copies that agree
    /// in every field are interchangeable, and one sorted list stands for every
    /// order of them (the symmetry reduction).
    pub copies: Vec<InFlight>,
    /// What the loop sleeps on besides the copies.
    pub timer: Option<Timer>,
    /// Attempts (or copies) sent so far.
    pub sent: u8,
    /// Keyed 409s waited out without using up an attempt.
    pub conflicts_waited_out: u8,
    /// How many more may be (`decision::conflict_wait_limit`, counted down).
    pub conflict_waits_left: u8,
    /// A `425 Too Early` was seen.
    pub too_early_seen: bool,
    /// The circuit breaker's phase for the request's authority.
    pub breaker: BreakerPhase,
    /// Changes other intents may still make to the breaker.
    pub breaker_events_left: u8,
    /// Hedges the cap may still grant.
    pub cap_left: u8,
    /// A hedged race's hold: no copy before this tick (`hedge::hold`).
    pub held_until: Option<u8>,
    /// What the properties read.
    pub ghost: Ghost,
}

/// Where the loop is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stage {
    /// `send()` was called; the gates have not been asked yet.
    Start,
    /// Awaiting the write-ahead's `before_first_byte`.
    WriteAhead,
    /// Attempts: copies in flight and/or a timer.
    Attempts,
    /// The intent is over.
    Done(End),
}

/// How an intent ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum End {
    /// The caller got a response.
    Delivered,
    /// The intent gave up.
    GaveUp(Why),
}

/// Why an intent gave up (the crate's `GiveUpReason`, as far as the model reaches).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Why {
    /// Every allowed attempt failed.
    AttemptsExhausted,
    /// The deadline.
    DeadlineExceeded,
    /// `Retry-After` beyond the ceiling.
    RetryAfterBeyondCeiling,
    /// `Retry-After` beyond the deadline.
    RetryAfterBeyondDeadline,
    /// Not transient, or not safe to retry.
    NotRetryable,
    /// A gate (the breaker, the budget) refused.
    GateRefused,
    /// The write-ahead refused: nothing was sent.
    WriteAheadRefused,
    /// Another reason the model does not reach.
    Other,
}

/// A copy in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InFlight {
    /// When it was sent.
    pub sent_at: u8,
    /// When its timeout fires.
    pub timeout_at: u8,
    /// Why it went.
    pub cause: Cause,
}

/// Why a copy went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Cause {
    /// The intent's first attempt.
    First,
    /// A retry after a failure.
    Retry,
    /// A hedge: the delay passed without an answer.
    Hedge,
}

/// What the loop sleeps on besides its copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Timer {
    /// The pause before the next attempt, until this tick.
    Pause {
        /// When it ends.
        until: u8,
        /// The pause is the server's `Retry-After`.
        retry_after: bool,
    },
    /// The hedge delay: a copy more at this tick.
    Hedge {
        /// When it fires.
        at: u8,
    },
    /// A `Retry-After` holds new copies until this tick.
    Hold {
        /// When it ends.
        until: u8,
    },
}

impl Timer {
    /// When it fires (or later: a timer is never early, but may be late).
    pub fn due(self) -> u8 {
        match self {
            Timer::Pause { until, .. } | Timer::Hold { until } => until,
            Timer::Hedge { at } => at,
        }
    }
}

/// The facts the properties read, recorded as the loop runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Ghost {
    /// Properties broken so far (bits of [`Broken`]).
    pub broken: u16,
    /// Things that happened (bits of [`Seen`]).
    pub seen: u16,
    /// The earliest tick any answer's `Retry-After` allows the next attempt.
    pub not_before: u8,
    /// Request ids used (bit n: the id made for the n-th send).
    pub request_ids: u32,
    /// The write-ahead refused the intent.
    pub refused: bool,
    /// An unkeyed POST met an answer that does not prove it unprocessed.
    pub may_have_applied: bool,
}

/// A promise broken (a bit of [`Ghost::broken`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u16)]
pub enum Broken {
    /// An attempt went before a `Retry-After` allowed it.
    EarlierThanRetryAfter = 1,
    /// An attempt went at or after the deadline.
    AttemptAfterDeadline = 1 << 1,
    /// An attempt's timeout ran past the deadline.
    AttemptOutlivesDeadline = 1 << 2,
    /// A pause ended at or after the deadline.
    PausePastDeadline = 1 << 3,
    /// An attempt carried another key, or an old request id.
    KeyOrRequestId = 1 << 4,
    /// An unkeyed POST went again after it may have been processed.
    UnkeyedPostRetried = 1 << 5,
    /// More copies in flight than `max_copies`, or more than `max_attempts`.
    CopiesOverCap = 1 << 6,
    /// A send after the write-ahead refused.
    SentAfterRefusal = 1 << 8,
    /// An attempt admitted while the circuit was open, or a hedge while not closed.
    AdmittedWhileOpen = 1 << 9,
    /// A hedged copy went with less than its useful window left.
    CopyTooLate = 1 << 10,
}

/// Something that happened (a bit of [`Ghost::seen`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u16)]
pub enum Seen {
    /// A retry went after a pause of the server's `Retry-After`.
    RetryAfterRetry = 1,
    /// A hedge went out.
    HedgeFired = 1 << 1,
    /// A hedge's answer won.
    HedgeWon = 1 << 2,
    /// The intent gave up on its deadline.
    DeadlineGiveUp = 1 << 3,
    /// A keyed 409 was waited out.
    ConflictWaitedOut = 1 << 4,
    /// The write-ahead refused the intent.
    WriteAheadRefused = 1 << 5,
    /// The breaker admitted one of the intent's attempts as its half-open probe.
    Probe = 1 << 6,
}

impl Ghost {
    /// Records a broken promise.
    pub fn broke(&mut self, broken: Broken) {
        self.broken |= broken as u16;
    }

    /// True when `broken` was recorded.
    pub fn has_broken(&self, broken: Broken) -> bool {
        self.broken & broken as u16 != 0
    }

    /// Records that `seen` happened.
    pub fn saw(&mut self, seen: Seen) {
        self.seen |= seen as u16;
    }

    /// True when `seen` happened.
    pub fn has_seen(&self, seen: Seen) -> bool {
        self.seen & seen as u16 != 0
    }
}

impl State {
    /// The intent is over.
    pub fn is_done(&self) -> bool {
        matches!(self.stage, Stage::Done(_))
    }
}
