//! The reference idempotent server: the seeds' server contract over real HTTP/1.1 on
//! 127.0.0.1 (hyper 1), with fault knobs, an effect counter and a log of everything
//! it received. Tests assert on this server's state, not only on statuses.
//!
//! # Contract (`POST /payments`, `POST /refunds`)
//! * The key scope is (client identity from `Authorization`, method, route, key):
//!   the same key from another client or on another route is another intent.
//! * No `Idempotency-Key` → `400`, nothing stored.
//! * The payload is fingerprinted after normalisation (JSON re-serialised with
//!   object keys sorted recursively), so key order and whitespace do not matter.
//! * First request of a scope: the key is claimed (`in_progress`), the effect runs,
//!   the result is stored with the key (`completed`) → `201 {"id":"pay_N"}`.
//! * Same scope, different fingerprint → `422` before any effect, in any state.
//! * Same scope while `in_progress` → `409`.
//! * Same scope once `completed` → the stored status and body again (a replay,
//!   marked `idempotent-replayed: true`); no new effect.
//! * A completed key is forgotten `ttl` after it completed (when a TTL is set).
//!
//! # Faults
//! Per request, in this order: the next fault planned for its key
//! ([`ReferenceServer::plan`]), else the next one of the global script
//! ([`ReferenceServer::script`]), else a random one ([`Config::random_faults`]),
//! else none. See [`Fault`].

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};

use super::IdempotentServer;

/// Most connections one server accepts in its life (bounds the accept loop; the
/// stress test needs a few thousand).
const MAX_CONNECTIONS: usize = 50_000;

/// What goes wrong with one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// No fault: the request is handled normally (a clean attempt in a plan).
    Clean,
    /// `503` before the key is even looked at (an overloaded front end), with an
    /// optional `Retry-After` in seconds. Nothing stored.
    Unavailable { retry_after_secs: Option<u64> },
    /// `429` before the key is looked at, with an optional `Retry-After` in
    /// seconds. Nothing stored.
    TooManyRequests { retry_after_secs: Option<u64> },
    /// The request is handled normally (the effect commits), but a gateway in front
    /// gave up waiting and answers `504`: the client gets a status, not the result.
    GatewayTimeoutAfterCommit,
    /// The connection is closed without a response before anything was done (the
    /// process died on receipt). Nothing stored.
    DropBeforeCommit,
    /// The key is claimed, then the transaction fails before commit: the key is
    /// released, nothing is stored, the answer is `503` (a rollback).
    RollbackBeforeCommit,
    /// The key is claimed and held `in_progress` this long before the effect
    /// commits, so duplicates arriving meanwhile get `409`.
    HoldInProgress(Duration),
    /// The request is handled normally (effect committed, or a replay, 409, 422 …),
    /// then the connection is closed without a response: the response is lost.
    DropAfterCommit,
    /// The request is handled normally, then the response waits this long.
    SlowResponse(Duration),
}

/// Random faults drawn from a seeded RNG for requests with no planned fault.
#[derive(Debug, Clone, Copy)]
pub struct RandomFaults {
    /// Chance that a request gets a fault, in [0, 1].
    pub probability: f64,
    pub seed: u64,
    /// Longest hold or slow response.
    pub max_delay: Duration,
}

/// Server settings.
#[derive(Debug, Clone, Copy, Default)]
pub struct Config {
    /// How long a completed key is remembered; `None`: forever.
    pub ttl: Option<Duration>,
    pub random_faults: Option<RandomFaults>,
}

/// How the server handled one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handled {
    /// Not finished yet.
    Pending,
    /// A new effect with this result id.
    Created(String),
    /// The stored result of this id, again.
    Replayed(String),
    InProgress409,
    Mismatch422,
    MissingKey400,
    BadPayload400,
    RolledBack503,
    Unavailable503,
    TooManyRequests429,
    /// Closed before anything was done.
    DroppedBeforeCommit,
    NotFound404,
    Ok200,
    /// A refusal with this status that the reference server never gives (the
    /// layer's 401, 410, 413, …).
    Refused(u16),
}

/// One request as the server received it.
#[derive(Debug, Clone)]
pub struct Received {
    pub seq: usize,
    pub at: Instant,
    pub method: String,
    pub path: String,
    /// The client identity the key is scoped to (the `Authorization` value).
    pub client: String,
    pub key: Option<String>,
    pub request_id: Option<String>,
    pub fault: Option<Fault>,
    pub handled: Handled,
    /// A response was handed to hyper (false when the connection was dropped).
    pub responded: bool,
}

/// The server state a scenario expects for one key, written before sending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    /// Effects (payments created) for the key, across scopes and expiries.
    pub effects: usize,
    /// Requests that reached the server with this key; `None` when timing decides.
    pub deliveries: Option<usize>,
}

/// The key's identity: who, what, where, which key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Scope {
    client: String,
    method: String,
    route: String,
    key: String,
}

#[derive(Debug)]
struct Entry {
    fingerprint: String,
    state: EntryState,
}

#[derive(Debug)]
enum EntryState {
    InProgress,
    Completed {
        status: u16,
        body: String,
        id: String,
        at: Instant,
    },
}

enum Claim {
    New,
    InProgress,
    Mismatch,
    Replay {
        status: u16,
        body: String,
        id: String,
    },
}

#[derive(Default)]
struct State {
    /// The idempotency store.
    ///
    /// A map behind one mutex is a correct atomic claim here because this process
    /// is the only writer and the "effect" (a counter and a result in the same
    /// memory) commits under the same lock as the key: check-and-insert cannot
    /// interleave, and a commit stores the effect and the key's result together. A
    /// real server has many processes and a database: it claims the key with a
    /// unique index on (account, method, route, key) — `INSERT … ON CONFLICT DO
    /// NOTHING` — in the same transaction as the effect, so a crash can never leave
    /// an effect without its key, nor a committed key without its effect.
    entries: HashMap<Scope, Entry>,
    effects: usize,
    /// Result ids created per key (every scope, every expiry): never forgets.
    effects_by_key: HashMap<String, Vec<String>>,
    log: Vec<Received>,
    plans: HashMap<String, VecDeque<Fault>>,
    script: VecDeque<Fault>,
    rng: Option<StdRng>,
    in_flight: usize,
    in_flight_by_key: HashMap<String, usize>,
}

struct Shared {
    config: Config,
    state: Mutex<State>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking handler cannot leave the maps half-updated: every update is
        // a single statement under the lock.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn set_handled(&self, seq: usize, handled: Handled, responded: bool) {
        let mut state = self.lock();
        let entry = &mut state.log[seq];
        entry.handled = handled;
        entry.responded = responded;
    }
}

/// Counts a request (and its detached effect) as in flight until dropped.
struct InFlight {
    shared: Arc<Shared>,
    key: Option<String>,
}

impl InFlight {
    fn enter(shared: &Arc<Shared>, key: Option<&str>) -> Self {
        let mut state = shared.lock();
        state.in_flight += 1;
        if let Some(key) = key {
            *state.in_flight_by_key.entry(key.to_owned()).or_default() += 1;
        }
        drop(state);
        Self {
            shared: shared.clone(),
            key: key.map(str::to_owned),
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.in_flight -= 1;
        if let Some(key) = &self.key {
            if let Some(count) = state.in_flight_by_key.get_mut(key) {
                *count -= 1;
            }
        }
    }
}

/// The service error that makes hyper close the connection without writing
/// anything: the client sees a connection closed before any response.
#[derive(Debug)]
struct Dropped;

impl fmt::Display for Dropped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("connection dropped on purpose")
    }
}

impl std::error::Error for Dropped {}

/// A running reference server; stops (and closes every connection) when dropped.
pub struct ReferenceServer {
    pub url: String,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl ReferenceServer {
    pub async fn start(config: Config) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("local address");
        let shared = Arc::new(Shared {
            config,
            state: Mutex::new(State {
                rng: config
                    .random_faults
                    .map(|random| StdRng::seed_from_u64(random.seed)),
                ..State::default()
            }),
        });
        let serving = shared.clone();
        let task = tokio::spawn(async move {
            // Owned here: dropping the accept task aborts every connection task.
            let mut connections = JoinSet::new();
            for _ in 0..MAX_CONNECTIONS {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                while connections.try_join_next().is_some() {}
                let shared = serving.clone();
                connections.spawn(async move {
                    let service = service_fn(move |request| handle(shared.clone(), request));
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

    /// Faults for the next requests carrying `key`, in order (appended to any plan).
    pub fn plan(&self, key: &str, faults: impl IntoIterator<Item = Fault>) {
        self.shared
            .lock()
            .plans
            .entry(key.to_owned())
            .or_default()
            .extend(faults);
    }

    /// Faults for the next requests without a planned fault, in arrival order.
    pub fn script(&self, faults: impl IntoIterator<Item = Fault>) {
        self.shared.lock().script.extend(faults);
    }

    /// Forgets any fault still planned for `key`.
    pub fn clear_plan(&self, key: &str) {
        self.shared.lock().plans.remove(key);
    }

    /// Payments created, all keys.
    pub fn effects(&self) -> usize {
        self.shared.lock().effects
    }

    /// The result ids created for `key`, oldest first.
    pub fn result_ids(&self, key: &str) -> Vec<String> {
        self.shared
            .lock()
            .effects_by_key
            .get(key)
            .cloned()
            .unwrap_or_default()
    }

    /// Effects per key, for every key that has one.
    pub fn effects_by_key(&self) -> HashMap<String, Vec<String>> {
        self.shared.lock().effects_by_key.clone()
    }

    /// Everything received, in arrival order.
    pub fn received(&self) -> Vec<Received> {
        self.shared.lock().log.clone()
    }

    /// Everything received with `key`, in arrival order.
    pub fn received_with(&self, key: &str) -> Vec<Received> {
        self.shared
            .lock()
            .log
            .iter()
            .filter(|r| r.key.as_deref() == Some(key))
            .cloned()
            .collect()
    }

    /// True while some scope of `key` is claimed and not yet completed.
    pub fn is_in_progress(&self, key: &str) -> bool {
        self.shared
            .lock()
            .entries
            .iter()
            .any(|(scope, entry)| scope.key == key && matches!(entry.state, EntryState::InProgress))
    }

    /// Requests (and detached effects) still being handled.
    pub fn in_flight(&self) -> usize {
        self.shared.lock().in_flight
    }

    /// Waits (bounded) until nothing is in flight for `key`: holds and slow
    /// responses of attempts the client gave up on have finished.
    pub async fn wait_idle_for(&self, key: &str, limit: Duration) {
        super::wait_until(
            &format!("the server to finish with key {key}"),
            limit,
            || {
                self.shared
                    .lock()
                    .in_flight_by_key
                    .get(key)
                    .is_none_or(|n| *n == 0)
            },
        )
        .await;
    }
}

impl IdempotentServer for ReferenceServer {
    async fn start(config: Config) -> Self {
        ReferenceServer::start(config).await
    }

    fn url(&self) -> &str {
        &self.url
    }

    fn plan(&self, key: &str, faults: &[Fault]) {
        ReferenceServer::plan(self, key, faults.iter().copied());
    }

    fn result_ids(&self, key: &str) -> Vec<String> {
        ReferenceServer::result_ids(self, key)
    }

    fn received_with(&self, key: &str) -> Vec<Received> {
        ReferenceServer::received_with(self, key)
    }

    fn is_in_progress(&self, key: &str) -> bool {
        ReferenceServer::is_in_progress(self, key)
    }

    fn in_flight(&self) -> usize {
        ReferenceServer::in_flight(self)
    }
}

impl Drop for ReferenceServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

type Reply = Response<Full<Bytes>>;

fn reply(status: u16, body: &str) -> Reply {
    let mut response = Response::new(Full::new(Bytes::from(body.to_owned())));
    *response.status_mut() = StatusCode::from_u16(status).expect("valid status");
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

fn header(request: &hyper::http::request::Parts, name: &str) -> Option<String> {
    request
        .headers
        .get(name)
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
}

async fn handle(shared: Arc<Shared>, request: Request<Incoming>) -> Result<Reply, Dropped> {
    let (parts, body) = request.into_parts();
    // Read the whole request first: the client has then fully sent it, so a drop
    // below is a response lost after delivery, not a refused upload.
    let body = body.collect().await.map_err(|_| Dropped)?.to_bytes();
    let key = header(&parts, "idempotency-key");
    let _in_flight = InFlight::enter(&shared, key.as_deref());
    let client = header(&parts, "authorization").unwrap_or_else(|| "anonymous".to_owned());
    let (seq, fault) = {
        let mut state = shared.lock();
        let fault = next_fault(&mut state, &shared.config, key.as_deref())
            .filter(|fault| *fault != Fault::Clean);
        let seq = state.log.len();
        state.log.push(Received {
            seq,
            at: Instant::now(),
            method: parts.method.to_string(),
            path: parts.uri.path().to_owned(),
            client: client.clone(),
            key: key.clone(),
            request_id: header(&parts, "x-request-id"),
            fault,
            handled: Handled::Pending,
            responded: false,
        });
        (seq, fault)
    };

    match fault {
        Some(Fault::Unavailable { retry_after_secs }) => {
            let mut response = reply(503, r#"{"error":"unavailable"}"#);
            if let Some(secs) = retry_after_secs {
                response
                    .headers_mut()
                    .insert(hyper::header::RETRY_AFTER, secs.into());
            }
            shared.set_handled(seq, Handled::Unavailable503, true);
            return Ok(response);
        }
        Some(Fault::TooManyRequests { retry_after_secs }) => {
            let mut response = reply(429, r#"{"error":"rate_limited"}"#);
            if let Some(secs) = retry_after_secs {
                response
                    .headers_mut()
                    .insert(hyper::header::RETRY_AFTER, secs.into());
            }
            shared.set_handled(seq, Handled::TooManyRequests429, true);
            return Ok(response);
        }
        Some(Fault::DropBeforeCommit) => {
            shared.set_handled(seq, Handled::DroppedBeforeCommit, false);
            return Err(Dropped);
        }
        _ => {}
    }

    let (response, handled) = match (&parts.method, parts.uri.path()) {
        (&Method::POST, route @ ("/payments" | "/refunds")) => {
            create(&shared, fault, client, route, key, &body).await?
        }
        (&Method::GET, "/health") => (reply(200, r#"{"ok":true}"#), Handled::Ok200),
        _ => (reply(404, r#"{"error":"not_found"}"#), Handled::NotFound404),
    };

    match fault {
        Some(Fault::DropAfterCommit) => {
            shared.set_handled(seq, handled, false);
            Err(Dropped)
        }
        Some(Fault::GatewayTimeoutAfterCommit) => {
            // The server's answer (`handled`) never reaches the client.
            shared.set_handled(seq, handled, false);
            Ok(reply(504, r#"{"error":"gateway_timeout"}"#))
        }
        Some(Fault::SlowResponse(delay)) => {
            shared.set_handled(seq, handled, false);
            tokio::time::sleep(delay).await;
            shared.lock().log[seq].responded = true;
            Ok(response)
        }
        _ => {
            shared.set_handled(seq, handled, true);
            Ok(response)
        }
    }
}

fn next_fault(state: &mut State, config: &Config, key: Option<&str>) -> Option<Fault> {
    if let Some(fault) = key
        .and_then(|key| state.plans.get_mut(key))
        .and_then(VecDeque::pop_front)
    {
        return Some(fault);
    }
    if let Some(fault) = state.script.pop_front() {
        return Some(fault);
    }
    let random = config.random_faults?;
    let rng = state.rng.as_mut()?;
    if !rng.random_bool(random.probability) {
        return None;
    }
    let max_ms = u64::try_from(random.max_delay.as_millis()).unwrap_or(u64::MAX);
    let delay = Duration::from_millis(rng.random_range(0..=max_ms));
    Some(match rng.random_range(0..8) {
        0 => Fault::Unavailable {
            retry_after_secs: None,
        },
        1 => Fault::TooManyRequests {
            retry_after_secs: None,
        },
        2 => Fault::DropBeforeCommit,
        3 => Fault::RollbackBeforeCommit,
        4 => Fault::HoldInProgress(delay),
        5 => Fault::DropAfterCommit,
        6 => Fault::GatewayTimeoutAfterCommit,
        _ => Fault::SlowResponse(delay),
    })
}

/// The idempotent create: claim, effect, store — or 400 / 409 / 422 / replay.
async fn create(
    shared: &Arc<Shared>,
    fault: Option<Fault>,
    client: String,
    route: &str,
    key: Option<String>,
    body: &Bytes,
) -> Result<(Reply, Handled), Dropped> {
    let Some(key) = key else {
        return Ok((
            reply(400, r#"{"error":"idempotency_key_required"}"#),
            Handled::MissingKey400,
        ));
    };
    let Ok(payload) = serde_json::from_slice::<serde_json::Value>(body) else {
        return Ok((
            reply(400, r#"{"error":"invalid_json"}"#),
            Handled::BadPayload400,
        ));
    };
    let fingerprint = canonical_json(&payload);
    let scope = Scope {
        client,
        method: "POST".to_owned(),
        route: route.to_owned(),
        key: key.clone(),
    };

    // The atomic claim: look up and insert under one lock.
    let claim = {
        let mut state = shared.lock();
        if let (Some(ttl), Some(entry)) = (shared.config.ttl, state.entries.get(&scope)) {
            if let EntryState::Completed { at, .. } = entry.state {
                if at.elapsed() >= ttl {
                    state.entries.remove(&scope);
                }
            }
        }
        match state.entries.get(&scope) {
            Some(entry) if entry.fingerprint != fingerprint => Claim::Mismatch,
            Some(Entry {
                state: EntryState::InProgress,
                ..
            }) => Claim::InProgress,
            Some(Entry {
                state:
                    EntryState::Completed {
                        status, body, id, ..
                    },
                ..
            }) => Claim::Replay {
                status: *status,
                body: body.clone(),
                id: id.clone(),
            },
            None => {
                state.entries.insert(
                    scope.clone(),
                    Entry {
                        fingerprint,
                        state: EntryState::InProgress,
                    },
                );
                Claim::New
            }
        }
    };

    Ok(match claim {
        Claim::Mismatch => (
            reply(
                422,
                r#"{"error":"idempotency_key_reused_with_different_payload"}"#,
            ),
            Handled::Mismatch422,
        ),
        Claim::InProgress => (
            reply(409, r#"{"error":"request_in_progress"}"#),
            Handled::InProgress409,
        ),
        Claim::Replay { status, body, id } => {
            let mut response = reply(status, &body);
            response.headers_mut().insert(
                "idempotent-replayed",
                hyper::header::HeaderValue::from_static("true"),
            );
            (response, Handled::Replayed(id))
        }
        Claim::New => {
            // The transaction runs on its own task, as a database transaction
            // completes whether or not the client is still connected.
            let guard = InFlight::enter(shared, Some(&key));
            let shared = shared.clone();
            let prefix = if route == "/refunds" { "re" } else { "pay" };
            let work = tokio::spawn(async move {
                let _guard = guard;
                transaction(&shared, scope, fault, prefix).await
            });
            work.await.map_err(|_| Dropped)?
        }
    })
}

async fn transaction(
    shared: &Shared,
    scope: Scope,
    fault: Option<Fault>,
    prefix: &str,
) -> (Reply, Handled) {
    if let Some(Fault::HoldInProgress(hold)) = fault {
        tokio::time::sleep(hold).await;
    }
    let mut state = shared.lock();
    if fault == Some(Fault::RollbackBeforeCommit) {
        // Nothing was stored; the key is released so a retry can run the effect.
        state.entries.remove(&scope);
        return (
            reply(503, r#"{"error":"rolled_back"}"#),
            Handled::RolledBack503,
        );
    }
    // Commit: the effect and the key's stored result, together.
    state.effects += 1;
    let id = format!("{prefix}_{}", state.effects);
    let body = serde_json::json!({ "id": id, "status": "succeeded" }).to_string();
    state
        .effects_by_key
        .entry(scope.key.clone())
        .or_default()
        .push(id.clone());
    let entry = state
        .entries
        .get_mut(&scope)
        .expect("an in-progress key is only removed by its own rollback");
    entry.state = EntryState::Completed {
        status: 201,
        body: body.clone(),
        id: id.clone(),
        at: Instant::now(),
    };
    (reply(201, &body), Handled::Created(id))
}

/// JSON re-serialised with object keys sorted at every depth, so that payloads
/// differing only in key order or whitespace share a fingerprint. (serde_json's Map
/// is a BTreeMap unless `preserve_order` is on somewhere in the build; sorting here
/// does not depend on that.)
pub fn canonical_json(value: &serde_json::Value) -> String {
    fn sorted(value: &serde_json::Value) -> serde_json::Value {
        match value {
            serde_json::Value::Object(map) => {
                let ordered: BTreeMap<&String, serde_json::Value> =
                    map.iter().map(|(k, v)| (k, sorted(v))).collect();
                let mut out = serde_json::Map::new();
                for (k, v) in ordered {
                    out.insert(k.clone(), v);
                }
                serde_json::Value::Object(out)
            }
            serde_json::Value::Array(items) => {
                serde_json::Value::Array(items.iter().map(sorted).collect())
            }
            other => other.clone(),
        }
    }
    // With `preserve_order` the Map keeps insertion order, which `sorted` made
    // sorted; without it the Map is a BTreeMap. Either way: sorted keys.
    sorted(value).to_string()
}
