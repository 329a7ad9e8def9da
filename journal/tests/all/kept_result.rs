//! A result the caller already holds is written as soon as the database is
//! back — not left `in_flight` until its lease ends and then resent — even when
//! the caller's deadline cut the caller's wait for that write short.
//!
//! The database is stopped while the payment is on the wire and the server
//! answers just before the send's deadline: the payment succeeds, the terminal
//! write fails and is cut off by the deadline, and the caller gets its 201
//! marked "end not recorded". The database is started again; the row must read
//! `succeeded` within 5 s, long before its lease (deadline + 30 s) ends, and
//! the server must have seen the key once.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest_resilience::ResponseExt;
use reqwest_resilience_journal::{DurableExt, IntentState, Journal, PostgresStore};

use crate::support::backend::client;
use crate::support::server::{Act, Server};

const KEY: &str = "kept-result-1";
const DEADLINE: Duration = Duration::from_secs(3);
/// How long before the deadline the server answers.
const ANSWER_BEFORE_DEADLINE: Duration = Duration::from_millis(150);
const RECORDED_WITHIN: Duration = Duration::from_secs(5);

type ProbeFuture = std::pin::Pin<Box<dyn std::future::Future<Output = Option<String>> + Send>>;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_cut_off_by_the_deadline_is_written_once_the_database_is_back() {
    let Some(cluster) = crate::support::pg::own_cluster() else {
        return;
    };
    let cluster = Arc::new(cluster);
    let journal = Journal::new(PostgresStore::connect(cluster.conninfo()).await.unwrap());
    let sent_at = Arc::new(Mutex::new(Instant::now()));

    // When the payment reaches the server (written ahead already), the
    // database stops; the server answers just before the send's deadline.
    let (stopper, started) = (Arc::clone(&cluster), Arc::clone(&sent_at));
    let probe = Arc::new(move |_key: String| {
        let (stopper, started) = (Arc::clone(&stopper), Arc::clone(&started));
        Box::pin(async move {
            tokio::task::spawn_blocking(move || stopper.stop().expect("stop the database"))
                .await
                .unwrap();
            let answer_at = *started.lock().unwrap() + DEADLINE - ANSWER_BEFORE_DEADLINE;
            tokio::time::sleep_until(answer_at.into()).await;
            None
        }) as ProbeFuture
    });
    let server = Server::scripted(|_, _| Act::Normal, Some(probe)).await;

    *sent_at.lock().unwrap() = Instant::now();
    let response = client(1)
        .post(&server.url)
        .idempotency_key(KEY)
        .body(r#"{"amount":5}"#)
        .deadline(DEADLINE)
        .durable(&journal)
        .send()
        .await
        .expect("the payment is answered");
    assert_eq!(response.status(), 201);
    assert!(response.end_not_recorded(), "the database was away");

    let restarter = Arc::clone(&cluster);
    tokio::task::spawn_blocking(move || restarter.restart().expect("start the database"))
        .await
        .unwrap();
    let back = Instant::now();
    let state = loop {
        let state = journal.get(KEY).await.ok().flatten().map(|row| row.state);
        if state == Some(IntentState::Succeeded) || back.elapsed() > RECORDED_WITHIN {
            break state;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        state,
        Some(IntentState::Succeeded),
        "not recorded within {RECORDED_WITHIN:?} of the database's return"
    );
    println!(
        "KEPT_RESULT recorded {:?} after the database was back",
        back.elapsed()
    );
    assert_eq!(server.seen_with_key(KEY).len(), 1, "never resent");
    assert_eq!(server.effects(), 1);
}
