//! Relays in other processes: an intent committed here is sent by a relay
//! process — on SQLite by its poll, on PostgreSQL woken by `NOTIFY` well before
//! its poll — once, with its key.

use std::time::Duration;

use reqwest_resilience_journal::IntentState;

use crate::outbox_outage::enqueue;
use crate::support::backend::{client, Backend};
use crate::support::server::Server;

crate::e2e_on_both_backends!(a_relay_in_another_process_sends_what_committed_here);

/// The relay child's poll interval, in milliseconds.
pub const POLL_MS_ENV: &str = "JOURNAL_TEST_RELAY_POLL_MS";

async fn a_relay_in_another_process_sends_what_committed_here(backend: Backend) {
    let journal = backend.journal(|b| b.worker_name("producer")).await;
    let server = Server::start().await;
    let client = client(3);
    // SQLite cannot wake another process: its relay polls. PostgreSQL's relay
    // polls once a minute, so only the NOTIFY can make it prompt.
    let poll = match backend {
        Backend::Sqlite(_) => "100",
        Backend::Postgres(_) => "60000",
    };
    let mut relay = backend.spawn_child("outbox_relay", &[(POLL_MS_ENV, poll)]);
    // Let the relay start, make its first (empty) pass and listen.
    tokio::time::sleep(Duration::from_millis(1500)).await;

    let mut keys = Vec::new();
    for n in 0..5 {
        let intent = journal
            .outbox(client.post(&server.url).body(format!("{{\"n\":{n}}}")))
            .unwrap();
        enqueue(&backend, &intent).await;
        journal.wake_relays().await;
        keys.push(intent.key().to_owned());
    }
    let sent =
        tokio::time::timeout(Duration::from_secs(20), server.wait_for_effects(keys.len())).await;
    let recorded = all_succeeded(&journal, &keys).await;
    relay.kill().await.expect("stop the relay");
    sent.expect("the relay process sent every committed intent");
    assert!(recorded, "the relay process recorded every result");
    for key in &keys {
        assert_eq!(server.seen_with_key(key).len(), 1, "sent once");
    }
}

/// Waits (bounded: 10 s) until every key's intent succeeded.
async fn all_succeeded(journal: &reqwest_resilience_journal::Journal, keys: &[String]) -> bool {
    for _ in 0..100 {
        let mut done = 0;
        for key in keys {
            let row = journal.get(key).await.unwrap().unwrap();
            done += usize::from(row.state == IntentState::Succeeded);
        }
        if done == keys.len() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

/// The relay process: a resumer in the background until the parent kills it
/// (bounded: 60 s).
pub async fn relay_child() {
    let poll: u64 = std::env::var(POLL_MS_ENV).unwrap().parse().unwrap();
    let journal = Backend::from_env()
        .journal(|b| b.worker_name("relay-process"))
        .await;
    let relay = journal
        .resumer(&client(3))
        .spawn(Duration::from_millis(poll));
    tokio::time::sleep(Duration::from_secs(60)).await;
    relay.stop().await;
}
