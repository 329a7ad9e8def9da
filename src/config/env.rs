//! [`RetryPolicyConfig`] from environment variables — `PAYMENTS_HTTP_MAX_ATTEMPTS=4`,
//! `PAYMENTS_HTTP_BACKOFF_BASE=50ms`… — alone or layered over a file. Values are
//! checked as they are read and each setting remembers its variable, so an error
//! names the variable rather than the setting it fills, even one found later when
//! the policy is built.

use super::choice::{Choice, KeyAttachmentSetting, KeyFormatSetting, Strategy};
use super::duration::{DurationText, LimitText};
use super::error::ConfigError;
use super::schema::{BackoffConfig, BudgetConfig, BudgetSettings, RetryPolicyConfig};
use super::to_builder::status_set;

impl RetryPolicyConfig {
    /// The prefix the documentation uses for environment variables:
    /// `RESILIENCE_MAX_ATTEMPTS`, `RESILIENCE_RETRY_AFTER_CEILING`. Any prefix works;
    /// choose one that names your service (`PAYMENTS_HTTP`), and avoid one ending in
    /// `RETRY`, which doubles against the settings that start with it
    /// (`RETRY_RETRY_AFTER_CEILING`).
    pub const DEFAULT_ENV_PREFIX: &'static str = "RESILIENCE";

    /// Reads a configuration from environment-style variables named 1:1 after the
    /// TOML keys: `{prefix}_` followed by the key in upper case, a table's key joined
    /// with `_` (`backoff.base` is `{prefix}_BACKOFF_BASE`, `budget.ratio` is
    /// `{prefix}_BUDGET_RATIO`). Variables without the prefix are ignored; `prefix`
    /// may be given with or without its trailing `_`. With the prefix
    /// [`DEFAULT_ENV_PREFIX`](Self::DEFAULT_ENV_PREFIX):
    ///
    /// | variable | TOML key | value |
    /// |---|---|---|
    /// | `RESILIENCE_MAX_ATTEMPTS` | `max_attempts` | `4` |
    /// | `RESILIENCE_BACKOFF_STRATEGY` | `backoff.strategy` | `decorrelated_jitter` |
    /// | `RESILIENCE_BACKOFF_BASE`, `_CAP`, `_DELAY` | `backoff.base`, `.cap`, `.delay` | `50ms` |
    /// | `RESILIENCE_DEADLINE`, `RESILIENCE_ATTEMPT_TIMEOUT` | `deadline`, `attempt_timeout` | `5s`, or `none` |
    /// | `RESILIENCE_RETRY_AFTER_CEILING` | `retry_after_ceiling` | `20s` |
    /// | `RESILIENCE_TRANSIENT_STATUSES` | `transient_statuses` | `429,503` (empty: no status is transient) |
    /// | `RESILIENCE_RETRY_CONFLICT_WHEN_KEYED` | `retry_conflict_when_keyed` | `true`/`false` (or `1`/`0`) |
    /// | `RESILIENCE_CONFLICT_DELAY` | `conflict_delay` | `2s` |
    /// | `RESILIENCE_KEY_ATTACHMENT`, `RESILIENCE_KEY_FORMAT` | `key_attachment`, `key_format` | `always`, `sf_string` |
    /// | `RESILIENCE_KEY_HEADER`, `_REQUEST_ID_HEADER`, `_SERVER_HINT_HEADER` | `key_header`, … | `X-Idempotency-Key` |
    /// | `RESILIENCE_REDACT_QUERY_PARAMS` | `redact_query_params` | `api_key,token` |
    /// | `RESILIENCE_BUDGET` | `budget` | `unlimited` |
    /// | `RESILIENCE_BUDGET_RATIO`, `_WINDOW`, `_RESERVE`, `_PER_HOST` | `budget.ratio`, … | `0.2`, `30s`, `5`, `true` |
    /// | `RESILIENCE_RNG_SEED` | `rng_seed` | `7` |
    ///
    /// To layer the variables over a file, see
    /// [`overridden_by_env`](Self::overridden_by_env).
    ///
    /// # Errors
    /// Every error names the variable ([`ConfigError::field`]), here and later when
    /// the policy is built ([`build`](Self::build): a range error such as
    /// `RESILIENCE_MAX_ATTEMPTS=99` names `RESILIENCE_MAX_ATTEMPTS`, not
    /// `max_attempts`). Here: [`ConfigError::UnknownVariable`] for a variable with
    /// the prefix that names no setting (a typo must not silently keep the default);
    /// a value that does not parse; `BUDGET` set to `unlimited` together with a
    /// `BUDGET_*` setting.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use reqwest_resilience::RetryPolicyConfig;
    ///
    /// let vars = [
    ///     ("PAYMENTS_HTTP_MAX_ATTEMPTS", "4"),
    ///     ("PAYMENTS_HTTP_DEADLINE", "5s"),
    ///     ("PAYMENTS_HTTP_BUDGET_RATIO", "0.2"),
    ///     ("HOME", "/root"), // no prefix: ignored
    /// ];
    /// let config = RetryPolicyConfig::from_env_vars(
    ///     "PAYMENTS_HTTP",
    ///     vars.map(|(name, value)| (name.to_owned(), value.to_owned())),
    /// )?;
    /// let policy = config.build()?;
    /// assert_eq!(policy.max_attempts(), 4);
    /// assert_eq!(policy.deadline(), Some(Duration::from_secs(5)));
    ///
    /// let typo = [("PAYMENTS_HTTP_MAX_ATEMPTS".to_owned(), "4".to_owned())];
    /// let error = RetryPolicyConfig::from_env_vars("PAYMENTS_HTTP", typo).unwrap_err();
    /// assert_eq!(error.field(), Some("PAYMENTS_HTTP_MAX_ATEMPTS"));
    ///
    /// // Out of range: found when the policy is built, and still named by its variable.
    /// let too_many = [("PAYMENTS_HTTP_MAX_ATTEMPTS".to_owned(), "99".to_owned())];
    /// let error = RetryPolicyConfig::from_env_vars("PAYMENTS_HTTP", too_many)?
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(error.field(), Some("PAYMENTS_HTTP_MAX_ATTEMPTS"));
    /// # Ok::<(), reqwest_resilience::ConfigError>(())
    /// ```
    pub fn from_env_vars<I>(prefix: &str, vars: I) -> Result<Self, ConfigError>
    where
        I: IntoIterator<Item = (String, String)>,
    {
        let prefix = prefix.trim_end_matches('_');
        let mut config = Self::default();
        let mut backoff = BackoffConfig::default();
        let mut budget = BudgetSettings::default();
        // Names of the variables that set the budget, to report a conflict.
        let mut unlimited_by: Option<String> = None;
        let mut budget_set_by: Option<String> = None;
        for (name, raw) in vars {
            let Some(setting) = env_setting(prefix, &name) else {
                continue;
            };
            let value = raw.trim();
            let var = name.as_str();
            config.origins.set(setting_path(setting), name.clone());
            match setting {
                "MAX_ATTEMPTS" => {
                    config.max_attempts =
                        Some(parse_number(var, value, "a whole number from 1 to 50")?);
                }
                "BACKOFF_STRATEGY" => backoff.strategy = Some(Strategy::parse(var, value)?),
                "BACKOFF_BASE" => backoff.base = Some(DurationText::checked(var, value)?),
                "BACKOFF_CAP" => backoff.cap = Some(DurationText::checked(var, value)?),
                "BACKOFF_DELAY" => backoff.delay = Some(DurationText::checked(var, value)?),
                "DEADLINE" => config.deadline = Some(LimitText::checked(var, value)?),
                "ATTEMPT_TIMEOUT" => config.attempt_timeout = Some(LimitText::checked(var, value)?),
                "CONFLICT_DELAY" => {
                    config.conflict_delay = Some(DurationText::checked(var, value)?);
                }
                "RETRY_AFTER_CEILING" => {
                    config.retry_after_ceiling = Some(DurationText::checked(var, value)?);
                }
                "TRANSIENT_STATUSES" => {
                    config.transient_statuses = Some(parse_status_list(var, value)?);
                }
                "RETRY_CONFLICT_WHEN_KEYED" => {
                    config.retry_conflict_when_keyed = Some(parse_bool(var, value)?);
                }
                "KEY_ATTACHMENT" => {
                    config.key_attachment = Some(KeyAttachmentSetting::parse(var, value)?);
                }
                "KEY_FORMAT" => config.key_format = Some(KeyFormatSetting::parse(var, value)?),
                "KEY_HEADER" => config.key_header = Some(value.to_owned()),
                "REQUEST_ID_HEADER" => config.request_id_header = Some(value.to_owned()),
                "SERVER_HINT_HEADER" => config.server_hint_header = Some(value.to_owned()),
                "REDACT_QUERY_PARAMS" => {
                    config.redact_query_params = Some(
                        value
                            .split(',')
                            .map(str::trim)
                            .filter(|name| !name.is_empty())
                            .map(str::to_owned)
                            .collect(),
                    );
                }
                "BUDGET" => {
                    if !value.eq_ignore_ascii_case("unlimited") {
                        return Err(ConfigError::InvalidValue {
                            field: name,
                            value: raw,
                            expected: format!(
                                r#""unlimited" (set {prefix}_BUDGET_RATIO, _WINDOW, _RESERVE or _PER_HOST for a limited budget)"#
                            ),
                        });
                    }
                    unlimited_by = Some(name);
                }
                "BUDGET_RATIO" => {
                    budget.ratio = Some(parse_number(var, value, "a number such as 0.2")?);
                    budget_set_by = Some(name);
                }
                "BUDGET_WINDOW" => {
                    budget.window = Some(DurationText::checked(var, value)?);
                    budget_set_by = Some(name);
                }
                "BUDGET_RESERVE" => {
                    budget.reserve = Some(parse_number(var, value, "a whole number")?);
                    budget_set_by = Some(name);
                }
                "BUDGET_PER_HOST" => {
                    budget.per_host = Some(parse_bool(var, value)?);
                    budget_set_by = Some(name);
                }
                "RNG_SEED" => {
                    config.rng_seed = Some(parse_number(var, value, "a whole number")?);
                }
                _ => {
                    return Err(ConfigError::UnknownVariable {
                        name,
                        prefix: prefix.to_owned(),
                    })
                }
            }
        }
        if !backoff.is_empty() {
            config.backoff = Some(backoff);
        }
        match (unlimited_by, budget_set_by) {
            (Some(unlimited), Some(setting)) => {
                return Err(ConfigError::Conflict {
                    field: setting,
                    reason: format!(r#"{unlimited} is "unlimited", which takes no settings"#),
                });
            }
            (Some(_), None) => config.budget = Some(BudgetConfig::Unlimited),
            (None, _) if !budget.is_empty() => config.budget = Some(BudgetConfig::Limited(budget)),
            (None, _) => {}
        }
        Ok(config)
    }

    /// [`from_env_vars`](Self::from_env_vars) over this process's environment.
    ///
    /// # Errors
    /// As [`from_env_vars`](Self::from_env_vars); also a variable with the prefix
    /// whose value is not valid UTF-8.
    pub fn from_env(prefix: &str) -> Result<Self, ConfigError> {
        let trimmed = prefix.trim_end_matches('_');
        let mut vars = Vec::new();
        for (name, value) in std::env::vars_os() {
            let name = name.to_string_lossy().into_owned();
            if env_setting(trimmed, &name).is_none() {
                continue;
            }
            match value.into_string() {
                Ok(value) => vars.push((name, value)),
                Err(raw) => {
                    return Err(ConfigError::InvalidValue {
                        field: name,
                        value: raw.to_string_lossy().into_owned(),
                        expected: "valid UTF-8".to_owned(),
                    })
                }
            }
        }
        Self::from_env_vars(prefix, vars)
    }
}

impl RetryPolicyConfig {
    /// This configuration (typically read from a file) with the settings this
    /// process's environment gives under `prefix` laid over it: one call for the
    /// usual "file, then environment overrides" layering. As
    /// [`overridden_by_env_vars`](Self::overridden_by_env_vars) over
    /// [`std::env::vars_os`].
    ///
    /// # Errors
    /// As [`from_env`](Self::from_env).
    pub fn overridden_by_env(self, prefix: &str) -> Result<Self, ConfigError> {
        Ok(Self::from_env(prefix)?.layered_over(self))
    }

    /// This configuration with the settings `vars` give under `prefix` laid over it
    /// (names as in [`from_env_vars`](Self::from_env_vars)):
    ///
    /// * a variable replaces the setting it names; settings it does not name keep the
    ///   file's value;
    /// * `{prefix}_BACKOFF_BASE`, `_CAP`, `_DELAY` replace that key of the file's
    ///   `backoff` table; `{prefix}_BACKOFF_STRATEGY` replaces the whole table (the
    ///   file's durations belong to the file's strategy);
    /// * `{prefix}_BUDGET_*` replace keys of the file's `budget` table (or of the
    ///   default budget if the file has none or says `"unlimited"`);
    ///   `{prefix}_BUDGET=unlimited` replaces the table.
    ///
    /// An error found when the policy is built names the variable for a setting the
    /// environment gave, and the TOML path for one the file gave.
    ///
    /// # Errors
    /// As [`from_env_vars`](Self::from_env_vars).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use reqwest_resilience::RetryPolicyConfig;
    ///
    /// let file: RetryPolicyConfig = toml::from_str(
    ///     r#"
    ///     max_attempts = 4
    ///     deadline = "10s"
    ///     [backoff]
    ///     base = "50ms"
    ///     cap = "1s"
    ///     "#,
    /// )?;
    /// // The engineer on call: fewer attempts, now, without a redeploy.
    /// let env = [("RESILIENCE_MAX_ATTEMPTS".to_owned(), "2".to_owned())];
    /// let policy = file
    ///     .overridden_by_env_vars(RetryPolicyConfig::DEFAULT_ENV_PREFIX, env)?
    ///     .build()?;
    /// assert_eq!(policy.max_attempts(), 2); // from the environment
    /// assert_eq!(policy.deadline(), Some(Duration::from_secs(10))); // from the file
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn overridden_by_env_vars<I>(self, prefix: &str, vars: I) -> Result<Self, ConfigError>
    where
        I: IntoIterator<Item = (String, String)>,
    {
        Ok(Self::from_env_vars(prefix, vars)?.layered_over(self))
    }

    /// `self` (from the environment) laid over `base`, setting by setting.
    fn layered_over(self, base: Self) -> Self {
        // Destructured whole, so that a new setting cannot be forgotten here.
        let Self {
            max_attempts,
            deadline,
            attempt_timeout,
            retry_after_ceiling,
            transient_statuses,
            retry_conflict_when_keyed,
            conflict_delay,
            key_attachment,
            key_format,
            key_header,
            request_id_header,
            server_hint_header,
            redact_query_params,
            rng_seed,
            backoff,
            budget,
            origins,
        } = self;
        let mut merged = base;
        merged.max_attempts = max_attempts.or(merged.max_attempts);
        merged.deadline = deadline.or(merged.deadline);
        merged.attempt_timeout = attempt_timeout.or(merged.attempt_timeout);
        merged.retry_after_ceiling = retry_after_ceiling.or(merged.retry_after_ceiling);
        merged.transient_statuses = transient_statuses.or(merged.transient_statuses);
        merged.retry_conflict_when_keyed =
            retry_conflict_when_keyed.or(merged.retry_conflict_when_keyed);
        merged.conflict_delay = conflict_delay.or(merged.conflict_delay);
        merged.key_attachment = key_attachment.or(merged.key_attachment);
        merged.key_format = key_format.or(merged.key_format);
        merged.key_header = key_header.or(merged.key_header);
        merged.request_id_header = request_id_header.or(merged.request_id_header);
        merged.server_hint_header = server_hint_header.or(merged.server_hint_header);
        merged.redact_query_params = redact_query_params.or(merged.redact_query_params);
        merged.rng_seed = rng_seed.or(merged.rng_seed);
        merged.backoff = match (merged.backoff, backoff) {
            (base, None) => base,
            // A new strategy brings its own durations.
            (_, Some(over)) if over.strategy.is_some() => Some(over),
            (None, Some(over)) => Some(over),
            (Some(base), Some(over)) => Some(BackoffConfig {
                strategy: base.strategy,
                base: over.base.or(base.base),
                cap: over.cap.or(base.cap),
                delay: over.delay.or(base.delay),
            }),
        };
        merged.budget = match (merged.budget, budget) {
            (base, None) => base,
            (Some(BudgetConfig::Limited(base)), Some(BudgetConfig::Limited(over))) => {
                Some(BudgetConfig::Limited(BudgetSettings {
                    ratio: over.ratio.or(base.ratio),
                    window: over.window.or(base.window),
                    reserve: over.reserve.or(base.reserve),
                    per_host: over.per_host.or(base.per_host),
                }))
            }
            (_, over) => over,
        };
        merged.origins.extend(origins);
        merged
    }
}

/// The TOML path of an environment setting: `MAX_ATTEMPTS` → `max_attempts`,
/// `BACKOFF_BASE` → `backoff.base`, `BUDGET_RATIO` → `budget.ratio`.
fn setting_path(setting: &str) -> String {
    let lower = setting.to_ascii_lowercase();
    for table in ["backoff_", "budget_"] {
        if let Some(key) = lower.strip_prefix(table) {
            return format!("{}.{key}", table.trim_end_matches('_'));
        }
    }
    lower
}

/// The part of `name` after `{prefix}_`, if it has the prefix (`prefix` without
/// its trailing `_`; an empty prefix takes every variable).
fn env_setting<'n>(prefix: &str, name: &'n str) -> Option<&'n str> {
    if prefix.is_empty() {
        return Some(name);
    }
    name.strip_prefix(prefix)?.strip_prefix('_')
}

fn parse_number<T: std::str::FromStr>(
    field: &str,
    value: &str,
    expected: &str,
) -> Result<T, ConfigError> {
    value.parse().map_err(|_| ConfigError::InvalidValue {
        field: field.to_owned(),
        value: value.to_owned(),
        expected: expected.to_owned(),
    })
}

fn parse_bool(field: &str, value: &str) -> Result<bool, ConfigError> {
    match value.to_ascii_lowercase().as_str() {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err(ConfigError::InvalidValue {
            field: field.to_owned(),
            value: value.to_owned(),
            expected: "true or false".to_owned(),
        }),
    }
}

/// A comma-separated list of status codes; empty for none. Checked here (not
/// only when the policy is built) so that the error names the variable.
fn parse_status_list(field: &str, value: &str) -> Result<Vec<u16>, ConfigError> {
    if value.trim().is_empty() {
        return Ok(Vec::new());
    }
    let codes = value
        .split(',')
        .map(|code| {
            code.trim()
                .parse::<u16>()
                .map_err(|_| ConfigError::InvalidValue {
                    field: field.to_owned(),
                    value: value.to_owned(),
                    expected: "comma-separated status codes, such as 429,503".to_owned(),
                })
        })
        .collect::<Result<Vec<u16>, ConfigError>>()?;
    status_set(field, &codes)?;
    Ok(codes)
}

#[cfg(test)]
mod tests {
    use super::super::error::ENV_SUFFIXES;
    use super::*;

    #[test]
    fn every_variable_an_error_lists_is_read() {
        for suffix in ENV_SUFFIXES {
            let name = format!("RETRY_{suffix}");
            // A value no setting accepts: a known variable fails on the value
            // (or, for headers, is taken as it is), never as unknown.
            let result =
                RetryPolicyConfig::from_env_vars("RETRY", [(name.clone(), "?".to_owned())]);
            assert!(
                !matches!(result, Err(ConfigError::UnknownVariable { .. })),
                "{name} is listed but not read"
            );
        }
    }
}
