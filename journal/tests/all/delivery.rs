//! The acknowledgement in the application's transaction: it commits or rolls
//! back with it, an open or unknown intent is refused with the transaction still
//! usable, and of two transactions acknowledging at once only the first to
//! commit applies.

use std::time::Duration;

use reqwest_resilience_journal::conformance::payment;
use reqwest_resilience_journal::{IntentState, Journal, JournalError, Outcome, Worker};

use crate::support::sqlite_path;

/// Writes `key` ahead and records its success: a result to deliver.
async fn paid(journal: &Journal, key: &str) {
    let store = journal.store();
    let lease = store
        .write_ahead(&payment(key), &Worker::new("w"), Duration::from_secs(3600))
        .await
        .unwrap();
    let outcome = Outcome::Succeeded {
        status: 201,
        locator: None,
    };
    store.record(&lease, &outcome).await.unwrap();
}

async fn listed(journal: &Journal) -> Vec<String> {
    let page = journal.unacknowledged(10).await.unwrap();
    page.into_iter().map(|record| record.key).collect()
}

fn refused_as_open(error: &JournalError, state: IntentState) -> bool {
    matches!(error, JournalError::NotTerminal { state: s, .. } if *s == state)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rusqlite_acknowledgement_commits_or_rolls_back_with_the_transaction() {
    let path = sqlite_path("delivery-rusqlite");
    let journal = Journal::new(reqwest_resilience_journal::SqliteStore::open(&path).unwrap());
    let mut conn = rusqlite::Connection::open(&path).unwrap();
    conn.busy_timeout(Duration::from_secs(5)).unwrap();
    conn.execute_batch("CREATE TABLE audit (key TEXT NOT NULL)")
        .unwrap();
    paid(&journal, "pay-1").await;
    let open = journal
        .outbox(crate::support::backend::client(1).post("http://127.0.0.1:9/p"))
        .unwrap();
    open.enqueue_rusqlite(&conn).unwrap();

    let tx = conn.transaction().unwrap();
    assert!(journal.acknowledge_rusqlite(&tx, "pay-1").unwrap());
    tx.rollback().unwrap();
    assert_eq!(listed(&journal).await, ["pay-1"], "rolled back with it");

    let tx = conn.transaction().unwrap();
    let error = journal.acknowledge_rusqlite(&tx, open.key()).unwrap_err();
    assert!(refused_as_open(&error, IntentState::Queued), "{error}");
    let error = journal.acknowledge_rusqlite(&tx, "never").unwrap_err();
    assert!(matches!(error, JournalError::UnknownKey { .. }), "{error}");
    assert!(journal.acknowledge_rusqlite(&tx, "pay-1").unwrap());
    assert!(
        !journal.acknowledge_rusqlite(&tx, "pay-1").unwrap(),
        "idempotent"
    );
    tx.execute("INSERT INTO audit VALUES ('pay-1')", [])
        .unwrap_or_else(|error| panic!("the transaction stays usable: {error}"));
    tx.commit().unwrap();
    assert!(listed(&journal).await.is_empty());
    assert!(
        !journal.acknowledge("pay-1").await.unwrap(),
        "seen by the store"
    );
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::*;
    use reqwest_resilience_journal::PostgresStore;

    async fn setup(test: &str) -> Option<(String, Journal, tokio_postgres::Client)> {
        let conninfo = crate::support::pg::fresh_schema(test).await?;
        let journal = Journal::new(PostgresStore::connect(&conninfo).await.unwrap());
        let (client, connection) = tokio_postgres::connect(&conninfo, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        client
            .batch_execute("CREATE TABLE audit (key TEXT NOT NULL)")
            .await
            .unwrap();
        Some((conninfo, journal, client))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_tokio_postgres_acknowledgement_commits_or_rolls_back_with_the_transaction() {
        let Some((_, journal, mut pg)) = setup("delivery_tokio_postgres").await else {
            return;
        };
        paid(&journal, "pay-1").await;
        let lease = journal
            .store()
            .write_ahead(
                &payment("open"),
                &Worker::new("w"),
                Duration::from_secs(3600),
            )
            .await
            .unwrap();

        let tx = pg.transaction().await.unwrap();
        assert!(journal
            .acknowledge_tokio_postgres(&tx, "pay-1")
            .await
            .unwrap());
        tx.rollback().await.unwrap();
        assert_eq!(listed(&journal).await, ["pay-1"], "rolled back with it");

        let tx = pg.transaction().await.unwrap();
        let error = journal
            .acknowledge_tokio_postgres(&tx, &lease.key)
            .await
            .unwrap_err();
        assert!(refused_as_open(&error, IntentState::InFlight), "{error}");
        let error = journal
            .acknowledge_tokio_postgres(&tx, "never")
            .await
            .unwrap_err();
        assert!(matches!(error, JournalError::UnknownKey { .. }), "{error}");
        assert!(journal
            .acknowledge_tokio_postgres(&tx, "pay-1")
            .await
            .unwrap());
        assert!(!journal
            .acknowledge_tokio_postgres(&tx, "pay-1")
            .await
            .unwrap());
        tx.execute("INSERT INTO audit VALUES ('pay-1')", &[])
            .await
            .unwrap_or_else(|error| panic!("the transaction stays usable: {error}"));
        tx.commit().await.unwrap();
        assert!(listed(&journal).await.is_empty());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn of_two_transactions_acknowledging_at_once_only_the_first_to_commit_applies() {
        let Some((conninfo, journal, mut first)) = setup("delivery_two_tx").await else {
            return;
        };
        paid(&journal, "pay-1").await;
        let tx = first.transaction().await.unwrap();
        assert!(journal
            .acknowledge_tokio_postgres(&tx, "pay-1")
            .await
            .unwrap());
        // The second waits on the row the first holds until the first commits.
        let second = {
            let journal = journal.clone();
            tokio::spawn(async move {
                let (mut pg, connection) =
                    tokio_postgres::connect(&conninfo, tokio_postgres::NoTls)
                        .await
                        .unwrap();
                tokio::spawn(connection);
                let tx = pg.transaction().await.unwrap();
                let first = journal.acknowledge_tokio_postgres(&tx, "pay-1").await;
                tx.commit().await.unwrap();
                first
            })
        };
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!second.is_finished(), "the second waits for the first");
        tx.commit().await.unwrap();
        let second = tokio::time::timeout(Duration::from_secs(10), second)
            .await
            .expect("the second ends once the first committed")
            .unwrap();
        assert!(!second.unwrap(), "the second is not the first");
    }

    #[cfg(feature = "sqlx")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_sqlx_acknowledgement_commits_or_rolls_back_with_the_transaction() {
        use sqlx::Connection;

        let Some((conninfo, journal, _)) = setup("delivery_sqlx").await else {
            return;
        };
        paid(&journal, "pay-1").await;
        let config: tokio_postgres::Config = conninfo.parse().unwrap();
        let schema = config
            .get_options()
            .and_then(|o| o.strip_prefix("-csearch_path="))
            .expect("the test schema")
            .to_owned();
        let options = sqlx::postgres::PgConnectOptions::new()
            .host("127.0.0.1")
            .port(config.get_ports().first().copied().unwrap_or(5432))
            .username(config.get_user().unwrap_or("postgres"))
            .database(config.get_dbname().unwrap_or("postgres"))
            .options([("search_path", schema.as_str())]);
        let mut conn = sqlx::PgConnection::connect_with(&options).await.unwrap();

        let mut tx = conn.begin().await.unwrap();
        assert!(journal.acknowledge_sqlx(&mut tx, "pay-1").await.unwrap());
        tx.rollback().await.unwrap();
        assert_eq!(listed(&journal).await, ["pay-1"], "rolled back with it");

        let mut tx = conn.begin().await.unwrap();
        let error = journal
            .acknowledge_sqlx(&mut tx, "never")
            .await
            .unwrap_err();
        assert!(matches!(error, JournalError::UnknownKey { .. }), "{error}");
        assert!(journal.acknowledge_sqlx(&mut tx, "pay-1").await.unwrap());
        assert!(!journal.acknowledge_sqlx(&mut tx, "pay-1").await.unwrap());
        sqlx::query("INSERT INTO audit VALUES ('pay-1')")
            .execute(&mut *tx)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        assert!(listed(&journal).await.is_empty());
    }
}
