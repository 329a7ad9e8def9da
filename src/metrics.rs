//! Metrics for every intent, recorded through the [`metrics`](https://docs.rs/metrics)
//! facade under OpenTelemetry's names.
//!
//! Operators compare a resilient client by the figures the systems they already run
//! emit: OpenTelemetry's `http.client.request.duration` per attempt, and what the
//! resilience layer did around the attempts (Polly's strategy events). [`Metrics`] is
//! an [`IntentObserver`] that records both. Its hooks are synchronous, so an
//! intent never awaits it; what it records goes to whatever recorder the application
//! installed (`metrics-exporter-prometheus`, an OpenTelemetry bridge, a test's
//! in-memory recorder). With no recorder installed the calls do nothing but build
//! their labels.
//!
//! The `metrics` facade rather than OpenTelemetry's metrics API: the facade is one
//! small crate with no exporter, no async runtime and no SDK in its tree, it is what
//! most Rust services already record through, and bridges exist both ways (a
//! facade recorder that feeds an OpenTelemetry meter, and Prometheus, StatsD, … exporters).

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use ::metrics::{Label, SharedString, Unit};
use http::{Method, StatusCode};

use crate::attempt_log::AttemptOutcome;
use crate::gate::RetryCause;
use crate::observer::{AttemptFinished, HedgeEvent, IntentEnd, IntentObserver, RetryScheduled};

const REQUEST_DURATION: &str = "http.client.request.duration";
const INTENT_DURATION: &str = "reqwest_resilience.intent.duration";
const INTENT_ATTEMPTS: &str = "reqwest_resilience.intent.attempts";
const RETRIES: &str = "reqwest_resilience.intent.retries";
const GIVE_UPS: &str = "reqwest_resilience.intent.give_ups";
const OUTCOME_UNKNOWN: &str = "reqwest_resilience.intent.outcome_unknown";
const BUDGET_REFUSALS: &str = "reqwest_resilience.intent.budget_refusals";
const GATE_REFUSALS: &str = "reqwest_resilience.intent.gate_refusals";
const HEDGES: &str = "reqwest_resilience.intent.hedges";

const METHOD: &str = "http.request.method";
const ADDRESS: &str = "server.address";
const PORT: &str = "server.port";
const STATUS: &str = "http.response.status_code";
const ERROR_TYPE: &str = "error.type";
const RETRY_CAUSE: &str = "reqwest_resilience.retry.cause";
const GIVE_UP_REASON: &str = "reqwest_resilience.give_up.reason";
const GATE: &str = "reqwest_resilience.gate";
const HEDGE_EVENT: &str = "reqwest_resilience.hedge.event";

/// `error.type` of a hedged copy cancelled because another copy answered first.
const CANCELLED: &str = "cancelled";

/// OpenTelemetry's value for anything outside a bounded set.
const OTHER: &str = "_OTHER";

/// An [`IntentObserver`] that records each attempt's duration and what each intent
/// did (retries, give-ups, refusals) through the `metrics` facade, with
/// OpenTelemetry's HTTP client names and attributes.
///
/// Attach it to a policy with [`RetryPolicyBuilder::observer`]; install a recorder
/// (an exporter) in the application as usual. Its hooks are synchronous, like
/// every observer's: an intent never awaits it.
///
/// # Metrics
///
/// | name | kind, unit | recorded | attributes |
/// | --- | --- | --- | --- |
/// | `http.client.request.duration` | histogram, `s` | per attempt: from sending to the response head (or the failure) | **S**, `http.response.status_code` (when a response came), `error.type` (the status for ≥ 400, else the [transport failure](crate::TransportFailure::as_str)) |
/// | `reqwest_resilience.intent.duration` | histogram, `s` | per intent: from `send()` to its end, pauses included ([`IntentEnd::elapsed`]) | **S**, `error.type` (the [give-up reason](crate::GiveUpReason::as_str), when it gave up) |
/// | `reqwest_resilience.intent.attempts` | histogram, `{attempt}` | per intent: attempts made (0 when refused before sending) | as the intent duration |
/// | `reqwest_resilience.intent.retries` | counter, `{retry}` | per scheduled retry | **S**, `reqwest_resilience.retry.cause` (`transient`, `conflict`), `error.type` of the attempt retried |
/// | `reqwest_resilience.intent.give_ups` | counter, `{intent}` | per intent that ended in an error | **S**, `reqwest_resilience.give_up.reason` |
/// | `reqwest_resilience.intent.outcome_unknown` | counter, `{intent}` | per error whose [outcome is unknown](crate::Error::is_outcome_unknown) | **S** |
/// | `reqwest_resilience.intent.budget_refusals` | counter, `{intent}` | per intent the [retry budget](crate::RetryBudget) stopped | **S** |
/// | `reqwest_resilience.intent.gate_refusals` | counter, `{intent}` | per intent another [gate](crate::Gate) stopped | **S**, `reqwest_resilience.gate` (the gate's [name](crate::Gate::name)) |
/// | `reqwest_resilience.intent.hedges` | counter, `{copy}` | per [hedged](crate::Hedging) copy event: a hedge sent, a hedge that won, a copy cancelled (another answered first), a hedge refused by the hedge cap or by a gate | **S**, `reqwest_resilience.hedge.event` (`sent`, `won`, `cancelled`, `refused_by_cap`, `refused_by_gate`) |
///
/// **S** is the server and method: `http.request.method` (the standard methods,
/// else `_OTHER`), `server.address` (the URL's host) and `server.port` (its port or
/// the scheme's default). Every value is bounded: no URL, path, query, key or id is
/// ever a label; a client that talks to more than [`MAX_SERVERS`](Self::MAX_SERVERS)
/// host/port pairs labels the rest `_OTHER`. Gate names come from code, not requests.
///
/// A Prometheus exporter replaces the dots with underscores; with
/// `metrics-exporter-prometheus`'s `with_recommended_naming(true)` it also adds the
/// unit to histograms and `_total` to counters:
/// `http_client_request_duration_seconds_bucket{http_request_method="GET",…}`,
/// `reqwest_resilience_intent_retries_total{reqwest_resilience_retry_cause="transient",…}`,
/// `reqwest_resilience_intent_give_ups_total{reqwest_resilience_give_up_reason="attempts_exhausted",…}`.
/// Histograms carry no buckets through the facade: configure the exporter with
/// [`DURATION_BUCKETS`](Self::DURATION_BUCKETS) and
/// [`ATTEMPT_BUCKETS`](Self::ATTEMPT_BUCKETS) ([`examples/metrics_prometheus.rs`](https://docs.rs/crate/reqwest-resilience/latest/source/examples/metrics_prometheus.rs)).
///
/// Not recorded (yet), because observers are not told about them:
/// - circuit breaker state changes: observers hear how intents end, not gate
///   state transitions. The name `reqwest_resilience.gate.state_changes`
///   (counter; `reqwest_resilience.gate`, `reqwest_resilience.gate.state`) is
///   reserved for when gates report them.
/// - intents refused as invalid (a bad request or key) before any observer is
///   reached. A gate that holds back the *first* attempt (an open breaker) is
///   counted: observers' synchronous end hook hears of it.
///
/// # Cost
///
/// Per attempt one histogram record; per intent two more, plus the counters that
/// apply. Each record builds its label set (one allocation: the facade's label
/// list); the method and status labels are static strings, the server's labels are
/// made once per host/port pair and shared afterwards.
///
/// # Examples
/// ```
/// use reqwest_resilience::{Metrics, ResilientClient, RetryPolicy};
///
/// // Install your exporter's recorder first (e.g. metrics-exporter-prometheus).
/// let policy = RetryPolicy::builder().observer(Metrics::new()).build()?;
/// let client = ResilientClient::with_policy(policy);
/// # drop(client);
/// # Ok::<(), reqwest_resilience::BuildError>(())
/// ```
///
/// For anything else (other names, other labels, per-route figures), write your own
/// observer: `examples/metrics.rs` is the recipe.
///
/// [`RetryPolicyBuilder::observer`]: crate::RetryPolicyBuilder::observer
#[derive(Debug, Default)]
pub struct Metrics {
    servers: ServerLabels,
}

impl Metrics {
    /// OpenTelemetry's advised bucket boundaries for `http.client.request.duration`,
    /// in seconds; they suit the intent duration too.
    pub const DURATION_BUCKETS: [f64; 14] = [
        0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
    ];

    /// Bucket boundaries for `reqwest_resilience.intent.attempts`.
    pub const ATTEMPT_BUCKETS: [f64; 8] = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 7.0, 10.0];

    /// How many distinct host/port pairs get labels of their own; the rest share
    /// `server.address="_OTHER"`, `server.port="_OTHER"`.
    pub const MAX_SERVERS: usize = 256;

    /// An observer that records into the current recorder, and describes its
    /// metrics (units and help texts) to the recorder installed now.
    pub fn new() -> Self {
        Self::describe();
        Self::default()
    }

    /// Describes every metric (unit and help text) to the current recorder. [`new`]
    /// does this; call it again after installing a recorder later.
    ///
    /// [`new`]: Self::new
    pub fn describe() {
        ::metrics::describe_histogram!(
            REQUEST_DURATION,
            Unit::Seconds,
            "Duration of each HTTP attempt, to the response head or the failure."
        );
        ::metrics::describe_histogram!(
            INTENT_DURATION,
            Unit::Seconds,
            "Duration of each intent, from send() to its end, pauses included."
        );
        ::metrics::describe_histogram!(
            INTENT_ATTEMPTS,
            Unit::Count,
            "Attempts made by each intent."
        );
        ::metrics::describe_counter!(RETRIES, Unit::Count, "Retries scheduled, by cause.");
        ::metrics::describe_counter!(
            GIVE_UPS,
            Unit::Count,
            "Intents that ended in an error, by reason."
        );
        ::metrics::describe_counter!(
            OUTCOME_UNKNOWN,
            Unit::Count,
            "Intents that ended without knowing whether the server acted."
        );
        ::metrics::describe_counter!(
            BUDGET_REFUSALS,
            Unit::Count,
            "Intents stopped by the retry budget."
        );
        ::metrics::describe_counter!(
            GATE_REFUSALS,
            Unit::Count,
            "Intents stopped by a gate other than the budget, by gate."
        );
        ::metrics::describe_counter!(
            HEDGES,
            Unit::Count,
            "Hedged copies sent, won, cancelled, and hedges refused, by event."
        );
    }

    /// The labels every metric carries: method, server address and port; room for
    /// `extra` more.
    fn labels(&self, method: &Method, url: &reqwest::Url, extra: usize) -> Vec<Label> {
        let (address, port) = self
            .servers
            .get(url.host_str().unwrap_or(""), url.port_or_known_default());
        let mut labels = Vec::with_capacity(3 + extra);
        labels.push(Label::new(METHOD, method_label(method)));
        labels.push(Label::new(ADDRESS, address));
        labels.push(Label::new(PORT, port));
        labels
    }
}

impl IntentObserver for Metrics {
    fn attempt_finished(&self, attempt: &AttemptFinished<'_>) {
        let record = attempt.record();
        let mut labels = self.labels(attempt.method(), attempt.url(), 2);
        match record.outcome() {
            AttemptOutcome::Status(status) => {
                labels.push(Label::new(STATUS, status_label(*status)));
                if status.is_client_error() || status.is_server_error() {
                    labels.push(Label::new(ERROR_TYPE, status_label(*status)));
                }
            }
            AttemptOutcome::Failed(failure) => {
                labels.push(Label::new(ERROR_TYPE, failure.as_str()));
            }
            AttemptOutcome::Cancelled => labels.push(Label::new(ERROR_TYPE, CANCELLED)),
        }
        ::metrics::histogram!(REQUEST_DURATION, labels).record(record.duration().as_secs_f64());
    }

    fn retry_scheduled(&self, retry: &RetryScheduled<'_>) {
        let mut labels = self.labels(retry.method(), retry.url(), 2);
        labels.push(Label::new(RETRY_CAUSE, cause_label(retry.cause())));
        let error_type = match retry.record().outcome() {
            AttemptOutcome::Status(status) => status_label(*status),
            AttemptOutcome::Failed(failure) => failure.as_str(),
            AttemptOutcome::Cancelled => CANCELLED,
        };
        labels.push(Label::new(ERROR_TYPE, error_type));
        ::metrics::counter!(RETRIES, labels).increment(1);
    }

    fn hedge(&self, event: &HedgeEvent<'_>) {
        let mut labels = self.labels(event.method(), event.url(), 1);
        labels.push(Label::new(HEDGE_EVENT, event.kind().as_str()));
        ::metrics::counter!(HEDGES, labels).increment(1);
    }

    fn finished(&self, end: &IntentEnd<'_>) {
        let server = self.labels(end.method(), end.url(), 1);
        let attempts = end.attempt_log().map_or(0, |log| log.len());
        let Some(error) = end.error() else {
            ::metrics::histogram!(INTENT_ATTEMPTS, server.clone()).record(attempts as f64);
            ::metrics::histogram!(INTENT_DURATION, server).record(end.elapsed().as_secs_f64());
            return;
        };
        let reason = error.reason().as_str();
        let with = |key: &'static str, value: SharedString| {
            let mut labels = server.clone();
            labels.push(Label::new(key, value));
            labels
        };
        ::metrics::histogram!(INTENT_ATTEMPTS, with(ERROR_TYPE, reason.into()))
            .record(attempts as f64);
        ::metrics::histogram!(INTENT_DURATION, with(ERROR_TYPE, reason.into()))
            .record(end.elapsed().as_secs_f64());
        ::metrics::counter!(GIVE_UPS, with(GIVE_UP_REASON, reason.into())).increment(1);
        if error.is_outcome_unknown() {
            ::metrics::counter!(OUTCOME_UNKNOWN, server.clone()).increment(1);
        }
        if error.is_budget_exhausted() {
            ::metrics::counter!(BUDGET_REFUSALS, server.clone()).increment(1);
        }
        if error.is_gate_refused() {
            let gate = error
                .gate_refusal()
                .map_or(SharedString::const_str(OTHER), |refusal| {
                    refusal.gate().to_owned().into()
                });
            ::metrics::counter!(GATE_REFUSALS, with(GATE, gate)).increment(1);
        }
    }
}

/// `server.address` and `server.port` labels, made once per host/port pair and
/// shared (an `Arc` clone) afterwards; at most [`Metrics::MAX_SERVERS`] pairs.
#[derive(Debug, Default)]
struct ServerLabels {
    known: RwLock<ByHost>,
}

/// Each host's ports, with their labels.
type ByHost = HashMap<Box<str>, Vec<Server>>;

/// One host/port pair and its label values.
#[derive(Debug)]
struct Server {
    port: Option<u16>,
    address_label: Arc<str>,
    port_label: Arc<str>,
}

impl Server {
    fn labels(&self) -> (SharedString, SharedString) {
        (
            SharedString::from(Arc::clone(&self.address_label)),
            SharedString::from(Arc::clone(&self.port_label)),
        )
    }
}

impl ServerLabels {
    fn get(&self, host: &str, port: Option<u16>) -> (SharedString, SharedString) {
        let find = |known: &ByHost| {
            known
                .get(host)?
                .iter()
                .find(|server| server.port == port)
                .map(Server::labels)
        };
        if let Some(labels) = find(&self.known.read().unwrap_or_else(PoisonError::into_inner)) {
            return labels;
        }
        let mut known = self.known.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(labels) = find(&known) {
            return labels;
        }
        if known.values().map(Vec::len).sum::<usize>() >= Metrics::MAX_SERVERS {
            return (
                SharedString::const_str(OTHER),
                SharedString::const_str(OTHER),
            );
        }
        let server = Server {
            port,
            address_label: Arc::from(host),
            port_label: Arc::from(port.map_or_else(String::new, |port| port.to_string())),
        };
        let labels = server.labels();
        known.entry(host.into()).or_default().push(server);
        labels
    }
}

/// OpenTelemetry's `http.request.method`: the known methods as they are, any
/// other as `_OTHER` (a method is the caller's string, so not bounded).
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::TRACE => "TRACE",
        Method::CONNECT => "CONNECT",
        _ => OTHER,
    }
}

fn cause_label(cause: RetryCause) -> &'static str {
    match cause {
        RetryCause::Transient => "transient",
        RetryCause::Conflict => "conflict",
        RetryCause::Hedge => "hedge",
    }
}

/// Every status code's three digits, 100 to 999, in one static string's bytes: a
/// status label is then a `&'static str` and costs no allocation.
static STATUS_DIGITS: [u8; 2700] = status_digits();

const fn status_digits() -> [u8; 2700] {
    let mut digits = [0u8; 2700];
    let mut i = 0;
    while i < 900 {
        let code = 100 + i;
        digits[3 * i] = b'0' + (code / 100) as u8;
        digits[3 * i + 1] = b'0' + (code / 10 % 10) as u8;
        digits[3 * i + 2] = b'0' + (code % 10) as u8;
        i += 1;
    }
    digits
}

fn status_label(status: StatusCode) -> &'static str {
    // `StatusCode` is always 100..=999.
    let start = usize::from(status.as_u16().saturating_sub(100)) * 3;
    STATUS_DIGITS
        .get(start..start + 3)
        .and_then(|digits| std::str::from_utf8(digits).ok())
        .unwrap_or(OTHER)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_labels_are_the_three_digits() {
        for code in [100u16, 200, 204, 404, 429, 503, 599, 999] {
            let status = StatusCode::from_u16(code).unwrap();
            assert_eq!(status_label(status), code.to_string());
        }
    }

    #[test]
    fn methods_outside_the_standard_set_are_other() {
        assert_eq!(method_label(&Method::POST), "POST");
        assert_eq!(method_label(&Method::from_bytes(b"PURGE").unwrap()), OTHER);
    }

    #[test]
    fn server_labels_are_shared_and_capped() {
        let servers = ServerLabels::default();
        let (address, port) = servers.get("127.0.0.1", Some(8080));
        assert_eq!((&*address, &*port), ("127.0.0.1", "8080"));
        let (_, other_port) = servers.get("127.0.0.1", Some(9090));
        assert_eq!(&*other_port, "9090");
        for n in 0..Metrics::MAX_SERVERS {
            let _ = servers.get(&format!("host{n}.test"), Some(443));
        }
        let (address, port) = servers.get("one-too-many.test", Some(443));
        assert_eq!((&*address, &*port), (OTHER, OTHER));
        // Known pairs keep their labels past the cap.
        let (address, port) = servers.get("127.0.0.1", Some(8080));
        assert_eq!((&*address, &*port), ("127.0.0.1", "8080"));
    }
}
