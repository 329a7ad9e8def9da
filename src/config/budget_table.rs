//! The `budget` table's keys, built together into one [`RetryBudget`] on top of
//! [`RetryBudget::builder`]'s defaults.

use super::error::ConfigError;
use super::origins::Origins;
use super::settings::BudgetSettings;
use crate::{InvalidBudget, RetryBudget};

/// The budget a `budget` table describes; an out-of-range value is a
/// [`ConfigError::Budget`] naming its key, or the variable that set it.
pub(super) fn budget(
    settings: &BudgetSettings,
    origins: &Origins,
) -> Result<RetryBudget, ConfigError> {
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
