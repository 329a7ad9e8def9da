//! Steps 4–7 of a hedged intent: copies of the request race, and the first final
//! answer wins. Every choice is a pure rule in `hedge` (`after_copy`, `may_hedge`)
//! or `decision` (`after_attempt`, asked about each copy as about an attempt);
//! this file only keeps the copies in flight and applies the rules; what each
//! copy's fate tells the gates, the log and the observers is in
//! `hedged/bookkeeping.rs`.
//!
//! Only intents `applies` picks come here, through a boxed future: an intent
//! without hedging never holds this race's state.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use tracing::Instrument;

use super::prepare::{Attempt, Prepared};
use super::state::LoopState;
use crate::attempt_log::{DelayReason, NotHedged};
use crate::clock::Instant;
use crate::deadline::Deadline;
use crate::decision::{self, Ended, Facts};
use crate::error::{Error, GiveUpReason, LastResult};
use crate::gate::{self, RetryCause};
use crate::hedge::{self, HedgeFacts, Hedger, Observation, Step};
use crate::ids::RequestId;
use crate::observer::{HedgeEventKind, Observers, RetryScheduled};
use crate::policy::PolicyInner;
use crate::sleeper::Sleep;
use crate::telemetry;
use crate::transport::{Transport, TransportError};
use crate::whole_body;

mod bookkeeping;

/// Is `intent` hedged? `None`: its policy does not hedge. Else `hedge::eligible`
/// must say yes, and its transport must send copies at once; `Err`: why not (the
/// attempt log says so).
pub(super) fn applies<T: Transport>(
    intent: &Prepared<T>,
    policy: &PolicyInner,
    write_ahead: bool,
) -> Option<Result<(), NotHedged>> {
    let hedger = policy.hedger.as_ref()?;
    let eligible = hedge::eligible(
        &hedger.settings,
        &intent.method,
        intent.key.is_some(),
        write_ahead,
        intent.replayable,
        policy.settings.max_attempts,
    );
    Some(eligible.and_then(|()| match intent.transport.copy() {
        Some(_) => Ok(()),
        None => Err(NotHedged::Transport),
    }))
}

/// Steps 4–7 of an intent `applies` picked. The first copy was admitted by step 2.
pub(super) async fn run<T: Transport>(
    intent: &mut Prepared<T>,
    policy: &PolicyInner,
    observers: &Observers<'_>,
    deadline: &Deadline,
    intent_id: RequestId,
    started: Instant,
) -> Result<reqwest::Response, Error> {
    let (Some(hedger), Some(transport)) = (policy.hedger.as_ref(), intent.transport.copy()) else {
        // `applies` said both are there.
        return Err(LoopState::new(intent, started).give_up(
            policy,
            GiveUpReason::NotRetryable,
            LastResult::Nothing,
            None,
        ));
    };
    let race = Race::new(policy, hedger, observers, deadline, intent_id);
    race.run(intent, transport, started).await
}

#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
type Sending<'a> =
    Pin<Box<dyn Future<Output = Result<reqwest::Response, TransportError>> + Send + 'a>>;
// In the browser and node a copy's future holds `fetch`'s, which is not `Send`.
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
type Sending<'a> = Pin<Box<dyn Future<Output = Result<reqwest::Response, TransportError>> + 'a>>;

/// A copy in flight.
struct InFlight<'a> {
    attempt: Attempt,
    /// Why it went: `None` for the first copy.
    cause: Option<RetryCause>,
    span: tracing::Span,
    sending: Sending<'a>,
}

/// What the race waits for next.
enum Timer {
    /// The hedge delay: if no copy answered by then, another goes out.
    Hedge(Duration),
    /// A `Retry-After` on copy `after`: the next copy goes out when it ends.
    Hold { delay: Duration, after: u32 },
}

enum Event {
    Ended(usize, Result<reqwest::Response, TransportError>),
    Timer,
}

/// One hedged intent's race.
struct Race<'r, 'o> {
    policy: &'r PolicyInner,
    hedger: &'r Hedger,
    observers: &'r Observers<'o>,
    deadline: &'r Deadline,
    intent_id: RequestId,
    /// Copies sent so far (each one counts toward `max_attempts`).
    sent: u32,
    /// What followed each copy in the log, applied when the race ends (copies end
    /// out of order): (the copy, how long after it, why).
    notes: Vec<(u32, Duration, DelayReason)>,
    /// The latest copy sent, and when: a hedge's line goes on it.
    latest: (u32, Instant),
    /// No copy goes before then: the latest any answer's `Retry-After` allows
    /// (`hedge::hold`).
    held_until: Option<Instant>,
}

impl<'r, 'o> Race<'r, 'o> {
    fn new(
        policy: &'r PolicyInner,
        hedger: &'r Hedger,
        observers: &'r Observers<'o>,
        deadline: &'r Deadline,
        intent_id: RequestId,
    ) -> Self {
        Race {
            policy,
            hedger,
            observers,
            deadline,
            intent_id,
            sent: 0,
            notes: Vec::new(),
            latest: (0, Instant::now()),
            held_until: None,
        }
    }

    /// Runs the race to its result.
    async fn run<T: Transport>(
        mut self,
        intent: &mut Prepared<T>,
        transport: T,
        started: Instant,
    ) -> Result<reqwest::Response, Error> {
        let policy = self.policy;
        let max_copies = self.hedger.settings.max_copies;
        let min_attempt_window =
            decision::min_attempt_window(intent.attempt_timeout, intent.deadline);
        let mut state = LoopState::new(intent, started);
        let authority = intent.authority().into_owned();
        self.hedger.deposit(started);
        let mut copies: Vec<InFlight<'_>> = Vec::with_capacity(max_copies as usize);
        let mut timer: Option<(Sleep, Timer)> = None;
        // The result of the latest failed copy: the caller's if no copy wins.
        let mut last = (LastResult::Nothing, None);

        let first = Attempt {
            number: 1,
            // Set as the copy is sent (see `Attempt::started`).
            started,
            request_id: self.intent_id,
        };
        if let Err(why) = self.launch(intent, &transport, &mut copies, first, None) {
            return Err(state.give_up(policy, why, LastResult::Nothing, None));
        }
        self.arm_hedge(&authority, &mut timer);

        loop {
            let event = std::future::poll_fn(|cx| {
                for (index, copy) in copies.iter_mut().enumerate() {
                    if let Poll::Ready(result) = copy.sending.as_mut().poll(cx) {
                        return Poll::Ready(Event::Ended(index, result));
                    }
                }
                if let Some((sleep, _)) = &mut timer {
                    if sleep.as_mut().poll(cx).is_ready() {
                        return Poll::Ready(Event::Timer);
                    }
                }
                Poll::Pending
            })
            .await;
            match event {
                Event::Ended(index, result) => {
                    let copy = copies.swap_remove(index);
                    // 5. Classify, log, tell (as any attempt).
                    let now = policy.clock.now();
                    let verdict = state.record(
                        policy,
                        self.observers,
                        intent,
                        &copy.attempt,
                        now,
                        self.intent_id,
                        &copy.span,
                        &result,
                    );
                    drop(copy.span);
                    let took = now.saturating_duration_since(copy.attempt.started);
                    self.hedger.observe(
                        &authority,
                        now,
                        observation(&result, verdict.retry(), took),
                    );
                    // 6. What this copy's end means for the race.
                    let (held_until, retry_after) =
                        hedge::hold(self.held_until, verdict.retry_after, now);
                    self.held_until = held_until;
                    let facts = Facts {
                        ended: match &result {
                            Ok(_) => Ended::Response {
                                retry: verdict.retry(),
                            },
                            Err(TransportError::Reqwest(error)) if error.is_builder() => {
                                Ended::InvalidRequest
                            }
                            Err(_) => Ended::Failed {
                                retry: verdict.retry(),
                            },
                        },
                        conflict: verdict.conflict,
                        replayable: intent.replayable,
                        attempts_made: self.sent,
                        max_attempts: policy.settings.max_attempts,
                        remaining: self.deadline.remaining(now),
                        retry_after,
                        retry_after_ceiling: policy.settings.retry_after_ceiling,
                        completed_not_kept: false,
                        too_early_again: verdict.too_early && state.too_early_seen,
                        conflict_delay: policy.settings.conflict_delay,
                        conflict_waits_left: false,
                        min_attempt_window,
                    };
                    // No backoff: a hedged intent sends the next copy at once.
                    let next = decision::after_attempt(facts, || Duration::ZERO);
                    state.too_early_seen |= verdict.too_early;
                    let step = hedge::after_copy(next, !copies.is_empty());
                    if step == Step::Win {
                        if let Ok(mut response) = result {
                            if copy.cause == Some(RetryCause::Hedge) {
                                self.tell(copy.attempt.number, HedgeEventKind::Won, intent);
                            }
                            let winner = copy.attempt.started;
                            self.cancel(&mut copies, &mut state.log, &authority, intent, winner);
                            self.finish_log(&mut state.log);
                            state.attach_log(&mut response);
                            return Ok(response);
                        }
                    }
                    let failed_copy = copy.attempt.number;
                    last = (
                        match result {
                            Ok(response) => LastResult::Response(response),
                            Err(error) => LastResult::from(error),
                        },
                        verdict.retry_after,
                    );
                    match step {
                        Step::Win | Step::GiveUp(_) if copies.is_empty() => {
                            let why = match step {
                                Step::GiveUp(why) => why,
                                // Only a response wins, and it was returned above.
                                _ => GiveUpReason::NotRetryable,
                            };
                            self.finish_log(&mut state.log);
                            return Err(state.give_up(policy, why, last.0, last.1));
                        }
                        Step::Win | Step::GiveUp(_) | Step::Wait => {}
                        Step::LaunchNow => {
                            timer = None;
                            let relaunch = self.relaunch(
                                intent,
                                &transport,
                                &mut copies,
                                &mut state,
                                failed_copy,
                                Duration::ZERO,
                                DelayReason::Backoff,
                            );
                            if let Some(error) = relaunch {
                                return Err(self.end(error, &mut state, last));
                            }
                            self.arm_hedge(&authority, &mut timer);
                        }
                        Step::LaunchAfter(delay) => {
                            let hold = Timer::Hold {
                                delay,
                                after: failed_copy,
                            };
                            timer = Some((policy.sleeper.sleep(delay), hold));
                        }
                    }
                }
                Event::Timer => match timer.take().map(|(_, why)| why) {
                    Some(Timer::Hedge(delay)) => {
                        let now = policy.clock.now();
                        let facts = HedgeFacts {
                            in_flight: copies.len() as u32,
                            max_copies,
                            sent: self.sent,
                            max_attempts: policy.settings.max_attempts,
                            remaining: self.deadline.remaining(now),
                            min_attempt_window,
                            held: self.held_until.is_some_and(|until| now < until),
                        };
                        let hedged = self.hedge(intent, &transport, &mut copies, delay, facts);
                        // A refused hedge never makes the intent wait: the
                        // running copies carry on, and no more hedges are tried
                        // until another copy goes out.
                        if hedged {
                            self.arm_hedge(&authority, &mut timer);
                        }
                    }
                    Some(Timer::Hold { delay, after }) => {
                        let relaunch = self.relaunch(
                            intent,
                            &transport,
                            &mut copies,
                            &mut state,
                            after,
                            delay,
                            DelayReason::RetryAfter,
                        );
                        if let Some(error) = relaunch {
                            return Err(self.end(error, &mut state, last));
                        }
                        self.arm_hedge(&authority, &mut timer);
                    }
                    None => {}
                },
            }
            if copies.is_empty() && timer.is_none() {
                // Nothing runs and nothing will: the last failure is the answer.
                self.finish_log(&mut state.log);
                let why = GiveUpReason::AttemptsExhausted;
                return Err(state.give_up(policy, why, last.0, last.1));
            }
        }
    }

    /// Sends copy `attempt`, admitted already, for `cause`.
    fn launch<'t, T: Transport + 't>(
        &mut self,
        intent: &mut Prepared<T>,
        transport: &T,
        copies: &mut Vec<InFlight<'t>>,
        mut attempt: Attempt,
        cause: Option<RetryCause>,
    ) -> Result<(), GiveUpReason> {
        let policy = self.policy;
        // `applies` got a transport that copies: its copies copy too.
        let copied = transport.copy().ok_or(GiveUpReason::NotRetryable)?;
        let span = telemetry::attempt_span(
            &intent.method,
            intent.requests.url(),
            attempt.number,
            attempt.request_id,
            &policy.settings.redact_query_params,
        );
        let request = intent.attempt_request(policy, self.deadline, &mut attempt)?;
        // The race polls its copies as soon as this returns, in the same turn:
        // the transport arms the copy's timer from `attempt.started`.
        let sending = send(copied, request, intent.whole_body).instrument(span.clone());
        self.sent += 1;
        self.latest = (attempt.number, attempt.started);
        copies.push(InFlight {
            attempt,
            cause,
            span,
            sending: Box::pin(sending),
        });
        Ok(())
    }

    /// Starts the hedge timer, when there is a delay (adaptive: an estimate, and
    /// not every request slow; see `hedge/estimator.rs`).
    fn arm_hedge(&self, authority: &str, timer: &mut Option<(Sleep, Timer)>) {
        let now = self.policy.clock.now();
        *timer = match self.hedger.delay(authority, now) {
            Ok(delay) => Some((self.policy.sleeper.sleep(delay), Timer::Hedge(delay))),
            Err(why) => {
                tracing::trace!(?why, "no hedge delay: this copy runs alone");
                None
            }
        };
    }

    /// The hedge delay passed without an answer: sends a hedge if the rules, the
    /// cap and the gates allow it; `true` when one went out.
    fn hedge<'t, T: Transport + 't>(
        &mut self,
        intent: &mut Prepared<T>,
        transport: &T,
        copies: &mut Vec<InFlight<'t>>,
        delay: Duration,
        facts: HedgeFacts,
    ) -> bool {
        if hedge::may_hedge(facts).is_err() {
            return false;
        }
        let policy = self.policy;
        let now = policy.clock.now();
        let number = self.sent + 1;
        if !self.hedger.try_withdraw(now) {
            tracing::debug!(attempt = number, "the hedge cap refused a hedge");
            self.tell(number, HedgeEventKind::RefusedByCap, intent);
            return false;
        }
        if let Err(refusal) = self.admit(intent, number, RetryCause::Hedge, now) {
            self.hedger.give_back(now);
            tracing::debug!(
                attempt = number,
                gate = refusal.gate(),
                "a gate refused a hedge"
            );
            self.tell(number, HedgeEventKind::RefusedByGate, intent);
            return false;
        }
        let attempt = Attempt {
            number,
            started: now,
            request_id: RequestId::generate(),
        };
        let latest = self.latest;
        if self
            .launch(intent, transport, copies, attempt, Some(RetryCause::Hedge))
            .is_err()
        {
            // Admitted, not sent: the gates and the cap get it back.
            self.not_sent(intent, number, RetryCause::Hedge, now);
            self.hedger.give_back(now);
            return false;
        }
        let gap = now.saturating_duration_since(latest.1).max(delay);
        self.notes.push((latest.0, gap, DelayReason::Hedge));
        tracing::info!(
            attempt = number,
            delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            "no answer within the hedge delay; sending a hedge"
        );
        self.tell(number, HedgeEventKind::Sent, intent);
        true
    }

    /// A copy failed transiently: the next one goes now (`delay` after that
    /// failure) if the rules and the gates allow it. `Some`: the intent ends
    /// so, because nothing else runs.
    #[allow(clippy::too_many_arguments)]
    fn relaunch<'t, T: Transport + 't>(
        &mut self,
        intent: &mut Prepared<T>,
        transport: &T,
        copies: &mut Vec<InFlight<'t>>,
        state: &mut LoopState,
        after: u32,
        delay: Duration,
        reason: DelayReason,
    ) -> Option<Ending> {
        let policy = self.policy;
        let now = policy.clock.now();
        let facts = HedgeFacts {
            in_flight: copies.len() as u32,
            max_copies: self.hedger.settings.max_copies,
            sent: self.sent,
            max_attempts: policy.settings.max_attempts,
            remaining: self.deadline.remaining(now),
            min_attempt_window: decision::min_attempt_window(
                intent.attempt_timeout,
                intent.deadline,
            ),
            held: false,
        };
        let alone = copies.is_empty();
        if let Err(no) = hedge::may_hedge(facts) {
            let why = match no {
                hedge::NoHedge::TooLate => GiveUpReason::DeadlineExceeded,
                _ => GiveUpReason::AttemptsExhausted,
            };
            return alone.then_some(Ending::GiveUp(why));
        }
        let number = self.sent + 1;
        if let Err(refusal) = self.admit(intent, number, RetryCause::Transient, now) {
            return alone.then_some(Ending::Refused(refusal));
        }
        let attempt = Attempt {
            number,
            started: now,
            request_id: RequestId::generate(),
        };
        if let Err(why) = self.launch(
            intent,
            transport,
            copies,
            attempt,
            Some(RetryCause::Transient),
        ) {
            self.not_sent(intent, number, RetryCause::Transient, now);
            return alone.then_some(Ending::GiveUp(why));
        }
        self.notes.push((after, delay, reason));
        if let (false, Some(record)) = (self.observers.is_empty(), state.log.last()) {
            self.observers.retry_scheduled(&RetryScheduled {
                intent_id: self.intent_id,
                method: &intent.method,
                url: intent.requests.url(),
                record,
                delay,
                reason,
                cause: RetryCause::Transient,
            });
        }
        None
    }
}

/// Why a race ends without a winner.
enum Ending {
    GiveUp(GiveUpReason),
    Refused(gate::GateRefusal),
}

/// What a copy's end tells the adaptive delay: a final answer its latency, a
/// timeout a lower bound at the ceiling; a transient failure (often answered at
/// once) nothing.
fn observation(
    result: &Result<reqwest::Response, TransportError>,
    transient: bool,
    took: Duration,
) -> Observation {
    match result {
        Ok(_) if !transient => Observation::Answered(took),
        Err(TransportError::Reqwest(error) | TransportError::BodyCut(error))
            if error.is_timeout() =>
        {
            Observation::TimedOut(took)
        }
        _ => Observation::Failed,
    }
}

/// One copy on the wire: the transport's send, then the body when the intent
/// reads it whole.
async fn send<T: Transport>(
    mut transport: T,
    request: reqwest::Request,
    whole_body: Option<u32>,
) -> Result<reqwest::Response, TransportError> {
    let response = transport.send(request).await?;
    match whole_body {
        Some(limit) => whole_body::read(response, limit as usize).await,
        None => Ok(response),
    }
}
