//! A real server on 127.0.0.1 (axum behind the layer) whose handlers count their
//! effects, and a plain HTTP/1 client.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tower_idempotency::{IdempotencyLayer, Principal};

/// The server's state: what the handlers did.
pub struct Effects {
    /// Handler entries on the effect routes (one per payment made).
    pub count: AtomicU64,
    /// The bodies of the payments made, in order.
    pub payments: Mutex<Vec<String>>,
    /// A handler whose body starts with `hold` waits here for a permit.
    pub gate: Semaphore,
}

impl Default for Effects {
    fn default() -> Self {
        Self {
            count: AtomicU64::new(0),
            payments: Mutex::new(Vec::new()),
            gate: Semaphore::new(0),
        }
    }
}

impl Effects {
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::SeqCst)
    }

    /// Waits (bounded) until `n` effects have started.
    pub async fn wait_for(&self, n: u64) {
        let start = Instant::now();
        while self.count() < n {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "effect {n} never started"
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
}

/// The principal stands in for what an authentication layer would insert: the
/// `x-account` header names the account, `authorization` is the (changing) credential.
pub fn account(parts: &http::request::Parts) -> Option<Principal> {
    let account = parts.headers.get("x-account")?.to_str().ok()?;
    Some(Principal::new(account))
}

async fn pay(State(effects): State<Arc<Effects>>, body: String) -> Response {
    let id = effects.count.fetch_add(1, Ordering::SeqCst) + 1;
    if body.starts_with("hold") {
        effects.gate.acquire().await.expect("gate open").forget();
    }
    if body.starts_with("slow") {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    effects.payments.lock().unwrap().push(body);
    let mut headers = HeaderMap::new();
    headers.insert("location", format!("/payments/{id}").parse().unwrap());
    headers.insert("content-type", "application/json".parse().unwrap());
    headers.insert("x-not-replayed", "1".parse().unwrap());
    (
        StatusCode::CREATED,
        headers,
        format!("{{\"payment\":{id}}}"),
    )
        .into_response()
}

async fn report(State(effects): State<Arc<Effects>>) -> Response {
    effects.count.fetch_add(1, Ordering::SeqCst);
    (StatusCode::OK, "r".repeat(2000)).into_response()
}

async fn stream(State(effects): State<Arc<Effects>>) -> Response {
    effects.count.fetch_add(1, Ordering::SeqCst);
    let chunks =
        futures_util::stream::iter(["a", "b"].map(|c| Ok::<_, std::io::Error>(Bytes::from(c))));
    Response::new(Body::from_stream(chunks))
}

/// A body of known length (8 bytes) that fails after its first 4 (a broken upstream).
struct Broken {
    sent: bool,
}

impl http_body::Body for Broken {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, std::io::Error>>> {
        if self.sent {
            return std::task::Poll::Ready(Some(Err(std::io::Error::other("upstream broke"))));
        }
        self.sent = true;
        std::task::Poll::Ready(Some(Ok(http_body::Frame::data(Bytes::from_static(
            b"half",
        )))))
    }

    fn size_hint(&self) -> http_body::SizeHint {
        http_body::SizeHint::with_exact(8)
    }
}

async fn broken(State(effects): State<Arc<Effects>>) -> Response {
    effects.count.fetch_add(1, Ordering::SeqCst);
    Response::new(Body::new(Broken { sent: false }))
}

async fn fail(State(effects): State<Arc<Effects>>) -> Response {
    let id = effects.count.fetch_add(1, Ordering::SeqCst) + 1;
    (StatusCode::INTERNAL_SERVER_ERROR, format!("failed {id}")).into_response()
}

async fn list(State(effects): State<Arc<Effects>>) -> Response {
    format!("{}", effects.count()).into_response()
}

async fn replace(State(effects): State<Arc<Effects>>) -> Response {
    effects.count.fetch_add(1, Ordering::SeqCst);
    StatusCode::NO_CONTENT.into_response()
}

/// Starts the server with `layer` in front of every route; returns its address.
pub async fn serve(layer: IdempotencyLayer, effects: Arc<Effects>) -> SocketAddr {
    let app = Router::new()
        .route("/payments", post(pay).get(list).put(replace))
        .route("/refunds", post(pay))
        .route("/reports", post(report))
        .route("/stream", post(stream))
        .route("/fail", post(fail))
        .route("/broken", post(broken))
        .layer(layer)
        .with_state(effects);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

/// A request as a test writes it.
#[derive(Clone, Debug)]
pub struct Req {
    pub method: &'static str,
    pub path: &'static str,
    pub key: Option<String>,
    pub account: Option<&'static str>,
    pub token: &'static str,
    pub body: String,
}

impl Req {
    pub fn post(path: &'static str, key: &str, body: &str) -> Self {
        Self {
            method: "POST",
            path,
            key: Some(key.to_owned()),
            account: Some("acct_alice"),
            token: "token-1",
            body: body.to_owned(),
        }
    }
}

/// An answer as a test reads it.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: Bytes,
}

impl Answer {
    pub fn replayed(&self) -> bool {
        self.headers
            .get("idempotent-replayed")
            .is_some_and(|v| v == "true")
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Sends one request on a new HTTP/1 connection.
pub async fn send(addr: SocketAddr, req: &Req) -> Answer {
    try_send(addr, req).await.expect("an answer")
}

/// Sends one request; `None` when the connection failed or was cut (the server died).
pub async fn try_send(addr: SocketAddr, req: &Req) -> Option<Answer> {
    let stream = TcpStream::connect(addr).await.ok()?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .ok()?;
    tokio::spawn(conn);
    let mut builder = http::Request::builder()
        .method(req.method)
        .uri(format!("http://{addr}{}", req.path))
        .header("host", addr.to_string())
        .header("authorization", format!("Bearer {}", req.token));
    if let Some(key) = &req.key {
        // A newline separates keys: the request carries each as its own header.
        for key in key.split('\n') {
            builder = builder.header("idempotency-key", key);
        }
    }
    if let Some(account) = req.account {
        builder = builder.header("x-account", account);
    }
    let request = builder
        .body(Full::new(Bytes::from(req.body.clone())))
        .unwrap();
    let response = tokio::time::timeout(Duration::from_secs(20), sender.send_request(request))
        .await
        .expect("answer within 20 s")
        .ok()?;
    let (parts, body) = response.into_parts();
    Some(Answer {
        status: parts.status.as_u16(),
        headers: parts.headers,
        body: body.collect().await.ok()?.to_bytes(),
    })
}

/// A directory under the system's temp dir, removed when dropped.
#[cfg(feature = "sqlite")]
pub struct TempDir(std::path::PathBuf);

#[cfg(feature = "sqlite")]
impl TempDir {
    pub fn new(name: &str) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "tower-idempotency-{name}-{}-{n}",
            std::process::id()
        ));
        std::fs::create_dir_all(&path).unwrap();
        Self(path)
    }

    pub fn path(&self) -> &std::path::Path {
        &self.0
    }
}

#[cfg(feature = "sqlite")]
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
