//! [`RetryPolicyConfig`] from environment variables — `PAYMENTS_HTTP_MAX_ATTEMPTS=4`,
//! `PAYMENTS_HTTP_BACKOFF_BASE=50ms`… — alone or layered over a file. Values are
//! checked as they are read and each setting remembers its variable, so an error
//! names the variable rather than the setting it fills, even one found later when
//! the policy is built. The variables, their names and how each is read and laid
//! over a file come from the settings' rows.

use super::error::ConfigError;
use super::origins::Origins;
use super::row::Row;
use super::settings::{rows, RetryPolicyConfig};

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
    #[doc = include_str!("variables.md")]
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
        for (name, value) in vars {
            let Some(suffix) = env_setting(prefix, &name) else {
                continue;
            };
            let Some(row) = row_named(suffix) else {
                return Err(ConfigError::UnknownVariable {
                    name,
                    prefix: prefix.to_owned(),
                });
            };
            (row.read_env)(&mut config, &name, value.trim())?;
            config.origins.set(row.path, name);
        }
        if let Some(error) = unlimited_budget_with_settings(&config.origins) {
            return Err(error);
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
    ///   `{prefix}_BUDGET=unlimited` replaces the table;
    /// * `{prefix}_HEDGING_*` replace keys of the file's `hedging` table (and turn
    ///   hedging on); a fixed `{prefix}_HEDGING_DELAY` over a file whose table sets
    ///   `percentile`, `min_samples` or `floor` is a conflict naming that key, since
    ///   a fixed delay would ignore it.
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

    /// `self` (from the environment) laid over `base`, key by key.
    fn layered_over(self, base: Self) -> Self {
        let mut merged = base;
        // A new strategy brings its own durations: the file's belong to its strategy.
        if self
            .backoff
            .as_ref()
            .is_some_and(|over| over.strategy.is_some())
        {
            merged.backoff = None;
        }
        for row in rows() {
            (row.layer)(&self, &mut merged);
        }
        merged.origins.extend(self.origins);
        merged
    }
}

/// The row whose variable is `{prefix}_{suffix}`.
fn row_named(suffix: &str) -> Option<&'static Row<RetryPolicyConfig>> {
    rows().find(|row| row.variable_suffix() == suffix)
}

/// `BUDGET=unlimited` takes no `BUDGET_*` settings: the conflict, naming a
/// setting's variable, if the variables give both.
fn unlimited_budget_with_settings(origins: &Origins) -> Option<ConfigError> {
    let unlimited = origins.variable_of("budget")?;
    let setting = origins.variable_where(|path| path.starts_with("budget."))?;
    Some(ConfigError::Conflict {
        field: setting.to_owned(),
        reason: format!(r#"{unlimited} is "unlimited", which takes no settings"#),
    })
}

/// The part of `name` after `{prefix}_`, if it has the prefix (`prefix` without
/// its trailing `_`; an empty prefix takes every variable).
fn env_setting<'n>(prefix: &str, name: &'n str) -> Option<&'n str> {
    if prefix.is_empty() {
        return Some(name);
    }
    name.strip_prefix(prefix)?.strip_prefix('_')
}
