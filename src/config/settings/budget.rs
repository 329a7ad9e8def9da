//! The `budget` key: `"unlimited"`, or a table of the `budget.*` keys, read by a
//! hand-written deserializer so that the table's own errors name their key.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use super::super::duration::DurationText;
use super::super::error::ConfigError;
use super::super::kind::Kind;
use super::super::row::{settings_table, Applies, Row};
use super::RetryPolicyConfig;

/// The `budget` key itself: `"unlimited"`, which takes no `budget.*` keys.
pub(super) const BUDGET: &[Row<RetryPolicyConfig>] = &[Row {
    path: "budget",
    value: r#"`"unlimited"` for no retry budget, or a table of the `budget.*` keys"#,
    example: r#""unlimited""#,
    env_form: "`unlimited` (the `BUDGET_*` variables give a table)",
    read_env: |config, var, text| {
        if !text.eq_ignore_ascii_case("unlimited") {
            return Err(ConfigError::InvalidValue {
                field: var.to_owned(),
                value: text.to_owned(),
                expected: format!(
                    r#""unlimited" (set {} for a limited budget)"#,
                    budget_keys()
                        .map(|key| format!("{var}_{}", key.to_ascii_uppercase()))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
        config.budget = Some(BudgetConfig::Unlimited);
        Ok(())
    },
    layer: |over, merged| {
        if over.budget == Some(BudgetConfig::Unlimited) {
            merged.budget = Some(BudgetConfig::Unlimited);
        }
    },
    applies: Applies::WithItsTable,
}];

/// `budget = "unlimited"` or a `budget` table.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::config) enum BudgetConfig {
    Unlimited,
    Limited(BudgetSettings),
}

settings_table! {
    /// The `budget` table, built together into one
    /// [`RetryBudget`](crate::RetryBudget) (see `budget_table.rs`).
    pub(in crate::config) struct BudgetSettings at "budget." in (budget_table, budget_table_mut) {
        ratio: f64 {
            value: "a number such as 0.2: the retries allowed per request",
            example: "0.2",
        }
        window: DurationText {
            value: "a duration: how far back requests and retries are counted",
            example: r#""30s""#,
        }
        reserve: u32 {
            value: "a whole number: the retries allowed over the ratio in each window",
            example: "5",
        }
        per_host: bool {
            value: "one budget per host rather than one for all",
            example: "true",
        }
    }
}

fn budget_table(config: &RetryPolicyConfig) -> Option<&BudgetSettings> {
    match &config.budget {
        Some(BudgetConfig::Limited(settings)) => Some(settings),
        Some(BudgetConfig::Unlimited) | None => None,
    }
}

/// The budget table, replacing `"unlimited"`: a budget key asks for a limited budget.
fn budget_table_mut(config: &mut RetryPolicyConfig) -> &mut BudgetSettings {
    if !matches!(config.budget, Some(BudgetConfig::Limited(_))) {
        config.budget = Some(BudgetConfig::Limited(BudgetSettings::default()));
    }
    match &mut config.budget {
        Some(BudgetConfig::Limited(settings)) => settings,
        Some(BudgetConfig::Unlimited) | None => unreachable!("the budget table was just set"),
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

/// The `budget` table's keys: `ratio`, `window`…
fn budget_keys() -> impl Iterator<Item = &'static str> {
    BudgetSettings::ROWS
        .iter()
        .map(|row| row.path.trim_start_matches("budget."))
}

/// What a budget may be written as, for messages.
fn budget_forms() -> String {
    let keys: Vec<&str> = budget_keys().collect();
    format!(r#""unlimited" or a table of {}"#, keys.join(", "))
}

struct BudgetVisitor;

impl<'de> Visitor<'de> for BudgetVisitor {
    type Value = BudgetConfig;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "budget: {}", budget_forms())
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<BudgetConfig, E> {
        if value.trim().eq_ignore_ascii_case("unlimited") {
            Ok(BudgetConfig::Unlimited)
        } else {
            Err(E::custom(ConfigError::InvalidValue {
                field: "budget".to_owned(),
                value: value.to_owned(),
                expected: budget_forms(),
            }))
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<BudgetConfig, A::Error> {
        BudgetSettings::deserialize(de::value::MapAccessDeserializer::new(map))
            .map(BudgetConfig::Limited)
    }
}
