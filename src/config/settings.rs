//! The configuration's keys, one row each: the written form of a policy
//! ([`RetryPolicyConfig`] and its `backoff` and `budget` tables, as serde reads and
//! writes them) declared together with how each key is read from a variable, laid
//! over a file and applied to the builder. Values stay as written (durations as
//! text) until the policy is built, so that an error can name the setting.
//!
//! Adding a key: its setter and getter on the policy, its row here, its line in the
//! read-back table of `config/tests.rs`; then `BLESS=1 cargo test --lib --features
//! serde config` rewrites `settings.md` and `variables.md` from the rows. A new
//! table (a gate's settings) is one more `settings_table!` with its two accessors,
//! its field in `RetryPolicyConfig`'s `and` block, its rows chained in [`rows`] and
//! its builder step in `to_builder.rs`.
//!
//! The top-level keys and the `backoff` table are here; the `budget` key and
//! table in `settings/budget.rs`, the gates' in `settings/gates.rs`, hedging's in
//! `settings/hedging.rs`.

use super::choice::{KeyAttachmentSetting, KeyFormatSetting, Strategy};
use super::duration::{DurationText, LimitText};
use super::kind::{status_set, Kind};
use super::origins::Origins;
use super::row::{apply_if_set, settings_table, Applies, Row};

mod budget;
mod gates;
mod hedging;

use budget::BUDGET;
pub(super) use budget::{BudgetConfig, BudgetSettings};
pub(super) use gates::{BreakerSettings, ThrottleSettings};
use gates::{BREAKER, THROTTLE};
pub(super) use hedging::HedgingSettings;
use hedging::HEDGING;

/// Every key's row: the top-level keys, then the `backoff` table's, then `budget`
/// and the `budget` table's, then `breaker` and its table's, `throttle` and its
/// table's, `hedging` and its table's.
pub(super) fn rows() -> impl Iterator<Item = &'static Row<RetryPolicyConfig>> {
    RetryPolicyConfig::ROWS
        .iter()
        .chain(BackoffConfig::ROWS)
        .chain(BUDGET)
        .chain(BudgetSettings::ROWS)
        .chain(BREAKER)
        .chain(BreakerSettings::ROWS)
        .chain(THROTTLE)
        .chain(ThrottleSettings::ROWS)
        .chain(HEDGING)
        .chain(HedgingSettings::ROWS)
}

settings_table! {
    /// A retry policy written as configuration: every
    /// [`RetryPolicyBuilder`](crate::RetryPolicyBuilder) setting that can be written
    /// down, each optional, loaded with serde (TOML, JSON, YAML…) or from environment
    /// variables ([`from_env_vars`](Self::from_env_vars)).
    ///
    /// Retry settings are operational: when a dependency sheds load, the engineer on
    /// call needs to lower the attempts, stretch the backoff or shrink the retry budget
    /// *now*, without a code change and a redeploy. Keep the policy in the service's
    /// configuration and build it at start-up (or on reload) with
    /// [`build`](Self::build) — validated by the same
    /// [`RetryPolicyBuilder::build`](crate::RetryPolicyBuilder::build) as a policy
    /// written in code — or with [`to_builder`](Self::to_builder) to add what only code
    /// can give (a [`Sleeper`](crate::Sleeper), a [`Classifier`](crate::Classifier), a
    /// shared [`RetryBudget`](crate::RetryBudget)).
    ///
    /// A setting left out keeps the builder's default (see the Defaults table of
    /// [`RetryPolicy`](crate::RetryPolicy)), so an empty configuration is the default
    /// policy.
    ///
    /// # Settings
    ///
    /// A key `backoff.base` is `base` in the `[backoff]` table; `budget` is either
    /// `"unlimited"` or a `[budget]` table of the `budget.*` keys. A `[breaker]` table
    /// adds a [`CircuitBreaker`](crate::CircuitBreaker) gate and a `[throttle]` table
    /// an [`AdaptiveThrottle`](crate::AdaptiveThrottle) gate (in that order); a key
    /// left out keeps that gate's default, and `rng_seed` also seeds the throttle.
    /// A `[hedging]` table (or `hedging = "on"`) turns on
    /// [hedged requests](crate::Hedging), a key left out keeping
    /// [`Hedging::default`](crate::Hedging)'s value.
    ///
    #[doc = include_str!("settings.md")]
    ///
    /// `backoff` has a `strategy` — `"full_jitter"`, `"decorrelated_jitter"`,
    /// `"constant"` or `"none"` — and the durations that strategy takes: `base` and `cap`
    /// for the jittered ones, `delay` (required) for `"constant"`, nothing for
    /// `"none"`. A duration the strategy does not take is an error rather than
    /// silently ignored. Left out, the strategy, `base` and `cap` are the default
    /// backoff's.
    ///
    /// The `budget` table builds a [`RetryBudget`](crate::RetryBudget) for this
    /// policy; a key left out keeps the default of
    /// [`RetryBudget::builder`](crate::RetryBudget::builder).
    ///
    /// **Durations** are strings of one or more `<number><unit>` parts: `"250ms"`,
    /// `"2s"`, `"1.5s"`, `"1m30s"`, `"500us"` (or `"500µs"`), `"10ns"`, `"1h"`; units
    /// are `ns`, `us`, `ms`, `s`, `m` and `h`, and the longer spellings of the
    /// [humantime](https://docs.rs/humantime) crate (`sec`, `min`, `hours`, `days`…)
    /// work too. A bare `"0"` is zero. Fractions are truncated to the nanosecond.
    /// Negative values, missing or unknown units and durations too large to represent
    /// are errors. Disabling the deadline or the attempt timeout is spelled `"none"`,
    /// and only so: there is no `false` or `0` shorthand (zero is rejected, as in the
    /// builder).
    ///
    /// # Errors name the setting
    ///
    /// Unknown keys are rejected by serde (`deny_unknown_fields`), so a misspelt
    /// setting does not silently keep its default; an unknown enum value is rejected
    /// by serde too, with the setting in the message. Everything else — durations,
    /// status codes, contradictory backoff settings and whatever the builder rejects —
    /// is a [`ConfigError`](crate::ConfigError) whose
    /// [`field`](crate::ConfigError::field) is the setting's path (`"backoff.base"`,
    /// `"budget.ratio"`) and whose message starts with it.
    ///
    /// # Example
    /// ```
    /// use std::time::Duration;
    /// use reqwest_resilience::{Backoff, RetryPolicyConfig};
    ///
    /// let config: RetryPolicyConfig = toml::from_str(
    ///     r#"
    ///     max_attempts = 4
    ///     deadline = "5s"
    ///     attempt_timeout = "1.5s"
    ///     transient_statuses = [429, 502, 503, 504]
    ///
    ///     [backoff]
    ///     strategy = "decorrelated_jitter"
    ///     base = "50ms"
    ///     cap = "1s"
    ///
    ///     [budget]
    ///     ratio = 0.2
    ///     window = "30s"
    ///     "#,
    /// )?;
    /// let policy = config.build()?;
    /// assert_eq!(policy.max_attempts(), 4);
    /// assert_eq!(
    ///     policy.backoff(),
    ///     Backoff::decorrelated_jitter(Duration::from_millis(50), Duration::from_secs(1))
    /// );
    /// assert_eq!(policy.deadline(), Some(Duration::from_secs(5)));
    /// assert_eq!(policy.attempt_timeout(), Some(Duration::from_millis(1500)));
    /// assert_eq!(policy.budget().map(|b| b.ratio()), Some(0.2));
    ///
    /// // A mistake names the setting to fix.
    /// let bad: RetryPolicyConfig = toml::from_str(
    ///     r#"
    ///     [backoff]
    ///     base = "2 parsecs"
    ///     "#,
    /// )?;
    /// let error = bad.build().unwrap_err();
    /// assert_eq!(error.field(), Some("backoff.base"));
    /// assert_eq!(
    ///     error.to_string(),
    ///     r#"backoff.base: invalid duration "2 parsecs": unknown unit "parsecs" (use ns, us, ms, s, m or h)"#
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// Code adds what configuration cannot hold:
    /// ```
    /// use reqwest_resilience::{RecordingSleeper, RetryPolicyConfig};
    ///
    /// let config: RetryPolicyConfig = serde_json::from_str(r#"{ "max_attempts": 2 }"#)?;
    /// let policy = config
    ///     .to_builder()?
    ///     .sleeper(RecordingSleeper::new())
    ///     .build()?;
    /// assert_eq!(policy.max_attempts(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// The fields are private so that settings can be added without breaking
    /// callers: load a configuration with serde or [`from_env_vars`](Self::from_env_vars),
    /// and override it in code through [`to_builder`](Self::to_builder).
    pub struct RetryPolicyConfig at "" in (whole, whole_mut) {
        max_attempts: u32 {
            value: "a whole number from 1 to 50, the first attempt included",
            example: "4",
            apply: |builder, attempts, _| Ok(builder.max_attempts(*attempts)),
        }
        deadline: LimitText {
            value: r#"a duration, or `"none"` for no deadline"#,
            example: r#""10s""#,
            apply: |builder, text, name| {
                Ok(match text.parse(name)? {
                    Some(deadline) => builder.deadline(deadline),
                    None => builder.no_deadline(),
                })
            },
        }
        attempt_timeout: LimitText {
            value: r#"a duration, or `"none"` for no per-attempt timeout"#,
            example: r#""2s""#,
            apply: |builder, text, name| {
                Ok(match text.parse(name)? {
                    Some(timeout) => builder.attempt_timeout(timeout),
                    None => builder.no_attempt_timeout(),
                })
            },
        }
        retry_after_ceiling: DurationText {
            value: "a duration: the longest `Retry-After` waited out",
            example: r#""20s""#,
            apply: |builder, text, name| Ok(builder.retry_after_ceiling(text.parse(name)?)),
        }
        transient_statuses: Vec<u16> {
            value: "status codes (replaces the default set)",
            example: "[429, 502, 503, 504]",
            apply: |builder, codes, name| Ok(builder.transient_statuses(status_set(name, codes)?)),
        }
        retry_conflict_when_keyed: bool {
            value: "retry a 409 on a keyed request",
            example: "false",
            apply: |builder, retry, _| Ok(builder.retry_conflict_when_keyed(*retry)),
        }
        conflict_delay: DurationText {
            value: "a duration: the shortest pause after such a 409",
            example: r#""2s""#,
            apply: |builder, text, name| Ok(builder.conflict_delay(text.parse(name)?)),
        }
        key_attachment: KeyAttachmentSetting {
            value: r#"`"unsafe_methods"`, `"always"` or `"never"`"#,
            example: r#""always""#,
            apply: |builder, KeyAttachmentSetting(attachment), _| {
                Ok(builder.key_attachment(*attachment))
            },
        }
        key_format: KeyFormatSetting {
            value: r#"`"token"` or `"sf_string"`"#,
            example: r#""sf_string""#,
            apply: |builder, KeyFormatSetting(format), _| Ok(builder.key_format(*format)),
        }
        key_header: String {
            value: "a header name",
            example: r#""X-Idempotency-Key""#,
            apply: |builder, name, _| Ok(builder.key_header(name.as_str())),
        }
        request_id_header: String {
            value: "a header name",
            example: r#""X-Correlation-Id""#,
            apply: |builder, name, _| Ok(builder.request_id_header(name.as_str())),
        }
        server_hint_header: String {
            value: "a header name whose `true`/`false` overrides classification (off if absent)",
            example: r#""Stripe-Should-Retry""#,
            apply: |builder, name, _| Ok(builder.server_hint_header(name.as_str())),
        }
        redact_query_params: Vec<String> {
            value: "query parameter names whose values spans show as `REDACTED` (besides OpenTelemetry's four)",
            example: r#"["api_key", "token"]"#,
            apply: |builder, names, _| {
                Ok(builder.redact_query_params(names.iter().map(String::as_str)))
            },
        }
        rng_seed: u64 {
            value: "a whole number (tests only: repeatable jitter and throttle draws)",
            example: "7",
            apply: |builder, seed, _| Ok(builder.rng_seed(*seed)),
        }
    }
    and {
        #[serde(skip_serializing_if = "Option::is_none")]
        backoff: Option<BackoffConfig>,
        #[serde(skip_serializing_if = "Option::is_none")]
        budget: Option<BudgetConfig>,
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "super::switch::table_or_on"
        )]
        breaker: Option<BreakerSettings>,
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "super::switch::table_or_on"
        )]
        throttle: Option<ThrottleSettings>,
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "super::switch::table_or_on"
        )]
        hedging: Option<HedgingSettings>,
        /// The environment variable that set each setting, so that an error found
        /// only when the policy is built still names the variable.
        #[serde(skip)]
        origins: Origins,
    }
}

settings_table! {
    /// The `backoff` table: a strategy and the durations it takes, built together
    /// into one [`Backoff`](crate::Backoff) (see `backoff_table.rs`).
    pub(super) struct BackoffConfig at "backoff." in (backoff_table, backoff_table_mut) {
        strategy: Strategy {
            value: r#"`"full_jitter"`, `"decorrelated_jitter"`, `"constant"` or `"none"`"#,
            example: r#""decorrelated_jitter""#,
        }
        base: DurationText {
            value: "a duration: the first pause of a jittered strategy",
            example: r#""50ms""#,
        }
        cap: DurationText {
            value: "a duration: the longest pause of a jittered strategy",
            example: r#""1s""#,
        }
        delay: DurationText {
            value: r#"a duration: every pause of `"constant"`, which needs it"#,
            example: r#""250ms""#,
        }
    }
}

fn whole(config: &RetryPolicyConfig) -> Option<&RetryPolicyConfig> {
    Some(config)
}

fn whole_mut(config: &mut RetryPolicyConfig) -> &mut RetryPolicyConfig {
    config
}

fn backoff_table(config: &RetryPolicyConfig) -> Option<&BackoffConfig> {
    config.backoff.as_ref()
}

fn backoff_table_mut(config: &mut RetryPolicyConfig) -> &mut BackoffConfig {
    config.backoff.get_or_insert_with(BackoffConfig::default)
}
