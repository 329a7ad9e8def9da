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
//! One file per concern, imports running one way (each file only uses those
//! listed after it): `env` (the environment loader) → `to_builder` (the
//! conversion to a builder) → `schema` (what serde reads and writes) → `choice`
//! (settings spelt as names) and `duration` (human-readable durations) → `error`.
//! The configuration uses the crate's public types only, as a user would; nothing
//! else in the crate imports it.

mod choice;
mod duration;
mod env;
mod error;
mod schema;
mod to_builder;

pub use error::ConfigError;
pub use schema::RetryPolicyConfig;
