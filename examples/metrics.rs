//! Metrics through an [`IntentObserver`]: attempts, retries, and give-ups by reason.
//!
//! The counters here are plain atomics so the example needs nothing else; in a
//! service, put your metrics crate's counters in their place. The observer uses
//! only the synchronous hooks, so intents never wait for it and allocate nothing
//! for it.
//!
//! Starts its own flaky server on 127.0.0.1, sends 20 intents through one client,
//! and prints what the observer counted.
//!
//! Run: `cargo run --example metrics`

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest_resilience::watch::{AttemptFinished, IntentEnd, IntentObserver, RetryScheduled};
use reqwest_resilience::{Backoff, ResilientClient, RetryPolicy};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// What a dashboard would show.
#[derive(Default)]
struct Metrics {
    intents: AtomicU64,
    attempts: AtomicU64,
    retries: AtomicU64,
    gave_up: Mutex<BTreeMap<&'static str, u64>>,
    outcome_unknown: AtomicU64,
}

/// The observer: counts, never blocks.
struct Count(Arc<Metrics>);

impl IntentObserver for Count {
    fn attempt_finished(&self, _: &AttemptFinished<'_>) {
        self.0.attempts.fetch_add(1, Ordering::Relaxed);
    }

    fn retry_scheduled(&self, _: &RetryScheduled<'_>) {
        self.0.retries.fetch_add(1, Ordering::Relaxed);
    }

    fn finished(&self, end: &IntentEnd<'_>) {
        self.0.intents.fetch_add(1, Ordering::Relaxed);
        if let Some(reason) = end.gave_up() {
            *self
                .0
                .gave_up
                .lock()
                .unwrap()
                .entry(reason.as_str())
                .or_default() += 1;
        }
        if end.is_outcome_unknown() {
            self.0.outcome_unknown.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = start_flaky_server().await?;
    let metrics = Arc::new(Metrics::default());
    let policy = RetryPolicy::builder()
        .max_attempts(3)
        .backoff(Backoff::full_jitter(
            Duration::from_millis(5),
            Duration::from_millis(50),
        ))
        .observer(Count(metrics.clone()))
        .build()?;
    let client = ResilientClient::with_policy(policy);

    for order in 0..20 {
        let result = client.get(format!("{url}/orders/{order}")).send().await;
        let shown = match &result {
            Ok(response) => response.status().to_string(),
            Err(error) => error.to_string(),
        };
        println!("GET /orders/{order:<2} -> {shown}");
    }

    let gave_up = metrics.gave_up.lock().unwrap().clone();
    println!(
        "\nintents {}  attempts {}  retries {}  outcome unknown {}  gave up {gave_up:?}",
        metrics.intents.load(Ordering::Relaxed),
        metrics.attempts.load(Ordering::Relaxed),
        metrics.retries.load(Ordering::Relaxed),
        metrics.outcome_unknown.load(Ordering::Relaxed),
    );
    Ok(())
}

/// A raw HTTP/1.1 server on 127.0.0.1: the n-th request gets 503 when `n % 3 != 0`
/// and `n % 7 != 0`, so some intents succeed on a retry and some give up.
async fn start_flaky_server() -> std::io::Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move {
        // Bounded: 20 intents make at most 60 requests.
        for n in 0u64..60 {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let mut head = [0u8; 4096];
            let _ = socket.read(&mut head).await;
            let reply: &[u8] = if n % 3 == 0 || n % 7 == 0 {
                b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok"
            } else {
                b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            };
            let _ = socket.write_all(reply).await;
            let _ = socket.shutdown().await;
        }
    });
    Ok(url)
}
