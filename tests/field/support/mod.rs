//! Shared helpers for the field tests.

#![allow(dead_code)]

pub mod certs;
pub mod full_queue;
pub mod goaway_server;
pub mod h2_server;
pub mod tls_server;

use std::time::Duration;

use reqwest_resilience::{
    AttemptOutcome, Backoff, Error, RecordingSleeper, RetryPolicy, RetryPolicyBuilder,
    TransportFailure,
};

pub const MS: Duration = Duration::from_millis(1);

/// Test policy: instant recorded sleeps, seeded jitter, no budget limit.
pub fn policy(sleeper: &RecordingSleeper) -> RetryPolicyBuilder {
    RetryPolicy::builder()
        .sleeper(sleeper.clone())
        .rng_seed(9)
        .backoff(Backoff::full_jitter(10 * MS, 100 * MS))
        .deadline(Duration::from_secs(10))
        .attempt_timeout(Duration::from_secs(5))
        .no_budget()
}

/// The failure kind of every attempt in the error's log.
pub fn failures(error: &Error) -> Vec<TransportFailure> {
    error
        .attempt_log()
        .attempts()
        .iter()
        .filter_map(|attempt| match attempt.outcome() {
            AttemptOutcome::Failed(failure) => Some(*failure),
            _ => None,
        })
        .collect()
}
