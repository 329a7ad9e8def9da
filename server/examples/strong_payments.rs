//! The strong mode: a payment row and its stored response commit in one SQLite
//! transaction, so a crash at any moment leaves both or neither.
//!
//! ```text
//! cargo run -p tower-idempotency --features sqlite --example strong_payments -- /tmp/payments.db
//! curl -i -X POST -H 'Idempotency-Key: order-42' -H 'X-Account: acct_1' -d '1500' http://127.0.0.1:PORT/payments
//! ```
//!
//! Send the same request again: the same payment, `Idempotent-Replayed: true`, and
//! still one row in `payments`. The test suite kills this server with SIGKILL at
//! random moments and checks exactly that.

use axum::extract::{Request, State};
use axum::response::IntoResponse;
use axum::routing::post;
use axum::Router;
use bytes::Bytes;
use http::{HeaderValue, StatusCode};
use tower_idempotency::rusqlite::{self, params};
use tower_idempotency::{
    IdempotencyLayer, Principal, Rollback, SqliteStore, StoredResponse, Transactional,
};

/// The account an authentication layer would have found (here: a header).
fn account(parts: &http::request::Parts) -> Option<Principal> {
    let id = parts.headers.get("x-account")?.to_str().ok()?;
    Some(Principal::new(id))
}

/// The payment: one row, and the response that says so, in the claim's transaction.
fn charge(tx: &rusqlite::Transaction<'_>, body: &Bytes) -> Result<StoredResponse, Rollback> {
    let amount: i64 = match std::str::from_utf8(body)
        .ok()
        .and_then(|s| s.trim().parse().ok())
    {
        Some(amount) => amount,
        None => {
            // A 4xx that commits: the key keeps this answer, as Stripe keeps its 400s.
            return Ok(StoredResponse {
                status: StatusCode::BAD_REQUEST,
                headers: vec![],
                body: Bytes::from_static(b"the body must be an amount in cents"),
            });
        }
    };
    tx.execute("INSERT INTO payments (amount) VALUES (?1)", params![amount])?;
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

async fn pay(
    State(strong): State<Transactional<SqliteStore>>,
    request: Request,
) -> impl IntoResponse {
    strong
        .handle(request, |tx, _parts, body| charge(tx, body))
        .await
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "payments.db".to_owned());
    let store = SqliteStore::open(&path)?;
    // The application's own table, in the same file as the keys.
    rusqlite::Connection::open(&path)?.execute_batch(
        "CREATE TABLE IF NOT EXISTS payments (id INTEGER PRIMARY KEY, amount INTEGER NOT NULL)",
    )?;
    let idempotency = IdempotencyLayer::builder(store.clone())
        .principal(account)
        .build()?;
    let app = Router::new()
        .route("/payments", post(pay))
        .with_state(idempotency.transactional(store));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("listening on {}", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}
