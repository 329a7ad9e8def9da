//! The server model at a small size: every property holds, every `sometimes` is
//! reached, and each property fails when the crate's own guard it depends on is
//! switched off.

use reqwest_resilience_model::server::check::{self, Search};
use reqwest_resilience_model::server::config::{Config, Db, Mode};
use reqwest_resilience_model::server::model::ServerModel;
use reqwest_resilience_model::server::properties::{ONE_EFFECT, OWN_PRINCIPAL, SAME_PAYLOAD};
use tower_idempotency::model_rules::{Guard, Guards};

const MODES: [Mode; 3] = [
    Mode::Layer,
    Mode::Strong(Db::Postgres),
    Mode::Strong(Db::Sqlite),
];

/// One worker, attempts ≤ 2, one crash, one lease expiry; alice and bob, and
/// alice's duplicate where PostgreSQL's 409 needs it.
fn small(mode: Mode) -> Config {
    let clients = match mode {
        Mode::Strong(Db::Postgres) => 3,
        _ => 2,
    };
    let mut config = Config::new(mode, Config::intents(clients), 1);
    config.max_attempts = 2;
    config.max_crashes = 1;
    config.max_lease_expiries = 1;
    config.max_retention_expiries = 0;
    config
}

fn broken(mode: Mode, guard: Guard) -> ServerModel {
    let mut config = small(mode);
    config.guards = Guards::ALL.without(guard);
    ServerModel::new(config)
}

#[test]
fn every_property_holds_and_every_sometimes_is_reached() {
    for mode in MODES {
        let report = check::run(
            &format!("{mode:?}"),
            ServerModel::new(small(mode)),
            Search::Exhaustive,
        );
        assert!(report.exhaustive);
        assert!(report.states > 1000, "{report}");
        assert_eq!(report.failures, Vec::<String>::new(), "{report}");
    }
}

#[test]
fn one_effect_per_key_rests_on_the_claim_keeping_a_live_record() {
    for mode in [Mode::Strong(Db::Postgres), Mode::Strong(Db::Sqlite)] {
        let path = check::discover(broken(mode, Guard::LiveRecordKept), ONE_EFFECT);
        assert!(path.is_some(), "{mode:?}: no counterexample");
    }
}

#[test]
fn the_principal_scope_rests_on_the_scope_id() {
    for mode in MODES {
        let path = check::discover(broken(mode, Guard::PrincipalScoped), OWN_PRINCIPAL);
        assert!(path.is_some(), "{mode:?}: no counterexample");
    }
}

#[test]
fn no_replay_for_another_payload_rests_on_the_fingerprint_comparison() {
    for mode in MODES {
        let path = check::discover(broken(mode, Guard::PayloadCompared), SAME_PAYLOAD);
        assert!(path.is_some(), "{mode:?}: no counterexample");
    }
}

#[test]
fn no_replay_for_another_payload_rests_on_the_generation_fence() {
    // A holder whose lease lapsed completes over its successor's claim (made with
    // the other payload); the successor's retry is replayed the first's response.
    // Alice alone, three attempts: the third (with B) meets the first's response.
    let mut config = Config::new(Mode::Layer, Config::intents(1), 1);
    config.max_crashes = 0;
    config.max_retention_expiries = 0;
    config.guards = Guards::ALL.without(Guard::GenerationFenced);
    let path = check::discover(ServerModel::new(config), SAME_PAYLOAD);
    assert!(path.is_some(), "no counterexample");
}

#[test]
fn the_layers_boundary_is_an_effect_repeated_after_a_crash() {
    use reqwest_resilience_model::server::action::{Action, Step};
    use reqwest_resilience_model::server::properties::BOUNDARY;

    // A retry of the same request, not a key reused with another payload.
    let mut config = small(Mode::Layer);
    config.key_reuse = false;
    let model = ServerModel::new(config);
    let path = check::discover(model.clone(), BOUNDARY).expect("the boundary is reached");
    let actions = path.clone().into_actions();
    let effects = actions
        .iter()
        .filter(|a| {
            matches!(
                a,
                Action::Step {
                    step: Step::Effect,
                    ..
                }
            )
        })
        .count();
    assert_eq!(effects, 2, "{actions:?}");
    assert!(actions.iter().any(|a| matches!(a, Action::Crash { .. })));
    assert!(actions
        .iter()
        .any(|a| matches!(a, Action::LeaseExpires { .. })));
    // `cargo test -p reqwest-resilience-model --test server -- --nocapture` prints it.
    println!("{BOUNDARY}:\n{}", check::trace(&model, &path));
}
