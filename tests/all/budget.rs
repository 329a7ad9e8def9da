//! The shared retry budget: an outage must not become a retry storm.

use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rand::{Rng, SeedableRng};
use reqwest_resilience::{Backoff, RecordingSleeper, ResilientClient, RetryBudget, RetryPolicy};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::support::{received, MS};

fn client_with_budget(budget: RetryBudget) -> ResilientClient {
    ResilientClient::with_policy(
        RetryPolicy::builder()
            .sleeper(RecordingSleeper::new())
            .backoff(Backoff::full_jitter(10 * MS, 100 * MS))
            .budget(budget)
            .build()
            .unwrap(),
    )
}

async fn outage() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(503))
        .mount(&server)
        .await;
    server
}

#[tokio::test]
async fn an_empty_budget_ends_the_intent_with_a_typed_error() {
    let server = outage().await;
    let budget = RetryBudget::builder()
        .ratio(0.1)
        .reserve(0)
        .build()
        .unwrap();
    let client = client_with_budget(budget);
    let error = client
        .get(server.uri())
        .send()
        .await
        .expect_err("no retry allowed");
    assert!(error.is_budget_exhausted(), "{error}");
    assert_eq!(error.attempts(), 1);
    assert_eq!(error.last_status().unwrap(), 503);
    assert!(
        error.idempotency_key().is_none(),
        "GET carries no key by default"
    );
    assert!(
        error.is_outcome_unknown(),
        "a 503 may come from a gateway that forwarded the request"
    );
    assert_eq!(received(&server).await.len(), 1);
}

#[tokio::test]
async fn clones_and_clients_sharing_a_handle_share_the_budget() {
    let server = outage().await;
    // Two retries in reserve, nothing earned (ratio tiny, few requests).
    let budget = RetryBudget::builder()
        .ratio(0.001)
        .reserve(2)
        .build()
        .unwrap();
    let first = client_with_budget(budget.clone());
    let clone = first.clone();
    let other = client_with_budget(budget);

    let error = first.get(server.uri()).send().await.unwrap_err();
    assert!(error.is_attempts_exhausted(), "{error}"); // used both reserve retries
    let error = clone.get(server.uri()).send().await.unwrap_err();
    assert!(error.is_budget_exhausted(), "clone shares: {error}");
    let error = other.get(server.uri()).send().await.unwrap_err();
    assert!(error.is_budget_exhausted(), "same handle shares: {error}");
    assert_eq!(received(&server).await.len(), 3 + 1 + 1);
}

#[tokio::test]
async fn per_host_budgets_keep_a_sick_host_from_draining_the_others() {
    let sick = outage().await;
    // A second host on another loopback address.
    let listener = TcpListener::bind("127.0.0.2:0").expect("bind 127.0.0.2");
    let healthy_then_flaky = MockServer::builder().listener(listener).start().await;
    Mock::given(method("GET"))
        .respond_with(crate::support::fail_then_ok(503, 1))
        .mount(&healthy_then_flaky)
        .await;

    let budget = RetryBudget::builder()
        .ratio(0.001)
        .reserve(2)
        .per_host(true)
        .build()
        .unwrap();
    let client = client_with_budget(budget);
    for _ in 0..3 {
        let _ = client.get(sick.uri()).send().await;
    }
    let error = client.get(sick.uri()).send().await.unwrap_err();
    assert!(error.is_budget_exhausted());
    let response = client.get(healthy_then_flaky.uri()).send().await.unwrap();
    assert_eq!(
        response.status(),
        200,
        "the other host still has its reserve"
    );
}

/// 503 with probability `p`, else 200; seeded.
struct RandomFailures {
    rng: Mutex<rand::rngs::StdRng>,
    p: f64,
    served: AtomicUsize,
}

impl Respond for RandomFailures {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        self.served.fetch_add(1, Ordering::Relaxed);
        if self.rng.lock().unwrap().random_bool(self.p) {
            ResponseTemplate::new(503)
        } else {
            ResponseTemplate::new(200)
        }
    }
}

async fn run_intents(server: &MockServer, intents: usize, concurrency: usize) -> usize {
    let client = ResilientClient::with_policy(
        RetryPolicy::builder()
            .sleeper(RecordingSleeper::new())
            .rng_seed(5)
            .build()
            .unwrap(), // the default budget
    );
    let next = Arc::new(AtomicUsize::new(0));
    let successes = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let (client, next, successes, uri) = (
            client.clone(),
            next.clone(),
            successes.clone(),
            server.uri(),
        );
        workers.push(tokio::spawn(async move {
            while next.fetch_add(1, Ordering::Relaxed) < intents {
                if let Ok(response) = client.get(&uri).send().await {
                    if response.status() == 200 {
                        successes.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }));
    }
    for worker in workers {
        worker.await.unwrap();
    }
    successes.load(Ordering::Relaxed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_total_outage_is_amplified_at_most_1_15_times_by_the_default_budget() {
    let server = MockServer::builder()
        .body_print_limit(wiremock::BodyPrintLimit::Limited(0))
        .start()
        .await;
    let responder = RandomFailures {
        rng: Mutex::new(rand::rngs::StdRng::seed_from_u64(1)),
        p: 1.0,
        served: AtomicUsize::new(0),
    };
    let served = Arc::new(responder);
    Mock::given(method("GET"))
        .respond_with(ArcResponder(served.clone()))
        .mount(&server)
        .await;
    let intents = 5_000;
    let successes = run_intents(&server, intents, 50).await;
    let amplification = served.served.load(Ordering::Relaxed) as f64 / intents as f64;
    println!("outage amplification: {amplification:.3}");
    assert_eq!(successes, 0);
    assert!(amplification <= 1.15, "amplification {amplification}");
    assert!(
        amplification > 1.0,
        "the reserve and ratio still allow some retries"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sporadic_failures_are_still_retried_under_the_default_budget() {
    let server = MockServer::start().await;
    let served = Arc::new(RandomFailures {
        rng: Mutex::new(rand::rngs::StdRng::seed_from_u64(2)),
        p: 0.05,
        served: AtomicUsize::new(0),
    });
    Mock::given(method("GET"))
        .respond_with(ArcResponder(served.clone()))
        .mount(&server)
        .await;
    let intents = 5_000;
    let successes = run_intents(&server, intents, 50).await;
    let rate = successes as f64 / intents as f64;
    println!("success rate with 5% 503s: {rate:.4}");
    assert!(rate >= 0.99, "success rate {rate}");
}

struct ArcResponder(Arc<RandomFailures>);

impl Respond for ArcResponder {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        self.0.respond(request)
    }
}
