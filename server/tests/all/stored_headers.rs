//! Stored response headers go through idempotency-storage's one encoder (the
//! journal's `name: value\r\n` lines), and a row this crate wrote before, as
//! `name:value\n` lines, is still replayed with its headers.

use std::sync::Arc;

use tower_idempotency::rusqlite;
use tower_idempotency::{IdempotencyLayer, SqliteStore};

use crate::support::{account, send, serve, Effects, Req, TempDir};

fn stored_headers(path: &std::path::Path) -> Vec<u8> {
    rusqlite::Connection::open(path)
        .unwrap()
        .query_row("SELECT headers FROM idempotency_keys", [], |row| row.get(0))
        .unwrap()
}

async fn server_on(path: &std::path::Path, effects: Arc<Effects>) -> std::net::SocketAddr {
    let layer = IdempotencyLayer::builder(SqliteStore::open(path).unwrap())
        .principal(account)
        .build()
        .unwrap();
    serve(layer, effects).await
}

#[tokio::test]
async fn a_row_in_the_old_form_is_replayed_with_its_headers_after_a_restart() {
    let dir = TempDir::new("stored-headers");
    let path = dir.path().join("keys.db");
    let effects = Arc::new(Effects::default());
    let first = send(
        server_on(&path, effects.clone()).await,
        &Req::post("/payments", "k1", "pay"),
    )
    .await;
    assert_eq!(
        (first.status, first.headers["location"].to_str().unwrap()),
        (201, "/payments/1")
    );

    // Written now in the one form both halves share.
    let new_form = String::from_utf8(stored_headers(&path)).unwrap();
    for line in [
        "location: /payments/1\r\n",
        "content-type: application/json\r\n",
    ] {
        assert!(new_form.contains(line), "{new_form:?} lacks {line:?}");
    }
    assert_eq!(new_form.matches("\r\n").count(), 2, "{new_form:?}");

    // The row as tower-idempotency 0.1 left it, by raw SQL, then a new server on the file.
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute(
            "UPDATE idempotency_keys SET headers = ?1",
            [&b"location:/payments/1\ncontent-type:application/json\n"[..]],
        )
        .unwrap();
    let retry = send(
        server_on(&path, effects.clone()).await,
        &Req::post("/payments", "k1", "pay"),
    )
    .await;
    assert!(retry.replayed(), "{retry:?}");
    assert_eq!(retry.status, 201);
    assert_eq!(retry.headers["location"], "/payments/1");
    assert_eq!(retry.headers["content-type"], "application/json");
    assert_eq!(retry.text(), first.text());
    assert_eq!(effects.count(), 1, "replayed, not run again");
}
