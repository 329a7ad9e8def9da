//! A restart recovers at once: a worker with a stable name is SIGKILLed while
//! its payment is on the wire (committed by the server, the answer held); the
//! next process of the same name takes the lease back at start-up — without
//! waiting for it to end — and finishes the payment with the same key and body.
//! Another worker name sees the lease and when it ends, and leaves it alone.

use std::time::{Duration, SystemTime};

use reqwest_resilience::ResilientClient;
use reqwest_resilience_journal::{DurableExt, IntentState};

use crate::support::backend::{client, Backend};
use crate::support::server::{Act, Server};

pub const KEY: &str = "restart-payment-7";
pub const BODY: &[u8] = br#"{"amount":700,"currency":"EUR"}"#;
pub const URL_ENV: &str = "JOURNAL_TEST_URL";
const NAME: &str = "payments-worker-1";

crate::e2e_on_both_backends!(a_restarted_worker_takes_back_its_leases_at_once);

async fn a_restarted_worker_takes_back_its_leases_at_once(backend: Backend) {
    let server = Server::scripted(
        |_, before| {
            if before == 0 {
                Act::CommitThenHold
            } else {
                Act::Normal
            }
        },
        None,
    )
    .await;
    let mut child = backend.spawn_child("restart", &[(URL_ENV, &server.url)]);
    tokio::select! {
        () = server.wait_for_effects(1) => {}
        status = child.wait() => panic!("the child ended before the server committed: {status:?}"),
    }
    child.kill().await.expect("SIGKILL the child");

    // Another worker: the lease is live (deadline 2 s + margin 30 s); it waits.
    let other = backend
        .journal(|b| b.worker_name("payments-worker-2"))
        .await;
    let report = other.resumer(&client(3)).drain().await.unwrap();
    assert_eq!(report.claimed, 0);
    let backlog = report.backlog.expect("counted");
    assert_eq!((backlog.due, backlog.leased, backlog.waiting), (0, 1, 0));
    let lease_end = backlog.leased_until.expect("lease end");
    let left = lease_end
        .duration_since(SystemTime::now())
        .unwrap_or_default();
    assert!(left > Duration::from_secs(20), "lease ends in {left:?}");
    assert_eq!(other.next_due().await.unwrap(), Some(lease_end));

    // The same name in a new process (this one): taken back at once.
    let restarted = backend.journal(|b| b.worker_name(NAME)).await;
    let row = restarted.get(KEY).await.unwrap().expect("written ahead");
    assert_eq!(row.owner.as_deref(), Some(NAME));
    assert_ne!(
        row.incarnation.as_deref(),
        Some(restarted.worker().incarnation())
    );
    let report = restarted.resumer(&client(3)).drain().await.unwrap();
    assert_eq!((report.claimed, report.succeeded), (1, 1), "{report:?}");
    assert_eq!(
        report.backlog.map(|b| b.leased + b.due + b.waiting),
        Some(0)
    );
    assert_eq!(restarted.next_due().await.unwrap(), None, "nothing open");

    let seen = server.seen_with_key(KEY);
    assert_eq!(seen.len(), 2, "the dead process's attempt and the resume");
    assert!(seen.iter().all(|s| s.body == BODY), "the same body bytes");
    assert_eq!(server.effects(), 1, "one payment");
    let row = restarted.get(KEY).await.unwrap().unwrap();
    assert_eq!(row.state, IntentState::Succeeded);
    assert_eq!(row.runs, 2);
}

/// The first process of the worker: sends the payment durably; the server holds
/// the answer until the parent kills it.
pub async fn restart_child() {
    let url = std::env::var(URL_ENV).unwrap();
    let journal = Backend::from_env().journal(|b| b.worker_name(NAME)).await;
    let outcome = ResilientClient::new()
        .post(url)
        .idempotency_key(KEY)
        .body(BODY)
        .deadline(Duration::from_secs(2))
        .durable(&journal)
        .send()
        .await;
    println!("restart child ended: {:?}", outcome.map(|r| r.status()));
}
