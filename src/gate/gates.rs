//! A policy's gates, in the order they are asked: the user's, then the retry
//! budget. A policy without a budget has no budget gate; nothing else says so.
//!
//! The budget is asked last, so that it is charged only for attempts that happen,
//! and it is asked directly rather than through `dyn Gate`: it is the one gate
//! every default policy has. It counts at admission only, so it is not told how
//! attempts end; a policy with no gate of the user's tells nobody, and builds no
//! scope to do so.

use std::borrow::Cow;
use std::sync::Arc;

use super::authority;
use super::budget::RetryBudget;
use super::contract::{admit_all, cancel_all, refused, tell_all, Gate, GateRefusal, GateScope};
use crate::attempt_log::AttemptOutcome;

/// The gates of one policy, shared by its clones.
#[derive(Clone)]
pub(crate) struct Gates {
    /// The user's gates, in the order they were added.
    user: Vec<Arc<dyn Gate>>,
    budget: Option<RetryBudget>,
    /// Some gate may key its state by authority. When none does (the default
    /// budget keeps one window for the whole client), scopes carry an empty
    /// authority and no attempt spends the work of spelling one.
    by_authority: bool,
}

impl Gates {
    pub(crate) fn new(user: Vec<Arc<dyn Gate>>, budget: Option<RetryBudget>) -> Self {
        // A gate of the user's may read the authority: it always gets it.
        let by_authority = !user.is_empty() || budget.as_ref().is_some_and(|b| b.is_per_host());
        Gates {
            user,
            budget,
            by_authority,
        }
    }

    /// The user's gates, without the budget.
    pub(crate) fn user(&self) -> &[Arc<dyn Gate>] {
        &self.user
    }

    /// The retry budget, when the policy has one.
    pub(crate) fn budget(&self) -> Option<&RetryBudget> {
        self.budget.as_ref()
    }

    /// How many gates are asked.
    pub(crate) fn len(&self) -> usize {
        self.user.len() + usize::from(self.budget.is_some())
    }

    /// What [`GateScope::authority`] says for `url`: its origin, or empty when no
    /// gate keys by it.
    #[inline] // on every attempt: with the default budget, a call for an empty string
    pub(crate) fn authority_of<'u>(&self, url: &'u reqwest::Url) -> Cow<'u, str> {
        if self.by_authority {
            authority::of(url)
        } else {
            Cow::Borrowed("")
        }
    }

    /// Some gate wants to hear how attempts end (see [`tell`](Self::tell)).
    pub(crate) fn hear_outcomes(&self) -> bool {
        !self.user.is_empty()
    }

    /// Asks every gate, in order, until one refuses; the gates that admitted
    /// before the refusal hear that nothing is sent.
    #[inline] // on every attempt: with the default policy, two calls around the budget's
    pub(crate) fn admit(&self, scope: &GateScope<'_>) -> Result<(), GateRefusal> {
        if !self.user.is_empty() {
            admit_all(&self.user, scope)?;
        }
        match &self.budget {
            Some(budget) => budget
                .admit(scope)
                .map_err(|refusal| refused(&self.user, scope, refusal)),
            None => Ok(()),
        }
    }

    /// Every gate admitted the attempt `scope` describes, and it was not sent
    /// after all: each hears it, in reverse order.
    pub(crate) fn not_sent(&self, scope: &GateScope<'_>) {
        if let Some(budget) = &self.budget {
            budget.not_sent(scope);
        }
        for gate in self.user.iter().rev() {
            gate.not_sent(scope);
        }
    }

    /// Tells every gate that listens how an attempt ended.
    pub(crate) fn tell(&self, scope: &GateScope<'_>, outcome: &AttemptOutcome, struggling: bool) {
        tell_all(&self.user, scope, outcome, struggling);
    }

    /// Tells every gate that listens that an attempt was cancelled (a hedge's loser).
    pub(crate) fn cancel(&self, scope: &GateScope<'_>) {
        cancel_all(&self.user, scope);
    }
}
