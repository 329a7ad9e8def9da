//! [`ConfigError`]: every error names the setting, or the environment variable,
//! to fix. A leaf: the other config files build these errors; this one imports
//! none of them.

use crate::{BuildError, InvalidBudget};

/// Why a [`RetryPolicyConfig`](crate::RetryPolicyConfig) could not become a
/// policy. Every variant names the setting (or environment variable) at fault: see
/// [`field`](Self::field).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A duration that does not parse.
    #[error("{field}: invalid duration {value:?}: {reason}")]
    InvalidDuration {
        /// The setting's path (`"backoff.base"`), or the environment variable's name.
        field: String,
        /// The rejected text.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A value of the wrong form or out of range.
    #[error("{field}: invalid value {value:?}, expected {expected}")]
    InvalidValue {
        /// The setting's path, or the environment variable's name.
        field: String,
        /// The rejected text.
        value: String,
        /// What would have been accepted.
        expected: String,
    },
    /// Settings that contradict each other, such as a `delay` for a jittered backoff.
    #[error("{field}: {reason}")]
    Conflict {
        /// The setting to remove or change.
        field: String,
        /// Why it does not fit.
        reason: String,
    },
    /// An environment variable with the prefix that names no setting.
    #[error("unknown environment variable {name}: expected {}", known_variables(.prefix))]
    UnknownVariable {
        /// The variable's name.
        name: String,
        /// The prefix it matched.
        prefix: String,
    },
    /// A `budget` setting out of range, as [`RetryBudget::builder`] reports it.
    ///
    /// [`RetryBudget::builder`]: crate::RetryBudget::builder
    #[error("{field}: {source}")]
    Budget {
        /// `budget.ratio` or `budget.window`, or the environment variable that set it.
        field: String,
        /// The budget builder's error.
        source: InvalidBudget,
    },
    /// The settings parse but the policy rejects them: the builder's
    /// [`BuildError`], with the setting it is about.
    #[error("{}: {source}", .field.as_deref().unwrap_or("retry policy"))]
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
            | Self::Budget { field, .. } => Some(field),
            Self::UnknownVariable { name, .. } => Some(name),
            Self::Policy { field, .. } => field.as_deref(),
        }
    }
}

/// The variable names after `{prefix}_` that the environment loader reads, for
/// the message of [`ConfigError::UnknownVariable`]. Kept here so this file stays
/// a leaf; a test beside the loader checks that it reads every one.
pub(super) const ENV_SUFFIXES: &[&str] = &[
    "MAX_ATTEMPTS",
    "BACKOFF_STRATEGY",
    "BACKOFF_BASE",
    "BACKOFF_CAP",
    "BACKOFF_DELAY",
    "DEADLINE",
    "ATTEMPT_TIMEOUT",
    "RETRY_AFTER_CEILING",
    "TRANSIENT_STATUSES",
    "RETRY_CONFLICT_WHEN_KEYED",
    "CONFLICT_DELAY",
    "KEY_ATTACHMENT",
    "KEY_FORMAT",
    "KEY_HEADER",
    "REQUEST_ID_HEADER",
    "SERVER_HINT_HEADER",
    "REDACT_QUERY_PARAMS",
    "BUDGET",
    "BUDGET_RATIO",
    "BUDGET_WINDOW",
    "BUDGET_RESERVE",
    "BUDGET_PER_HOST",
    "RNG_SEED",
];

/// The accepted variable names, for messages.
fn known_variables(prefix: &str) -> String {
    let names = ENV_SUFFIXES.join(", ");
    if prefix.is_empty() {
        format!("one of {names}")
    } else {
        format!("{prefix}_ followed by one of {names}")
    }
}
