//! The `hedging` table: one [`Hedging`] on top of [`Hedging::default`]'s values.
//! Durations and method names are read here, so that their errors name the key
//! (or its variable); the ranges are [`Hedging`]'s own, checked when the policy is
//! built and reported as `BuildError::Hedging`, whose key `build_error.rs` maps
//! back to the variable that set it.

use http::Method;

use super::error::ConfigError;
use super::origins::Origins;
use super::settings::HedgingSettings;
use crate::Hedging;

/// The keys only an adaptive delay reads.
const ADAPTIVE_ONLY: [&str; 4] = ["percentile", "min_samples", "floor", "refresh"];

/// The hedging a `hedging` table describes.
///
/// # Errors
/// A duration or a method name that does not parse, or a key of the adaptive
/// delay beside a fixed `delay` (it would be silently ignored), naming the key or
/// the variable that set it.
pub(super) fn hedging(
    settings: &HedgingSettings,
    origins: &Origins,
) -> Result<Hedging, ConfigError> {
    let mut hedging = Hedging::default();
    if let Some(text) = &settings.delay {
        if let Some(fixed) = text.parse(&origins.name_of("hedging.delay"))? {
            let set = [
                settings.percentile.is_some(),
                settings.min_samples.is_some(),
                settings.floor.is_some(),
                settings.refresh.is_some(),
            ];
            if let Some((key, _)) = ADAPTIVE_ONLY.iter().zip(set).find(|(_, set)| *set) {
                return Err(ConfigError::Conflict {
                    field: origins.name_of(&format!("hedging.{key}")),
                    reason: format!(
                        r#"only an adaptive delay takes it, and {} is the fixed "{}""#,
                        origins.name_of("hedging.delay"),
                        text.0
                    ),
                });
            }
            hedging = Hedging::fixed(fixed);
        }
    }
    if let Some(percentile) = settings.percentile {
        hedging = Hedging::adaptive(percentile);
    }
    if let Some(samples) = settings.min_samples {
        hedging = hedging.min_samples(samples);
    }
    if let Some(text) = &settings.floor {
        hedging = hedging.floor(text.parse(&origins.name_of("hedging.floor"))?);
    }
    if let Some(text) = &settings.refresh {
        hedging = hedging.refresh(text.parse(&origins.name_of("hedging.refresh"))?);
    }
    if let Some(copies) = settings.max_copies {
        hedging = hedging.max_copies(copies);
    }
    if settings.cap_ratio.is_some() || settings.cap_burst.is_some() {
        let (ratio, burst) = hedging.cap_limits();
        hedging = hedging.cap(
            settings.cap_ratio.unwrap_or(ratio),
            settings.cap_burst.unwrap_or(burst),
        );
    }
    if let Some(names) = &settings.methods {
        hedging = hedging.methods(methods(names, &origins.name_of("hedging.methods"))?);
    }
    Ok(hedging)
}

/// Method names as written, in any case (configuration spells them loosely; the
/// methods a hedge accepts are all standard, upper-case ones). Which of them may
/// be hedged is [`Hedging`]'s to check.
fn methods(names: &[String], field: &str) -> Result<Vec<Method>, ConfigError> {
    names
        .iter()
        .map(|name| {
            Method::from_bytes(name.trim().to_ascii_uppercase().as_bytes()).map_err(|_| {
                ConfigError::InvalidValue {
                    field: field.to_owned(),
                    value: name.clone(),
                    expected: "method names such as GET, PUT, DELETE".to_owned(),
                }
            })
        })
        .collect()
}
