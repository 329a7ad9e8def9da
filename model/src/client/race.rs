//! The hedged race (`intent/hedged.rs`), one action per await: copies in flight and
//! one timer (the hedge delay, or a `Retry-After` hold); every choice is the crate's
//! `hedge::after_copy`, `hedge::may_hedge` and `decision::after_attempt`.

use std::time::Duration;

use super::rules::{self as model_rules, CopyFacts, CopyStep, Facts, NoCopy};

use super::answer::Answer;
use super::config::{ticks, ticks_ceil};
use super::model::{ended, why, Choice, ClientModel};
use super::state::{Cause, End, InFlight, Seen, State, Timer, Why};

impl ClientModel {
    /// The first copy goes (admitted already), and the hedge delay starts.
    pub(super) fn race_starts(&self, state: &mut State) {
        if self.send(state, Cause::First, 0).is_err() {
            self.end(state, End::GaveUp(Why::DeadlineExceeded));
            return;
        }
        self.arm_hedge(state);
    }

    fn arm_hedge(&self, state: &mut State) {
        let delay = self.config.hedging.map_or(0, |hedging| hedging.delay);
        state.timer = Some(Timer::Hedge {
            at: state.now.saturating_add(delay),
        });
    }

    fn copy_facts(&self, state: &State, held: bool) -> CopyFacts {
        CopyFacts {
            in_flight: state.copies.len() as u32,
            max_copies: self.config.hedging.map_or(1, |hedging| hedging.max_copies),
            sent: u32::from(state.sent),
            max_attempts: self.config.max_attempts,
            remaining: self.remaining(state),
            min_attempt_window: self.config.min_attempt_window(),
            held,
        }
    }

    /// A copy met `answer` (it is off the list already).
    pub(super) fn race_copy_ended(
        &self,
        state: &mut State,
        copy: InFlight,
        answer: Answer,
        choice: Choice,
    ) {
        let config = &self.config;
        let verdict = self.verdict(state.kind, answer);
        self.finished(state, verdict.struggling, choice.trips);
        self.heard(state, answer);
        let (held_until, retry_after) = model_rules::hold(
            state.held_until.map(ticks),
            verdict.retry_after,
            ticks(state.now),
        );
        state.held_until = held_until.map(ticks_ceil);
        let facts = Facts {
            ended: ended(answer, verdict),
            conflict: verdict.conflict,
            attempts_made: u32::from(state.sent),
            max_attempts: config.max_attempts,
            remaining: self.remaining(state),
            retry_after,
            retry_after_ceiling: ticks(config.retry_after_ceiling),
            too_early_again: verdict.too_early && state.too_early_seen,
            conflict_delay: ticks(config.conflict_delay),
            conflict_waits_left: false,
            min_attempt_window: config.min_attempt_window(),
        };
        // No backoff: a hedged intent sends the next copy at once.
        let next = model_rules::after_attempt(facts, Duration::ZERO);
        state.too_early_seen |= verdict.too_early;
        let step = model_rules::after_copy(next, !state.copies.is_empty());
        match step {
            CopyStep::Win if answer.is_response() => {
                if copy.cause == Cause::Hedge {
                    state.ghost.saw(Seen::HedgeWon);
                }
                for _ in 0..state.copies.len() {
                    self.not_sent(state); // cancelled
                }
                self.end(state, End::Delivered);
                return;
            }
            CopyStep::Win | CopyStep::GiveUp(_) if state.copies.is_empty() => {
                let reason = match step {
                    CopyStep::GiveUp(reason) => why(reason),
                    _ => Why::NotRetryable,
                };
                self.end(state, End::GaveUp(reason));
                return;
            }
            CopyStep::Win | CopyStep::GiveUp(_) | CopyStep::Wait => {}
            CopyStep::LaunchNow => {
                state.timer = None;
                if let Some(end) = self.relaunch(state, choice.budget_refuses, false) {
                    self.end(state, end);
                    return;
                }
                self.arm_hedge(state);
            }
            CopyStep::LaunchAfter(delay) => {
                state.timer = Some(Timer::Hold {
                    until: state.now.saturating_add(ticks_ceil(delay)),
                });
            }
        }
        self.nothing_left(state);
    }

    /// Nothing runs and nothing will: the last failure is the answer.
    fn nothing_left(&self, state: &mut State) {
        if state.copies.is_empty() && state.timer.is_none() {
            self.end(state, End::GaveUp(Why::AttemptsExhausted));
        }
    }

    /// A copy failed transiently: the next goes now if the rules and the gates allow
    /// it. `Some`: the intent ends so, because nothing else runs.
    fn relaunch(&self, state: &mut State, budget_refuses: bool, held: bool) -> Option<End> {
        let alone = state.copies.is_empty();
        let facts = self.copy_facts(state, false);
        if let Err(no) = model_rules::may_copy(facts) {
            let reason = match no {
                NoCopy::TooLate => Why::DeadlineExceeded,
                _ => Why::AttemptsExhausted,
            };
            return alone.then_some(End::GaveUp(reason));
        }
        if self
            .admit(state, Cause::Retry, false, budget_refuses)
            .is_err()
        {
            return alone.then_some(End::GaveUp(Why::GateRefused));
        }
        if self.send(state, Cause::Retry, state.now).is_err() {
            self.not_sent(state);
            return alone.then_some(End::GaveUp(Why::DeadlineExceeded));
        }
        if held {
            state.ghost.saw(Seen::RetryAfterRetry);
        }
        None
    }

    /// The hedge delay passed without an answer: a hedge goes if the rules, the cap
    /// and the gates allow it; if none goes, no more are tried until another copy
    /// goes out.
    pub(super) fn hedge_delay_passed(&self, state: &mut State, budget_refuses: bool) {
        if self.hedge(state, budget_refuses) {
            self.arm_hedge(state);
        }
        self.nothing_left(state);
    }

    fn hedge(&self, state: &mut State, budget_refuses: bool) -> bool {
        let held = state.held_until.is_some_and(|until| state.now < until);
        let facts = self.copy_facts(state, held);
        if model_rules::may_copy(facts).is_err() {
            return false;
        }
        if state.cap_left == 0 {
            return false;
        }
        state.cap_left -= 1;
        if self
            .admit(state, Cause::Hedge, false, budget_refuses)
            .is_err()
        {
            state.cap_left += 1;
            return false;
        }
        if self.send(state, Cause::Hedge, state.now).is_err() {
            self.not_sent(state);
            state.cap_left += 1;
            return false;
        }
        state.ghost.saw(Seen::HedgeFired);
        true
    }

    /// A `Retry-After` hold is over: the next copy goes if it may.
    pub(super) fn hold_over(&self, state: &mut State, budget_refuses: bool) {
        if let Some(end) = self.relaunch(state, budget_refuses, true) {
            self.end(state, end);
            return;
        }
        self.arm_hedge(state);
        self.nothing_left(state);
    }
}
