//! SQLite's one writer: while a strong-mode effect holds it, replays, 422s and 409s
//! are answered from the reader; a first execution waits for it at most the bound,
//! then gets 503 and runs nothing; an effect whose caller went away still commits.
//!
//! An effect whose body starts with `hold` holds the writer until the test opens its
//! gate, so "answered while the writer was held" is checked by order, not by timing.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::Request;
use axum::routing::post;
use axum::Router;
use bytes::Bytes;
use http::StatusCode;
use tower_idempotency::{IdempotencyLayer, SqliteStore, StoredResponse, Transactional};

use crate::support::{account, send, Answer, Req, TempDir};

/// How long a held effect waits for its gate before giving up (a test that failed).
const GATE_LIMIT: Duration = Duration::from_secs(5);

/// A server with a strong route (`/strong`) and a layer route (`/layer`) on one store.
struct Server {
    addr: SocketAddr,
    strong: Transactional<SqliteStore>,
    /// Effects and handlers started, strong and layer together.
    runs: Arc<AtomicU64>,
    /// Set while a held strong-mode effect (which holds the writer) is inside its gate.
    holding: Arc<AtomicBool>,
    /// Set while a held layer-mode handler (which holds a claim, not the writer) waits.
    layer_holding: Arc<AtomicBool>,
    open_strong: SyncSender<()>,
    open_layer: Arc<tokio::sync::Semaphore>,
    _dir: TempDir,
}

impl Server {
    async fn start(writer_wait: Duration) -> Self {
        let dir = TempDir::new("writer");
        let store = SqliteStore::open(dir.path().join("keys.db"))
            .unwrap()
            .writer_wait(writer_wait);
        let layer = IdempotencyLayer::builder(store.clone())
            .principal(account)
            .build()
            .unwrap();
        let strong = layer.transactional(store);
        let runs = Arc::new(AtomicU64::new(0));
        let holding = Arc::new(AtomicBool::new(false));
        let layer_holding = Arc::new(AtomicBool::new(false));
        let (open_strong, gate) = sync_channel::<()>(1);
        let gate = Arc::new(Mutex::new(gate));
        let open_layer = Arc::new(tokio::sync::Semaphore::new(0));

        let layer_route = {
            let (runs, holding, open) = (runs.clone(), layer_holding.clone(), open_layer.clone());
            post(move |body: String| async move {
                runs.fetch_add(1, Ordering::SeqCst);
                if body.starts_with("hold") {
                    holding.store(true, Ordering::SeqCst);
                    open.acquire().await.unwrap().forget();
                    holding.store(false, Ordering::SeqCst);
                }
                (StatusCode::CREATED, format!("layer {body}"))
            })
            .layer(layer)
        };
        let strong_route = {
            let (strong, runs, holding) = (strong.clone(), runs.clone(), holding.clone());
            post(move |req: Request| async move {
                let effect = held_effect(runs, holding, gate);
                strong.handle(req, effect).await
            })
        };
        let app = Router::new()
            .route("/strong", strong_route)
            .route("/layer", layer_route);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self {
            addr,
            strong,
            runs,
            holding,
            layer_holding,
            open_strong,
            open_layer,
            _dir: dir,
        }
    }

    fn runs(&self) -> u64 {
        self.runs.load(Ordering::SeqCst)
    }

    /// Waits (bounded) until a held strong-mode effect holds the writer.
    async fn wait_until_holding(&self) {
        wait_for(&self.holding).await;
    }

    /// Sends a request and checks it was answered while the writer was still held.
    async fn send_while_held(&self, req: &Req) -> Answer {
        let answer = send(self.addr, req).await;
        assert!(
            self.holding.load(Ordering::SeqCst),
            "{req:?} was answered only after the held effect let go: {answer:?}"
        );
        answer
    }
}

/// The strong route's effect: counts its run; a body starting with `hold` keeps the
/// writer until the gate opens.
fn held_effect(
    runs: Arc<AtomicU64>,
    holding: Arc<AtomicBool>,
    gate: Arc<Mutex<Receiver<()>>>,
) -> impl FnOnce(
    &tower_idempotency::rusqlite::Transaction<'_>,
    &http::request::Parts,
    &Bytes,
) -> Result<StoredResponse, tower_idempotency::Rollback>
       + Send
       + 'static {
    move |_, _, body| {
        let run = runs.fetch_add(1, Ordering::SeqCst) + 1;
        if body.starts_with(b"hold") {
            holding.store(true, Ordering::SeqCst);
            let opened = gate.lock().unwrap().recv_timeout(GATE_LIMIT);
            holding.store(false, Ordering::SeqCst);
            assert!(opened.is_ok(), "the gate was never opened");
        }
        Ok(StoredResponse {
            status: StatusCode::CREATED,
            headers: vec![],
            body: Bytes::from(format!("strong run {run}")),
        })
    }
}

/// Waits (bounded) until `flag` is set.
async fn wait_for(flag: &AtomicBool) {
    let start = Instant::now();
    while !flag.load(Ordering::SeqCst) {
        assert!(start.elapsed() < GATE_LIMIT, "nothing started holding");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

fn spawn_send(addr: SocketAddr, req: Req) -> tokio::task::JoinHandle<Answer> {
    tokio::spawn(async move { send(addr, &req).await })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replays_mismatches_and_409s_are_answered_while_an_effect_holds_the_writer() {
    let server = Server::start(SqliteStore::DEFAULT_WRITER_WAIT).await;
    let done_strong = Req::post("/strong", "done-strong", "pay");
    let done_layer = Req::post("/layer", "done-layer", "pay");
    assert_eq!(send(server.addr, &done_strong).await.status, 201);
    assert_eq!(send(server.addr, &done_layer).await.status, 201);
    // A layer-mode key in progress (its claim committed, its handler held).
    let in_flight = Req::post("/layer", "in-flight", "hold");
    let in_flight_first = spawn_send(server.addr, in_flight.clone());
    wait_for(&server.layer_holding).await;
    // A strong-mode effect holds the writer.
    let busy = spawn_send(server.addr, Req::post("/strong", "busy", "hold"));
    server.wait_until_holding().await;
    let runs_before = server.runs();
    assert_eq!(runs_before, 4, "two finished, two held");

    let replay = server.send_while_held(&done_strong).await;
    assert_eq!((replay.status, replay.replayed()), (201, true));
    assert_eq!(replay.text(), "strong run 1");
    let replay = server.send_while_held(&done_layer).await;
    assert_eq!((replay.status, replay.replayed()), (201, true));
    let other = server
        .send_while_held(&Req::post("/strong", "done-strong", "another"))
        .await;
    assert_eq!(other.status, 422);
    let conflict = server.send_while_held(&in_flight).await;
    assert_eq!(conflict.status, 409);
    assert_eq!(server.runs(), runs_before, "nothing ran again");

    server.open_strong.send(()).unwrap();
    server.open_layer.add_permits(1);
    assert_eq!(busy.await.unwrap().status, 201);
    assert_eq!(in_flight_first.await.unwrap().status, 201);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_execution_that_waits_past_the_bound_gets_503_and_runs_nothing() {
    let bound = Duration::from_millis(300);
    let server = Server::start(bound).await;
    let busy = spawn_send(server.addr, Req::post("/strong", "busy", "hold"));
    server.wait_until_holding().await;

    for req in [
        Req::post("/strong", "waits-strong", "pay"),
        Req::post("/layer", "waits-layer", "pay"),
    ] {
        let sent = Instant::now();
        let answer = server.send_while_held(&req).await;
        let took = sent.elapsed();
        assert_eq!(answer.status, 503, "{req:?}: {}", answer.text());
        assert_eq!(answer.headers["retry-after"], "1");
        assert!(
            took >= bound,
            "{req:?}: answered after {took:?}, before the bound"
        );
        assert!(took < bound + Duration::from_secs(3), "{req:?}: {took:?}");
    }
    assert_eq!(server.runs(), 1, "only the held effect ran");

    server.open_strong.send(()).unwrap();
    assert_eq!(busy.await.unwrap().status, 201);
    let retried = send(server.addr, &Req::post("/strong", "waits-strong", "pay")).await;
    assert_eq!((retried.status, retried.replayed()), (201, false));
    assert_eq!(server.runs(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_strong_request_still_commits_and_its_retry_replays() {
    let server = Server::start(SqliteStore::DEFAULT_WRITER_WAIT).await;
    let request = || {
        http::Request::post("/strong")
            .header("idempotency-key", "dropped")
            .header("x-account", "acct_alice")
            .body(http_body_util::Full::new(Bytes::from_static(b"hold")))
            .unwrap()
    };
    let holding = server.holding.clone();
    let (open, gate) = sync_channel::<()>(1);
    let gate = Arc::new(Mutex::new(gate));
    let handle = server.strong.handle(
        request(),
        held_effect(server.runs.clone(), holding.clone(), gate.clone()),
    );
    // The caller gives up mid-effect: its future is dropped.
    let gave_up = tokio::time::timeout(Duration::from_millis(200), async {
        let answer = handle.await;
        panic!("answered before the gate opened: {:?}", answer.status())
    })
    .await;
    assert!(gave_up.is_err());
    assert!(
        holding.load(Ordering::SeqCst),
        "the effect is still running"
    );
    open.send(()).unwrap();

    let retry = server
        .strong
        .handle(request(), held_effect(server.runs.clone(), holding, gate))
        .await;
    assert_eq!(retry.status(), StatusCode::CREATED);
    assert_eq!(retry.headers()["idempotent-replayed"], "true");
    assert_eq!(server.runs(), 1, "the effect ran once");
}
