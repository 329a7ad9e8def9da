//! A result lost to a crash is applied once: the process dies between the
//! journal's `succeeded` and the application's "mark the order paid", then
//! again inside the application's transaction, then right after it committed.
//! After each restart the catch-up (`unacknowledged`, and the acknowledgement
//! in the application's transaction) leaves the order paid exactly once.

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use reqwest_resilience_journal::IntentState;

use crate::support::backend::{client, Backend};
use crate::support::server::Server;
use crate::support::shop::{Crash, Shop};

crate::e2e_on_both_backends!(a_result_lost_to_a_crash_is_applied_once_after_restart);

/// Where the catch-up child dies: `before_commit` or `after_commit`.
const CRASH_ENV: &str = "JOURNAL_TEST_DELIVERY_CRASH";
const ORDER: i64 = 1842;

async fn a_result_lost_to_a_crash_is_applied_once_after_restart(backend: Backend) {
    let server = Server::start().await;
    let journal = backend.journal(|b| b.worker_name("shop")).await;
    let mut shop = Shop::open(&backend).await;
    let payment = journal
        .outbox(client(3).post(&server.url).body(r#"{"order":1842}"#))
        .unwrap();
    shop.order_with_payment(ORDER, &payment).await;
    let key = payment.key().to_owned();
    let unacknowledged = || async {
        let page = journal.unacknowledged(10).await.unwrap();
        page.into_iter()
            .map(|record| record.key)
            .collect::<Vec<_>>()
    };

    // Process 1: the relay sends the payment, the journal records
    // `succeeded`, and the process dies in `on_result`, before its update.
    crashed(&backend, "delivery_relay", "").await;
    let row = journal.get(&key).await.unwrap().expect("the payment");
    assert_eq!(row.state, IntentState::Succeeded);
    assert_eq!(server.effects(), 1);
    assert_eq!(shop.paid(ORDER).await, (0, 0), "the crash lost the update");
    assert_eq!(unacknowledged().await, [key.as_str()], "but not the result");

    // Process 2: the catch-up acknowledges and updates in one transaction,
    // and dies before its commit: both roll back.
    crashed(&backend, "delivery_catch_up", "before_commit").await;
    assert_eq!(shop.paid(ORDER).await, (0, 0));
    assert_eq!(unacknowledged().await, [key.as_str()], "still to deliver");

    // Process 3: the catch-up commits, and dies right after.
    crashed(&backend, "delivery_catch_up", "after_commit").await;
    assert_eq!(
        shop.paid(ORDER).await,
        (1, 1),
        "applied with its acknowledgement"
    );
    assert!(unacknowledged().await.is_empty());

    // This process, restarted once more: the catch-up, twice, finds nothing;
    // the fast path's late acknowledgement is not the first either.
    assert_eq!(shop.catch_up(&journal, Crash::Never).await, 0);
    assert_eq!(shop.catch_up(&journal, Crash::Never).await, 0);
    assert!(!shop.apply(&journal, &row, Crash::Never).await);
    assert_eq!(shop.paid(ORDER).await, (1, 1), "paid exactly once");
    assert_eq!(server.effects(), 1, "one payment");
}

/// Runs a child in `role` and checks that it died by SIGABRT (bounded: 30 s).
async fn crashed(backend: &Backend, role: &str, crash: &str) {
    let mut child = backend.spawn_child(role, &[(CRASH_ENV, crash)]);
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .unwrap_or_else(|_| panic!("{role} {crash}: still running after 30 s"))
        .unwrap();
    assert_eq!(
        status.signal(),
        Some(libc::SIGABRT),
        "{role} {crash}: it must die at its crash point, not end: {status}"
    );
}

/// The relay process: dies in the result hook, after the journal recorded
/// the result and before the application could apply it.
pub async fn relay_child() {
    let journal = Backend::from_env().journal(|b| b.worker_name("shop")).await;
    let report = journal
        .resumer(&client(3))
        .on_result(|result| {
            if result.error.is_none() && result.outcome.state().is_terminal() {
                std::process::abort();
            }
        })
        .drain()
        .await;
    println!("delivery relay ended without its crash: {report:?}");
}

/// The catch-up process, restarted: dies where `CRASH_ENV` says.
pub async fn catch_up_child() {
    let crash = match std::env::var(CRASH_ENV).unwrap().as_str() {
        "before_commit" => Crash::BeforeCommit,
        "after_commit" => Crash::AfterCommit,
        other => panic!("no crash point {other:?}"),
    };
    let backend = Backend::from_env();
    let journal = backend.journal(|b| b.worker_name("shop")).await;
    let applied = Shop::open(&backend).await.catch_up(&journal, crash).await;
    println!("delivery catch-up ended without its crash: {applied} applied");
}
