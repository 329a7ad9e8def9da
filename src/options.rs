//! Per-intent overrides: the caller's idempotency key, the deadline, observers,
//! the write-ahead.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::error::Error;
use crate::idempotency::{IdempotencyKey, InvalidKey};
use crate::observer::IntentObserver;
use crate::policy::{PolicyInner, RetryPolicy};
use crate::write_ahead::WriteAhead;

/// Per-intent overrides of the policy: the caller's key (or none), the deadline,
/// observers of this intent only, and its write-ahead.
///
/// [`RequestBuilder`](crate::RequestBuilder) keeps one behind its
/// `idempotency_key`/`deadline`/`observer`/`write_ahead` setters; with the `middleware` feature,
/// attach one to a request with `reqwest_middleware::RequestBuilder::with_extension`.
#[derive(Clone)]
pub struct IntentOptions {
    key: KeyChoice,
    deadline: Option<Option<Duration>>,
    observers: Vec<Arc<dyn IntentObserver>>,
    write_ahead: Option<Arc<dyn WriteAhead>>,
    policy: Option<RetryPolicy>,
    whole_body: Option<usize>,
}

/// An intent's options, decided once before the first attempt.
pub(crate) struct Resolved {
    pub(crate) key: Option<IdempotencyKey>,
    pub(crate) deadline: Option<Duration>,
    pub(crate) observers: Vec<Arc<dyn IntentObserver>>,
    /// The request's own, else the policy's.
    pub(crate) write_ahead: Option<Arc<dyn WriteAhead>>,
    /// Read the response's body inside the intent, at most this many bytes.
    pub(crate) whole_body: Option<usize>,
}

impl IntentOptions {
    /// No overrides: the policy decides.
    pub fn new() -> Self {
        Self {
            key: KeyChoice::Policy,
            deadline: None,
            observers: Vec::new(),
            write_ahead: None,
            policy: None,
            whole_body: None,
        }
    }

    /// Runs this intent under `policy` instead of the client's (or middleware's).
    /// Derive it from that one with [`RetryPolicy::to_builder`] to keep its budget,
    /// gates and observers: `client.policy().to_builder().max_attempts(6).build()?`.
    /// The connection pool is the client's either way.
    pub fn policy(mut self, policy: RetryPolicy) -> Self {
        self.policy = Some(policy);
        self
    }

    /// The policy this intent runs under: its own, if one was set, else `default`.
    pub(crate) fn take_policy(&mut self, default: &RetryPolicy) -> Arc<PolicyInner> {
        self.policy.take().unwrap_or_else(|| default.clone()).inner
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

    /// Adds an observer of this intent only, told after the policy's observers.
    pub fn observer(mut self, observer: Arc<dyn IntentObserver>) -> Self {
        self.observers.push(observer);
        self
    }

    /// This intent's [`WriteAhead`] (e.g. writing it to a journal), instead of
    /// the policy's: an intent has at most one, and a second call replaces the
    /// first.
    pub fn write_ahead(mut self, write_ahead: Arc<dyn WriteAhead>) -> Self {
        self.write_ahead = Some(write_ahead);
        self
    }

    /// Reads the response's whole body inside the intent, at most `limit` bytes
    /// ([`DEFAULT_WHOLE_BODY_LIMIT`](crate::DEFAULT_WHOLE_BODY_LIMIT) is the server
    /// layer's stored-body limit): see
    /// [`RequestBuilder::whole_body`](crate::RequestBuilder::whole_body). Not in the
    /// browser and node, where `fetch`'s response cannot be rebuilt around a body
    /// read in advance.
    #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
    pub fn whole_body(mut self, limit: usize) -> Self {
        self.whole_body = Some(limit);
        self
    }

    /// The intent's key, decided once before the first attempt, its deadline and
    /// its own observers.
    pub(crate) fn resolve(
        self,
        policy: &PolicyInner,
        request: &reqwest::Request,
    ) -> Result<Resolved, Error> {
        Ok(Resolved {
            key: self.key.resolve(policy, request)?,
            deadline: self.deadline.unwrap_or(policy.settings.deadline),
            observers: self.observers,
            write_ahead: self.write_ahead.or_else(|| policy.write_ahead.clone()),
            whole_body: self.whole_body,
        })
    }
}

impl fmt::Debug for IntentOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IntentOptions")
            .field("key", &self.key)
            .field("deadline", &self.deadline)
            .field("observers", &self.observers.len())
            .field("write_ahead", &self.write_ahead.is_some())
            .field("policy", &self.policy)
            .field("whole_body", &self.whole_body)
            .finish()
    }
}

impl Default for IntentOptions {
    fn default() -> Self {
        Self::new()
    }
}

/// Where an intent's key comes from.
#[derive(Debug, Clone)]
enum KeyChoice {
    /// The caller's header if set by hand, else generated if the policy says so
    /// for this method.
    Policy,
    Caller(Result<IdempotencyKey, InvalidKey>),
    Off,
}

impl KeyChoice {
    /// The intent's key, decided once before the first attempt.
    fn resolve(
        self,
        policy: &PolicyInner,
        request: &reqwest::Request,
    ) -> Result<Option<IdempotencyKey>, Error> {
        match self {
            Self::Caller(key) => key.map(Some).map_err(Error::invalid_key),
            Self::Off => Ok(None),
            Self::Policy => match request.headers().get(&policy.key_header) {
                // A key header set by hand is the caller's key.
                Some(value) => {
                    IdempotencyKey::from_header(value.as_bytes(), policy.settings.key_format)
                        .map(Some)
                        .map_err(Error::invalid_key)
                }
                None if policy.generates_key_for(request.method()) => {
                    Ok(Some(IdempotencyKey::generate()))
                }
                None => Ok(None),
            },
        }
    }
}
