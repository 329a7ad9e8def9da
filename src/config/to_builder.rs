//! From configuration to policy: [`RetryPolicyConfig::to_builder`] and
//! [`RetryPolicyConfig::build`]. Each key that reaches the builder alone does so
//! through its row; the `backoff` and `budget` tables are built whole. What the
//! configuration leaves out is left to the builder, so defaults have one source:
//! [`RetryPolicy`]'s Defaults table.

use super::backoff_table::{backoff, strategy_of_table};
use super::budget_table::budget;
use super::build_error::path_of;
use super::error::ConfigError;
use super::gates_table::{breaker, throttle};
use super::hedging_table::hedging;
use super::row::Applies;
use super::settings::{rows, BudgetConfig, RetryPolicyConfig};
use crate::{RetryPolicy, RetryPolicyBuilder};

impl RetryPolicyConfig {
    /// A builder with the default settings overridden by the ones this
    /// configuration sets. Add what configuration cannot hold (a sleeper, a
    /// classifier), then [`build`](RetryPolicyBuilder::build) — or call
    /// [`build`](Self::build) to get errors mapped to setting names.
    ///
    /// A `budget` table is built here into a [`RetryBudget`](crate::RetryBudget) and handed to
    /// [`RetryPolicyBuilder::budget`], so policies built from clones of the
    /// returned builder share it; a later [`budget`](RetryPolicyBuilder::budget)
    /// or [`no_budget`](RetryPolicyBuilder::no_budget) in code replaces it.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the setting: a duration that does not parse, a
    /// status code outside 100–999, backoff settings the strategy does not take,
    /// or budget settings out of range ([`ConfigError::Budget`] with `budget.ratio`
    /// or `budget.window`), breaker or throttle settings out of range
    /// ([`ConfigError::Breaker`], [`ConfigError::Throttle`]). A `breaker` table adds a
    /// [`CircuitBreaker`](crate::CircuitBreaker) gate and a `throttle` table an
    /// [`AdaptiveThrottle`](crate::AdaptiveThrottle) gate, in that order, after any gate
    /// already on the builder. A `hedging` table turns on [`Hedging`](crate::Hedging)
    /// (a key of the adaptive delay beside a fixed `delay` is a
    /// [`ConfigError::Conflict`]; its ranges are checked by `build`). The policy's own range checks (attempts, base ≤ cap, …)
    /// are left to the builder.
    pub fn to_builder(&self) -> Result<RetryPolicyBuilder, ConfigError> {
        let mut builder = RetryPolicyBuilder::new();
        for row in rows() {
            if let Applies::Alone(apply) = row.applies {
                builder = apply(self, builder)?;
            }
        }
        if let Some(config) = &self.backoff {
            builder = builder.backoff(backoff(config, &self.origins)?);
        }
        match &self.budget {
            None => {}
            Some(BudgetConfig::Unlimited) => builder = builder.no_budget(),
            Some(BudgetConfig::Limited(settings)) => {
                builder = builder.budget(budget(settings, &self.origins)?);
            }
        }
        if let Some(settings) = &self.breaker {
            builder = builder.gate(breaker(settings, &self.origins)?);
        }
        if let Some(settings) = &self.throttle {
            builder = builder.gate(throttle(settings, &self.origins, self.rng_seed)?);
        }
        if let Some(settings) = &self.hedging {
            builder = builder.hedging(hedging(settings, &self.origins)?);
        }
        Ok(builder)
    }

    /// The policy this configuration describes, validated by
    /// [`RetryPolicyBuilder::build`].
    ///
    /// # Errors
    /// Everything [`to_builder`](Self::to_builder) reports, and the builder's
    /// [`BuildError`](crate::BuildError) as [`ConfigError::Policy`] with the setting it is about
    /// (`max_attempts`, `backoff.base`, `deadline`, `attempt_timeout`,
    /// `hedging.max_copies`…).
    pub fn build(&self) -> Result<RetryPolicy, ConfigError> {
        self.to_builder()?
            .build()
            .map_err(|source| ConfigError::Policy {
                field: Some(self.origins.name_of(path_of(
                    &source,
                    self.backoff.as_ref().map(strategy_of_table),
                ))),
                source,
            })
    }
}
