//! How a [`ConfigError`] reads: the setting (or variable) first, then what is
//! wrong; for an unknown variable, the variables that exist, from the rows.

use std::fmt;

use super::error::ConfigError;
use super::settings::rows;

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidDuration {
                field,
                value,
                reason,
            } => write!(f, "{field}: invalid duration {value:?}: {reason}"),
            Self::InvalidValue {
                field,
                value,
                expected,
            } => write!(f, "{field}: invalid value {value:?}, expected {expected}"),
            Self::Conflict { field, reason } => write!(f, "{field}: {reason}"),
            Self::UnknownVariable { name, prefix } => write!(
                f,
                "unknown environment variable {name}: expected {}",
                known_variables(prefix)
            ),
            Self::Budget { field, source } => write!(f, "{field}: {source}"),
            Self::Breaker { field, source } => write!(f, "{field}: {source}"),
            Self::Throttle { field, source } => write!(f, "{field}: {source}"),
            Self::Policy { field, source } => write!(
                f,
                "{}: {source}",
                field.as_deref().unwrap_or("retry policy")
            ),
        }
    }
}

/// The accepted variable names under `prefix`, for messages.
fn known_variables(prefix: &str) -> String {
    let names: Vec<String> = rows().map(|row| row.variable_suffix()).collect();
    let names = names.join(", ");
    if prefix.is_empty() {
        format!("one of {names}")
    } else {
        format!("{prefix}_ followed by one of {names}")
    }
}
