//! The `metrics` feature: what `Metrics` records for scripted intents, read back
//! from an in-memory recorder installed for the test's own thread only
//! (`#[tokio::test]` runs the intent on that thread), so tests never share one.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use metrics_util::MetricKind;
use reqwest_resilience::{
    Backoff, Gate, GateRefusal, GateScope, Metrics, RecordingSleeper, ResilientClient, RetryBudget,
    RetryPolicy, RetryPolicyBuilder,
};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

const MS: Duration = Duration::from_millis(1);

/// Labels as a sorted map, for exact comparison.
type Labels = BTreeMap<String, String>;

/// Every metric recorded: (kind, name, labels) → counter value or histogram samples.
#[derive(Debug)]
struct Recorded(Vec<(MetricKind, String, Labels, DebugValue)>);

impl Recorded {
    fn take(snapshotter: &Snapshotter) -> Self {
        let entries = snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .map(|(key, _unit, _description, value)| {
                let (kind, key) = key.into_parts();
                let labels = key
                    .labels()
                    .map(|label| (label.key().to_owned(), label.value().to_owned()))
                    .collect();
                (kind, key.name().to_owned(), labels, value)
            })
            .collect();
        Self(entries)
    }

    fn named<'a>(
        &'a self,
        name: &'a str,
    ) -> impl Iterator<Item = (&'a Labels, &'a DebugValue)> + 'a {
        self.0
            .iter()
            .filter(move |entry| entry.1 == name)
            .map(|entry| (&entry.2, &entry.3))
    }

    /// The counter `name` with exactly `labels`; 0 when never incremented.
    fn counter(&self, name: &str, labels: &Labels) -> u64 {
        self.named(name)
            .filter(|(l, _)| *l == labels)
            .map(|(_, value)| match value {
                DebugValue::Counter(n) => *n,
                other => panic!("{name} is not a counter: {other:?}"),
            })
            .sum()
    }

    /// How many distinct label sets the metric `name` was recorded with.
    fn series(&self, name: &str) -> usize {
        self.named(name).count()
    }

    /// The samples of the histogram `name` with exactly `labels`.
    fn samples(&self, name: &str, labels: &Labels) -> Vec<f64> {
        self.named(name)
            .filter(|(l, _)| *l == labels)
            .flat_map(|(_, value)| match value {
                DebugValue::Histogram(samples) => samples.iter().map(|s| s.into_inner()),
                other => panic!("{name} is not a histogram: {other:?}"),
            })
            .collect()
    }
}

/// `method`, the server's address and port, plus `extra`.
fn labels(server: &MockServer, method: &str, extra: &[(&str, &str)]) -> Labels {
    let address = server.address();
    let mut labels: Labels = [
        ("http.request.method", method.to_owned()),
        ("server.address", address.ip().to_string()),
        ("server.port", address.port().to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    labels.extend(
        extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    labels
}

/// A policy with instant recorded pauses, no budget, and the observer.
fn policy() -> RetryPolicyBuilder {
    RetryPolicy::builder()
        .sleeper(RecordingSleeper::new())
        .rng_seed(7)
        .backoff(Backoff::full_jitter(10 * MS, 100 * MS))
        .no_budget()
        .observer(Metrics::new())
}

fn client(policy: RetryPolicyBuilder) -> ResilientClient {
    ResilientClient::with_policy(policy.build().expect("valid policy"))
}

/// `failures` responses with `status`, then 200.
struct FailThenOk {
    status: u16,
    failures: usize,
    seen: AtomicUsize,
}

impl Respond for FailThenOk {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        if self.seen.fetch_add(1, Ordering::SeqCst) < self.failures {
            ResponseTemplate::new(self.status)
        } else {
            ResponseTemplate::new(200).set_body_string("ok")
        }
    }
}

async fn server(respond: impl Respond + 'static, expected: u64) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(respond)
        .expect(expected)
        .mount(&server)
        .await;
    server
}

const REQUEST_DURATION: &str = "http.client.request.duration";
const INTENT_DURATION: &str = "reqwest_resilience.intent.duration";
const INTENT_ATTEMPTS: &str = "reqwest_resilience.intent.attempts";
const RETRIES: &str = "reqwest_resilience.intent.retries";
const GIVE_UPS: &str = "reqwest_resilience.intent.give_ups";
const OUTCOME_UNKNOWN: &str = "reqwest_resilience.intent.outcome_unknown";
const BUDGET_REFUSALS: &str = "reqwest_resilience.intent.budget_refusals";
const GATE_REFUSALS: &str = "reqwest_resilience.intent.gate_refusals";

/// No label value anywhere carries the path, the query or the key.
fn assert_bounded(recorded: &Recorded, secrets: &[&str]) {
    for (_, name, labels, _) in &recorded.0 {
        for (key, value) in labels {
            for secret in secrets {
                assert!(
                    !value.contains(secret),
                    "{name}{{{key}={value}}} leaks {secret:?}"
                );
            }
        }
    }
}

#[tokio::test]
async fn a_success_after_a_retry_records_both_attempts_one_retry_and_no_give_up() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _local = metrics::set_default_local_recorder(&recorder);
    let server = server(
        FailThenOk {
            status: 503,
            failures: 1,
            seen: AtomicUsize::new(0),
        },
        2,
    )
    .await;
    let client = client(policy());

    let response = client
        .get(format!("{}/orders/42?token=s3cret", server.uri()))
        .send()
        .await
        .expect("the retry succeeds");
    let key = response
        .headers()
        .get("idempotency-key")
        .map(|v| v.to_str().unwrap().to_owned());
    assert_eq!(response.status(), 200);

    let recorded = Recorded::take(&snapshotter);
    let failed = labels(
        &server,
        "GET",
        &[("http.response.status_code", "503"), ("error.type", "503")],
    );
    let ok = labels(&server, "GET", &[("http.response.status_code", "200")]);
    assert_eq!(recorded.samples(REQUEST_DURATION, &failed).len(), 1);
    assert_eq!(recorded.samples(REQUEST_DURATION, &ok).len(), 1);
    assert_eq!(recorded.series(REQUEST_DURATION), 2);
    assert!(recorded
        .samples(REQUEST_DURATION, &ok)
        .iter()
        .all(|s| (0.0..5.0).contains(s)));

    let retried = labels(
        &server,
        "GET",
        &[
            ("reqwest_resilience.retry.cause", "transient"),
            ("error.type", "503"),
        ],
    );
    assert_eq!(recorded.counter(RETRIES, &retried), 1);
    assert_eq!(recorded.series(RETRIES), 1);

    let intent = labels(&server, "GET", &[]);
    assert_eq!(recorded.samples(INTENT_ATTEMPTS, &intent), vec![2.0]);
    let durations = recorded.samples(INTENT_DURATION, &intent);
    assert_eq!(durations.len(), 1);
    // The intent lasted at least its two attempts (the pause is recorded, not slept).
    let attempts_total: f64 =
        recorded.samples(REQUEST_DURATION, &failed)[0] + recorded.samples(REQUEST_DURATION, &ok)[0];
    assert!(durations[0] >= attempts_total, "{durations:?}");

    for name in [GIVE_UPS, OUTCOME_UNKNOWN, BUDGET_REFUSALS, GATE_REFUSALS] {
        assert_eq!(recorded.series(name), 0, "{name}");
    }
    let mut secrets = vec!["/orders", "s3cret", "token"];
    if let Some(key) = &key {
        secrets.push(key);
    }
    assert_bounded(&recorded, &secrets);
}

#[tokio::test]
async fn a_give_up_is_counted_by_reason_with_its_unknown_outcome() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _local = metrics::set_default_local_recorder(&recorder);
    let server = server(ResponseTemplate::new(503), 3).await;
    let client = client(policy().max_attempts(3));

    let error = client.get(server.uri()).send().await.unwrap_err();
    assert!(error.is_attempts_exhausted(), "{error}");
    assert!(error.is_outcome_unknown(), "a 503 may come from a gateway");

    let recorded = Recorded::take(&snapshotter);
    let failed = labels(
        &server,
        "GET",
        &[("http.response.status_code", "503"), ("error.type", "503")],
    );
    assert_eq!(recorded.samples(REQUEST_DURATION, &failed).len(), 3);
    let retried = labels(
        &server,
        "GET",
        &[
            ("reqwest_resilience.retry.cause", "transient"),
            ("error.type", "503"),
        ],
    );
    assert_eq!(recorded.counter(RETRIES, &retried), 2);

    let gave_up = labels(&server, "GET", &[("error.type", "attempts_exhausted")]);
    assert_eq!(recorded.samples(INTENT_ATTEMPTS, &gave_up), vec![3.0]);
    assert_eq!(recorded.samples(INTENT_DURATION, &gave_up).len(), 1);
    assert_eq!(recorded.series(INTENT_DURATION), 1);
    let reason = labels(
        &server,
        "GET",
        &[("reqwest_resilience.give_up.reason", "attempts_exhausted")],
    );
    assert_eq!(recorded.counter(GIVE_UPS, &reason), 1);
    assert_eq!(recorded.series(GIVE_UPS), 1);
    let intent = labels(&server, "GET", &[]);
    assert_eq!(recorded.counter(OUTCOME_UNKNOWN, &intent), 1);
    assert_eq!(recorded.series(BUDGET_REFUSALS), 0);
    assert_eq!(recorded.series(GATE_REFUSALS), 0);
}

#[tokio::test]
async fn a_budget_refusal_is_counted_once_as_a_give_up_and_a_refusal() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _local = metrics::set_default_local_recorder(&recorder);
    let server = server(ResponseTemplate::new(503), 1).await;
    let budget = RetryBudget::builder()
        .ratio(0.1)
        .reserve(0)
        .build()
        .unwrap();
    let client = client(policy().budget(budget));

    let error = client.get(server.uri()).send().await.unwrap_err();
    assert!(error.is_budget_exhausted(), "{error}");

    let recorded = Recorded::take(&snapshotter);
    let intent = labels(&server, "GET", &[]);
    assert_eq!(recorded.counter(BUDGET_REFUSALS, &intent), 1);
    assert_eq!(
        recorded.series(GATE_REFUSALS),
        0,
        "the budget is counted apart"
    );
    let reason = labels(
        &server,
        "GET",
        &[("reqwest_resilience.give_up.reason", "budget_exhausted")],
    );
    assert_eq!(recorded.counter(GIVE_UPS, &reason), 1);
    assert_eq!(recorded.counter(OUTCOME_UNKNOWN, &intent), 1);
    assert_eq!(
        recorded.series(RETRIES),
        0,
        "the refused retry never happened"
    );
    let gave_up = labels(&server, "GET", &[("error.type", "budget_exhausted")]);
    assert_eq!(recorded.samples(INTENT_ATTEMPTS, &gave_up), vec![1.0]);
}

#[tokio::test]
async fn a_timed_out_attempt_is_labelled_with_the_failure_and_leaves_the_outcome_unknown() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _local = metrics::set_default_local_recorder(&recorder);
    let server = server(
        ResponseTemplate::new(200).set_delay(Duration::from_millis(500)),
        1,
    )
    .await;
    let client = client(policy().max_attempts(1).attempt_timeout(50 * MS));

    let error = client.get(server.uri()).send().await.unwrap_err();
    assert!(error.is_outcome_unknown(), "{error}");
    let reason = error.reason().as_str();

    let recorded = Recorded::take(&snapshotter);
    // No response: no status code, the transport failure as `error.type`.
    let timed_out = labels(&server, "GET", &[("error.type", "timeout")]);
    let samples = recorded.samples(REQUEST_DURATION, &timed_out);
    assert_eq!(samples.len(), 1, "{recorded:?}");
    assert!(samples[0] >= 0.05, "{samples:?}");
    let intent = labels(&server, "GET", &[]);
    assert_eq!(recorded.counter(OUTCOME_UNKNOWN, &intent), 1);
    let by_reason = labels(
        &server,
        "GET",
        &[("reqwest_resilience.give_up.reason", reason)],
    );
    assert_eq!(recorded.counter(GIVE_UPS, &by_reason), 1);
    assert_eq!(reason, "attempts_exhausted");
}

/// A gate that admits first attempts and holds back every retry (a breaker that
/// opened after the first failure).
struct NoRetries;

impl Gate for NoRetries {
    fn name(&self) -> &str {
        "test_breaker"
    }

    fn admit(&self, scope: &GateScope<'_>) -> Result<(), GateRefusal> {
        match scope.retry_cause() {
            None => Ok(()),
            Some(_) => Err(GateRefusal::new("test_breaker")),
        }
    }
}

#[tokio::test]
async fn a_gate_refusal_is_counted_by_gate_name() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _local = metrics::set_default_local_recorder(&recorder);
    let server = server(ResponseTemplate::new(503), 1).await;
    let client = client(policy().gate(NoRetries));

    let error = client.get(server.uri()).send().await.unwrap_err();
    assert!(error.is_gate_refused(), "{error}");

    let recorded = Recorded::take(&snapshotter);
    let gate = labels(
        &server,
        "GET",
        &[("reqwest_resilience.gate", "test_breaker")],
    );
    assert_eq!(recorded.counter(GATE_REFUSALS, &gate), 1, "{recorded:?}");
    assert_eq!(recorded.series(GATE_REFUSALS), 1);
    assert_eq!(
        recorded.series(BUDGET_REFUSALS),
        0,
        "a gate is not the budget"
    );
    assert_eq!(
        recorded.series(RETRIES),
        0,
        "the refused retry never happened"
    );
    let reason = labels(
        &server,
        "GET",
        &[("reqwest_resilience.give_up.reason", "gate_refused")],
    );
    assert_eq!(recorded.counter(GIVE_UPS, &reason), 1);
    let gave_up = labels(&server, "GET", &[("error.type", "gate_refused")]);
    assert_eq!(recorded.samples(INTENT_ATTEMPTS, &gave_up), vec![1.0]);
}

#[tokio::test]
async fn every_metric_is_described_with_its_unit() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _local = metrics::set_default_local_recorder(&recorder);
    let server = server(ResponseTemplate::new(200), 1).await;
    let client = client(policy());
    client.get(server.uri()).send().await.unwrap();

    let units: BTreeMap<String, Option<metrics::Unit>> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, unit, description, _)| {
            assert!(description.is_some(), "{key:?} has no description");
            (key.key().name().to_owned(), unit)
        })
        .collect();
    assert_eq!(units[REQUEST_DURATION], Some(metrics::Unit::Seconds));
    assert_eq!(units[INTENT_DURATION], Some(metrics::Unit::Seconds));
    assert_eq!(units[INTENT_ATTEMPTS], Some(metrics::Unit::Count));
}

/// An open breaker's refusals (before the first attempt) are counted by gate.
#[test]
fn a_refused_first_attempt_is_counted_by_gate_name() {
    struct Closed;
    impl reqwest_resilience::Gate for Closed {
        fn name(&self) -> &str {
            "closed"
        }
        fn admit(
            &self,
            _: &reqwest_resilience::GateScope<'_>,
        ) -> Result<(), reqwest_resilience::GateRefusal> {
            Err(reqwest_resilience::GateRefusal::new("closed"))
        }
    }
    let recorder = metrics_util::debugging::DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let client = reqwest_resilience::ResilientClient::with_policy(
                reqwest_resilience::RetryPolicy::builder()
                    .gate(Closed)
                    .observer(reqwest_resilience::Metrics::new())
                    .build()
                    .unwrap(),
            );
            let error = client.get("http://127.0.0.1:9/").send().await.unwrap_err();
            assert!(error.is_gate_refused());
        });
    });
    let counted: Vec<String> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(key, ..)| key.key().name() == "reqwest_resilience.intent.gate_refusals")
        .flat_map(|(key, ..)| {
            key.key()
                .labels()
                .map(|label| format!("{}={}", label.key(), label.value()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        counted.contains(&"reqwest_resilience.gate=closed".to_owned()),
        "{counted:?}"
    );
}

/// The first request is answered late, every later one at once.
struct SlowFirst {
    seen: AtomicUsize,
}

impl Respond for SlowFirst {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let delay = if self.seen.fetch_add(1, Ordering::SeqCst) == 0 {
            3_000 * MS
        } else {
            Duration::ZERO
        };
        ResponseTemplate::new(200).set_delay(delay)
    }
}

#[tokio::test]
async fn a_hedge_that_wins_is_counted_sent_won_and_its_loser_cancelled() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _local = metrics::set_default_local_recorder(&recorder);
    let server = server(
        SlowFirst {
            seen: AtomicUsize::new(0),
        },
        2,
    )
    .await;
    // Real time for the hedge delay: the first copy must be on the wire first.
    let policy = policy()
        .sleeper(reqwest_resilience::TokioSleeper)
        .hedging(reqwest_resilience::Hedging::fixed(100 * MS));
    let response = client(policy).get(server.uri()).send().await.unwrap();
    assert_eq!(response.status(), 200);

    let recorded = Recorded::take(&snapshotter);
    let event = |kind| labels(&server, "GET", &[("reqwest_resilience.hedge.event", kind)]);
    let hedges = "reqwest_resilience.intent.hedges";
    assert_eq!(recorded.counter(hedges, &event("sent")), 1);
    assert_eq!(recorded.counter(hedges, &event("won")), 1);
    assert_eq!(recorded.counter(hedges, &event("cancelled")), 1);
    assert_eq!(recorded.counter(hedges, &event("refused_by_cap")), 0);
}

/// Every answer is slow enough to be hedged, and the cap allows one hedge: the
/// metrics count one copy sent and the hedges the cap refused, and the server saw
/// exactly the copies sent (the cap counts a hedge when it is sent).
#[tokio::test]
async fn hedges_the_cap_refuses_are_counted() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _local = metrics::set_default_local_recorder(&recorder);
    let slow = ResponseTemplate::new(200).set_delay(200 * MS);
    // 3 intents: 2 copies for the first, then 1 each.
    let server = server(slow, 4).await;
    let policy = policy()
        .sleeper(reqwest_resilience::TokioSleeper)
        .hedging(reqwest_resilience::Hedging::fixed(20 * MS).cap(0.000_001, 1));
    let client = client(policy);
    for _ in 0..3 {
        let response = client.get(server.uri()).send().await.unwrap();
        assert_eq!(response.status(), 200);
    }

    let recorded = Recorded::take(&snapshotter);
    let event = |kind| labels(&server, "GET", &[("reqwest_resilience.hedge.event", kind)]);
    let hedges = "reqwest_resilience.intent.hedges";
    assert_eq!(recorded.counter(hedges, &event("sent")), 1);
    assert_eq!(recorded.counter(hedges, &event("refused_by_cap")), 2);
    assert_eq!(recorded.counter(hedges, &event("refused_by_gate")), 0);
}
