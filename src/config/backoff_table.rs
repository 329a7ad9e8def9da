//! The `backoff` table's keys, built together into one [`Backoff`]: the strategy
//! decides which durations it takes, and a duration it does not take is an error
//! rather than silently ignored.

use std::time::Duration;

use super::choice::{Choice, Strategy};
use super::duration::DurationText;
use super::error::ConfigError;
use super::origins::Origins;
use super::settings::BackoffConfig;
use crate::{Backoff, RetryPolicy};

/// The backoff a `backoff` table describes; its strategy, base and cap default to
/// the default policy's. Errors name the setting, or the variable that set it.
pub(super) fn backoff(config: &BackoffConfig, origins: &Origins) -> Result<Backoff, ConfigError> {
    let default = default_backoff();
    let strategy = config.strategy.unwrap_or_else(|| strategy_of(default));
    let takes_none = |field: &str, value: &Option<DurationText>, takes: &str| match value {
        Some(_) => Err(ConfigError::Conflict {
            field: origins.name_of(&format!("backoff.{field}")),
            reason: format!(
                "backoff strategy {:?} takes {takes}, not {field}",
                strategy.name()
            ),
        }),
        None => Ok(()),
    };
    let required = |field: &str, value: &Option<DurationText>, default: Option<Duration>| {
        let path = origins.name_of(&format!("backoff.{field}"));
        match value {
            Some(text) => text.parse(&path),
            None => default.ok_or_else(|| ConfigError::Conflict {
                reason: format!("backoff strategy {:?} needs a {field}", strategy.name()),
                field: path,
            }),
        }
    };
    let backoff = match strategy {
        Strategy::FullJitter | Strategy::DecorrelatedJitter => {
            takes_none("delay", &config.delay, "base and cap")?;
            let (default_base, default_cap) = match default {
                Backoff::FullJitter { base, cap } | Backoff::DecorrelatedJitter { base, cap } => {
                    (Some(base), Some(cap))
                }
                Backoff::Constant(_) => (None, None),
            };
            let base = required("base", &config.base, default_base)?;
            let cap = required("cap", &config.cap, default_cap)?;
            if strategy == Strategy::FullJitter {
                Backoff::full_jitter(base, cap)
            } else {
                Backoff::decorrelated_jitter(base, cap)
            }
        }
        Strategy::Constant => {
            takes_none("base", &config.base, "a delay")?;
            takes_none("cap", &config.cap, "a delay")?;
            Backoff::constant(required("delay", &config.delay, None)?)
        }
        Strategy::None => {
            takes_none("base", &config.base, "no durations")?;
            takes_none("cap", &config.cap, "no durations")?;
            takes_none("delay", &config.delay, "no durations")?;
            Backoff::none()
        }
    };
    Ok(backoff)
}

/// The strategy a `backoff` table gives, or the default policy's when it gives none.
pub(super) fn strategy_of_table(config: &BackoffConfig) -> Strategy {
    config
        .strategy
        .unwrap_or_else(|| strategy_of(default_backoff()))
}

/// The default policy's backoff: what a `backoff` table leaves out.
fn default_backoff() -> Backoff {
    RetryPolicy::default().backoff()
}

/// The strategy `backoff` is written as.
fn strategy_of(backoff: Backoff) -> Strategy {
    match backoff {
        Backoff::FullJitter { .. } => Strategy::FullJitter,
        Backoff::DecorrelatedJitter { .. } => Strategy::DecorrelatedJitter,
        Backoff::Constant(Duration::ZERO) => Strategy::None,
        Backoff::Constant(_) => Strategy::Constant,
    }
}
