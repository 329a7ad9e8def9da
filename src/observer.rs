//! Intent observers: code that watches every intent from the outside.
//!
//! tracing covers logs and spans. Metrics, audit trails and a write-ahead journal
//! need more: a hook *before* the first byte leaves that can still stop the intent,
//! one per attempt, and one at the end with the verdict. An [`IntentObserver`] gets
//! exactly those three calls, in that order, for every intent of the policies (or
//! single requests) it is attached to. With none attached the loop skips all of it.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use http::header::HeaderName;
use http::{HeaderMap, Method, StatusCode};

use crate::attempt_log::{AttemptLog, AttemptRecord, ResponseExt};
use crate::error::{Error, GiveUpReason};
use crate::idempotency::IdempotencyKey;

/// An error an observer returns to refuse an intent.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The future an observer's async hooks return.
pub type ObserverFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Watches intents: started (before the first byte, able to refuse), each attempt,
/// ended. Attach one to a policy ([`RetryPolicyBuilder::observer`]) or to one
/// request ([`RequestBuilder::observer`], [`IntentOptions::observer`]).
///
/// Every method has a default that does nothing, so implement only what you need.
/// `started` and `ended` are awaited on the intent's own task: the caller's result
/// waits for them, so a journal can write ahead and record the outcome durably.
///
/// # The deadline includes observers
///
/// The intent's deadline counts from `send()`, observers' time included: each
/// `started` and `ended` is awaited for at most the time left, so a slow observer
/// (a journal on a locked database) cannot make `send()` outlive its deadline. An
/// observer still running when the time is up is dropped (cancelled) and:
/// - in `started`: the intent ends before anything is sent, with
///   [`GiveUpReason::DeadlineExceeded`] and the outcome *unknown* — the observer
///   may already have acted (a journal may have written the intent ahead and will
///   resume it);
/// - in `ended`: the caller still gets the intent's result, and an error is marked
///   outcome unknown for the same reason.
///
/// An intent without a deadline waits for its observers as long as they take.
///
/// # Examples
/// Counting attempts, retries and give-ups by reason (see `examples/metrics.rs`
/// for the whole recipe):
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::sync::Arc;
/// use reqwest_resilience::{AttemptFinished, IntentEnd, IntentObserver, ObserverFuture, RetryPolicy};
///
/// #[derive(Default)]
/// struct Metrics {
///     attempts: AtomicU64,
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
///     fn ended<'a>(&'a self, end: &'a IntentEnd<'a>) -> ObserverFuture<'a, ()> {
///         if end.gave_up().is_some() {
///             self.0.gave_up.fetch_add(1, Ordering::Relaxed);
///         }
///         Box::pin(async {})
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
    /// Once per intent, after its key is decided and before its first byte leaves,
    /// in the order the observers were added (the policy's first). An `Err`
    /// refuses the intent: later observers are not asked, nothing is sent, and the
    /// caller gets an [`Error`] with [`GiveUpReason::ObserverRefused`] whose
    /// `source()` is yours.
    fn started<'a>(
        &'a self,
        intent: &'a IntentStart<'a>,
    ) -> ObserverFuture<'a, Result<(), BoxError>> {
        let _ = intent;
        Box::pin(std::future::ready(Ok(())))
    }

    /// After each attempt, before any pause. Synchronous and on the request path:
    /// keep it cheap (count, enqueue), never block.
    fn attempt_finished(&self, attempt: &AttemptFinished<'_>) {
        let _ = attempt;
    }

    /// Once, when the intent ends with a response or an error; awaited before the
    /// caller gets that result. Called for every observer whose `started` ran,
    /// including one whose `started` refused the intent and those before a later
    /// one that refused it (the error then says [`GiveUpReason::ObserverRefused`]).
    fn ended<'a>(&'a self, end: &'a IntentEnd<'a>) -> ObserverFuture<'a, ()> {
        let _ = end;
        Box::pin(std::future::ready(()))
    }

    /// True when [`started`](Self::started) needs the bytes of a body made by
    /// `RequestBuilder::body_fn`: the factory is then called once before `started`,
    /// and those same bytes are sent on every attempt. A factory that yields a
    /// stream leaves [`IntentStart::body`] `None`.
    fn needs_body_bytes(&self) -> bool {
        false
    }
}

/// An intent about to send its first attempt: what will go on the wire.
#[derive(Debug)]
pub struct IntentStart<'a> {
    pub(crate) key: Option<&'a IdempotencyKey>,
    pub(crate) key_header: &'a HeaderName,
    pub(crate) request: &'a reqwest::Request,
    pub(crate) body: Option<&'a [u8]>,
    pub(crate) deadline: Option<Duration>,
}

impl<'a> IntentStart<'a> {
    /// The idempotency key every attempt will carry, if any.
    pub fn key(&self) -> Option<&'a IdempotencyKey> {
        self.key
    }

    /// The header that carries the key on the wire (the policy's `key_header`);
    /// `None` for an intent without a key.
    pub fn key_header(&self) -> Option<&'a HeaderName> {
        self.key.map(|_| self.key_header)
    }

    /// The method.
    pub fn method(&self) -> &'a Method {
        self.request.method()
    }

    /// The URL.
    pub fn url(&self) -> &'a reqwest::Url {
        self.request.url()
    }

    /// The headers as sent: the key header included, the per-attempt request id
    /// not (it is new on every attempt).
    pub fn headers(&self) -> &'a HeaderMap {
        self.request.headers()
    }

    /// The body bytes, when the body is in memory (or a `body_fn` body was made
    /// into bytes for an observer that [needs them](IntentObserver::needs_body_bytes));
    /// `None` for no body and for streams — tell them apart with [`has_body`](Self::has_body).
    pub fn body(&self) -> Option<&'a [u8]> {
        self.body
    }

    /// True when the request has a body of any kind.
    pub fn has_body(&self) -> bool {
        self.body.is_some() || self.request.body().is_some()
    }

    /// The intent's deadline, if it has one.
    pub fn deadline(&self) -> Option<Duration> {
        self.deadline
    }
}

/// One attempt of an intent has ended.
#[derive(Debug)]
pub struct AttemptFinished<'a> {
    pub(crate) key: Option<&'a IdempotencyKey>,
    pub(crate) method: &'a Method,
    pub(crate) url: &'a reqwest::Url,
    pub(crate) record: &'a AttemptRecord,
    pub(crate) will_retry: bool,
}

impl<'a> AttemptFinished<'a> {
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

/// An intent has ended: the response the caller gets, or the error.
#[derive(Debug)]
pub struct IntentEnd<'a> {
    pub(crate) method: &'a Method,
    pub(crate) url: &'a reqwest::Url,
    pub(crate) result: &'a Result<reqwest::Response, Error>,
}

impl<'a> IntentEnd<'a> {
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

    /// Every attempt made.
    pub fn attempt_log(&self) -> Option<&'a AttemptLog> {
        match self.result {
            Ok(response) => response.attempt_log(),
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
