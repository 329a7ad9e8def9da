//! The server the browser and node tests (`wasm/`) send to: scripted routes behind
//! tower-idempotency's layer, on 127.0.0.1, with CORS for a page on another port.
//!
//! ```text
//! cargo run -p reqwest-resilience-interop --bin browser_server [127.0.0.1:PORT]
//! ```
//!
//! It prints `listening on http://ADDR` as its first line, then serves until killed.
//! Each test names a scenario of its own (`/s/{scenario}/…`), so tests share one
//! server without seeing each other's requests:
//!
//! | route | what it does |
//! |---|---|
//! | `POST /s/{id}/unavailable/{n}` | 503 for the first `n` runs of the handler, then 201 |
//! | `POST /s/{id}/retry-after/{secs}` | 503 with `Retry-After: secs` once, then 201 |
//! | `POST /s/{id}/slow/{ms}` | the first run takes `ms`, then 201; later runs answer at once |
//! | `POST /s/{id}/down` | always 503 |
//! | `GET /s/{id}/log` | what reached the server (JSON): every request, and the effects |
//!
//! A request's `status` in the log is `null` when the client went away before its
//! answer (an attempt cut off by its timeout): the layer still runs its handler to the
//! end, and the effect is counted.
//!
//! Every route is behind the layer, with `ServerErrors::Release` (a 503 here had no
//! effect, so the retry runs the handler again) and `SinglePrincipal` (no auth layer).
//! "Effects" counts the 201s the handlers made: the payments a real route would have
//! made. The log is written outside the layer, so it also shows the requests the layer
//! answered itself (a 409 for a key still running, a replay).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderName, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use tower_http::cors::{Any, CorsLayer};
use tower_idempotency::{IdempotencyLayer, MemoryStore, ServerErrors, SinglePrincipal};

/// One request as it reached the server.
struct Seen {
    method: String,
    route: String,
    key: Option<String>,
    request_id: Option<String>,
    at_ms: u128,
    /// None while the request runs, and for good when the client went away first (its
    /// connection closed: the service's future was dropped, not the layer's handler).
    status: Option<u16>,
}

/// One test's requests and the effects its handlers made.
#[derive(Default)]
struct Scenario {
    seen: Vec<Seen>,
    runs: u32,
    effects: u32,
}

#[derive(Clone)]
struct Server {
    started: Instant,
    scenarios: Arc<Mutex<HashMap<String, Scenario>>>,
}

impl Server {
    fn with<T>(&self, id: &str, f: impl FnOnce(&mut Scenario) -> T) -> T {
        let mut scenarios = self
            .scenarios
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        f(scenarios.entry(id.to_owned()).or_default())
    }

    /// Counts a run of a handler; returns which run this is (1 for the first).
    fn run(&self, id: &str) -> u32 {
        self.with(id, |s| {
            s.runs += 1;
            s.runs
        })
    }

    fn created(&self, id: &str) -> Response {
        let effects = self.with(id, |s| {
            s.effects += 1;
            s.effects
        });
        (StatusCode::CREATED, format!("effect {effects}")).into_response()
    }
}

fn unavailable(retry_after: Option<u64>) -> Response {
    let mut response = (StatusCode::SERVICE_UNAVAILABLE, "try again").into_response();
    if let Some(secs) = retry_after {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    response
}

async fn unavailable_then_created(
    State(server): State<Server>,
    Path((id, failures)): Path<(String, u32)>,
) -> Response {
    if server.run(&id) <= failures {
        return unavailable(None);
    }
    server.created(&id)
}

async fn retry_after_then_created(
    State(server): State<Server>,
    Path((id, secs)): Path<(String, u64)>,
) -> Response {
    if server.run(&id) == 1 {
        return unavailable(Some(secs));
    }
    server.created(&id)
}

async fn slow_then_created(
    State(server): State<Server>,
    Path((id, ms)): Path<(String, u64)>,
) -> Response {
    if server.run(&id) == 1 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    server.created(&id)
}

async fn down(State(server): State<Server>, Path(id): Path<String>) -> Response {
    server.run(&id);
    unavailable(None)
}

/// The scenario's log as JSON, written by hand: every value is a number or a header
/// value the layer already accepted (visible ASCII), escaped all the same.
async fn log(State(server): State<Server>, Path(id): Path<String>) -> Response {
    let body = server.with(&id, |s| {
        let mut out = format!("{{\"effects\":{},\"requests\":[", s.effects);
        for (i, seen) in s.seen.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(
                out,
                "{{\"method\":{},\"route\":{},\"key\":{},\"request_id\":{},\"at_ms\":{},\"status\":{}}}",
                json_string(Some(&seen.method)),
                json_string(Some(&seen.route)),
                json_string(seen.key.as_deref()),
                json_string(seen.request_id.as_deref()),
                seen.at_ms,
                seen.status.map_or("null".to_owned(), |s| s.to_string())
            );
        }
        out.push_str("]}");
        out
    });
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn json_string(value: Option<&str>) -> String {
    let Some(value) = value else {
        return "null".to_owned();
    };
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Writes every request under `/s/{id}/` (but the log reads) into its scenario's log,
/// with the status it got: outside the layer, so the layer's own answers show too.
async fn record(State(server): State<Server>, request: Request, next: Next) -> Response {
    let at_ms = server.started.elapsed().as_millis();
    let path = request.uri().path().to_owned();
    let mut parts = path.trim_start_matches("/s/").splitn(2, '/');
    let (Some(id), Some(route)) = (parts.next(), parts.next()) else {
        return next.run(request).await;
    };
    if request.method() == Method::OPTIONS || route == "log" {
        return next.run(request).await;
    }
    let (id, route) = (id.to_owned(), route.to_owned());
    let (key, request_id) = {
        let text = |name: &str| {
            let value = request.headers().get(name)?.to_str().ok()?;
            Some(value.to_owned())
        };
        (text("idempotency-key"), text("x-request-id"))
    };
    let method = request.method().to_string();
    let index = server.with(&id, |s| {
        s.seen.push(Seen {
            method,
            route,
            key,
            request_id,
            at_ms,
            status: None,
        });
        s.seen.len() - 1
    });
    let response = next.run(request).await;
    let status = response.status().as_u16();
    server.with(&id, |s| s.seen[index].status = Some(status));
    response
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".to_owned());
    let server = Server {
        started: Instant::now(),
        scenarios: Arc::default(),
    };
    let idempotency = IdempotencyLayer::builder(MemoryStore::new())
        .principal(SinglePrincipal)
        .server_errors(ServerErrors::Release)
        .build()?;
    // A page on another port is another origin: it may send the key and the request
    // id, and read `Retry-After` (not a header `fetch` shows a page unless allowed).
    let cors = CorsLayer::new()
        .allow_origin(Any)
        .allow_methods([Method::GET, Method::POST, Method::PUT])
        .allow_headers([
            header::CONTENT_TYPE,
            HeaderName::from_static("idempotency-key"),
            HeaderName::from_static("x-request-id"),
        ])
        .expose_headers([
            header::RETRY_AFTER,
            HeaderName::from_static("idempotent-replayed"),
        ]);
    let app = Router::new()
        .route("/s/{id}/unavailable/{n}", post(unavailable_then_created))
        .route("/s/{id}/retry-after/{secs}", post(retry_after_then_created))
        .route("/s/{id}/slow/{ms}", post(slow_then_created))
        .route("/s/{id}/down", post(down))
        .layer(idempotency)
        .route("/s/{id}/log", get(log))
        .layer(middleware::from_fn_with_state(server.clone(), record))
        .layer(cors)
        .with_state(server);
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("listening on http://{}", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}
