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
        "restart" => crate::restart::restart_child().await,
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
