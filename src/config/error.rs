//! [`ConfigError`]: every error names the setting, or the environment variable,
//! to fix. A leaf: the other config files build these errors; this one imports
//! none of them. How each reads (its `Display`) is in `message.rs`, which needs
//! the settings' rows to list the variables that exist.

use crate::{BuildError, InvalidBreaker, InvalidBudget, InvalidThrottle};

/// Why a [`RetryPolicyConfig`](crate::RetryPolicyConfig) could not become a
/// policy. Every variant names the setting (or environment variable) at fault: see
/// [`field`](Self::field).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ConfigError {
    /// A duration that does not parse.
    InvalidDuration {
        /// The setting's path (`"backoff.base"`), or the environment variable's name.
        field: String,
        /// The rejected text.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A value of the wrong form or out of range.
    InvalidValue {
        /// The setting's path, or the environment variable's name.
        field: String,
        /// The rejected text.
        value: String,
        /// What would have been accepted.
        expected: String,
    },
    /// Settings that contradict each other, such as a `delay` for a jittered backoff.
    Conflict {
        /// The setting to remove or change.
        field: String,
        /// Why it does not fit.
        reason: String,
    },
    /// An environment variable with the prefix that names no setting.
    UnknownVariable {
        /// The variable's name.
        name: String,
        /// The prefix it matched.
        prefix: String,
    },
    /// A `budget` setting out of range, as [`RetryBudget::builder`] reports it.
    ///
    /// [`RetryBudget::builder`]: crate::RetryBudget::builder
    Budget {
        /// `budget.ratio` or `budget.window`, or the environment variable that set it.
        field: String,
        /// The budget builder's error.
        source: InvalidBudget,
    },
    /// A `breaker` setting out of range, as [`CircuitBreaker::builder`] reports it.
    ///
    /// [`CircuitBreaker::builder`]: crate::CircuitBreaker::builder
    Breaker {
        /// The `breaker.*` key, or the environment variable that set it.
        field: String,
        /// The breaker builder's error.
        source: InvalidBreaker,
    },
    /// A `throttle` setting out of range, as [`AdaptiveThrottle::builder`] reports it.
    ///
    /// [`AdaptiveThrottle::builder`]: crate::AdaptiveThrottle::builder
    Throttle {
        /// The `throttle.*` key, or the environment variable that set it.
        field: String,
        /// The throttle builder's error.
        source: InvalidThrottle,
    },
    /// The settings parse but the policy rejects them: the builder's
    /// [`BuildError`], with the setting it is about.
    Policy {
        /// The setting the builder's error is about, where it maps to one: its path,
        /// or the environment variable that set it.
        field: Option<String>,
        /// The builder's error.
        source: BuildError,
    },
}

impl ConfigError {
    /// The setting at fault: its path in the configuration (`"max_attempts"`,
    /// `"backoff.base"`, `"budget.ratio"`) or, for a setting read from the
    /// environment, the variable's name (`"PAYMENTS_HTTP_MAX_ATTEMPTS"`) — whether the
    /// error is found while the variables are read or later, when the policy is built
    /// from them.
    pub fn field(&self) -> Option<&str> {
        match self {
            Self::InvalidDuration { field, .. }
            | Self::InvalidValue { field, .. }
            | Self::Conflict { field, .. }
            | Self::Budget { field, .. }
            | Self::Breaker { field, .. }
            | Self::Throttle { field, .. } => Some(field),
            Self::UnknownVariable { name, .. } => Some(name),
            Self::Policy { field, .. } => field.as_deref(),
        }
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Budget { source, .. } => Some(source),
            Self::Breaker { source, .. } => Some(source),
            Self::Throttle { source, .. } => Some(source),
            Self::Policy { source, .. } => Some(source),
            Self::InvalidDuration { .. }
            | Self::InvalidValue { .. }
            | Self::Conflict { .. }
            | Self::UnknownVariable { .. } => None,
        }
    }
}
