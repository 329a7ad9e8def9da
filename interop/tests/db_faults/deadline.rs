//! No storage wait past the caller's deadline: a write-ahead held up by a
//! lock ends in the journal's own error (naming what it waited for, nothing
//! written) before the send's deadline, on PostgreSQL and SQLite; and a
//! write-ahead cut off mid-transaction never leaves that transaction open on
//! a pooled connection for the next operation to run inside.

use std::time::{Duration, Instant};

use http::Method;
use reqwest_resilience_journal::{JournalStore, NewIntent, PostgresStore, SqliteStore, Worker};

use crate::faults::Cluster;

const LEASE: Duration = Duration::from_secs(60);

fn intent(key: &str, deadline: Option<Duration>) -> NewIntent {
    let mut intent = NewIntent::new(key, Method::POST, "http://127.0.0.1:9/payments");
    intent.body = b"{}".to_vec();
    intent.deadline = deadline;
    intent
}

async fn store(cluster: &Cluster) -> PostgresStore {
    PostgresStore::builder(cluster.conninfo())
        .pool_size(1)
        .connect()
        .await
        .expect("the journal's store")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_write_ahead_held_by_a_lock_ends_before_the_deadline_naming_the_wait() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let store = store(&cluster).await;
    let admin = cluster.admin().await;
    admin
        .batch_execute("BEGIN; LOCK TABLE journal_intents IN EXCLUSIVE MODE")
        .await
        .unwrap();
    let deadline = Duration::from_secs(1);
    let started = Instant::now();
    // The store's statement timeout (5 s) is far past the deadline.
    let error = store
        .write_ahead(&intent("held", Some(deadline)), &Worker::new("w"), LEASE)
        .await
        .expect_err("the lock outlives the deadline");
    let waited = started.elapsed();
    assert!(waited < deadline, "waited {waited:?}, past the deadline");
    assert!(
        waited >= deadline / 2,
        "gave up early: {waited:?} ({error})"
    );
    assert!(error.is_timeout(), "{error}");
    assert!(
        error.to_string().contains("write-ahead statement"),
        "{error}"
    );
    admin.batch_execute("ROLLBACK").await.unwrap();
    assert!(
        store.get("held").await.unwrap().is_none(),
        "nothing written"
    );
    // The same store goes on.
    store
        .write_ahead(&intent("held", Some(deadline)), &Worker::new("w"), LEASE)
        .await
        .expect("written once the lock is gone");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_write_ahead_cut_off_mid_transaction_leaves_no_transaction_open() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let store = store(&cluster).await;
    let worker = Worker::new("w");
    store
        .write_ahead(&intent("earlier", None), &worker, LEASE)
        .await
        .unwrap();
    let admin = cluster.admin().await;
    admin
        .batch_execute("BEGIN; LOCK TABLE journal_intents IN EXCLUSIVE MODE")
        .await
        .unwrap();
    // The caller's own timer cuts the write off while its INSERT waits for the
    // lock, after BEGIN.
    let cut = tokio::time::timeout(
        Duration::from_millis(300),
        store.write_ahead(&intent("cut", None), &worker, LEASE),
    )
    .await;
    assert!(cut.is_err(), "the write was cut off: {cut:?}");
    admin.batch_execute("ROLLBACK").await.unwrap();
    // The next operation on the pool's one connection must commit on its own.
    let abandoned = store
        .abandon("earlier", "given up by the test")
        .await
        .expect("abandon");
    assert!(abandoned);
    let row = admin
        .query_one(
            "SELECT state FROM journal_intents WHERE key = 'earlier'",
            &[],
        )
        .await
        .unwrap();
    let state: String = row.get(0);
    assert_eq!(
        state, "abandoned",
        "an operation the store reported done was not committed: it ran inside \
         the cut write-ahead's transaction"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_write_lock_held_past_the_deadline_is_refused_naming_the_lock() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite");
    // The default busy timeout (5 s) is far past the deadline.
    let store = SqliteStore::open(&path).unwrap();
    let holder = tower_idempotency::rusqlite::Connection::open(&path).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let deadline = Duration::from_secs(1);
    let started = Instant::now();
    let error = store
        .write_ahead(&intent("locked", Some(deadline)), &Worker::new("w"), LEASE)
        .await
        .expect_err("the lock outlives the deadline");
    let waited = started.elapsed();
    assert!(waited < deadline, "waited {waited:?}, past the deadline");
    assert!(
        waited >= deadline / 2,
        "gave up early: {waited:?} ({error})"
    );
    assert!(error.is_timeout(), "{error}");
    assert!(error.to_string().contains("write lock"), "{error}");
    holder.execute_batch("ROLLBACK").unwrap();
    assert!(
        store.get("locked").await.unwrap().is_none(),
        "nothing written"
    );
    store
        .write_ahead(&intent("locked", Some(deadline)), &Worker::new("w"), LEASE)
        .await
        .expect("written once the lock is gone");
}
