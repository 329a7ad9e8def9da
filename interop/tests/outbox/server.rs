//! The payments server the relays send to, on 127.0.0.1 in the test's process
//! (it is never killed; its SQLite file outlives every relay): every request it
//! receives whole is recorded (key, body, credential), and each key's effect —
//! one `payments` row — is applied once by the server crate's strong mode, which
//! commits the row and the stored answer in one transaction and replays that
//! answer to every later send of the key.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use bytes::Bytes;
use http::{HeaderValue, StatusCode};
use tower_idempotency::rusqlite::{self, params};
use tower_idempotency::{
    IdempotencyLayer, Principal, Rollback, SqliteStore, StoredResponse, Transactional,
};

use crate::verdict::{Effect, Sent};

/// The largest body the server reads (an amount is a few bytes).
const MAX_BODY: usize = 64 * 1024;

pub struct PaymentsServer {
    pub addr: SocketAddr,
    db: PathBuf,
    sends: Arc<Mutex<Vec<Sent>>>,
    task: tokio::task::JoinHandle<()>,
}

#[derive(Clone)]
struct App {
    strong: Transactional<SqliteStore>,
    sends: Arc<Mutex<Vec<Sent>>>,
}

impl PaymentsServer {
    /// Serves `POST /payments` with its database at `db`; only a request
    /// bearing `token` has a principal (others are refused unpaid).
    pub async fn start(db: &Path, token: &str) -> PaymentsServer {
        let store = SqliteStore::open(db).expect("open the server's database");
        rusqlite::Connection::open(db)
            .expect("open the server's database")
            .execute_batch(
                "CREATE TABLE IF NOT EXISTS payments (
                    id INTEGER PRIMARY KEY, key TEXT NOT NULL, amount INTEGER NOT NULL)",
            )
            .expect("the payments table");
        let expected = format!("Bearer {token}");
        let idempotency = IdempotencyLayer::builder(store.clone())
            .principal(move |parts: &http::request::Parts| {
                let bearer = parts.headers.get(http::header::AUTHORIZATION)?;
                (bearer.as_bytes() == expected.as_bytes()).then(|| Principal::new("payer"))
            })
            .build()
            .expect("a valid idempotency layer");
        let sends = Arc::new(Mutex::new(Vec::new()));
        let app = Router::new().route("/payments", post(pay)).with_state(App {
            strong: idempotency.transactional(store),
            sends: sends.clone(),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the payments server");
        let addr = listener.local_addr().expect("its address");
        let task = tokio::spawn(async move {
            axum::serve(listener, app)
                .await
                .expect("the payments server");
        });
        PaymentsServer {
            addr,
            db: db.to_owned(),
            sends,
            task,
        }
    }

    /// Every request received whole, in arrival order.
    pub fn sends(&self) -> Vec<Sent> {
        self.sends.lock().unwrap().clone()
    }

    /// The effects: the `payments` rows, from the server's own file.
    pub fn effects(&self) -> Vec<Effect> {
        let conn = rusqlite::Connection::open(&self.db).expect("open the server's database");
        let mut statement = conn
            .prepare("SELECT id, key, amount FROM payments ORDER BY id")
            .expect("the payments table");
        let rows = statement
            .query_map([], |row| {
                Ok(Effect {
                    payment: row.get(0)?,
                    key: row.get(1)?,
                    amount: row.get(2)?,
                })
            })
            .expect("read payments");
        rows.map(|row| row.expect("a payment row")).collect()
    }
}

impl Drop for PaymentsServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Records the request, then lets the strong mode answer it.
async fn pay(State(app): State<App>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, MAX_BODY).await else {
        // Cut off mid-body: the request never arrived whole.
        return StatusCode::BAD_REQUEST.into_response();
    };
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    app.sends.lock().unwrap().push(Sent {
        key: header("idempotency-key"),
        body: String::from_utf8_lossy(&body).into_owned(),
        signed: parts.headers.contains_key(http::header::AUTHORIZATION),
    });
    let request = Request::from_parts(parts, Body::from(body));
    app.strong.handle(request, charge).await.into_response()
}

/// The effect: one payment row for the key, with the amount the body names.
fn charge(
    tx: &rusqlite::Transaction<'_>,
    parts: &http::request::Parts,
    body: &Bytes,
) -> Result<StoredResponse, Rollback> {
    let key = parts
        .headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let Some(amount) = std::str::from_utf8(body)
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
    else {
        return Ok(StoredResponse {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            headers: vec![],
            body: Bytes::from_static(b"the body must be an amount in cents"),
        });
    };
    tx.execute(
        "INSERT INTO payments (key, amount) VALUES (?1, ?2)",
        params![key, amount],
    )?;
    let id = tx.last_insert_rowid();
    Ok(StoredResponse {
        status: StatusCode::CREATED,
        headers: vec![(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body: Bytes::from(format!("{{\"payment\":{id},\"amount\":{amount}}}")),
    })
}
