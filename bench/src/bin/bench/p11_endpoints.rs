//! P11 — the server half: what `tower-idempotency`'s layer (in-memory store) adds to
//! an axum POST route. In process: the added time per request for 100 B, 10 KB and
//! 1 MB request bodies, each request a new key (claim, fingerprint, capture, store).
//! Over loopback HTTP: requests/s from 32 concurrent tasks against the bare route and
//! the same route behind the layer, interleaved rounds, median of per-round ratios.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::routing::post;
use axum::Router;
use bytes::Bytes;
use http_body_util::BodyExt;
use reqwest_resilience_bench::markdown::table;
use reqwest_resilience_bench::peers::bare_reqwest_builder;
use tower::ServiceExt;
use tower_idempotency::{IdempotencyLayer, MemoryStore, SinglePrincipal};

use crate::plan::Plan;
use crate::report::Report;
use crate::stats::{median, per_round_ratios, quantile};

const P11_TASKS: usize = 32;
const HTTP_BODY: usize = 100;
/// The pruned HTTP row's retention: the store holds about this much of the run.
const PRUNED_RETENTION: Duration = Duration::from_secs(1);
const SIZES: [(&str, usize); 3] = [("100 B", 100), ("10 KB", 10_000), ("1 MB", 1_000_000)];

/// The route: reads the whole body, answers a small JSON receipt.
fn route() -> Router {
    Router::new().route(
        "/payments",
        post(|body: Bytes| async move { format!("{{\"received\":{}}}", body.len()) }),
    )
}

/// The route behind the layer. `retention`: how long finished keys are kept (the
/// HTTP rows prune every quarter of it, as `spawn_pruner` does in a service).
fn layer(retention: Duration) -> IdempotencyLayer {
    IdempotencyLayer::builder(MemoryStore::new())
        .principal(SinglePrincipal)
        .max_request_body(2 << 20)
        .lease(Duration::from_secs(1))
        .retention(retention)
        .build()
        .expect("layer")
}

fn layered() -> Router {
    route().layer(layer(Duration::from_secs(24 * 60 * 60)))
}

fn request(key: usize, body: &Bytes) -> http::Request<axum::body::Body> {
    http::Request::post("/payments")
        .header("idempotency-key", format!("p11-{key}"))
        .header("content-type", "application/json")
        .body(axum::body::Body::from(body.clone()))
        .expect("request")
}

/// Mean µs per request for `count` requests through `app`, each with a new key.
async fn per_request_us(app: &Router, body: &Bytes, count: usize, first_key: usize) -> f64 {
    let start = Instant::now();
    for key in first_key..first_key + count {
        let response = app
            .clone()
            .oneshot(request(key, body))
            .await
            .expect("infallible");
        assert_eq!(response.status(), 200, "P11 in process");
        response.into_body().collect().await.expect("body");
    }
    start.elapsed().as_secs_f64() * 1e6 / count as f64
}

/// One size's rounds: (bare µs, layered µs, added µs per round).
async fn in_process(body: &Bytes, count: usize, rounds: usize) -> (f64, f64, Vec<f64>) {
    let (bare_app, layered_app) = (route(), layered());
    // Warm-up: first touches of the store's map and the allocator.
    per_request_us(&bare_app, body, count, 0).await;
    per_request_us(&layered_app, body, count, 0).await;
    let (mut bare, mut with_layer, mut added) = (vec![], vec![], vec![]);
    for round in 0..rounds {
        let key = (round + 1) * count;
        let (b, l) = if round % 2 == 0 {
            let b = per_request_us(&bare_app, body, count, key).await;
            (b, per_request_us(&layered_app, body, count, key).await)
        } else {
            let l = per_request_us(&layered_app, body, count, key).await;
            (per_request_us(&bare_app, body, count, key).await, l)
        };
        bare.push(b);
        with_layer.push(l);
        added.push(l - b);
    }
    (median(&bare), median(&with_layer), added)
}

/// Serves `app` on 127.0.0.1 from a thread and runtime of its own; `pruned` starts
/// that layer's pruner on the same runtime.
fn serve(app: Router, pruned: Option<(IdempotencyLayer, Duration)>) -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("server runtime");
        runtime.block_on(async move {
            let _pruner = pruned.map(|(layer, every)| layer.spawn_pruner(every));
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            axum::serve(listener, app).await.expect("serve");
        });
    });
    addr
}

/// Requests/s for `length` with 32 tasks, each POST a new key.
async fn throughput(
    client: &reqwest::Client,
    url: &str,
    length: Duration,
    next_key: &Arc<AtomicUsize>,
) -> f64 {
    let body = Bytes::from(vec![b'x'; HTTP_BODY]);
    let (client, url) = (client.clone(), url.to_owned());
    rate(length, next_key, move |key| {
        let request = client
            .post(&url)
            .header("idempotency-key", format!("p11-http-{key}"))
            .header("content-type", "application/json")
            .body(body.clone());
        async move {
            let response = request.send().await.expect("P11 request");
            assert_eq!(response.status(), 200, "P11 over HTTP");
            response.bytes().await.expect("P11 body");
        }
    })
    .await
}

/// Runs P11 and adds its section (and its targets) to `report`.
pub async fn run(plan: &Plan, report: &mut Report) {
    let mut rows = Vec::new();
    let mut added_100b = f64::NAN;
    for (name, size) in SIZES {
        let count = (plan.p11_bytes_per_round / size).clamp(10, plan.p11_max_per_round);
        let body = Bytes::from(vec![b'x'; size]);
        let (bare, with_layer, added) = in_process(&body, count, plan.p11_rounds).await;
        if size == 100 {
            added_100b = median(&added);
        }
        rows.push(vec![
            name.to_owned(),
            count.to_string(),
            format!("{bare:.1}"),
            format!("{with_layer:.1}"),
            format!("{:.1}", median(&added)),
            format!(
                "{:.1}–{:.1}",
                quantile(&added, 0.25),
                quantile(&added, 0.75)
            ),
            format!("{:.1}", added.iter().copied().fold(f64::MIN, f64::max)),
        ]);
    }

    let client = bare_reqwest_builder().build().expect("client");
    let bare_url = format!("http://{}/payments", serve(route(), None));
    let growing_url = format!("http://{}/payments", serve(layered(), None));
    let pruned_layer = layer(PRUNED_RETENTION);
    let pruned_app = route().layer(pruned_layer.clone());
    let pruned_url = format!(
        "http://{}/payments",
        serve(pruned_app, Some((pruned_layer, PRUNED_RETENTION / 4)))
    );
    let urls = [&bare_url, &growing_url, &pruned_url];
    let next_key = Arc::new(AtomicUsize::new(0));
    for url in urls {
        throughput(&client, url, plan.p11_round / 4, &next_key).await;
    }
    // rates[row][round]; each round visits the rows in a rotated order.
    let mut rates = [vec![], vec![], vec![]];
    for round in 0..plan.p11_rounds {
        for step in 0..urls.len() {
            let row = (round + step) % urls.len();
            let rate = throughput(&client, urls[row], plan.p11_round, &next_key).await;
            rates[row].push(rate);
        }
    }
    let ratio_of = |row: usize| {
        let ratios = per_round_ratios(&rates[row], &rates[0]);
        (
            median(&ratios),
            ratios.iter().copied().fold(f64::MAX, f64::min),
        )
    };
    let (growing, growing_worst) = ratio_of(1);
    let (ratio, worst) = ratio_of(2);

    let mut text = format!(
        "\n## P11 — idempotent endpoints: tower-idempotency's layer on an axum POST route\n\n\
         In process: the route (reads the body, answers a small JSON) called through \
         `tower::ServiceExt::oneshot`, bare and behind `IdempotencyLayer` with the \
         in-memory store, every request a new `Idempotency-Key` (claim, SHA-256 \
         fingerprint of the body, response captured and stored). {} interleaved rounds \
         after a warm-up; µs per request are medians over rounds, *added* is layered − \
         bare in the same round.\n\n",
        plan.p11_rounds
    );
    text.push_str(&table(
        &[
            " request body",
            "requests / round",
            "bare µs",
            "layered µs",
            "added µs (median)",
            "added p25–p75",
            "added, worst round",
        ],
        &rows,
    ));
    text.push_str(&format!(
        "\nOver loopback HTTP: {P11_TASKS} concurrent tasks (one reqwest client, \
         keep-alive) POST {HTTP_BODY} B bodies, each a new key, for {:.0?} per round, \
         {} rounds, the three rows in a rotated order each round, after a warm-up; each \
         server is axum on its own thread and current-thread runtime. The pruned row is \
         a service in steady state (its store holds about a second of keys); the growing \
         row keeps every key of the run in one map.\n\n",
        plan.p11_round, plan.p11_rounds
    ));
    text.push_str(&table(
        &[
            " route",
            "requests/s (median)",
            "ratio to bare (median)",
            "ratio, worst round",
        ],
        &[
            vec![
                "bare".into(),
                format!("{:.0}", median(&rates[0])),
                "1.000×".into(),
                "—".into(),
            ],
            vec![
                "behind the layer, MemoryStore pruned (retention 1 s, pruner every 250 ms)".into(),
                format!("{:.0}", median(&rates[2])),
                format!("{ratio:.3}×"),
                format!("{worst:.3}×"),
            ],
            vec![
                "behind the layer, MemoryStore growing (24 h retention, every key kept)".into(),
                format!("{:.0}", median(&rates[1])),
                format!("{growing:.3}×"),
                format!("{growing_worst:.3}×"),
            ],
        ],
    ));
    report.section(&text);
    report.summary.p11 = Some(ratio);
    report.summary.p11_added_us = Some(added_100b);
    report.target(
        "P11 layer",
        "≥ 0.95× bare (requests/s, 32 concurrent, HTTP, pruned store)".into(),
        format!("{ratio:.3}× (worst round {worst:.3}×)"),
        ratio >= 0.95,
    );
    run_stores(plan, report).await;
}

/// The stores' own statements (server/src/store/sqlite/queries.rs and
/// server/src/store/postgres/mod.rs), for the raw rows: a claim, then its completion.
const SQLITE_CLAIM: &str =
    "INSERT INTO idempotency_keys (scope, fingerprint, generation, expires_at)
     VALUES (?1, ?2, random(), ?3)
     ON CONFLICT (scope) DO UPDATE SET
         fingerprint = excluded.fingerprint, generation = excluded.generation,
         expires_at = excluded.expires_at, reclaimed = (completed = 0),
         completed = 0, status = NULL, headers = NULL, body = NULL, not_stored = NULL
     WHERE idempotency_keys.expires_at <= ?4
     RETURNING generation, reclaimed";
const SQLITE_COMPLETE: &str = "UPDATE idempotency_keys
     SET completed = 1, status = ?3, headers = ?4, body = ?5, not_stored = NULL, expires_at = ?6
     WHERE scope = ?1 AND generation = ?2 AND completed = 0";
const PG_CLAIM: &str = "INSERT INTO idempotency_keys (scope, fingerprint, generation, expires_at)
     VALUES ($1, $2, nextval('idempotency_generation'), $3)
     ON CONFLICT (scope) DO UPDATE SET
         fingerprint = EXCLUDED.fingerprint, generation = EXCLUDED.generation,
         expires_at = EXCLUDED.expires_at, reclaimed = NOT idempotency_keys.completed,
         completed = false, status = NULL, headers = NULL, body = NULL, not_stored = NULL
     WHERE idempotency_keys.expires_at <= $4
     RETURNING generation, reclaimed";
const PG_COMPLETE: &str = "UPDATE idempotency_keys
     SET completed = true, status = $3, headers = $4, body = $5, not_stored = NULL, expires_at = $6
     WHERE scope = $1 AND generation = $2 AND NOT completed";

/// What a raw row writes: a 32-byte scope, a 32-byte fingerprint, a small response.
fn raw_scope(key: usize) -> Vec<u8> {
    let mut scope = vec![0u8; 32];
    scope[..8].copy_from_slice(&(key as u64).to_be_bytes());
    scope
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Raw SQLite on the store's terms: one connection behind a mutex, WAL,
/// `synchronous = FULL`, one blocking task per statement, each its own transaction.
#[derive(Clone)]
struct RawSqlite(Arc<std::sync::Mutex<rusqlite::Connection>>);

impl RawSqlite {
    fn open(path: &std::path::Path) -> RawSqlite {
        drop(tower_idempotency::SqliteStore::open(path).expect("the store's schema"));
        let conn = rusqlite::Connection::open(path).expect("raw SQLite");
        conn.busy_timeout(Duration::from_secs(5))
            .expect("busy timeout");
        conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))
            .expect("WAL");
        conn.pragma_update(None, "synchronous", "FULL")
            .expect("FULL");
        RawSqlite(Arc::new(std::sync::Mutex::new(conn)))
    }

    async fn row(&self, key: usize) {
        let (conn, scope) = (self.0.clone(), raw_scope(key));
        let generation = tokio::task::spawn_blocking({
            let (conn, scope) = (conn.clone(), scope.clone());
            move || {
                let conn = conn.lock().expect("raw SQLite lock");
                let now = now_ms();
                conn.prepare_cached(SQLITE_CLAIM)
                    .and_then(|mut s| {
                        s.query_row(
                            rusqlite::params![scope, [7u8; 32], now + 60_000, now],
                            |r| r.get::<_, i64>(0),
                        )
                    })
                    .expect("raw claim")
            }
        })
        .await
        .expect("blocking task");
        tokio::task::spawn_blocking(move || {
            let conn = conn.lock().expect("raw SQLite lock");
            conn.prepare_cached(SQLITE_COMPLETE)
                .and_then(|mut s| {
                    s.execute(rusqlite::params![
                        scope,
                        generation,
                        200,
                        b"content-type:text/plain\n".as_slice(),
                        b"{\"received\":100}".as_slice(),
                        now_ms() + 86_400_000
                    ])
                })
                .expect("raw complete");
        })
        .await
        .expect("blocking task");
    }
}

/// Raw PostgreSQL on the store's terms: as many connections as the store's pool, each
/// taken by one request at a time (a free list under a semaphore), the same statements.
#[derive(Clone)]
struct RawPostgres {
    free: Arc<std::sync::Mutex<Vec<tokio_postgres::Client>>>,
    permits: Arc<tokio::sync::Semaphore>,
}

impl RawPostgres {
    async fn connect(conninfo: &str) -> RawPostgres {
        let mut clients = Vec::new();
        for _ in 0..tower_idempotency::MAX_POSTGRES_TRANSACTIONS {
            let (client, connection) = tokio_postgres::connect(conninfo, tokio_postgres::NoTls)
                .await
                .expect("raw PostgreSQL");
            tokio::spawn(connection);
            clients.push(client);
        }
        RawPostgres {
            permits: Arc::new(tokio::sync::Semaphore::new(clients.len())),
            free: Arc::new(std::sync::Mutex::new(clients)),
        }
    }

    async fn row(&self, key: usize) {
        let _permit = self.permits.acquire().await.expect("semaphore open");
        let client = self
            .free
            .lock()
            .unwrap()
            .pop()
            .expect("a permit means a free client");
        Self::write(&client, key).await;
        self.free.lock().unwrap().push(client);
    }

    async fn write(client: &tokio_postgres::Client, key: usize) {
        let scope = raw_scope(key);
        let now = now_ms();
        let fingerprint = vec![7u8; 32];
        let row = client
            .query_one(PG_CLAIM, &[&scope, &fingerprint, &(now + 60_000), &now])
            .await
            .expect("raw claim");
        let generation: i64 = row.get(0);
        let headers: &[u8] = b"content-type:text/plain\n";
        let body: &[u8] = b"{\"received\":100}";
        client
            .execute(
                PG_COMPLETE,
                &[
                    &scope,
                    &generation,
                    &200i32,
                    &headers,
                    &body,
                    &(now + 86_400_000),
                ],
            )
            .await
            .expect("raw complete");
    }
}

/// Operations/s from 32 tasks for `length`, each running `one` with a new key.
async fn rate<F, Fut>(length: Duration, next_key: &Arc<AtomicUsize>, one: F) -> f64
where
    F: Fn(usize) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..P11_TASKS)
        .map(|_| {
            let (one, stop, done, next_key) =
                (one.clone(), stop.clone(), done.clone(), next_key.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    one(next_key.fetch_add(1, Ordering::Relaxed)).await;
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let start = Instant::now();
    tokio::time::sleep(length).await;
    stop.store(true, Ordering::Relaxed);
    for task in tasks {
        task.await.expect("P11 task");
    }
    done.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64()
}

/// One database's figures: (raw rows/s, layered requests/s, per-round ratios).
async fn store_rounds<F, Fut>(plan: &Plan, url: &str, row: F) -> (f64, f64, Vec<f64>)
where
    F: Fn(usize) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let client = bare_reqwest_builder().build().expect("client");
    let next_key = Arc::new(AtomicUsize::new(0));
    let (mut raw, mut layered) = (vec![], vec![]);
    for round in 0..plan.p11_db_rounds {
        if round % 2 == 0 {
            raw.push(rate(plan.p11_round, &next_key, row.clone()).await);
            layered.push(throughput(&client, url, plan.p11_round, &next_key).await);
        } else {
            layered.push(throughput(&client, url, plan.p11_round, &next_key).await);
            raw.push(rate(plan.p11_round, &next_key, row.clone()).await);
        }
    }
    let ratios = per_round_ratios(&layered, &raw);
    (median(&raw), median(&layered), ratios)
}

/// The SQL stores beside their database's raw rate; adds rows, targets and SUMMARY.
pub async fn run_stores(plan: &Plan, report: &mut Report) {
    use reqwest_resilience_journal::throwaway_postgres::{Durability, ThrowawayPostgres};

    let dir = std::env::temp_dir().join(format!("p11-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("P11 directory");
    let mut rows = Vec::new();

    let store =
        tower_idempotency::SqliteStore::open(dir.join("layer.sqlite")).expect("SQLite store");
    let layer = IdempotencyLayer::builder(store)
        .principal(SinglePrincipal)
        .build()
        .expect("layer");
    let url = format!("http://{}/payments", serve(route().layer(layer), None));
    let raw = RawSqlite::open(&dir.join("raw.sqlite"));
    let (raw_rate_s, layered_s, ratios) = store_rounds(plan, &url, move |key| {
        let raw = raw.clone();
        async move { raw.row(key).await }
    })
    .await;
    let sqlite = median(&ratios);
    rows.push(store_row(
        "SQLite (bundled, WAL, synchronous=FULL)",
        raw_rate_s,
        layered_s,
        &ratios,
    ));
    report.summary.p11_sqlite = Some(sqlite);
    report.target(
        "P11 SQLite store",
        "≥ 0.5× raw".into(),
        format!("{sqlite:.3}×"),
        sqlite >= 0.5,
    );

    let mut text = String::new();
    match ThrowawayPostgres::start(Durability::Defaults) {
        Ok(Some(cluster)) => {
            let conninfo = cluster.conninfo().to_owned();
            let store = tower_idempotency::PostgresStore::connect(&conninfo)
                .await
                .expect("PostgreSQL store");
            let layer = IdempotencyLayer::builder(store)
                .principal(SinglePrincipal)
                .build()
                .expect("layer");
            let url = format!("http://{}/payments", serve(route().layer(layer), None));
            let raw = RawPostgres::connect(&conninfo).await;
            let (raw_rate_p, layered_p, ratios) = store_rounds(plan, &url, move |key| {
                let raw = raw.clone();
                async move { raw.row(key).await }
            })
            .await;
            let postgres = median(&ratios);
            rows.push(store_row(
                "PostgreSQL (throwaway cluster, fsync on)",
                raw_rate_p,
                layered_p,
                &ratios,
            ));
            report.summary.p11_postgres = Some(postgres);
            report.target(
                "P11 PostgreSQL store",
                "≥ 0.5× raw".into(),
                format!("{postgres:.3}×"),
                postgres >= 0.5,
            );
        }
        Ok(None) => text.push_str(
            "\nPostgreSQL: **skipped** — no PostgreSQL binaries on this machine; \
             `journal/scripts/ensure-postgres.sh` installs them.\n",
        ),
        Err(error) => panic!("P11: starting a throwaway PostgreSQL failed: {error}"),
    }
    let _ = std::fs::remove_dir_all(&dir);
    let mut section = format!(
        "\nThe SQL stores (the P10 method): *layered* is requests/s over HTTP as above \
         (32 tasks, 100 B bodies, each a new key) through the layer with the store; *raw* \
         is rows/s from 32 tasks writing the store's own two statements per request (the \
         claim, then its completion, each its own transaction) to the same database with \
         the store's connection setup (SQLite: one connection behind a mutex, one \
         blocking task per statement; PostgreSQL: a pool of as many connections as the \
         store's, each taken by one request at a time), no HTTP. \
         {} rounds of {:.0?}, interleaved; ratio = median of per-round ratios.\n\n",
        plan.p11_db_rounds, plan.p11_round
    );
    section.push_str(&table(
        &[
            " database",
            "raw rows/s",
            "layered requests/s",
            "ratio",
            "ratio, worst round",
        ],
        &rows,
    ));
    section.push_str(&text);
    report.section(&section);
}

fn store_row(name: &str, raw: f64, layered: f64, ratios: &[f64]) -> Vec<String> {
    vec![
        name.to_owned(),
        format!("{raw:.0}"),
        format!("{layered:.0}"),
        format!("{:.3}×", median(ratios)),
        format!("{:.3}×", ratios.iter().copied().fold(f64::MAX, f64::min)),
    ]
}
