//! The `breaker` and `throttle` tables: each builds one gate on top of its builder's
//! defaults. The policy asks them in that order, before its retry budget.

use super::error::ConfigError;
use super::origins::Origins;
use super::settings::{BreakerSettings, ThrottleSettings};
use crate::{AdaptiveThrottle, CircuitBreaker, InvalidBreaker, InvalidThrottle};

/// The breaker a `breaker` table describes; an out-of-range value is a
/// [`ConfigError::Breaker`] naming its key, or the variable that set it.
pub(super) fn breaker(
    settings: &BreakerSettings,
    origins: &Origins,
) -> Result<CircuitBreaker, ConfigError> {
    let mut builder = CircuitBreaker::builder();
    if let Some(ratio) = settings.failure_ratio {
        builder = builder.failure_ratio(ratio);
    }
    if let Some(text) = &settings.sampling_duration {
        builder =
            builder.sampling_duration(text.parse(&origins.name_of("breaker.sampling_duration"))?);
    }
    if let Some(attempts) = settings.minimum_throughput {
        builder = builder.minimum_throughput(attempts);
    }
    if let Some(text) = &settings.break_duration {
        builder = builder.break_duration(text.parse(&origins.name_of("breaker.break_duration"))?);
    }
    if let Some(probes) = settings.probes {
        builder = builder.probes(probes);
    }
    if let Some(per_host) = settings.per_host {
        builder = builder.per_host(per_host);
    }
    if let Some(text) = &settings.slow_call_duration {
        builder =
            builder.slow_call_duration(text.parse(&origins.name_of("breaker.slow_call_duration"))?);
    }
    builder.build().map_err(|invalid| ConfigError::Breaker {
        field: origins.name_of(match invalid {
            InvalidBreaker::FailureRatio(_) => "breaker.failure_ratio",
            InvalidBreaker::SamplingDuration(_) => "breaker.sampling_duration",
            InvalidBreaker::MinimumThroughput(_) => "breaker.minimum_throughput",
            InvalidBreaker::BreakDuration(_) => "breaker.break_duration",
            InvalidBreaker::Probes => "breaker.probes",
            InvalidBreaker::SlowCallDuration(_) => "breaker.slow_call_duration",
        }),
        source: invalid,
    })
}

/// The throttle a `throttle` table describes, its draws seeded by the policy's
/// `rng_seed` when one is set (one seed makes a whole policy repeatable); an
/// out-of-range value is a [`ConfigError::Throttle`] naming its key, or the variable
/// that set it.
pub(super) fn throttle(
    settings: &ThrottleSettings,
    origins: &Origins,
    seed: Option<u64>,
) -> Result<AdaptiveThrottle, ConfigError> {
    let mut builder = AdaptiveThrottle::builder();
    if let Some(seed) = seed {
        builder = builder.seed(seed);
    }
    if let Some(k) = settings.k {
        builder = builder.k(k);
    }
    if let Some(text) = &settings.window {
        builder = builder.window(text.parse(&origins.name_of("throttle.window"))?);
    }
    if let Some(requests) = settings.min_requests {
        builder = builder.min_requests(requests);
    }
    if let Some(probability) = settings.max_rejection_probability {
        builder = builder.max_rejection_probability(probability);
    }
    if let Some(per_host) = settings.per_host {
        builder = builder.per_host(per_host);
    }
    builder.build().map_err(|invalid| ConfigError::Throttle {
        field: origins.name_of(match invalid {
            InvalidThrottle::K(_) => "throttle.k",
            InvalidThrottle::Window(_) => "throttle.window",
            InvalidThrottle::MaxRejection(_) => "throttle.max_rejection_probability",
        }),
        source: invalid,
    })
}
