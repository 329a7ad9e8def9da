//! The `hedging` key: hedged requests on (`"on"`), or its table.

use super::super::duration::{DelayText, DurationText};
use super::super::kind::Kind;
use super::super::row::{settings_table, Applies, Row};
use super::super::switch;
use super::RetryPolicyConfig;

/// As `breaker` (`gates.rs`): hedged requests with [`Hedging::default`](crate::Hedging).
pub(super) const HEDGING: &[Row<RetryPolicyConfig>] = &[Row {
    path: "hedging",
    value: r#"`"on"` for hedged requests with their defaults, or a table of the `hedging.*` keys"#,
    example: r#""on""#,
    env_form: "`on` (the `HEDGING_*` variables set its keys)",
    read_env: |config, var, text| {
        switch::switch_on(var, text)?;
        config.hedging.get_or_insert_with(Default::default);
        Ok(())
    },
    layer: |over, merged| {
        if over.hedging.is_some() {
            merged.hedging.get_or_insert_with(Default::default);
        }
    },
    applies: Applies::WithItsTable,
}];

settings_table! {
    /// The `hedging` table: [`Hedging`](crate::Hedging) for the policy, built on top
    /// of [`Hedging::default`](crate::Hedging)'s values (see `hedging_table.rs`).
    /// Present, even empty, it turns hedged requests on.
    pub(in crate::config) struct HedgingSettings at "hedging." in (hedging_table, hedging_table_mut) {
        delay: DelayText {
            value: r#"a duration (a fixed delay), or `"adaptive"`: the authority's latency percentile"#,
            example: r#""50ms""#,
        }
        percentile: f64 {
            value: "a number in (0, 100): the adaptive delay's percentile",
            example: "99.0",
        }
        min_samples: u32 {
            value: "a whole number, at least 1: the answers seen before an adaptive delay hedges",
            example: "50",
        }
        floor: DurationText {
            value: "a duration: the shortest adaptive delay",
            example: r#""25ms""#,
        }
        refresh: DurationText {
            value: "a duration: how often the adaptive delay is worked out again (its window is five of them)",
            example: r#""2s""#,
        }
        max_copies: u32 {
            value: "a whole number from 2 to 5: the copies in flight at once, the first included",
            example: "3",
        }
        cap_ratio: f64 {
            value: "a number in (0, 1]: the share of hedge-eligible intents that may be hedged",
            example: "0.1",
        }
        cap_burst: u32 {
            value: "a whole number: the hedges allowed over the share in each window",
            example: "5",
        }
        methods: Vec<String> {
            value: "the methods hedged, of GET, HEAD, OPTIONS, PUT and DELETE (replaces the default GET, HEAD, OPTIONS)",
            example: r#"["GET", "PUT", "DELETE"]"#,
        }
    }
}

fn hedging_table(config: &RetryPolicyConfig) -> Option<&HedgingSettings> {
    config.hedging.as_ref()
}

fn hedging_table_mut(config: &mut RetryPolicyConfig) -> &mut HedgingSettings {
    config.hedging.get_or_insert_with(HedgingSettings::default)
}
