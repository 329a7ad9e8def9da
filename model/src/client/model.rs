//! The client model as a Stateright [`Model`]: the actions one intent's loop may
//! take from each await point, and the clock.

use std::collections::HashMap;
use std::time::Duration;

use reqwest_resilience::model_rules::{self, BreakerPhase, Verdict};
use stateright::{Model, Property};

use super::answer::Answer;
use super::config::{ticks, Config, IntentKind};
use super::gates::Other;
use super::state::{Broken, Cause, End, Ghost, Stage, State, Timer, Why};

/// The client model: one configuration, with the crate's classification of every
/// answer it may meet computed once.
#[derive(Debug)]
pub struct ClientModel {
    /// What is checked.
    pub config: Config,
    verdicts: HashMap<(IntentKind, Answer), Verdict>,
}

/// The model's choices that the gates and the backoff make on an attempt's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Choice {
    /// The backoff draws the top of its jitter range (else the bottom).
    pub high: bool,
    /// The breaker's window reaches its failure ratio with this failure.
    pub trips: bool,
    /// The retry budget refuses the retry.
    pub budget_refuses: bool,
}

/// One step of the loop, or of the world around it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Step 2: the gates are asked about the first attempt.
    Admit,
    /// The write-ahead wrote the intent down.
    WriteAheadDone,
    /// The write-ahead refused the intent.
    WriteAheadRefused,
    /// The write-ahead was still running at the deadline.
    WriteAheadOutOfTime,
    /// Copy `copy` (its index in the sorted list) met `answer`.
    End {
        /// Which copy.
        copy: usize,
        /// What it met.
        answer: Answer,
        /// The gates' and the backoff's choices.
        choice: Choice,
    },
    /// The timer fired (a pause ended, the hedge delay or a hold passed).
    Timer {
        /// The retry budget refuses what the timer sends.
        budget_refuses: bool,
    },
    /// One tick passes.
    Tick,
    /// Another intent acts on the breaker.
    Other(Other),
}

impl ClientModel {
    /// The model of `config`.
    pub fn new(config: Config) -> Self {
        let mut verdicts = HashMap::new();
        for &kind in &config.kinds {
            for answer in config.answers.iter().copied().chain([Answer::TimedOut]) {
                verdicts.insert((kind, answer), answer.classify(kind, config.mutations));
            }
        }
        ClientModel { config, verdicts }
    }

    /// The crate's classification of `answer` for `kind`.
    pub(super) fn verdict(&self, kind: IntentKind, answer: Answer) -> Verdict {
        self.verdicts[&(kind, answer)]
    }

    /// Time left at the current tick.
    pub(super) fn remaining(&self, state: &State) -> Option<Duration> {
        model_rules::remaining(Some(self.config.deadline()), ticks(state.now))
    }

    fn choices(&self, state: &State) -> Vec<Choice> {
        let highs: &[bool] = if self.config.hedging.is_some() {
            &[false]
        } else {
            &[false, true]
        };
        let closed = self.config.breaker.is_some() && state.breaker == BreakerPhase::Closed;
        let trips: &[bool] = if closed { &[false, true] } else { &[false] };
        let budget: &[bool] = if self.config.budget {
            &[false, true]
        } else {
            &[false]
        };
        let mut out = Vec::new();
        for &high in highs {
            for &trips in trips {
                for &budget_refuses in budget {
                    out.push(Choice {
                        high,
                        trips,
                        budget_refuses,
                    });
                }
            }
        }
        out
    }

    /// The intent ends.
    pub(super) fn end(&self, state: &mut State, end: End) {
        if end == End::GaveUp(Why::DeadlineExceeded) {
            state.ghost.saw(super::state::Seen::DeadlineGiveUp);
        }
        state.copies.clear();
        state.timer = None;
        state.stage = Stage::Done(end);
    }

    /// Sends an attempt (or a copy) for `cause`, already admitted: the attempt's
    /// timeout is cut to the time left at `timed_from` (the tick its `Attempt`
    /// says it started); a zero timeout means no attempt starts (`Err`).
    pub(super) fn send(&self, state: &mut State, cause: Cause, timed_from: u8) -> Result<(), ()> {
        let config = &self.config;
        let timeout = model_rules::attempt_timeout(
            Some(config.deadline()),
            ticks(timed_from),
            config.attempt_timeout(),
            config.mutations,
        );
        if timeout == Some(Duration::ZERO) {
            return Err(());
        }
        let now = state.now;
        let timeout_at = now.saturating_add(timeout.map_or(u8::MAX, super::config::ticks_ceil));
        let ghost = &mut state.ghost;
        if ghost.refused {
            ghost.broke(Broken::SentAfterRefusal);
        }
        if now < ghost.not_before {
            ghost.broke(Broken::EarlierThanRetryAfter);
        }
        if now >= config.deadline {
            ghost.broke(Broken::AttemptAfterDeadline);
        }
        if timeout_at > config.deadline {
            ghost.broke(Broken::AttemptOutlivesDeadline);
        }
        if state.kind.post && !state.kind.keyed && ghost.may_have_applied {
            ghost.broke(Broken::UnkeyedPostRetried);
        }
        let reuse = config.loop_mutation == Some(super::config::LoopMutation::ReuseRequestId);
        let id = if reuse && state.sent > 0 {
            state.sent - 1
        } else {
            state.sent
        };
        if ghost.request_ids & (1 << id) != 0 {
            ghost.broke(Broken::KeyOrRequestId);
        }
        ghost.request_ids |= 1 << id;
        let left = model_rules::remaining(Some(config.deadline()), ticks(now));
        let hedged = config.hedging.is_some();
        if hedged && cause != Cause::First && left < Some(config.min_attempt_window()) {
            ghost.broke(Broken::CopyTooLate);
        }
        if let Some(hedging) = config.hedging {
            let in_flight = state.copies.len() as u32 + 1;
            if in_flight > hedging.max_copies || u32::from(state.sent) + 1 > config.max_attempts {
                ghost.broke(Broken::CopiesOverCap);
            }
        }
        state.sent += 1;
        state.copies.push(super::state::InFlight {
            sent_at: now,
            timeout_at,
            cause,
        });
        state.copies.sort();
        Ok(())
    }

    /// May the clock move on? Not past a copy's timeout, nor past the write-ahead's
    /// deadline; a timer may fire late, up to the horizon.
    fn may_tick(&self, state: &State) -> bool {
        let now = state.now;
        match state.stage {
            Stage::Start | Stage::Done(_) => false,
            Stage::WriteAhead => now < self.config.deadline,
            Stage::Attempts => {
                if state.copies.iter().any(|copy| now >= copy.timeout_at) {
                    return false;
                }
                if !state.copies.is_empty() {
                    return true;
                }
                match state.timer {
                    Some(timer) => now < timer.due() || now < self.config.horizon(),
                    None => false,
                }
            }
        }
    }
}

impl Model for ClientModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let config = &self.config;
        let conflict_waits =
            model_rules::conflict_wait_limit(Some(config.deadline()), ticks(config.conflict_delay));
        config
            .kinds
            .iter()
            .map(|&kind| State {
                kind,
                now: 0,
                stage: Stage::Start,
                copies: Vec::new(),
                timer: None,
                sent: 0,
                conflicts_waited_out: 0,
                conflict_waits_left: u8::try_from(conflict_waits).unwrap_or(u8::MAX),
                too_early_seen: false,
                breaker: BreakerPhase::Closed,
                breaker_events_left: config.breaker_events,
                cap_left: config.hedging.map_or(0, |hedging| hedging.cap),
                held_until: None,
                ghost: Ghost::default(),
            })
            .collect()
    }

    fn actions(&self, state: &State, actions: &mut Vec<Action>) {
        match state.stage {
            Stage::Done(_) => return,
            Stage::Start => actions.push(Action::Admit),
            Stage::WriteAhead => {
                actions.extend([Action::WriteAheadDone, Action::WriteAheadRefused]);
                if state.now >= self.config.deadline {
                    actions.push(Action::WriteAheadOutOfTime);
                }
            }
            Stage::Attempts => {
                let choices = self.choices(state);
                for (index, copy) in state.copies.iter().enumerate() {
                    if index > 0 && state.copies[index - 1] == *copy {
                        continue; // the same copy again: the same next states
                    }
                    let answers: &[Answer] = if state.now >= copy.timeout_at {
                        &[Answer::TimedOut]
                    } else {
                        &self.config.answers
                    };
                    for &answer in answers {
                        for &choice in &choices {
                            actions.push(Action::End {
                                copy: index,
                                answer,
                                choice,
                            });
                        }
                    }
                }
                if state.timer.is_some_and(|timer| timer.due() <= state.now) {
                    actions.push(Action::Timer {
                        budget_refuses: false,
                    });
                    if self.config.budget {
                        actions.push(Action::Timer {
                            budget_refuses: true,
                        });
                    }
                }
            }
        }
        if self.may_tick(state) {
            actions.push(Action::Tick);
        }
        let mut others = Vec::new();
        self.others(state, &mut others);
        actions.extend(others.into_iter().map(Action::Other));
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut state = last.clone();
        match action {
            Action::Admit => self.first_attempt(&mut state),
            Action::WriteAheadDone => self.written_ahead(&mut state),
            Action::WriteAheadRefused | Action::WriteAheadOutOfTime => {
                state.ghost.refused = true;
                state.ghost.saw(super::state::Seen::WriteAheadRefused);
                let why = if action == Action::WriteAheadRefused {
                    Why::WriteAheadRefused
                } else {
                    Why::DeadlineExceeded
                };
                self.end(&mut state, End::GaveUp(why));
                if self.config.loop_mutation
                    == Some(super::config::LoopMutation::SendDespiteRefusal)
                {
                    state.stage = Stage::Attempts;
                    let now = state.now;
                    let _ = self.send(&mut state, Cause::First, now);
                }
            }
            Action::End {
                copy,
                answer,
                choice,
            } => {
                let copy = state.copies.remove(copy);
                if self.config.hedging.is_some() {
                    self.race_copy_ended(&mut state, copy, answer, choice);
                } else {
                    self.attempt_ended(&mut state, answer, choice);
                }
            }
            Action::Timer { budget_refuses } => {
                let timer = state.timer.take()?;
                match timer {
                    Timer::Pause { retry_after, .. } => self.pause_over(&mut state, retry_after),
                    Timer::Hedge { .. } => self.hedge_delay_passed(&mut state, budget_refuses),
                    Timer::Hold { .. } => self.hold_over(&mut state, budget_refuses),
                }
            }
            Action::Tick => state.now += 1,
            Action::Other(other) => self.other(&mut state, other),
        }
        Some(state)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        super::properties::of(self)
    }
}

/// How a copy's end reads to the decision: a response, or a failure.
pub(super) fn ended(answer: Answer, verdict: Verdict) -> model_rules::Ended {
    if answer.is_response() {
        model_rules::Ended::Response {
            retry: verdict.retry,
        }
    } else {
        model_rules::Ended::Failed {
            retry: verdict.retry,
        }
    }
}

/// The crate's give-up reason, as the model names it.
pub(super) fn why(reason: reqwest_resilience::GiveUpReason) -> Why {
    use reqwest_resilience::GiveUpReason as R;
    match reason {
        R::AttemptsExhausted => Why::AttemptsExhausted,
        R::DeadlineExceeded => Why::DeadlineExceeded,
        R::RetryAfterBeyondCeiling => Why::RetryAfterBeyondCeiling,
        R::RetryAfterBeyondDeadline => Why::RetryAfterBeyondDeadline,
        R::NotRetryable => Why::NotRetryable,
        R::GateRefused | R::BudgetExhausted => Why::GateRefused,
        R::WriteAheadRefused => Why::WriteAheadRefused,
        _ => Why::Other,
    }
}
