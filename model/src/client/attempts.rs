//! The attempt loop without hedging (`intent.rs`: steps 2–7), one action per await:
//! admission and the write-ahead, then send → end → decide → admit the retry →
//! pause, until a result.

use super::rules::{self as model_rules, After, Facts};

use super::answer::Answer;
use super::config::{ticks, ticks_ceil};
use super::model::{ended, why, Choice, ClientModel};
use super::state::{Broken, Cause, End, Seen, Stage, State, Timer, Why};

impl ClientModel {
    /// Step 2: the gates on the first attempt, then the write-ahead, or the first
    /// attempt at once.
    pub(super) fn first_attempt(&self, state: &mut State) {
        if self.admit(state, Cause::First, false, false).is_err() {
            // Nothing was sent, and the write-ahead was never asked.
            self.end(state, End::GaveUp(Why::GateRefused));
            return;
        }
        if state.kind.write_ahead {
            state.stage = Stage::WriteAhead;
            return;
        }
        state.stage = Stage::Attempts;
        if self.config.hedging.is_some() {
            self.race_starts(state);
        } else {
            self.send_or_end(state, Cause::First, 0);
        }
    }

    /// Step 3 done: the write-ahead wrote the intent down; the first attempt goes.
    pub(super) fn written_ahead(&self, state: &mut State) {
        state.stage = Stage::Attempts;
        // The loop's first `Attempt` says it started at `send()`.
        let from = if self.config.first_attempt_from_send {
            0
        } else {
            state.now
        };
        self.send_or_end(state, Cause::First, from);
    }

    /// Step 4: the attempt goes, or the intent ends with no time left for it.
    fn send_or_end(&self, state: &mut State, cause: Cause, timed_from: u8) {
        if self.send(state, cause, timed_from).is_err() {
            self.end(state, End::GaveUp(Why::DeadlineExceeded));
        }
    }

    /// Steps 5–7: the attempt met `answer`: classify, tell the breaker, decide
    /// (`decision::after_attempt`), admit the retry, pause.
    pub(super) fn attempt_ended(&self, state: &mut State, answer: Answer, choice: Choice) {
        let config = &self.config;
        let verdict = self.verdict(state.kind, answer);
        self.finished(state, verdict.struggling, choice.trips);
        self.heard(state, answer);
        let facts = Facts {
            ended: ended(answer, verdict),
            conflict: verdict.conflict,
            attempts_made: u32::from(state.sent - state.conflicts_waited_out),
            max_attempts: config.max_attempts,
            remaining: self.remaining(state),
            retry_after: verdict.retry_after,
            retry_after_ceiling: ticks(config.retry_after_ceiling),
            too_early_again: verdict.too_early && state.too_early_seen,
            conflict_delay: ticks(config.conflict_delay),
            conflict_waits_left: state.conflict_waits_left > 0,
            min_attempt_window: config.min_attempt_window(),
        };
        let backoff = model_rules::backoff_delay(
            config.backoff,
            u32::from(state.sent) - 1,
            None,
            choice.high,
        );
        let next = model_rules::after_attempt(facts, backoff);
        state.too_early_seen |= verdict.too_early;
        if model_rules::waits_out(facts) {
            state.conflicts_waited_out += 1;
            state.conflict_waits_left -= 1;
            state.ghost.saw(Seen::ConflictWaitedOut);
        }
        match next {
            After::Deliver => self.end(state, End::Delivered),
            After::GiveUp(reason) => self.end(state, End::GaveUp(why(reason))),
            After::Pause {
                delay,
                retry_after,
                conflict,
            } => {
                if self
                    .admit(state, Cause::Retry, conflict, choice.budget_refuses)
                    .is_err()
                {
                    self.end(state, End::GaveUp(Why::GateRefused));
                    return;
                }
                if self.remaining(state).is_some_and(|left| delay >= left) {
                    state.ghost.broke(Broken::PausePastDeadline);
                }
                state.timer = Some(Timer::Pause {
                    until: state.now.saturating_add(ticks_ceil(delay)),
                    retry_after,
                });
            }
        }
    }

    /// The pause is over: the next attempt, timed from now.
    pub(super) fn pause_over(&self, state: &mut State, retry_after: bool) {
        let sent = state.sent;
        self.send_or_end(state, Cause::Retry, state.now);
        if retry_after && state.sent > sent {
            state.ghost.saw(Seen::RetryAfterRetry);
        }
    }

    /// What the properties learn from an answer: when the server allows the next
    /// attempt, and whether an unkeyed POST may have been processed.
    pub(super) fn heard(&self, state: &mut State, answer: Answer) {
        if let Some(seconds) = answer.retry_after() {
            let allowed = state.now.saturating_add(ticks_ceil(ticks(seconds)));
            state.ghost.not_before = state.ghost.not_before.max(allowed);
        }
        if !answer.proves_unprocessed() {
            state.ghost.may_have_applied = true;
        }
    }
}
