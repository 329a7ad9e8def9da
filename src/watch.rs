//! What watches an intent, and what journals it: the observer and its events, the
//! write-ahead, and the records of each attempt.
//!
//! * [`IntentObserver`] is told, synchronously, after each attempt
//!   ([`AttemptFinished`]), when a retry is scheduled ([`RetryScheduled`]), about
//!   hedged copies ([`HedgeEvent`]) and when the intent ends ([`IntentEnd`]): metrics
//!   and audit (the `metrics` feature's `Metrics` is one).
//! * [`WriteAhead`] is awaited before an intent's first byte ([`IntentStart`]), able
//!   to refuse it, and told its end: a durable journal
//!   (`reqwest-resilience-journal` is one). A commit whose outcome its database could
//!   not report is a [`CommitOutcomeUnknown`].
//! * The attempts themselves are in the response's
//!   [`AttemptLog`](crate::AttemptLog): one [`AttemptRecord`] each, with its
//!   [`AttemptOutcome`] and the [`ScheduledDelay`] after it.

pub use crate::attempt_log::{
    AttemptOutcome, AttemptRecord, DelayReason, EndNotRecorded, ScheduledDelay,
};
pub use crate::commit_unknown::CommitOutcomeUnknown;
#[cfg(feature = "metrics")]
pub use crate::metrics::Metrics;
pub use crate::observer::{
    AttemptFinished, HedgeEvent, HedgeEventKind, IntentEnd, IntentObserver, RetryScheduled,
};
pub use crate::write_ahead::{IntentStart, WriteAhead, WriteAheadFuture};
