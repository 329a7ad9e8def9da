//! Running the checker on one configuration and reading its result as a [`Report`].

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use stateright::{Checker, Expectation, HasDiscoveries, Model, Path, UniformChooser};

use super::action::Action;
use super::model::ServerModel;
use super::state::State;
use crate::report::Report;

/// How far the checker goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Search {
    /// Every reachable state (depth first, symmetry-reduced over clients).
    Exhaustive,
    /// Random walks from the start for this long (not exhaustive).
    Simulation(Duration),
}

/// Checks `model` and reports its size and every failed property with its trace: an
/// `always` with a counterexample, or a `sometimes` never reached (exhaustive only).
pub fn run(name: &str, model: ServerModel, search: Search) -> Report {
    let started = Instant::now();
    let properties = model.properties();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let builder = model.checker().symmetry().threads(threads);
    let (checker, exhaustive): (Box<dyn Checker<ServerModel>>, bool) = match search {
        Search::Exhaustive => (Box::new(builder.spawn_dfs().join()), true),
        Search::Simulation(time) => (
            Box::new(
                builder
                    .timeout(time)
                    .spawn_simulation(0x5eed, UniformChooser)
                    .join(),
            ),
            false,
        ),
    };
    let discoveries = checker.discoveries();
    let mut failures = Vec::new();
    for property in &properties {
        let found = discoveries.get(property.name);
        match (&property.expectation, found) {
            (Expectation::Always, Some(path)) => failures.push(format!(
                "{name}: `{}` fails:\n{}",
                property.name,
                trace(checker.model(), path)
            )),
            (Expectation::Sometimes, None) if exhaustive => {
                failures.push(format!("{name}: `{}` is never reached", property.name))
            }
            _ => {}
        }
    }
    Report {
        name: name.to_owned(),
        states: checker.unique_state_count(),
        depth: checker.max_depth(),
        exhaustive,
        elapsed: started.elapsed(),
        failures,
    }
}

/// The shortest path to `property`'s discovery (a counterexample of an `always`, an
/// example of a `sometimes`), searching breadth first until it has one (Stateright's
/// breadth-first search does not reduce symmetry).
pub fn discover(model: ServerModel, property: &'static str) -> Option<Path<State, Action>> {
    let checker = model
        .checker()
        .finish_when(HasDiscoveries::AnyOf(BTreeSet::from([property])))
        .spawn_bfs()
        .join();
    checker.discovery(property)
}

/// The path's actions, one a line, with the state each leads to.
pub fn trace(model: &ServerModel, path: &Path<State, Action>) -> String {
    let mut out = String::new();
    for (i, (state, action)) in path.clone().into_vec().into_iter().enumerate() {
        match action {
            Some(action) => {
                let _ = writeln!(out, "  {i:>2}. {}", model.format_action(&action));
            }
            None => {
                let _ = writeln!(out, "      end: {}", summary(&state));
            }
        }
    }
    out
}

/// A state in one line: each client's last answer and requests, each key's record.
pub fn summary(state: &State) -> String {
    format!(
        "clients {:?}; records {:?}; ledgers {:?}",
        state
            .clients
            .iter()
            .map(|c| (c.intent, c.last, &c.runs))
            .collect::<Vec<_>>(),
        state.records,
        state.ledgers
    )
}
