//! An axum route behind the layer, and a retried POST replayed.
//!
//! ```text
//! cargo run -p tower-idempotency --example axum_route
//! ```
//!
//! The example starts the server on 127.0.0.1, sends the same POST twice with one
//! `Idempotency-Key` (a client retrying after a lost response), then the same key with
//! another body, and prints what came back: one payment, a replay, a 422.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use tower_idempotency::{IdempotencyLayer, MemoryStore, SinglePrincipal};

async fn pay(State(payments): State<Arc<AtomicU64>>, amount: String) -> (StatusCode, String) {
    let id = payments.fetch_add(1, Ordering::SeqCst) + 1;
    (StatusCode::CREATED, format!("payment {id} of {amount}"))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let payments = Arc::new(AtomicU64::new(0));
    // The README's quick start, as is: one caller, no auth layer. Behind an auth
    // layer, `.principal(..)` reads the account it found (the README shows how).
    let idempotency = IdempotencyLayer::builder(MemoryStore::new())
        .principal(SinglePrincipal)
        .build()?;
    let app = Router::new()
        .route("/payments", post(pay).route_layer(idempotency))
        .with_state(payments.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });

    for body in ["1500", "1500", "9999"] {
        let (status, replayed, text) = post_payment(addr, "order-42", body).await?;
        println!("POST {body:>4} with key order-42 -> {status} replayed={replayed}: {text}");
    }
    println!("payments made: {}", payments.load(Ordering::SeqCst));
    Ok(())
}

async fn post_payment(
    addr: std::net::SocketAddr,
    key: &str,
    body: &'static str,
) -> Result<(u16, bool, String), Box<dyn std::error::Error>> {
    let stream = tokio::net::TcpStream::connect(addr).await?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    let request = http::Request::post(format!("http://{addr}/payments"))
        .header("host", addr.to_string())
        .header("idempotency-key", key)
        .body(Full::new(Bytes::from_static(body.as_bytes())))?;
    let response = sender.send_request(request).await?;
    let status = response.status().as_u16();
    let replayed = response.headers().contains_key("idempotent-replayed");
    let text = response.into_body().collect().await?.to_bytes();
    Ok((
        status,
        replayed,
        String::from_utf8_lossy(&text).into_owned(),
    ))
}
