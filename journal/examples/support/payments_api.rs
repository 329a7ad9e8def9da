//! The payments API the outbox examples' relays call, on 127.0.0.1
//! (`#[path]`-included; not part of the library).

#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use tower_idempotency::{IdempotencyLayer, MemoryStore, SinglePrincipal};

/// The payments API the relay calls: a route behind tower-idempotency's layer on
/// 127.0.0.1 (a key executes once; a retry gets the stored answer). It wants the
/// credential the relay adds (the journal never stores it), and records each
/// payment's key.
pub struct PaymentsApi {
    pub url: String,
    made: Arc<Mutex<Vec<String>>>,
}

impl PaymentsApi {
    pub async fn start() -> Result<Self, Box<dyn std::error::Error>> {
        let made = Arc::new(Mutex::new(Vec::new()));
        let recorded = Arc::clone(&made);
        let pay = move |headers: HeaderMap| {
            let recorded = Arc::clone(&recorded);
            async move {
                let signed = headers
                    .get("authorization")
                    .is_some_and(|value| value == "Bearer sk_test_example");
                if !signed {
                    return (StatusCode::UNAUTHORIZED, String::new());
                }
                let key = headers
                    .get("idempotency-key")
                    .and_then(|value| value.to_str().ok())
                    .unwrap_or_default()
                    .to_owned();
                let mut made = recorded.lock().unwrap_or_else(|e| e.into_inner());
                made.push(key);
                (
                    StatusCode::CREATED,
                    format!(r#"{{"payment":{}}}"#, made.len()),
                )
            }
        };
        let layer = IdempotencyLayer::builder(MemoryStore::new())
            .principal(SinglePrincipal)
            .build()?;
        let app = Router::new().route("/payments", post(pay).route_layer(layer));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}/payments", listener.local_addr()?);
        tokio::spawn(async move { axum::serve(listener, app).await });
        Ok(Self { url, made })
    }

    pub fn payments(&self) -> usize {
        self.made.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn payments_with_key(&self, key: &str) -> usize {
        let made = self.made.lock().unwrap_or_else(|e| e.into_inner());
        made.iter().filter(|made| made.as_str() == key).count()
    }

    /// Waits until `n` payments were made (the caller bounds the wait).
    pub async fn wait_for_payments(&self, n: usize) {
        while self.payments() < n {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}
