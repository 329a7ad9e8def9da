//! The client model: with the crate's rules as they are, the bounded models pass;
//! and a loop that times its first attempt from `send()` (a past bug) fails.

use reqwest_resilience_model::client::{self, Config};
use reqwest_resilience_model::report::Scope;

/// Checks `config` and asserts that `property` fails, with a trace.
fn fails(config: Config, property: &'static str) {
    let name = config.name;
    let report = client::run_until_fails(config, property);
    assert!(
        report
            .failures
            .iter()
            .any(|failure| failure.contains(&format!("`{property}` fails"))),
        "{name}: expected a counterexample to `{property}`, got {:?}",
        report.failures
    );
}

#[test]
fn the_bounded_models_hold_every_property() {
    for report in client::check(Scope::Bounded) {
        assert!(report.exhaustive, "{report}");
        assert!(
            report.failures.is_empty(),
            "{report}: {:?}",
            report.failures
        );
    }
}

#[test]
fn the_first_attempt_timed_from_send_outlives_the_deadline() {
    // The loop as it was: a slow write-ahead's time was not taken off the first
    // attempt's timeout.
    let config = Config {
        first_attempt_from_send: true,
        ..client::config(Scope::Bounded, false)
    };
    fails(config.clone(), client::NO_ATTEMPT_OUTLIVES_DEADLINE);
    fails(config, client::NO_ATTEMPT_AFTER_DEADLINE);
}
