//! The server under test beside the reference: `POST /payments` and `POST /refunds`
//! as axum routes behind `tower_idempotency`'s layer (in-memory store), over real HTTP/1.1 on
//! 127.0.0.1. The layer alone decides claim, 409, 422, 400 and replay; the handler
//! only makes the payment. A front in hyper plays the planned faults where they
//! happen in a deployment and logs every request in the reference server's
//! vocabulary ([`Received`], [`Handled`]), so the same scenario asserts on both.
//!
//! # Faults it plays
//! * [`Fault::Unavailable`] and [`Fault::DropBeforeCommit`]: in the front, before
//!   the layer sees the request;
//! * [`Fault::HoldInProgress`]: the handler holds the claimed key this long;
//! * [`Fault::DropAfterCommit`]: the layer and the handler run (the payment made,
//!   the response stored), then the connection closes without an answer.
//!
//! The others belong to the reference server alone; planning one here panics.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request as AxumRequest, State as AxumState};
use axum::http::{header, Request, Response, StatusCode};
use axum::routing::post;
use axum::Router;
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};
use tower::ServiceExt;
use tower_idempotency::{
    Fingerprint, Fingerprinter, IdempotencyLayer, MemoryStore, Principal, IDEMPOTENT_REPLAYED,
};

use super::reference_server::{canonical_json, Config, Fault, Handled, Received};
use super::IdempotentServer;

/// Most connections one server accepts in its life (bounds the accept loop).
const MAX_CONNECTIONS: usize = 50_000;

/// The longest a claim holds. Longer than any planned hold, and short because the
/// layer's 409 carries the rest of the lease as `Retry-After`, which the client honours.
const LEASE: Duration = Duration::from_secs(1);

/// A running layer server; stops (and closes every connection) when dropped.
pub struct LayerServer {
    pub url: String,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

#[derive(Default)]
struct State {
    effects: usize,
    /// Result ids created per key: never forgets.
    effects_by_key: HashMap<String, Vec<String>>,
    log: Vec<Received>,
    plans: HashMap<String, VecDeque<Fault>>,
    /// Handlers running per key (each holds the key's claim).
    running: HashMap<String, usize>,
    in_flight: usize,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The caller's stable account, as an authentication layer would insert it.
#[derive(Clone)]
struct Account(String);

/// How long the handler holds the claimed key before the payment commits.
#[derive(Clone, Copy)]
struct Hold(Duration);

/// Payloads are the same when their JSON is, whatever the key order or whitespace:
/// the reference server's notion of "the same payment".
struct CanonicalJson;

impl Fingerprinter for CanonicalJson {
    fn fingerprint(&self, _parts: &http::request::Parts, body: &[u8]) -> Fingerprint {
        let canonical = match serde_json::from_slice::<serde_json::Value>(body) {
            Ok(value) => [b"json:".as_slice(), canonical_json(&value).as_bytes()].concat(),
            Err(_) => [b"bytes:".as_slice(), body].concat(),
        };
        Fingerprint::from_bytes(canonical)
    }
}

/// Counts a request (or its detached handler) as in flight until dropped.
struct InFlight(Arc<Shared>);

impl InFlight {
    fn enter(shared: &Arc<Shared>) -> Self {
        shared.lock().in_flight += 1;
        Self(shared.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.lock().in_flight -= 1;
    }
}

/// The service error that makes hyper close the connection without writing anything.
#[derive(Debug)]
struct Dropped;

impl fmt::Display for Dropped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("connection dropped on purpose")
    }
}

impl std::error::Error for Dropped {}

impl LayerServer {
    /// The app: the layer in front of the payments route. A completed key is kept
    /// for the config's `ttl` (24 h without one).
    fn app(shared: &Arc<Shared>, config: Config) -> Router {
        assert!(
            config.random_faults.is_none(),
            "the layer server plays planned faults only"
        );
        let retention = config.ttl.unwrap_or(Duration::from_secs(24 * 3600));
        let idempotency = IdempotencyLayer::builder(MemoryStore::new())
            .principal(|parts: &http::request::Parts| {
                parts
                    .extensions
                    .get::<Account>()
                    .map(|account| Principal::new(account.0.clone()))
            })
            .fingerprinter(CanonicalJson)
            .lease(LEASE.min(retention))
            .retention(retention)
            .build()
            .expect("valid layer settings");
        Router::new()
            .route("/payments", post(pay).route_layer(idempotency.clone()))
            .route("/refunds", post(pay).route_layer(idempotency))
            .with_state(shared.clone())
    }
}

impl IdempotentServer for LayerServer {
    async fn start(config: Config) -> Self {
        let shared = Arc::new(Shared::default());
        let app = Self::app(&shared, config);
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("local address");
        let serving = shared.clone();
        let task = tokio::spawn(async move {
            // Owned here: dropping the accept task aborts every connection task.
            let mut connections = JoinSet::new();
            for _ in 0..MAX_CONNECTIONS {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                while connections.try_join_next().is_some() {}
                let (shared, app) = (serving.clone(), app.clone());
                connections.spawn(async move {
                    let service =
                        service_fn(move |request| front(shared.clone(), app.clone(), request));
                    // An error here is a dropped connection, on purpose or by the client.
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self {
            url: format!("http://{address}"),
            shared,
            task,
        }
    }

    fn url(&self) -> &str {
        &self.url
    }

    fn plan(&self, key: &str, faults: &[Fault]) {
        for fault in faults {
            assert!(
                matches!(
                    fault,
                    Fault::Clean
                        | Fault::Unavailable { .. }
                        | Fault::DropBeforeCommit
                        | Fault::HoldInProgress(_)
                        | Fault::DropAfterCommit
                ),
                "the layer server does not play {fault:?}"
            );
        }
        self.shared
            .lock()
            .plans
            .entry(key.to_owned())
            .or_default()
            .extend(faults);
    }

    fn result_ids(&self, key: &str) -> Vec<String> {
        self.shared
            .lock()
            .effects_by_key
            .get(key)
            .cloned()
            .unwrap_or_default()
    }

    fn received_with(&self, key: &str) -> Vec<Received> {
        self.shared
            .lock()
            .log
            .iter()
            .filter(|r| r.key.as_deref() == Some(key))
            .cloned()
            .collect()
    }

    fn is_in_progress(&self, key: &str) -> bool {
        self.shared.lock().running.get(key).is_some_and(|n| *n > 0)
    }

    fn in_flight(&self) -> usize {
        self.shared.lock().in_flight
    }
}

impl Drop for LayerServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The payment (or refund): runs once per claimed key; the layer keeps what it returns.
async fn pay(AxumState(shared): AxumState<Arc<Shared>>, request: AxumRequest) -> Response<Body> {
    let key = header(request.headers(), "idempotency-key").expect("the layer requires a key");
    *shared.lock().running.entry(key.clone()).or_default() += 1;
    if let Some(Hold(hold)) = request.extensions().get::<Hold>() {
        tokio::time::sleep(*hold).await;
    }
    let mut state = shared.lock();
    *state.running.get_mut(&key).expect("entered above") -= 1;
    state.effects += 1;
    let prefix = if request.uri().path() == "/refunds" {
        "re"
    } else {
        "pay"
    };
    let id = format!("{prefix}_{}", state.effects);
    state
        .effects_by_key
        .entry(key)
        .or_default()
        .push(id.clone());
    drop(state);
    json(
        StatusCode::CREATED,
        serde_json::json!({ "id": id, "status": "succeeded" }).to_string(),
    )
}

fn json(status: StatusCode, body: String) -> Response<Body> {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body))
        .expect("a valid response")
}

fn header(headers: &http::HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
}

/// In front of the app: logs the request, plays its planned fault, and records
/// what the layer made of it.
async fn front(
    shared: Arc<Shared>,
    app: Router,
    request: Request<Incoming>,
) -> Result<Response<Body>, Dropped> {
    let (mut parts, body) = request.into_parts();
    // The whole request first: a drop below is a response lost after delivery.
    let body = body.collect().await.map_err(|_| Dropped)?.to_bytes();
    let _in_flight = InFlight::enter(&shared);
    let key = header(&parts.headers, "idempotency-key");
    let client = header(&parts.headers, "authorization");
    let (seq, fault) = {
        let mut state = shared.lock();
        let fault = key
            .as_deref()
            .and_then(|key| state.plans.get_mut(key))
            .and_then(VecDeque::pop_front)
            .filter(|fault| *fault != Fault::Clean);
        let seq = state.log.len();
        state.log.push(Received {
            seq,
            at: Instant::now(),
            method: parts.method.to_string(),
            path: parts.uri.path().to_owned(),
            client: client.clone().unwrap_or_else(|| "anonymous".to_owned()),
            key: key.clone(),
            request_id: header(&parts.headers, "x-request-id"),
            fault,
            handled: Handled::Pending,
            responded: false,
        });
        (seq, fault)
    };
    let record = |handled: Handled, responded: bool| {
        let mut state = shared.lock();
        state.log[seq].handled = handled;
        state.log[seq].responded = responded;
    };

    match fault {
        Some(Fault::Unavailable { retry_after_secs }) => {
            let mut response = json(
                StatusCode::SERVICE_UNAVAILABLE,
                r#"{"error":"unavailable"}"#.to_owned(),
            );
            if let Some(secs) = retry_after_secs {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, secs.into());
            }
            record(Handled::Unavailable503, true);
            return Ok(response);
        }
        Some(Fault::DropBeforeCommit) => {
            record(Handled::DroppedBeforeCommit, false);
            return Err(Dropped);
        }
        Some(Fault::HoldInProgress(hold)) => {
            parts.extensions.insert(Hold(hold));
        }
        _ => {}
    }
    // The authentication layer's work: the token names an account (`tok_alice` →
    // `alice`); the layer scopes keys to the account, never to the token.
    if let Some(account) = client
        .as_deref()
        .and_then(|value| value.strip_prefix("Bearer tok_"))
    {
        parts.extensions.insert(Account(account.to_owned()));
    }

    // On a task of its own: the handler and the layer's store complete whether or
    // not the client is still connected, as a database transaction would.
    let guard = InFlight::enter(&shared);
    let request = Request::from_parts(parts, Body::from(body));
    let response = tokio::spawn(async move {
        let _guard = guard;
        let response = match app.oneshot(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        };
        let (parts, body) = response.into_parts();
        let body = body.collect().await.map(|b| b.to_bytes());
        (parts, body)
    })
    .await;
    let Ok((parts, Ok(body))) = response else {
        record(Handled::Pending, false);
        return Err(Dropped);
    };
    let handled = handled(&parts, key.is_some(), &body);

    if fault == Some(Fault::DropAfterCommit) {
        // The layer has stored the response before returning it; now it is lost.
        record(handled, false);
        return Err(Dropped);
    }
    record(handled, true);
    Ok(Response::from_parts(parts, Body::from(body)))
}

/// What the layer made of a request, read off its answer.
fn handled(parts: &http::response::Parts, keyed: bool, body: &Bytes) -> Handled {
    let id = || {
        serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|value| value["id"].as_str().map(str::to_owned))
            .unwrap_or_default()
    };
    match parts.status.as_u16() {
        201 if parts.headers.contains_key(IDEMPOTENT_REPLAYED) => Handled::Replayed(id()),
        201 => Handled::Created(id()),
        409 => Handled::InProgress409,
        422 => Handled::Mismatch422,
        400 if !keyed => Handled::MissingKey400,
        other => Handled::Refused(other),
    }
}
