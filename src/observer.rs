//! Intent observers: code that watches every intent from the outside.
//!
//! tracing covers logs and spans. Metrics, audit trails and a write-ahead journal
//! need more: a hook *before* the first byte leaves that can still stop the intent,
//! one per attempt, one when a retry is actually scheduled, and one at the end with
//! the verdict. An [`IntentObserver`] gets those calls, in that order, for every
//! intent of the policies (or single requests) it is attached to. With none
//! attached the loop skips all of it; an observer with only the synchronous hooks
//! (a metrics counter) costs the intent no allocation.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use http::header::HeaderName;
use http::{HeaderMap, Method, StatusCode};

use crate::attempt_log::{AttemptLog, AttemptRecord, DelayReason, ResponseExt};
use crate::error::{BoxError, Error, GiveUpReason};
use crate::gate::RetryCause;
use crate::idempotency::IdempotencyKey;
use crate::ids::RequestId;

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
///     fn needs_async_hooks(&self) -> bool {
///         false // only counters: the intent need not await this observer
///     }
///
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

    /// Once, when the intent ends with a response or an error, before `ended` and
    /// before the caller gets the result. Synchronous, like `attempt_finished`:
    /// the end hook for metrics. Called for every observer whose `started` ran (or
    /// would have run: see [`needs_async_hooks`](Self::needs_async_hooks)), and for
    /// every observer when a gate held back the first attempt (then no `started`
    /// ran and no `ended` follows).
    fn finished(&self, end: &IntentEnd<'_>) {
        let _ = end;
    }

    /// Once, when the intent ends with a response or an error; awaited before the
    /// caller gets that result. Called for every observer whose `started` ran,
    /// including one whose `started` refused the intent and those before a later
    /// one that refused it (the error then says [`GiveUpReason::ObserverRefused`]).
    ///
    /// An `Err` says the observer could not record the end (a journal's write
    /// failed): the caller's error, if it got one, is then marked
    /// [outcome unknown](Error::is_outcome_unknown), because an observer that
    /// wrote the intent ahead may still resume it.
    fn ended<'a>(&'a self, end: &'a IntentEnd<'a>) -> ObserverFuture<'a, Result<(), BoxError>> {
        let _ = end;
        Box::pin(std::future::ready(Ok(())))
    }

    /// False when the observer implements only the synchronous hooks
    /// (`attempt_finished`, `retry_scheduled`, `finished`): then its `started`
    /// and `ended` are never called, and an intent with only such observers runs
    /// without awaiting (or allocating for) any of them. Defaults to true.
    fn needs_async_hooks(&self) -> bool {
        true
    }

    /// A name for observers of which one intent may carry only one (a journal:
    /// two would write the same intent twice). A second observer with the same
    /// name fails `send()` before any observer is asked or anything is sent
    /// ([`GiveUpReason::InvalidRequest`]). `None` (the default): any number.
    fn one_per_intent(&self) -> Option<&'static str> {
        None
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
    pub(crate) intent_id: RequestId,
    pub(crate) key: Option<&'a IdempotencyKey>,
    pub(crate) key_header: &'a HeaderName,
    pub(crate) request: &'a reqwest::Request,
    pub(crate) body: Option<&'a [u8]>,
    pub(crate) deadline: Option<Duration>,
}

impl<'a> IntentStart<'a> {
    /// Identifies the intent, keyed or not, in every hook: the request id its
    /// first attempt will carry.
    pub fn intent_id(&self) -> RequestId {
        self.intent_id
    }

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
    pub(crate) intent_id: RequestId,
    pub(crate) key: Option<&'a IdempotencyKey>,
    pub(crate) method: &'a Method,
    pub(crate) url: &'a reqwest::Url,
    pub(crate) record: &'a AttemptRecord,
    pub(crate) will_retry: bool,
}

impl<'a> AttemptFinished<'a> {
    /// Identifies the intent (see [`IntentStart::intent_id`]).
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
    /// Identifies the intent (see [`IntentStart::intent_id`]).
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
    /// Identifies the intent (see [`IntentStart::intent_id`]).
    pub fn intent_id(&self) -> RequestId {
        self.intent_id
    }

    /// Time from `send()` to this end, on the policy's clock: observers' `started`,
    /// every attempt and pause.
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

/// The observers of one intent, in the order they are told (the policy's, then the
/// request's own), and how many of them heard `started`.
pub(crate) struct Observers<'p> {
    policy: &'p [Arc<dyn IntentObserver>],
    request: Vec<Arc<dyn IntentObserver>>,
    /// How many, in order, reached `started` (or would have, for those without
    /// async hooks): exactly these hear how the intent ended.
    reached: usize,
}

impl<'p> Observers<'p> {
    pub(crate) fn new(
        policy: &'p [Arc<dyn IntentObserver>],
        request: Vec<Arc<dyn IntentObserver>>,
    ) -> Self {
        Self {
            policy,
            request,
            reached: 0,
        }
    }

    /// Gives back the intent's own observers (the runner borrows the policy's).
    #[inline]
    pub(crate) fn into_request_observers(self) -> Vec<Arc<dyn IntentObserver>> {
        self.request
    }

    fn all(&self) -> impl Iterator<Item = &Arc<dyn IntentObserver>> {
        self.policy.iter().chain(&self.request)
    }

    /// The name of an observer that must be alone on an intent and is not.
    #[inline]
    pub(crate) fn duplicate(&self) -> Option<&'static str> {
        let mut seen: Vec<&'static str> = Vec::new();
        for name in self.all().filter_map(|observer| observer.one_per_intent()) {
            if seen.contains(&name) {
                return Some(name);
            }
            seen.push(name);
        }
        None
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.policy.is_empty() && self.request.is_empty()
    }

    #[inline]
    pub(crate) fn need_body_bytes(&self) -> bool {
        self.all().any(|observer| observer.needs_body_bytes())
    }

    /// Calls each observer's `started`, in order, each within the time `left()`
    /// says is left (no limit for `None`). Stops at the first refusal.
    pub(crate) async fn start(
        &mut self,
        start: &IntentStart<'_>,
        left: impl Fn() -> Option<Duration>,
    ) -> Result<(), StartRefused> {
        let mut outcome = Ok(());
        let mut reached = 0;
        for observer in self.policy.iter().chain(&self.request) {
            reached += 1;
            if !observer.needs_async_hooks() {
                continue;
            }
            match within(left(), observer.started(start)).await {
                Some(Ok(())) => continue,
                Some(Err(refusal)) => outcome = Err(StartRefused::Refused(refusal)),
                None => outcome = Err(StartRefused::OutOfTime),
            }
            break;
        }
        self.reached = reached;
        outcome
    }

    /// Counts every observer as reached without calling `started`: for intents
    /// whose observers have no async hooks.
    #[inline]
    pub(crate) fn start_without_waiting(&mut self) {
        self.reached = self.policy.len() + self.request.len();
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

    /// Tells every observer that was reached how the intent ended, synchronously.
    pub(crate) fn finished(&self, end: &IntentEnd<'_>) {
        for observer in self.all().take(self.reached) {
            observer.finished(end);
        }
    }

    /// Tells every observer, synchronously, that a gate ended the intent before
    /// any of them was reached.
    pub(crate) fn finished_unstarted(&self, end: &IntentEnd<'_>) {
        for observer in self.all() {
            observer.finished(end);
        }
    }

    /// Awaits the `ended` of every observer that was reached and has async hooks,
    /// each within the time `left()` says is left. True when every one returned
    /// `Ok` in time.
    pub(crate) async fn ended(
        &self,
        end: &IntentEnd<'_>,
        left: impl Fn() -> Option<Duration>,
    ) -> bool {
        let mut all_heard = true;
        let reached = self.all().take(self.reached);
        for observer in reached.filter(|observer| observer.needs_async_hooks()) {
            match within(left(), observer.ended(end)).await {
                Some(Ok(())) => {}
                Some(Err(error)) => {
                    tracing::warn!(error = %error, "an intent observer could not record how the intent ended");
                    all_heard = false;
                }
                None => {
                    tracing::warn!(
                        "an intent observer's `ended` outlived the deadline and was cut off"
                    );
                    all_heard = false;
                }
            }
        }
        all_heard
    }

    /// True when some observer needs its async hooks awaited.
    #[inline]
    pub(crate) fn need_waiting(&self) -> bool {
        self.all().any(|observer| observer.needs_async_hooks())
    }
}

/// Why the observers' `started` stopped the intent.
pub(crate) enum StartRefused {
    /// An observer refused, with its reason.
    Refused(BoxError),
    /// An observer was still running when the deadline came.
    OutOfTime,
}

/// Awaits `hook` for at most `limit` (no limit without a deadline); `None` when the
/// time ran out and the hook was dropped.
async fn within<F: Future>(limit: Option<Duration>, hook: F) -> Option<F::Output> {
    match limit {
        Some(limit) => tokio::time::timeout(limit, hook).await.ok(),
        None => Some(hook.await),
    }
}
