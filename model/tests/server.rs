//! The server model at a small size: every property holds, every `sometimes` is
//! reached, and the layer's documented boundary is found.

use reqwest_resilience_model::server::check::{self, Search};
use reqwest_resilience_model::server::config::{Config, Db, Mode};
use reqwest_resilience_model::server::model::ServerModel;

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
