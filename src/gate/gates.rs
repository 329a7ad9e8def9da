//! A policy's gates, in the order they are asked: the user's, then the retry
//! budget. A policy without a budget has no budget gate; nothing else says so.

use std::borrow::Cow;
use std::ops::Deref;
use std::sync::Arc;

use super::{authority, Gate, RetryBudget};

/// The gates of one policy, shared by its clones.
#[derive(Clone)]
pub(crate) struct Gates {
    /// The user's gates, then the budget (asked last, so that it is charged only
    /// for attempts that happen).
    asked: Vec<Arc<dyn Gate>>,
    /// The user's gates, as given (for `RetryPolicy::to_builder`).
    user: Vec<Arc<dyn Gate>>,
    budget: Option<RetryBudget>,
    /// Some gate may key its state by authority. When none does (the default
    /// budget keeps one window for the whole client), scopes carry an empty
    /// authority and no attempt spends the work of spelling one.
    by_authority: bool,
}

impl Gates {
    pub(crate) fn new(user: Vec<Arc<dyn Gate>>, budget: Option<RetryBudget>) -> Self {
        let mut asked = user.clone();
        asked.extend(budget.iter().map(|b| Arc::new(b.clone()) as Arc<dyn Gate>));
        // A gate of the user's may read the authority: it always gets it.
        let by_authority = !user.is_empty() || budget.as_ref().is_some_and(|b| b.is_per_host());
        Gates {
            asked,
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

    /// What [`GateScope::authority`](super::GateScope::authority) says for `url`:
    /// its origin, or empty when no gate keys by it.
    pub(crate) fn authority_of<'u>(&self, url: &'u reqwest::Url) -> Cow<'u, str> {
        if self.by_authority {
            authority::of(url)
        } else {
            Cow::Borrowed("")
        }
    }
}

impl Deref for Gates {
    type Target = [Arc<dyn Gate>];

    fn deref(&self) -> &Self::Target {
        &self.asked
    }
}
