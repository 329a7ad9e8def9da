//! The written form of a policy: [`RetryPolicyConfig`] and its tables, as serde
//! reads and writes them. Values stay as written (durations as text) until the
//! policy is built, so that an error can name the setting.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use super::choice::{KeyAttachmentSetting, KeyFormatSetting, Strategy};
use super::duration::{DurationText, LimitText};
use super::error::ConfigError;

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
/// | key | value | example |
/// |---|---|---|
/// | `max_attempts` | 1–50, the first attempt included | `4` |
/// | `backoff` | a table, see below | `{ strategy = "full_jitter", base = "50ms", cap = "1s" }` |
/// | `deadline` | a duration, or `"none"` for no deadline | `"10s"` |
/// | `attempt_timeout` | a duration, or `"none"` for no per-attempt timeout | `"2s"` |
/// | `retry_after_ceiling` | a duration | `"20s"` |
/// | `transient_statuses` | status codes (replaces the default set) | `[429, 502, 503, 504]` |
/// | `retry_conflict_when_keyed` | retry a 409 on a keyed request | `true` |
/// | `conflict_delay` | a duration: the shortest pause after such a 409 | `"2s"` |
/// | `key_attachment` | `"unsafe_methods"`, `"always"` or `"never"` | `"always"` |
/// | `key_format` | `"token"` or `"sf_string"` | `"sf_string"` |
/// | `key_header` | a header name | `"X-Idempotency-Key"` |
/// | `request_id_header` | a header name | `"X-Correlation-Id"` |
/// | `server_hint_header` | a header name whose `true`/`false` overrides classification (off if absent) | `"Stripe-Should-Retry"` |
/// | `redact_query_params` | query parameter names whose values spans show as `REDACTED` (besides OpenTelemetry's four) | `["api_key", "token"]` |
/// | `budget` | `"unlimited"`, or a table `{ ratio, window, reserve, per_host }` | `{ ratio = 0.2, window = "30s" }` |
/// | `rng_seed` | an integer (tests only: repeatable jitter) | `7` |
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
/// is a [`ConfigError`] whose [`field`](ConfigError::field) is the setting's path
/// (`"backoff.base"`, `"budget.ratio"`) and whose message starts with it.
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
/// assert_eq!(policy.budget().ratio(), 0.2);
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
#[derive(Deserialize, Serialize, Debug, Clone, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RetryPolicyConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) max_attempts: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) deadline: Option<LimitText>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) attempt_timeout: Option<LimitText>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) retry_after_ceiling: Option<DurationText>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) transient_statuses: Option<Vec<u16>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) retry_conflict_when_keyed: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) conflict_delay: Option<DurationText>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) key_attachment: Option<KeyAttachmentSetting>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) key_format: Option<KeyFormatSetting>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) key_header: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) request_id_header: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) server_hint_header: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) redact_query_params: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) rng_seed: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) backoff: Option<BackoffConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) budget: Option<BudgetConfig>,
    /// The environment variable that set each setting, so that an error found only
    /// when the policy is built still names the variable.
    #[serde(skip)]
    pub(super) origins: Origins,
}

/// Setting path → the environment variable it was read from (settings from a file
/// or from code have none, and errors name their path).
#[derive(Debug, Clone, Default)]
pub(super) struct Origins(Vec<(String, String)>);

impl Origins {
    /// Records that `path` (`"backoff.base"`) was set by `variable`.
    pub(super) fn set(&mut self, path: String, variable: String) {
        self.0.retain(|(known, _)| *known != path);
        self.0.push((path, variable));
    }

    /// The name an error about `path` should use: the variable that set it, or the
    /// path itself.
    pub(super) fn name_of(&self, path: &str) -> String {
        self.0
            .iter()
            .find(|(known, _)| known == path)
            .map_or_else(|| path.to_owned(), |(_, variable)| variable.clone())
    }

    /// Adds `newer`'s records, which win over this one's.
    pub(super) fn extend(&mut self, newer: Origins) {
        for (path, variable) in newer.0 {
            self.set(path, variable);
        }
    }
}

/// Where a setting came from does not change what it says: two configurations with
/// the same settings are equal, whether read from a file or from the environment.
impl PartialEq for Origins {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// The `backoff` table.
#[derive(Deserialize, Serialize, Debug, Clone, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub(super) struct BackoffConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) strategy: Option<Strategy>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) base: Option<DurationText>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) cap: Option<DurationText>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) delay: Option<DurationText>,
}

/// `budget = "unlimited"` or a `budget` table.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum BudgetConfig {
    Unlimited,
    Limited(BudgetSettings),
}

/// The `budget` table.
#[derive(Deserialize, Serialize, Debug, Clone, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub(super) struct BudgetSettings {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) ratio: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) window: Option<DurationText>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) reserve: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) per_host: Option<bool>,
}

impl BackoffConfig {
    pub(super) fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

impl BudgetSettings {
    pub(super) fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

impl Serialize for BudgetConfig {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Unlimited => serializer.serialize_str("unlimited"),
            Self::Limited(settings) => settings.serialize(serializer),
        }
    }
}

/// Hand-written rather than `#[serde(untagged)]`: an untagged enum replaces the
/// table's own errors (a misspelt key, a window that is not a string) with "did
/// not match any variant", and those errors must name the key.
impl<'de> Deserialize<'de> for BudgetConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(BudgetVisitor)
    }
}

/// What a budget may be written as, for messages.
const BUDGET_FORMS: &str = r#""unlimited" or a table of ratio, window, reserve, per_host"#;

struct BudgetVisitor;

impl<'de> Visitor<'de> for BudgetVisitor {
    type Value = BudgetConfig;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "budget: {BUDGET_FORMS}")
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<BudgetConfig, E> {
        if value.trim().eq_ignore_ascii_case("unlimited") {
            Ok(BudgetConfig::Unlimited)
        } else {
            Err(E::custom(ConfigError::InvalidValue {
                field: "budget".to_owned(),
                value: value.to_owned(),
                expected: BUDGET_FORMS.to_owned(),
            }))
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<BudgetConfig, A::Error> {
        BudgetSettings::deserialize(de::value::MapAccessDeserializer::new(map))
            .map(BudgetConfig::Limited)
    }
}
