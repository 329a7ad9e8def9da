//! The journal model at a small size: every property holds, every `sometimes`
//! is reached, and each property resting on the model's copy of a SQL rule fails
//! once that copy is broken (the crate's Rust rules are measured with cargo-mutants).

use std::collections::BTreeSet;

use reqwest_resilience_model::journal::config::CopyMutation;
use reqwest_resilience_model::journal::properties::{DELIVERED, FENCED, ROLLED_BACK};
use reqwest_resilience_model::journal::{self, Config, JournalModel};
use stateright::{Checker, HasDiscoveries, Model};

/// Two clients on one key from two workers: the write-ahead, the join and the
/// relays all meet on one intent. One crash and one lease end keep it quick.
fn small() -> Config {
    let mut config = Config::new(vec![(0, 0), (1, 0)], 2, 1);
    config.max_crashes = 1;
    config.max_expiries = 1;
    config
}

#[test]
fn every_property_holds_and_every_sometimes_is_reached() {
    let report = journal::run(small(), "journal-small", None);
    assert!(report.exhaustive, "{report}");
    assert!(report.failures.is_empty(), "{:#?}", report.failures);
    assert!(report.states > 1_000, "{report}");
}

/// Searches `config` until `property` has a counterexample, and asserts it has.
fn counterexample(config: Config, property: &'static str) {
    let model = JournalModel::new(config);
    let checker = model
        .clone()
        .checker()
        .symmetry()
        .finish_when(HasDiscoveries::AnyOf(BTreeSet::from([property])))
        .spawn_dfs()
        .join();
    assert!(
        checker.discovery(property).is_some(),
        "no counterexample for {property:?} after {} states",
        checker.unique_state_count()
    );
    assert!(model.properties().iter().any(|p| p.name == property));
}

fn copy_mutated(mutation: CopyMutation) -> Config {
    Config {
        copy_mutation: Some(mutation),
        ..small()
    }
}

/// Copied rule (SQL `record … WHERE fence = $7`; no crate function to switch).
#[test]
fn a_record_without_the_fence_records_a_fenced_write() {
    counterexample(copy_mutated(CopyMutation::RecordIgnoresFence), FENCED);
}

/// Copied semantics (READ COMMITTED; no crate function to switch).
#[test]
fn a_claim_that_sees_uncommitted_rows_sends_a_rolled_back_enqueue() {
    counterexample(
        copy_mutated(CopyMutation::ClaimSeesUncommitted),
        ROLLED_BACK,
    );
}

/// Copied rule (SQL `unacknowledged … WHERE state IN (succeeded, failed, abandoned)`;
/// no crate function to switch).
#[test]
fn a_listing_that_skips_failed_results_never_delivers_them() {
    counterexample(
        copy_mutated(CopyMutation::UnacknowledgedSkipsFailures),
        DELIVERED,
    );
}
