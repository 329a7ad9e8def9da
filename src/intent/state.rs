//! What the attempt loop accumulates across attempts: the log, whether an attempt
//! may have had an effect, the jitter source; and how it records and gives up.

use std::time::Duration;

use http::Method;
use rand::rngs::StdRng;

use super::prepare::{Attempt, Prepared};
use crate::attempt_log::{AttemptLog, AttemptRecord};
use crate::classify::{classify_result, Verdict};
use crate::clock::Instant;
use crate::error::{Error, GiveUpContext, GiveUpReason, LastResult};
use crate::gate::{GateRefusal, GateScope};
use crate::ids::RequestId;
use crate::observer::{AttemptFinished, Observers};
use crate::policy::PolicyInner;
use crate::transport::TransportError;

/// What the loop accumulates across attempts.
pub(super) struct LoopState {
    /// The attempts so far, and the intent's key.
    pub(super) log: AttemptLog,
    /// An attempt may have had an effect on the server (see `Error::is_outcome_unknown`).
    pub(super) may_have_applied: bool,
    /// Keyed 409s "in progress" waited out under the deadline: they do not use up
    /// `max_attempts` (`decision::waits_out`).
    pub(super) conflicts_waited_out: u32,
    /// An attempt was answered `425 Too Early`: a second one is final.
    pub(super) too_early_seen: bool,
    pub(super) started: Instant,
    /// The intent's method, for the give-up text.
    pub(super) method: Method,
    /// Made on the first retry: an intent that succeeds at once draws no jitter
    /// (and, boxed, does not carry a random generator's state in its future).
    pub(super) rng: Option<Box<StdRng>>,
    /// The backoff drawn before the last pause (decorrelated jitter grows from it).
    pub(super) previous_backoff: Option<Duration>,
}

impl LoopState {
    /// The state before the first attempt of `intent`: the key moves into the log.
    pub(super) fn new<T>(intent: &mut Prepared<T>, started: Instant) -> Self {
        LoopState {
            log: AttemptLog::new(intent.key.take()),
            may_have_applied: false,
            conflicts_waited_out: 0,
            too_early_seen: false,
            started,
            method: intent.method.clone(),
            rng: None,
            previous_backoff: None,
        }
    }

    /// Classifies and logs the attempt just made, which `ended` then, and tells the
    /// gates and observers.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn record<T>(
        &mut self,
        policy: &PolicyInner,
        observers: &Observers<'_>,
        intent: &Prepared<T>,
        attempt: &Attempt,
        ended: Instant,
        intent_id: RequestId,
        span: &tracing::Span,
        result: &Result<reqwest::Response, TransportError>,
    ) -> Verdict {
        let url = intent.requests.url();
        let verdict = classify_result(
            &policy.rules(),
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
        if policy.gates.hear_outcomes() {
            let authority = policy.gates.authority_of(url);
            let scope = GateScope {
                host: url.host_str().unwrap_or(""),
                authority: &authority,
                now: ended,
                attempt: attempt.number,
                retry_cause: None,
                attempt_duration: ended.saturating_duration_since(attempt.started),
            };
            policy
                .gates
                .tell(&scope, &verdict.outcome, verdict.struggling());
        }
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
    pub(super) fn draw_backoff(&mut self, policy: &PolicyInner, attempt: u32) -> Duration {
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
            method: Some(self.method.clone()),
        }
    }

    pub(super) fn give_up(
        &mut self,
        policy: &PolicyInner,
        reason: GiveUpReason,
        last: LastResult,
        retry_after: Option<Duration>,
    ) -> Error {
        let mut context = self.context(policy, retry_after);
        if reason == GiveUpReason::CompletedNotKept {
            // The server said the key finished: the effect happened, known.
            context.outcome_unknown = false;
        }
        record_end(context.log.len(), reason.as_str());
        tracing::warn!(
            reason = reason.as_str(),
            attempts = context.log.len(),
            outcome_unknown = context.outcome_unknown,
            "intent gave up"
        );
        Error::give_up(reason, last, context)
    }

    pub(super) fn refused(
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
    pub(super) fn attach_log(&mut self, response: &mut reqwest::Response) {
        record_end(self.log.len(), "response");
        // `fetch`'s responses carry no extensions: in the browser the observers are
        // where the log of a successful intent is read.
        #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
        response
            .extensions_mut()
            .insert(std::mem::take(&mut self.log));
        #[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
        let _ = response;
    }
}

/// Closes the intent span with its attempts and outcome.
pub(super) fn record_end(attempts: usize, outcome: &'static str) {
    // The intent span is at INFO: with INFO off everywhere there is nothing to record.
    if tracing::level_enabled!(tracing::Level::INFO) {
        let span = tracing::Span::current();
        span.record("attempts", attempts);
        span.record("outcome", outcome);
    }
}
