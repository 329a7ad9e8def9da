//! Entry points of the child processes the crash and fleet tests start (this test
//! binary again). Without the role variable this test returns at once.

use std::time::Duration;

use reqwest_resilience::ResilientClient;
use reqwest_resilience_journal::DurableExt;

use crate::support::backend::{Backend, CHILD_ROLE};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_entry() {
    let Ok(role) = std::env::var(CHILD_ROLE) else {
        return;
    };
    match role.as_str() {
        "crash" => crash_child().await,
        "commit_loop" => commit_loop_child().await,
        "restart" => crate::restart::restart_child().await,
        "outbox_relay" => crate::outbox_processes::relay_child().await,
        "delivery_relay" => crate::delivery_crash::relay_child().await,
        "delivery_catch_up" => crate::delivery_crash::catch_up_child().await,
        #[cfg(feature = "postgres")]
        "fleet" => crate::fleet::worker_process().await,
        other => panic!("unknown child role {other}"),
    }
}

/// Sends the payment durably; the server commits and holds the answer until
/// the parent kills this process.
async fn crash_child() {
    let url = std::env::var(crate::crash::URL_ENV).unwrap();
    let journal = Backend::from_env()
        .journal(|b| b.lease_margin(Duration::from_millis(100)))
        .await;
    let outcome = ResilientClient::new()
        .post(url)
        .idempotency_key(crate::crash::KEY)
        .header("content-type", "application/json")
        .body(crate::crash::BODY)
        .deadline(Duration::from_secs(2))
        .durable(&journal)
        .send()
        .await;
    // Only reached if the parent failed to kill us in time.
    println!("crash child ended: {:?}", outcome.map(|r| r.status()));
}

/// The prefix of the keys the commit-loop child writes ahead.
pub const LOOP_PREFIX_ENV: &str = "JOURNAL_TEST_LOOP_PREFIX";

/// Writes intents ahead as fast as it can, printing each key once its
/// write-ahead returned, until the parent kills it (bounded: 100 000 keys).
async fn commit_loop_child() {
    use std::io::Write;

    use reqwest_resilience_journal::conformance::payment;
    use reqwest_resilience_journal::{JournalStore, SqliteStore, Worker};

    let Backend::Sqlite(path) = Backend::from_env() else {
        panic!("the commit loop runs on SQLite");
    };
    let prefix = std::env::var(LOOP_PREFIX_ENV).unwrap();
    let store = SqliteStore::open(&path).expect("open SQLite");
    let worker = Worker::new("commit-loop");
    let mut out = std::io::stdout().lock();
    for n in 0..100_000 {
        let key = format!("{prefix}{n}");
        store
            .write_ahead(&payment(&key), &worker, Duration::from_secs(1))
            .await
            .expect("write ahead");
        writeln!(out, "written {key}").unwrap();
        out.flush().unwrap();
    }
}
