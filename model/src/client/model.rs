//! The client model: its configuration with the crate's verdict on every answer,
//! and what every step shares (a send, the end of the intent).

use std::collections::HashMap;
use std::time::Duration;

use super::rules::{self as model_rules, Verdict};

use super::answer::Answer;
use super::config::{ticks, Config};
use super::intent::IntentKind;
use super::state::{Broken, Cause, End, Stage, State, Why};

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

impl ClientModel {
    /// The model of `config`.
    pub fn new(config: Config) -> Self {
        let mut verdicts = HashMap::new();
        for &kind in &config.kinds {
            for answer in config.answers.iter().copied().chain([Answer::TimedOut]) {
                verdicts.insert((kind, answer), answer.classify(kind));
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
        let id = state.sent;
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
