//! Per-intent overrides: the caller's idempotency key and the deadline.

use std::time::Duration;

use crate::error::Error;
use crate::idempotency::{IdempotencyKey, KeyChoice};
use crate::policy::PolicyInner;

/// Per-intent overrides of the policy: the caller's key (or none) and the deadline.
///
/// [`RequestBuilder`](crate::RequestBuilder) keeps one behind its
/// `idempotency_key`/`deadline` setters; with the `middleware` feature, attach one to a
/// request with `reqwest_middleware::RequestBuilder::with_extension`.
#[derive(Debug, Clone)]
pub struct IntentOptions {
    key: KeyChoice,
    deadline: Option<Option<Duration>>,
}

impl IntentOptions {
    /// No overrides: the policy decides.
    pub fn new() -> Self {
        Self {
            key: KeyChoice::Policy,
            deadline: None,
        }
    }

    /// The caller's own idempotency key, sent verbatim on every attempt.
    pub fn idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.key = KeyChoice::Caller(IdempotencyKey::new(key));
        self
    }

    /// No idempotency key (POST/PATCH are then retried only when never sent).
    pub fn without_idempotency_key(mut self) -> Self {
        self.key = KeyChoice::Off;
        self
    }

    /// This intent's deadline instead of the policy's.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = Some(Some(deadline));
        self
    }

    /// No deadline for this intent.
    pub fn no_deadline(mut self) -> Self {
        self.deadline = Some(None);
        self
    }

    /// The intent's key, decided once before the first attempt, and its deadline.
    pub(crate) fn resolve(
        self,
        policy: &PolicyInner,
        request: &reqwest::Request,
    ) -> Result<(Option<IdempotencyKey>, Option<Duration>), Error> {
        let key = self.key.resolve(policy, request)?;
        Ok((key, self.deadline.unwrap_or(policy.deadline)))
    }
}

impl Default for IntentOptions {
    fn default() -> Self {
        Self::new()
    }
}
