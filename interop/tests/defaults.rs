//! The client, the journal and the server layer on their defaults: the table
//! "Client and server defaults" in both READMEs is what the built defaults are, the
//! defaults compose (every in-progress `Retry-After` is under the client's ceiling,
//! the journal's key retention inside the server's), and the client waits out its
//! own server's 409 for a concurrent duplicate.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::routing::post;
use axum::Router;
use reqwest_resilience::ResilientClient;
use tower_idempotency::{IdempotencyLayer, MemoryStore, SinglePrincipal};

const S: Duration = Duration::from_secs(1);

/// The longest pause after a 409 for a short handler: 1 s, or 2 s with the spread.
const SHORT_POLL: Duration = Duration::from_secs(2);

fn seconds(d: Duration) -> String {
    format!("{} s", d.as_secs())
}

fn hours(d: Duration) -> String {
    format!("{} h", d.as_secs() / 3600)
}

/// (setting, crate, default) as both READMEs must state them.
fn expected_rows() -> Vec<(&'static str, &'static str, String)> {
    let client = ResilientClient::new();
    let policy = client.policy();
    let layer = IdempotencyLayer::builder(MemoryStore::new())
        .principal(SinglePrincipal)
        .build()
        .expect("the layer's defaults build");
    let deadline = policy.deadline().expect("a default deadline");
    let attempt_timeout = policy.attempt_timeout().expect("a default attempt timeout");
    // The client sends no attempt with less than a tenth of its longest attempt left
    // (`decision::min_attempt_window`).
    let last_window = attempt_timeout.min(deadline) / 10;
    let longest_handler = deadline - SHORT_POLL - last_window;
    let (client_crate, server, journal) = (
        "reqwest-resilience",
        "tower-idempotency",
        "reqwest-resilience-journal",
    );
    vec![
        ("lease", server, seconds(layer.lease())),
        (
            "in-progress `Retry-After`",
            server,
            format!("1–{}", seconds(SHORT_POLL)),
        ),
        (
            "`retry_after_ceiling`",
            client_crate,
            seconds(policy.retry_after_ceiling()),
        ),
        (
            "`conflict_delay`",
            client_crate,
            seconds(policy.conflict_delay()),
        ),
        (
            "`max_attempts`",
            client_crate,
            policy.max_attempts().to_string(),
        ),
        ("deadline", client_crate, seconds(deadline)),
        ("attempt timeout", client_crate, seconds(attempt_timeout)),
        ("retention", server, hours(layer.retention())),
        (
            "journal key retention",
            journal,
            hours(reqwest_resilience_journal::DEFAULT_RETENTION),
        ),
        (
            "stored-body limit",
            server,
            format!("{} MiB", layer.max_stored_body() >> 20),
        ),
        (
            "whole-body limit",
            client_crate,
            format!("{} MiB", reqwest_resilience::DEFAULT_WHOLE_BODY_LIMIT >> 20),
        ),
        (
            "the longest handler the defaults wait out",
            "both",
            seconds(longest_handler),
        ),
    ]
}

/// The rows of the table under `## Client and server defaults`: (setting, crate, default).
fn readme_rows(readme: &str) -> Vec<(String, String, String)> {
    let section = readme
        .split("\n## Client and server defaults\n")
        .nth(1)
        .expect("a 'Client and server defaults' section");
    let section = section.split("\n## ").next().unwrap_or(section);
    section
        .lines()
        .filter(|line| line.starts_with('|'))
        .skip(2) // the header and its rule
        .map(|line| {
            let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
            (
                cells[0].to_owned(),
                cells[1].to_owned(),
                cells[2].to_owned(),
            )
        })
        .collect()
}

#[test]
fn both_readmes_state_the_built_defaults() {
    let expected: Vec<(String, String, String)> = expected_rows()
        .into_iter()
        .map(|(a, b, c)| (a.to_owned(), b.to_owned(), c))
        .collect();
    for path in ["../README.md", "../server/README.md"] {
        let text = std::fs::read_to_string(path).expect("the README");
        assert_eq!(readme_rows(&text), expected, "{path}");
    }
}

#[test]
fn the_defaults_compose() {
    let client = ResilientClient::new();
    let policy = client.policy();
    let layer = IdempotencyLayer::builder(MemoryStore::new())
        .principal(SinglePrincipal)
        .build()
        .unwrap();
    // Every 409 the server sends is one the client waits out, not one it gives up on.
    assert!(tower_idempotency::MAX_IN_PROGRESS_RETRY_AFTER <= policy.retry_after_ceiling());
    assert!(tower_idempotency::MAX_IN_PROGRESS_RETRY_AFTER < layer.lease());
    // A resumed durable intent always meets its key: the journal gives up on a key
    // before the server forgets it (the server counts from a later moment, the finish).
    assert!(reqwest_resilience_journal::DEFAULT_RETENTION < layer.retention());
    // A handler the client waits out holds its claim all along: no duplicate takes a
    // live handler's key over.
    let deadline = policy.deadline().unwrap();
    assert!(deadline < layer.lease());
    // A body the client reads whole is one the server keeps: a cut one is replayed.
    assert!(reqwest_resilience::DEFAULT_WHOLE_BODY_LIMIT <= layer.max_stored_body());
    // The client's conflict pace is the server's shortest poll.
    assert_eq!(policy.conflict_delay(), S);
}

/// The target: a concurrent duplicate against the layer at defaults, handler
/// 2 s, duplicate 100 ms later: the second caller gets the replay within 4 s, and no
/// caller ends with "outcome unknown".
#[tokio::test]
async fn a_concurrent_duplicate_is_waited_out_on_the_defaults() {
    let effects = Arc::new(AtomicU64::new(0));
    let layer = IdempotencyLayer::builder(MemoryStore::new())
        .principal(SinglePrincipal)
        .build()
        .unwrap();
    let counted = Arc::clone(&effects);
    let app = Router::new()
        .route(
            "/payments",
            post(move |body: String| {
                let counted = Arc::clone(&counted);
                async move {
                    tokio::time::sleep(2 * S).await;
                    let n = counted.fetch_add(1, Ordering::SeqCst) + 1;
                    (http::StatusCode::CREATED, format!("payment {n} of {body}"))
                }
            }),
        )
        .layer(layer);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/payments", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let client = ResilientClient::new();
    let send = |client: ResilientClient, url: String| async move {
        let started = Instant::now();
        let response = client
            .post(&url)
            .idempotency_key("order-42")
            .body("1500")
            .send()
            .await;
        (response, started.elapsed())
    };
    let first = tokio::spawn(send(client.clone(), url.clone()));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (second, waited) = send(client, url).await;
    let (first, _) = first.await.unwrap();
    let first = first.expect("the first caller's result");
    let second = second.expect("the duplicate waits the 409 out: no outcome unknown");
    assert_eq!(first.status(), 201);
    assert_eq!(second.status(), 201);
    assert_eq!(second.headers()["idempotent-replayed"], "true");
    assert_eq!(second.text().await.unwrap(), first.text().await.unwrap());
    assert_eq!(effects.load(Ordering::SeqCst), 1);
    println!("the duplicate got its replay after {waited:?}");
    // 2 s of handler, then at most one short poll: generous against a loaded machine.
    assert!(waited >= Duration::from_millis(1800), "{waited:?}");
    assert!(waited < 6 * S, "{waited:?}");
}

/// The client and the layer on their defaults, the handler overloaded once: it
/// answers `503` + `Retry-After: 1` to the first request, then pays. The layer frees
/// the key after the `503` (not processed), so the client's retry under the same key
/// reaches the handler: one payment, `201`, and the server saw the same key twice.
#[tokio::test]
async fn an_overloaded_handler_is_retried_through_on_the_defaults() {
    let calls = Arc::new(AtomicU64::new(0));
    let effects = Arc::new(AtomicU64::new(0));
    let layer = IdempotencyLayer::builder(MemoryStore::new())
        .principal(SinglePrincipal)
        .build()
        .unwrap();
    let (counted_calls, counted_effects) = (Arc::clone(&calls), Arc::clone(&effects));
    let app = Router::new()
        .route(
            "/payments",
            post(move |headers: http::HeaderMap| {
                let (calls, effects) = (Arc::clone(&counted_calls), Arc::clone(&counted_effects));
                async move {
                    let key = headers["idempotency-key"].to_str().unwrap().to_owned();
                    if calls.fetch_add(1, Ordering::SeqCst) == 0 {
                        return (
                            http::StatusCode::SERVICE_UNAVAILABLE,
                            [(http::header::RETRY_AFTER, "1")],
                            key,
                        );
                    }
                    effects.fetch_add(1, Ordering::SeqCst);
                    (
                        http::StatusCode::CREATED,
                        [(http::header::RETRY_AFTER, "0")],
                        key,
                    )
                }
            }),
        )
        .layer(layer);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/payments", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let started = Instant::now();
    let response = ResilientClient::new()
        .post(&url)
        .body("1500")
        .send()
        .await
        .expect("the retry after the 503 reaches the handler");
    let waited = started.elapsed();
    assert_eq!(response.status(), 201);
    assert!(response.headers().get("idempotent-replayed").is_none());
    let key_seen = response.text().await.unwrap();
    assert!(!key_seen.is_empty(), "the handler saw the client's key");
    assert_eq!(calls.load(Ordering::SeqCst), 2, "the 503, then the payment");
    assert_eq!(effects.load(Ordering::SeqCst), 1);
    // The client waited the server's Retry-After out.
    assert!(waited >= Duration::from_millis(950), "{waited:?}");

    // The key is now kept: the same key again is a replay, not a second payment.
    let again = ResilientClient::new()
        .post(&url)
        .idempotency_key(&key_seen)
        .body("1500")
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 201);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(effects.load(Ordering::SeqCst), 1);
}
