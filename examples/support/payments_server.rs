//! A tiny payments API on 127.0.0.1 with scripted faults, shared by the examples
//! (`#[path]`-included; not part of the library).
//!
//! The server half is `tower-idempotency`: `POST /payments` is an axum route behind
//! its `IdempotencyLayer` (in-memory store). The layer, not this file, decides: a new
//! key runs the handler (one payment, `201 {"payment_id":"pay_N"}`); a retry of a
//! finished key gets the stored response, marked `idempotent-replayed: true`; the same
//! key with another body gets `422`; no key gets `400`. `POST /slow` (no layer)
//! answers after 3 s.
//!
//! The scripted faults sit where they happen in a deployment, so what the examples
//! show is the layer's own behaviour:
//! * [`Fault::Unavailable`] is answered by the front (an overloaded proxy) before the
//!   layer sees the request: nothing claimed, nothing run;
//! * [`Fault::CommitThenDrop`] lets the request through the layer and the handler —
//!   the payment is made and the layer has stored the response — and then closes the
//!   connection without answering: a lost response. The retry is the layer's replay.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, Request, Response, StatusCode};
use axum::routing::post;
use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tower::ServiceExt;
use tower_idempotency::{IdempotencyLayer, MemoryStore, SinglePrincipal};

/// Most connections the server accepts (an example makes a handful).
const MAX_CONNECTIONS: usize = 100;

/// What happens to the next `POST /payments`, in script order.
#[derive(Debug, Clone, Copy)]
pub enum Fault {
    /// `503` with `Retry-After: 1` from the front; the layer never sees the request.
    Unavailable,
    /// The layer and the handler run (payment made, response stored), then the
    /// connection is closed without an answer.
    CommitThenDrop,
}

/// A running payments server; its tasks end with the example's runtime.
pub struct PaymentsServer {
    pub url: String,
    payments: Arc<AtomicU32>,
}

impl PaymentsServer {
    pub async fn start(script: Vec<Fault>) -> Result<Self, Box<dyn std::error::Error>> {
        let payments = Arc::new(AtomicU32::new(0));
        // One caller in the examples; a real API scopes keys to the account its
        // authentication layer found (`IdempotencyLayer::builder(..).principal(..)`).
        let idempotency = IdempotencyLayer::builder(MemoryStore::new())
            .principal(SinglePrincipal)
            .build()?;
        let app = Router::new()
            .route("/payments", post(pay).route_layer(idempotency))
            .route("/slow", post(slow))
            .with_state(payments.clone());
        let script = Arc::new(Mutex::new(VecDeque::from(script)));

        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        tokio::spawn(async move {
            for _ in 0..MAX_CONNECTIONS {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (app, script) = (app.clone(), script.clone());
                let service =
                    service_fn(move |request| front(app.clone(), script.clone(), request));
                tokio::spawn(async move {
                    // An error is a connection dropped on purpose (or by the client).
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Ok(Self { url, payments })
    }

    /// Payments made so far (handler runs, not responses sent).
    pub fn effects(&self) -> u32 {
        self.payments.load(Ordering::SeqCst)
    }
}

/// The payment itself: runs once per key; the layer keeps what it returns.
async fn pay(
    State(payments): State<Arc<AtomicU32>>,
) -> (StatusCode, [(header::HeaderName, &'static str); 1], String) {
    let id = payments.fetch_add(1, Ordering::SeqCst) + 1;
    (
        StatusCode::CREATED,
        [(header::CONTENT_TYPE, "application/json")],
        format!(r#"{{"payment_id":"pay_{id}"}}"#),
    )
}

async fn slow() -> &'static str {
    tokio::time::sleep(Duration::from_secs(3)).await;
    "{}"
}

/// The service error that makes hyper close the connection without writing a
/// response.
#[derive(Debug)]
struct Dropped;

impl fmt::Display for Dropped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("connection dropped on purpose")
    }
}

impl std::error::Error for Dropped {}

/// In front of the app: plays the next scripted fault of a `POST /payments`.
async fn front(
    app: Router,
    script: Arc<Mutex<VecDeque<Fault>>>,
    request: Request<Incoming>,
) -> Result<Response<Body>, Dropped> {
    let fault = if request.uri().path() == "/payments" {
        script.lock().unwrap().pop_front()
    } else {
        None
    };
    if let Some(Fault::Unavailable) = fault {
        return Ok(Response::builder()
            .status(StatusCode::SERVICE_UNAVAILABLE)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::RETRY_AFTER, "1")
            .body(Body::from(r#"{"error":"overloaded"}"#))
            .expect("a valid response"));
    }
    let response = match app.oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    };
    match fault {
        // The layer returned the response, so it has already stored it.
        Some(Fault::CommitThenDrop) => Err(Dropped),
        _ => Ok(response),
    }
}
