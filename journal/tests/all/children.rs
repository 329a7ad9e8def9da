//! Entry points of the child processes the crash and fleet tests start (this test
//! binary again). Without the role variable this test returns at once.

use std::time::{Duration, Instant};

use reqwest_resilience::{ResilientClient, RetryPolicy};
use reqwest_resilience_journal::{DurableExt, ResumeReport};

use crate::support::backend::{Backend, CHILD_ROLE};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_entry() {
    let Ok(role) = std::env::var(CHILD_ROLE) else {
        return;
    };
    match role.as_str() {
        "crash" => crash_child().await,
        "fleet" => fleet_child().await,
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

/// Resumes from the shared journal until nothing is due, then prints its totals.
async fn fleet_child() {
    let worker = std::env::var(crate::fleet::WORKER_ENV).unwrap();
    let journal = Backend::from_env()
        .journal(|b| b.owner(format!("fleet-{worker}")))
        .await;
    let client = ResilientClient::with_policy(
        RetryPolicy::builder()
            .max_attempts(3)
            .no_budget()
            .build()
            .unwrap(),
    );
    let resumer = journal
        .resumer(&client)
        .batch(25)
        .resign(move |request, _| request.header("x-worker", worker.as_str()));
    let started = Instant::now();
    let mut total = ResumeReport::default();
    // Bounded: 1,000 intents in batches of 25 need 40 passes among all workers.
    for _ in 0..200 {
        let report = resumer.run_once().await.expect("resume pass");
        if report.claimed == 0 || started.elapsed() > Duration::from_secs(60) {
            break;
        }
        total.claimed += report.claimed;
        total.succeeded += report.succeeded;
    }
    println!(
        "FLEET_REPORT claimed={} succeeded={}",
        total.claimed, total.succeeded
    );
}
