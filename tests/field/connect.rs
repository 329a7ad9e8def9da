//! Connects that never complete, and names that do not resolve: nothing was sent,
//! so every method is retried and the outcome stays known.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest_resilience::{RecordingSleeper, ResilientClient, TransportFailure};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::full_queue::FullQueue;
use crate::support::{failures, policy, MS};

/// An unkeyed POST to a server that never accepts (attempt timeout 300 ms): the
/// connect never completed, so nothing was sent and the POST may be retried, and the
/// outcome is known, not "timeout, outcome unknown".
#[tokio::test]
async fn a_connect_that_never_completes_is_retried_for_an_unkeyed_post() {
    let queue = FullQueue::start()
        .await
        .expect("the kernel should drop SYNs to a listener with a full accept queue");
    let sleeper = RecordingSleeper::new();
    let client =
        ResilientClient::with_policy(policy(&sleeper).attempt_timeout(300 * MS).build().unwrap());
    let started = Instant::now();
    let error = client
        .post(format!("http://{}/payments", queue.addr))
        .without_idempotency_key()
        .body("{}")
        .send()
        .await
        .expect_err("never accepted");
    assert!(error.is_attempts_exhausted(), "{error}");
    assert_eq!(failures(&error), [TransportFailure::Connect; 3], "{error}");
    assert!(!error.is_outcome_unknown(), "{error}");
    assert_eq!(sleeper.delays().len(), 2);
    // Each attempt waited for the connect timeout (half the attempt timeout)…
    for attempt in error.attempt_log().attempts() {
        assert!(attempt.duration() >= 150 * MS, "{:?}", attempt.duration());
    }
    // …and no longer than the attempt timeout.
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(
        error.to_string().contains("last: could not connect"),
        "{error}"
    );
}

/// The documented limit: an attempt's own timeout shorter than the connect timeout
/// cuts the connect off as a plain timeout, which cannot be told apart.
#[tokio::test]
async fn a_per_request_timeout_below_the_connect_timeout_leaves_the_outcome_unknown() {
    let queue = FullQueue::start().await.expect("full accept queue");
    let sleeper = RecordingSleeper::new();
    let client =
        ResilientClient::with_policy(policy(&sleeper).attempt_timeout(300 * MS).build().unwrap());
    let error = client
        .post(format!("http://{}/payments", queue.addr))
        .without_idempotency_key()
        .timeout(100 * MS)
        .send()
        .await
        .expect_err("never accepted");
    assert_eq!(failures(&error), [TransportFailure::Timeout], "{error}");
    assert!(
        error.is_not_retryable() && error.is_outcome_unknown(),
        "{error}"
    );
    let text = error.to_string();
    assert!(text.contains("last: timeout after"), "{text}");
}

/// A resolver that fails the first `failures` lookups, then points at `target`.
struct FlakyResolver {
    failures: usize,
    calls: Arc<AtomicUsize>,
    target: SocketAddr,
}

impl Resolve for FlakyResolver {
    fn resolve(&self, _: Name) -> Resolving {
        let call = self.calls.fetch_add(1, Ordering::SeqCst);
        let (fail, target) = (call < self.failures, self.target);
        Box::pin(async move {
            if fail {
                let error = std::io::Error::other("temporary failure in name resolution");
                return Err(error.into());
            }
            Ok(Box::new(std::iter::once(target)) as Addrs)
        })
    }
}

/// DNS is faked with a custom resolver: no real resolver is ever asked.
#[tokio::test]
async fn a_failed_lookup_is_retried_for_an_unkeyed_post() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(201))
        .expect(1)
        .mount(&server)
        .await;
    let calls = Arc::new(AtomicUsize::new(0));
    let resolver = FlakyResolver {
        failures: 1,
        calls: calls.clone(),
        target: *server.address(),
    };
    let policy = policy(&RecordingSleeper::new()).build().unwrap();
    let http = ResilientClient::reqwest_builder_for(&policy)
        .dns_resolver(Arc::new(resolver))
        .build()
        .unwrap();
    let client = ResilientClient::from_parts(http, policy);
    let response = client
        .post(format!(
            "http://payments.invalid:{}/charge",
            server.address().port()
        ))
        .without_idempotency_key()
        .body("{}")
        .send()
        .await
        .expect("resolved on the second attempt");
    assert_eq!(response.status(), 201);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    let log = reqwest_resilience::ResponseExt::attempt_log(&response).unwrap();
    assert_eq!(
        *log.attempts()[0].outcome(),
        reqwest_resilience::AttemptOutcome::Failed(TransportFailure::Dns)
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_lookup_that_keeps_failing_names_dns_and_stays_known() {
    let calls = Arc::new(AtomicUsize::new(0));
    let resolver = FlakyResolver {
        failures: usize::MAX,
        calls: calls.clone(),
        target: "127.0.0.1:9".parse().unwrap(),
    };
    let policy = policy(&RecordingSleeper::new()).build().unwrap();
    let http = ResilientClient::reqwest_builder_for(&policy)
        .dns_resolver(Arc::new(resolver))
        .build()
        .unwrap();
    let error = ResilientClient::from_parts(http, policy)
        .post("http://payments.invalid/charge")
        .send()
        .await
        .expect_err("never resolves");
    assert_eq!(failures(&error), [TransportFailure::Dns; 3], "{error}");
    assert!(!error.is_outcome_unknown());
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert!(error.to_string().contains("DNS lookup failed"), "{error}");
}
