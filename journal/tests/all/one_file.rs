//! One SQLite file for the application's tables, the journal and the server's
//! strong-mode store (tower-idempotency), under a slow effect: what waits for what.
//!
//! SQLite has one writer per file. A strong-mode effect holds the write lock for as
//! long as it runs (its claim, its writes and its stored response are one
//! transaction), so every *write* to the same file — the journal's write-ahead, the
//! application's own transaction — waits for it (up to its busy timeout), while
//! *reads* (the journal's `get`, the application's queries, the server's replay of a
//! finished key) go on beside it in WAL mode. Put the server's store in a file of its
//! own when its effects are slow, or use PostgreSQL.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::StatusCode;
use reqwest_resilience_journal::rusqlite::{self, Connection};
use reqwest_resilience_journal::{JournalStore, NewIntent, SqliteStore, Worker};
use tower_idempotency::{IdempotencyLayer, SinglePrincipal, StoredResponse};

use crate::support::sqlite_path;

/// How long the slow effect holds the write lock.
const EFFECT: Duration = Duration::from_millis(800);

fn payment(key: &str) -> http::Request<String> {
    http::Request::post("/payments")
        .header("idempotency-key", key)
        .body("1500".to_owned())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_wait_for_a_slow_strong_effect_and_reads_do_not() {
    let path = sqlite_path("one-file");
    let journal = SqliteStore::open(&path).unwrap();
    let server_store = tower_idempotency::SqliteStore::open(&path).unwrap();
    let app = Connection::open(&path).unwrap();
    app.execute_batch("CREATE TABLE orders (id INTEGER PRIMARY KEY, paid INTEGER NOT NULL)")
        .unwrap();
    drop(app);
    let layer = IdempotencyLayer::builder(server_store.clone())
        .principal(SinglePrincipal)
        .build()
        .unwrap();
    let strong = Arc::new(layer.transactional(server_store));

    // A finished key, for the replay below.
    let done = strong
        .handle(payment("done-1"), |tx, _, _| effect(tx, Duration::ZERO))
        .await;
    assert_eq!(done.status(), StatusCode::CREATED);

    // The slow effect: it holds the file's write lock for EFFECT.
    let slow = {
        let strong = Arc::clone(&strong);
        tokio::spawn(async move {
            strong
                .handle(payment("slow-1"), |tx, _, _| effect(tx, EFFECT))
                .await
        })
    };
    let effect_started = Instant::now();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();

    // Reads beside it: the journal's, the application's, the server's replay.
    let read = Instant::now();
    assert!(journal.get("nothing-yet").await.unwrap().is_none());
    let app = Connection::open(&path).unwrap();
    let orders: i64 = app
        .query_row("SELECT count(*) FROM orders", [], |r| r.get(0))
        .unwrap();
    let replay = strong
        .handle(payment("done-1"), |tx, _, _| effect(tx, Duration::ZERO))
        .await;
    let reads_took = read.elapsed();
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    assert_eq!(orders, 1, "the finished payment's order");

    // Writes: the journal's write-ahead, then the application's own transaction.
    let write = Instant::now();
    let intent = NewIntent::new("pay-2", http::Method::POST, "http://127.0.0.1:9/pay");
    journal
        .write_ahead(&intent, &Worker::new("w"), Duration::from_secs(60))
        .await
        .unwrap();
    let journal_write_waited = write.elapsed();
    let app_write = Instant::now();
    app.busy_timeout(Duration::from_secs(5)).unwrap();
    app.execute("INSERT INTO orders (paid) VALUES (0)", [])
        .unwrap();
    let app_write_waited = app_write.elapsed();

    let slow = slow.await.unwrap();
    assert_eq!(slow.status(), StatusCode::CREATED);
    println!(
        "one file, a {EFFECT:?} strong effect started {:?} before: reads took \
         {reads_took:?} (beside it); the journal's write-ahead waited \
         {journal_write_waited:?} (for its commit); the application's write then took \
         {app_write_waited:?}",
        started.duration_since(effect_started)
    );
    // Reads did not wait for the effect; the first write did, until it committed.
    assert!(reads_took < EFFECT / 2, "reads waited: {reads_took:?}");
    assert!(
        journal_write_waited >= Duration::from_millis(500),
        "the write-ahead cannot commit while the effect holds the lock: {journal_write_waited:?}"
    );
    let written = journal.get("pay-2").await.unwrap();
    assert!(
        written.is_some(),
        "the write-ahead committed once the lock was free"
    );
}

/// The payment: an order row, held for `hold`, and the answer that says so.
fn effect(
    tx: &rusqlite::Transaction<'_>,
    hold: Duration,
) -> Result<StoredResponse, tower_idempotency::Rollback> {
    tx.execute("INSERT INTO orders (paid) VALUES (1)", [])?;
    std::thread::sleep(hold);
    Ok(StoredResponse {
        status: StatusCode::CREATED,
        headers: vec![],
        body: Bytes::from_static(b"paid"),
    })
}
