//! The write-ahead: what may stop an intent before its first byte and must then
//! hear how it ended (a durable journal).
//!
//! Watchers ([`IntentObserver`](crate::IntentObserver)) only look: their hooks are
//! synchronous and cannot stop anything. A write-ahead acts, so its two hooks are
//! async and awaited on the intent's own task, and the loop keeps two promises by
//! construction:
//! - it is always given the body bytes: a `body_fn` body is made into bytes once,
//!   before [`before_first_byte`](WriteAhead::before_first_byte), and those bytes
//!   go on every attempt (a stream leaves [`IntentStart::body`] `None`);
//! - once `before_first_byte` was called, [`after_end`](WriteAhead::after_end) is
//!   called, whatever happened in between (a refusal included).
//!
//! An intent has at most one: a second would write the same intent twice. The
//! request's own replaces the policy's.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use crate::error::BoxError;
use http::header::HeaderName;
use http::{HeaderMap, Method};

use crate::idempotency::IdempotencyKey;
use crate::ids::RequestId;
use crate::observer::IntentEnd;

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

    /// The body bytes, when the body is in memory (a `body_fn` body is made into
    /// bytes for a [`WriteAhead`](crate::WriteAhead));
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

/// The future a write-ahead's hooks return.
pub type WriteAheadFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Writes an intent down before its first byte leaves, and records how it ended.
/// Attach one to a policy ([`RetryPolicyBuilder::write_ahead`]) or to one request
/// ([`RequestBuilder::write_ahead`], [`IntentOptions::write_ahead`]).
///
/// # The deadline includes the write-ahead
///
/// The intent's deadline counts from `send()`: each hook is awaited for at most
/// the time left, so a slow write (a journal on a locked database) cannot make
/// `send()` outlive its deadline. A hook still running when the time is up is
/// dropped (cancelled) and:
/// - in `before_first_byte`: the intent ends before anything is sent, with
///   [`GiveUpReason::DeadlineExceeded`](crate::GiveUpReason::DeadlineExceeded) and
///   the outcome *unknown* — the write may have committed and may be resumed;
/// - in `after_end`: the caller still gets the intent's result (see below).
///
/// An intent without a deadline waits for its write-ahead as long as it takes.
///
/// [`RetryPolicyBuilder::write_ahead`]: crate::RetryPolicyBuilder::write_ahead
/// [`RequestBuilder::write_ahead`]: crate::RequestBuilder::write_ahead
/// [`IntentOptions::write_ahead`]: crate::IntentOptions::write_ahead
pub trait WriteAhead: Send + Sync + 'static {
    /// Once per intent, after its key is decided, after the gates admitted the
    /// first attempt and before its first byte leaves. An `Err` refuses the
    /// intent: nothing is sent, and the caller gets an [`Error`](crate::Error)
    /// whose `source()` is yours. It [is write-ahead refused](crate::Error::is_write_ahead_refused)
    /// (outcome known: nothing will be sent) — unless the chain holds a
    /// [`CommitOutcomeUnknown`](crate::CommitOutcomeUnknown): then it
    /// [is write-ahead unconfirmed](crate::Error::is_write_ahead_unconfirmed) and
    /// [outcome unknown](crate::Error::is_outcome_unknown), never "refused".
    fn before_first_byte<'a>(
        &'a self,
        intent: &'a IntentStart<'a>,
    ) -> WriteAheadFuture<'a, Result<(), BoxError>>;

    /// Once, when an intent whose `before_first_byte` ran ends with a response
    /// or an error (its own refusal included), after the watchers' `finished`;
    /// awaited before the caller gets that result.
    ///
    /// An `Err` (or running out of time) says the end was not recorded: an error
    /// is then marked [outcome unknown](crate::Error::is_outcome_unknown), and a
    /// response carries [`EndNotRecorded`](crate::EndNotRecorded), because the
    /// write-ahead may still resend the intent under its key.
    fn after_end<'a>(
        &'a self,
        end: &'a IntentEnd<'a>,
    ) -> WriteAheadFuture<'a, Result<(), BoxError>>;
}

/// Why `before_first_byte` stopped the intent.
pub(crate) enum StartRefused {
    /// The write-ahead refused, with its reason.
    Refused(BoxError),
    /// It was still running when the deadline came.
    OutOfTime,
}

/// Awaits `before_first_byte` for at most `limit` (no limit without a deadline).
pub(crate) async fn before_first_byte(
    write_ahead: &dyn WriteAhead,
    intent: &IntentStart<'_>,
    limit: Option<Duration>,
) -> Result<(), StartRefused> {
    match within(limit, write_ahead.before_first_byte(intent)).await {
        Some(Ok(())) => Ok(()),
        Some(Err(refusal)) => Err(StartRefused::Refused(refusal)),
        None => Err(StartRefused::OutOfTime),
    }
}

/// Awaits `after_end` for at most `limit`; true when it recorded the end in time.
pub(crate) async fn after_end(
    write_ahead: &dyn WriteAhead,
    end: &IntentEnd<'_>,
    limit: Option<Duration>,
) -> bool {
    match within(limit, write_ahead.after_end(end)).await {
        Some(Ok(())) => true,
        Some(Err(error)) => {
            tracing::warn!(error = %error, "the write-ahead could not record how the intent ended");
            false
        }
        None => {
            tracing::warn!("the write-ahead's `after_end` outlived the deadline and was cut off");
            false
        }
    }
}

/// Awaits `hook` for at most `limit` (no limit without a deadline); `None` when the
/// time ran out and the hook was dropped.
///
/// The limit is the time left on the policy's clock, so a `VirtualClock` decides how
/// long a hook may take; the wait itself is on the runtime's timer, not the policy's
/// sleeper: the sleeper paces pauses between attempts, and a recording sleeper returns
/// at once, which would cut every real write off before it could commit.
async fn within<F: Future>(limit: Option<Duration>, hook: F) -> Option<F::Output> {
    match limit {
        Some(limit) => crate::sleeper::within(limit, hook).await,
        None => Some(hook.await),
    }
}
