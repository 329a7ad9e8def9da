//! One relay of the outbox test's fleet: the journal's resumer, sending the
//! intents that business transactions enqueued, until killed.
//!
//! ```text
//! outbox_relay 'postgres:host=127.0.0.1 port=… user=postgres dbname=postgres' relay-0 SEED TOKEN
//! outbox_relay sqlite:/tmp/…/journal.sqlite relay-0 SEED TOKEN
//! ```
//!
//! On PostgreSQL a commit's `NOTIFY` wakes the relay; on SQLite (the journal's
//! file, shared with other processes) only its poll does.
//!
//! `SEED` seeds the client's jitter; `TOKEN` is the bearer credential the relay
//! adds back to each send (the journal never keeps one).
//!
//! The worker name is stable across restarts, so a relay started again after a
//! SIGKILL takes back at once the leases its killed predecessor held. It prints
//! one line once it relays, and stops when its standard input closes (its parent
//! is gone), so it never outlives the test.

use std::time::Duration;

use reqwest_resilience::{Backoff, ResilientClient, RetryPolicy};
use reqwest_resilience_journal::{Journal, JournalBuilder, PostgresStore, SqliteStore};
use tokio::io::AsyncReadExt;

/// The bound on the relay's poll: commits wake it earlier.
const POLL: Duration = Duration::from_millis(500);
/// A lease well above one send's deadline: a live relay never loses one.
const LEASE: Duration = Duration::from_secs(10);
/// The resumer's lease margin: the send's deadline ends this long before the lease.
const LEASE_MARGIN: Duration = Duration::from_secs(1);
/// A lost answer (through the fault proxy) is due again this soon.
const UNKNOWN_RETRY_AFTER: Duration = Duration::from_millis(50);
/// Claims before the journal abandons an intent: nearly half the proxy's
/// connections fail, and every kill costs the claims it held a run.
const MAX_RUNS: u32 = 100;
/// How long a SQLite journal waits for the file's write lock.
const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(30);
/// Intents one pass claims and sends concurrently.
const BATCH: usize = 16;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: outbox_relay postgres:CONNINFO|sqlite:PATH WORKER_NAME SEED TOKEN";
    let store = args.next().ok_or(usage)?;
    let name = args.next().ok_or(usage)?;
    let seed: u64 = args.next().ok_or(usage)?.parse()?;
    let token = args.next().ok_or(usage)?;

    let journal = journal_builder(&store)
        .await?
        .worker_name(name.clone())
        .resume_lease(LEASE)
        .lease_margin(LEASE_MARGIN)
        .unknown_retry_after(UNKNOWN_RETRY_AFTER)
        .max_runs(MAX_RUNS)
        .build()?;
    let relay = journal
        .resumer(&client(seed)?)
        .resign(move |request, _| request.bearer_auth(&token))
        .batch(BATCH)
        .spawn(POLL);
    println!("relaying as {name}");

    // Until the parent closes the pipe (or dies): a SIGKILL ends it sooner.
    let mut sink = Vec::new();
    tokio::io::stdin().read_to_end(&mut sink).await?;
    relay.stop().await;
    Ok(())
}

/// The journal on the store the argument names.
async fn journal_builder(store: &str) -> Result<JournalBuilder, Box<dyn std::error::Error>> {
    if let Some(conninfo) = store.strip_prefix("postgres:") {
        let store = PostgresStore::builder(conninfo)
            .pool_size(4)
            .connect()
            .await?;
        Ok(Journal::builder(store))
    } else if let Some(path) = store.strip_prefix("sqlite:") {
        // Four producers and the other relay write to the file back to back,
        // and SQLite's lock is not a queue: a long wait is not a failure.
        let store = SqliteStore::builder(path)
            .busy_timeout(SQLITE_BUSY_TIMEOUT)
            .open()?;
        Ok(Journal::builder(store))
    } else {
        Err(format!("a store is postgres:CONNINFO or sqlite:PATH, got {store:?}").into())
    }
}

/// As the crash test's client: no idle connections (every attempt meets a
/// fresh fault of the proxy), short jittered backoff seeded by the run.
fn client(seed: u64) -> Result<ResilientClient, Box<dyn std::error::Error>> {
    let policy = RetryPolicy::builder()
        .max_attempts(4)
        .backoff(Backoff::full_jitter(
            Duration::from_millis(10),
            Duration::from_millis(200),
        ))
        .attempt_timeout(Duration::from_secs(2))
        .deadline(Duration::from_secs(5))
        .rng_seed(seed)
        .build()?;
    let http = ResilientClient::reqwest_builder_for(&policy).pool_max_idle_per_host(0);
    Ok(ResilientClient::from_builder(http, policy)?)
}
