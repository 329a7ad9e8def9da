//! [`RetryPolicyConfig`] from environment variables: `RETRY_MAX_ATTEMPTS=4`,
//! `RETRY_BACKOFF_BASE=50ms`… Values are checked as they are read, so an error
//! names the variable rather than the setting it fills.

use super::choice::{Choice, KeyAttachmentSetting, KeyFormatSetting, Strategy};
use super::duration::{DurationText, LimitText};
use super::error::ConfigError;
use super::schema::{BackoffConfig, BudgetConfig, BudgetSettings, RetryPolicyConfig};
use super::to_builder::status_set;

impl RetryPolicyConfig {
    /// Reads a configuration from environment-style variables: `{prefix}_` followed
    /// by the setting's name in upper case, with `backoff.base` spelt
    /// `BACKOFF_BASE` and `budget.ratio` spelt `BUDGET_RATIO`. Variables without the
    /// prefix are ignored; `prefix` may be given with or without its trailing `_`.
    ///
    /// | variable | value |
    /// |---|---|
    /// | `RETRY_MAX_ATTEMPTS` | `4` |
    /// | `RETRY_BACKOFF_STRATEGY` | `decorrelated_jitter` |
    /// | `RETRY_BACKOFF_BASE`, `_CAP`, `_DELAY` | `50ms` |
    /// | `RETRY_DEADLINE`, `RETRY_ATTEMPT_TIMEOUT` | `5s`, or `none` |
    /// | `RETRY_RETRY_AFTER_CEILING` | `20s` |
    /// | `RETRY_TRANSIENT_STATUSES` | `429,503` (empty: no status is transient) |
    /// | `RETRY_RETRY_CONFLICT_WHEN_KEYED` | `true`/`false` (or `1`/`0`) |
    /// | `RETRY_CONFLICT_DELAY` | `2s` |
    /// | `RETRY_KEY_ATTACHMENT`, `RETRY_KEY_FORMAT` | `always`, `sf_string` |
    /// | `RETRY_KEY_HEADER`, `RETRY_REQUEST_ID_HEADER`, `RETRY_SERVER_HINT_HEADER` | `X-Idempotency-Key` |
    /// | `RETRY_REDACT_QUERY_PARAMS` | `api_key,token` |
    /// | `RETRY_BUDGET` | `unlimited` |
    /// | `RETRY_BUDGET_RATIO`, `_WINDOW`, `_RESERVE`, `_PER_HOST` | `0.2`, `30s`, `5`, `true` |
    /// | `RETRY_RNG_SEED` | `7` |
    ///
    /// Values are checked here, so an error names the variable.
    ///
    /// # Errors
    /// [`ConfigError::UnknownVariable`] for a variable with the prefix that names no
    /// setting (a typo must not silently keep the default); a value that does not
    /// parse, with [`field`](ConfigError::field) the variable's name; `BUDGET` set to
    /// `unlimited` together with a `BUDGET_*` setting.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use reqwest_resilience::RetryPolicyConfig;
    ///
    /// let vars = [
    ///     ("RETRY_MAX_ATTEMPTS", "4"),
    ///     ("RETRY_DEADLINE", "5s"),
    ///     ("RETRY_BUDGET_RATIO", "0.2"),
    ///     ("HOME", "/root"), // no prefix: ignored
    /// ];
    /// let config = RetryPolicyConfig::from_env_vars(
    ///     "RETRY",
    ///     vars.map(|(name, value)| (name.to_owned(), value.to_owned())),
    /// )?;
    /// let policy = config.build()?;
    /// assert_eq!(policy.max_attempts(), 4);
    /// assert_eq!(policy.deadline(), Some(Duration::from_secs(5)));
    ///
    /// let typo = [("RETRY_MAX_ATEMPTS".to_owned(), "4".to_owned())];
    /// let error = RetryPolicyConfig::from_env_vars("RETRY", typo).unwrap_err();
    /// assert_eq!(error.field(), Some("RETRY_MAX_ATEMPTS"));
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
