//! The `metrics` feature with a Prometheus exporter: every intent's attempts,
//! retries and give-ups under OpenTelemetry's names, scraped over HTTP.
//!
//! Starts a flaky HTTP server and the exporter's `/metrics` endpoint, both on
//! 127.0.0.1; sends a scripted set of intents through one client with
//! [`Metrics`] attached; then scrapes its own endpoint and prints what it got (the
//! series of this crate: `http_client_request_duration_seconds`, the intent
//! histograms, the retry and give-up counters). Every step is deterministic: the
//! server answers by request number and the intents run one after another.
//!
//! Run: `cargo run --example metrics_prometheus --features metrics`

use std::net::{Ipv4Addr, SocketAddr, TcpListener as StdListener};
use std::time::Duration;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
use reqwest_resilience::watch::Metrics;
use reqwest_resilience::{Backoff, ResilientClient, RetryPolicy};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// What the flaky server answers to its n-th request (from 0).
const SCRIPT: &[&str] = &[
    // GET /orders/0: fine at once.
    "200", // GET /orders/1: one 503, then fine.
    "503", "200", // GET /orders/2: 503 three times: gives up (attempts exhausted).
    "503", "503", "503", // POST /orders: a 429, then created.
    "429", "201", // GET /orders/3: not found (not retried, the caller gets the 404).
    "404", // GET /orders/4: two 503s, then fine.
    "503", "503", "200",
];

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let scrape_address = install_exporter()?;
    let server = start_flaky_server().await?;

    let policy = RetryPolicy::builder()
        .max_attempts(3)
        .backoff(Backoff::full_jitter(
            Duration::from_millis(1),
            Duration::from_millis(5),
        ))
        .rng_seed(1)
        .observer(Metrics::new())
        .build()?;
    let client = ResilientClient::with_policy(policy);

    let intents = [
        ("GET", "/orders/0"),
        ("GET", "/orders/1"),
        ("GET", "/orders/2"),
        ("POST", "/orders"),
        ("GET", "/orders/3"),
        ("GET", "/orders/4"),
    ];
    for (method, path) in intents {
        let url = format!("{server}{path}");
        let request = match method {
            "POST" => client.post(url).body("{\"sku\":\"tea\"}"),
            _ => client.get(url),
        };
        let shown = match request.send().await {
            Ok(response) => response.status().to_string(),
            Err(error) => error.to_string(),
        };
        println!("{method:<4} {path:<10} -> {shown}");
    }

    let scrape = reqwest::get(format!("http://{scrape_address}/metrics"))
        .await?
        .error_for_status()?
        .text()
        .await?;
    let buckets = scrape
        .lines()
        .filter(|line| line.contains("_bucket{"))
        .count();
    println!(
        "\nscraped http://{scrape_address}/metrics ({} bytes); this crate's series \
         without HELP/TYPE lines and the {buckets} bucket lines:\n",
        scrape.len()
    );
    for line in scrape.lines().filter(|line| shown(line)) {
        println!("{line}");
    }

    // The figures an operator would look for, or this example fails.
    for expected in [
        "http_client_request_duration_seconds_bucket{http_request_method=\"GET\"",
        "http_response_status_code=\"503\"",
        "http_client_request_duration_seconds_count{http_request_method=\"POST\"",
        "reqwest_resilience_intent_retries_total{",
        "reqwest_resilience_intent_give_ups_total{",
        "reqwest_resilience_give_up_reason=\"attempts_exhausted\"",
    ] {
        if !scrape.contains(expected) {
            return Err(format!("the scrape lacks {expected}").into());
        }
    }
    Ok(())
}

/// The scrape's lines worth printing: this crate's series, without HELP/TYPE lines
/// and without the histograms' buckets (their `_sum` and `_count` stay).
fn shown(line: &str) -> bool {
    let ours =
        line.starts_with("http_client_request_duration") || line.starts_with("reqwest_resilience_");
    ours && !line.contains("_bucket{")
}

/// Installs the Prometheus exporter as the global recorder, its HTTP endpoint on a
/// free port of 127.0.0.1; returns that address.
fn install_exporter() -> Result<SocketAddr, Box<dyn std::error::Error>> {
    let mut last_error = None;
    // The exporter binds the address itself: find a free port, and try again if
    // another process takes it in between.
    for _ in 0..5 {
        let address = StdListener::bind((Ipv4Addr::LOCALHOST, 0))?.local_addr()?;
        let installed = PrometheusBuilder::new()
            .with_http_listener(address)
            .with_recommended_naming(true)
            .set_buckets_for_metric(
                Matcher::Full("http.client.request.duration".into()),
                &Metrics::DURATION_BUCKETS,
            )?
            .set_buckets_for_metric(
                Matcher::Full("reqwest_resilience.intent.duration".into()),
                &Metrics::DURATION_BUCKETS,
            )?
            .set_buckets_for_metric(
                Matcher::Full("reqwest_resilience.intent.attempts".into()),
                &Metrics::ATTEMPT_BUCKETS,
            )?
            .install();
        match installed {
            Ok(()) => return Ok(address),
            Err(error) => last_error = Some(error),
        }
    }
    Err(last_error.map_or_else(|| "no free port".into(), Into::into))
}

/// A raw HTTP/1.1 server on 127.0.0.1 answering the n-th request with `SCRIPT[n]`.
async fn start_flaky_server() -> std::io::Result<String> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move {
        for status in SCRIPT {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            read_request(&mut socket).await;
            let reason = match *status {
                "200" => "OK",
                "201" => "Created",
                "404" => "Not Found",
                "429" => "Too Many Requests",
                _ => "Service Unavailable",
            };
            let reply = format!(
                "HTTP/1.1 {status} {reason}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            );
            let _ = socket.write_all(reply.as_bytes()).await;
            let _ = socket.shutdown().await;
        }
    });
    Ok(url)
}

/// Reads one request, head and `content-length` body, so that closing the socket
/// never resets it with unread bytes.
async fn read_request(socket: &mut tokio::net::TcpStream) {
    let mut request = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&request[..end]).to_ascii_lowercase();
            let body = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .and_then(|n| n.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if request.len() >= end + 4 + body {
                return;
            }
        }
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&chunk[..n]),
        }
    }
}
