//! A crash of the PostgreSQL server loses nothing the journal acknowledged, even
//! on a server tuned `synchronous_commit = off` (where a `COMMIT` is answered
//! before its WAL reaches the disk): four senders make durable payments, the
//! server is stopped as a crash would stop it (`pg_ctl stop -m immediate`)
//! while they run, and after the restart every payment a caller was answered
//! for is in the journal: as `succeeded`, or still `in_flight` when the
//! response told its caller that its end was not recorded.
//!
//! The server's WAL writer is slowed (`wal_writer_delay = 10s`) so that the
//! commits the crash could lose are the ones of the last seconds, not only of
//! the last WAL page.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest_resilience::ResponseExt;
use reqwest_resilience_journal::throwaway_postgres::{Durability, ThrowawayPostgres};
use reqwest_resilience_journal::{DurableExt, IntentState, Journal, PostgresStore};

use crate::support::backend::client;
use crate::support::server::Server;

const SENDERS: usize = 4;
/// Sends acknowledged before the crash, at least.
const BEFORE_CRASH: usize = 40;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_restart_of_a_server_with_asynchronous_commits_loses_no_acknowledged_intent() {
    let settings = ["synchronous_commit=off", "wal_writer_delay=10000ms"];
    let cluster = match ThrowawayPostgres::start_with(Durability::Defaults, &settings) {
        Ok(Some(cluster)) => cluster,
        Ok(None) => return crate::support::skip_postgres("no initdb/pg_ctl found"),
        Err(error) => panic!("starting a throwaway PostgreSQL failed: {error}"),
    };
    let store = PostgresStore::connect(cluster.conninfo()).await.unwrap();
    let journal = Journal::new(store);
    let server = Server::start().await;
    let acknowledged = Arc::new(Mutex::new(Vec::<(String, bool)>::new()));
    let stop = Arc::new(AtomicBool::new(false));

    let senders: Vec<_> = (0..SENDERS)
        .map(|sender| {
            let (journal, url) = (journal.clone(), server.url.clone());
            let (acknowledged, stop) = (Arc::clone(&acknowledged), Arc::clone(&stop));
            tokio::spawn(async move {
                let client = client(1);
                // Bounded: the senders stop soon after the crash.
                for n in 0..10_000 {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let key = format!("crash-{sender}-{n}");
                    let sent = client
                        .post(&url)
                        .idempotency_key(&key)
                        .body(r#"{"amount":100}"#)
                        .deadline(Duration::from_secs(3))
                        .durable(&journal)
                        .send()
                        .await;
                    // A response whose end the journal could not record
                    // (the crash cut that write) holds only the write-ahead.
                    if let Ok(response) = sent {
                        let recorded = !response.end_not_recorded();
                        acknowledged.lock().unwrap().push((key, recorded));
                    }
                }
            })
        })
        .collect();
    for _ in 0..600 {
        if acknowledged.lock().unwrap().len() >= BEFORE_CRASH {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let crash = tokio::task::spawn_blocking(move || {
        cluster.stop_immediate().expect("crash the server");
        cluster
    });
    let cluster = crash.await.unwrap();
    stop.store(true, Ordering::SeqCst);
    for sender in senders {
        tokio::time::timeout(Duration::from_secs(30), sender)
            .await
            .expect("a sender ends within its deadlines")
            .unwrap();
    }
    let cluster = tokio::task::spawn_blocking(move || {
        cluster.restart().expect("start the server again");
        cluster
    })
    .await
    .unwrap();

    let acknowledged = acknowledged.lock().unwrap().clone();
    assert!(acknowledged.len() >= BEFORE_CRASH, "{}", acknowledged.len());
    let after = Journal::new(PostgresStore::connect(cluster.conninfo()).await.unwrap());
    let mut lost = Vec::new();
    for (key, recorded) in &acknowledged {
        let state = after.get(key).await.unwrap().map(|row| row.state);
        let kept = match state {
            Some(IntentState::Succeeded) => true,
            Some(IntentState::InFlight) => !recorded,
            _ => false,
        };
        if !kept {
            lost.push((key.clone(), *recorded, state));
        }
    }
    assert!(
        lost.is_empty(),
        "{} of {} acknowledged payments lost or reopened by the crash: {lost:?}",
        lost.len(),
        acknowledged.len()
    );
    for (key, _) in &acknowledged {
        assert_eq!(server.effects_with_key(key), 1, "{key}: one payment");
    }
}
