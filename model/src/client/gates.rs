//! The gates in front of the attempts: the circuit breaker (the crate's own
//! `gate::breaker::phases::step`) and the retry budget (other intents may have drained it:
//! a choice of the model), and what other intents do to the breaker meanwhile.

use super::rules::{self as model_rules, BreakerEvent, BreakerPhase};

use super::config::ticks;
use super::model::ClientModel;
use super::state::{Broken, Cause, Seen, State};

/// What another intent does to the breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Other {
    /// Its failure trips the closed circuit.
    Trips,
    /// It is admitted as a probe (an open circuit past its break, or half-open).
    Probes,
    /// Its attempt ends while the circuit is half-open.
    Ends {
        /// It failed.
        failed: bool,
    },
}

impl ClientModel {
    /// What other intents may do to the breaker now.
    pub(super) fn others(&self, state: &State, out: &mut Vec<Other>) {
        if self.config.breaker.is_none() || state.breaker_events_left == 0 {
            return;
        }
        match state.breaker {
            BreakerPhase::Closed => out.push(Other::Trips),
            BreakerPhase::Open { .. } => out.push(Other::Probes),
            BreakerPhase::HalfOpen { .. } => {
                out.extend([
                    Other::Probes,
                    Other::Ends { failed: false },
                    Other::Ends { failed: true },
                ]);
            }
        }
    }

    /// Another intent acts on the breaker.
    pub(super) fn other(&self, state: &mut State, other: Other) {
        state.breaker_events_left -= 1;
        let event = match other {
            Other::Trips => BreakerEvent::Finished {
                failed: true,
                tripped: true,
            },
            Other::Probes => BreakerEvent::Admit,
            Other::Ends { failed } => BreakerEvent::Finished {
                failed,
                tripped: false,
            },
        };
        self.breaker(state, event);
    }

    fn breaker(&self, state: &mut State, event: BreakerEvent) -> Option<Result<(), ()>> {
        let rules = self.config.breaker?;
        let (phase, verdict) =
            model_rules::breaker_step(state.breaker, event, ticks(state.now), rules);
        state.breaker = phase;
        verdict.map(|verdict| verdict.map_err(|_| ()))
    }

    /// Asks the gates about an attempt for `cause` (the breaker first, then the
    /// budget, as a policy orders a gate added to its default budget); a gate that
    /// admitted hears `not_sent` when a later one refuses. `budget_refuses`: the
    /// model's choice for the budget (it never refuses a first attempt, nor a 409's
    /// wait, which it does not charge).
    pub(super) fn admit(
        &self,
        state: &mut State,
        cause: Cause,
        conflict: bool,
        budget_refuses: bool,
    ) -> Result<(), ()> {
        let before = state.breaker;
        let event = if cause == Cause::Hedge {
            BreakerEvent::AdmitHedge
        } else {
            BreakerEvent::Admit
        };
        if let Some(verdict) = self.breaker(state, event) {
            verdict?;
            let now = ticks(state.now);
            let open = matches!(before, BreakerPhase::Open { until } if now < until);
            if open || (cause == Cause::Hedge && before != BreakerPhase::Closed) {
                state.ghost.broke(Broken::AdmittedWhileOpen);
            }
            if matches!(before, BreakerPhase::Open { .. }) {
                state.ghost.saw(Seen::Probe);
            }
        }
        let charged = cause != Cause::First && !conflict;
        if self.config.budget && charged && budget_refuses {
            self.not_sent(state);
            return Err(());
        }
        Ok(())
    }

    /// An admitted attempt was not sent after all, or was cancelled.
    pub(super) fn not_sent(&self, state: &mut State) {
        self.breaker(state, BreakerEvent::NotSent);
    }

    /// An attempt ended; `struggling`: the breaker counts it as a failure, and
    /// `trips` (the model's choice) says whether the window's failures reach the
    /// ratio.
    pub(super) fn finished(&self, state: &mut State, struggling: bool, trips: bool) {
        self.breaker(
            state,
            BreakerEvent::Finished {
                failed: struggling,
                tripped: trips,
            },
        );
    }
}
