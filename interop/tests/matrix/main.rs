//! The whole system on its defaults, one matrix: the client
//! (`ResilientClient::new()`, its README's default policy, nothing tuned) ×
//! tower-idempotency's layer on its defaults (`builder(store).principal(…)
//! .build()`) × three servers (the memory layer around an effect outside its
//! store; the strong mode on SQLite; the strong mode on PostgreSQL) × four
//! situations (a concurrent duplicate; a lost response; the server killed
//! mid-handler and restarted; a durable send whose client crashed, resumed from
//! its journal). Every cell must come to one effect, no lost effect, no
//! unknown outcome the client could have avoided — but for the memory layer
//! killed mid-handler, whose documented boundary (a repeated outside effect) is
//! asserted exactly and printed as such.
//!
//! The quick form runs each cell three times, all cells at once;
//! `interop/scripts/matrix.sh` runs more (`INTEROP_MATRIX_RUNS`,
//! `INTEROP_MATRIX_SEED`, `INTEROP_MATRIX_SERVERS`).

mod caller;
mod cell;
mod concurrent;
mod database;
mod killed;
mod lost_answer;
mod proxy;
mod report;
mod resumed;
mod server;
mod verdict;

use std::time::Instant;

use reqwest_resilience_journal::throwaway_postgres::{Durability, ThrowawayPostgres};

use cell::{run_cell, Ctx, Situation};
use database::Database;
use report::Report;
use server::Mode;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn matrix_every_cell_on_defaults() {
    // Three runs: the later ones meet a server that has run handlers before
    // (a 409's Retry-After is estimated from its past runs).
    let runs = env_number("INTEROP_MATRIX_RUNS", 3);
    let seed = env_number("INTEROP_MATRIX_SEED", 40);
    let modes = env_modes();
    let started = Instant::now();
    let dir = tempfile::tempdir().expect("a temporary directory");

    // The cells of the file-backed servers start at once; the PostgreSQL ones
    // when their cluster is up (one for all of them, a database per cell).
    let mut cells = tokio::task::JoinSet::new();
    for mode in modes.iter().copied().filter(|&m| m != Mode::Postgres) {
        for situation in Situation::ALL {
            let cell_dir = dir
                .path()
                .join(format!("{}_{}", mode.arg(), situation as u8));
            std::fs::create_dir(&cell_dir).expect("the cell's directory");
            let db = Database::sqlite(&cell_dir, "server");
            let ctx = Ctx::new(mode, situation, db, cell_dir, seed);
            cells.spawn(run_cell(situation, ctx, runs));
        }
    }
    let cluster = if modes.contains(&Mode::Postgres) {
        let cluster = tokio::task::spawn_blocking(start_postgres)
            .await
            .expect("the cluster's start");
        for situation in Situation::ALL {
            let label = format!("postgres_{}", situation as u8);
            let cell_dir = dir.path().join(&label);
            std::fs::create_dir(&cell_dir).expect("the cell's directory");
            let db = Database::postgres(cluster.conninfo(), &label).await;
            let ctx = Ctx::new(Mode::Postgres, situation, db, cell_dir, seed);
            cells.spawn(run_cell(situation, ctx, runs));
        }
        Some(cluster)
    } else {
        None
    };

    let mut results = Vec::new();
    while let Some(result) = cells.join_next().await {
        results.push(result.expect("a cell's task"));
    }
    if let Some(cluster) = cluster {
        let _ = cluster.stop_immediate();
    }
    results.sort_by_key(|cell| (cell.mode, cell.situation));
    let report = Report {
        cells: results,
        seed,
        took: started.elapsed(),
    };
    println!("{report}");
    let failed = report.failed();
    assert!(failed.is_empty(), "cells failed: {failed:?}\n{report}");
}

fn start_postgres() -> ThrowawayPostgres {
    match ThrowawayPostgres::start(Durability::Off) {
        Ok(Some(cluster)) => cluster,
        Ok(None) => panic!(
            "the matrix needs PostgreSQL's server binaries (initdb, pg_ctl): \
             run journal/scripts/ensure-postgres.sh"
        ),
        Err(error) => panic!("starting a throwaway PostgreSQL failed: {error}"),
    }
}

fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(value) => value
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be a whole number, got {value:?}")),
        Err(_) => default,
    }
}

/// `INTEROP_MATRIX_SERVERS`: a comma-separated subset of memory,sqlite,postgres.
fn env_modes() -> Vec<Mode> {
    let Ok(list) = std::env::var("INTEROP_MATRIX_SERVERS") else {
        return Mode::ALL.to_vec();
    };
    list.split(',')
        .map(|name| {
            Mode::ALL
                .into_iter()
                .find(|mode| mode.arg() == name.trim())
                .unwrap_or_else(|| panic!("INTEROP_MATRIX_SERVERS: unknown server {name:?}"))
        })
        .collect()
}
