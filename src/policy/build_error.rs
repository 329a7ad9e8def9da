//! What [`RetryPolicyBuilder::build`](super::RetryPolicyBuilder::build) rejects,
//! and the checks it shares.

use std::fmt;
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
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum BuildError {
    /// `max_attempts` must be 1–50.
    MaxAttempts(u32),
    /// A jittered backoff needs a base above zero.
    ZeroBackoffBase,
    /// The backoff base is larger than its cap.
    BackoffBaseAboveCap {
        /// The base.
        base: Duration,
        /// The cap.
        cap: Duration,
    },
    /// A backoff delay above one hour.
    BackoffTooLong(Duration),
    /// `retry_after_ceiling` above one hour (an intent must never sleep for ages).
    RetryAfterCeilingTooLong(Duration),
    /// `conflict_delay` above one hour.
    ConflictDelayTooLong(Duration),
    /// `deadline` is zero.
    ZeroDeadline,
    /// `attempt_timeout` is zero.
    ZeroAttemptTimeout,
    /// One attempt may not take longer than the whole intent.
    AttemptTimeoutExceedsDeadline {
        /// The attempt timeout.
        attempt_timeout: Duration,
        /// The deadline.
        deadline: Duration,
    },
    /// A header name setting is empty.
    EmptyHeaderName(&'static str),
    /// A header name setting is not a valid header name.
    InvalidHeaderName {
        /// Which setting.
        setting: &'static str,
        /// The rejected name.
        name: String,
    },
    /// The key and the request id would overwrite each other.
    SameHeaderNames(String),
    /// A [`Hedging`](crate::Hedging) setting makes no sense.
    Hedging {
        /// Which setting (`hedging.max_copies`, `hedging.percentile`…).
        setting: &'static str,
        /// What is wrong with it.
        problem: String,
    },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MaxAttempts(value) => {
                write!(f, "max_attempts must be between 1 and 50, got {value}")
            }
            Self::ZeroBackoffBase => f.write_str("backoff base must be greater than zero"),
            Self::BackoffBaseAboveCap { base, cap } => {
                write!(f, "backoff base {base:?} is larger than its cap {cap:?}")
            }
            Self::BackoffTooLong(value) => {
                write!(f, "backoff delay {value:?} is longer than one hour")
            }
            Self::RetryAfterCeilingTooLong(value) => {
                write!(f, "retry_after_ceiling {value:?} is longer than one hour")
            }
            Self::ConflictDelayTooLong(value) => {
                write!(f, "conflict_delay {value:?} is longer than one hour")
            }
            Self::ZeroDeadline => {
                f.write_str("deadline must be greater than zero (use no_deadline() for none)")
            }
            Self::ZeroAttemptTimeout => f.write_str(
                "attempt_timeout must be greater than zero (use no_attempt_timeout() for none)",
            ),
            Self::AttemptTimeoutExceedsDeadline {
                attempt_timeout,
                deadline,
            } => write!(
                f,
                "attempt_timeout {attempt_timeout:?} is longer than the deadline {deadline:?}"
            ),
            Self::EmptyHeaderName(value) => write!(f, "{value} must not be empty"),
            Self::InvalidHeaderName { setting, name } => {
                write!(f, "{setting} {name:?} is not a valid header name")
            }
            Self::SameHeaderNames(value) => {
                write!(f, "key_header and request_id_header are both {value:?}")
            }
            Self::Hedging { setting, problem } => write!(f, "{setting} {problem}"),
        }
    }
}

impl std::error::Error for BuildError {}
