//! A kit for testing *your* code that sends requests through this crate, against
//! [`wiremock`] stubs (feature `testing`).
//!
//! * **Responders** ([`wiremock::Respond`]) for the failures retries are about:
//!   [`FailTimes`] (fail n times, then succeed), [`RetryAfter`] (a 429/503 with a
//!   `Retry-After` in seconds or as an HTTP date) and [`Scripted`] (a fixed
//!   sequence). The counting ones are cheap to clone and clones share the count,
//!   so keep a clone to ask how many requests were served.
//! * **A test policy**, [`test_policy`]: an instant [`RecordingSleeper`] (the
//!   retries happen for real over HTTP, in no time, and every pause is recorded),
//!   seeded jitter, tiny backoff and no retry budget.
//! * **Assertions** over the requests the mock server received:
//!   [`assert_same_idempotency_key`] (every attempt of one intent carries the same
//!   key) and [`assert_distinct_request_ids`] (every attempt has its own id), with
//!   `_in` variants for custom header names.
//!
//! # Example
//! ```
//! use std::time::Duration;
//! use reqwest_resilience::testing::{
//!     assert_distinct_request_ids, assert_same_idempotency_key, test_policy, FailTimes,
//!     RecordingSleeper,
//! };
//! use reqwest_resilience::ResilientClient;
//! use wiremock::matchers::{method, path};
//! use wiremock::{Mock, MockServer, ResponseTemplate};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! // A payment API that is unavailable twice, then takes the payment.
//! let server = MockServer::start().await; // listens on 127.0.0.1
//! let flaky = FailTimes::new(2, ResponseTemplate::new(503)).then(ResponseTemplate::new(201));
//! Mock::given(method("POST"))
//!     .and(path("/payments"))
//!     .respond_with(flaky.clone())
//!     .mount(&server)
//!     .await;
//!
//! let sleeper = RecordingSleeper::new();
//! let policy = test_policy(&sleeper).build().expect("valid policy");
//! let client = ResilientClient::with_policy(policy);
//!
//! let response = client
//!     .post(format!("{}/payments", server.uri()))
//!     .body(r#"{"amount": 500}"#)
//!     .send()
//!     .await
//!     .expect("the third attempt succeeds");
//!
//! assert_eq!(response.status(), 201);
//! assert_eq!(flaky.served(), 3);
//! assert_eq!(sleeper.delays().len(), 2); // two pauses, recorded, not slept
//! assert!(sleeper.total() <= Duration::from_millis(20));
//!
//! let requests = server.received_requests().await.expect("recording is on");
//! let key = assert_same_idempotency_key(&requests); // one intent, one key
//! assert!(!key.is_empty());
//! assert_distinct_request_ids(&requests); // one id per attempt
//! # }
//! ```

use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use wiremock::{Request, Respond, ResponseTemplate};

use crate::backoff::Backoff;
use crate::policy::{
    RetryPolicy, RetryPolicyBuilder, DEFAULT_KEY_HEADER, DEFAULT_REQUEST_ID_HEADER,
};
use crate::retry_after::format_imf_fixdate;

pub use crate::sleeper::RecordingSleeper;
/// The `wiremock` this kit implements [`Respond`] for: use it (or the same version)
/// so that the responders fit your `Mock`s.
pub use wiremock;

/// A policy for tests: `sleeper` (instant, records every pause), jitter seeded with
/// 0 (repeatable delays), full-jitter backoff of 1–10 ms and no retry budget (so
/// earlier tests cannot starve later ones). Everything else is the default;
/// override what the test is about before [`build`](RetryPolicyBuilder::build).
///
/// # Examples
/// ```
/// use reqwest_resilience::testing::{test_policy, RecordingSleeper};
///
/// let sleeper = RecordingSleeper::new();
/// let policy = test_policy(&sleeper).max_attempts(5).build().unwrap();
/// assert_eq!(policy.max_attempts(), 5);
/// ```
pub fn test_policy(sleeper: &RecordingSleeper) -> RetryPolicyBuilder {
    RetryPolicy::builder()
        .sleeper(sleeper.clone())
        .rng_seed(0)
        .backoff(Backoff::full_jitter(
            Duration::from_millis(1),
            Duration::from_millis(10),
        ))
        .no_budget()
}

/// Answers `failure` to the first `n` requests, then `success` to every later one
/// (200 with an empty body unless [`then`](Self::then) says otherwise).
///
/// Clones share the count of requests served.
///
/// # Examples
/// ```
/// use reqwest_resilience::testing::FailTimes;
/// use wiremock::ResponseTemplate;
///
/// let flaky = FailTimes::new(2, ResponseTemplate::new(503))
///     .then(ResponseTemplate::new(200).set_body_string("ok"));
/// // Mock::given(...).respond_with(flaky.clone()) ... then:
/// assert_eq!(flaky.served(), 0);
/// ```
#[derive(Debug, Clone)]
pub struct FailTimes {
    failures: usize,
    failure: ResponseTemplate,
    success: ResponseTemplate,
    served: Arc<AtomicUsize>,
}

impl FailTimes {
    /// Fails `n` times with `failure`, then answers 200.
    pub fn new(n: usize, failure: ResponseTemplate) -> Self {
        Self {
            failures: n,
            failure,
            success: ResponseTemplate::new(200),
            served: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Answers `success` once the failures are spent.
    pub fn then(mut self, success: ResponseTemplate) -> Self {
        self.success = success;
        self
    }

    /// Requests answered so far, failures and successes together.
    pub fn served(&self) -> usize {
        self.served.load(Ordering::SeqCst)
    }
}

impl Respond for FailTimes {
    fn respond(&self, _request: &Request) -> ResponseTemplate {
        let index = self.served.fetch_add(1, Ordering::SeqCst);
        if index < self.failures {
            self.failure.clone()
        } else {
            self.success.clone()
        }
    }
}

/// A response with `status` and a `Retry-After` header, in delay-seconds
/// ([`seconds`](Self::seconds)) or as an HTTP date ([`at`](Self::at)).
///
/// Used as a responder it answers every request so; to answer once and then
/// succeed, turn it into a [`ResponseTemplate`] for [`FailTimes`] or [`Scripted`]:
///
/// ```
/// use reqwest_resilience::testing::{FailTimes, RetryAfter};
/// use wiremock::ResponseTemplate;
///
/// let throttled_once = FailTimes::new(1, RetryAfter::seconds(429, 1).into())
///     .then(ResponseTemplate::new(200));
/// # drop(throttled_once);
/// ```
#[derive(Debug, Clone)]
pub struct RetryAfter {
    status: http::StatusCode,
    value: String,
}

impl RetryAfter {
    /// `status` with `Retry-After: <secs>`.
    ///
    /// # Panics
    /// If `status` is not a valid status code (100–999).
    #[track_caller]
    pub fn seconds(status: u16, secs: u64) -> Self {
        Self {
            status: status_code(status),
            value: secs.to_string(),
        }
    }

    /// `status` with `Retry-After: <IMF-fixdate>`, such as
    /// `Sun, 06 Nov 1994 08:49:37 GMT` (whole seconds: the fraction of `when` is
    /// dropped, so the client may be told up to a second less than `when - now`).
    ///
    /// # Panics
    /// If `status` is not a valid status code (100–999).
    #[track_caller]
    pub fn at(status: u16, when: SystemTime) -> Self {
        Self {
            status: status_code(status),
            value: format_imf_fixdate(when),
        }
    }

    /// The `Retry-After` header value sent.
    pub fn header_value(&self) -> &str {
        &self.value
    }

    /// The response, as a template you can extend (with a body, more headers…).
    pub fn template(&self) -> ResponseTemplate {
        ResponseTemplate::new(self.status).insert_header("Retry-After", self.value.as_str())
    }
}

#[track_caller]
fn status_code(status: u16) -> http::StatusCode {
    http::StatusCode::from_u16(status)
        .unwrap_or_else(|_| panic!("RetryAfter: {status} is not a valid status code (100-999)"))
}

impl Respond for RetryAfter {
    fn respond(&self, _request: &Request) -> ResponseTemplate {
        self.template()
    }
}

impl From<RetryAfter> for ResponseTemplate {
    fn from(retry_after: RetryAfter) -> Self {
        retry_after.template()
    }
}

/// Answers the templates in order, one per request, then repeats the last one.
///
/// Clones share the count of requests served.
///
/// # Examples
/// ```
/// use reqwest_resilience::testing::{RetryAfter, Scripted};
/// use wiremock::ResponseTemplate;
///
/// let script = Scripted::new(vec![
///     ResponseTemplate::new(502),
///     RetryAfter::seconds(503, 2).into(),
///     ResponseTemplate::new(201),
/// ]);
/// assert_eq!(script.served(), 0);
/// ```
#[derive(Debug, Clone)]
pub struct Scripted {
    script: Arc<[ResponseTemplate]>,
    served: Arc<AtomicUsize>,
}

impl Scripted {
    /// A script of the given responses.
    ///
    /// # Panics
    /// If `script` is empty: there would be nothing to answer.
    pub fn new(script: impl IntoIterator<Item = ResponseTemplate>) -> Self {
        let script: Arc<[ResponseTemplate]> = script.into_iter().collect();
        assert!(
            !script.is_empty(),
            "Scripted::new needs at least one response"
        );
        Self {
            script,
            served: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Requests answered so far.
    pub fn served(&self) -> usize {
        self.served.load(Ordering::SeqCst)
    }
}

impl Respond for Scripted {
    fn respond(&self, _request: &Request) -> ResponseTemplate {
        let index = self.served.fetch_add(1, Ordering::SeqCst);
        self.script[index.min(self.script.len() - 1)].clone()
    }
}

/// The value of `header` on each request, in order (`None` where absent; a value
/// that is not UTF-8 is converted lossily).
fn header_values(requests: &[Request], header: &str) -> Vec<Option<String>> {
    requests
        .iter()
        .map(|request| {
            request
                .headers
                .get(header)
                .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
        })
        .collect()
}

/// Panics if some request carries `header` more than once.
#[track_caller]
fn assert_at_most_once(requests: &[Request], header: &str) {
    for (index, request) in requests.iter().enumerate() {
        let values: Vec<_> = request.headers.get_all(header).iter().collect();
        assert!(
            values.len() <= 1,
            "request {} carries the {header} header {} times: {values:?}",
            index + 1,
            values.len(),
        );
    }
}

/// The `Idempotency-Key` of each request, in order (`None` where absent).
pub fn idempotency_keys(requests: &[Request]) -> Vec<Option<String>> {
    idempotency_keys_in(requests, DEFAULT_KEY_HEADER)
}

/// [`idempotency_keys`] for a policy with a custom
/// [`key_header`](RetryPolicyBuilder::key_header) (names are case-insensitive).
pub fn idempotency_keys_in(requests: &[Request], header: impl AsRef<str>) -> Vec<Option<String>> {
    header_values(requests, header.as_ref())
}

/// The `X-Request-Id` of each request, in order (`None` where absent).
pub fn request_ids(requests: &[Request]) -> Vec<Option<String>> {
    request_ids_in(requests, DEFAULT_REQUEST_ID_HEADER)
}

/// [`request_ids`] for a policy with a custom
/// [`request_id_header`](RetryPolicyBuilder::request_id_header).
pub fn request_ids_in(requests: &[Request], header: impl AsRef<str>) -> Vec<Option<String>> {
    header_values(requests, header.as_ref())
}

/// Asserts that all attempts of one intent carry the same `Idempotency-Key`, and
/// returns it. Pass the requests of one intent only (filter by path or method if
/// the server saw others).
///
/// # Panics
/// With the keys listed, if there are no requests, if a request has no key (or
/// two), or if the keys differ — a retry with a new key is a new payment.
#[track_caller]
pub fn assert_same_idempotency_key(requests: &[Request]) -> String {
    assert_same_idempotency_key_in(requests, DEFAULT_KEY_HEADER)
}

/// [`assert_same_idempotency_key`] for a custom key header.
///
/// # Panics
/// As [`assert_same_idempotency_key`].
#[track_caller]
pub fn assert_same_idempotency_key_in(requests: &[Request], header: impl AsRef<str>) -> String {
    let header = header.as_ref();
    assert!(
        !requests.is_empty(),
        "expected the attempts of one intent to carry the same {header} header, but no requests were received"
    );
    assert_at_most_once(requests, header);
    let keys = header_values(requests, header);
    let first = keys[0].clone();
    let same = first.is_some() && keys.iter().all(|key| *key == first);
    assert!(
        same,
        "expected all attempts of one intent to carry the same {header} header; got {}",
        listing(&keys)
    );
    first.unwrap_or_default()
}

/// Asserts that every request carries an `X-Request-Id` and that no two are the
/// same (each attempt is logged under its own id).
///
/// # Panics
/// With the ids listed, if a request has none (or two), or if an id repeats.
#[track_caller]
pub fn assert_distinct_request_ids(requests: &[Request]) {
    assert_distinct_request_ids_in(requests, DEFAULT_REQUEST_ID_HEADER);
}

/// [`assert_distinct_request_ids`] for a custom request id header.
///
/// # Panics
/// As [`assert_distinct_request_ids`].
#[track_caller]
pub fn assert_distinct_request_ids_in(requests: &[Request], header: impl AsRef<str>) {
    let header = header.as_ref();
    assert_at_most_once(requests, header);
    let ids = header_values(requests, header);
    assert!(
        ids.iter().all(Option::is_some),
        "expected every attempt to carry the {header} header; got {}",
        listing(&ids)
    );
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert!(
        unique.len() == ids.len(),
        "expected a distinct {header} on every attempt, but some repeat; got {}",
        listing(&ids)
    );
}

/// `attempt 1: "a", attempt 2: (none)`.
fn listing(values: &[Option<String>]) -> String {
    let mut out = String::new();
    for (index, value) in values.iter().enumerate() {
        if index > 0 {
            out.push_str(", ");
        }
        let _ = match value {
            Some(value) => write!(out, "attempt {}: {value:?}", index + 1),
            None => write!(out, "attempt {}: (none)", index + 1),
        };
    }
    out
}
