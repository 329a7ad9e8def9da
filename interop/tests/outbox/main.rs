//! The transactional outbox under rollbacks and crashes, with a fleet: business
//! transactions on PostgreSQL each insert an order row and enqueue its
//! `POST /payments` intent in the same transaction; a seeded fifth of them roll
//! back. A fleet of relay processes sends the committed intents through a fault
//! proxy (lost answers, resets) to a payments server in the server crate's
//! strong mode, and relays are killed with SIGKILL at seeded moments and
//! started again under their names. When the kills end, the relays drain until
//! nothing is open; then the server's payments must be the committed orders
//! exactly, every send one of a committed order's (its key, its body, its
//! credential added back), none of a rolled-back one, and every committed
//! intent terminal in the journal.
//!
//! The quick form runs 300 transactions and 3 kills; `interop/scripts/outbox-crash.sh`
//! runs 10,000 and 50 (`INTEROP_OUTBOX_TRANSACTIONS`, `INTEROP_OUTBOX_KILLS`,
//! `INTEROP_OUTBOX_SEED`).

// The crash test's proxy, shared: this test never restarts the server behind
// it, so its upstream switch goes unused here.
#[allow(dead_code)]
#[path = "../crash/fault_proxy.rs"]
mod fault_proxy;
mod fleet;
mod kills;
mod producer;
mod run;
mod server;
mod verdict;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn on_postgres_committed_intents_are_paid_once_and_rolled_back_ones_never_sent() {
    outbox_run(run::Backend::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn on_sqlite_committed_intents_are_paid_once_and_rolled_back_ones_never_sent() {
    outbox_run(run::Backend::Sqlite).await;
}

async fn outbox_run(backend: run::Backend) {
    let plan = run::Plan {
        backend,
        transactions: env_number("INTEROP_OUTBOX_TRANSACTIONS", 300),
        kills: env_number("INTEROP_OUTBOX_KILLS", 3),
        seed: env_number("INTEROP_OUTBOX_SEED", 31),
    };
    let outcome = run::outbox_run(plan).await;
    println!("{outcome}");
    outcome.assert_exact();
}

fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(value) => value
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be a whole number, got {value:?}")),
        Err(_) => default,
    }
}
