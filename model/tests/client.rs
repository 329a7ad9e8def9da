//! The client model can fail: each property's guard, switched off inside the
//! crate's own function (or, for a rule the model copies, in the model's copy),
//! gives a counterexample; and with every guard on, the bounded models pass.

use reqwest_resilience::model_rules::{Mutation, Mutations};
use reqwest_resilience_model::client::{self, Config, LoopMutation};
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

fn plain(mutation: Mutation) -> Config {
    Config {
        mutations: Mutations::only(mutation),
        ..client::config(Scope::Bounded, false)
    }
}

fn hedged(mutation: Mutation) -> Config {
    Config {
        mutations: Mutations::only(mutation),
        ..client::config(Scope::Bounded, true)
    }
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
fn without_the_retry_after_floor_an_attempt_goes_early() {
    fails(
        plain(Mutation::RetryAfterFloor),
        client::NOT_BEFORE_RETRY_AFTER,
    );
    fails(
        hedged(Mutation::RetryAfterFloor),
        client::NOT_BEFORE_RETRY_AFTER,
    );
}

#[test]
fn without_the_useful_window_a_pause_runs_past_the_deadline() {
    fails(
        plain(Mutation::UsefulWindow),
        client::NO_PAUSE_PAST_DEADLINE,
    );
}

#[test]
fn without_the_cut_to_the_time_left_an_attempt_goes_after_the_deadline() {
    fails(
        plain(Mutation::DeadlineCut),
        client::NO_ATTEMPT_AFTER_DEADLINE,
    );
    fails(
        plain(Mutation::DeadlineCut),
        client::NO_ATTEMPT_OUTLIVES_DEADLINE,
    );
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

#[test]
fn without_method_safety_an_unkeyed_post_is_retried() {
    fails(
        plain(Mutation::MethodSafety),
        client::UNKEYED_POST_NEVER_RETRIED,
    );
}

#[test]
fn without_the_hedge_caps_copies_exceed_them() {
    let wide = client::wide_hedging(hedged(Mutation::HedgeCopiesInFlight));
    fails(wide, client::COPIES_WITHIN_CAPS);
    fails(
        hedged(Mutation::HedgeAttemptsUsed),
        client::COPIES_WITHIN_CAPS,
    );
}

#[test]
fn without_the_hedge_deadline_check_a_copy_goes_too_late() {
    fails(hedged(Mutation::HedgeTooLate), client::COPY_HAS_ITS_WINDOW);
}

#[test]
fn without_the_open_breakers_refusal_an_attempt_is_admitted() {
    fails(
        plain(Mutation::BreakerOpenRefuses),
        client::OPEN_BREAKER_ADMITS_ONLY_PROBE,
    );
    fails(
        hedged(Mutation::BreakerHedgeOnlyWhenClosed),
        client::OPEN_BREAKER_ADMITS_ONLY_PROBE,
    );
}

#[test]
fn the_loops_copied_steps_can_fail_too() {
    let with = |hedged, mutation| Config {
        loop_mutation: Some(mutation),
        ..client::config(Scope::Bounded, hedged)
    };
    fails(
        with(false, LoopMutation::SendDespiteRefusal),
        client::REFUSED_NOTHING_SENT,
    );
    fails(
        with(false, LoopMutation::ReuseRequestId),
        client::SAME_KEY_FRESH_REQUEST_ID,
    );
    fails(
        with(true, LoopMutation::HedgeWithoutCap),
        client::COPIES_WITHIN_BUDGET,
    );
}
