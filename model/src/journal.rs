//! The journal model: reqwest-resilience-journal's write-ahead, join, leases,
//! claim, fence, take-over, a run given back, the outbox's `queued` state with
//! its enqueue in the caller's transaction, and result delivery
//! (`unacknowledged` / `acknowledge`), one action per statement or await point.
//!
//! # Rules called and rules copied
//! **Called** (the crate's own functions, through
//! `reqwest_resilience_journal::model_rules`): the join step (`join::step_for`),
//! `run_outcome`, the first run's outcome (`durable::first_run_outcome_of`), the
//! resumed run's plan (`resume::plan_run`: abandon after `max_runs`, the deadline
//! cut to the lease), the durable send's lease (`lease_for`), the verdict on a
//! lost `COMMIT` answer (`commit_verdict::verdict`), the acknowledgement's
//! settlement (`delivery::settle`), and `Outcome::state` /
//! `Outcome::runs_given_back`.
//!
//! **Copied** (SQL in the crate; see [`store`]): the write-ahead's and the
//! enqueue's `INSERT … ON CONFLICT DO NOTHING`, the claim's condition
//! (`claimable!`, `FOR UPDATE SKIP LOCKED`), `take_over`'s condition, the
//! fence on `record`, and the acknowledgement's first-update test.
//! `model/tests/journal_conformance.rs` replays the model's traces against the
//! SQLite and PostgreSQL stores (the journal has no memory store) and asserts
//! their answers equal the model's.
//!
//! # Database semantics assumed
//! PostgreSQL at READ COMMITTED: every statement is atomic on the rows it
//! touches; an uncommitted insert is invisible to other sessions and blocks a
//! second insert of its key until its transaction ends; `UPDATE … WHERE` locks
//! the row and re-checks its condition on the newest committed version; the
//! claim's `FOR UPDATE SKIP LOCKED` makes concurrent claims disjoint; a dead
//! session's open transaction rolls back; a `COMMIT` whose answer was lost has
//! committed, rolled back, or is still committing (a synchronous standby) and
//! then commits, and `pg_xact_status` says which (or does not answer). SQLite
//! is one writer, each statement (and each claim's `BEGIN IMMEDIATE`
//! transaction) atomic, and its write-ahead one autocommit `INSERT`: its paths
//! are the model's paths without a lost `COMMIT` answer.
//!
//! # Bounds and time
//! Explicit in [`Config`]: crashes ≤ 2 (a crashed worker restarts as a new
//! incarnation of its name), expiries of a live holder's lease ≤ 2, `max_runs`
//! 3 (attempts ≤ 3; the fourth take-up is abandoned by the crate's plan), runs
//! that did nothing at the server ≤ 1 per intent, 2 workers (the sizes:
//! [`bounded`], [`largest_exhaustive`], [`target`]). Time is discrete: a lease ends as an event ([`Action::LeaseEnds`]). Leases whose
//! holder is gone end without counting against the bound (time passes); the
//! lease of a live holder ends only once its send is over — the crate's run plan
//! cuts a resumed run's deadline to its lease, and a durable send's lease is its
//! deadline plus a margin (both called, so a mutation of either lets the lease
//! end under a send). Due times are taken as passed (an `unknown` or `queued`
//! row is claimable): waiting for them adds no interleaving. A relay claims
//! every intent claimable by its worker (a batch at least the number of keys).
//! A joining send waits by polling: a poll that would see the same again (the
//! join step still says take over or wait, and `take_over` would not) changes
//! nothing and is left out, so a wait is a state without that step.
//!
//! # `eventually`
//! Stateright checks an `eventually` property on every path that ends in a
//! state without successors (and misses paths that end in a cycle). The model
//! has no cycle (every step raises a counter, moves a client or a run forward,
//! or changes a row for good), and both `eventually` conditions are stable once
//! true, so the check says exactly: every state where nothing more can happen
//! has every committed intent terminal (and every result acknowledged). A
//! simulation (the full form's target size) checks the same at the end of each
//! random walk. To make a missing guard visible as a stuck state, relay claims
//! stop at `max_runs` plus the number of clients (more than any path can reach
//! while the crate's guard abandons the intent at `max_runs`).
//!
//! # Reductions
//! Acknowledgements touch only terminal rows, which nothing else changes: they
//! commute with every action but a crash, so the model runs them once clients
//! and relays are done (crashes stay possible among them). Everything else
//! interleaves freely.
//!
//! # Symmetry
//! Canonicalisation ([`symmetry`]): the permutations of workers, keys and
//! clients that map the configuration onto itself; Stateright's
//! `Representative` with its DFS checker.

pub mod action;
mod checked;
pub mod config;
pub mod group;
pub mod model;
pub mod properties;
pub mod rules;
pub mod state;
pub mod store;
pub mod symmetry;

use std::time::{Duration, Instant};

use stateright::{Checker, Model};

pub use action::Action;
pub use config::Config;
pub use model::JournalModel;

use crate::report::{Report, Scope};

/// The bounded configuration CI checks: two clients from two workers on one
/// key (the write-ahead, the join and both relays meet on one intent), one crash,
/// two lease ends, `max_runs` 3.
pub fn bounded() -> Config {
    let mut config = Config::new(vec![(0, 0), (1, 0)], 2, 1);
    config.max_crashes = 1;
    config
}

/// The largest configuration checked exhaustively in the full form: as
/// [`bounded`] with two crashes.
pub fn largest_exhaustive() -> Config {
    Config::new(vec![(0, 0), (1, 0)], 2, 1)
}

/// The target, 3 clients × 2 keys × 2 workers: one client on each key
/// from each worker, and a third joining key 0 from worker 1. Simulated (see
/// [`check`]).
pub fn target() -> Config {
    Config::new(vec![(0, 0), (1, 1), (1, 0)], 2, 2)
}

/// How long the full form simulates the target configuration.
pub const TARGET_SIMULATION: Duration = Duration::from_secs(300);

/// Runs the checker on `config` (DFS, symmetry reduction), exhaustively unless
/// `time_limit` cuts it.
pub fn run(config: Config, name: &str, time_limit: Option<Duration>) -> Report {
    let started = Instant::now();
    let model = JournalModel::new(config);
    let mut builder = model.clone().checker().symmetry();
    if let Some(limit) = time_limit {
        builder = builder.timeout(limit);
    }
    let checker = builder.spawn_dfs().join();
    let elapsed = started.elapsed();
    let failures = failures(&model, &checker);
    Report {
        name: name.to_owned(),
        states: checker.unique_state_count(),
        depth: checker.max_depth(),
        exhaustive: checker.is_done() && time_limit.is_none_or(|limit| elapsed < limit),
        elapsed,
        failures,
    }
}

/// Each violated `always`/`eventually` property with its trace, and each
/// `sometimes` property never reached.
pub fn failures(model: &JournalModel, checker: &impl Checker<JournalModel>) -> Vec<String> {
    let mut failures = Vec::new();
    for property in model.properties() {
        let found = checker.discovery(property.name);
        match (property.expectation, found) {
            (stateright::Expectation::Sometimes, None) => {
                failures.push(format!("journal: never reached: {}", property.name));
            }
            (stateright::Expectation::Sometimes, Some(_)) | (_, None) => {}
            (_, Some(path)) => failures.push(format!(
                "journal: {} fails:\n{}",
                property.name,
                path.into_actions()
                    .iter()
                    .map(|a| format!("  {a:?}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            )),
        }
    }
    failures
}

/// Random walks of `config` from a fixed seed for `duration` (not exhaustive).
/// Its `states` counts the states visited along the walks: Stateright keeps no
/// set of them, so it is not a count of unique states.
pub fn simulate(config: Config, name: &str, duration: Duration) -> Report {
    let started = Instant::now();
    let model = JournalModel::new(config);
    let checker = model
        .clone()
        .checker()
        .timeout(duration)
        .spawn_simulation(0x5EED_0038, stateright::UniformChooser)
        .join();
    Report {
        name: name.to_owned(),
        states: checker.unique_state_count(),
        depth: checker.max_depth(),
        exhaustive: false,
        elapsed: started.elapsed(),
        failures: failures(&model, &checker),
    }
}

/// Checks the journal model at `scope`: the bounded form exhaustively; the
/// full form the largest exhaustive size, then a simulation at the target size
/// (3 clients × 2 keys × 2 workers), which is beyond an exhaustive check here.
pub fn check(scope: Scope) -> Vec<Report> {
    match scope {
        Scope::Bounded => vec![run(bounded(), "journal", None)],
        Scope::Full => vec![
            run(largest_exhaustive(), "journal-exhaustive", None),
            simulate(target(), "journal-target-simulation", TARGET_SIMULATION),
        ],
    }
}
