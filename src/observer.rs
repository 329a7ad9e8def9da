//! Intent observers: code that watches every intent from the outside.
//!
//! tracing covers logs and spans; metrics and audit trails want the same events as
//! values. An [`IntentObserver`] is told of each attempt, each scheduled retry and
//! the end, synchronously and in that order, for every intent of the policies (or
//! single requests) it is attached to. It only watches: what must act before the
//! first byte and hear the end (a journal) is a [`WriteAhead`](crate::WriteAhead).
//! With no observer attached the loop skips all of it; with some, an intent pays
//! their calls and nothing else (no future, no allocation).

use std::sync::Arc;
use std::time::Duration;

use http::{HeaderMap, Method, StatusCode};

#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
use crate::attempt_log::ResponseExt;
use crate::attempt_log::{AttemptLog, AttemptRecord, DelayReason};
use crate::error::{Error, GiveUpReason};
use crate::gate::RetryCause;
use crate::idempotency::IdempotencyKey;
use crate::ids::RequestId;

/// Watches intents: each attempt, each scheduled retry, the end. Attach one to a
/// policy ([`RetryPolicyBuilder::observer`]) or to one request
/// ([`RequestBuilder::observer`], [`IntentOptions::observer`]); the policy's are
/// told first, then the request's, in the order they were added.
///
/// Every hook is synchronous, on the request path, with a default that does
/// nothing: implement only what you need, keep it cheap (count, enqueue), never
/// block. To stop an intent before its first byte or to record its end durably,
/// use a [`WriteAhead`](crate::WriteAhead).
///
/// # Examples
/// Counting attempts, retries and give-ups by reason with the synchronous hooks
/// only (see `examples/metrics.rs` for the whole recipe):
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::sync::Arc;
/// use reqwest_resilience::{AttemptFinished, IntentEnd, IntentObserver, RetryPolicy, RetryScheduled};
///
/// #[derive(Default)]
/// struct Metrics {
///     attempts: AtomicU64,
///     retries: AtomicU64,
///     gave_up: AtomicU64,
/// }
///
/// struct Count(Arc<Metrics>);
///
/// impl IntentObserver for Count {
///     fn attempt_finished(&self, _: &AttemptFinished<'_>) {
///         self.0.attempts.fetch_add(1, Ordering::Relaxed);
///     }
///
///     fn retry_scheduled(&self, _: &RetryScheduled<'_>) {
///         self.0.retries.fetch_add(1, Ordering::Relaxed);
///     }
///
///     fn finished(&self, end: &IntentEnd<'_>) {
///         if end.gave_up().is_some() {
///             self.0.gave_up.fetch_add(1, Ordering::Relaxed);
///         }
///     }
/// }
///
/// let metrics = Arc::new(Metrics::default());
/// let policy = RetryPolicy::builder().observer(Count(metrics.clone())).build()?;
/// # drop(policy);
/// # Ok::<(), reqwest_resilience::BuildError>(())
/// ```
///
/// [`RetryPolicyBuilder::observer`]: crate::RetryPolicyBuilder::observer
/// [`RequestBuilder::observer`]: crate::RequestBuilder::observer
/// [`IntentOptions::observer`]: crate::IntentOptions::observer
pub trait IntentObserver: Send + Sync + 'static {
    /// After each attempt, before the gates are asked about a retry (so
    /// [`AttemptFinished::is_retryable`] is the policy's wish, not a promise).
    /// Synchronous and on the request path: keep it cheap (count, enqueue), never
    /// block.
    fn attempt_finished(&self, attempt: &AttemptFinished<'_>) {
        let _ = attempt;
    }

    /// A retry is scheduled: the decision, the deadline and every gate agreed, and
    /// the pause starts now. Synchronous, like `attempt_finished`.
    fn retry_scheduled(&self, retry: &RetryScheduled<'_>) {
        let _ = retry;
    }

    /// A hedged intent's copy went out as a hedge, won, was cancelled, or was
    /// refused (see [`Hedging`](crate::Hedging)). Synchronous, like the others.
    fn hedge(&self, event: &HedgeEvent<'_>) {
        let _ = event;
    }

    /// Once, when the intent ends with a response or an error (a gate's or a
    /// write-ahead's refusal included), before the write-ahead's `after_end` and
    /// before the caller gets the result.
    fn finished(&self, end: &IntentEnd<'_>) {
        let _ = end;
    }
}

/// One attempt of an intent has ended.
#[derive(Debug)]
pub struct AttemptFinished<'a> {
    pub(crate) intent_id: RequestId,
    pub(crate) key: Option<&'a IdempotencyKey>,
    pub(crate) method: &'a Method,
    pub(crate) url: &'a reqwest::Url,
    pub(crate) record: &'a AttemptRecord,
    pub(crate) will_retry: bool,
}

impl<'a> AttemptFinished<'a> {
    /// Identifies the intent (see [`IntentStart::intent_id`](crate::IntentStart::intent_id)).
    pub fn intent_id(&self) -> RequestId {
        self.intent_id
    }

    /// The intent's idempotency key, if any.
    pub fn key(&self) -> Option<&'a IdempotencyKey> {
        self.key
    }

    /// The method.
    pub fn method(&self) -> &'a Method {
        self.method
    }

    /// The URL.
    pub fn url(&self) -> &'a reqwest::Url {
        self.url
    }

    /// The attempt: number, request id, outcome, duration.
    pub fn record(&self) -> &'a AttemptRecord {
        self.record
    }

    /// True when the classification wants another attempt and the method and key
    /// allow it (the deadline, attempts and gates may still say no).
    pub fn is_retryable(&self) -> bool {
        self.will_retry
    }
}

/// A retry was scheduled: the pause before it starts now.
#[derive(Debug)]
pub struct RetryScheduled<'a> {
    pub(crate) intent_id: RequestId,
    pub(crate) method: &'a Method,
    pub(crate) url: &'a reqwest::Url,
    pub(crate) record: &'a AttemptRecord,
    pub(crate) delay: Duration,
    pub(crate) reason: DelayReason,
    pub(crate) cause: RetryCause,
}

impl<'a> RetryScheduled<'a> {
    /// Identifies the intent (see [`IntentStart::intent_id`](crate::IntentStart::intent_id)).
    pub fn intent_id(&self) -> RequestId {
        self.intent_id
    }

    /// The method.
    pub fn method(&self) -> &'a Method {
        self.method
    }

    /// The URL.
    pub fn url(&self) -> &'a reqwest::Url {
        self.url
    }

    /// The attempt that will be retried.
    pub fn record(&self) -> &'a AttemptRecord {
        self.record
    }

    /// How long the pause lasts.
    pub fn delay(&self) -> Duration {
        self.delay
    }

    /// Why the pause has that length.
    pub fn reason(&self) -> DelayReason {
        self.reason
    }

    /// Why the intent retries.
    pub fn cause(&self) -> RetryCause {
        self.cause
    }
}

/// Something happened to a hedged intent's copy.
#[derive(Debug)]
pub struct HedgeEvent<'a> {
    pub(crate) intent_id: RequestId,
    pub(crate) method: &'a Method,
    pub(crate) url: &'a reqwest::Url,
    pub(crate) attempt: u32,
    pub(crate) kind: HedgeEventKind,
}

/// What happened to a hedged copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HedgeEventKind {
    /// A hedge went out (the delay passed without an answer).
    Sent,
    /// A hedge gave the answer the caller gets.
    Won,
    /// A copy still running was cancelled: another copy answered first.
    Cancelled,
    /// The hedge cap refused a hedge (the running copies carry on).
    RefusedByCap,
    /// A gate refused a hedge (the running copies carry on).
    RefusedByGate,
}

impl HedgeEventKind {
    /// A short label for logs and metrics: `sent`, `won`, `cancelled`,
    /// `refused_by_cap`, `refused_by_gate`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Sent => "sent",
            Self::Won => "won",
            Self::Cancelled => "cancelled",
            Self::RefusedByCap => "refused_by_cap",
            Self::RefusedByGate => "refused_by_gate",
        }
    }
}

impl<'a> HedgeEvent<'a> {
    /// Identifies the intent (see [`IntentStart::intent_id`](crate::IntentStart::intent_id)).
    pub fn intent_id(&self) -> RequestId {
        self.intent_id
    }

    /// The method.
    pub fn method(&self) -> &'a Method {
        self.method
    }

    /// The URL.
    pub fn url(&self) -> &'a reqwest::Url {
        self.url
    }

    /// The copy's attempt number (for a refusal: the number it would have had).
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// What happened.
    pub fn kind(&self) -> HedgeEventKind {
        self.kind
    }
}

/// An intent has ended: the response the caller gets, or the error.
#[derive(Debug)]
pub struct IntentEnd<'a> {
    pub(crate) intent_id: RequestId,
    pub(crate) elapsed: Duration,
    pub(crate) method: &'a Method,
    pub(crate) url: &'a reqwest::Url,
    pub(crate) result: &'a Result<reqwest::Response, Error>,
}

impl<'a> IntentEnd<'a> {
    /// Identifies the intent (see [`IntentStart::intent_id`](crate::IntentStart::intent_id)).
    pub fn intent_id(&self) -> RequestId {
        self.intent_id
    }

    /// Time from `send()` to this end, on the policy's clock: the write-ahead's
    /// `before_first_byte`, every attempt and pause.
    pub fn elapsed(&self) -> Duration {
        self.elapsed
    }

    /// The method.
    pub fn method(&self) -> &'a Method {
        self.method
    }

    /// The URL.
    pub fn url(&self) -> &'a reqwest::Url {
        self.url
    }

    /// The intent's idempotency key, if any.
    pub fn key(&self) -> Option<&'a IdempotencyKey> {
        self.attempt_log().and_then(AttemptLog::idempotency_key)
    }

    /// Every attempt made. In the browser and node, `None` for an intent that ended
    /// with a response: `fetch`'s responses carry no log (each attempt was told to
    /// [`IntentObserver::attempt_finished`] as it ended).
    pub fn attempt_log(&self) -> Option<&'a AttemptLog> {
        match self.result {
            #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
            Ok(response) => response.attempt_log(),
            #[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
            Ok(_) => None,
            Err(error) => Some(error.attempt_log()),
        }
    }

    /// The final response: the one the caller gets, or the last one kept in the error.
    pub fn response(&self) -> Option<&'a reqwest::Response> {
        match self.result {
            Ok(response) => Some(response),
            Err(error) => error.response(),
        }
    }

    /// The final response's status, if there was a response.
    pub fn status(&self) -> Option<StatusCode> {
        self.response().map(reqwest::Response::status)
    }

    /// The final response's headers, if there was a response.
    pub fn headers(&self) -> Option<&'a HeaderMap> {
        self.response().map(reqwest::Response::headers)
    }

    /// Why the intent gave up; `None` when the caller gets a response.
    pub fn gave_up(&self) -> Option<GiveUpReason> {
        self.result.as_ref().err().map(Error::reason)
    }

    /// See [`Error::is_outcome_unknown`]; false when the caller gets a response.
    pub fn is_outcome_unknown(&self) -> bool {
        self.result.as_ref().is_err_and(Error::is_outcome_unknown)
    }

    /// The server's last `Retry-After`, when the intent gave up with one.
    pub fn retry_after(&self) -> Option<Duration> {
        self.result.as_ref().err().and_then(Error::retry_after)
    }

    /// The error, when the intent gave up.
    pub fn error(&self) -> Option<&'a Error> {
        self.result.as_ref().err()
    }
}

/// The observers of one intent, in the order they are told: the policy's, then
/// the request's own.
pub(crate) struct Observers<'p> {
    policy: &'p [Arc<dyn IntentObserver>],
    request: Vec<Arc<dyn IntentObserver>>,
}

impl<'p> Observers<'p> {
    pub(crate) fn new(
        policy: &'p [Arc<dyn IntentObserver>],
        request: Vec<Arc<dyn IntentObserver>>,
    ) -> Self {
        Self { policy, request }
    }

    fn all(&self) -> impl Iterator<Item = &Arc<dyn IntentObserver>> {
        self.policy.iter().chain(&self.request)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.policy.is_empty() && self.request.is_empty()
    }

    pub(crate) fn attempt_finished(&self, finished: &AttemptFinished<'_>) {
        for observer in self.all() {
            observer.attempt_finished(finished);
        }
    }

    pub(crate) fn retry_scheduled(&self, retry: &RetryScheduled<'_>) {
        for observer in self.all() {
            observer.retry_scheduled(retry);
        }
    }

    pub(crate) fn hedge(&self, event: &HedgeEvent<'_>) {
        for observer in self.all() {
            observer.hedge(event);
        }
    }

    pub(crate) fn finished(&self, end: &IntentEnd<'_>) {
        for observer in self.all() {
            observer.finished(end);
        }
    }
}
