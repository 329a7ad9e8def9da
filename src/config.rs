//! Retry policies from configuration (feature `serde`): TOML, JSON, YAML… through
//! serde, or environment variables, with human-readable durations.
//!
//! Retry settings are operational: the engineer on call who sees a dependency
//! shedding load needs to lower the attempts, stretch the backoff or shrink the
//! retry budget *now*, without a code change and a redeploy. [`RetryPolicyConfig`]
//! is the written form of a [`RetryPolicyBuilder`]; it is validated by the same
//! [`RetryPolicyBuilder::build`], and every error names the setting to fix.

use std::fmt;
use std::time::Duration;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::backoff::Backoff;
use crate::budget::{InvalidBudget, RetryBudget};
use crate::classify::StatusSet;
use crate::idempotency::{KeyAttachment, KeyFormat};
use crate::policy::{BuildError, RetryPolicy, RetryPolicyBuilder, DEFAULT_BACKOFF};

/// The units a duration may use, for error messages.
const UNITS: &str = "ns, us, ms, s, m or h";

/// A retry policy written as configuration: every [`RetryPolicyBuilder`] setting
/// that can be written down, each optional, loaded with serde (TOML, JSON, YAML…)
/// or from environment variables ([`from_env_vars`](Self::from_env_vars)).
///
/// Retry settings are operational: when a dependency sheds load, the engineer on
/// call needs to lower the attempts, stretch the backoff or shrink the retry budget
/// *now*, without a code change and a redeploy. Keep the policy in the service's
/// configuration and build it at start-up (or on reload) with
/// [`build`](Self::build) — validated by the same [`RetryPolicyBuilder::build`] as
/// a policy written in code — or with [`to_builder`](Self::to_builder) to add what
/// only code can give (a [`Sleeper`](crate::Sleeper), a
/// [`Classifier`](crate::Classifier), a shared [`RetryBudget`](crate::RetryBudget)).
///
/// A setting left out keeps its default (see [`RetryPolicy`]), so an empty
/// configuration is the default policy.
///
/// # Settings
///
/// | key | value | example |
/// |---|---|---|
/// | `max_attempts` | 1–50, the first attempt included | `4` |
/// | `backoff` | a table, see below | `{ strategy = "full_jitter", base = "100ms", cap = "2s" }` |
/// | `deadline` | a duration, or `"none"` for no deadline | `"10s"` |
/// | `attempt_timeout` | a duration, or `"none"` for no per-attempt timeout | `"2s"` |
/// | `retry_after_ceiling` | a duration | `"30s"` |
/// | `transient_statuses` | status codes (replaces the default set) | `[429, 502, 503, 504]` |
/// | `retry_conflict_when_keyed` | retry a 409 on a keyed request | `true` |
/// | `key_attachment` | `"unsafe_methods"`, `"always"` or `"never"` | `"always"` |
/// | `key_format` | `"token"` or `"sf_string"` | `"sf_string"` |
/// | `key_header` | a header name | `"Idempotency-Key"` |
/// | `request_id_header` | a header name | `"X-Request-Id"` |
/// | `server_hint_header` | a header name whose `true`/`false` overrides classification (off if absent) | `"Stripe-Should-Retry"` |
/// | `budget` | `"unlimited"`, or a table `{ ratio, window, reserve, per_host }` | `{ ratio = 0.2, window = "30s" }` |
/// | `rng_seed` | an integer (tests only: repeatable jitter) | `7` |
///
/// `backoff` has a `strategy` — `"full_jitter"` (the default), `"decorrelated_jitter"`,
/// `"constant"` or `"none"` — and the durations that strategy takes: `base` and `cap`
/// for the jittered ones (defaults 100 ms and 2 s), `delay` (required) for
/// `"constant"`, nothing for `"none"`. A duration the strategy does not take is an
/// error rather than silently ignored.
///
/// In a `budget` table, a key left out keeps its default (ratio 0.1, window 10 s,
/// reserve 10, not per host).
///
/// **Durations** are strings of one or more `<number><unit>` parts: `"250ms"`,
/// `"2s"`, `"1.5s"`, `"1m30s"`, `"500us"` (or `"500µs"`), `"10ns"`, `"1h"`; units
/// are `ns`, `us`, `ms`, `s`, `m` and `h`. A bare `"0"` is zero. Negative values,
/// missing or unknown units and durations too large to represent are errors.
/// Disabling the deadline or the attempt timeout is spelled `"none"`, and only so:
/// there is no `false` or `0` shorthand (zero is rejected, as in the builder).
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
    max_attempts: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    deadline: Option<LimitText>,
    #[serde(skip_serializing_if = "Option::is_none")]
    attempt_timeout: Option<LimitText>,
    #[serde(skip_serializing_if = "Option::is_none")]
    retry_after_ceiling: Option<DurationText>,
    #[serde(skip_serializing_if = "Option::is_none")]
    transient_statuses: Option<Vec<u16>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    retry_conflict_when_keyed: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    key_attachment: Option<KeyAttachmentSetting>,
    #[serde(skip_serializing_if = "Option::is_none")]
    key_format: Option<KeyFormatSetting>,
    #[serde(skip_serializing_if = "Option::is_none")]
    key_header: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_id_header: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_hint_header: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rng_seed: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    backoff: Option<BackoffConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    budget: Option<BudgetConfig>,
}

/// The `backoff` table.
#[derive(Deserialize, Serialize, Debug, Clone, Default, PartialEq)]
#[serde(deny_unknown_fields)]
struct BackoffConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    strategy: Option<Strategy>,
    #[serde(skip_serializing_if = "Option::is_none")]
    base: Option<DurationText>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cap: Option<DurationText>,
    #[serde(skip_serializing_if = "Option::is_none")]
    delay: Option<DurationText>,
}

impl BackoffConfig {
    fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// `budget = "unlimited"` or a `budget` table.
#[derive(Debug, Clone, PartialEq)]
enum BudgetConfig {
    Unlimited,
    Limited(BudgetSettings),
}

/// The `budget` table.
#[derive(Deserialize, Serialize, Debug, Clone, Default, PartialEq)]
#[serde(deny_unknown_fields)]
struct BudgetSettings {
    #[serde(skip_serializing_if = "Option::is_none")]
    ratio: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    window: Option<DurationText>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reserve: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    per_host: Option<bool>,
}

impl BudgetSettings {
    fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// A duration as written; parsed when the policy is built, so that the error can
/// name the setting.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(transparent)]
struct DurationText(String);

/// A duration or `"none"`, as written.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(transparent)]
struct LimitText(String);

/// Accepts a string; `expecting` explains what it should hold.
struct TextVisitor(&'static str);

impl Visitor<'_> for TextVisitor {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<String, E> {
        Ok(value.to_owned())
    }
}

impl<'de> Deserialize<'de> for DurationText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_str(TextVisitor(r#"a duration such as "250ms" or "2s""#))
            .map(Self)
    }
}

impl<'de> Deserialize<'de> for LimitText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_str(TextVisitor(
                r#"a duration such as "5s", or "none" for no limit"#,
            ))
            .map(Self)
    }
}

/// The text of an optional duration.
fn text(value: &Option<DurationText>) -> Option<&str> {
    value.as_ref().map(|DurationText(text)| text.as_str())
}

/// A setting with a fixed set of names (an enum written as a string).
trait Choice: Sized + Copy + PartialEq + 'static {
    /// The setting's path, for messages.
    const FIELD: &'static str;
    /// Every accepted name and its value.
    const NAMES: &'static [(&'static str, Self)];

    fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, value)| *value == self)
            .map_or("", |(name, _)| name)
    }

    fn expected() -> String {
        let names: Vec<String> = Self::NAMES
            .iter()
            .map(|(name, _)| format!("{name:?}"))
            .collect();
        format!("one of {}", names.join(", "))
    }

    /// Parses `value`; an error names `field` (a setting path or a variable).
    fn parse(field: &str, value: &str) -> Result<Self, ConfigError> {
        Self::NAMES
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(value.trim()))
            .map(|(_, choice)| *choice)
            .ok_or_else(|| ConfigError::InvalidValue {
                field: field.to_owned(),
                value: value.to_owned(),
                expected: Self::expected(),
            })
    }
}

struct ChoiceVisitor<T>(std::marker::PhantomData<T>);

impl<T: Choice> Visitor<'_> for ChoiceVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", T::FIELD, T::expected())
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<T, E> {
        T::parse(T::FIELD, value).map_err(E::custom)
    }
}

fn deserialize_choice<'de, D: Deserializer<'de>, T: Choice>(
    deserializer: D,
) -> Result<T, D::Error> {
    deserializer.deserialize_str(ChoiceVisitor(std::marker::PhantomData))
}

macro_rules! choice_serde {
    ($type:ty) => {
        impl<'de> Deserialize<'de> for $type {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                deserialize_choice(deserializer)
            }
        }

        impl Serialize for $type {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.name())
            }
        }
    };
}

/// `backoff.strategy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strategy {
    FullJitter,
    DecorrelatedJitter,
    Constant,
    None,
}

impl Choice for Strategy {
    const FIELD: &'static str = "backoff.strategy";
    const NAMES: &'static [(&'static str, Self)] = &[
        ("full_jitter", Self::FullJitter),
        ("decorrelated_jitter", Self::DecorrelatedJitter),
        ("constant", Self::Constant),
        ("none", Self::None),
    ];
}
choice_serde!(Strategy);

/// `key_attachment`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct KeyAttachmentSetting(KeyAttachment);

impl Choice for KeyAttachmentSetting {
    const FIELD: &'static str = "key_attachment";
    const NAMES: &'static [(&'static str, Self)] = &[
        ("unsafe_methods", Self(KeyAttachment::UnsafeMethods)),
        ("always", Self(KeyAttachment::Always)),
        ("never", Self(KeyAttachment::Never)),
    ];
}
choice_serde!(KeyAttachmentSetting);

/// `key_format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct KeyFormatSetting(KeyFormat);

impl Choice for KeyFormatSetting {
    const FIELD: &'static str = "key_format";
    const NAMES: &'static [(&'static str, Self)] = &[
        ("token", Self(KeyFormat::Token)),
        ("sf_string", Self(KeyFormat::SfString)),
    ];
}
choice_serde!(KeyFormatSetting);

impl Serialize for BudgetConfig {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Unlimited => serializer.serialize_str("unlimited"),
            Self::Limited(settings) => settings.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for BudgetConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct BudgetVisitor;

        impl<'de> Visitor<'de> for BudgetVisitor {
            type Value = BudgetConfig;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(r#"budget: "unlimited" or a table of ratio, window, reserve, per_host"#)
            }

            fn visit_str<E: de::Error>(self, value: &str) -> Result<BudgetConfig, E> {
                if value.trim().eq_ignore_ascii_case("unlimited") {
                    Ok(BudgetConfig::Unlimited)
                } else {
                    Err(E::custom(ConfigError::InvalidValue {
                        field: "budget".to_owned(),
                        value: value.to_owned(),
                        expected: r#""unlimited" or a table of ratio, window, reserve, per_host"#
                            .to_owned(),
                    }))
                }
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<BudgetConfig, A::Error> {
                BudgetSettings::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(BudgetConfig::Limited)
            }
        }

        deserializer.deserialize_any(BudgetVisitor)
    }
}

/// Why a [`RetryPolicyConfig`] could not become a policy. Every variant names the
/// setting (or environment variable) at fault: see [`field`](Self::field).
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
    /// The settings parse but [`RetryPolicyBuilder::build`] rejects them.
    #[error("{}: {source}", .field.unwrap_or("retry policy"))]
    Policy {
        /// The setting the builder's error is about, where it maps to one.
        field: Option<&'static str>,
        /// The builder's error.
        source: BuildError,
    },
}

impl ConfigError {
    /// The setting at fault: its path in the configuration (`"max_attempts"`,
    /// `"backoff.base"`, `"budget.ratio"`) or, for errors from
    /// [`RetryPolicyConfig::from_env_vars`], the environment variable's name.
    pub fn field(&self) -> Option<&str> {
        match self {
            Self::InvalidDuration { field, .. }
            | Self::InvalidValue { field, .. }
            | Self::Conflict { field, .. } => Some(field),
            Self::UnknownVariable { name, .. } => Some(name),
            Self::Policy { field, .. } => *field,
        }
    }
}

impl RetryPolicyConfig {
    /// A builder with the default settings overridden by the ones this
    /// configuration sets. Add what configuration cannot hold (a sleeper, a
    /// classifier, a shared budget), then [`build`](RetryPolicyBuilder::build) — or
    /// call [`build`](Self::build) to get errors mapped to setting names.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the setting: a duration that does not parse, a
    /// status code outside 100–999, or backoff settings the strategy does not take.
    /// Range checks (attempts, base ≤ cap, …) are left to the builder.
    pub fn to_builder(&self) -> Result<RetryPolicyBuilder, ConfigError> {
        let mut builder = RetryPolicyBuilder::new();
        if let Some(attempts) = self.max_attempts {
            builder = builder.max_attempts(attempts);
        }
        if let Some(backoff) = self.backoff_value()? {
            builder = builder.backoff(backoff);
        }
        if let Some(LimitText(text)) = &self.deadline {
            builder = match parse_limit("deadline", text)? {
                Some(deadline) => builder.deadline(deadline),
                None => builder.no_deadline(),
            };
        }
        if let Some(LimitText(text)) = &self.attempt_timeout {
            builder = match parse_limit("attempt_timeout", text)? {
                Some(timeout) => builder.attempt_timeout(timeout),
                None => builder.no_attempt_timeout(),
            };
        }
        if let Some(DurationText(text)) = &self.retry_after_ceiling {
            builder = builder.retry_after_ceiling(duration_setting("retry_after_ceiling", text)?);
        }
        if let Some(codes) = &self.transient_statuses {
            builder = builder.transient_statuses(status_set("transient_statuses", codes)?);
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
        match &self.budget {
            None => {}
            Some(BudgetConfig::Unlimited) => builder = builder.no_budget(),
            Some(BudgetConfig::Limited(settings)) => {
                let mut budget = RetryBudget::builder();
                if let Some(ratio) = settings.ratio {
                    budget = budget.ratio(ratio);
                }
                if let Some(DurationText(text)) = &settings.window {
                    budget = budget.window(duration_setting("budget.window", text)?);
                }
                if let Some(reserve) = settings.reserve {
                    budget = budget.reserve(reserve);
                }
                if let Some(per_host) = settings.per_host {
                    budget = budget.per_host(per_host);
                }
                let budget = budget.build().map_err(|invalid| {
                    let (field, value) = match invalid {
                        InvalidBudget::Ratio(ratio) => ("budget.ratio", ratio.to_string()),
                        InvalidBudget::Window(window) => ("budget.window", format!("{window:?}")),
                    };
                    ConfigError::InvalidValue {
                        field: field.to_owned(),
                        value,
                        expected: invalid.to_string(),
                    }
                })?;
                builder = builder.budget(budget);
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
    /// (`max_attempts`, `backoff.base`, `deadline`, `attempt_timeout`,
    /// `budget.ratio`…).
    pub fn build(&self) -> Result<RetryPolicy, ConfigError> {
        self.to_builder()?
            .build()
            .map_err(|source| ConfigError::Policy {
                field: self.field_of(&source),
                source,
            })
    }

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
    /// | `RETRY_RETRY_AFTER_CEILING` | `30s` |
    /// | `RETRY_TRANSIENT_STATUSES` | `429,503` (empty: no status is transient) |
    /// | `RETRY_RETRY_CONFLICT_WHEN_KEYED` | `true`/`false` (or `1`/`0`) |
    /// | `RETRY_KEY_ATTACHMENT`, `RETRY_KEY_FORMAT` | `always`, `sf_string` |
    /// | `RETRY_KEY_HEADER`, `RETRY_REQUEST_ID_HEADER`, `RETRY_SERVER_HINT_HEADER` | `X-Idempotency-Key` |
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
                "BACKOFF_BASE" => backoff.base = Some(checked_duration(var, value)?),
                "BACKOFF_CAP" => backoff.cap = Some(checked_duration(var, value)?),
                "BACKOFF_DELAY" => backoff.delay = Some(checked_duration(var, value)?),
                "DEADLINE" => config.deadline = Some(checked_limit(var, value)?),
                "ATTEMPT_TIMEOUT" => config.attempt_timeout = Some(checked_limit(var, value)?),
                "RETRY_AFTER_CEILING" => {
                    config.retry_after_ceiling = Some(checked_duration(var, value)?);
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
                    budget.window = Some(checked_duration(var, value)?);
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

    /// The backoff this configuration sets, if any.
    fn backoff_value(&self) -> Result<Option<Backoff>, ConfigError> {
        let Some(config) = &self.backoff else {
            return Ok(None);
        };
        let strategy = config.strategy.unwrap_or(Strategy::FullJitter);
        let takes_none = |field: &str, value: &Option<DurationText>, takes: &str| match value {
            Some(_) => Err(ConfigError::Conflict {
                field: format!("backoff.{field}"),
                reason: format!(
                    "backoff strategy {:?} takes {takes}, not {field}",
                    strategy.name()
                ),
            }),
            None => Ok(()),
        };
        let backoff =
            match strategy {
                Strategy::FullJitter | Strategy::DecorrelatedJitter => {
                    takes_none("delay", &config.delay, "base and cap")?;
                    let (default_base, default_cap) = jitter_defaults();
                    let base = optional_duration("backoff.base", text(&config.base))?
                        .unwrap_or(default_base);
                    let cap =
                        optional_duration("backoff.cap", text(&config.cap))?.unwrap_or(default_cap);
                    if strategy == Strategy::FullJitter {
                        Backoff::full_jitter(base, cap)
                    } else {
                        Backoff::decorrelated_jitter(base, cap)
                    }
                }
                Strategy::Constant => {
                    takes_none("base", &config.base, "a delay")?;
                    takes_none("cap", &config.cap, "a delay")?;
                    let delay = optional_duration("backoff.delay", text(&config.delay))?
                        .ok_or_else(|| ConfigError::Conflict {
                            field: "backoff.delay".to_owned(),
                            reason: r#"backoff strategy "constant" needs a delay"#.to_owned(),
                        })?;
                    Backoff::constant(delay)
                }
                Strategy::None => {
                    takes_none("base", &config.base, "no durations")?;
                    takes_none("cap", &config.cap, "no durations")?;
                    takes_none("delay", &config.delay, "no durations")?;
                    Backoff::none()
                }
            };
        Ok(Some(backoff))
    }

    /// The setting a [`BuildError`] is about.
    fn field_of(&self, error: &BuildError) -> Option<&'static str> {
        #[allow(unreachable_patterns)] // `BuildError` may grow variants.
        let field = match error {
            BuildError::MaxAttempts(_) => "max_attempts",
            BuildError::ZeroBackoffBase | BuildError::BackoffBaseAboveCap { .. } => "backoff.base",
            BuildError::BackoffTooLong(_) => {
                let constant = self.backoff.as_ref().and_then(|backoff| backoff.strategy)
                    == Some(Strategy::Constant);
                if constant {
                    "backoff.delay"
                } else {
                    "backoff.cap"
                }
            }
            BuildError::ZeroDeadline => "deadline",
            BuildError::RetryAfterCeilingTooLong(_) => "retry_after_ceiling",
            BuildError::ConflictDelayTooLong(_) => "conflict_delay",
            BuildError::ZeroAttemptTimeout | BuildError::AttemptTimeoutExceedsDeadline { .. } => {
                "attempt_timeout"
            }
            BuildError::EmptyHeaderName(setting)
            | BuildError::InvalidHeaderName { setting, .. } => setting,
            BuildError::SameHeaderNames(_) => "request_id_header",
            _ => return None,
        };
        Some(field)
    }
}

/// The default jittered backoff's base and cap.
fn jitter_defaults() -> (Duration, Duration) {
    match DEFAULT_BACKOFF {
        Backoff::FullJitter { base, cap } | Backoff::DecorrelatedJitter { base, cap } => {
            (base, cap)
        }
        Backoff::Constant(delay) => (delay, delay),
    }
}

/// The environment variable names after `{prefix}_`, for messages.
const ENV_SUFFIXES: &[&str] = &[
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
    "KEY_ATTACHMENT",
    "KEY_FORMAT",
    "KEY_HEADER",
    "REQUEST_ID_HEADER",
    "SERVER_HINT_HEADER",
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

/// A comma-separated list of status codes; empty for none.
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

fn status_set(field: &str, codes: &[u16]) -> Result<StatusSet, ConfigError> {
    if let Some(bad) = codes.iter().find(|code| !(100..=999).contains(*code)) {
        return Err(ConfigError::InvalidValue {
            field: field.to_owned(),
            value: bad.to_string(),
            expected: "HTTP status codes from 100 to 999".to_owned(),
        });
    }
    Ok(codes.iter().copied().collect())
}

/// Parses `text` as a duration; the error names `field`.
fn duration_setting(field: &str, text: &str) -> Result<Duration, ConfigError> {
    parse_duration(text).map_err(|reason| ConfigError::InvalidDuration {
        field: field.to_owned(),
        value: text.to_owned(),
        reason,
    })
}

fn optional_duration(field: &str, text: Option<&str>) -> Result<Option<Duration>, ConfigError> {
    text.map(|text| duration_setting(field, text)).transpose()
}

/// A duration, or `"none"` for no limit.
fn parse_limit(field: &str, text: &str) -> Result<Option<Duration>, ConfigError> {
    if text.trim().eq_ignore_ascii_case("none") {
        Ok(None)
    } else {
        duration_setting(field, text).map(Some)
    }
}

/// Checks a duration read from a variable and keeps its text.
fn checked_duration(field: &str, text: &str) -> Result<DurationText, ConfigError> {
    duration_setting(field, text).map(|_| DurationText(text.to_owned()))
}

/// Checks a duration-or-`"none"` read from a variable and keeps its text.
fn checked_limit(field: &str, text: &str) -> Result<LimitText, ConfigError> {
    parse_limit(field, text).map(|_| LimitText(text.to_owned()))
}

const NANOS_PER_SEC: u128 = 1_000_000_000;

/// Parses a human-readable duration: one or more `<number><unit>` parts, such as
/// `"250ms"`, `"1.5s"` or `"1m30s"`, with units `ns`, `us` (or `µs`), `ms`, `s`,
/// `m` and `h`; spaces between parts are allowed; `"0"` alone is zero. Exact:
/// fractions are computed in integers and truncated to the nanosecond.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let s = text.trim();
    if s.is_empty() {
        return Err(r#"empty (write e.g. "250ms" or "2s")"#.to_owned());
    }
    if s.starts_with('-') {
        return Err("negative durations are not allowed".to_owned());
    }
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    let overflow = || "too large".to_owned();
    let bytes = s.as_bytes();
    let mut i = 0;
    let mut total: u128 = 0;
    while i < bytes.len() {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        let whole = &s[start..i];
        if whole.is_empty() {
            return Err(format!("expected a number at {:?}", &s[start..]));
        }
        let mut fraction = "";
        if i < bytes.len() && bytes[i] == b'.' {
            i += 1;
            let from = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            fraction = &s[from..i];
            if fraction.is_empty() {
                return Err(format!("expected digits after \"{whole}.\""));
            }
        }
        let number = &s[start..i];
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        let unit_start = i;
        let unit_len: usize = s[i..]
            .chars()
            .take_while(|c| c.is_alphabetic())
            .map(char::len_utf8)
            .sum();
        i += unit_len;
        let unit = &s[unit_start..i];
        let unit_nanos: u128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => NANOS_PER_SEC,
            "m" => 60 * NANOS_PER_SEC,
            "h" => 3600 * NANOS_PER_SEC,
            "" => return Err(format!("missing unit after {number} (use {UNITS})")),
            _ => return Err(format!("unknown unit {unit:?} (use {UNITS})")),
        };
        let whole_value = whole.bytes().try_fold(0u128, |acc, digit| {
            acc.checked_mul(10)?.checked_add(u128::from(digit - b'0'))
        });
        let mut nanos = whole_value
            .and_then(|value| value.checked_mul(unit_nanos))
            .ok_or_else(overflow)?;
        // 18 fractional digits are finer than a nanosecond of an hour; the product
        // (< 10^18 · 3.6·10^12) fits in a u128.
        let fraction = &fraction[..fraction.len().min(18)];
        if !fraction.is_empty() {
            let numerator = fraction
                .bytes()
                .fold(0u128, |acc, digit| acc * 10 + u128::from(digit - b'0'));
            let denominator = 10u128.pow(fraction.len() as u32);
            nanos = nanos
                .checked_add(numerator * unit_nanos / denominator)
                .ok_or_else(overflow)?;
        }
        total = total.checked_add(nanos).ok_or_else(overflow)?;
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
    }
    let secs = u64::try_from(total / NANOS_PER_SEC).map_err(|_| overflow())?;
    // The remainder is below 10^9, so it fits.
    let nanos = (total % NANOS_PER_SEC) as u32;
    Ok(Duration::new(secs, nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Duration {
        parse_duration(text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
    }

    fn err(text: &str) -> String {
        parse_duration(text).expect_err(text)
    }

    #[test]
    fn durations_in_every_unit() {
        assert_eq!(ok("250ms"), Duration::from_millis(250));
        assert_eq!(ok("2s"), Duration::from_secs(2));
        assert_eq!(ok("1.5s"), Duration::from_millis(1500));
        assert_eq!(ok("1m"), Duration::from_secs(60));
        assert_eq!(ok("1m30s"), Duration::from_secs(90));
        assert_eq!(ok("500us"), Duration::from_micros(500));
        assert_eq!(ok("500µs"), Duration::from_micros(500));
        assert_eq!(ok("10ns"), Duration::from_nanos(10));
        assert_eq!(ok("1h"), Duration::from_secs(3600));
        assert_eq!(ok(" 1h 2m 3s "), Duration::from_secs(3723));
        assert_eq!(ok("0"), Duration::ZERO);
        assert_eq!(ok("0s"), Duration::ZERO);
        assert_eq!(ok("0.000000001s"), Duration::from_nanos(1));
        assert_eq!(ok("0.0000000019s"), Duration::from_nanos(1));
        assert_eq!(ok("1.25h"), Duration::from_secs(4500));
        assert_eq!(
            ok("0.123456789123456789123s"),
            Duration::from_nanos(123_456_789)
        );
        assert_eq!(ok("18446744073709551615s"), Duration::from_secs(u64::MAX));
    }

    #[test]
    fn bad_durations_say_why() {
        assert!(err("").contains("empty"));
        assert!(err("   ").contains("empty"));
        assert!(err("-1s").contains("negative"));
        assert!(err("100").contains("missing unit after 100"));
        assert!(err("1h30").contains("missing unit after 30"));
        assert!(err("2 parsecs").contains(r#"unknown unit "parsecs""#));
        assert!(err("5S").contains(r#"unknown unit "S""#));
        assert!(err("1.s").contains("digits after"));
        assert!(err(".5s").contains("expected a number"));
        assert!(err("+5s").contains("expected a number"));
        assert!(err("5s!").contains("expected a number"));
        assert!(err("18446744073709551616s").contains("too large"));
        assert!(err("99999999999999999999999999999999999999999h").contains("too large"));
        assert!(err("1e3s").contains(r#"unknown unit "e""#));
    }
}
