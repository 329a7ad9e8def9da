//! Running one intent: the order of its steps, and nothing else.
//!
//! Every rule the steps apply is a pure function in the module its name promises
//! (`outgoing`, `classify`, `decision`, `deadline`, `backoff`), and everything
//! outside the loop plugs in through a trait (`gate::Gate`,
//! `observer::IntentObserver`, `transport::Transport`):
//!
//! 1. prepare: the key header, the body (observers may need its bytes);
//! 2. admission: may the first attempt go out at all? (the gates; before any
//!    observer, so that a refused intent leaves nothing behind);
//! 3. observers' `started` (each may refuse: nothing is sent);
//! 4. send the attempt (`outgoing`: fresh request id, timeout cut to the time left);
//! 5. classify it, log it, tell the gates and observers;
//! 6. deliver, give up, or pause — one decision (`decision::after_attempt`);
//! 7. do the gates admit the retry? then pause, and back to 4;
//! 8. observers hear how the intent ended; the result goes to the caller.
//!
//! The deadline counts from `send()`: observers' time is inside it.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use tracing::Instrument;

use crate::attempt_log::{AttemptLog, AttemptRecord};
use crate::classify::{classify_result, Verdict};
use crate::deadline::Deadline;
use crate::decision::{self, Ended, Facts, Next};
use crate::error::{Error, GiveUpContext, GiveUpReason, LastResult};
use crate::gate::{self, GateRefusal, GateScope};
use crate::idempotency::IdempotencyKey;
use crate::ids::RequestId;
use crate::observer::{
    AttemptFinished, IntentEnd, IntentObserver, IntentStart, Observers, RetryScheduled,
    StartRefused,
};
use crate::outgoing::{self, AttemptWire};
use crate::policy::PolicyInner;
use crate::telemetry;
use crate::template::Requests;
use crate::transport::{Transport, TransportError};

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
    /// This intent's own observers (the policy's are told first).
    pub(crate) observers: Vec<Arc<dyn IntentObserver>>,
}

/// Runs an intent (or reports why it could not be built), as the future the caller
/// awaits. The deadline counts from this call.
pub(crate) fn start<T: Transport>(
    intent: Result<Intent<T>, Error>,
) -> impl Future<Output = Result<reqwest::Response, Error>> + Send {
    let span = match &intent {
        Ok(intent) => telemetry::intent_span(
            intent.request.method(),
            intent.request.url(),
            intent.key.as_ref(),
            &intent.policy.settings.redact_query_params,
        ),
        Err(_) => tracing::Span::none(),
    };
    let intent = intent.map(|intent| {
        let started = intent.policy.clock.now();
        (intent, started)
    });
    async move {
        let (intent, started) = intent?;
        intent.run(started).await
    }
    .instrument(span)
}

impl<T: Transport> Intent<T> {
    async fn run(mut self, started: Instant) -> Result<reqwest::Response, Error> {
        // 1. Prepare.
        self.add_key_header()?;
        let policy = Arc::clone(&self.policy);
        let mut observers = Observers::new(&policy.observers, std::mem::take(&mut self.observers));
        if let Some(name) = observers.duplicate() {
            return Err(Error::duplicate_observer(name));
        }
        if observers.need_body_bytes() {
            self.body_into_bytes();
        }
        let intent_id = RequestId::generate();
        let deadline = Deadline::new(started, self.deadline);
        let left = || deadline.remaining(policy.clock.now());

        // 2. Admission of the first attempt.
        let admission = GateScope {
            host: self.request.url().host_str().unwrap_or(""),
            now: started,
            attempt: 1,
            retry_cause: None,
        };
        if let Err(refusal) = gate::admit_all(&policy.gates, &admission) {
            // DEBUG: an open breaker refuses every intent; the breaker itself logs
            // its state changes.
            tracing::debug!(
                gate = refusal.gate(),
                "a gate held back the first attempt; nothing was sent"
            );
            let context = GiveUpContext {
                log: AttemptLog::new(self.key.clone()),
                ..GiveUpContext::nothing_sent()
            };
            let result = Err(Error::gate_refused(refusal, LastResult::Nothing, context));
            // Only the synchronous end hook: no observer started, none wrote anything.
            observers.finished_unstarted(&IntentEnd {
                intent_id,
                elapsed: Duration::ZERO,
                method: self.request.method(),
                url: self.request.url(),
                result: &result,
            });
            return result;
        }

        // 3. Observers' `started`.
        let refused = if observers.need_waiting() {
            let start = IntentStart {
                intent_id,
                key: self.key.as_ref(),
                key_header: &policy.key_header,
                request: &self.request,
                body: self.request.body().and_then(reqwest::Body::as_bytes),
                deadline: self.deadline,
            };
            // Boxed: only intents with async observers pay for holding this future.
            Box::pin(observers.start(&start, left)).await.err()
        } else {
            observers.start_without_waiting();
            None
        };

        // 4–7. The attempts.
        let mut prepared = self.prepare();
        let result = match refused {
            None => attempt_loop(&mut prepared, &policy, &observers, started, intent_id).await,
            Some(refused) => {
                let log = AttemptLog::new(prepared.key.take());
                let elapsed = policy.clock.now().saturating_duration_since(started);
                Err(match refused {
                    StartRefused::Refused(why) => {
                        tracing::warn!("an intent observer refused the intent; nothing was sent");
                        Error::observer_refused(why, log)
                    }
                    StartRefused::OutOfTime => {
                        tracing::warn!("an intent observer's `started` outlived the deadline");
                        Error::observer_overran_deadline(log, elapsed)
                    }
                })
            }
        };

        // 8. Observers hear how it ended.
        if observers.is_empty() {
            return result;
        }
        let mut result = result;
        let end = IntentEnd {
            intent_id,
            elapsed: policy.clock.now().saturating_duration_since(started),
            method: &prepared.method,
            url: prepared.requests.url(),
            result: &result,
        };
        observers.finished(&end);
        // Boxed: only intents with async observers pay for holding this future.
        let all_heard = !observers.need_waiting() || Box::pin(observers.ended(&end, left)).await;
        if !all_heard {
            // An observer that did not record the end (a journal) may resume the
            // intent later: the caller must not take "nothing happened" for granted.
            if let Err(error) = &mut result {
                error.mark_outcome_unknown();
            }
        }
        result
    }

    /// Refuses a zero deadline and puts the key on the request, before anything
    /// else sees it.
    fn add_key_header(&mut self) -> Result<(), Error> {
        if self.deadline == Some(Duration::ZERO) {
            return Err(Error::zero_deadline());
        }
        if let Some(key) = &self.key {
            let value = key
                .header_value(self.policy.settings.key_format)
                .map_err(Error::invalid_key)?;
            outgoing::put_key(&mut self.request, &self.policy.key_header, value);
        }
        Ok(())
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

    /// Everything the attempts need that can be decided without waiting.
    fn prepare(self) -> Prepared<T> {
        let Intent {
            transport,
            policy,
            mut request,
            body_factory,
            key,
            deadline,
            observers: _,
        } = self;
        let attempt_timeout = outgoing::take_own_timeout(&mut request)
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
        Prepared {
            transport,
            requests,
            body_factory,
            method,
            key,
            deadline,
            attempt_timeout,
            replayable,
        }
    }
}

/// An intent after the checks that need no waiting: what its attempts use.
struct Prepared<T> {
    transport: T,
    requests: Requests,
    body_factory: Option<BodyFactory>,
    method: http::Method,
    /// Moves into the attempt log when the attempts start.
    key: Option<IdempotencyKey>,
    deadline: Option<Duration>,
    /// Each attempt's timeout before it is cut to the time left: the request's
    /// own, else the policy's for this deadline.
    attempt_timeout: Option<Duration>,
    /// The body can be sent again (bytes, none, or a factory).
    replayable: bool,
}

impl<T: Transport> Prepared<T> {
    fn host(&self) -> &str {
        self.requests.url().host_str().unwrap_or("")
    }

    /// Sends `attempt`'s request as `outgoing::dress` writes it, and returns the
    /// transport's future; or why no attempt can start (the pause overran the
    /// deadline, or a body that cannot be replayed was already sent).
    fn send_attempt(
        &mut self,
        policy: &PolicyInner,
        deadline: &Deadline,
        attempt: &Attempt,
    ) -> Result<
        impl Future<Output = Result<reqwest::Response, TransportError>> + Send + '_,
        GiveUpReason,
    > {
        let timeout = deadline.attempt_timeout(attempt.started, self.attempt_timeout);
        if timeout == Some(Duration::ZERO) {
            return Err(GiveUpReason::DeadlineExceeded);
        }
        let mut request = self
            .requests
            .next()
            .ok_or(GiveUpReason::BodyNotReplayable)?;
        let wire = AttemptWire {
            request_id_header: &policy.request_id_header,
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

/// One attempt's identity: its number, when it started, its request id.
struct Attempt {
    number: u32,
    started: Instant,
    request_id: RequestId,
}

/// The attempts of one intent (steps 4–7): send, classify, decide, pause, until a
/// result.
async fn attempt_loop<T: Transport>(
    intent: &mut Prepared<T>,
    policy: &PolicyInner,
    observers: &Observers<'_>,
    started: Instant,
    intent_id: RequestId,
) -> Result<reqwest::Response, Error> {
    let deadline = Deadline::new(started, intent.deadline);
    let min_attempt_window = decision::min_attempt_window(intent.attempt_timeout, intent.deadline);
    let mut state = LoopState {
        log: AttemptLog::new(intent.key.take()),
        may_have_applied: false,
        started,
        rng: None,
        previous_backoff: None,
    };
    let mut attempt = Attempt {
        number: 1,
        started,
        request_id: intent_id,
    };
    // The result before a pause: what the caller gets if the next attempt cannot start.
    let mut previous = (LastResult::Nothing, None);
    loop {
        // 4. Send.
        let span = telemetry::attempt_span(
            &intent.method,
            intent.requests.url(),
            attempt.number,
            attempt.request_id,
            &policy.settings.redact_query_params,
        );
        let before = std::mem::replace(&mut previous, (LastResult::Nothing, None));
        let sending = match intent.send_attempt(policy, &deadline, &attempt) {
            Ok(sending) => sending,
            Err(why) => return Err(state.give_up(policy, why, before.0, before.1)),
        };
        drop(before); // not kept through this attempt
        let result = sending.instrument(span.clone()).await;

        // 5. Classify, log, tell.
        let verdict = state.record(
            policy, observers, intent, &attempt, intent_id, &span, &result,
        );
        drop(span); // the attempt span ends here, not after the pause

        // 6. Deliver, give up, or pause.
        let facts = Facts {
            ended: match &result {
                Ok(_) => Ended::Response {
                    retry: verdict.retry(),
                },
                Err(TransportError::Reqwest(error)) if error.is_builder() => Ended::InvalidRequest,
                Err(_) => Ended::Failed {
                    retry: verdict.retry(),
                },
            },
            conflict: verdict.conflict,
            replayable: intent.replayable,
            attempts_made: attempt.number,
            max_attempts: policy.settings.max_attempts,
            remaining: deadline.remaining(policy.clock.now()),
            retry_after: verdict.retry_after,
            retry_after_ceiling: policy.settings.retry_after_ceiling,
            conflict_delay: policy.settings.conflict_delay,
            min_attempt_window,
        };
        let next = decision::after_attempt(facts, || state.draw_backoff(policy, attempt.number));
        let last = match result {
            Ok(mut response) if next == Next::Deliver => {
                state.attach_log(&mut response);
                return Ok(response);
            }
            Ok(response) => LastResult::Response(response),
            Err(error) => LastResult::from(error),
        };
        let (delay, reason, cause) = match next {
            Next::Pause {
                delay,
                reason,
                cause,
            } => (delay, reason, cause),
            Next::GiveUp(why) => return Err(state.give_up(policy, why, last, verdict.retry_after)),
            // Only a response is delivered, and it was returned above.
            Next::Deliver => {
                return Err(state.give_up(policy, GiveUpReason::NotRetryable, last, None))
            }
        };

        // 7. Do the gates admit the retry? Then pause.
        let scope = GateScope {
            host: intent.host(),
            now: policy.clock.now(),
            attempt: attempt.number + 1,
            retry_cause: Some(cause),
        };
        if let Err(refusal) = gate::admit_all(&policy.gates, &scope) {
            return Err(state.refused(policy, refusal, last, verdict.retry_after));
        }
        state.log.set_last_delay(delay, reason);
        if let (false, Some(record)) = (observers.is_empty(), state.log.last()) {
            observers.retry_scheduled(&RetryScheduled {
                intent_id,
                method: &intent.method,
                url: intent.requests.url(),
                record,
                delay,
                reason,
                cause,
            });
        }
        tracing::info!(
            attempt = attempt.number,
            delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            reason = reason.as_str(),
            "transient failure; retrying"
        );
        previous = (last, verdict.retry_after);
        policy.sleeper.sleep(delay).await;
        attempt = Attempt {
            number: attempt.number + 1,
            started: policy.clock.now(),
            request_id: RequestId::generate(),
        };
    }
}

/// What the loop accumulates across attempts.
struct LoopState {
    /// The attempts so far, and the intent's key.
    log: AttemptLog,
    /// An attempt may have had an effect on the server (see `Error::is_outcome_unknown`).
    may_have_applied: bool,
    started: Instant,
    /// Made on the first retry: an intent that succeeds at once draws no jitter
    /// (and, boxed, does not carry a random generator's state in its future).
    rng: Option<Box<StdRng>>,
    /// The backoff drawn before the last pause (decorrelated jitter grows from it).
    previous_backoff: Option<Duration>,
}

impl LoopState {
    /// Classifies and logs the attempt just made, and tells the gates and observers.
    #[allow(clippy::too_many_arguments)]
    fn record<T>(
        &mut self,
        policy: &PolicyInner,
        observers: &Observers<'_>,
        intent: &Prepared<T>,
        attempt: &Attempt,
        intent_id: RequestId,
        span: &tracing::Span,
        result: &Result<reqwest::Response, TransportError>,
    ) -> Verdict {
        let url = intent.requests.url();
        let ended = policy.clock.now();
        let verdict = classify_result(
            &policy.rules,
            &*policy.clock,
            span,
            &intent.method,
            url,
            attempt.number,
            self.log.idempotency_key().is_some(),
            result,
        );
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
            retry_cause: None,
        };
        gate::tell_all(
            &policy.gates,
            &scope,
            &verdict.outcome,
            verdict.struggling(),
        );
        if let (false, Some(record)) = (observers.is_empty(), self.log.last()) {
            observers.attempt_finished(&AttemptFinished {
                intent_id,
                key: self.log.idempotency_key(),
                method: &intent.method,
                url,
                record,
                will_retry: verdict.retry(),
            });
        }
        verdict
    }

    /// The backoff's proposal for the pause after attempt `attempt`.
    fn draw_backoff(&mut self, policy: &PolicyInner, attempt: u32) -> Duration {
        let rng = self
            .rng
            .get_or_insert_with(|| Box::new(policy.intent_rng()));
        let drawn = policy
            .settings
            .backoff
            .delay(attempt - 1, self.previous_backoff, rng);
        self.previous_backoff = Some(drawn);
        drawn
    }

    fn context(&mut self, policy: &PolicyInner, retry_after: Option<Duration>) -> GiveUpContext {
        GiveUpContext {
            log: std::mem::take(&mut self.log),
            outcome_unknown: self.may_have_applied,
            elapsed: policy.clock.now().saturating_duration_since(self.started),
            retry_after,
        }
    }

    fn give_up(
        &mut self,
        policy: &PolicyInner,
        reason: GiveUpReason,
        last: LastResult,
        retry_after: Option<Duration>,
    ) -> Error {
        let context = self.context(policy, retry_after);
        record_end(context.log.len(), reason.as_str());
        tracing::warn!(
            reason = reason.as_str(),
            attempts = context.log.len(),
            outcome_unknown = context.outcome_unknown,
            "intent gave up"
        );
        Error::give_up(reason, last, context)
    }

    fn refused(
        &mut self,
        policy: &PolicyInner,
        refusal: GateRefusal,
        last: LastResult,
        retry_after: Option<Duration>,
    ) -> Error {
        let context = self.context(policy, retry_after);
        let error = Error::gate_refused(refusal, last, context);
        record_end(error.attempts() as usize, error.reason().as_str());
        tracing::warn!(
            gate = error.gate_refusal().map_or("", |refusal| refusal.gate()),
            attempts = error.attempts(),
            outcome_unknown = error.is_outcome_unknown(),
            "a gate held back the retry; intent gave up"
        );
        error
    }

    /// The intent ends with `response`: the attempt log goes with it.
    fn attach_log(&mut self, response: &mut reqwest::Response) {
        record_end(self.log.len(), "response");
        response
            .extensions_mut()
            .insert(std::mem::take(&mut self.log));
    }
}

/// Closes the intent span with its attempts and outcome.
fn record_end(attempts: usize, outcome: &'static str) {
    // The intent span is at INFO: with INFO off everywhere there is nothing to record.
    if tracing::level_enabled!(tracing::Level::INFO) {
        let span = tracing::Span::current();
        span.record("attempts", attempts);
        span.record("outcome", outcome);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::Mutex;

    use super::*;
    use crate::gate::Gate;
    use crate::policy::RetryPolicyBuilder;
    use crate::{RecordingSleeper, RetryPolicy};

    /// What the in-memory transport answers to each attempt, in order.
    enum Answer {
        Status(u16),
        /// A failure further down a middleware chain (a `reqwest::Error` cannot be
        /// built by hand): never retried.
        Other,
    }

    /// An in-memory transport: scripted answers, and every request it was handed.
    #[derive(Clone, Default)]
    struct Scripted {
        answers: Arc<Mutex<VecDeque<Answer>>>,
        sent: Arc<Mutex<Vec<reqwest::Request>>>,
    }

    impl Scripted {
        fn new(answers: impl IntoIterator<Item = Answer>) -> Self {
            Self {
                answers: Arc::new(Mutex::new(answers.into_iter().collect())),
                sent: Arc::default(),
            }
        }

        fn headers(&self, name: &str) -> Vec<String> {
            let sent = self.sent.lock().unwrap();
            sent.iter()
                .map(|request| request.headers()[name].to_str().unwrap().to_owned())
                .collect()
        }
    }

    impl Transport for Scripted {
        fn send(
            &mut self,
            request: reqwest::Request,
        ) -> impl Future<Output = Result<reqwest::Response, TransportError>> + Send {
            self.sent.lock().unwrap().push(request);
            let answer = self.answers.lock().unwrap().pop_front();
            async move {
                match answer.expect("an answer for every attempt") {
                    Answer::Status(status) => {
                        let response = http::Response::builder().status(status).body("").unwrap();
                        Ok(reqwest::Response::from(response))
                    }
                    Answer::Other => {
                        Err(TransportError::Other("a signing middleware failed".into()))
                    }
                }
            }
        }
    }

    fn intent(transport: Scripted, policy: RetryPolicyBuilder) -> Intent<Scripted> {
        let policy = policy
            .sleeper(RecordingSleeper::new())
            .rng_seed(1)
            .build()
            .unwrap();
        Intent {
            transport,
            policy: policy.inner,
            request: reqwest::Request::new(
                http::Method::POST,
                "http://127.0.0.1:1/pay".parse().unwrap(),
            ),
            body_factory: None,
            key: Some(IdempotencyKey::new("order-1").unwrap()),
            deadline: Some(Duration::from_secs(30)),
            observers: Vec::new(),
        }
    }

    #[tokio::test]
    async fn a_transient_status_is_retried_with_one_key_and_a_request_id_per_attempt() {
        let transport = Scripted::new([Answer::Status(503), Answer::Status(201)]);
        let response = start(Ok(intent(transport.clone(), RetryPolicy::builder())))
            .await
            .unwrap();
        assert_eq!(response.status(), 201);
        let log = response.extensions().get::<AttemptLog>().unwrap();
        assert_eq!(log.len(), 2);
        assert_eq!(transport.headers("idempotency-key"), ["order-1", "order-1"]);
        let ids = transport.headers("x-request-id");
        assert_ne!(ids[0], ids[1]);
        assert_eq!(ids[0], log.attempts()[0].request_id().to_string());
    }

    #[tokio::test]
    async fn another_middlewares_failure_is_not_retried() {
        let transport = Scripted::new([Answer::Other]);
        let error = start(Ok(intent(transport.clone(), RetryPolicy::builder())))
            .await
            .unwrap_err();
        assert!(error.is_not_retryable(), "{error}");
        assert_eq!(error.attempts(), 1);
        assert_eq!(transport.sent.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn a_final_status_is_delivered_and_attempts_run_out() {
        let transport = Scripted::new([Answer::Status(422)]);
        let response = start(Ok(intent(transport, RetryPolicy::builder())))
            .await
            .unwrap();
        assert_eq!(response.status(), 422);

        let transport = Scripted::new([Answer::Status(503), Answer::Status(503)]);
        let error = start(Ok(intent(
            transport,
            RetryPolicy::builder().max_attempts(2),
        )))
        .await
        .unwrap_err();
        assert!(error.is_attempts_exhausted(), "{error}");
        assert_eq!(error.last_status().map(|s| s.as_u16()), Some(503));
    }

    /// Admits the first attempt, refuses every retry.
    struct NoRetries;

    impl Gate for NoRetries {
        fn name(&self) -> &str {
            "no_retries"
        }

        fn admit(&self, scope: &GateScope<'_>) -> Result<(), GateRefusal> {
            match scope.retry_cause() {
                None => Ok(()),
                Some(_) => Err(GateRefusal::new("no_retries")),
            }
        }
    }

    #[tokio::test]
    async fn a_refused_retry_keeps_the_earlier_attempts_result() {
        let transport = Scripted::new([Answer::Status(503)]);
        let error = start(Ok(intent(
            transport,
            RetryPolicy::builder().gate(NoRetries),
        )))
        .await
        .unwrap_err();
        assert!(error.is_gate_refused(), "{error}");
        assert_eq!(error.attempts(), 1);
        assert_eq!(error.last_status().map(|s| s.as_u16()), Some(503));
        assert!(error.is_outcome_unknown(), "a 503 may have been processed");
    }

    /// The future a caller holds stays small: it is moved into the caller's own
    /// future (and often into a spawned task). The bound is today's size in a
    /// debug build (what `cargo test` measures) plus a margin; release builds are
    /// smaller. Raise it only with a reason.
    #[tokio::test]
    async fn the_send_future_has_a_bounded_size() {
        let client = crate::ResilientClient::new();
        let future = client.post("http://127.0.0.1:1/pay").body("{}").send();
        let size = std::mem::size_of_val(&future);
        assert!(size <= 2816, "the send future grew to {size} bytes");
    }
}
