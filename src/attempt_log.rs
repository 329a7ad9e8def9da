//! What happened to each attempt of an intent.
//!
//! Logs and dashboards show single requests; an incident review needs the intent:
//! which deliveries were made, what each got back, and why the client waited as long
//! as it did. Every intent yields an [`AttemptLog`], on success (from the response,
//! via [`ResponseExt::attempt_log`]) and on failure (from [`crate::Error::attempt_log`]).

use std::time::Duration;

use http::StatusCode;

// Re-exported here too: the retry loop imports it from this module.
pub(crate) use crate::failure::TransportFailure;
use crate::idempotency::IdempotencyKey;
use crate::ids::RequestId;

/// The attempts of one intent, oldest first, and the intent's idempotency key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AttemptLog {
    attempts: Vec<AttemptRecord>,
    key: Option<IdempotencyKey>,
}

impl AttemptLog {
    pub(crate) fn new(key: Option<IdempotencyKey>) -> Self {
        Self {
            attempts: Vec::new(),
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
        self.attempts.push(record);
    }

    pub(crate) fn set_last_delay(&mut self, delay: Duration, reason: DelayReason) {
        if let Some(last) = self.attempts.last_mut() {
            last.delay_after = Some(ScheduledDelay { delay, reason });
        }
    }

    /// Every attempt, oldest first.
    pub fn attempts(&self) -> &[AttemptRecord] {
        &self.attempts
    }

    /// How many attempts were made.
    pub fn len(&self) -> usize {
        self.attempts.len()
    }

    /// True when no attempt was made (the request was refused before sending).
    pub fn is_empty(&self) -> bool {
        self.attempts.is_empty()
    }

    /// The most recent attempt.
    pub fn last(&self) -> Option<&AttemptRecord> {
        self.attempts.last()
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
    /// Requested by the server's `Retry-After`.
    RetryAfter,
}

impl DelayReason {
    /// A short label for logs and tables.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Backoff => "backoff",
            Self::RetryAfter => "retry-after",
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
