//! The `breaker` and `throttle` keys: each switches its gate on (`"on"`) or
//! gives its table.

use super::super::duration::{DurationText, LimitText};
use super::super::kind::Kind;
use super::super::row::{settings_table, Applies, Row};
use super::super::switch;
use super::RetryPolicyConfig;

/// The rows that switch a gate on: `breaker` and `throttle` (and, below, `hedging`).
pub(super) const BREAKER: &[Row<RetryPolicyConfig>] = &[Row {
    path: "breaker",
    value: r#"`"on"` for a circuit breaker with its defaults, or a table of the `breaker.*` keys"#,
    example: r#""on""#,
    env_form: "`on` (the `BREAKER_*` variables set its keys)",
    read_env: |config, var, text| {
        switch::switch_on(var, text)?;
        config.breaker.get_or_insert_with(Default::default);
        Ok(())
    },
    layer: |over, merged| {
        if over.breaker.is_some() {
            merged.breaker.get_or_insert_with(Default::default);
        }
    },
    applies: Applies::WithItsTable,
}];

/// See [`BREAKER`].
pub(super) const THROTTLE: &[Row<RetryPolicyConfig>] = &[Row {
    path: "throttle",
    value: r#"`"on"` for an adaptive throttle with its defaults, or a table of the `throttle.*` keys"#,
    example: r#""on""#,
    env_form: "`on` (the `THROTTLE_*` variables set its keys)",
    read_env: |config, var, text| {
        switch::switch_on(var, text)?;
        config.throttle.get_or_insert_with(Default::default);
        Ok(())
    },
    layer: |over, merged| {
        if over.throttle.is_some() {
            merged.throttle.get_or_insert_with(Default::default);
        }
    },
    applies: Applies::WithItsTable,
}];

settings_table! {
    /// The `breaker` table: a [`CircuitBreaker`](crate::CircuitBreaker) gate for the
    /// policy, built on top of [`CircuitBreaker::builder`](crate::CircuitBreaker::builder)'s
    /// defaults (see `gates_table.rs`). Present, even empty, it adds the gate.
    pub(in crate::config) struct BreakerSettings at "breaker." in (breaker_table, breaker_table_mut) {
        failure_ratio: f64 {
            value: "a number in (0, 1]: the share of failed attempts that opens the circuit",
            example: "0.25",
        }
        sampling_duration: DurationText {
            value: "a duration: how far back attempts are counted",
            example: r#""10s""#,
        }
        minimum_throughput: u32 {
            value: "a whole number, at least 2: the attempts in the window before it may open",
            example: "20",
        }
        break_duration: DurationText {
            value: "a duration: how long an open circuit refuses before a probe",
            example: r#""2s""#,
        }
        probes: u32 {
            value: "a whole number, at least 1: the attempts a half-open circuit admits",
            example: "3",
        }
        per_host: bool {
            value: "one circuit per authority (scheme, host, port) rather than one for all",
            example: "false",
        }
        slow_call_duration: LimitText {
            value: r#"a duration past which an attempt counts as failed, or `"none"`"#,
            example: r#""1s""#,
        }
    }
}

settings_table! {
    /// The `throttle` table: an [`AdaptiveThrottle`](crate::AdaptiveThrottle) gate for
    /// the policy, built on top of
    /// [`AdaptiveThrottle::builder`](crate::AdaptiveThrottle::builder)'s defaults (see
    /// `gates_table.rs`). Present, even empty, it adds the gate, after the breaker.
    pub(in crate::config) struct ThrottleSettings at "throttle." in (throttle_table, throttle_table_mut) {
        k: f64 {
            value: "a number in [1, 1000]: how many attempts per success it lets through",
            example: "1.5",
        }
        window: DurationText {
            value: "a duration: how far back attempts and successes are counted",
            example: r#""10s""#,
        }
        min_requests: u32 {
            value: "a whole number: the attempts in the window below which it never refuses",
            example: "50",
        }
        max_rejection_probability: f64 {
            value: "a number in [0, 1): the highest share of attempts it refuses",
            example: "0.5",
        }
        per_host: bool {
            value: "one throttle per authority (scheme, host, port) rather than one for all",
            example: "false",
        }
    }
}

fn breaker_table(config: &RetryPolicyConfig) -> Option<&BreakerSettings> {
    config.breaker.as_ref()
}

fn breaker_table_mut(config: &mut RetryPolicyConfig) -> &mut BreakerSettings {
    config.breaker.get_or_insert_with(BreakerSettings::default)
}

fn throttle_table(config: &RetryPolicyConfig) -> Option<&ThrottleSettings> {
    config.throttle.as_ref()
}

fn throttle_table_mut(config: &mut RetryPolicyConfig) -> &mut ThrottleSettings {
    config
        .throttle
        .get_or_insert_with(ThrottleSettings::default)
}
