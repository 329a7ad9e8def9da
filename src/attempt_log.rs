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
        }
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
}

impl DelayReason {
    /// A short label for logs and tables.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Backoff => "backoff",
            Self::RetryAfter => "retry-after",
            Self::Conflict => "conflict",
        }
    }
}

/// Reads the attempt log a [`crate::ResilientClient`] stored in a response.
pub trait ResponseExt {
    /// The log of the intent that produced this response.
    fn attempt_log(&self) -> Option<&AttemptLog>;
}

impl ResponseExt for reqwest::Response {
    fn attempt_log(&self) -> Option<&AttemptLog> {
        self.extensions().get::<AttemptLog>()
    }
}

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
