//! Retry policies from configuration (feature `serde`): TOML, JSON, YAML… through
//! serde, or environment variables, with human-readable durations.
//!
//! Retry settings are operational: the engineer on call who sees a dependency
//! shedding load needs to lower the attempts, stretch the backoff or shrink the
//! retry budget *now*, without a code change and a redeploy.
//! [`RetryPolicyConfig`] is the written form of a
//! [`RetryPolicyBuilder`](crate::RetryPolicyBuilder); it is validated by the same
//! [`build`](crate::RetryPolicyBuilder::build), and every error names the setting
//! to fix.
//!
//! Each key is one row in `settings.rs` or its `settings/` tables (its path, what
//! its value is, an example, how it is read from a variable, laid over a file and
//! applied to the builder); the variables' names, the environment loader, the
//! layering and both doc tables are derived from the rows, and `tests.rs` checks
//! every row end to end.
//!
//! One file per concern, imports running one way (each file only uses those
//! listed after it): `env` (the environment loader) and `to_builder` (the
//! conversion to a builder, with `backoff_table`, `budget_table`, `gates_table`,
//! `hedging_table` and `build_error`) and `message` (how errors read) → `settings`
//! (the rows and the structs serde reads) → `row` (what a row is), `switch` (the
//! `"on"` keys) and `kind` (how a variable writes each kind of value) → `choice` (settings spelt as names), `duration`
//! (human-readable durations) and `origins` (which variable set what) → `error`.
//! The configuration uses the crate's public types only, as a user would; nothing
//! else in the crate imports it.

mod backoff_table;
mod budget_table;
mod build_error;
mod choice;
mod duration;
mod env;
mod error;
mod gates_table;
mod hedging_table;
mod kind;
mod message;
mod origins;
mod row;
mod settings;
mod switch;
mod to_builder;

#[cfg(test)]
mod tests;

pub use error::ConfigError;
pub use settings::RetryPolicyConfig;
