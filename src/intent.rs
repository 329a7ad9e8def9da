//! Running one intent: the order of its steps, and nothing else.
//!
//! Every rule the steps apply is a pure function in the module its name promises
//! (`outgoing`, `classify`, `decision`, `deadline`, `backoff`), and everything
//! outside the loop plugs in through a trait (`gate::Gate`,
//! `observer::IntentObserver`, `write_ahead::WriteAhead`, `transport::Transport`):
//!
//! 1. prepare, in `send()` itself (nothing in it waits, and the future then holds
//!    only the prepared intent): the key header, the body (a write-ahead gets its
//!    bytes), the attempts' timeout;
//! 2. admission: may the first attempt go out at all? (the gates; before the
//!    write-ahead, so that a refused intent leaves nothing behind);
//! 3. the write-ahead's `before_first_byte` (it may refuse: nothing is sent);
//! 4. send the attempt (`outgoing`: fresh request id, timeout cut to the time left);
//! 5. classify it, log it, tell the gates and observers;
//! 6. deliver, give up, or pause — one decision (`decision::after_attempt`);
//! 7. do the gates admit the retry? then pause, and back to 4;
//! 8. observers, then the write-ahead (whenever step 3 ran), hear how the intent
//!    ended; the result goes to the caller.
//!
//! The deadline counts from `send()`: the write-ahead's time is inside it. A hedged
//! intent (see `hedge`) runs steps 4–7 as a race of copies (`intent/hedged.rs`).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::Either;
use tracing::Instrument;

#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
use crate::attempt_log::EndNotRecorded;
use crate::attempt_log::{AttemptLog, NotHedged};
use crate::clock::Instant;
use crate::deadline::Deadline;
use crate::decision::{self, Ended, Facts, Next};
use crate::error::{Error, GiveUpContext, GiveUpReason, LastResult};
use crate::gate::GateScope;
use crate::idempotency::IdempotencyKey;
use crate::ids::RequestId;
use crate::observer::{IntentEnd, IntentObserver, Observers, RetryScheduled};
use crate::policy::PolicyInner;
use crate::telemetry;
use crate::transport::{MaybeSend, Transport, TransportError};
use crate::write_ahead::{self, IntentStart, StartRefused, WriteAhead};

mod hedged;
mod prepare;
mod state;

pub(crate) use prepare::{body_into_bytes, check_and_key};
use prepare::{Attempt, Prepared, Ready};
use state::LoopState;

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
    /// The request's own write-ahead, else the policy's.
    pub(crate) write_ahead: Option<Arc<dyn WriteAhead>>,
    /// Read each response's body inside its attempt, at most this many bytes.
    pub(crate) whole_body: Option<usize>,
}

/// Runs an intent (or reports why it could not be built), as the future the caller
/// awaits. The deadline counts from this call, and step 1 runs in it.
pub(crate) fn start<T: Transport>(
    intent: Result<Intent<T>, Error>,
) -> impl Future<Output = Result<reqwest::Response, Error>> + MaybeSend {
    let span = match &intent {
        Ok(intent) => telemetry::intent_span(
            intent.request.method(),
            intent.request.url(),
            intent.key.as_ref(),
            &intent.policy.settings.redact_query_params,
        ),
        Err(_) => tracing::Span::none(),
    };
    // 1. Prepare.
    let ready = intent.and_then(|intent| {
        let started = intent.policy.clock.now();
        intent.prepare(started)
    });
    match ready {
        Ok(ready) => Either::Left(ready.run().instrument(span)),
        Err(error) => Either::Right(std::future::ready(Err(error))),
    }
}

impl<T: Transport> Ready<T> {
    /// Steps 2–8. A block over `self` rather than an `async fn`: an `async fn`
    /// would hold its argument twice in the future (the argument, and the local it
    /// is moved to), and every move of the caller's future copies all of it.
    #[allow(clippy::manual_async_fn)] // on purpose, as said above
    fn run(mut self) -> impl Future<Output = Result<reqwest::Response, Error>> + MaybeSend {
        async move {
            let prepared = &mut self.attempts;
            let policy = &*self.policy;
            let started = self.started;
            let observers = Observers::new(&policy.observers, std::mem::take(&mut self.observers));
            let intent_id = RequestId::generate();
            let deadline = Deadline::new(started, prepared.deadline);
            let left = || deadline.remaining(policy.clock.now());

            // 2. Admission of the first attempt.
            let admitted = {
                let authority = policy.gates.authority_of(prepared.requests.url());
                let admission = GateScope {
                    host: prepared.host(),
                    authority: &authority,
                    now: started,
                    attempt: 1,
                    retry_cause: None,
                    attempt_duration: Duration::ZERO,
                };
                policy.gates.admit(&admission)
            };
            if let Err(refusal) = admitted {
                // DEBUG: an open breaker refuses every intent; the breaker itself logs
                // its state changes.
                tracing::debug!(
                    gate = refusal.gate(),
                    "a gate held back the first attempt; nothing was sent"
                );
                let context = GiveUpContext {
                    log: AttemptLog::new(prepared.key.take()),
                    ..GiveUpContext::nothing_sent()
                };
                let result = Err(Error::gate_refused(refusal, LastResult::Nothing, context));
                // Only the observers: the write-ahead was not asked, and wrote nothing.
                observers.finished(&IntentEnd {
                    intent_id,
                    elapsed: Duration::ZERO,
                    method: &prepared.method,
                    url: prepared.requests.url(),
                    result: &result,
                });
                return result;
            }

            // 3. The write-ahead's `before_first_byte`.
            let refused = match (self.write_ahead.as_deref(), prepared.requests.unsent()) {
                (Some(write_ahead), Some(request)) => {
                    let start = IntentStart {
                        intent_id,
                        key: prepared.key.as_ref(),
                        key_header: &policy.key_header,
                        request,
                        body: request.body().and_then(reqwest::Body::as_bytes),
                        deadline: prepared.deadline,
                    };
                    // Boxed: only intents with a write-ahead pay for holding this future.
                    Box::pin(write_ahead::before_first_byte(write_ahead, &start, left()))
                        .await
                        .err()
                }
                // (No attempt has taken the request yet: `unsent` is always `Some` here.)
                _ => None,
            };

            // 4–7. The attempts: raced as hedged copies when hedging applies (boxed:
            // an intent without hedging never holds that race in its future).
            let hedging = match refused {
                None => hedged::applies(prepared, policy, self.write_ahead.is_some()),
                Some(_) => None,
            };
            let result = match refused {
                None if hedging == Some(Ok(())) => {
                    let race =
                        hedged::run(prepared, policy, &observers, &deadline, intent_id, started);
                    Box::pin(race).await
                }
                None => {
                    let not_hedged = hedging.and_then(Result::err);
                    let loop_ = attempt_loop(
                        prepared, policy, &observers, &deadline, intent_id, not_hedged,
                    );
                    loop_.await
                }
                Some(refused) => Err(refusal_error(refused, prepared, policy, started)),
            };

            // 8. Observers, then the write-ahead, hear how it ended.
            if observers.is_empty() && self.write_ahead.is_none() {
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
            let Some(write_ahead) = self.write_ahead.as_deref() else {
                return result;
            };
            // Boxed: only intents with a write-ahead pay for holding this future.
            let recorded = Box::pin(write_ahead::after_end(write_ahead, &end, left())).await;
            if !recorded {
                mark_end_not_recorded(&mut result);
            }
            result
        }
    }
}

/// The error for an intent the write-ahead stopped before its first byte.
fn refusal_error<T>(
    refused: StartRefused,
    prepared: &mut Prepared<T>,
    policy: &PolicyInner,
    started: Instant,
) -> Error {
    let log = AttemptLog::new(prepared.key.take());
    match refused {
        StartRefused::Refused(why) => {
            let error = Error::write_ahead_refused(why, log);
            if error.is_outcome_unknown() {
                tracing::warn!(
                    "the write-ahead could not confirm its write; this call sent nothing, but the intent may still be sent under its key (outcome unknown)"
                );
            } else {
                tracing::warn!("the write-ahead refused the intent; nothing was sent");
            }
            error
        }
        StartRefused::OutOfTime => {
            tracing::warn!("the write-ahead's `before_first_byte` outlived the deadline");
            let elapsed = policy.clock.now().saturating_duration_since(started);
            Error::write_ahead_overran_deadline(log, elapsed)
        }
    }
}

/// The write-ahead did not record the end, so it may resend the intent later: an
/// error becomes outcome unknown, a response says so in its extensions.
fn mark_end_not_recorded(result: &mut Result<reqwest::Response, Error>) {
    match result {
        // `fetch`'s responses carry no extensions: in the browser the write-ahead's
        // own warning (`write_ahead::after_end`) is all that says so.
        #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
        Ok(response) => {
            response.extensions_mut().insert(EndNotRecorded);
        }
        #[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
        Ok(_) => {}
        Err(error) => error.mark_outcome_unknown(),
    }
}

/// The attempts of one intent (steps 4–7): send, classify, decide, pause, until a
/// result. `not_hedged`: why its hedging policy does not hedge it (the log says so).
async fn attempt_loop<T: Transport>(
    intent: &mut Prepared<T>,
    policy: &PolicyInner,
    observers: &Observers<'_>,
    deadline: &Deadline,
    intent_id: RequestId,
    not_hedged: Option<NotHedged>,
) -> Result<reqwest::Response, Error> {
    let min_attempt_window = decision::min_attempt_window(intent.attempt_timeout, intent.deadline);
    let mut state = LoopState::new(intent, deadline.started());
    if let Some(why) = not_hedged {
        tracing::debug!(
            why = why.as_str(),
            "the policy hedges, but not this intent: it runs without copies"
        );
        state.log.set_not_hedged(why);
    }
    let mut attempt = Attempt {
        number: 1,
        // Set as the attempt is sent (see `Attempt::started`).
        started: deadline.started(),
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
        let sending = match intent.send_attempt(policy, deadline, &mut attempt) {
            Ok(sending) => sending,
            Err(why) => return Err(state.give_up(policy, why, before.0, before.1)),
        };
        drop(before); // not kept through this attempt
        let result = sending.instrument(span.clone()).await;

        // 5. Classify, log, tell.
        // One instant for the attempt's end: its logged duration, what the gates
        // hear, and the time left the decision reads.
        let ended = policy.clock.now();
        let verdict = state.record(
            policy, observers, intent, &attempt, ended, intent_id, &span, &result,
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
            attempts_made: attempt.number - state.conflicts_waited_out,
            max_attempts: policy.settings.max_attempts,
            remaining: deadline.remaining(ended),
            retry_after: verdict.retry_after,
            retry_after_ceiling: policy.settings.retry_after_ceiling,
            completed_not_kept: intent.whole_body.is_some()
                && attempt.number > 1
                && state.log.idempotency_key().is_some()
                && matches!(&result, Ok(response) if response.status() == http::StatusCode::GONE),
            too_early_again: verdict.too_early && state.too_early_seen,
            conflict_delay: policy.settings.conflict_delay,
            // The limit divides by the pace: worked out only for a 409 (`waits_out`
            // reads it only then).
            conflict_waits_left: verdict.conflict
                && state.conflicts_waited_out
                    < decision::conflict_wait_limit(
                        intent.deadline,
                        policy.settings.conflict_delay,
                    ),
            min_attempt_window,
        };
        let next = decision::after_attempt(facts, || state.draw_backoff(policy, attempt.number));
        state.too_early_seen |= verdict.too_early;
        if decision::waits_out(facts) {
            state.conflicts_waited_out += 1;
        }
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
        let admitted = {
            let authority = policy.gates.authority_of(intent.requests.url());
            let scope = GateScope {
                host: intent.host(),
                authority: &authority,
                now: policy.clock.now(),
                attempt: attempt.number + 1,
                retry_cause: Some(cause),
                attempt_duration: Duration::ZERO,
            };
            policy.gates.admit(&scope)
        };
        if let Err(refusal) = admitted {
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
            started: attempt.started,
            request_id: RequestId::generate(),
        };
    }
}

#[cfg(test)]
mod tests;
