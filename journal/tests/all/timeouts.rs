//! The store bounds its own waits: a SQLite write lock held by another
//! connection past the busy timeout, a PostgreSQL statement past its timeout —
//! each a clear error, no hang, nothing written.

use std::time::{Duration, Instant};

use reqwest_resilience_journal::conformance::payment;
use reqwest_resilience_journal::{JournalStore, SqliteStore, Worker};

use crate::support::sqlite_path;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_write_lock_held_past_the_busy_timeout_is_a_timeout_error() {
    let path = sqlite_path("busy");
    let store = SqliteStore::builder(&path)
        .busy_timeout(Duration::from_millis(300))
        .open()
        .unwrap();
    // Another process (here: another connection) holds the write lock.
    let holder = rusqlite::Connection::open(&path).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();

    let started = Instant::now();
    let error = store
        .write_ahead(
            &payment("blocked"),
            &Worker::new("w"),
            Duration::from_secs(60),
        )
        .await
        .unwrap_err();
    let waited = started.elapsed();
    assert!(error.is_timeout(), "{error}");
    assert_eq!(
        error.to_string(),
        "journal write lock timed out after 300ms"
    );
    assert!(waited >= Duration::from_millis(250), "waited {waited:?}");
    assert!(
        waited < Duration::from_secs(3),
        "no hang: waited {waited:?}"
    );

    holder.execute_batch("ROLLBACK").unwrap();
    assert!(
        store.get("blocked").await.unwrap().is_none(),
        "nothing written"
    );
    store
        .write_ahead(
            &payment("blocked"),
            &Worker::new("w"),
            Duration::from_secs(60),
        )
        .await
        .expect("writes again once the lock is free");
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::*;
    use reqwest_resilience_journal::{IntentState, PostgresStore};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_postgres_statement_past_its_timeout_is_a_timeout_error() {
        let Some(conninfo) = crate::support::pg::fresh_schema("stmt_timeout").await else {
            return;
        };
        let store = PostgresStore::builder(&conninfo)
            .statement_timeout(Duration::from_millis(300))
            .connect()
            .await
            .unwrap();
        let (holder, connection) = tokio_postgres::connect(&conninfo, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        holder
            .batch_execute("BEGIN; LOCK TABLE journal_intents IN ACCESS EXCLUSIVE MODE")
            .await
            .unwrap();

        let started = Instant::now();
        let error = store
            .write_ahead(
                &payment("blocked"),
                &Worker::new("w"),
                Duration::from_secs(60),
            )
            .await
            .unwrap_err();
        assert!(error.is_timeout(), "{error}");
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );

        holder.batch_execute("ROLLBACK").await.unwrap();
        assert!(
            store.get("blocked").await.unwrap().is_none(),
            "nothing written"
        );
        assert!(store
            .list(IntentState::InFlight, None, 10)
            .await
            .unwrap()
            .is_empty());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_server_that_never_answers_the_connect_is_a_timeout_error() {
        // Accepts TCP connections and never says a word (a hung server).
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let held = tokio::spawn(async move {
            let mut sockets = Vec::new();
            for _ in 0..4 {
                let Ok((socket, _)) = listener.accept().await else {
                    break;
                };
                sockets.push(socket);
            }
            tokio::time::sleep(Duration::from_secs(10)).await;
        });
        let started = Instant::now();
        let error = PostgresStore::builder(&format!(
            "host=127.0.0.1 port={port} user=postgres dbname=postgres"
        ))
        .connect_timeout(Duration::from_millis(300))
        .connect()
        .await
        .unwrap_err();
        assert!(error.is_timeout(), "{error}");
        assert_eq!(error.to_string(), "journal connect timed out after 300ms");
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
        held.abort();
    }

    #[tokio::test]
    async fn bad_connection_settings_are_clear_errors() {
        let error = PostgresStore::connect("host=127.0.0.1 port=notaport")
            .await
            .unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("invalid journal configuration"),
            "{error}"
        );
        let error = PostgresStore::builder("host=127.0.0.1")
            .statement_timeout(Duration::ZERO)
            .connect()
            .await
            .unwrap_err();
        assert!(error.to_string().contains("above zero"), "{error}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_store_survives_a_restart_of_its_database() {
        let Some(cluster) = tokio::task::spawn_blocking(crate::support::pg::own_cluster)
            .await
            .unwrap()
        else {
            return;
        };
        let store = PostgresStore::builder(cluster.conninfo())
            .connect_timeout(Duration::from_secs(1))
            .statement_timeout(Duration::from_secs(2))
            .connect()
            .await
            .unwrap();
        let worker = Worker::new("w");
        store
            .write_ahead(&payment("before"), &worker, Duration::from_secs(60))
            .await
            .unwrap();

        let cluster = std::sync::Arc::new(cluster);
        let stopping = cluster.clone();
        tokio::task::spawn_blocking(move || stopping.stop())
            .await
            .unwrap()
            .expect("stop the database");
        let started = Instant::now();
        let error = store.get("before").await.unwrap_err();
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "fails fast while the database is down: {error} after {:?}",
            started.elapsed()
        );

        let starting = cluster.clone();
        tokio::task::spawn_blocking(move || starting.restart())
            .await
            .unwrap()
            .expect("start the database again");
        // Bounded: the reconnect backoff is at most 5 s between attempts.
        let back = Instant::now();
        let row = loop {
            match store.get("before").await {
                Ok(row) => break row,
                Err(error) if back.elapsed() < Duration::from_secs(20) => {
                    eprintln!("not yet: {error}");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(error) => panic!("never reconnected: {error}"),
            }
        };
        assert!(row.is_some(), "the journal kept its row");
        store
            .write_ahead(&payment("after"), &worker, Duration::from_secs(60))
            .await
            .expect("writes again after the restart");
    }
}
