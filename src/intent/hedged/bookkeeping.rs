//! A hedged intent's bookkeeping: what the gates, the log and the observers are
//! told as copies go out, lose or are cancelled, and the error when the race ends
//! without a winner. The race itself (`hedged.rs`) only decides.

use std::time::Duration;

use super::super::prepare::Prepared;
use super::super::state::LoopState;
use super::{Ending, InFlight, Race};
use crate::attempt_log::{AttemptLog, AttemptOutcome, AttemptRecord};
use crate::clock::Instant;
use crate::error::{Error, LastResult};
use crate::gate::{self, GateScope, RetryCause};
use crate::hedge::Observation;
use crate::observer::{HedgeEvent, HedgeEventKind};

impl Race<'_, '_> {
    /// Asks the gates about copy `number`.
    pub(super) fn admit<T>(
        &self,
        intent: &Prepared<T>,
        number: u32,
        cause: RetryCause,
        now: Instant,
    ) -> Result<(), gate::GateRefusal> {
        self.with_scope(intent, number, cause, now, |scope| {
            self.policy.gates.admit(scope)
        })
    }

    /// Every gate admitted copy `number`, and it was not sent after all.
    pub(super) fn not_sent<T>(
        &self,
        intent: &Prepared<T>,
        number: u32,
        cause: RetryCause,
        now: Instant,
    ) {
        self.with_scope(intent, number, cause, now, |scope| {
            self.policy.gates.not_sent(scope)
        });
    }

    /// What the gates are told about copy `number` before it goes (or instead).
    fn with_scope<T, R>(
        &self,
        intent: &Prepared<T>,
        number: u32,
        cause: RetryCause,
        now: Instant,
        tell: impl FnOnce(&GateScope<'_>) -> R,
    ) -> R {
        let url = intent.requests.url();
        let authority = self.policy.gates.authority_of(url);
        tell(&GateScope {
            host: url.host_str().unwrap_or(""),
            authority: &authority,
            now,
            attempt: number,
            retry_cause: Some(cause),
            attempt_duration: Duration::ZERO,
        })
    }

    /// Another copy, sent at `winner_sent`, won: every copy still running is
    /// cancelled (its future dropped, not awaited), logged as such, and the gates
    /// told it ended neither way. A copy sent before the winner was overtaken: its
    /// time is a latency sample (a lower bound). One sent after it says nothing of
    /// the latency (it ran less than the winner took), and would pull the
    /// estimate low.
    pub(super) fn cancel<T>(
        &self,
        copies: &mut Vec<InFlight<'_>>,
        log: &mut AttemptLog,
        authority: &str,
        intent: &Prepared<T>,
        winner_sent: Instant,
    ) {
        let url = intent.requests.url();
        let now = self.policy.clock.now();
        for copy in copies.drain(..) {
            let ran = now.saturating_duration_since(copy.attempt.started);
            copy.span.record("error.type", "cancelled");
            drop(copy.sending);
            if copy.attempt.started <= winner_sent {
                self.hedger.observe(authority, now, Observation::Lost(ran));
            }
            let scope = GateScope {
                host: url.host_str().unwrap_or(""),
                authority,
                now,
                attempt: copy.attempt.number,
                retry_cause: copy.cause,
                attempt_duration: ran,
            };
            self.policy.gates.cancel(&scope);
            log.push(AttemptRecord {
                number: copy.attempt.number,
                request_id: copy.attempt.request_id,
                outcome: AttemptOutcome::Cancelled,
                duration: ran,
                delay_after: None,
            });
            self.tell(copy.attempt.number, HedgeEventKind::Cancelled, intent);
        }
    }

    /// The log in the order the copies were sent, each with what followed it.
    pub(super) fn finish_log(&self, log: &mut AttemptLog) {
        log.order_by_number();
        for &(number, delay, reason) in &self.notes {
            log.set_delay_of(number, delay, reason);
        }
    }

    pub(super) fn tell<T>(&self, attempt: u32, kind: HedgeEventKind, intent: &Prepared<T>) {
        if self.observers.is_empty() {
            return;
        }
        self.observers.hedge(&HedgeEvent {
            intent_id: self.intent_id,
            method: &intent.method,
            url: intent.requests.url(),
            attempt,
            kind,
        });
    }

    /// The error for an intent whose next copy could not go, with nothing running.
    pub(super) fn end(
        &self,
        ending: Ending,
        state: &mut LoopState,
        last: (LastResult, Option<Duration>),
    ) -> Error {
        self.finish_log(&mut state.log);
        match ending {
            Ending::GiveUp(why) => state.give_up(self.policy, why, last.0, last.1),
            Ending::Refused(refusal) => state.refused(self.policy, refusal, last.0, last.1),
        }
    }
}
