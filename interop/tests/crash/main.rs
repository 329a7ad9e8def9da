//! The strong mode under crashes, with this workspace's own client: the
//! strong_payments server is killed with SIGKILL at seeded random moments and
//! restarted on the same database while reqwest-resilience sends durable intents
//! to it through a fault proxy (lost answers, resets). After the run every
//! unfinished intent is resumed from the journal with its key; then the server's
//! database must hold exactly one payment per intent that succeeded, none for one
//! that failed, and no other; and every answer any client saw names that payment.
//!
//! The quick form kills 10 times; `interop/scripts/crash.sh` runs 100
//! (`INTEROP_CRASH_KILLS`, `INTEROP_CRASH_SEED`).

mod fault_proxy;
mod ledger;
mod run;
mod server;
mod verdict;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigkills_amid_faulty_durable_sends_leave_one_effect_per_intent() {
    let kills = env_number("INTEROP_CRASH_KILLS", 10);
    let seed = env_number("INTEROP_CRASH_SEED", 30);
    let outcome = run::crash_run(run::Plan { kills, seed }).await;
    println!("{outcome}");
    outcome.assert_converged();
}

fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(value) => value
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be a whole number, got {value:?}")),
        Err(_) => default,
    }
}
