//! The response body read inside the intent (`RequestBuilder::whole_body`): a body
//! cut part-way is a failed attempt, resent under the key and answered by the
//! layer's replay; a keyless POST stays unknown; a body over the limit and a `410`
//! on the resend end with what they prove. A cutting proxy sits between the client
//! and a `tower-idempotency` layer server, both on 127.0.0.1.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::routing::post;
use axum::Router;
use reqwest_resilience::{ResilientClient, ResponseExt, TransportFailure};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tower_idempotency::{IdempotencyLayer, MemoryStore, SinglePrincipal};

use crate::support::recording_client;

/// The handler's answer: long enough that a cut after 1,000 bytes lands in the body.
fn receipt(n: usize) -> String {
    format!("{{\"payment\":{n},\"note\":\"{}\"}}", "x".repeat(4000))
}

/// A layer server whose handler counts its effects; `max_stored_body` as given.
async fn layer_server(max_stored_body: usize) -> (std::net::SocketAddr, Arc<AtomicUsize>) {
    let effects = Arc::new(AtomicUsize::new(0));
    let layer = IdempotencyLayer::builder(MemoryStore::new())
        .principal(SinglePrincipal)
        .max_stored_body(max_stored_body)
        .build()
        .unwrap();
    let counted = Arc::clone(&effects);
    let handler = move || {
        let counted = Arc::clone(&counted);
        async move {
            let n = counted.fetch_add(1, Ordering::SeqCst) + 1;
            (http::StatusCode::CREATED, receipt(n))
        }
    };
    let app = Router::new()
        .route("/payments", post(handler.clone()).get(handler))
        .layer(layer);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, effects)
}

/// Forwards connections to `upstream`; the first `cuts` connections get only the
/// first 1,000 bytes of the answer (its head and part of its body), then close.
async fn cutting_proxy(upstream: std::net::SocketAddr, cuts: usize) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/payments", listener.local_addr().unwrap());
    tokio::spawn(async move {
        // Bounded: no test makes more than a handful of connections.
        for n in 0..64 {
            let Ok((client, _)) = listener.accept().await else {
                return;
            };
            let server = TcpStream::connect(upstream).await.unwrap();
            tokio::spawn(relay(client, server, (n < cuts).then_some(1000)));
        }
    });
    url
}

async fn relay(client: TcpStream, server: TcpStream, cut_after: Option<usize>) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let up = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
    });
    let mut sent = 0;
    let mut buf = vec![0u8; 512];
    loop {
        let n = match server_read.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let n = cut_after.map_or(n, |limit| n.min(limit - sent));
        if client_write.write_all(&buf[..n]).await.is_err() {
            break;
        }
        sent += n;
        if cut_after == Some(sent) {
            break;
        }
    }
    up.abort();
    // Dropping both halves closes the client's connection mid-body.
}

#[tokio::test]
async fn a_body_cut_part_way_is_resent_under_the_key_and_replayed_whole() {
    let (upstream, effects) = layer_server(1 << 20).await;
    let url = cutting_proxy(upstream, 1).await;
    let (client, _) = recording_client(|p| p);
    let response = client
        .post(&url)
        .body("1500")
        .whole_body()
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    assert_eq!(response.headers()["idempotent-replayed"], "true");
    let log = response.attempt_log().unwrap().attempts().to_vec();
    assert_eq!(log.len(), 2, "{log:?}");
    assert_eq!(
        *log[0].outcome(),
        reqwest_resilience::AttemptOutcome::Failed(TransportFailure::ResponseBodyCut)
    );
    assert_eq!(response.url().as_str(), url, "the response keeps its URL");
    assert_eq!(
        response.text().await.unwrap(),
        receipt(1),
        "whole, from the replay"
    );
    assert_eq!(effects.load(Ordering::SeqCst), 1, "one effect");
}

#[tokio::test]
async fn a_keyless_post_cut_part_way_is_not_resent_and_its_outcome_is_unknown() {
    // The layer requires a key; a keyless POST needs a route without it.
    let effects = Arc::new(AtomicUsize::new(0));
    let plain = Router::new().route(
        "/payments",
        post({
            let effects = Arc::clone(&effects);
            move || {
                let n = effects.fetch_add(1, Ordering::SeqCst) + 1;
                async move { receipt(n) }
            }
        }),
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let upstream = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, plain).await.unwrap() });
    let url = cutting_proxy(upstream, 1).await;
    let (client, _) = recording_client(|p| p);
    let error = client
        .post(&url)
        .without_idempotency_key()
        .body("1500")
        .whole_body()
        .send()
        .await
        .unwrap_err();
    assert!(error.is_outcome_unknown(), "{error}");
    assert_eq!(error.attempts(), 1);
    assert_eq!(
        error.transport_failure(),
        Some(TransportFailure::ResponseBodyCut)
    );
    assert_eq!(effects.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn an_idempotent_get_cut_part_way_is_resent() {
    let (upstream, effects) = layer_server(1 << 20).await;
    let url = cutting_proxy(upstream, 1).await;
    let (client, _) = recording_client(|p| p);
    let response = client.get(&url).whole_body().send().await.unwrap();
    assert_eq!(response.status(), 201);
    assert_eq!(response.text().await.unwrap(), receipt(2));
    assert_eq!(
        effects.load(Ordering::SeqCst),
        2,
        "a GET is not deduplicated"
    );
}

#[tokio::test]
async fn a_body_over_the_limit_is_final_and_its_outcome_known() {
    let (upstream, effects) = layer_server(1 << 20).await;
    let url = cutting_proxy(upstream, 0).await;
    let (client, _) = recording_client(|p| p);
    let error = client
        .post(&url)
        .body("1500")
        .whole_body_limit(100)
        .send()
        .await
        .unwrap_err();
    assert!(!error.is_outcome_unknown(), "{error}");
    assert!(error.is_not_retryable(), "{error}");
    assert_eq!(error.attempts(), 1);
    assert_eq!(
        error.transport_failure(),
        Some(TransportFailure::ResponseTooLarge)
    );
    assert_eq!(effects.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_resend_answered_gone_says_the_effect_happened() {
    // The server keeps at most 100 bytes: this key's answer is finished, not kept.
    let (upstream, effects) = layer_server(100).await;
    let url = cutting_proxy(upstream, 1).await;
    let (client, _) = recording_client(|p| p);
    let error = client
        .post(&url)
        .body("1500")
        .whole_body()
        .send()
        .await
        .unwrap_err();
    assert!(error.is_completed_not_kept(), "{error}");
    assert!(
        !error.is_outcome_unknown(),
        "the server said the key finished: {error}"
    );
    assert_eq!(error.last_status(), Some(http::StatusCode::GONE));
    assert!(error.to_string().contains("the effect happened"), "{error}");
    assert_eq!(effects.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn without_whole_body_send_returns_at_the_headers() {
    let (upstream, effects) = layer_server(1 << 20).await;
    let url = cutting_proxy(upstream, 1).await;
    let client = ResilientClient::new();
    let response = client.post(&url).body("1500").send().await.unwrap();
    assert_eq!(response.status(), 201);
    // The cut reaches the caller, who reads the body after the intent ended.
    assert!(response.bytes().await.is_err());
    assert_eq!(effects.load(Ordering::SeqCst), 1);
}
