//! The strong mode on PostgreSQL: a payment row and its stored response commit in one
//! transaction, so a crash of this server at any moment leaves both or neither.
//!
//! ```text
//! cargo run -p tower-idempotency --features postgres --example strong_payments_postgres -- \
//!     "host=127.0.0.1 port=5432 user=postgres dbname=postgres"
//! curl -i -X POST -H 'Idempotency-Key: order-42' -H 'X-Account: acct_1' -d '1500' http://127.0.0.1:PORT/payments
//! ```
//!
//! The test suite kills this server with SIGKILL at random moments, as it does the
//! SQLite one (`strong_payments`).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::response::IntoResponse;
use axum::routing::post;
use axum::Router;
use bytes::Bytes;
use http::{HeaderValue, StatusCode};
use tower_idempotency::tokio_postgres::{self, NoTls, Transaction};
use tower_idempotency::{
    EffectFuture, IdempotencyLayer, PostgresStore, Principal, Rollback, StoredResponse,
    Transactional,
};

/// The account an authentication layer would have found (here: a header).
fn account(parts: &http::request::Parts) -> Option<Principal> {
    let id = parts.headers.get("x-account")?.to_str().ok()?;
    Some(Principal::new(id))
}

/// The payment: one row, and the response that says so, in the claim's transaction.
fn charge<'t>(
    tx: &'t Transaction<'t>,
    _: http::request::Parts,
    body: Bytes,
) -> EffectFuture<'t, Rollback> {
    Box::pin(async move {
        let Some(amount) = std::str::from_utf8(&body)
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok())
        else {
            return Ok(StoredResponse {
                status: StatusCode::BAD_REQUEST,
                headers: vec![],
                body: Bytes::from_static(b"the body must be an amount in cents"),
            });
        };
        let row = tx
            .query_one(
                "INSERT INTO payments (amount) VALUES ($1) RETURNING id",
                &[&amount],
            )
            .await?;
        let id: i64 = row.get(0);
        Ok(StoredResponse {
            status: StatusCode::CREATED,
            headers: vec![(
                http::header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            body: Bytes::from(format!("{{\"payment\":{id},\"amount\":{amount}}}")),
        })
    })
}

async fn pay(
    State(strong): State<Transactional<Arc<PostgresStore>>>,
    request: Request,
) -> impl IntoResponse {
    strong.handle(request, charge).await
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let conninfo = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "host=127.0.0.1 user=postgres dbname=postgres".to_owned());
    let store = Arc::new(PostgresStore::connect(&conninfo).await?);
    // The application's own table, in the same database as the keys.
    let (client, connection) = tokio_postgres::connect(&conninfo, NoTls).await?;
    tokio::spawn(connection);
    client
        .batch_execute("CREATE TABLE IF NOT EXISTS payments (id BIGSERIAL PRIMARY KEY, amount BIGINT NOT NULL)")
        .await?;
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
