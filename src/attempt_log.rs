//! What happened to each attempt of an intent.
//!
//! Logs and dashboards show single requests; an incident review needs the intent:
//! which deliveries were made, what each got back, and why the client waited as long
//! as it did. Every intent yields an [`AttemptLog`], on success (from the response,
//! via [`ResponseExt::attempt_log`]) and on failure (from [`crate::Error::attempt_log`]).

use std::fmt;
use std::time::Duration;

use http::StatusCode;

// Re-exported here too: the retry loop imports it from this module.
pub(crate) use crate::failure::TransportFailure;
use crate::idempotency::IdempotencyKey;
use crate::ids::RequestId;

/// The attempts of one intent, oldest first, and the intent's idempotency key.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct AttemptLog {
    records: Records,
    key: Option<IdempotencyKey>,
    not_hedged: Option<NotHedged>,
}

/// Most intents make one attempt: that one is kept inline, and a `Vec` is only
/// allocated once a retry happens.
#[derive(Clone, Default)]
enum Records {
    #[default]
    None,
    One(AttemptRecord),
    Many(Vec<AttemptRecord>),
}

impl Records {
    fn as_slice(&self) -> &[AttemptRecord] {
        match self {
            Self::None => &[],
            Self::One(record) => std::slice::from_ref(record),
            Self::Many(records) => records,
        }
    }
}

impl PartialEq for Records {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for Records {}

impl AttemptLog {
    pub(crate) fn new(key: Option<IdempotencyKey>) -> Self {
        Self {
            records: Records::None,
            key,
            not_hedged: None,
        }
    }

    /// Why this intent ran without copies although its policy hedges (a POST, a
    /// keyed request…); `None` when it was hedged, or its policy does not hedge.
    pub fn not_hedged(&self) -> Option<NotHedged> {
        self.not_hedged
    }

    pub(crate) fn set_not_hedged(&mut self, why: NotHedged) {
        self.not_hedged = Some(why);
    }

    /// The key every attempt carried (generated or the caller's); `None` for an
    /// intent sent without one. Store it with your order to retry later as the same
    /// intent.
    pub fn idempotency_key(&self) -> Option<&IdempotencyKey> {
        self.key.as_ref()
    }

    pub(crate) fn push(&mut self, record: AttemptRecord) {
        self.records = match std::mem::take(&mut self.records) {
            Records::None => Records::One(record),
            Records::One(first) => Records::Many(vec![first, record]),
            Records::Many(mut records) => {
                records.push(record);
                Records::Many(records)
            }
        };
    }

    pub(crate) fn set_last_delay(&mut self, delay: Duration, reason: DelayReason) {
        let last = match &mut self.records {
            Records::None => None,
            Records::One(record) => Some(record),
            Records::Many(records) => records.last_mut(),
        };
        if let Some(last) = last {
            last.delay_after = Some(ScheduledDelay { delay, reason });
        }
    }

    /// Orders the records by attempt number: hedged copies end in any order, and
    /// the log reads in the order they were sent.
    pub(crate) fn order_by_number(&mut self) {
        if let Records::Many(records) = &mut self.records {
            records.sort_by_key(|record| record.number);
        }
    }

    /// Sets what followed attempt `number` (a hedge's next copy went out while it
    /// still ran).
    pub(crate) fn set_delay_of(&mut self, number: u32, delay: Duration, reason: DelayReason) {
        let records = match &mut self.records {
            Records::None => return,
            Records::One(record) => std::slice::from_mut(record),
            Records::Many(records) => records.as_mut_slice(),
        };
        if let Some(record) = records.iter_mut().find(|record| record.number == number) {
            record.delay_after = Some(ScheduledDelay { delay, reason });
        }
    }

    /// Every attempt, oldest first.
    pub fn attempts(&self) -> &[AttemptRecord] {
        self.records.as_slice()
    }

    /// How many attempts were made.
    pub fn len(&self) -> usize {
        self.attempts().len()
    }

    /// True when no attempt was made (the request was refused before sending).
    pub fn is_empty(&self) -> bool {
        self.attempts().is_empty()
    }

    /// The most recent attempt.
    pub fn last(&self) -> Option<&AttemptRecord> {
        self.attempts().last()
    }
}

/// Why an intent under a hedging policy ran without copies (see
/// [`AttemptLog::not_hedged`] and [`Hedging`](crate::Hedging)'s docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NotHedged {
    /// Its method is not among [`Hedging::methods`](crate::Hedging::methods) (a
    /// POST, a PATCH: never safe to send twice at once).
    Method,
    /// It carries an idempotency key: a key is for retries in sequence, not for
    /// copies in parallel.
    Keyed,
    /// It has a write-ahead (a durable intent).
    Durable,
    /// Its body cannot be sent again (a stream).
    BodyNotReplayable,
    /// `max_attempts` is 1: no room for a second copy.
    SingleAttempt,
    /// Its transport cannot send two copies at once (a middleware chain).
    Transport,
}

impl NotHedged {
    /// A short label: `method`, `keyed`, `durable`, `body_not_replayable`,
    /// `single_attempt`, `transport`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Method => "method",
            Self::Keyed => "keyed",
            Self::Durable => "durable",
            Self::BodyNotReplayable => "body_not_replayable",
            Self::SingleAttempt => "single_attempt",
            Self::Transport => "transport",
        }
    }
}

/// One line per attempt, oldest first, no trailing newline — what a person reading a
/// log or an incident ticket needs: the attempt number, its request id (to find it in
/// the server's logs), the key's short prefix (never the whole key), what came back,
/// how long it took, and the pause that followed and why.
///
/// ```text
/// attempt 1 | request 0e0d5f1c-7a0b-4b9e-9f6a-3c1d2e4f5a6b | key 2f434937… | 503 Service Unavailable | 3ms | then 1s (retry-after)
/// attempt 2 | request 7cfa09d9-5d8e-4f7a-8b1c-2d3e4f5a6b7c | key 2f434937… | failed: connection_lost | 2ms | then 24ms (backoff)
/// attempt 3 | request 7cb28d3f-1a2b-4c3d-8e4f-5a6b7c8d9e0f | key 2f434937… | 201 Created | 4ms
/// ```
///
/// A failed attempt shows its [`TransportFailure::as_str`] label (the `error.type`
/// of its span); durations use the format of every message of this crate (see
/// [`Error`](crate::Error)'s `Display`). Under a hedging policy, an intent that
/// was not hedged says why at the end of its first line (`| not hedged: keyed`,
/// see [`NotHedged`]). An empty log prints nothing.
impl fmt::Display for AttemptLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = self.key.as_ref().map_or_else(
            || "no key".to_owned(),
            |key| format!("key {}", key.redacted()),
        );
        for (index, attempt) in self.attempts().iter().enumerate() {
            if index > 0 {
                f.write_str("\n")?;
            }
            let outcome = match attempt.outcome {
                AttemptOutcome::Status(status) => status.to_string(),
                AttemptOutcome::Failed(failure) => format!("failed: {}", failure.as_str()),
                AttemptOutcome::Cancelled => "cancelled".to_owned(),
            };
            write!(
                f,
                "attempt {} | request {} | {key} | {outcome} | {}",
                attempt.number,
                attempt.request_id,
                ShortDuration(attempt.duration)
            )?;
            if let Some(pause) = attempt.delay_after {
                write!(
                    f,
                    " | then {} ({})",
                    ShortDuration(pause.delay),
                    pause.reason.as_str()
                )?;
            }
            if let (0, Some(why)) = (index, self.not_hedged) {
                write!(f, " | not hedged: {}", why.as_str())?;
            }
        }
        Ok(())
    }
}

/// The one duration format of every message this crate writes (give-up messages, the
/// attempt log): Rust's `Duration` notation rounded to the millisecond — `300ms`,
/// `2.002s`, `120s` — so nanosecond noise never sits beside a rounded figure, and any
/// duration printed can be pasted back into a configuration file (`RetryPolicyConfig`
/// reads the same notation). Below a millisecond it keeps microseconds (`250µs`).
pub(crate) struct ShortDuration(pub(crate) Duration);

impl fmt::Display for ShortDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const MILLI: u128 = 1_000_000;
        const MICRO: u128 = 1_000;
        let unit = if self.0 >= Duration::from_millis(1) {
            MILLI
        } else {
            MICRO
        };
        let shown = round_to(self.0, unit);
        if shown.is_zero() {
            return f.write_str("0ms");
        }
        write!(f, "{shown:?}")
    }
}

/// `duration` rounded half up to a multiple of `unit_nanos`; never panics (a
/// duration near `Duration::MAX` saturates).
fn round_to(duration: Duration, unit_nanos: u128) -> Duration {
    const NANOS_PER_SEC: u128 = 1_000_000_000;
    let nanos = (duration.as_nanos() + unit_nanos / 2) / unit_nanos * unit_nanos;
    let secs = u64::try_from(nanos / NANOS_PER_SEC).unwrap_or(u64::MAX);
    let subsec = u32::try_from(nanos % NANOS_PER_SEC).unwrap_or(0);
    Duration::new(secs, subsec)
}

impl fmt::Debug for AttemptLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AttemptLog")
            .field("attempts", &self.attempts())
            .field("key", &self.key)
            .finish()
    }
}

/// One attempt: one delivery of the intent over the network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptRecord {
    pub(crate) number: u32,
    pub(crate) request_id: RequestId,
    pub(crate) outcome: AttemptOutcome,
    pub(crate) duration: Duration,
    pub(crate) delay_after: Option<ScheduledDelay>,
}

impl AttemptRecord {
    /// 1 for the first attempt, 2 for the first retry, …
    pub fn number(&self) -> u32 {
        self.number
    }

    /// The request id this attempt carried.
    pub fn request_id(&self) -> RequestId {
        self.request_id
    }

    /// What the attempt got.
    pub fn outcome(&self) -> &AttemptOutcome {
        &self.outcome
    }

    /// From sending the request to receiving the response head (or the error).
    pub fn duration(&self) -> Duration {
        self.duration
    }

    /// The pause taken after this attempt and why; `None` when no retry followed.
    pub fn delay_after(&self) -> Option<ScheduledDelay> {
        self.delay_after
    }
}

/// The result of one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AttemptOutcome {
    /// A response arrived with this status.
    Status(StatusCode),
    /// No response: a transport failure of this kind.
    Failed(TransportFailure),
    /// A hedged copy that was still running when another copy of the intent gave
    /// the answer: cancelled (its future dropped), neither a success nor a failure.
    Cancelled,
}

/// A pause between two attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ScheduledDelay {
    /// How long.
    pub delay: Duration,
    /// Why that long.
    pub reason: DelayReason,
}

/// Why a pause had the length it had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DelayReason {
    /// Chosen by the backoff strategy.
    Backoff,
    /// Requested by the server's `Retry-After` (or a classifier's delay).
    RetryAfter,
    /// A 409: the server is still executing the same key; the policy's
    /// `conflict_delay` sets the least pause.
    Conflict,
    /// Hedging: this attempt was still running when the next copy went out, this
    /// long after it was sent (the hedge delay), to cut the tail latency; see
    /// [`Hedging`](crate::Hedging).
    Hedge,
}

impl DelayReason {
    /// A short label for logs and tables.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Backoff => "backoff",
            Self::RetryAfter => "retry-after",
            Self::Conflict => "conflict",
            Self::Hedge => "hedge",
        }
    }
}

/// Reads the attempt log a [`crate::ResilientClient`] stored in a response.
///
/// Not in the browser and node (wasm32-unknown-unknown): `fetch`'s responses carry no
/// extensions. There an [`IntentObserver`](crate::IntentObserver) hears every attempt
/// and the end of every intent, the successful ones too.
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub trait ResponseExt {
    /// The log of the intent that produced this response.
    fn attempt_log(&self) -> Option<&AttemptLog>;

    /// True when the intent's [`WriteAhead`](crate::WriteAhead) could not record
    /// this response as its end (see [`EndNotRecorded`]).
    fn end_not_recorded(&self) -> bool;
}

#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
impl ResponseExt for reqwest::Response {
    fn attempt_log(&self) -> Option<&AttemptLog> {
        self.extensions().get::<AttemptLog>()
    }

    fn end_not_recorded(&self) -> bool {
        self.extensions().get::<EndNotRecorded>().is_some()
    }
}

/// In a response's extensions when the intent's [`WriteAhead`](crate::WriteAhead)
/// could not record it as the intent's end (its `after_end` failed or ran out of
/// time). The caller has its response, but the write-ahead still holds the intent
/// as unfinished: a durable journal resends it under the same key until it
/// records a terminal result (the server's deduplication makes that resend replay
/// this answer). Read it with [`ResponseExt::end_not_recorded`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct EndNotRecorded;

#[cfg(test)]
mod tests {
    use super::*;

    fn record(number: u32) -> AttemptRecord {
        AttemptRecord {
            number,
            request_id: RequestId::generate(),
            outcome: AttemptOutcome::Status(StatusCode::SERVICE_UNAVAILABLE),
            duration: Duration::from_millis(1),
            delay_after: None,
        }
    }

    #[test]
    fn display_prints_one_line_per_attempt_with_the_key_prefix_and_pauses() {
        let key = IdempotencyKey::new("order-1842-payment").unwrap();
        let mut log = AttemptLog::new(Some(key));
        let first = record(1);
        let second = AttemptRecord {
            number: 2,
            outcome: AttemptOutcome::Failed(TransportFailure::ConnectionLost),
            duration: Duration::from_micros(2_400),
            ..record(2)
        };
        let third = AttemptRecord {
            outcome: AttemptOutcome::Status(StatusCode::CREATED),
            duration: Duration::from_nanos(1_234_567_890),
            ..record(3)
        };
        let ids = [first.request_id, second.request_id, third.request_id];
        log.push(first);
        log.set_last_delay(Duration::from_secs(1), DelayReason::RetryAfter);
        log.push(second);
        log.set_last_delay(Duration::from_nanos(24_123_456), DelayReason::Backoff);
        log.push(third);
        assert_eq!(
            log.to_string(),
            format!(
                "attempt 1 | request {} | key order-18… | 503 Service Unavailable | 1ms | then 1s (retry-after)\n\
                 attempt 2 | request {} | key order-18… | failed: connection_lost | 2ms | then 24ms (backoff)\n\
                 attempt 3 | request {} | key order-18… | 201 Created | 1.235s",
                ids[0], ids[1], ids[2]
            )
        );
        let unkeyed = AttemptLog::new(None);
        assert_eq!(unkeyed.to_string(), "");
        let mut unkeyed = unkeyed;
        unkeyed.push(record(1));
        assert!(unkeyed.to_string().contains("| no key |"), "{unkeyed}");
    }

    #[test]
    fn durations_are_rounded_to_the_millisecond_in_one_notation() {
        let shown = |duration: Duration| ShortDuration(duration).to_string();
        assert_eq!(shown(Duration::from_nanos(2_001_867_748)), "2.002s");
        assert_eq!(shown(Duration::from_millis(300)), "300ms");
        assert_eq!(shown(Duration::from_micros(299_600)), "300ms");
        assert_eq!(shown(Duration::from_secs(120)), "120s");
        assert_eq!(shown(Duration::from_micros(250)), "250µs");
        assert_eq!(shown(Duration::from_nanos(999_700)), "1ms");
        assert_eq!(shown(Duration::ZERO), "0ms");
        assert_eq!(shown(Duration::from_nanos(400)), "0ms");
        // Never a panic, even at the end of the range.
        assert!(shown(Duration::MAX).ends_with('s'));
    }

    #[test]
    fn the_log_grows_from_inline_to_a_vec_and_keeps_order_and_delays() {
        let mut log = AttemptLog::new(None);
        assert!(log.is_empty());
        log.push(record(1));
        log.set_last_delay(Duration::from_millis(5), DelayReason::Backoff);
        assert_eq!(log.len(), 1);
        log.push(record(2));
        log.set_last_delay(Duration::from_millis(7), DelayReason::RetryAfter);
        log.push(record(3));
        let numbers: Vec<u32> = log.attempts().iter().map(AttemptRecord::number).collect();
        assert_eq!(numbers, vec![1, 2, 3]);
        let delays: Vec<_> = log.attempts().iter().map(|r| r.delay_after()).collect();
        assert_eq!(delays[0].unwrap().delay, Duration::from_millis(5));
        assert_eq!(delays[1].unwrap().reason, DelayReason::RetryAfter);
        assert!(delays[2].is_none());
        assert_eq!(log.last().unwrap().number(), 3);
        // Equality is over the attempts, whatever the storage.
        let mut one = AttemptLog::new(None);
        one.push(log.attempts()[0].clone());
        let mut same = AttemptLog::new(None);
        same.push(log.attempts()[0].clone());
        assert_eq!(one, same);
    }
}
