//! The matrix test's server: `POST /payments` behind tower-idempotency on its
//! defaults (`IdempotencyLayer::builder(store).principal(…).build()`, nothing
//! else), in one of three modes:
//!
//! ```text
//! matrix_server memory   /tmp/…/effects.db  2000   # MemoryStore layer; effect appended to a SQLite file
//! matrix_server sqlite   /tmp/…/server.db   2000   # transactional(SqliteStore); effect a row in the same file
//! matrix_server postgres 'host=… dbname=…'  2000   # transactional(Arc<PostgresStore>); effect a row in the same database
//! matrix_server postgres-layer 'host=…'     2000   # PostgresStore layer; effect an autocommit row in the same database
//! ```
//!
//! The `postgres-layer` mode also counts the statuses it answered, as the
//! clients received them (`GET /statuses`: one `STATUS COUNT` line each, a 503
//! without `Retry-After` counted as `503-no-retry-after`), for the database
//! fault suite.
//!
//! The last argument is how long the handler takes, in milliseconds. Each effect
//! is one row of `effects (id, key, body)`; the answer names it
//! (`{"effect":ID}`). The first line printed is `listening on ADDR`.
//!
//! The memory mode records its effect first and then takes its time, as a
//! handler that charges a card and then renders a receipt: a kill mid-handler
//! leaves the effect, and the key (in memory) is gone with the process — the
//! layer's documented boundary. The strong modes take their time inside the
//! claim's transaction, so a kill leaves neither the effect nor the key.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::response::IntoResponse;
use axum::routing::post;
use axum::Router;
use bytes::Bytes;
use http::{HeaderValue, StatusCode};
use tower_idempotency::rusqlite::{self, params};
use tower_idempotency::tokio_postgres::{self, NoTls, Transaction};
use tower_idempotency::{
    EffectFuture, IdempotencyLayer, MemoryStore, PostgresStore, Principal, Rollback, SqliteStore,
    StoredResponse, Transactional,
};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The account an authentication layer would have found from the bearer token
/// (here the token is the account): keys are scoped to it.
fn account(parts: &http::request::Parts) -> Option<Principal> {
    let value = parts
        .headers
        .get(http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    Some(Principal::new(value.strip_prefix("Bearer ")?))
}

/// The intent's key as the handler sees it, recorded with its effect.
fn key_of(parts: &http::request::Parts) -> String {
    parts
        .headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned()
}

/// The answer for effect `id`, the same in every mode.
fn effect_body(id: i64) -> String {
    format!("{{\"effect\":{id}}}")
}

fn created(effect: i64) -> StoredResponse {
    StoredResponse {
        status: StatusCode::CREATED,
        headers: vec![(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body: Bytes::from(effect_body(effect)),
    }
}

const EFFECTS_SQLITE: &str =
    "CREATE TABLE IF NOT EXISTS effects (id INTEGER PRIMARY KEY, key TEXT NOT NULL, body TEXT NOT NULL)";
const EFFECTS_POSTGRES: &str =
    "CREATE TABLE IF NOT EXISTS effects (id BIGSERIAL PRIMARY KEY, key TEXT NOT NULL, body TEXT NOT NULL)";

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let mut args = std::env::args().skip(1);
    let usage =
        "usage: matrix_server memory|sqlite|postgres|postgres-layer DB_PATH|CONNINFO HANDLER_MS";
    let mode = args.next().ok_or(usage)?;
    let db = args.next().ok_or(usage)?;
    let delay = Duration::from_millis(args.next().ok_or(usage)?.parse()?);
    let app = match mode.as_str() {
        "memory" => memory_app(&db, delay)?,
        "sqlite" => sqlite_app(&db, delay)?,
        "postgres" => postgres_app(&db, delay).await?,
        "postgres-layer" => postgres_layer_app(&db, delay).await?,
        other => return Err(format!("unknown mode {other:?}; {usage}").into()),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("listening on {}", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}

/// The layer with a `MemoryStore`, around a route whose effect is outside it.
fn memory_app(path: &str, delay: Duration) -> Result<Router, BoxError> {
    let effects = rusqlite::Connection::open(path)?;
    effects.execute_batch(EFFECTS_SQLITE)?;
    let idempotency = IdempotencyLayer::builder(MemoryStore::new())
        .principal(account)
        .build()?;
    let state = MemoryApp {
        effects: Arc::new(Mutex::new(effects)),
        delay,
    };
    Ok(Router::new()
        .route("/payments", post(pay_memory).route_layer(idempotency))
        .with_state(state))
}

#[derive(Clone)]
struct MemoryApp {
    effects: Arc<Mutex<rusqlite::Connection>>,
    delay: Duration,
}

async fn pay_memory(State(app): State<MemoryApp>, request: Request) -> impl IntoResponse {
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, 64 * 1024).await else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let key = key_of(&parts);
    let effects = app.effects.clone();
    // Autocommit: the effect is durable before the handler goes on.
    let id = tokio::task::spawn_blocking(move || {
        let conn = effects.lock().unwrap();
        conn.execute(
            "INSERT INTO effects (key, body) VALUES (?1, ?2)",
            params![key, String::from_utf8_lossy(&body)],
        )
        .map(|_| conn.last_insert_rowid())
    })
    .await;
    let Ok(Ok(id)) = id else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    tokio::time::sleep(app.delay).await;
    (
        StatusCode::CREATED,
        [(http::header::CONTENT_TYPE, "application/json")],
        effect_body(id),
    )
        .into_response()
}

/// The strong mode on SQLite: claim, effect row and stored response in one
/// transaction of one file.
fn sqlite_app(path: &str, delay: Duration) -> Result<Router, BoxError> {
    let store = SqliteStore::open(path)?;
    rusqlite::Connection::open(path)?.execute_batch(EFFECTS_SQLITE)?;
    let idempotency = IdempotencyLayer::builder(store.clone())
        .principal(account)
        .build()?;
    Ok(Router::new()
        .route("/payments", post(pay_sqlite))
        .with_state(SqliteApp {
            strong: idempotency.transactional(store),
            delay,
        }))
}

#[derive(Clone)]
struct SqliteApp {
    strong: Transactional<SqliteStore>,
    delay: Duration,
}

async fn pay_sqlite(State(app): State<SqliteApp>, request: Request) -> impl IntoResponse {
    let delay = app.delay;
    app.strong
        .handle(request, move |tx, parts, body| {
            tx.execute(
                "INSERT INTO effects (key, body) VALUES (?1, ?2)",
                params![key_of(parts), String::from_utf8_lossy(body)],
            )?;
            let id = tx.last_insert_rowid();
            // The handler's time, spent inside the transaction (a blocking
            // closure: the strong mode runs it off the async workers).
            std::thread::sleep(delay);
            Ok::<_, Rollback>(created(id))
        })
        .await
}

/// The strong mode on PostgreSQL: claim, effect row and stored response in one
/// transaction on a pooled connection.
async fn postgres_app(conninfo: &str, delay: Duration) -> Result<Router, BoxError> {
    let store = Arc::new(PostgresStore::connect(conninfo).await?);
    let (client, connection) = tokio_postgres::connect(conninfo, NoTls).await?;
    let connection = tokio::spawn(connection);
    client.batch_execute(EFFECTS_POSTGRES).await?;
    drop(client);
    let _ = connection.await;
    let idempotency = IdempotencyLayer::builder(store.clone())
        .principal(account)
        .build()?;
    Ok(Router::new()
        .route("/payments", post(pay_postgres))
        .with_state(PostgresApp {
            strong: idempotency.transactional(store),
            delay,
        }))
}

#[derive(Clone)]
struct PostgresApp {
    strong: Transactional<Arc<PostgresStore>>,
    delay: Duration,
}

async fn pay_postgres(State(app): State<PostgresApp>, request: Request) -> impl IntoResponse {
    let delay = app.delay;
    app.strong
        .handle(request, move |tx, parts, body| {
            effect_postgres(tx, parts, body, delay)
        })
        .await
}

fn effect_postgres<'t>(
    tx: &'t Transaction<'t>,
    parts: http::request::Parts,
    body: Bytes,
    delay: Duration,
) -> EffectFuture<'t, Rollback> {
    Box::pin(async move {
        let row = tx
            .query_one(
                "INSERT INTO effects (key, body) VALUES ($1, $2) RETURNING id",
                &[
                    &key_of(&parts),
                    &String::from_utf8_lossy(&body).into_owned(),
                ],
            )
            .await?;
        // The handler's time, spent inside the transaction: a kill now leaves an
        // idle transaction whose connection dies with the process.
        tokio::time::sleep(delay).await;
        Ok(created(row.get(0)))
    })
}

/// The layer on `PostgresStore`, around a route whose effect is an autocommit
/// row of the same database (outside the claim's transaction: the layer mode),
/// with every answer's status counted.
async fn postgres_layer_app(conninfo: &str, delay: Duration) -> Result<Router, BoxError> {
    let store = PostgresStore::connect(conninfo).await?;
    let client = effects_connection(conninfo).await?;
    client.batch_execute(EFFECTS_POSTGRES).await?;
    // The lease is longer than the fault suite's longest outage (15 s) and the
    // handler's own look-up after a lost INSERT: a result the outage kept from
    // the store is written when the database is back, before any retry could
    // take the key over and run the handler again. 5xx are kept (the default):
    // the handler answers 503, which frees the key, only when nothing was paid.
    let idempotency = IdempotencyLayer::builder(store)
        .principal(account)
        .lease(Duration::from_secs(30))
        .build()?;
    let app = LayerApp {
        conninfo: conninfo.to_owned(),
        effects: Arc::new(tokio::sync::Mutex::new(Some(client))),
        delay,
    };
    let statuses = Statuses::default();
    Ok(Router::new()
        .route(
            "/payments",
            post(pay_postgres_layer).route_layer(idempotency),
        )
        .with_state(app)
        .layer(axum::middleware::from_fn_with_state(
            statuses.clone(),
            count_status,
        ))
        .route("/statuses", axum::routing::get(show_statuses))
        .with_state(statuses))
}

#[derive(Clone)]
struct LayerApp {
    conninfo: String,
    /// The effects' connection, made again after the database dropped it.
    effects: Arc<tokio::sync::Mutex<Option<tokio_postgres::Client>>>,
    delay: Duration,
}

async fn pay_postgres_layer(State(app): State<LayerApp>, request: Request) -> impl IntoResponse {
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, 64 * 1024).await else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let key = key_of(&parts);
    match app.pay(&key, &String::from_utf8_lossy(&body)).await {
        Paid::Yes(id) => {
            tokio::time::sleep(app.delay).await;
            (
                StatusCode::CREATED,
                [(http::header::CONTENT_TYPE, "application/json")],
                effect_body(id),
            )
                .into_response()
        }
        // Nothing was paid: the layer frees the key for the client's retry.
        Paid::No => (
            StatusCode::SERVICE_UNAVAILABLE,
            [(http::header::RETRY_AFTER, "1")],
        )
            .into_response(),
        // Kept by the layer and replayed: a retry must not pay a second time.
        Paid::Unknown => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "the payment's outcome is unknown; it was not repeated",
        )
            .into_response(),
    }
}

/// What the layer route's effect did.
enum Paid {
    /// The effect's row, committed.
    Yes(i64),
    /// Certainly nothing.
    No,
    /// The database could not be asked within [`LayerApp::LOOK_UP_FOR`].
    Unknown,
}

impl LayerApp {
    /// How long the handler asks after an INSERT whose answer was lost.
    const LOOK_UP_FOR: Duration = Duration::from_secs(20);

    /// The effect: one autocommit row. An INSERT that failed may still have
    /// committed (the connection died after the commit, before its answer), so
    /// answering "not paid" on its error alone would let the retry pay twice;
    /// the handler asks the database again until it can tell.
    async fn pay(&self, key: &str, body: &str) -> Paid {
        let mut effects = self.effects.lock().await;
        if effects.as_ref().is_none_or(|c| c.is_closed()) {
            *effects = effects_connection(&self.conninfo).await.ok();
        }
        let Some(client) = effects.as_ref() else {
            // No connection: the INSERT was never sent.
            return Paid::No;
        };
        let inserted = client
            .query_one(
                "INSERT INTO effects (key, body) VALUES ($1, $2) RETURNING id",
                &[&key, &body],
            )
            .await;
        match inserted {
            Ok(row) => Paid::Yes(row.get(0)),
            Err(_) => {
                // The next request connects afresh; this one asks on a new
                // session, which sees the row if the INSERT committed (a backend
                // that dropped its connection has ended its transaction).
                *effects = None;
                self.look_up(key).await
            }
        }
    }

    async fn look_up(&self, key: &str) -> Paid {
        let until = tokio::time::Instant::now() + Self::LOOK_UP_FOR;
        while tokio::time::Instant::now() < until {
            if let Ok(client) = effects_connection(&self.conninfo).await {
                let found = client
                    .query_opt(
                        "SELECT id FROM effects WHERE key = $1 ORDER BY id LIMIT 1",
                        &[&key],
                    )
                    .await;
                match found {
                    Ok(Some(row)) => return Paid::Yes(row.get(0)),
                    Ok(None) => return Paid::No,
                    Err(_) => {}
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Paid::Unknown
    }
}

/// The effects' own connection, committing durably: the fault suite's
/// database is tuned `synchronous_commit = off`, under which a crash loses
/// effects already answered 201 (the layer's store raises it for its own
/// sessions only; an effect outside its transaction is the handler's to make
/// durable).
async fn effects_connection(conninfo: &str) -> Result<tokio_postgres::Client, BoxError> {
    let (client, connection) = tokio_postgres::connect(conninfo, NoTls).await?;
    tokio::spawn(connection);
    client.batch_execute("SET synchronous_commit = on").await?;
    Ok(client)
}

/// How many answers of each status the clients received.
#[derive(Clone, Default)]
struct Statuses(Arc<Mutex<std::collections::BTreeMap<String, u64>>>);

async fn count_status(
    State(statuses): State<Statuses>,
    request: Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let response = next.run(request).await;
    let status = response.status();
    let name = if status == StatusCode::SERVICE_UNAVAILABLE
        && !response.headers().contains_key(http::header::RETRY_AFTER)
    {
        "503-no-retry-after".to_owned()
    } else {
        status.as_u16().to_string()
    };
    *statuses.0.lock().unwrap().entry(name).or_default() += 1;
    response
}

async fn show_statuses(State(statuses): State<Statuses>) -> String {
    statuses
        .0
        .lock()
        .unwrap()
        .iter()
        .map(|(status, count)| format!("{status} {count}\n"))
        .collect()
}
