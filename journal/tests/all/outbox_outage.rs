//! A relay on the server's worst day: while nothing can reach the server
//! (connections refused, or the client's breaker open), every run provably
//! does nothing, so the committed intent stays `queued` with its runs given
//! back — never worn down to `abandoned` by the max runs — and is sent once the
//! server is back.

use std::time::Duration;

use reqwest_resilience_journal::{IntentState, Journal, OutboxIntent};

use crate::support::backend::{client, Backend};
use crate::support::server::{Act, Server};

crate::e2e_on_both_backends!(
    an_outage_longer_than_the_max_runs_never_abandons_a_committed_intent,
    an_open_breaker_holds_the_relay_back_without_wearing_the_intent_down,
);

/// Enqueues `intent` on the backend's database, in a transaction of its own.
pub async fn enqueue(backend: &Backend, intent: &OutboxIntent) {
    match backend {
        Backend::Sqlite(path) => {
            let mut conn = rusqlite::Connection::open(path).unwrap();
            conn.busy_timeout(Duration::from_secs(5)).unwrap();
            let tx = conn.transaction().unwrap();
            intent.enqueue_rusqlite(&tx).unwrap();
            tx.commit().unwrap();
        }
        #[cfg(not(feature = "postgres"))]
        Backend::Postgres(_) => unreachable!("built without the postgres feature"),
        #[cfg(feature = "postgres")]
        Backend::Postgres(conninfo) => {
            let (mut client, connection) = tokio_postgres::connect(conninfo, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(connection);
            let tx = client.transaction().await.unwrap();
            intent.enqueue_tokio_postgres(&tx).await.unwrap();
            tx.commit().await.unwrap();
        }
    }
}

async fn an_outage_longer_than_the_max_runs_never_abandons_a_committed_intent(backend: Backend) {
    const MAX_RUNS: u32 = 2;
    let journal: Journal = backend
        .journal(|b| b.max_runs(MAX_RUNS).unknown_retry_after(Duration::ZERO))
        .await;
    // A port nothing listens on: every connect is refused, until the server binds it.
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}/payments");
    let client = client(2);
    let intent = journal.outbox(client.post(&url).body("{}")).unwrap();
    enqueue(&backend, &intent).await;

    for pass in 0..(MAX_RUNS * 3) {
        let report = journal.resume(&client, 10).await.unwrap();
        assert_eq!(
            (report.claimed, report.not_performed, report.abandoned),
            (1, 1, 0),
            "pass {pass}"
        );
        let row = journal.get(intent.key()).await.unwrap().unwrap();
        assert_eq!(row.state, IntentState::Queued, "pass {pass}");
        assert_eq!(row.runs, 0, "pass {pass}: the run was given back");
        assert_eq!(row.fence, i64::from(pass) + 1, "each claim still fences");
    }

    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .expect("the port is free again");
    let server = Server::on(listener, |_, _| Act::Normal, None);
    let report = journal.resume(&client, 10).await.unwrap();
    assert_eq!((report.claimed, report.succeeded), (1, 1));
    assert_eq!(server.seen_with_key(intent.key()).len(), 1);
    assert_eq!(server.effects(), 1);
    let row = journal.get(intent.key()).await.unwrap().unwrap();
    assert_eq!((row.state, row.runs), (IntentState::Succeeded, 1));
}

/// A relay whose client's circuit breaker is open (isolated by hand): every run
/// is refused before its first byte, so the intent stays `queued`, its runs
/// given back, nothing reaches the server — until the breaker closes.
async fn an_open_breaker_holds_the_relay_back_without_wearing_the_intent_down(backend: Backend) {
    const MAX_RUNS: u32 = 2;
    let journal: Journal = backend
        .journal(|b| b.max_runs(MAX_RUNS).unknown_retry_after(Duration::ZERO))
        .await;
    let server = Server::start().await;
    let breaker = reqwest_resilience::CircuitBreaker::new_default();
    let client = reqwest_resilience::ResilientClient::with_policy(
        reqwest_resilience::RetryPolicy::builder()
            .max_attempts(2)
            .sleeper(reqwest_resilience::RecordingSleeper::new())
            .no_budget()
            .gate(breaker.clone())
            .build()
            .unwrap(),
    );
    let intent = journal.outbox(client.post(&server.url).body("{}")).unwrap();
    enqueue(&backend, &intent).await;

    breaker.isolate();
    for pass in 0..(MAX_RUNS * 3) {
        let report = journal.resume(&client, 10).await.unwrap();
        assert_eq!(
            (report.claimed, report.not_performed),
            (1, 1),
            "pass {pass}"
        );
        let row = journal.get(intent.key()).await.unwrap().unwrap();
        assert_eq!(
            (row.state, row.runs),
            (IntentState::Queued, 0),
            "pass {pass}"
        );
        assert!(
            row.detail.is_some_and(|d| d.contains("gate")),
            "pass {pass}: says why"
        );
    }
    assert!(server.seen().is_empty(), "an open breaker sends nothing");

    breaker.reset();
    let report = journal.resume(&client, 10).await.unwrap();
    assert_eq!(report.succeeded, 1);
    assert_eq!(server.seen_with_key(intent.key()).len(), 1);
}
