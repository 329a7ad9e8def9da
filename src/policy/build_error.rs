//! What [`RetryPolicyBuilder::build`](super::RetryPolicyBuilder::build) rejects,
//! and the checks it shares.

use std::time::Duration;

use http::header::HeaderName;

use super::settings::MAX_BACKOFF_DELAY;
use crate::backoff::Backoff;

pub(super) fn validate_backoff(backoff: Backoff) -> Result<(), BuildError> {
    match backoff {
        Backoff::FullJitter { base, cap } | Backoff::DecorrelatedJitter { base, cap } => {
            if base.is_zero() {
                return Err(BuildError::ZeroBackoffBase);
            }
            if base > cap {
                return Err(BuildError::BackoffBaseAboveCap { base, cap });
            }
            if cap > MAX_BACKOFF_DELAY {
                return Err(BuildError::BackoffTooLong(cap));
            }
        }
        Backoff::Constant(delay) if delay > MAX_BACKOFF_DELAY => {
            return Err(BuildError::BackoffTooLong(delay));
        }
        Backoff::Constant(_) => {}
    }
    Ok(())
}

pub(super) fn header_name(setting: &'static str, name: &str) -> Result<HeaderName, BuildError> {
    if name.trim().is_empty() {
        return Err(BuildError::EmptyHeaderName(setting));
    }
    HeaderName::from_bytes(name.as_bytes()).map_err(|_| BuildError::InvalidHeaderName {
        setting,
        name: name.to_owned(),
    })
}

/// A setting that makes no sense, found by [`RetryPolicyBuilder::build`](crate::RetryPolicyBuilder::build).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// `max_attempts` must be 1–50.
    #[error("max_attempts must be between 1 and 50, got {0}")]
    MaxAttempts(u32),
    /// A jittered backoff needs a base above zero.
    #[error("backoff base must be greater than zero")]
    ZeroBackoffBase,
    /// The backoff base is larger than its cap.
    #[error("backoff base {base:?} is larger than its cap {cap:?}")]
    BackoffBaseAboveCap {
        /// The base.
        base: Duration,
        /// The cap.
        cap: Duration,
    },
    /// A backoff delay above one hour.
    #[error("backoff delay {0:?} is longer than one hour")]
    BackoffTooLong(Duration),
    /// `retry_after_ceiling` above one hour (an intent must never sleep for ages).
    #[error("retry_after_ceiling {0:?} is longer than one hour")]
    RetryAfterCeilingTooLong(Duration),
    /// `conflict_delay` above one hour.
    #[error("conflict_delay {0:?} is longer than one hour")]
    ConflictDelayTooLong(Duration),
    /// `deadline` is zero.
    #[error("deadline must be greater than zero (use no_deadline() for none)")]
    ZeroDeadline,
    /// `attempt_timeout` is zero.
    #[error("attempt_timeout must be greater than zero (use no_attempt_timeout() for none)")]
    ZeroAttemptTimeout,
    /// One attempt may not take longer than the whole intent.
    #[error("attempt_timeout {attempt_timeout:?} is longer than the deadline {deadline:?}")]
    AttemptTimeoutExceedsDeadline {
        /// The attempt timeout.
        attempt_timeout: Duration,
        /// The deadline.
        deadline: Duration,
    },
    /// A header name setting is empty.
    #[error("{0} must not be empty")]
    EmptyHeaderName(&'static str),
    /// A header name setting is not a valid header name.
    #[error("{setting} {name:?} is not a valid header name")]
    InvalidHeaderName {
        /// Which setting.
        setting: &'static str,
        /// The rejected name.
        name: String,
    },
    /// The key and the request id would overwrite each other.
    #[error("key_header and request_id_header are both {0:?}")]
    SameHeaderNames(String),
    /// A [`Hedging`](crate::Hedging) setting makes no sense.
    #[error("{setting} {problem}")]
    Hedging {
        /// Which setting (`hedging.max_copies`, `hedging.percentile`…).
        setting: &'static str,
        /// What is wrong with it.
        problem: String,
    },
}
