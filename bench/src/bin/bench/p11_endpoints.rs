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
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicUsize::new(0));
    let body = Bytes::from(vec![b'x'; HTTP_BODY]);
    let tasks: Vec<_> = (0..P11_TASKS)
        .map(|_| {
            let (client, url, body) = (client.clone(), url.to_owned(), body.clone());
            let (stop, done, next_key) = (stop.clone(), done.clone(), next_key.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let key = next_key.fetch_add(1, Ordering::Relaxed);
                    let response = client
                        .post(&url)
                        .header("idempotency-key", format!("p11-http-{key}"))
                        .header("content-type", "application/json")
                        .body(body.clone())
                        .send()
                        .await
                        .expect("P11 request");
                    assert_eq!(response.status(), 200, "P11 over HTTP");
                    response.bytes().await.expect("P11 body");
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
    text.push_str(
        "\nNot measured here yet: the SQLite store and the strong mode against the same \
         database's raw rate (the P10 method), nor the PostgreSQL store.\n",
    );
    report.section(&text);
    report.summary.p11 = Some(ratio);
    report.summary.p11_added_us = Some(added_100b);
    report.target(
        "P11 layer",
        "≥ 0.95× bare (requests/s, 32 concurrent, HTTP, pruned store)".into(),
        format!("{ratio:.3}× (worst round {worst:.3}×)"),
        ratio >= 0.95,
    );
}
