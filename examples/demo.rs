//! One payment intent against a flaky payments server, end to end.
//!
//! Starts its own server on 127.0.0.1 (a tiny idempotent payments API), then:
//! 1. sends one payment that meets `503 + Retry-After: 1`, then a connection dropped
//!    *after* the server committed the payment, then gets the stored `201` replayed —
//!    one payment, not two;
//! 2. reuses the key with a different amount → `422`, returned at once;
//! 3. calls an endpoint slower than the deadline → a typed "deadline exceeded" error
//!    that says the outcome is unknown.
//!
//! Run: `cargo run --example demo`

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest_resilience::{
    AttemptLog, AttemptOutcome, Backoff, ResilientClient, ResponseExt, RetryPolicy,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = PaymentsServer::start().await?;
    let policy = RetryPolicy::builder()
        .max_attempts(4)
        .backoff(Backoff::full_jitter(
            Duration::from_millis(100),
            Duration::from_secs(2),
        ))
        .deadline(Duration::from_secs(5))
        .build()?;
    let client = ResilientClient::with_policy(policy);
    let started = Instant::now();

    println!("1) POST /payments {{\"amount\":500}} — server: 503 + Retry-After: 1, then a lost response, then the stored result\n");
    let response = client
        .post(format!("{}/payments", server.url))
        .header("content-type", "application/json")
        .body(r#"{"amount":500,"currency":"EUR"}"#)
        .send()
        .await?;
    let status = response.status();
    let log = response.attempt_log().cloned().unwrap_or_default();
    let key = server.last_key().unwrap_or_default();
    print_log(&log, &key);
    println!(
        "   -> {status} {}   payments created on the server: {}\n",
        response.text().await?,
        server.effects()
    );

    println!("2) the same key with a different amount");
    let response = client
        .post(format!("{}/payments", server.url))
        .idempotency_key(key.clone())
        .body(r#"{"amount":900,"currency":"EUR"}"#)
        .send()
        .await?;
    println!(
        "   -> {} {}   payments created: {} (refused before any effect)\n",
        response.status(),
        response.text().await?,
        server.effects()
    );

    println!("3) an endpoint slower than a 1.2 s deadline (attempt timeout 0.5 s)");
    let slow_client = ResilientClient::with_policy(
        RetryPolicy::builder()
            .max_attempts(5)
            .deadline(Duration::from_millis(1200))
            .attempt_timeout(Duration::from_millis(500))
            .build()?,
    );
    let error = slow_client
        .post(format!("{}/slow", server.url))
        .send()
        .await
        .expect_err("the deadline must end this intent");
    let key = error
        .idempotency_key()
        .map(|key| key.as_str().to_owned())
        .unwrap_or_default();
    print_log(error.attempt_log(), &key);
    println!(
        "   -> error: {error}\n      reason={:?} elapsed={:?} outcome_unknown={} (reconcile, or retry later with the same key)\n",
        error.reason(),
        error.elapsed(),
        error.is_outcome_unknown()
    );
    println!("demo finished in {:.1?}", started.elapsed());
    Ok(())
}

fn print_log(log: &AttemptLog, key: &str) {
    let short_key: String = key.chars().take(8).collect();
    println!(
        "   {:<7} | {:<13} | {:<10} | {:<24} | next pause",
        "attempt", "request id", "key", "outcome"
    );
    println!("   {}", "-".repeat(80));
    for attempt in log.attempts() {
        let outcome = match attempt.outcome() {
            AttemptOutcome::Status(status) => status.to_string(),
            AttemptOutcome::Failed(failure) => format!("failed: {}", failure.as_str()),
            other => format!("{other:?}"),
        };
        let pause = attempt.delay_after().map_or("—".to_owned(), |pause| {
            format!("{:.1?} ({})", pause.delay, pause.reason.as_str())
        });
        let request_id = attempt.request_id().to_string();
        println!(
            "   {:<7} | {:<13} | {:<10} | {:<24} | {pause}",
            attempt.number(),
            format!("{}…", &request_id[..8]),
            format!("{short_key}…"),
            outcome
        );
    }
}

/// A tiny idempotent payments API on 127.0.0.1 with scripted faults.
struct PaymentsServer {
    url: String,
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    /// key → (body, stored response)
    keys: HashMap<String, (String, Option<String>)>,
    effects: u32,
    payment_requests: u32,
    last_key: Option<String>,
}

impl PaymentsServer {
    async fn start() -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let state = Arc::new(Mutex::new(State::default()));
        let shared = state.clone();
        tokio::spawn(async move {
            // Bounded: the demo makes a handful of connections.
            for _ in 0..100 {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                tokio::spawn(serve(socket, shared.clone()));
            }
        });
        Ok(Self { url, state })
    }

    fn effects(&self) -> u32 {
        self.state.lock().unwrap().effects
    }

    fn last_key(&self) -> Option<String> {
        self.state.lock().unwrap().last_key.clone()
    }
}

async fn serve(mut socket: TcpStream, state: Arc<Mutex<State>>) {
    let Some((head, body)) = read_request(&mut socket).await else {
        return;
    };
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
    if path == "/slow" {
        tokio::time::sleep(Duration::from_secs(3)).await;
        let _ = respond(&mut socket, "200 OK", "", "{}").await;
        return;
    }
    let key = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("idempotency-key")
            .then(|| value.trim().to_owned())
    });
    let Some(key) = key else {
        let _ = respond(
            &mut socket,
            "400 Bad Request",
            "",
            r#"{"error":"key required"}"#,
        )
        .await;
        return;
    };
    enum Action {
        Respond(&'static str, &'static str, String),
        CommitAndDrop,
    }
    let action = {
        let mut state = state.lock().unwrap();
        state.payment_requests += 1;
        state.last_key = Some(key.clone());
        match state.keys.get(&key) {
            Some((stored_body, _)) if *stored_body != body => Action::Respond(
                "422 Unprocessable Entity",
                "",
                r#"{"error":"key reused with a different payload"}"#.to_owned(),
            ),
            Some((_, Some(stored))) => Action::Respond("201 Created", "", stored.clone()),
            Some((_, None)) => Action::Respond("409 Conflict", "", "{}".to_owned()),
            // The script: first 503 with Retry-After, then commit and lose the response.
            None if state.payment_requests == 1 => Action::Respond(
                "503 Service Unavailable",
                "retry-after: 1\r\n",
                r#"{"error":"overloaded"}"#.to_owned(),
            ),
            None => {
                state.effects += 1;
                let stored = format!(r#"{{"payment_id":"pay_{}"}}"#, state.effects);
                state.keys.insert(key, (body, Some(stored)));
                Action::CommitAndDrop
            }
        }
    };
    match action {
        Action::Respond(status, extra, body) => {
            let _ = respond(&mut socket, status, extra, &body).await;
        }
        Action::CommitAndDrop => drop(socket), // committed; the response is lost
    }
}

async fn respond(
    socket: &mut TcpStream,
    status: &str,
    extra_headers: &str,
    body: &str,
) -> std::io::Result<()> {
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n{extra_headers}\r\n{body}",
        body.len()
    );
    socket.write_all(response.as_bytes()).await?;
    socket.shutdown().await
}

/// Reads one request head and its Content-Length body.
async fn read_request(socket: &mut TcpStream) -> Option<(String, String)> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
        let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") else {
            if buffer.len() > 64 * 1024 {
                return None;
            }
            continue;
        };
        let head = String::from_utf8_lossy(&buffer[..end]).into_owned();
        let length: usize = head
            .lines()
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse().ok())?
            })
            .unwrap_or(0);
        while buffer.len() < end + 4 + length {
            let n = socket.read(&mut chunk).await.ok()?;
            if n == 0 {
                return None;
            }
            buffer.extend_from_slice(&chunk[..n]);
        }
        let body = String::from_utf8_lossy(&buffer[end + 4..end + 4 + length]).into_owned();
        return Some((head, body));
    }
}
