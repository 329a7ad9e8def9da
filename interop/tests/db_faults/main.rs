//! The durable half on its database's worst day (PostgreSQL).
//!
//! A fleet of four journal workers makes durable payments (and resumes what is
//! due), and business transactions enqueue payments in an outbox that a relay
//! sends (`outbox`), against a payments server in tower-idempotency's strong mode on
//! `PostgresStore` and another in its layer mode on `PostgresStore` (`layer`),
//! which count each key's effects as rows of their own database — the same
//! PostgreSQL as the journal. While they run, the database
//! is faulted, one scenario after another:
//!
//! - `terminate`: every backend of the pools terminated every 2 s
//!   (`pg_terminate_backend`);
//! - `stop`: the database stopped and started again;
//! - `crash`: `pg_ctl stop -m immediate` and a restart (a crash restart),
//!   twice;
//! - `pool`: 64 concurrent intents on a pool of 8, under a `statement_timeout`
//!   shorter than a statement that another session holds up.
//!
//! After each: no key has two effects; every caller answered 2xx has its
//! effect and its intent `succeeded`; every caller told "refused" has no
//! effect; every intent is terminal in the journal within 60 s; no error reads
//! as a bare driver word, an unknown outcome is never also "refused"; no send
//! ends more than a second past its deadline (beyond the time the machine
//! stalled this process meanwhile, which `stalls` measures); the first payment completes
//! within 5 s of the database accepting connections again. `deadline` checks
//! the storage waits behind that bound one by one.
//! One line per scenario (`DB_FAULT …`) gives the figures.
//!
//! The quick form (this test) runs shorter faults; `interop/scripts/db_faults.sh`
//! runs the full form (`DB_FAULTS_FULL=1`) over three seeds.

mod deadline;
mod faults;
mod fleet;
mod layer;
mod outbox;
mod sqlite;
mod stalls;
mod verdict;

use std::time::Duration;

use faults::{Cluster, Fault};
use fleet::Fleet;

/// The full form's faults (the script), or the quick form's (CI).
fn full() -> bool {
    std::env::var("DB_FAULTS_FULL").is_ok_and(|v| v == "1")
}

pub fn seed() -> u64 {
    std::env::var("DB_FAULTS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_faults_lose_and_double_nothing() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let (terminate_for, stop_for, horizon_for) = if full() {
        (
            Duration::from_secs(20),
            Duration::from_secs(15),
            Duration::from_secs(60),
        )
    } else {
        (
            Duration::from_secs(6),
            Duration::from_secs(5),
            Duration::from_secs(8),
        )
    };
    let scenarios = [
        Fault::Terminate {
            every: Duration::from_secs(2),
            for_: terminate_for,
        },
        Fault::Stop { for_: stop_for },
        Fault::Crash,
        Fault::Crash,
        Fault::PoolExhaustion,
        Fault::Horizon { for_: horizon_for },
    ];
    let server = fleet::PaymentsServer::start(cluster.conninfo()).await;
    let layer = fleet::PaymentsServer::start_in("postgres-layer", cluster.conninfo()).await;
    // DB_FAULTS_ONLY=NAME runs one scenario (to reproduce a failure).
    let only = std::env::var("DB_FAULTS_ONLY").ok();
    for (round, fault) in scenarios.into_iter().enumerate() {
        if only.as_deref().is_some_and(|name| name != fault.name()) {
            continue;
        }
        let statuses_before = layer::statuses(&layer).await;
        let fleet = Fleet::start(&cluster, &server, &layer, round, seed()).await;
        let (outcome, outbox) = fleet.run_through(&cluster, &fault).await;
        let effects = server.effects(&cluster).await;
        let away = fault.takes_the_database_away();
        let figures = verdict::judge(fault.name(), away, &outcome, &effects).await;
        println!("DB_FAULT {figures}");
        // The full form's horizon is long enough for vacuum to fall behind;
        // the quick form's eight seconds measure noise.
        if full() && matches!(fault, Fault::Horizon { .. }) {
            let (_, vs_before) = verdict::throughput_ratios(&outcome);
            let ratio = vs_before.expect("the full form loads a baseline before the fault");
            assert!(
                ratio >= 0.8,
                "under the pinned horizon throughput fell to {ratio:.2} of before it"
            );
        }
        let figures = outbox::judge(
            fault.name(),
            &cluster,
            &outcome.journal,
            &outbox,
            &effects,
            outcome.back_at,
        )
        .await;
        println!("DB_FAULT {figures}");
        let statuses = layer::statuses(&layer).await;
        println!(
            "DB_FAULT {}",
            layer::judge(fault.name(), &statuses_before, &statuses)
        );
        if matches!(fault, Fault::Stop { .. }) {
            assert!(
                outbox.pass_failures > 0,
                "the relay's passes failed while the database was away, and its warnings never said so"
            );
        }
    }
}
