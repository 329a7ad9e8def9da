//! The server's claim protocol (tower-idempotency), in every interleaving.
//!
//! One action per await point of `service.rs::handle` (claim, handler start, effect,
//! complete or release) and of the strong mode's `transact` (SQLite's read, the claim
//! in the transaction, the effect, the commit), plus the world's events: a client's
//! attempt times out (the layer's request runs to its end, detached), a lease or a
//! retention runs out, `prune` deletes expired records, a worker crashes. Steps that
//! touch nothing shared (admission, capturing the body, sending the reply) are folded
//! into the next shared step: they commute with every other action, so no
//! interleaving is lost.
//!
//! # Called, and copied
//!
//! The model **calls**, through `tower_idempotency::model_rules`:
//! - `ScopeId::guarded`: the scope of each (principal, key), so scoping is the crate's;
//! - `store::rules::claim_rule`: whether a claim takes a key (the memory store's claim);
//! - `store::rules::token_holds`: the generation fence on complete and release (the
//!   memory store's);
//! - `decision::answer_existing`: replay, 409, 422 or 410 for a key someone holds.
//!
//! The model **copies**:
//! - the claim's atomicity: one action, as the memory store's lock, SQLite's writer
//!   (upsert and read in one transaction) and PostgreSQL's `INSERT … ON CONFLICT DO
//!   UPDATE … WHERE expires_at <= now` give it. PostgreSQL reads the record in a second
//!   statement when the upsert took nothing; every answer that read can give is the
//!   one-step claim's answer at the moment of the read (a record completed, reclaimed,
//!   expired or deleted in between is what a claim at that moment finds), so the one
//!   step covers it;
//! - the SQL stores' claim (`WHERE expires_at <= now`) and fence (`WHERE generation =
//!   … AND NOT completed`), which the model checks through the memory store's rule;
//!   `model/tests/server_conformance.rs` replays the model's paths against the memory,
//!   SQLite and PostgreSQL stores and asserts each store answers as the model;
//! - fresh generations: one above every generation a record or a token holds (the
//!   memory store's counter, PostgreSQL's sequence; SQLite's `random()` is fresh with
//!   overwhelming probability, not by construction);
//! - SQLite's reader filter (`expires_at > now`) before the writer;
//! - the strong mode's transaction: the claimed row is invisible until the commit,
//!   which writes the response (`complete_in` on its own row: the fence always holds
//!   there) and makes the effect count.
//!
//! # Database semantics assumed
//!
//! PostgreSQL at READ COMMITTED: `INSERT … ON CONFLICT` locks the conflicting row; a
//! second upsert of a key whose row another open transaction holds waits for it (and
//! then decides on the committed row), or gives up after `CLAIM_LOCK_TIMEOUT` (409,
//! `Uncommitted`); a dropped request's transaction rolls back. SQLite: one writer for
//! the file (a claim waits for it or gets 503 after `writer_wait`), WAL readers that
//! never wait; a transaction the writer started commits even if its request is
//! dropped. A crash rolls back every open transaction of the crashed worker.
//!
//! # Time and bounds
//!
//! Time is discrete: an expiry event marks one record expired (every step runs at the
//! same instant, an expired record ends exactly then, the boundary the crate counts as
//! expired). A request's `now` read at admission can only be earlier than the model's,
//! which makes its claim find records live longer, never take one sooner. Bounds, each
//! explicit in [`config::Config`]: at the target size attempts ≤ 3 per client, crashes
//! ≤ 2, lease expiries ≤ 2, retention expiries ≤ 2; one key reuse with another
//! payload, a second principal ([`config::Config::intents`]). The sizes checked
//! exhaustively are smaller ([`configurations`]).
//!
//! # Symmetry
//!
//! Stateright's `symmetry()` with DFS: the representative sorts the clients (each
//! carries its intent; nothing else names a client). Each state is also kept in a
//! canonical form: a client's requests sorted, generations renumbered densely in order.

pub mod action;
pub mod check;
pub mod config;
pub mod model;
pub mod properties;
pub mod rules;
pub mod state;

use std::time::Duration;

use crate::report::{Report, Scope};
use check::Search;
use config::{Config, Db, Mode};
use model::ServerModel;

/// The configurations a scope checks, with their report names and searches.
///
/// Bounded (CI): one worker, attempts ≤ 2, one crash, one expiry of each kind; the
/// layer with alice and bob; both strong modes with a third actor on one key (alice's
/// duplicate beside alice and bob: two requests of one principal plus another
/// principal; PostgreSQL's 409 needs two live transactions on one key); and
/// PostgreSQL's strong mode with those three actors and attempts ≤ 3 (a duplicate
/// told 409 twice, a retry after a crash and a 409, a key reused after two sends),
/// without a retention expiry, which the run beside it covers. Full: see
/// `full_configurations`.
pub fn configurations(scope: Scope) -> Vec<(String, Config, Search)> {
    match scope {
        Scope::Bounded => vec![
            bounded("server-layer", Mode::Layer, 2, 2),
            bounded("server-strong-postgres", Mode::Strong(Db::Postgres), 3, 2),
            bounded("server-strong-sqlite", Mode::Strong(Db::Sqlite), 3, 2),
            three_attempts(),
        ],
        Scope::Full => full_configurations(),
    }
}

fn bounded(name: &str, mode: Mode, clients: usize, attempts: u8) -> (String, Config, Search) {
    let mut config = Config::new(mode, Config::intents(clients), 1);
    config.max_attempts = attempts;
    config.max_crashes = 1;
    config.max_lease_expiries = 1;
    config.max_retention_expiries = 1;
    (name.to_owned(), config, Search::Exhaustive)
}

/// Three actors on one key in PostgreSQL's strong mode, each with up to three
/// attempts: the largest size that fits CI's minute beside the others (with a
/// retention expiry as well it takes four times as long).
fn three_attempts() -> (String, Config, Search) {
    let (_, mut config, search) = bounded("", Mode::Strong(Db::Postgres), 3, 3);
    config.max_retention_expiries = 0;
    (
        "server-strong-postgres-3-attempts".to_owned(),
        config,
        search,
    )
}

/// The full form. The target size (3 clients, 2 workers, attempts ≤ 3, crashes ≤ 2,
/// expiries ≤ 2 each) exceeds the time budget exhaustively, so it runs as a seeded
/// simulation (`exhaustive=false`; its `states` counts the states its walks visited,
/// repeats included); beside it, the largest sizes checked exhaustively.
fn full_configurations() -> Vec<(String, Config, Search)> {
    let modes = [
        ("layer", Mode::Layer),
        ("strong-postgres", Mode::Strong(Db::Postgres)),
        ("strong-sqlite", Mode::Strong(Db::Sqlite)),
    ];
    let mut configurations = Vec::new();
    for (name, mode) in modes {
        // The layer: alice and bob, one worker, three attempts each. The strong mode:
        // three clients on two workers, two attempts each.
        let mut config = match mode {
            Mode::Layer => Config::new(mode, Config::intents(2), 1),
            Mode::Strong(_) => {
                let mut config = Config::new(mode, Config::intents(3), 2);
                config.max_attempts = 2;
                config
            }
        };
        config.max_crashes = 1;
        config.max_lease_expiries = 1;
        config.max_retention_expiries = 1;
        configurations.push((format!("server-{name}"), config, Search::Exhaustive));
    }
    for (name, mode) in modes {
        let target = Config::new(mode, Config::intents(3), 2);
        let simulation = Search::Simulation(Duration::from_secs(120));
        configurations.push((format!("server-{name}-target"), target, simulation));
    }
    configurations
}

/// Checks the server model at `scope`; one report per configuration.
pub fn check(scope: Scope) -> Vec<Report> {
    configurations(scope)
        .into_iter()
        .map(|(name, config, search)| check::run(&name, ServerModel::new(config), search))
        .collect()
}
