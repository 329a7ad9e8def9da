//! Running one intent: attempts, classification, pauses, and giving up.
//!
//! This file keeps only the order of the steps; every rule they apply is a pure
//! function in the module its name promises (`classify`, `decision`, `deadline`,
//! `backoff`, `retry_after`), and everything outside the loop plugs in through a
//! trait (`gate::RetryGate`, `observer::IntentObserver`):
//!
//! 1. prepare: the key header, the body (observers may need its bytes);
//! 2. observers' `started` (each may refuse: nothing is sent);
//! 3. send the attempt (fresh request id, timeout clipped to the time left);
//! 4. classify it: transient? safe for this method and key? how long did the
//!    server ask us to wait? (gates and observers are told);
//! 5. can the body be sent again?
//! 6. wait how long, or give up (deadline, attempts, Retry-After, backoff)?
//! 7. do the gates (the budget by default) allow one more attempt?
//! 8. observers' `ended`, then the result goes to the caller.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use tracing::Instrument;

use crate::attempt_log::{AttemptLog, AttemptOutcome, AttemptRecord, TransportFailure};
use crate::classify::{classify, AttemptResult, AttemptView, Verdict};
use crate::clock::Clock;
use crate::deadline::Deadline;
use crate::decision::{min_attempt_window, next_step, Facts, GiveUp, NextStep};
use crate::error::{Error, GiveUpContext, GiveUpReason, LastResult};
use crate::gate::{GateScope, RetryCause};
use crate::idempotency::IdempotencyKey;
use crate::ids::RequestId;
use crate::observer::{AttemptFinished, IntentEnd, IntentObserver, IntentStart};
use crate::outgoing::{self, AttemptWire};
use crate::policy::PolicyInner;
use crate::telemetry;
use crate::template::Requests;

/// Sends one attempt. Implemented for the crate's client and, with the
/// `middleware` feature, for the rest of a reqwest-middleware chain.
pub(crate) trait Transport: Send {
    fn send(
        &mut self,
        request: reqwest::Request,
    ) -> impl Future<Output = Result<reqwest::Response, TransportError>> + Send;

    /// The timeout the transport applies by itself to a request that carries none;
    /// `None` when it applies none or it cannot be known.
    fn timeout(&self) -> Option<Duration> {
        None
    }
}

/// An attempt that produced no response.
pub(crate) enum TransportError {
    Reqwest(reqwest::Error),
    /// An error from another middleware further down the chain: never retried.
    #[cfg_attr(not(feature = "middleware"), allow(dead_code))]
    Other(BoxError),
}

pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Produces a fresh body for every attempt (see `RequestBuilder::body_fn`).
pub(crate) type BodyFactory = Arc<dyn Fn() -> reqwest::Body + Send + Sync>;

/// One intent, ready to run.
pub(crate) struct Intent<T> {
    pub(crate) transport: T,
    pub(crate) policy: Arc<PolicyInner>,
    pub(crate) request: reqwest::Request,
    pub(crate) body_factory: Option<BodyFactory>,
    pub(crate) key: Option<IdempotencyKey>,
    pub(crate) deadline: Option<Duration>,
    /// This intent's own observers (the policy's are added in front).
    pub(crate) observers: Vec<Arc<dyn IntentObserver>>,
}

/// Runs an intent (or reports why it could not be built), as the future the caller
/// awaits.
///
/// Not an `async fn`: the checks that need no waiting happen here, so the future
/// the caller holds is the attempt loop itself (plus the span) — not a wrapper that
/// would also keep a second copy of the request and the builder. Observed intents
/// run boxed: their extra state costs only them.
pub(crate) fn start<T: Transport>(
    intent: Result<Intent<T>, Error>,
) -> impl Future<Output = Result<reqwest::Response, Error>> + Send {
    let mut intent = match intent {
        Ok(intent) => intent,
        Err(error) => {
            let refused = Run::Done {
                result: Some(Err(error)),
            };
            return refused.instrument(tracing::Span::none());
        }
    };
    let span = telemetry::intent_span(
        intent.request.method(),
        intent.request.url(),
        intent.key.as_ref(),
        &intent.policy.redact_query_params,
    );
    // The deadline counts from here: observers' time included.
    let started = intent.policy.clock.now();
    let run = match intent.add_key_header() {
        Err(error) => Run::Done {
            result: Some(Err(error)),
        },
        Ok(()) if intent.policy.observers.is_empty() && intent.observers.is_empty() => Run::Plain {
            attempts: {
                let (prepared, policy) = intent.prepare();
                attempt_loop(prepared, policy, &[], started)
            },
        },
        Ok(()) => Run::Observed {
            intent: observed(intent, started),
        },
    };
    run.instrument(span)
}

/// An observed intent, boxed. Out of line and cold, like every path the plain
/// success path does not take: the instructions a request runs then sit together
/// in the instruction cache instead of between those of paths it skips.
#[cold]
#[inline(never)]
fn observed<T: Transport>(
    intent: Intent<T>,
    started: Instant,
) -> Pin<Box<impl Future<Output = Result<reqwest::Response, Error>> + Send>> {
    Box::pin(intent.run_observed(started))
}

impl<T: Transport> Intent<T> {
    /// Refuses a zero deadline and puts the key on the request, before anything
    /// else sees it.
    fn add_key_header(&mut self) -> Result<(), Error> {
        if self.deadline == Some(Duration::ZERO) {
            return Err(Error::zero_deadline());
        }
        if let Some(key) = &self.key {
            let value = key
                .header_value(self.policy.key_format)
                .map_err(Error::invalid_key)?;
            outgoing::put_key(&mut self.request, &self.policy.key_header, value);
        }
        Ok(())
    }

    /// Runs the intent between its observers' `started` and `ended`, each awaited
    /// within the time left before the deadline. Every observer whose `started`
    /// ran is told how the intent ended, a refusal by a later one included.
    async fn run_observed(mut self, started: Instant) -> Result<reqwest::Response, Error> {
        let mut observers = std::mem::take(&mut self.observers);
        observers.splice(0..0, self.policy.observers.iter().cloned());
        if observers.iter().any(|observer| observer.needs_body_bytes()) {
            self.body_into_bytes();
        }
        let clock = self.policy.clock.clone();
        let deadline = Deadline::new(started, self.deadline);
        let (told, refusal) = {
            let start = IntentStart {
                key: self.key.as_ref(),
                key_header: &self.policy.key_header,
                request: &self.request,
                body: self.request.body().and_then(reqwest::Body::as_bytes),
                deadline: self.deadline,
            };
            let mut told = 0;
            let mut refusal = None;
            for observer in &observers {
                told += 1;
                let left = deadline.remaining(clock.now());
                match within(left, observer.started(&start)).await {
                    Some(Ok(())) => continue,
                    Some(Err(why)) => {
                        tracing::warn!("an intent observer refused the intent; nothing was sent");
                        refusal = Some(Error::observer_refused(
                            why,
                            AttemptLog::new(self.key.clone()),
                        ));
                    }
                    None => {
                        tracing::warn!("an intent observer's `started` outlived the deadline; nothing was sent");
                        let elapsed = clock.now().saturating_duration_since(started);
                        refusal = Some(Error::observer_overran_deadline(
                            AttemptLog::new(self.key.clone()),
                            elapsed,
                        ));
                    }
                }
                break;
            }
            (told, refusal)
        };
        // Only observed intents pay for these copies.
        let (method, url) = (self.request.method().clone(), self.request.url().clone());
        let result = match refusal {
            Some(error) => Err(error),
            None => {
                let (prepared, policy) = self.prepare();
                attempt_loop(prepared, policy, &observers, started).await
            }
        };
        let mut result = result;
        let mut unheard = false;
        {
            let end = IntentEnd {
                method: &method,
                url: &url,
                result: &result,
            };
            for observer in &observers[..told] {
                let left = deadline.remaining(clock.now());
                if within(left, observer.ended(&end)).await.is_none() {
                    unheard = true;
                }
            }
        }
        if unheard {
            tracing::warn!("an intent observer's `ended` outlived the deadline and was cut off");
            // An observer that did not hear the end (a journal) may resume the
            // intent later: the caller must not take "nothing happened" for granted.
            if let Err(error) = &mut result {
                error.mark_outcome_unknown();
            }
        }
        result
    }

    /// Calls a `body_fn` factory once and, when it yields bytes, sends those same
    /// bytes on every attempt (an observer that writes them down must see what goes
    /// on the wire).
    fn body_into_bytes(&mut self) {
        if let Some(factory) = &self.body_factory {
            let body = factory();
            if body.as_bytes().is_some() {
                *self.request.body_mut() = Some(body);
                self.body_factory = None;
            }
        }
    }

    /// Everything the attempt loop needs that can be decided without waiting, and
    /// the policy it runs under.
    fn prepare(self) -> (Prepared<T>, Arc<PolicyInner>) {
        let Intent {
            transport,
            policy,
            mut request,
            body_factory,
            key,
            deadline,
            observers: _,
        } = self;
        let per_attempt_timeout = outgoing::take_own_timeout(&mut request)
            .or_else(|| policy.attempt_timeout_for(deadline));
        // A streamed body is consumed by its one and only send; a factory makes a
        // fresh one for every attempt (and replaces any body set by hand).
        if body_factory.is_some() {
            *request.body_mut() = None;
        }
        let replayable =
            body_factory.is_some() || request.body().is_none_or(|body| body.as_bytes().is_some());
        let method = request.method().clone();
        let requests = if !replayable || policy.max_attempts == 1 {
            let url = request.url().clone();
            Requests::Once(Some(request), url)
        } else {
            Requests::Template(request)
        };
        let prepared = Prepared {
            transport,
            requests,
            body_factory,
            method,
            key,
            deadline,
            per_attempt_timeout,
            replayable,
        };
        (prepared, policy)
    }
}

/// An intent after the checks that need no waiting: what its attempt loop uses.
/// The loop reads these fields in place, never moving them into locals of its own,
/// so that its future holds each of them once.
struct Prepared<T> {
    transport: T,
    requests: Requests,
    body_factory: Option<BodyFactory>,
    method: http::Method,
    key: Option<IdempotencyKey>,
    deadline: Option<Duration>,
    per_attempt_timeout: Option<Duration>,
    /// The body can be sent again (bytes, none, or a factory).
    replayable: bool,
}

pin_project_lite::pin_project! {
    /// The future `Intent::run` returns: the attempt loop in place, an observed
    /// intent boxed, or an intent refused before its first attempt.
    #[project = RunProjection]
    enum Run<Plain, Observed> {
        Plain { #[pin] attempts: Plain },
        Observed { intent: Pin<Box<Observed>> },
        Done { result: Option<Result<reqwest::Response, Error>> },
    }
}

impl<Plain, Observed> Future for Run<Plain, Observed>
where
    Plain: Future<Output = Result<reqwest::Response, Error>>,
    Observed: Future<Output = Result<reqwest::Response, Error>>,
{
    type Output = Result<reqwest::Response, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            RunProjection::Plain { attempts } => attempts.poll(cx),
            RunProjection::Observed { intent } => poll_observed(intent, cx),
            RunProjection::Done { result } => Poll::Ready(
                result
                    .take()
                    .expect("an intent future polled after it completed"),
            ),
        }
    }
}

/// Polls an observed intent out of line, so that its state machine is not inlined
/// into the plain intent's poll (see [`observed`]).
#[inline(never)]
fn poll_observed<F: Future>(intent: &mut Pin<Box<F>>, cx: &mut Context<'_>) -> Poll<F::Output> {
    intent.as_mut().poll(cx)
}

/// The attempts of one intent: send, classify, pause or give up, until a result.
///
/// Not an `async fn`: an async fn keeps a second copy of its arguments in its
/// future; an `async move` block uses what it captured in place. Everything between
/// the two awaits (the attempt and the pause) is plain functions, called in blocks,
/// so the future keeps across each await only what that await needs: an attempt in
/// flight holds no result, and the pause holds one boxed result (`Previous`).
#[allow(clippy::manual_async_fn)] // on purpose: see above
fn attempt_loop<'o, T: Transport>(
    mut intent: Prepared<T>,
    policy: Arc<PolicyInner>,
    observers: &'o [Arc<dyn IntentObserver>],
    started: Instant,
) -> impl Future<Output = Result<reqwest::Response, Error>> + Send + use<'o, T> {
    async move {
        let policy: &PolicyInner = &policy;
        let rules = LoopRules::new(policy, &intent, started, observers);
        {
            let scope = GateScope {
                host: intent.requests.url().host_str().unwrap_or(""),
                now: started,
                attempt: 0,
            };
            for gate in &policy.gates {
                gate.intent_started(&scope);
            }
        }
        let mut state = LoopState {
            log: AttemptLog::new(intent.key.take()),
            clock: &*policy.clock,
            may_have_applied: false,
            started,
            rng: None,
            previous_delay: None,
        };
        let mut attempt = Attempt {
            number: 1,
            started,
            request_id: RequestId::generate(),
        };
        // The result of the attempt before a pause: what the caller gets if the
        // next attempt cannot start. Boxed, so that only a retry pays for keeping it.
        let mut previous: Option<Box<Previous>> = None;
        loop {
            // In blocks: what the attempt and its result borrow is not kept through
            // the pause.
            let delay = {
                let (span, result) = {
                    let span = telemetry::attempt_span(
                        &intent.method,
                        intent.requests.url(),
                        attempt.number,
                        attempt.request_id,
                        &policy.redact_query_params,
                    );
                    let sending = match intent.send_attempt(&rules, &attempt) {
                        Ok(sending) => sending,
                        Err(why) => {
                            let Previous { last, retry_after } =
                                previous.map_or_else(Previous::nothing, |previous| *previous);
                            return Err(state.give_up(why, last, retry_after));
                        }
                    };
                    drop(previous.take());
                    let mut sending = std::pin::pin!(sending.instrument(span));
                    let result = sending.as_mut().await;
                    (sending.span().clone(), result)
                };
                let verdict = state.record_attempt(&rules, &intent, &attempt, span, &result);
                let result = match result {
                    Ok(mut response) if !verdict.retry() => {
                        state.attach_log(&mut response);
                        return Ok(response);
                    }
                    not_final => not_final,
                };
                match state.after_failure(&rules, &intent, &attempt, &verdict, result) {
                    AfterAttempt::Finish(result) => return result,
                    AfterAttempt::Pause { delay, last } => {
                        previous = Some(last);
                        delay
                    }
                }
            };
            policy.sleeper.sleep(delay).await;
            attempt = Attempt {
                number: attempt.number + 1,
                started: state.clock.now(),
                request_id: RequestId::generate(),
            };
        }
    }
}

/// What the loop applies to every attempt, fixed when the intent starts.
struct LoopRules<'a> {
    policy: &'a PolicyInner,
    observers: &'a [Arc<dyn IntentObserver>],
    deadline: Deadline,
    per_attempt_timeout: Option<Duration>,
    /// The shortest time worth starting an attempt in (see `decision`).
    min_attempt_window: Duration,
    keyed: bool,
}

impl<'a> LoopRules<'a> {
    fn new<T>(
        policy: &'a PolicyInner,
        intent: &Prepared<T>,
        started: Instant,
        observers: &'a [Arc<dyn IntentObserver>],
    ) -> Self {
        Self {
            policy,
            observers,
            deadline: Deadline::new(started, intent.deadline),
            per_attempt_timeout: intent.per_attempt_timeout,
            min_attempt_window: min_attempt_window(intent.per_attempt_timeout, intent.deadline),
            keyed: intent.key.is_some(),
        }
    }
}

/// One attempt's identity: its number, when it started, its request id.
struct Attempt {
    number: u32,
    started: Instant,
    request_id: RequestId,
}

/// What the loop does once an attempt is classified.
enum AfterAttempt {
    /// The intent is over: the caller's result.
    Finish(Result<reqwest::Response, Error>),
    /// Pause, then try again; `last` is reported if the next attempt cannot start.
    Pause {
        delay: Duration,
        last: Box<Previous>,
    },
}

/// An attempt's result, kept through the pause after it.
struct Previous {
    last: LastResult,
    retry_after: Option<Duration>,
}

impl Previous {
    /// Before the first attempt.
    fn nothing() -> Self {
        Self {
            last: LastResult::Nothing,
            retry_after: None,
        }
    }
}

impl<T: Transport> Prepared<T> {
    /// Sends `attempt`'s request (with its request id, and its timeout clipped to
    /// the time left) and returns the transport's future; or why no attempt can
    /// start (the pause overran the deadline, or a body that cannot be replayed was
    /// already sent). The request goes from its copy to the transport in this one
    /// function: a request is 264 bytes, and every hand-over is a copy of them.
    fn send_attempt(
        &mut self,
        rules: &LoopRules<'_>,
        attempt: &Attempt,
    ) -> Result<
        impl Future<Output = Result<reqwest::Response, TransportError>> + Send + '_,
        GiveUpReason,
    > {
        let timeout = rules
            .deadline
            .attempt_timeout(attempt.started, rules.per_attempt_timeout);
        if timeout == Some(Duration::ZERO) {
            // The pause overran the deadline (timer granularity).
            return Err(GiveUpReason::DeadlineExceeded);
        }
        let mut request = self
            .requests
            .next()
            .ok_or(GiveUpReason::BodyNotReplayable)?;
        let wire = AttemptWire {
            request_id_header: &rules.policy.request_id_header,
            request_id: attempt.request_id,
            timeout,
            transport_timeout: self.transport.timeout(),
        };
        outgoing::dress(
            &mut request,
            self.body_factory.as_ref().map(|make| make()),
            wire,
        );
        Ok(self.transport.send(request))
    }
}

impl From<TransportError> for LastResult {
    fn from(error: TransportError) -> Self {
        match error {
            TransportError::Reqwest(error) => LastResult::Transport(error),
            TransportError::Other(error) => LastResult::Other(error),
        }
    }
}

/// What the loop accumulates across attempts.
struct LoopState<'p> {
    /// The attempts so far, and the intent's key.
    log: AttemptLog,
    clock: &'p dyn Clock,
    /// An attempt may have had an effect on the server (see `Error::is_outcome_unknown`).
    may_have_applied: bool,
    started: Instant,
    /// Boxed: 320 bytes that only retries need, kept out of the future's state.
    rng: Option<Box<StdRng>>,
    previous_delay: Option<Duration>,
}

impl LoopState<'_> {
    /// Classifies and logs the attempt just made, and tells the gates and observers.
    /// Takes the result by reference: a response the caller gets is moved once.
    fn record_attempt<T>(
        &mut self,
        rules: &LoopRules<'_>,
        intent: &Prepared<T>,
        attempt: &Attempt,
        span: tracing::Span,
        result: &Result<reqwest::Response, TransportError>,
    ) -> Verdict {
        let policy = rules.policy;
        let url = intent.requests.url();
        let ended = self.clock.now();
        let verdict = classify_attempt(
            policy,
            &span,
            &intent.method,
            url,
            attempt.number,
            rules.keyed,
            result,
        );
        drop(span); // the attempt span ends here, not after the pause
        if verdict.may_have_applied() {
            self.may_have_applied = true;
        }
        self.log.push(AttemptRecord {
            number: attempt.number,
            request_id: attempt.request_id,
            outcome: verdict.outcome,
            duration: ended.saturating_duration_since(attempt.started),
            delay_after: None,
        });
        let scope = GateScope {
            host: url.host_str().unwrap_or(""),
            now: ended,
            attempt: attempt.number,
        };
        for gate in &policy.gates {
            gate.attempt_finished(&scope, &verdict.outcome, verdict.transient);
        }
        self.tell_observers(rules.observers, &intent.method, url, verdict.retry());
        verdict
    }

    /// After an attempt that failed or asks for a retry: give up, or plan the pause.
    /// (The loop hands a final response back itself; one here is handed back too.)
    /// Cold and out of line (see [`observed`]).
    #[cold]
    #[inline(never)]
    fn after_failure<T>(
        &mut self,
        rules: &LoopRules<'_>,
        intent: &Prepared<T>,
        attempt: &Attempt,
        verdict: &Verdict,
        result: Result<reqwest::Response, TransportError>,
    ) -> AfterAttempt {
        let policy = rules.policy;
        let retry = verdict.retry();
        let retry_after = verdict.retry_after;
        let last = match result {
            Ok(mut response) if !retry => {
                self.attach_log(&mut response);
                return AfterAttempt::Finish(Ok(response));
            }
            Ok(response) => LastResult::Response(response),
            Err(TransportError::Reqwest(error)) if error.is_builder() => {
                let last = LastResult::Transport(error);
                return self.finish(GiveUpReason::InvalidRequest, last, None);
            }
            Err(error) if !retry => {
                return self.finish(GiveUpReason::NotRetryable, LastResult::from(error), None)
            }
            Err(error) => LastResult::from(error),
        };
        // With no attempt left, running out of attempts is the reason, not the body.
        if !intent.replayable && attempt.number < policy.max_attempts {
            return self.finish(GiveUpReason::BodyNotReplayable, last, retry_after);
        }

        // No jitter drawn (nor seeded sequence advanced) when no retry can follow.
        let backoff = if attempt.number < policy.max_attempts {
            let rng = self
                .rng
                .get_or_insert_with(|| Box::new(policy.intent_rng()));
            policy
                .backoff
                .delay(attempt.number - 1, self.previous_delay, rng)
        } else {
            Duration::ZERO
        };
        let facts = Facts {
            attempts_made: attempt.number,
            max_attempts: policy.max_attempts,
            remaining: rules.deadline.remaining(self.clock.now()),
            retry_after,
            retry_after_ceiling: policy.retry_after_ceiling,
            backoff,
            conflict_floor: verdict.conflict.then_some(policy.conflict_delay),
            min_attempt_window: rules.min_attempt_window,
        };
        let (delay, reason) = match next_step(facts) {
            NextStep::GiveUp(why) => return self.finish(give_up_reason(why), last, retry_after),
            NextStep::Wait(delay, reason) => (delay, reason),
        };
        let cause = if verdict.conflict {
            RetryCause::Conflict
        } else {
            RetryCause::Transient
        };
        let scope = GateScope {
            host: intent.requests.url().host_str().unwrap_or(""),
            now: self.clock.now(),
            attempt: attempt.number,
        };
        if !policy
            .gates
            .iter()
            .all(|gate| gate.allow_retry(&scope, cause))
        {
            tracing::warn!(
                attempt = attempt.number,
                "retry budget exhausted; not retrying"
            );
            return self.finish(GiveUpReason::BudgetExhausted, last, retry_after);
        }
        self.log.set_last_delay(delay, reason);
        self.previous_delay = Some(backoff);
        tracing::info!(
            attempt = attempt.number,
            delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            reason = reason.as_str(),
            "transient failure; retrying"
        );
        AfterAttempt::Pause {
            delay,
            last: Box::new(Previous { last, retry_after }),
        }
    }

    fn finish(
        &mut self,
        reason: GiveUpReason,
        last: LastResult,
        retry_after: Option<Duration>,
    ) -> AfterAttempt {
        AfterAttempt::Finish(Err(self.give_up(reason, last, retry_after)))
    }

    /// Tells the observers about the attempt just logged.
    fn tell_observers(
        &self,
        observers: &[Arc<dyn IntentObserver>],
        method: &http::Method,
        url: &reqwest::Url,
        will_retry: bool,
    ) {
        let (false, Some(record)) = (observers.is_empty(), self.log.last()) else {
            return;
        };
        let finished = AttemptFinished {
            key: self.log.idempotency_key(),
            method,
            url,
            record,
            will_retry,
        };
        for observer in observers {
            observer.attempt_finished(&finished);
        }
    }

    fn context(&mut self, retry_after: Option<Duration>) -> GiveUpContext {
        GiveUpContext {
            log: std::mem::take(&mut self.log),
            outcome_unknown: self.may_have_applied,
            elapsed: self.clock.now().saturating_duration_since(self.started),
            retry_after,
        }
    }

    #[cold]
    #[inline(never)]
    fn give_up(
        &mut self,
        reason: GiveUpReason,
        last: LastResult,
        retry_after: Option<Duration>,
    ) -> Error {
        let context = self.context(retry_after);
        let span = tracing::Span::current();
        span.record("attempts", context.log.len());
        span.record("outcome", reason.as_str());
        tracing::warn!(
            reason = reason.as_str(),
            attempts = context.log.len(),
            outcome_unknown = context.outcome_unknown,
            "intent gave up"
        );
        Error::give_up(reason, last, context)
    }

    /// The intent ends with `response`: the attempt log goes with it.
    fn attach_log(&mut self, response: &mut reqwest::Response) {
        // The intent span is at INFO: with INFO off everywhere (one atomic load),
        // there is no span to look up.
        if tracing::level_enabled!(tracing::Level::INFO) {
            let span = tracing::Span::current();
            span.record("attempts", self.log.len());
            span.record("outcome", "response");
        }
        response
            .extensions_mut()
            .insert(std::mem::take(&mut self.log));
    }
}

/// Classifies one attempt's result (and records its OTel attributes on `span`).
fn classify_attempt(
    policy: &PolicyInner,
    span: &tracing::Span,
    method: &http::Method,
    url: &reqwest::Url,
    attempt: u32,
    keyed: bool,
    result: &Result<reqwest::Response, TransportError>,
) -> Verdict {
    let view_result = match result {
        Ok(response) => {
            let status = response.status();
            span.record("http.response.status_code", status.as_u16());
            if status.is_client_error() || status.is_server_error() {
                span.record("error.type", status.as_str());
            }
            AttemptResult::Response {
                status,
                headers: response.headers(),
            }
        }
        Err(TransportError::Reqwest(error)) => {
            let failure = TransportFailure::of(error);
            span.record("error.type", failure.as_str());
            AttemptResult::Error { failure, error }
        }
        Err(TransportError::Other(_)) => {
            // Another middleware failed: not ours to retry.
            span.record("error.type", TransportFailure::Other.as_str());
            return Verdict {
                outcome: AttemptOutcome::Failed(TransportFailure::Other),
                transient: false,
                safe: false,
                retry_after: None,
                conflict: false,
            };
        }
    };
    let view = AttemptView {
        method,
        url,
        attempt,
        keyed,
        result: view_result,
    };
    classify(&policy.rules, &view, &*policy.clock)
}

fn give_up_reason(why: GiveUp) -> GiveUpReason {
    match why {
        GiveUp::DeadlineExceeded => GiveUpReason::DeadlineExceeded,
        GiveUp::AttemptsExhausted => GiveUpReason::AttemptsExhausted,
        GiveUp::RetryAfterBeyondCeiling => GiveUpReason::RetryAfterBeyondCeiling,
        GiveUp::RetryAfterBeyondDeadline => GiveUpReason::RetryAfterBeyondDeadline,
    }
}

/// Awaits `hook` for at most `limit` (no limit without a deadline); `None` when the
/// time ran out and the hook was dropped.
async fn within<F: Future>(limit: Option<Duration>, hook: F) -> Option<F::Output> {
    match limit {
        Some(limit) => tokio::time::timeout(limit, hook).await.ok(),
        None => Some(hook.await),
    }
}
