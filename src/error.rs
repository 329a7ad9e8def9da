//! The one error type: why the intent gave up, and what the caller must do next.
//!
//! The most important bit is [`Error::is_outcome_unknown`]: when an attempt may have
//! reached the server and no final answer came back, the caller must reconcile (ask a
//! status route, or retry later *with the same key*), never resend with a new key.

use std::fmt;
use std::time::Duration;

use http::{Method, StatusCode};

use crate::attempt_log::{AttemptLog, AttemptOutcome};
use crate::commit_unknown::CommitOutcomeUnknown;
use crate::failure::TransportFailure;
use crate::gate::GateRefusal;
use crate::idempotency::{IdempotencyKey, InvalidKey};

mod display;
mod reason;

pub use reason::GiveUpReason;

/// The intent gave up. Carries the last response or transport error, the attempt
/// log, the idempotency key, and whether the outcome is unknown.
pub struct Error {
    inner: Box<Inner>,
}

struct Inner {
    reason: GiveUpReason,
    last: LastResult,
    retry_after: Option<Duration>,
    log: AttemptLog,
    outcome_unknown: bool,
    elapsed: Duration,
    /// The gate that held back the next attempt, for `BudgetExhausted` and `GateRefused`.
    refusal: Option<GateRefusal>,
    /// The intent's method, once its attempts had begun (the give-up text names it).
    method: Option<Method>,
}

/// Everything the retry loop knows when it gives up.
pub(crate) struct GiveUpContext {
    /// The attempts, and the intent's key.
    pub(crate) log: AttemptLog,
    pub(crate) outcome_unknown: bool,
    pub(crate) elapsed: Duration,
    pub(crate) retry_after: Option<Duration>,
    /// The intent's method; `None` when it ended before its attempts began.
    pub(crate) method: Option<Method>,
}

/// How the last attempt ended, or what stopped the intent before one was sent.
pub(crate) enum LastResult {
    Response(reqwest::Response),
    Transport(reqwest::Error),
    /// Another middleware's error, or a write-ahead's refusal.
    Other(BoxError),
    InvalidKey(InvalidKey),
    ZeroDeadline,
    Nothing,
}

/// Any error, boxed: a write-ahead's refusal, another middleware's failure.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl Error {
    pub(crate) fn give_up(reason: GiveUpReason, last: LastResult, context: GiveUpContext) -> Self {
        let last = match last {
            LastResult::Transport(error) => LastResult::Transport(without_credentials(error)),
            last => last,
        };
        Self {
            inner: Box::new(Inner {
                reason,
                last,
                retry_after: context.retry_after,
                log: context.log,
                outcome_unknown: context.outcome_unknown,
                elapsed: context.elapsed,
                refusal: None,
                method: context.method,
            }),
        }
    }

    /// A gate held back the next attempt: the first (then nothing was sent, and
    /// `last` is nothing) or a retry (then `last` is the earlier attempt's result).
    pub(crate) fn gate_refused(
        refusal: GateRefusal,
        last: LastResult,
        context: GiveUpContext,
    ) -> Self {
        let reason = if refusal.budget {
            GiveUpReason::BudgetExhausted
        } else {
            GiveUpReason::GateRefused
        };
        let mut error = Self::give_up(reason, last, context);
        error.inner.refusal = Some(refusal);
        error
    }

    /// The request could not be built; nothing was sent.
    pub(crate) fn invalid_request(source: reqwest::Error) -> Self {
        Self::nothing_sent(GiveUpReason::InvalidRequest, LastResult::Transport(source))
    }

    /// The caller's key was refused; nothing was sent.
    pub(crate) fn invalid_key(source: InvalidKey) -> Self {
        Self::nothing_sent(GiveUpReason::InvalidRequest, LastResult::InvalidKey(source))
    }

    /// A per-request policy that does not build; nothing was sent.
    pub(crate) fn invalid_policy(error: BoxError) -> Self {
        Self::nothing_sent(GiveUpReason::InvalidRequest, LastResult::Other(error))
    }

    /// A per-request deadline of zero; nothing was sent.
    pub(crate) fn zero_deadline() -> Self {
        Self::nothing_sent(GiveUpReason::InvalidRequest, LastResult::ZeroDeadline)
    }

    /// The write-ahead stopped the intent before its first byte; nothing was sent
    /// by this call. When its error carries [`CommitOutcomeUnknown`] the write-ahead's
    /// own write may have committed (a journal may send the intent later under its
    /// key): the outcome is unknown, and that is not a refusal.
    pub(crate) fn write_ahead_refused(source: BoxError, log: AttemptLog) -> Self {
        let unknown = CommitOutcomeUnknown::is_in_chain(source.as_ref());
        let context = GiveUpContext {
            log,
            outcome_unknown: unknown,
            ..GiveUpContext::nothing_sent()
        };
        let reason = if unknown {
            GiveUpReason::WriteAheadUnconfirmed
        } else {
            GiveUpReason::WriteAheadRefused
        };
        Self::give_up(reason, LastResult::Other(source), context)
    }

    /// The write-ahead's `before_first_byte` was still running at the deadline:
    /// nothing was sent by this call, but it may have acted (a journal may have written
    /// the intent ahead, to resume it later), so the outcome is unknown.
    pub(crate) fn write_ahead_overran_deadline(log: AttemptLog, elapsed: Duration) -> Self {
        let context = GiveUpContext {
            log,
            outcome_unknown: true,
            elapsed,
            retry_after: None,
            method: None,
        };
        Self::give_up(GiveUpReason::DeadlineExceeded, LastResult::Nothing, context)
    }

    /// The write-ahead did not record how the intent ended (see
    /// `intent::mark_end_not_recorded`): it may still send the intent, so a
    /// refusal of its own is no longer one.
    pub(crate) fn mark_outcome_unknown(&mut self) {
        self.inner.outcome_unknown = true;
        if self.inner.reason == GiveUpReason::WriteAheadRefused {
            self.inner.reason = GiveUpReason::WriteAheadUnconfirmed;
        }
    }

    fn nothing_sent(reason: GiveUpReason, last: LastResult) -> Self {
        Self::give_up(reason, last, GiveUpContext::nothing_sent())
    }

    /// Why the intent gave up.
    pub fn reason(&self) -> GiveUpReason {
        self.inner.reason
    }

    /// Every allowed attempt failed transiently.
    pub fn is_attempts_exhausted(&self) -> bool {
        self.inner.reason == GiveUpReason::AttemptsExhausted
    }

    /// The deadline passed (or the next pause would have crossed it).
    pub fn is_deadline_exceeded(&self) -> bool {
        self.inner.reason == GiveUpReason::DeadlineExceeded
    }

    /// The server asked to wait longer than the ceiling or the time left.
    pub fn is_retry_after_too_long(&self) -> bool {
        matches!(
            self.inner.reason,
            GiveUpReason::RetryAfterBeyondCeiling | GiveUpReason::RetryAfterBeyondDeadline
        )
    }

    /// The shared retry budget refused the retry.
    pub fn is_budget_exhausted(&self) -> bool {
        self.inner.reason == GiveUpReason::BudgetExhausted
    }

    /// A gate other than the budget (a circuit breaker, a throttle) held back an
    /// attempt; [`gate_refusal`](Self::gate_refusal) names it. When it held back
    /// the first attempt, nothing was sent and the outcome is known.
    pub fn is_gate_refused(&self) -> bool {
        self.inner.reason == GiveUpReason::GateRefused
    }

    /// A gate (a circuit breaker, a throttle) held back the intent's **first**
    /// attempt: nothing was sent, nothing was written, the outcome is known, and
    /// sending the same intent later is safe. [`gate_refusal`](Self::gate_refusal)
    /// says which gate, for which authority, and when it expects to admit again.
    pub fn is_first_attempt_refused(&self) -> bool {
        self.inner
            .refusal
            .as_ref()
            .is_some_and(GateRefusal::is_first_attempt)
    }

    /// A gate (the budget included) held back a **retry**: at least one attempt
    /// was sent, and the error carries the last one's result; the outcome may be
    /// unknown ([`is_outcome_unknown`](Self::is_outcome_unknown)).
    pub fn is_retry_refused(&self) -> bool {
        self.inner
            .refusal
            .as_ref()
            .is_some_and(|refusal| !refusal.is_first_attempt())
    }

    /// The gate that held back the next attempt (the budget included), and when it
    /// expects to admit again. This is the client's own estimate; the server's
    /// word is [`retry_after`](Self::retry_after).
    pub fn gate_refusal(&self) -> Option<&GateRefusal> {
        self.inner.refusal.as_ref()
    }

    /// A streamed body was sent once and could not be replayed.
    pub fn is_body_not_replayable(&self) -> bool {
        self.inner.reason == GiveUpReason::BodyNotReplayable
    }

    /// A resend of an intent read whole was answered `410 Gone`: the server finished
    /// the key (the effect happened) but did not keep its response. The outcome is
    /// known; read the result through the API's own status route, never by sending
    /// again under a new key.
    pub fn is_completed_not_kept(&self) -> bool {
        self.inner.reason == GiveUpReason::CompletedNotKept
    }

    /// The failure was not transient, or a retry was not safe.
    pub fn is_not_retryable(&self) -> bool {
        self.inner.reason == GiveUpReason::NotRetryable
    }

    /// The request or its key was invalid; nothing was sent.
    pub fn is_invalid_request(&self) -> bool {
        self.inner.reason == GiveUpReason::InvalidRequest
    }

    /// The intent's [`WriteAhead`](crate::WriteAhead) refused it before its first
    /// byte: nothing was sent, and nothing will be sent later; the outcome is
    /// known. [`source`](std::error::Error::source) is the write-ahead's error.
    ///
    /// Never true together with [`is_outcome_unknown`](Self::is_outcome_unknown):
    /// a write-ahead that could not tell whether its own write committed is
    /// [`is_write_ahead_unconfirmed`](Self::is_write_ahead_unconfirmed) instead.
    pub fn is_write_ahead_refused(&self) -> bool {
        self.inner.reason == GiveUpReason::WriteAheadRefused
    }

    /// The intent's [`WriteAhead`](crate::WriteAhead) stopped it before its first
    /// byte without knowing whether its own write committed
    /// ([`CommitOutcomeUnknown`] in the chain, e.g. a journal's `COMMIT` whose
    /// answer was lost), or refused it and then could not close what it wrote.
    /// This call sent nothing, but the write-ahead may still send the intent under
    /// [`idempotency_key`](Self::idempotency_key): the outcome is unknown
    /// ([`is_outcome_unknown`](Self::is_outcome_unknown) is true), and a retry
    /// must use that key. [`source`](std::error::Error::source) is the
    /// write-ahead's error.
    pub fn is_write_ahead_unconfirmed(&self) -> bool {
        self.inner.reason == GiveUpReason::WriteAheadUnconfirmed
    }

    /// Renamed [`is_write_ahead_refused`](Self::is_write_ahead_refused).
    #[deprecated(since = "0.2.0", note = "renamed `Error::is_write_ahead_refused`")]
    pub fn is_observer_refused(&self) -> bool {
        self.is_write_ahead_refused()
    }

    /// The last attempt ended in a timeout.
    pub fn is_timeout(&self) -> bool {
        self.transport_error()
            .is_some_and(reqwest::Error::is_timeout)
    }

    /// True when an attempt may have reached the server and no final answer came
    /// back: reconcile (status route, or retry later with [`Error::idempotency_key`]),
    /// never resend with a new key.
    ///
    /// Deliberately cautious: only a failure that proves the request never left
    /// (a refused or timed-out connect, a failed DNS lookup, an HTTP/2 stream the
    /// server refused or placed above a GOAWAY, a pooled connection closed before
    /// the write — see [`TransportFailure::proves_not_sent`](crate::TransportFailure::proves_not_sent)),
    /// a 408 and a 429 prove that nothing was done. A timeout, a lost connection, a
    /// 500, 502, 504, 409 — and a 503, which gateways also send after forwarding the
    /// request — all leave the outcome unknown.
    pub fn is_outcome_unknown(&self) -> bool {
        self.inner.outcome_unknown
    }

    /// Attempts made.
    pub fn attempts(&self) -> u32 {
        u32::try_from(self.inner.log.len()).unwrap_or(u32::MAX)
    }

    /// Time from the intent's start to giving up.
    pub fn elapsed(&self) -> Duration {
        self.inner.elapsed
    }

    /// The status of the last response, if the last attempt got one.
    pub fn last_status(&self) -> Option<StatusCode> {
        self.response().map(reqwest::Response::status)
    }

    /// The last `Retry-After` the server sent (the requested wait when the error is
    /// [`is_retry_after_too_long`](Self::is_retry_after_too_long)).
    pub fn retry_after(&self) -> Option<Duration> {
        self.inner.retry_after
    }

    /// The intent's idempotency key, to retry later as the same intent.
    pub fn idempotency_key(&self) -> Option<&IdempotencyKey> {
        self.inner.log.idempotency_key()
    }

    /// The attempt log.
    pub fn attempt_log(&self) -> &AttemptLog {
        &self.inner.log
    }

    /// The last response, if the last attempt got one.
    pub fn response(&self) -> Option<&reqwest::Response> {
        match &self.inner.last {
            LastResult::Response(response) => Some(response),
            _ => None,
        }
    }

    /// Takes the last response (to read its body), if the last attempt got one.
    pub fn into_response(self) -> Option<reqwest::Response> {
        match self.inner.last {
            LastResult::Response(response) => Some(response),
            _ => None,
        }
    }

    /// The last transport error, if the last attempt got no response.
    pub fn transport_error(&self) -> Option<&reqwest::Error> {
        match &self.inner.last {
            LastResult::Transport(error) => Some(error),
            _ => None,
        }
    }

    /// What the last transport failure proves, if the last attempt got no response:
    /// the same [`TransportFailure`] the attempt log and the `error.type` span field
    /// show (`Timeout`, `ConnectionLost`, `UntrustedCertificate`…). `None` when the
    /// last attempt got a response, or when nothing was sent.
    ///
    /// # Examples
    /// ```
    /// use reqwest_resilience::{Error, TransportFailure};
    ///
    /// fn advice(error: &Error) -> &'static str {
    ///     match error.transport_failure() {
    ///         Some(failure) if failure.is_certificate() => "fix the server's certificate or trust its root",
    ///         Some(TransportFailure::Dns) => "check the host name",
    ///         Some(failure) if failure.may_have_reached_server() => "reconcile before resending",
    ///         _ => "see the message",
    ///     }
    /// }
    /// ```
    pub fn transport_failure(&self) -> Option<TransportFailure> {
        let logged = match self.inner.log.last().map(|attempt| *attempt.outcome()) {
            Some(AttemptOutcome::Failed(failure)) => Some(failure),
            _ => None,
        };
        match &self.inner.last {
            // The loop sorted it when it logged the attempt; sort it here only for an
            // error from before any attempt (a request that could not be built).
            LastResult::Transport(error) => logged.or_else(|| Some(TransportFailure::of(error))),
            // Another middleware's error, as the attempt log recorded it.
            LastResult::Other(_) => logged,
            _ => None,
        }
    }

    /// Why a caller-supplied key was refused, for [`GiveUpReason::InvalidRequest`].
    pub fn key_error(&self) -> Option<&InvalidKey> {
        match &self.inner.last {
            LastResult::InvalidKey(error) => Some(error),
            _ => None,
        }
    }

    /// The intent's method, when its attempts had begun (`None` for an intent
    /// refused before, e.g. an invalid key or a gate holding back the first attempt).
    pub fn method(&self) -> Option<&Method> {
        self.inner.method.as_ref()
    }
}

/// reqwest's `Debug`/`Display` print the request URL; keep user name and password
/// out of every log line that prints this error.
fn without_credentials(mut error: reqwest::Error) -> reqwest::Error {
    if let Some(url) = error.url_mut() {
        if !url.username().is_empty() || url.password().is_some() {
            // Only fails for URLs that cannot carry credentials, which have none.
            let _ = url.set_username("");
            let _ = url.set_password(None);
        }
    }
    error
}

impl GiveUpContext {
    pub(crate) fn nothing_sent() -> Self {
        Self {
            log: AttemptLog::default(),
            outcome_unknown: false,
            elapsed: Duration::ZERO,
            retry_after: None,
            method: None,
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = &self.inner;
        f.debug_struct("Error")
            .field("reason", &inner.reason)
            .field("attempts", &self.attempts())
            .field("last_status", &self.last_status())
            .field("transport", &self.transport_error())
            .field("retry_after", &inner.retry_after)
            .field("key", &self.idempotency_key())
            .field("outcome_unknown", &inner.outcome_unknown)
            .field("elapsed", &inner.elapsed)
            .finish()
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.inner.last {
            LastResult::Transport(error) => Some(error),
            LastResult::Other(error) => Some(&**error),
            LastResult::InvalidKey(error) => Some(error),
            LastResult::Response(_) | LastResult::ZeroDeadline | LastResult::Nothing => None,
        }
    }
}
