//! Four worker processes, each with its own PostgreSQL connection, resume 1,000
//! unknown intents from one journal concurrently.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use reqwest_resilience::{ResilientClient, RetryPolicy};

use reqwest_resilience_journal::{IntentState, NewIntent, Outcome, ResumeReport, Worker};
use tokio::io::AsyncReadExt;

use crate::support::backend::Backend;
use crate::support::server::Server;

pub const WORKER_ENV: &str = "JOURNAL_TEST_WORKER";
const INTENTS: usize = 1_000;
const WORKERS: usize = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_of_four_processes_resumes_1000_intents_once_each() {
    let Some(backend) = Backend::postgres("fleet").await else {
        return;
    };
    let server = Server::start().await;
    let journal = backend.journal(|b| b).await;
    let mut writes = tokio::task::JoinSet::new();
    for i in 0..INTENTS {
        let store = journal.clone();
        let url = server.url.clone();
        writes.spawn(async move {
            let mut intent = NewIntent::new(format!("fleet-{i:04}"), http::Method::POST, url);
            intent.body = format!(r#"{{"n":{i}}}"#).into_bytes();
            intent.deadline = Some(Duration::from_secs(10));
            let lease = store
                .store()
                .write_ahead(&intent, &Worker::unique(), Duration::ZERO)
                .await
                .unwrap();
            let lost = Outcome::Unknown {
                status: None,
                retry_in: Duration::ZERO,
                reason: "lost".into(),
            };
            store.store().record(&lease, &lost).await.unwrap();
        });
    }
    while let Some(done) = writes.join_next().await {
        done.unwrap();
    }

    let mut children: Vec<_> = (0..WORKERS)
        .map(|w| backend.spawn_child("fleet", &[(WORKER_ENV, &w.to_string())]))
        .collect();
    let mut claimed_by_reports = 0;
    for child in &mut children {
        let mut out = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .await
            .unwrap();
        let status = tokio::time::timeout(Duration::from_secs(120), child.wait())
            .await
            .expect("worker finished in time")
            .unwrap();
        assert!(status.success(), "worker failed: {out}");
        let report = out
            .lines()
            .find_map(|line| line.split_once("FLEET_REPORT claimed=")) // after libtest's "test … "
            .unwrap_or_else(|| panic!("no report from a worker: {out}"))
            .1;
        let claimed: usize = report.split_whitespace().next().unwrap().parse().unwrap();
        claimed_by_reports += claimed;
    }

    let seen = server.seen();
    let mut per_key: HashMap<String, usize> = HashMap::new();
    let mut per_worker: HashMap<String, usize> = HashMap::new();
    for request in &seen {
        *per_key.entry(request.key.clone().unwrap()).or_default() += 1;
        *per_worker
            .entry(request.header("x-worker").unwrap().to_owned())
            .or_default() += 1;
    }
    assert_eq!(per_key.len(), INTENTS, "every intent resent");
    assert!(
        per_key.values().all(|&n| n == 1),
        "no intent sent twice under live leases"
    );
    assert_eq!(server.effects(), INTENTS, "one effect each");
    assert_eq!(claimed_by_reports, INTENTS);
    assert!(per_worker.len() >= 2, "the work was shared: {per_worker:?}");
    let open = journal.list(IntentState::Unknown, 10).await.unwrap().len()
        + journal.list(IntentState::InFlight, 10).await.unwrap().len();
    assert_eq!(open, 0);
    assert_eq!(
        journal
            .list(IntentState::Succeeded, INTENTS + 1)
            .await
            .unwrap()
            .len(),
        INTENTS
    );
    println!("fleet: requests per worker {per_worker:?}");
}

/// Resumes from the shared journal until nothing is due, then prints its totals.
pub async fn worker_process() {
    let worker = std::env::var(WORKER_ENV).unwrap();
    let journal = Backend::from_env()
        .journal(|b| b.worker_name(format!("fleet-{worker}")))
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
