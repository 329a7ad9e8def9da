//! The strong mode under a layer: over the same store it is a wiring mistake that
//! fails loudly before any effect and ruins no key; over another store it works.

use std::io::Write;
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::response::IntoResponse;
use axum::routing::post;
use axum::Router;
use bytes::Bytes;
use http::StatusCode;
use tokio::net::TcpListener;
use tower_idempotency::rusqlite::{self, params};
use tower_idempotency::{
    IdempotencyLayer, MemoryStore, Rollback, SqliteStore, StoredResponse, Transactional,
};

use crate::support::{account, send, Req, TempDir};

/// What the layer logs while a test runs on this thread (`tokio::test` runs the
/// servers it spawns on the same thread).
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<u8>>>);

impl Log {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl Write for Log {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn charge(tx: &rusqlite::Transaction<'_>, body: &Bytes) -> Result<StoredResponse, Rollback> {
    tx.execute(
        "INSERT INTO payments (body) VALUES (?1)",
        params![body.to_vec()],
    )?;
    Ok(StoredResponse {
        status: StatusCode::CREATED,
        headers: vec![],
        body: Bytes::from(format!("payment {}", tx.last_insert_rowid())),
    })
}

async fn pay(
    State(strong): State<Transactional<SqliteStore>>,
    request: Request,
) -> impl IntoResponse {
    strong.handle(request, |tx, _, body| charge(tx, body)).await
}

/// A strong-mode `/payments` on `strong_store`, with a router-wide layer over `layer_store`.
async fn serve_under_layer(
    strong_store: SqliteStore,
    layer: IdempotencyLayer,
) -> std::net::SocketAddr {
    let strong = layer.transactional(strong_store);
    let app = Router::new()
        .route("/payments", post(pay))
        .with_state(strong)
        .layer(layer);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

fn payments(path: &std::path::Path) -> i64 {
    rusqlite::Connection::open(path)
        .unwrap()
        .query_row("SELECT count(*) FROM payments", [], |r| r.get(0))
        .unwrap()
}

fn open(dir: &TempDir) -> (SqliteStore, std::path::PathBuf) {
    let path = dir.path().join("app.db");
    let store = SqliteStore::open(&path).unwrap();
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("CREATE TABLE payments (id INTEGER PRIMARY KEY, body BLOB)")
        .unwrap();
    (store, path)
}

#[tokio::test]
async fn the_strong_mode_under_a_layer_over_its_own_store_fails_loudly_and_ruins_no_key() {
    let log = Log::default();
    let writer = log.clone();
    let _logging = tracing::subscriber::set_default(
        tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish(),
    );
    let dir = TempDir::new("misuse-same");
    let (store, path) = open(&dir);
    let layer = IdempotencyLayer::builder(store.clone())
        .principal(account)
        .build()
        .unwrap();
    let counters = layer.counters();
    let addr = serve_under_layer(store.clone(), layer).await;
    let request = Req::post("/payments", "order-1", "1500");
    for attempt in 0..3 {
        let answer = send(addr, &request).await;
        // Every attempt hears the same generic 500 (never a stored 409 replayed);
        // the wiring is the developer's business, told in the log.
        assert_eq!(answer.status, 500, "attempt {attempt}: {}", answer.text());
        assert!(!answer.replayed());
        assert_eq!(
            answer.text(),
            r#"{"type":"about:blank","title":"Internal Server Error","status":500}"#
        );
        assert_eq!(
            answer.headers.get("content-type").unwrap(),
            "application/problem+json"
        );
    }
    let logged = log.text();
    assert_eq!(
        logged.matches("ERROR").count(),
        3,
        "one error event per request: {logged}"
    );
    assert!(
        logged.contains("Take the route out of the layer"),
        "{logged}"
    );
    assert_eq!(payments(&path), 0, "nothing ran");
    let kept: i64 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("SELECT count(*) FROM idempotency_keys", [], |r| r.get(0))
        .unwrap();
    assert_eq!(
        kept, 0,
        "the layer freed its claim each time: no key is ruined"
    );
    assert_eq!(counters.snapshot().released, 3);

    // Fixed as the message says (the strong route outside the layer), the same key
    // pays once.
    let idempotency = IdempotencyLayer::builder(store.clone())
        .principal(account)
        .build()
        .unwrap();
    let app = Router::new()
        .route("/payments", post(pay))
        .with_state(idempotency.transactional(store));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let fixed = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    assert_eq!(send(fixed, &request).await.status, 201);
    assert!(send(fixed, &request).await.replayed());
    assert_eq!(payments(&path), 1);
}

#[tokio::test]
async fn a_layer_over_another_store_around_a_strong_route_keeps_working() {
    let dir = TempDir::new("misuse-other");
    let (store, path) = open(&dir);
    let layer = IdempotencyLayer::builder(Arc::new(MemoryStore::new()))
        .principal(account)
        .build()
        .unwrap();
    let addr = serve_under_layer(store, layer).await;
    let request = Req::post("/payments", "order-2", "1500");
    let first = send(addr, &request).await;
    assert_eq!(first.status, 201, "{}", first.text());
    let again = send(addr, &request).await;
    assert!(again.replayed());
    assert_eq!(again.body, first.body);
    assert_eq!(payments(&path), 1);
}
