//! The steps a run may take from each state: one action per await point of the
//! loop (and of the world around it), as a Stateright [`Model`].

use super::rules::{self as model_rules, BreakerPhase};
use stateright::{Model, Property};

use super::answer::Answer;
use super::config::ticks;
use super::gates::Other;
use super::model::{Choice, ClientModel};
use super::state::{End, Ghost, Seen, Stage, State, Timer, Why};

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
                state.ghost.saw(Seen::WriteAheadRefused);
                let why = if action == Action::WriteAheadRefused {
                    Why::WriteAheadRefused
                } else {
                    Why::DeadlineExceeded
                };
                self.end(&mut state, End::GaveUp(why));
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
