//! Stored headers go through idempotency-storage's one encoder and decoder: a
//! new intent's headers are written as `name: value\r\n` lines, and rows
//! written before (the journal's 0.2 form), or in the server half's old
//! `name:value\n` form, still read back through the public API.

use std::time::Duration;

use http::{HeaderMap, HeaderValue, Method};
use reqwest_resilience_journal::{JournalError, JournalStore, NewIntent, SqliteStore, Worker};

use crate::support::sqlite_path;

/// A row of the current schema whose `headers` column holds `headers` as
/// written by raw SQL, the way an older build's encoder left it.
fn insert_raw(conn: &rusqlite::Connection, key: &str, headers: &[u8]) {
    conn.execute(
        "INSERT INTO journal_intents (key, key_on_wire, method, url, headers, body,
             deadline_ms, retention_end_ms, state, fence, runs, created_ms, updated_ms)
         VALUES (?1, 1, 'POST', 'http://127.0.0.1:9/payments', ?2, X'7B7D',
             5000, 9999999999999, 'unknown', 1, 1, 1000, 1000)",
        rusqlite::params![key, headers],
    )
    .unwrap();
}

fn expected() -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    headers.append("accept", HeaderValue::from_static("a/b"));
    headers.append("accept", HeaderValue::from_static("c/d"));
    headers.insert("x-opaque", HeaderValue::from_bytes(b"a:b \xff").unwrap());
    headers
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn rows_in_either_old_form_read_back_after_a_reopen() {
    let path = sqlite_path("stored-headers-old");
    drop(SqliteStore::open(&path).unwrap());
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        // Byte for byte what journal 0.2's `headers::encode` wrote.
        insert_raw(
            &conn,
            "journal-0.2",
            b"content-type: application/json\r\naccept: a/b\r\naccept: c/d\r\nx-opaque: a:b \xff\r\n",
        );
        // The server half's 0.1 form: no space, a bare LF.
        insert_raw(
            &conn,
            "server-0.1",
            b"content-type:application/json\naccept:a/b\naccept:c/d\nx-opaque:a:b \xff\n",
        );
        // A row cut short in its last value.
        insert_raw(
            &conn,
            "cut",
            b"content-type: application/json\r\naccept: a/",
        );
    }
    let store = SqliteStore::open(&path).unwrap();
    runtime().block_on(async {
        for key in ["journal-0.2", "server-0.1"] {
            let row = store.get(key).await.unwrap().expect(key);
            assert_eq!(row.headers, expected(), "{key}");
            assert_eq!(row.body, b"{}", "{key}");
        }
        let error = store.get("cut").await.unwrap_err();
        assert!(
            matches!(&error, JournalError::InvalidRecord(what) if what.contains("line 2")),
            "a cut row is reported, not read shortened: {error:?}"
        );
    });
}

#[test]
fn a_new_intents_headers_are_stored_as_crlf_lines() {
    let path = sqlite_path("stored-headers-new");
    let store = SqliteStore::open(&path).unwrap();
    let mut intent = NewIntent::new("new-1", Method::POST, "http://127.0.0.1:9/payments");
    intent.headers = expected();
    runtime().block_on(async {
        store
            .write_ahead(&intent, &Worker::unique(), Duration::from_secs(60))
            .await
            .unwrap();
        let row = store.get("new-1").await.unwrap().expect("the new row");
        assert_eq!(row.headers, expected());
    });
    let stored: Vec<u8> = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row(
            "SELECT headers FROM journal_intents WHERE key = 'new-1'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(
        stored,
        b"content-type: application/json\r\naccept: a/b\r\naccept: c/d\r\nx-opaque: a:b \xff\r\n"
    );
}
