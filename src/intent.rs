//! Running one intent: attempts, classification, pauses, and giving up.
//!
//! The loop is deliberately linear; every decision it takes is delegated to a pure
//! function tested on its own (`classify`, `decision`, `deadline`, `backoff`,
//! `retry_after`, the budget). What stays here is the order of those questions:
//!
//! 1. send the attempt (fresh request id, timeout clipped to the time left);
//! 2. is the result transient (user classifier, then the default)?
//! 3. is a retry safe for this method and key?
//! 4. can the body be sent again?
//! 5. wait how long, or give up (deadline, attempts, Retry-After, backoff)?
//! 6. does the shared budget allow one more retry?

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use http::HeaderMap;
use rand::rngs::StdRng;
use tracing::Instrument;

use crate::attempt_log::{AttemptLog, AttemptOutcome, AttemptRecord, TransportFailure};
use crate::classify::{
    default_decision, retry_is_safe, status_proves_no_effect, AttemptResult, AttemptView, Decision,
};
use crate::clock::Clock;
use crate::deadline::Deadline;
use crate::decision::{min_attempt_window, next_step, Facts, GiveUp, NextStep};
use crate::error::{Error, GiveUpContext, GiveUpReason, LastResult};
use crate::idempotency::IdempotencyKey;
use crate::ids::RequestId;
use crate::policy::PolicyInner;
use crate::retry_after::parse_retry_after_bytes;
use crate::telemetry;

/// Sends one attempt. Implemented for `&reqwest::Client` and, with the `middleware`
/// feature, for the rest of a reqwest-middleware chain.
pub(crate) trait Transport: Send {
    fn send(
        &mut self,
        request: reqwest::Request,
    ) -> impl Future<Output = Result<reqwest::Response, TransportError>> + Send;
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

impl Transport for &reqwest::Client {
    fn send(
        &mut self,
        request: reqwest::Request,
    ) -> impl Future<Output = Result<reqwest::Response, TransportError>> + Send {
        let sending = self.execute(request);
        async move { sending.await.map_err(TransportError::Reqwest) }
    }
}

/// One intent, ready to run.
pub(crate) struct Intent<'a, T> {
    pub(crate) transport: T,
    pub(crate) policy: &'a PolicyInner,
    pub(crate) request: reqwest::Request,
    pub(crate) body_factory: Option<BodyFactory>,
    pub(crate) key: Option<IdempotencyKey>,
    pub(crate) deadline: Option<Duration>,
}

/// What one attempt's classification concluded.
struct Verdict {
    outcome: AttemptOutcome,
    /// The classifier says another attempt may succeed…
    transient: bool,
    /// …and the method/key rules allow one.
    safe: bool,
    retry_after: Option<Duration>,
}

impl<'a, T: Transport + 'a> Intent<'a, T> {
    /// Not an `async fn`: returning the instrumented loop directly saves one layer
    /// of future state (and its copies) on every request.
    pub(crate) fn run(self) -> impl Future<Output = Result<reqwest::Response, Error>> + Send + 'a {
        let span = telemetry::intent_span(
            self.request.method(),
            self.request.url(),
            self.key.as_ref(),
            &self.policy.redact_query_params,
        );
        self.run_attempts().instrument(span)
    }

    async fn run_attempts(self) -> Result<reqwest::Response, Error> {
        let Intent {
            mut transport,
            policy,
            mut request,
            body_factory,
            key,
            deadline,
        } = self;
        if deadline == Some(Duration::ZERO) {
            return Err(Error::zero_deadline());
        }
        let clock = &*policy.clock;
        let started = clock.now();
        let deadline_limit = deadline;
        let deadline = Deadline::new(started, deadline);
        let keyed = key.is_some();
        if let Some(key) = &key {
            let value = key
                .header_value(policy.key_format)
                .map_err(Error::invalid_key)?;
            request
                .headers_mut()
                .insert(policy.key_header.clone(), value);
        }
        let per_attempt_timeout = request.timeout().copied().or(policy.attempt_timeout);
        // A streamed body is consumed by its one and only send; a factory makes a
        // fresh one for every attempt (and replaces any body set by hand).
        if body_factory.is_some() {
            *request.body_mut() = None;
        }
        let replayable =
            body_factory.is_some() || request.body().is_none_or(|body| body.as_bytes().is_some());
        let method = request.method().clone();
        let send_once = !replayable || policy.max_attempts == 1;
        let mut requests = if send_once {
            let url = request.url().clone();
            Requests::Once(Some(request), url)
        } else {
            Requests::Template(request)
        };
        let min_attempt_window = min_attempt_window(per_attempt_timeout, deadline_limit);
        policy
            .budget
            .deposit_at(requests.url().host_str().unwrap_or(""), started);

        let mut state = LoopState {
            log: AttemptLog::new(key),
            clock,
            may_have_applied: false,
            started,
            rng: None,
            previous_delay: None,
        };
        // The previous attempt's result and Retry-After, kept through the pause so
        // that a give-up at the start of the next attempt can still report them.
        let mut previous: Option<(LastResult, Option<Duration>)> = None;
        let mut attempt: u32 = 0;
        loop {
            attempt += 1;
            let attempt_started = if attempt == 1 { started } else { clock.now() };
            let timeout = deadline.attempt_timeout(attempt_started, per_attempt_timeout);
            if timeout == Some(Duration::ZERO) {
                // The pause overran the deadline (timer granularity).
                let (last, retry_after) = previous.take().unwrap_or((LastResult::Nothing, None));
                return Err(state.give_up(GiveUpReason::DeadlineExceeded, last, retry_after));
            }
            let Some(mut outgoing) = requests.next() else {
                let (last, retry_after) = previous.take().unwrap_or((LastResult::Nothing, None));
                return Err(state.give_up(GiveUpReason::BodyNotReplayable, last, retry_after));
            };
            drop(previous.take());
            let url = requests.url();
            if let Some(factory) = &body_factory {
                *outgoing.body_mut() = Some(factory());
            }
            let request_id = RequestId::generate();
            outgoing
                .headers_mut()
                .insert(policy.request_id_header.clone(), request_id.header_value());
            *outgoing.timeout_mut() = timeout;

            let attempt_span = telemetry::attempt_span(
                &method,
                url,
                attempt,
                request_id,
                &policy.redact_query_params,
            );
            let result = transport
                .send(outgoing)
                .instrument(attempt_span.clone())
                .await;
            let duration = clock.now().saturating_duration_since(attempt_started);

            let verdict = classify(policy, &attempt_span, &method, url, attempt, keyed, &result);
            drop(attempt_span); // the attempt span ends here, not after the pause
            if verdict.may_have_applied() {
                state.may_have_applied = true;
            }
            state.log.push(AttemptRecord {
                number: attempt,
                request_id,
                outcome: verdict.outcome,
                duration,
                delay_after: None,
            });
            let retry = verdict.transient && verdict.safe;
            let retry_after = verdict.retry_after;
            let last = match result {
                Ok(response) if !retry => return Ok(state.succeed(response)),
                Ok(response) => LastResult::Response(response),
                Err(TransportError::Reqwest(error)) if error.is_builder() => {
                    let last = LastResult::Transport(error);
                    return Err(state.give_up(GiveUpReason::InvalidRequest, last, None));
                }
                Err(error) if !retry => {
                    let last = LastResult::from(error);
                    return Err(state.give_up(GiveUpReason::NotRetryable, last, None));
                }
                Err(error) => LastResult::from(error),
            };
            if !replayable {
                return Err(state.give_up(GiveUpReason::BodyNotReplayable, last, retry_after));
            }

            // No jitter drawn (nor seeded sequence advanced) when no retry can follow.
            let backoff = if attempt < policy.max_attempts {
                let rng = state
                    .rng
                    .get_or_insert_with(|| Box::new(policy.intent_rng()));
                policy.backoff.delay(attempt - 1, state.previous_delay, rng)
            } else {
                Duration::ZERO
            };
            let facts = Facts {
                attempts_made: attempt,
                max_attempts: policy.max_attempts,
                remaining: deadline.remaining(clock.now()),
                retry_after,
                retry_after_ceiling: policy.retry_after_ceiling,
                backoff,
                min_attempt_window,
            };
            let (delay, reason) = match next_step(facts) {
                NextStep::GiveUp(why) => {
                    return Err(state.give_up(give_up_reason(why), last, retry_after))
                }
                NextStep::Wait(delay, reason) => (delay, reason),
            };
            if !policy
                .budget
                .try_withdraw_at(url.host_str().unwrap_or(""), clock.now())
            {
                tracing::warn!(attempt, "retry budget exhausted; not retrying");
                return Err(state.give_up(GiveUpReason::BudgetExhausted, last, retry_after));
            }
            previous = Some((last, retry_after));
            state.log.set_last_delay(delay, reason);
            state.previous_delay = Some(backoff);
            tracing::info!(
                attempt,
                delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                reason = reason.as_str(),
                "transient failure; retrying"
            );
            policy.sleeper.sleep(delay).await;
        }
    }
}

impl Verdict {
    /// Could this attempt have had an effect on the server (see
    /// `Error::is_outcome_unknown`)? Only transient failures count: a final response
    /// is an answer, not an unknown.
    fn may_have_applied(&self) -> bool {
        match self.outcome {
            AttemptOutcome::Status(status) => self.transient && !status_proves_no_effect(status),
            AttemptOutcome::Failed(failure) => failure.may_have_reached_server(),
        }
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

/// Where each attempt's request comes from.
enum Requests {
    /// Cloned for every attempt (bytes bodies are reference-counted, not copied).
    Template(reqwest::Request),
    /// Sent at most once (a streamed body, or a single-attempt policy): moved into
    /// its attempt, not cloned; the URL stays for spans and classification.
    Once(Option<reqwest::Request>, reqwest::Url),
}

impl Requests {
    fn next(&mut self) -> Option<reqwest::Request> {
        match self {
            Self::Template(template) => template.try_clone(),
            Self::Once(request, _) => request.take(),
        }
    }

    fn url(&self) -> &reqwest::Url {
        match self {
            Self::Template(template) => template.url(),
            Self::Once(_, url) => url,
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
    fn context(&mut self, retry_after: Option<Duration>) -> GiveUpContext {
        GiveUpContext {
            log: std::mem::take(&mut self.log),
            outcome_unknown: self.may_have_applied,
            elapsed: self.clock.now().saturating_duration_since(self.started),
            retry_after,
        }
    }

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

    fn succeed(&mut self, mut response: reqwest::Response) -> reqwest::Response {
        let span = tracing::Span::current();
        if !span.is_disabled() {
            span.record("attempts", self.log.len());
            span.record("outcome", "response");
        }
        response
            .extensions_mut()
            .insert(std::mem::take(&mut self.log));
        response
    }
}

/// Classifies one attempt's result (and records its OTel attributes on `span`).
fn classify(
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
    // The caller's classifier first, then the server's explicit hint, then the default.
    let decision = policy
        .classifier
        .as_ref()
        .and_then(|classifier| classifier.classify(&view))
        .or_else(|| server_hint(policy, &view))
        .unwrap_or_else(|| {
            default_decision(
                &view,
                &policy.transient_statuses,
                keyed && policy.retry_conflict_when_keyed,
            )
        });
    let transient = decision == Decision::Retry;
    let safe = retry_is_safe(method, keyed, &view.result);
    let (outcome, retry_after) = match view.result {
        AttemptResult::Response { status, headers } => (
            AttemptOutcome::Status(status),
            (transient && safe)
                .then(|| retry_after_of(headers))
                .flatten(),
        ),
        AttemptResult::Error { failure, .. } => (AttemptOutcome::Failed(failure), None),
    };
    Verdict {
        outcome,
        transient,
        safe,
        retry_after,
    }
}

/// A server's explicit word on retrying (e.g. `Stripe-Should-Retry: true|false`),
/// when the policy names such a header.
fn server_hint(policy: &PolicyInner, view: &AttemptView<'_>) -> Option<Decision> {
    let header = policy.server_hint_header.as_ref()?;
    let value = view.headers()?.get(header)?.to_str().ok()?.trim();
    if value.eq_ignore_ascii_case("true") {
        Some(Decision::Retry)
    } else if value.eq_ignore_ascii_case("false") {
        Some(Decision::Stop)
    } else {
        None
    }
}

/// The longest valid `Retry-After` among the response's fields (never come back
/// earlier than any of them asked); malformed fields are ignored. Only read on
/// statuses that are about to be retried.
fn retry_after_of(headers: &HeaderMap) -> Option<Duration> {
    let now = SystemTime::now();
    headers
        .get_all(http::header::RETRY_AFTER)
        .iter()
        .filter_map(|value| parse_retry_after_bytes(value.as_bytes(), now))
        .max()
}

fn give_up_reason(why: GiveUp) -> GiveUpReason {
    match why {
        GiveUp::DeadlineExceeded => GiveUpReason::DeadlineExceeded,
        GiveUp::AttemptsExhausted => GiveUpReason::AttemptsExhausted,
        GiveUp::RetryAfterBeyondCeiling => GiveUpReason::RetryAfterBeyondCeiling,
        GiveUp::RetryAfterBeyondDeadline => GiveUpReason::RetryAfterBeyondDeadline,
    }
}
