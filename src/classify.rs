//! What is worth retrying, and which requests may be retried at all.
//!
//! Two separate questions, answered in this order:
//!
//! 1. **Is the failure transient?** A retry can only help when the next attempt may
//!    get a different answer: connect errors, timeouts, connections lost before a full
//!    response, and the statuses 408, 429, 502, 503 and 504 (500 is opt-in: it is as
//!    often a bug as an outage). A 409 on a keyed request means "the same key is still
//!    in progress" and is worth waiting out. 400, 401, 403, 404, 422… will be the same
//!    next time. This is configurable ([`StatusSet`], a user [`Classifier`]).
//! 2. **Is a retry safe for this request?** RFC 9110 §9.2.2: GET, HEAD, OPTIONS, TRACE,
//!    PUT and DELETE are idempotent. POST and PATCH are retried only with an
//!    idempotency key, or when the failure proves the request never left (a refused
//!    connect, an HTTP/2 stream refused or above a GOAWAY: see
//!    [`TransportFailure::proves_not_sent`]). This rule is not configurable: it is
//!    what keeps a customer from paying twice.

use std::time::Duration;

use http::header::HeaderName;
use http::{HeaderMap, Method, StatusCode};

use crate::attempt_log::{AttemptOutcome, TransportFailure};
use crate::clock::Clock;
use crate::decision::Decision;
use crate::retry_after::retry_after_of;
use crate::transport::TransportError;

/// A borrowed view of one finished attempt, given to a [`Classifier`].
#[derive(Debug)]
pub struct AttemptView<'a> {
    pub(crate) method: &'a Method,
    pub(crate) url: &'a reqwest::Url,
    pub(crate) attempt: u32,
    pub(crate) keyed: bool,
    pub(crate) result: AttemptResult<'a>,
}

/// What a classified attempt got.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum AttemptResult<'a> {
    /// A response head.
    Response {
        /// Its status.
        status: StatusCode,
        /// Its headers.
        headers: &'a HeaderMap,
    },
    /// A transport error.
    Error {
        /// The kind, as the crate sorts it.
        failure: TransportFailure,
        /// reqwest's error.
        error: &'a reqwest::Error,
    },
}

impl<'a> AttemptView<'a> {
    /// The request method.
    pub fn method(&self) -> &'a Method {
        self.method
    }

    /// The request URL.
    pub fn url(&self) -> &'a reqwest::Url {
        self.url
    }

    /// 1 for the first attempt.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// True when the request carries an idempotency key.
    pub fn is_keyed(&self) -> bool {
        self.keyed
    }

    /// The response status, if a response arrived.
    pub fn status(&self) -> Option<StatusCode> {
        match self.result {
            AttemptResult::Response { status, .. } => Some(status),
            AttemptResult::Error { .. } => None,
        }
    }

    /// The response headers, if a response arrived.
    pub fn headers(&self) -> Option<&'a HeaderMap> {
        match self.result {
            AttemptResult::Response { headers, .. } => Some(headers),
            AttemptResult::Error { .. } => None,
        }
    }

    /// The transport failure, if no response arrived.
    pub fn failure(&self) -> Option<TransportFailure> {
        match self.result {
            AttemptResult::Error { failure, .. } => Some(failure),
            AttemptResult::Response { .. } => None,
        }
    }

    /// The whole result.
    pub fn result(&self) -> AttemptResult<'a> {
        self.result
    }
}

/// A user-supplied classification, consulted before the default one.
///
/// Return `Some` to decide, `None` to fall back to the default. A classifier may
/// also say when to come back ([`Decision::RetryAfter`]), as smithy-rs's do. Method safety is
/// applied afterwards and cannot be overridden: a classifier can make a POST
/// *without* key retryable only for failures where the request never left.
///
/// Implemented for any `Fn(&AttemptView<'_>) -> Option<Decision>`.
///
/// # Examples
/// ```
/// use reqwest_resilience::{Decision, RetryPolicy};
///
/// // Also retry 500, but never a 503 from /health.
/// let policy = RetryPolicy::builder()
///     .classifier(|attempt: &reqwest_resilience::AttemptView<'_>| {
///         match attempt.status()?.as_u16() {
///             500 => Some(Decision::Retry),
///             503 if attempt.url().path() == "/health" => Some(Decision::Stop),
///             _ => None,
///         }
///     })
///     .build()
///     .unwrap();
/// # drop(policy);
/// ```
pub trait Classifier: Send + Sync + 'static {
    /// Decide for this attempt, or `None` for the default.
    fn classify(&self, attempt: &AttemptView<'_>) -> Option<Decision>;
}

impl<F> Classifier for F
where
    F: Fn(&AttemptView<'_>) -> Option<Decision> + Send + Sync + 'static,
{
    fn classify(&self, attempt: &AttemptView<'_>) -> Option<Decision> {
        self(attempt)
    }
}

/// A set of HTTP status codes (100–999), stored as a bitset: `Copy`, no allocation.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct StatusSet([u64; 16]);

impl StatusSet {
    /// No status.
    pub const fn empty() -> Self {
        Self([0; 16])
    }

    /// 408, 429, 502, 503, 504: the default transient statuses.
    pub const fn transient_default() -> Self {
        Self::empty()
            .with(408)
            .with(429)
            .with(502)
            .with(503)
            .with(504)
    }

    /// This set plus `code` (codes outside 100–999 are ignored).
    pub const fn with(mut self, code: u16) -> Self {
        if code >= 100 && code <= 999 {
            self.0[(code / 64) as usize] |= 1 << (code % 64);
        }
        self
    }

    /// This set without `code`.
    pub const fn without(mut self, code: u16) -> Self {
        if code >= 100 && code <= 999 {
            self.0[(code / 64) as usize] &= !(1 << (code % 64));
        }
        self
    }

    /// True when `status` is in the set.
    pub fn contains(&self, status: StatusCode) -> bool {
        let code = status.as_u16();
        self.0[(code / 64) as usize] & (1 << (code % 64)) != 0
    }

    /// The codes in the set, ascending.
    pub fn iter(&self) -> impl Iterator<Item = u16> + '_ {
        (100..=999u16).filter(|code| self.0[(*code / 64) as usize] & (1 << (code % 64)) != 0)
    }
}

impl Default for StatusSet {
    fn default() -> Self {
        Self::transient_default()
    }
}

impl std::fmt::Debug for StatusSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl FromIterator<u16> for StatusSet {
    fn from_iter<I: IntoIterator<Item = u16>>(codes: I) -> Self {
        codes.into_iter().fold(Self::empty(), Self::with)
    }
}

/// RFC 9110 §9.2.2: repeating these has the effect of sending them once (GET,
/// HEAD, OPTIONS, TRACE, PUT, DELETE), as `http::Method::is_idempotent` lists them.
pub fn is_idempotent_method(method: &Method) -> bool {
    method.is_idempotent()
}

/// What classification reads of a policy, borrowed from it: the settings have one
/// owner (see [`RetryPolicyBuilder`](crate::RetryPolicyBuilder)).
#[derive(Clone, Copy)]
pub struct Rules<'p> {
    pub classifier: Option<&'p dyn Classifier>,
    pub server_hint_header: Option<&'p HeaderName>,
    pub transient_statuses: &'p StatusSet,
    pub retry_conflict_when_keyed: bool,
}

/// What one attempt's classification concluded.
#[derive(Debug, Clone, Copy)]
pub struct Verdict {
    pub(crate) outcome: AttemptOutcome,
    /// The classifier says another attempt may succeed…
    pub(crate) transient: bool,
    /// …and the method/key rules allow one.
    pub(crate) safe: bool,
    /// The earliest the next attempt may start (Retry-After or the classifier's
    /// word); only read when a retry follows.
    pub retry_after: Option<Duration>,
    /// A 409 on a keyed request: the same key is still executing on the server.
    pub conflict: bool,
    /// A `425 Too Early` (RFC 8470): the server did not process the request.
    pub too_early: bool,
}

impl Verdict {
    /// Retry the intent (before deadline, attempts and budget have their say)?
    pub fn retry(&self) -> bool {
        self.transient && self.safe
    }

    /// Does the attempt say the service or the network is struggling (what a
    /// breaker counts)? A transient failure — but not a 409 "same key in
    /// progress": that server is healthy and executing.
    pub fn struggling(&self) -> bool {
        self.transient && !self.conflict
    }

    /// Could this attempt have had an effect on the server (see
    /// `Error::is_outcome_unknown`)? Only transient failures count: a final response
    /// is an answer, not an unknown.
    pub(crate) fn may_have_applied(&self) -> bool {
        match self.outcome {
            AttemptOutcome::Status(status) => self.transient && !status_proves_no_effect(status),
            AttemptOutcome::Failed(failure) => failure.may_have_reached_server(),
            // Sent and never answered (a hedge's loser): it may have.
            AttemptOutcome::Cancelled => true,
        }
    }
}

/// Classifies one finished attempt: the caller's classifier first, then the
/// server's explicit hint, then the default; method safety last, and it cannot be
/// overridden. An HTTP-date `Retry-After` is measured from `clock`'s wall time.
pub fn classify(rules: &Rules<'_>, view: &AttemptView<'_>, clock: &dyn Clock) -> Verdict {
    let decision = rules
        .classifier
        .and_then(|classifier| classifier.classify(view))
        .or_else(|| server_hint(rules.server_hint_header, view))
        .unwrap_or_else(|| {
            default_decision(
                view,
                rules.transient_statuses,
                view.keyed && rules.retry_conflict_when_keyed,
            )
        });
    let transient = decision.is_retry();
    let safe = retry_is_safe(view.method, view.keyed, &view.result);
    let asked = match decision {
        Decision::RetryAfter(delay) => Some(delay),
        _ => None,
    };
    let (outcome, headers) = match view.result {
        AttemptResult::Response { status, headers } => {
            (AttemptOutcome::Status(status), Some(headers))
        }
        AttemptResult::Error { failure, .. } => (AttemptOutcome::Failed(failure), None),
    };
    // Dates are only parsed for statuses about to be retried.
    let retry_after = (transient && safe)
        .then(|| {
            asked.or_else(|| headers.and_then(|headers| retry_after_of(headers, clock.wall_now())))
        })
        .flatten();
    Verdict {
        outcome,
        transient,
        safe,
        retry_after,
        conflict: transient && view.keyed && view.status() == Some(StatusCode::CONFLICT),
        too_early: view.status().is_some_and(is_too_early),
    }
}

/// A server's explicit word on retrying (e.g. `Stripe-Should-Retry: true|false`),
/// when the policy names such a header.
fn server_hint(header: Option<&HeaderName>, view: &AttemptView<'_>) -> Option<Decision> {
    let value = view.headers()?.get(header?)?.to_str().ok()?.trim();
    if value.eq_ignore_ascii_case("true") {
        Some(Decision::Retry)
    } else if value.eq_ignore_ascii_case("false") {
        Some(Decision::Stop)
    } else {
        None
    }
}

/// The default classification of an attempt.
///
/// `retry_conflict` is true for a keyed request when 409 ("same key still in
/// progress") is to be waited out.
fn default_decision(
    view: &AttemptView<'_>,
    transient: &StatusSet,
    retry_conflict: bool,
) -> Decision {
    match view.result {
        AttemptResult::Response { status, .. } => {
            if transient.contains(status)
                || (retry_conflict && status == StatusCode::CONFLICT)
                || is_too_early(status)
            {
                Decision::Retry
            } else {
                Decision::Stop
            }
        }
        AttemptResult::Error { failure, .. } => {
            if failure.is_transient() {
                Decision::Retry
            } else {
                Decision::Stop
            }
        }
    }
}

/// May this request be sent again after this attempt, whatever the classification?
fn retry_is_safe(method: &Method, keyed: bool, result: &AttemptResult<'_>) -> bool {
    if keyed || is_idempotent_method(method) {
        return true;
    }
    // Without a key, only a request that provably had no effect may go again: it never
    // left, or the server said it did not process it.
    match result {
        AttemptResult::Error { failure, .. } => failure.proves_not_sent(),
        AttemptResult::Response { status, .. } => is_too_early(*status),
    }
}

/// `425 Too Early` (RFC 8470 §5.2): the server refused to process a request it
/// received too early (in TLS early data, or through an intermediary that could not
/// tell); the same request, sent again, is processed once. Retried once, for any
/// method (`decision::after_attempt`).
fn is_too_early(status: StatusCode) -> bool {
    status.as_u16() == 425
}

/// Did the server say, in effect, "nothing was done"? 408: the request was not even
/// fully received; 425: refused as too early, unprocessed (RFC 8470); 429: refused
/// by rate limiting, before any work. Anything else that
/// failed may have had an effect — including 503, which gateways (Envoy, nginx, cloud
/// load balancers) also send after forwarding the request upstream.
fn status_proves_no_effect(status: StatusCode) -> bool {
    matches!(status.as_u16(), 408 | 425 | 429)
}

/// Classifies one attempt's result, and records its OpenTelemetry attributes on
/// the attempt's `span`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn classify_result(
    rules: &Rules<'_>,
    clock: &dyn Clock,
    span: &tracing::Span,
    method: &Method,
    url: &reqwest::Url,
    attempt: u32,
    keyed: bool,
    result: &Result<reqwest::Response, TransportError>,
) -> Verdict {
    let view_result = match result {
        Ok(response) => {
            let status = response.status();
            span.record("http.response.status_code", status.as_u16());
            if status.is_client_error() || status.is_server_error() {
                span.record("error.type", status.as_str());
            }
            AttemptResult::Response {
                status,
                headers: response.headers(),
            }
        }
        Err(TransportError::Reqwest(error)) => {
            let failure = TransportFailure::of(error);
            span.record("error.type", failure.as_str());
            AttemptResult::Error { failure, error }
        }
        Err(TransportError::BodyCut(error)) => {
            // The attempt timer still runs while the body is read: its expiry is a
            // timeout like any other; anything else cut the answer short.
            let failure = if error.is_timeout() {
                TransportFailure::Timeout
            } else {
                TransportFailure::ResponseBodyCut
            };
            span.record("error.type", failure.as_str());
            AttemptResult::Error { failure, error }
        }
        Err(error @ (TransportError::Other(_) | TransportError::TooLarge { .. })) => {
            // Another middleware failed (not ours to retry), or the answer is final
            // but too large to read whole.
            let failure = match error {
                TransportError::TooLarge { .. } => TransportFailure::ResponseTooLarge,
                _ => TransportFailure::Other,
            };
            span.record("error.type", failure.as_str());
            return Verdict {
                outcome: AttemptOutcome::Failed(failure),
                transient: false,
                safe: false,
                retry_after: None,
                conflict: false,
                too_early: false,
            };
        }
    };
    let view = AttemptView {
        method,
        url,
        attempt,
        keyed,
        result: view_result,
    };
    classify(rules, &view, clock)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_transient_statuses() {
        let set = StatusSet::default();
        for code in [408, 429, 502, 503, 504] {
            assert!(set.contains(StatusCode::from_u16(code).unwrap()), "{code}");
        }
        for code in [200, 201, 301, 400, 401, 403, 404, 409, 422, 500, 501] {
            assert!(!set.contains(StatusCode::from_u16(code).unwrap()), "{code}");
        }
        assert_eq!(
            set.iter().collect::<Vec<_>>(),
            vec![408, 429, 502, 503, 504]
        );
    }

    #[test]
    fn status_set_edits() {
        let set = StatusSet::default()
            .with(500)
            .without(429)
            .with(42)
            .with(1000);
        assert_eq!(
            set.iter().collect::<Vec<_>>(),
            vec![408, 500, 502, 503, 504]
        );
        let collected: StatusSet = [999, 100].into_iter().collect();
        assert!(collected.contains(StatusCode::from_u16(999).unwrap()));
        assert_eq!(format!("{collected:?}"), "{100, 999}");
    }

    #[test]
    fn idempotent_methods_per_rfc_9110() {
        for method in [
            Method::GET,
            Method::HEAD,
            Method::OPTIONS,
            Method::TRACE,
            Method::PUT,
            Method::DELETE,
        ] {
            assert!(is_idempotent_method(&method), "{method}");
        }
        for method in [Method::POST, Method::PATCH, Method::CONNECT] {
            assert!(!is_idempotent_method(&method), "{method}");
        }
        assert!(!is_idempotent_method(
            &Method::from_bytes(b"PURGE").unwrap()
        ));
    }

    #[test]
    fn unkeyed_post_is_safe_to_retry_only_when_never_sent() {
        let headers = HeaderMap::new();
        let response = AttemptResult::Response {
            status: StatusCode::SERVICE_UNAVAILABLE,
            headers: &headers,
        };
        assert!(!retry_is_safe(&Method::POST, false, &response));
        assert!(retry_is_safe(&Method::POST, true, &response));
        assert!(retry_is_safe(&Method::GET, false, &response));
        let too_early = AttemptResult::Response {
            status: StatusCode::from_u16(425).unwrap(),
            headers: &headers,
        };
        assert!(
            retry_is_safe(&Method::POST, false, &too_early),
            "425: not processed"
        );
    }

    #[test]
    fn codes_outside_the_range_are_ignored_never_a_panic() {
        for code in [0, 42, 99, 1_000, 1_024, u16::MAX] {
            assert_eq!(
                StatusSet::default().with(code),
                StatusSet::default(),
                "{code}"
            );
            assert_eq!(
                StatusSet::default().without(code),
                StatusSet::default(),
                "{code}"
            );
        }
        let edges = StatusSet::empty().with(100).with(999);
        assert_eq!(edges.iter().collect::<Vec<_>>(), [100, 999]);
        assert_eq!(edges.without(100).without(999), StatusSet::empty());
    }

    /// A reqwest error to stand beside a failure kind (the kind is what the rules read).
    fn some_error() -> reqwest::Error {
        reqwest::Client::new()
            .get("not a url")
            .build()
            .expect_err("a builder error")
    }

    #[test]
    fn a_classifier_sees_the_attempt_as_it_was() {
        let url: reqwest::Url = "http://127.0.0.1:1/pay".parse().unwrap();
        let mut headers = HeaderMap::new();
        headers.insert("x-seen", "yes".parse().unwrap());
        let view = AttemptView {
            method: &Method::POST,
            url: &url,
            attempt: 2,
            keyed: true,
            result: AttemptResult::Response {
                status: StatusCode::SERVICE_UNAVAILABLE,
                headers: &headers,
            },
        };
        assert_eq!(view.method(), Method::POST);
        assert_eq!(view.url().path(), "/pay");
        assert_eq!(view.attempt(), 2);
        assert!(view.is_keyed());
        assert_eq!(view.status(), Some(StatusCode::SERVICE_UNAVAILABLE));
        assert_eq!(
            view.headers().map(|h| &h["x-seen"]),
            Some(&headers["x-seen"])
        );
        assert_eq!(view.failure(), None);
        assert!(matches!(
            view.result(),
            AttemptResult::Response { status, .. } if status == StatusCode::SERVICE_UNAVAILABLE
        ));
        let error = some_error();
        let failed = AttemptView {
            method: &Method::GET,
            url: &url,
            attempt: 3,
            keyed: false,
            result: AttemptResult::Error {
                failure: TransportFailure::Timeout,
                error: &error,
            },
        };
        assert_eq!(failed.method(), Method::GET);
        assert_eq!(failed.attempt(), 3);
        assert!(!failed.is_keyed());
        assert_eq!((failed.status(), failed.headers()), (None, None));
        assert_eq!(failed.failure(), Some(TransportFailure::Timeout));
        assert!(matches!(
            failed.result(),
            AttemptResult::Error {
                failure: TransportFailure::Timeout,
                ..
            }
        ));
        let stop = |_: &AttemptView<'_>| Some(Decision::Stop);
        assert_eq!(stop.classify(&view), Some(Decision::Stop));
    }

    /// What the verdict answers: retry, struggling (what a breaker counts) and
    /// whether the attempt may have had an effect (an unknown outcome).
    #[test]
    fn the_verdicts_answers() {
        use AttemptOutcome::{Cancelled, Failed, Status};
        let status = |code| Status(StatusCode::from_u16(code).unwrap());
        #[rustfmt::skip]
        let rows = [
            // (outcome, transient, safe, conflict) → (retry, struggling, may have applied)
            ("a 503 to retry",                 status(503), true,  true,  false, (true,  true,  true)),
            ("a 503 not safe to retry",        status(503), true,  false, false, (false, true,  true)),
            ("a 409 in progress",              status(409), true,  true,  true,  (true,  false, true)),
            ("a final 404",                    status(404), false, true,  false, (false, false, false)),
            ("a 429: refused before any work", status(429), true,  true,  false, (true,  true,  false)),
            ("a 408: not even received",       status(408), true,  true,  false, (true,  true,  false)),
            ("a 425: refused as too early",    status(425), true,  true,  false, (true,  true,  false)),
            ("a refused connection",           Failed(TransportFailure::Connect), true, true, false, (true, true, false)),
            ("a timeout",                      Failed(TransportFailure::Timeout), true, false, false, (false, true, true)),
            ("a hedge's loser, cancelled",     Cancelled, false, true, false, (false, false, true)),
        ];
        for (name, outcome, transient, safe, conflict, expected) in rows {
            let verdict = Verdict {
                outcome,
                transient,
                safe,
                retry_after: None,
                conflict,
                too_early: false,
            };
            let answers = (
                verdict.retry(),
                verdict.struggling(),
                verdict.may_have_applied(),
            );
            assert_eq!(answers, expected, "{name}");
        }
    }

    /// The whole classification of one attempt under the default rules (or a
    /// classifier's word), method safety last.
    #[test]
    fn the_classification_table() {
        let url: reqwest::Url = "http://127.0.0.1:1/".parse().unwrap();
        let error = some_error();
        let mut retry_after_5 = HeaderMap::new();
        retry_after_5.insert("retry-after", "5".parse().unwrap());
        let none = HeaderMap::new();
        let transient = StatusSet::default();
        let rules = |retry_conflict_when_keyed| Rules {
            classifier: None,
            server_hint_header: None,
            transient_statuses: &transient,
            retry_conflict_when_keyed,
        };
        let says_retry_after =
            |_: &AttemptView<'_>| Some(Decision::RetryAfter(Duration::from_secs(7)));
        let respond = |status: u16, headers| AttemptResult::Response {
            status: StatusCode::from_u16(status).unwrap(),
            headers,
        };
        let fail = |failure| AttemptResult::Error {
            failure,
            error: &error,
        };
        let s = Duration::from_secs;
        type Row<'a> = (
            &'a str,
            Rules<'a>,
            Method,
            bool,
            AttemptResult<'a>,
            (bool, bool, bool, bool, Option<Duration>),
        );
        #[rustfmt::skip]
        let rows: Vec<Row<'_>> = vec![
            // (rules, method, keyed, result) → (transient, safe, conflict, too early, retry after)
            ("a keyed 503 with Retry-After",     rules(true),  Method::POST, true,  respond(503, &retry_after_5), (true,  true,  false, false, Some(s(5)))),
            ("an unkeyed POST's 503: not read",  rules(true),  Method::POST, false, respond(503, &retry_after_5), (true,  false, false, false, None)),
            ("a keyed 409: in progress",         rules(true),  Method::POST, true,  respond(409, &none),          (true,  true,  true,  false, None)),
            ("a keyed 409, not waited out",      rules(false), Method::POST, true,  respond(409, &none),          (false, true,  false, false, None)),
            ("an unkeyed 409 is final",          rules(true),  Method::PUT,  false, respond(409, &none),          (false, true,  false, false, None)),
            ("a keyed 404 is final",             rules(true),  Method::POST, true,  respond(404, &none),          (false, true,  false, false, None)),
            ("a 425 is retried, any method",     rules(true),  Method::POST, false, respond(425, &none),          (true,  true,  false, true,  None)),
            ("a 500 is final by default",        rules(true),  Method::GET,  false, respond(500, &none),          (false, true,  false, false, None)),
            ("an unkeyed POST's refused connect", rules(true), Method::POST, false, fail(TransportFailure::Connect), (true, true, false, false, None)),
            ("an unkeyed POST's timeout",        rules(true),  Method::POST, false, fail(TransportFailure::Timeout), (true, false, false, false, None)),
            ("a keyed POST's timeout",           rules(true),  Method::POST, true,  fail(TransportFailure::Timeout), (true, true,  false, false, None)),
            ("an unknown failure is final",      rules(true),  Method::GET,  false, fail(TransportFailure::Other),   (false, true, false, false, None)),
            ("a classifier's own Retry-After",   Rules { classifier: Some(&says_retry_after), ..rules(true) }, Method::GET, false, respond(500, &retry_after_5), (true, true, false, false, Some(s(7)))),
            ("a classifier retrying an unkeyed 409", Rules { classifier: Some(&says_retry_after), ..rules(true) }, Method::PUT, false, respond(409, &none), (true, true, false, false, Some(s(7)))),
        ];
        for (name, rules, method, keyed, result, expected) in rows {
            let view = AttemptView {
                method: &method,
                url: &url,
                attempt: 1,
                keyed,
                result,
            };
            let v = classify(&rules, &view, &crate::clock::SystemClock);
            let got = (v.transient, v.safe, v.conflict, v.too_early, v.retry_after);
            assert_eq!(got, expected, "{name}");
        }
    }
}
