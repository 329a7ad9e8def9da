//! An intent's preparation: what the attempts need that can be decided without
//! waiting, and each attempt's request as it leaves.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use super::{BodyFactory, Intent};
use crate::attempt_timeout;
use crate::clock::Instant;
use crate::deadline::Deadline;
use crate::error::{Error, GiveUpReason};
use crate::idempotency::IdempotencyKey;
use crate::ids::RequestId;
use crate::observer::IntentObserver;
use crate::outgoing::{self, AttemptWire};
use crate::policy::PolicyInner;
use crate::template::Requests;
use crate::transport::{MaybeSend, Transport, TransportError};
use crate::whole_body;
use crate::write_ahead::WriteAhead;

impl<T: Transport> Intent<T> {
    /// Step 1, done before the caller's future exists (so the future holds the
    /// prepared intent only): refuses a zero deadline and an invalid key; puts the
    /// key on the request; makes a `body_fn` body into bytes when a write-ahead
    /// will write it down; takes the request's own
    /// timeout off it (it becomes the attempts' timeout).
    pub(super) fn prepare(self, started: Instant) -> Result<Ready<T>, Error> {
        let Intent {
            transport,
            policy,
            mut request,
            mut body_factory,
            key,
            deadline,
            observers,
            write_ahead,
            whole_body,
        } = self;
        check_and_key(&mut request, &policy, key.as_ref(), deadline)?;
        if write_ahead.is_some() {
            body_into_bytes(&mut request, &mut body_factory);
        }
        let attempt_timeout = attempt_timeout::take_own(&mut request)
            .or_else(|| policy.attempt_timeout_for(deadline));
        // A streamed body is consumed by its one and only send; a factory makes a
        // fresh one for every attempt (and replaces any body set by hand).
        if body_factory.is_some() {
            *request.body_mut() = None;
        }
        let replayable =
            body_factory.is_some() || request.body().is_none_or(|body| body.as_bytes().is_some());
        let method = request.method().clone();
        let requests = if !replayable || policy.settings.max_attempts == 1 {
            let url = request.url().clone();
            Requests::Once(Some(request), url)
        } else {
            Requests::Template(request)
        };
        Ok(Ready {
            attempts: Prepared {
                transport,
                requests,
                body_factory,
                method,
                key,
                deadline,
                attempt_timeout,
                replayable,
                whole_body: whole_body.map(|limit| u32::try_from(limit).unwrap_or(u32::MAX)),
            },
            policy,
            observers,
            write_ahead,
            started,
        })
    }
}

/// Refuses a zero deadline and an invalid key, and puts the key on the request:
/// what `send()` and `RequestBuilder::prepare` decide alike.
pub(crate) fn check_and_key(
    request: &mut reqwest::Request,
    policy: &PolicyInner,
    key: Option<&IdempotencyKey>,
    deadline: Option<Duration>,
) -> Result<(), Error> {
    if deadline == Some(Duration::ZERO) {
        return Err(Error::zero_deadline());
    }
    if let Some(key) = key {
        let value = key
            .header_value(policy.settings.key_format)
            .map_err(Error::invalid_key)?;
        outgoing::put_key(request, &policy.key_header, value);
    }
    Ok(())
}

/// Calls a `body_fn` factory once and, when it yields bytes, sends those same
/// bytes on every attempt (a write-ahead that writes them down must see what
/// goes on the wire).
pub(crate) fn body_into_bytes(
    request: &mut reqwest::Request,
    body_factory: &mut Option<BodyFactory>,
) {
    if let Some(factory) = body_factory {
        let body = factory();
        if body.as_bytes().is_some() {
            *request.body_mut() = Some(body);
            *body_factory = None;
        }
    }
}

/// An intent after step 1: all its future holds.
pub(super) struct Ready<T> {
    pub(super) attempts: Prepared<T>,
    pub(super) policy: Arc<PolicyInner>,
    /// This intent's own observers (the policy's are told first).
    pub(super) observers: Vec<Arc<dyn IntentObserver>>,
    pub(super) write_ahead: Option<Arc<dyn WriteAhead>>,
    /// When `send()` was called: the deadline counts from here.
    pub(super) started: Instant,
}

/// An intent after the checks that need no waiting: what its attempts use.
pub(super) struct Prepared<T> {
    pub(super) transport: T,
    pub(super) requests: Requests,
    pub(super) body_factory: Option<BodyFactory>,
    pub(super) method: http::Method,
    /// Moves into the attempt log when the attempts start.
    pub(super) key: Option<IdempotencyKey>,
    pub(super) deadline: Option<Duration>,
    /// Each attempt's timeout before it is cut to the time left: the request's
    /// own, else the policy's for this deadline.
    pub(super) attempt_timeout: Option<Duration>,
    /// The body can be sent again (bytes, none, or a factory).
    pub(super) replayable: bool,
    /// Read each response's body inside its attempt, at most this many bytes (a
    /// `u32`: the future holds it, and a body above 4 GiB is never read into memory).
    pub(super) whole_body: Option<u32>,
}

impl<T: Transport> Prepared<T> {
    pub(super) fn host(&self) -> &str {
        self.requests.url().host_str().unwrap_or("")
    }

    /// What per-authority gates key by (see `authority::of`).
    pub(super) fn authority(&self) -> std::borrow::Cow<'_, str> {
        crate::gate::authority::of(self.requests.url())
    }

    /// Sends `attempt`'s request (see [`attempt_request`](Self::attempt_request))
    /// and returns the transport's future; or why no attempt can start (the
    /// pause overran the deadline, or a body that cannot be replayed was already
    /// sent).
    pub(super) fn send_attempt(
        &mut self,
        policy: &PolicyInner,
        deadline: &Deadline,
        attempt: &mut Attempt,
    ) -> Result<
        impl Future<Output = Result<reqwest::Response, TransportError>> + MaybeSend + '_,
        GiveUpReason,
    > {
        let request = self.attempt_request(policy, deadline, attempt)?;
        let sending = self.transport.send(request);
        let whole_body = self.whole_body;
        Ok(async move {
            let response = sending.await?;
            match whole_body {
                // Boxed: only intents that read the body pay for its future.
                Some(limit) => Box::pin(whole_body::read(response, limit as usize)).await,
                None => Ok(response),
            }
        })
    }
}

impl<T> Prepared<T> {
    /// `attempt`'s request as `outgoing::dress` writes it, and the instant the
    /// attempt starts (`attempt.started`, read last); with its timeout, what is
    /// left then of `min(started + attempt timeout, deadline)`, written as the
    /// transport's `WireTimeout` asks. Or why no attempt can start (no time
    /// left, or a body that cannot be replayed was already sent).
    ///
    /// The caller hands the request to the transport at once: the transport arms
    /// the attempt's timer as it takes the request, so the attempt ends at its
    /// instant however late the runtime first ran the intent.
    pub(super) fn attempt_request(
        &mut self,
        policy: &PolicyInner,
        deadline: &Deadline,
        attempt: &mut Attempt,
    ) -> Result<reqwest::Request, GiveUpReason>
    where
        T: Transport,
    {
        let mut request = self
            .requests
            .next()
            .ok_or(GiveUpReason::BodyNotReplayable)?;
        let wire = AttemptWire {
            request_id_header: &policy.request_id_header,
            request_id: attempt.request_id,
        };
        outgoing::dress(
            &mut request,
            self.body_factory.as_ref().map(|make| make()),
            wire,
        );
        attempt.started = policy.clock.now();
        let timeout =
            attempt_timeout::of_attempt(self.attempt_timeout, deadline.remaining(attempt.started));
        if timeout == Some(Duration::ZERO) {
            return Err(GiveUpReason::DeadlineExceeded);
        }
        self.transport.wire_timeout().write(&mut request, timeout);
        Ok(request)
    }
}

/// One attempt's identity: its number, when it started, its request id.
pub(super) struct Attempt {
    pub(super) number: u32,
    /// Set by `attempt_request` just before the attempt is handed to the
    /// transport, with nothing that waits in between: the transport arms the
    /// attempt's timer from the same instant, so the attempt ends at
    /// `min(started + timeout, deadline)` however late the runtime first ran the
    /// intent.
    pub(super) started: Instant,
    pub(super) request_id: RequestId,
}
