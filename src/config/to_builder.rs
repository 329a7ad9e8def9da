//! From configuration to policy: [`RetryPolicyConfig::to_builder`] and
//! [`RetryPolicyConfig::build`]. What the configuration leaves out is left to
//! the builder, so defaults have one source: [`RetryPolicy`]'s Defaults table.

use std::time::Duration;

use super::choice::{Choice, KeyAttachmentSetting, KeyFormatSetting, Strategy};
use super::duration::DurationText;
use super::error::ConfigError;
use super::schema::{BackoffConfig, BudgetConfig, BudgetSettings, Origins, RetryPolicyConfig};
use crate::{
    Backoff, BuildError, InvalidBudget, RetryBudget, RetryPolicy, RetryPolicyBuilder, StatusSet,
};

impl RetryPolicyConfig {
    /// A builder with the default settings overridden by the ones this
    /// configuration sets. Add what configuration cannot hold (a sleeper, a
    /// classifier), then [`build`](RetryPolicyBuilder::build) — or call
    /// [`build`](Self::build) to get errors mapped to setting names.
    ///
    /// A `budget` table is built here into a [`RetryBudget`] and handed to
    /// [`RetryPolicyBuilder::budget`], so policies built from clones of the
    /// returned builder share it; a later [`budget`](RetryPolicyBuilder::budget)
    /// or [`no_budget`](RetryPolicyBuilder::no_budget) in code replaces it.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the setting: a duration that does not parse, a
    /// status code outside 100–999, backoff settings the strategy does not take,
    /// or budget settings out of range ([`ConfigError::Budget`] with `budget.ratio`
    /// or `budget.window`). The policy's own range checks (attempts, base ≤ cap, …)
    /// are left to the builder.
    pub fn to_builder(&self) -> Result<RetryPolicyBuilder, ConfigError> {
        let mut builder = RetryPolicyBuilder::new();
        if let Some(attempts) = self.max_attempts {
            builder = builder.max_attempts(attempts);
        }
        // Errors name the setting's path, or the environment variable that set it.
        let name = |path: &str| self.origins.name_of(path);
        if let Some(config) = &self.backoff {
            builder = builder.backoff(backoff(config, &self.origins)?);
        }
        if let Some(text) = &self.deadline {
            builder = match text.parse(&name("deadline"))? {
                Some(deadline) => builder.deadline(deadline),
                None => builder.no_deadline(),
            };
        }
        if let Some(text) = &self.attempt_timeout {
            builder = match text.parse(&name("attempt_timeout"))? {
                Some(timeout) => builder.attempt_timeout(timeout),
                None => builder.no_attempt_timeout(),
            };
        }
        if let Some(text) = &self.conflict_delay {
            builder = builder.conflict_delay(text.parse(&name("conflict_delay"))?);
        }
        if let Some(text) = &self.retry_after_ceiling {
            builder = builder.retry_after_ceiling(text.parse(&name("retry_after_ceiling"))?);
        }
        if let Some(codes) = &self.transient_statuses {
            builder = builder.transient_statuses(status_set(&name("transient_statuses"), codes)?);
        }
        if let Some(retry) = self.retry_conflict_when_keyed {
            builder = builder.retry_conflict_when_keyed(retry);
        }
        if let Some(KeyAttachmentSetting(attachment)) = self.key_attachment {
            builder = builder.key_attachment(attachment);
        }
        if let Some(KeyFormatSetting(format)) = self.key_format {
            builder = builder.key_format(format);
        }
        if let Some(name) = &self.key_header {
            builder = builder.key_header(name.as_str());
        }
        if let Some(name) = &self.request_id_header {
            builder = builder.request_id_header(name.as_str());
        }
        if let Some(name) = &self.server_hint_header {
            builder = builder.server_hint_header(name.as_str());
        }
        if let Some(names) = &self.redact_query_params {
            builder = builder.redact_query_params(names.iter().map(String::as_str));
        }
        match &self.budget {
            None => {}
            Some(BudgetConfig::Unlimited) => builder = builder.no_budget(),
            Some(BudgetConfig::Limited(settings)) => {
                builder = builder.budget(budget(settings, &self.origins)?);
            }
        }
        if let Some(seed) = self.rng_seed {
            builder = builder.rng_seed(seed);
        }
        Ok(builder)
    }

    /// The policy this configuration describes, validated by
    /// [`RetryPolicyBuilder::build`].
    ///
    /// # Errors
    /// Everything [`to_builder`](Self::to_builder) reports, and the builder's
    /// [`BuildError`] as [`ConfigError::Policy`] with the setting it is about
    /// (`max_attempts`, `backoff.base`, `deadline`, `attempt_timeout`…).
    pub fn build(&self) -> Result<RetryPolicy, ConfigError> {
        self.to_builder()?
            .build()
            .map_err(|source| ConfigError::Policy {
                field: self
                    .field_of(&source)
                    .map(|path| self.origins.name_of(path)),
                source,
            })
    }

    /// The setting a [`BuildError`] is about.
    fn field_of(&self, error: &BuildError) -> Option<&'static str> {
        #[allow(unreachable_patterns)] // `BuildError` may grow (or lose) variants.
        let field = match error {
            BuildError::MaxAttempts(_) => "max_attempts",
            BuildError::ZeroBackoffBase | BuildError::BackoffBaseAboveCap { .. } => "backoff.base",
            BuildError::BackoffTooLong(_) => {
                let strategy = self.backoff.as_ref().map(|config| {
                    config
                        .strategy
                        .unwrap_or_else(|| strategy_of(default_backoff()))
                });
                if strategy == Some(Strategy::Constant) {
                    "backoff.delay"
                } else {
                    "backoff.cap"
                }
            }
            BuildError::ZeroDeadline => "deadline",
            BuildError::RetryAfterCeilingTooLong(_) => "retry_after_ceiling",
            BuildError::ZeroAttemptTimeout | BuildError::AttemptTimeoutExceedsDeadline { .. } => {
                "attempt_timeout"
            }
            BuildError::EmptyHeaderName(setting)
            | BuildError::InvalidHeaderName { setting, .. } => setting,
            BuildError::SameHeaderNames(_) => "request_id_header",
            BuildError::ConflictDelayTooLong(_) => "conflict_delay",
            _ => return None,
        };
        Some(field)
    }
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

/// The backoff a `backoff` table describes; its strategy, base and cap default to
/// the default policy's. Errors name the setting, or the variable that set it.
fn backoff(config: &BackoffConfig, origins: &Origins) -> Result<Backoff, ConfigError> {
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

/// The budget a `budget` table describes, on top of
/// [`RetryBudget::builder`]'s defaults; an out-of-range value is a
/// [`ConfigError::Budget`] naming its key.
fn budget(settings: &BudgetSettings, origins: &Origins) -> Result<RetryBudget, ConfigError> {
    let mut builder = RetryBudget::builder();
    if let Some(ratio) = settings.ratio {
        builder = builder.ratio(ratio);
    }
    if let Some(window) = &settings.window {
        builder = builder.window(window.parse(&origins.name_of("budget.window"))?);
    }
    if let Some(reserve) = settings.reserve {
        builder = builder.reserve(reserve);
    }
    if let Some(per_host) = settings.per_host {
        builder = builder.per_host(per_host);
    }
    builder.build().map_err(|invalid| ConfigError::Budget {
        field: origins.name_of(match invalid {
            InvalidBudget::Ratio(_) => "budget.ratio",
            InvalidBudget::Window(_) => "budget.window",
        }),
        source: invalid,
    })
}

/// The status codes as a [`StatusSet`]; an error names `field` (a setting or a
/// variable).
pub(super) fn status_set(field: &str, codes: &[u16]) -> Result<StatusSet, ConfigError> {
    if let Some(bad) = codes.iter().find(|code| !(100..=999).contains(*code)) {
        return Err(ConfigError::InvalidValue {
            field: field.to_owned(),
            value: bad.to_string(),
            expected: "HTTP status codes from 100 to 999".to_owned(),
        });
    }
    Ok(codes.iter().copied().collect())
}
