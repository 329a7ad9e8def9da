//! The SQLite store's own promises: an owner-only file, versioned migrations, and the
//! strong mode's rollback.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::StatusCode;
use tower_idempotency::rusqlite::{self, params};
use tower_idempotency::{
    Claim, ClaimRequest, Clock, Fingerprint, IdempotencyLayer, ManualClock, Rollback, ScopeId,
    SqliteStore, Store, StoredResponse, Transacted,
};

use crate::support::{account, send, Req, TempDir};

fn claim_request(scope: u8) -> ClaimRequest {
    ClaimRequest {
        scope: ScopeId::from_bytes([scope; 32]),
        fingerprint: Fingerprint::from_bytes(vec![1, 2, 3]),
        now: SystemTime::UNIX_EPOCH + Duration::from_secs(1_000),
        lease: Duration::from_secs(10),
    }
}

/// The clock of [`claim_request`]'s time, for the retention the strong mode counts.
fn clock() -> Arc<dyn Clock> {
    Arc::new(ManualClock::new(
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_000),
    ))
}

#[cfg(unix)]
#[test]
fn the_file_is_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("mode");
    let path = dir.path().join("keys.db");
    drop(SqliteStore::open(&path).unwrap());
    for suffix in ["", "-wal", "-shm"] {
        let file = format!("{}{suffix}", path.display());
        if let Ok(meta) = std::fs::metadata(&file) {
            assert_eq!(meta.permissions().mode() & 0o777, 0o600, "{file}");
        }
    }
}

#[tokio::test]
async fn reopening_keeps_the_keys_and_migrates_once() {
    let dir = TempDir::new("reopen");
    let path = dir.path().join("keys.db");
    let store = SqliteStore::open(&path).unwrap();
    assert!(matches!(
        store.claim(&claim_request(1)).await.unwrap(),
        Claim::Acquired { .. }
    ));
    drop(store);
    let store = SqliteStore::open(&path).unwrap();
    assert!(matches!(
        store.claim(&claim_request(1)).await.unwrap(),
        Claim::Existing(_)
    ));
    let conn = rusqlite::Connection::open(&path).unwrap();
    let versions: i64 = conn
        .query_row("SELECT count(*) FROM idempotency_schema", [], |r| r.get(0))
        .unwrap();
    assert_eq!(versions, 1);
}

#[test]
fn a_newer_schema_is_refused() {
    let dir = TempDir::new("newer");
    let path = dir.path().join("keys.db");
    drop(SqliteStore::open(&path).unwrap());
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute("INSERT INTO idempotency_schema (version) VALUES (99)", [])
        .unwrap();
    let error = SqliteStore::open(&path).unwrap_err().to_string();
    assert!(
        error.contains("version 99, newer than this build's 1"),
        "{error}"
    );
}

#[tokio::test]
async fn a_rolled_back_effect_leaves_no_row_and_no_claim() {
    let dir = TempDir::new("rollback");
    let path = dir.path().join("keys.db");
    let store = SqliteStore::open(&path).unwrap();
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("CREATE TABLE payments (id INTEGER PRIMARY KEY, amount INTEGER)")
        .unwrap();
    let insert_then_fail = |tx: &rusqlite::Transaction<'_>| -> Result<StoredResponse, Rollback> {
        tx.execute("INSERT INTO payments (amount) VALUES (?1)", params![5])?;
        // A statement that fails after the insert: everything rolls back.
        tx.execute("INSERT INTO no_such_table VALUES (1)", [])?;
        unreachable!("the statement above fails")
    };
    let first = store
        .transact(
            claim_request(7),
            Duration::from_secs(60),
            clock(),
            insert_then_fail,
        )
        .await
        .unwrap();
    let Transacted::RolledBack(Rollback(response)) = first else {
        panic!("{first:?}")
    };
    assert_eq!(response.status, StatusCode::INTERNAL_SERVER_ERROR);
    let count = |path: &std::path::Path| -> i64 {
        rusqlite::Connection::open(path)
            .unwrap()
            .query_row("SELECT count(*) FROM payments", [], |r| r.get(0))
            .unwrap()
    };
    assert_eq!(count(&path), 0, "the effect's insert rolled back");
    // The key is free: the retry executes and commits.
    let ok = |tx: &rusqlite::Transaction<'_>| -> Result<StoredResponse, Rollback> {
        tx.execute("INSERT INTO payments (amount) VALUES (?1)", params![5])?;
        Ok(StoredResponse {
            status: StatusCode::CREATED,
            headers: vec![],
            body: Bytes::from_static(b"ok"),
        })
    };
    let second = store
        .transact(claim_request(7), Duration::from_secs(60), clock(), ok)
        .await
        .unwrap();
    assert!(matches!(second, Transacted::Executed(_)), "{second:?}");
    let third = store
        .transact(claim_request(7), Duration::from_secs(60), clock(), ok)
        .await
        .unwrap();
    assert!(matches!(third, Transacted::Existing(_)), "{third:?}");
    assert_eq!(count(&path), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn strong_mode_over_http_concurrent_retries_make_one_row() {
    use axum::extract::{Request, State};
    use axum::routing::post;
    let dir = TempDir::new("strong-http");
    let path = dir.path().join("keys.db");
    let store = SqliteStore::open(&path).unwrap();
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("CREATE TABLE payments (id INTEGER PRIMARY KEY, body TEXT)")
        .unwrap();
    let layer = IdempotencyLayer::builder(store.clone())
        .principal(account)
        .build()
        .unwrap();
    let strong = layer.transactional(store);
    let app = axum::Router::new()
        .route(
            "/payments",
            post(
                |State(strong): State<tower_idempotency::Transactional<SqliteStore>>,
                 req: Request| async move {
                    strong
                        .handle(req, |tx, _, body| {
                            tx.execute(
                                "INSERT INTO payments (body) VALUES (?1)",
                                [String::from_utf8_lossy(body)],
                            )?;
                            let id = tx.last_insert_rowid();
                            Ok(StoredResponse {
                                status: StatusCode::CREATED,
                                headers: vec![],
                                body: Bytes::from(id.to_string()),
                            })
                        })
                        .await
                },
            ),
        )
        .with_state(strong);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let answers = futures_util::future::join_all(
        (0..32).map(|_| async move { send(addr, &Req::post("/payments", "k", "pay")).await }),
    )
    .await;
    let ids: std::collections::HashSet<_> = answers.iter().map(|a| (a.status, a.text())).collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert_eq!(answers.iter().filter(|a| !a.replayed()).count(), 1);
    let mismatch = send(addr, &Req::post("/payments", "k", "other")).await;
    assert_eq!(mismatch.status, 422);
    let rows: i64 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("SELECT count(*) FROM payments", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rows, 1);
}

/// The busy timeout is set as the journal sets its own:
/// `SqliteStore::builder(path).busy_timeout(…)`. Opening a file whose write lock
/// another connection holds fails after that timeout, not the 5 s default.
#[test]
fn the_builders_busy_timeout_bounds_the_wait_for_anothers_write_lock() {
    use std::time::Instant;
    let dir = TempDir::new("busy");
    let path = dir.path().join("keys.db");
    drop(SqliteStore::open(&path).unwrap());
    let mut holder = rusqlite::Connection::open(&path).unwrap();
    let held = holder
        .transaction_with_behavior(rusqlite::TransactionBehavior::Exclusive)
        .unwrap();
    let timeout = Duration::from_millis(300);
    let started = Instant::now();
    SqliteStore::builder(&path)
        .busy_timeout(timeout)
        .open()
        .unwrap_err();
    let waited = started.elapsed();
    assert!(waited >= timeout - Duration::from_millis(50), "{waited:?}");
    assert!(
        waited < tower_idempotency::DEFAULT_BUSY_TIMEOUT,
        "{waited:?}"
    );
    // The old name keeps working, with the same meaning.
    let started = Instant::now();
    #[allow(deprecated)]
    let old = SqliteStore::open_with(&path, timeout);
    assert!(old.is_err());
    assert!(started.elapsed() < tower_idempotency::DEFAULT_BUSY_TIMEOUT);
    drop(held);
    SqliteStore::builder(&path)
        .busy_timeout(timeout)
        .open()
        .unwrap();
}
