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
//!    idempotency key, or when the connection provably was never established. This
//!    rule is not configurable: it is what keeps a customer from paying twice.

use http::{HeaderMap, Method, StatusCode};

use crate::attempt_log::TransportFailure;

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

/// A classification: retry the intent, or stop here.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Decision {
    /// The failure is transient; another attempt may succeed.
    Retry,
    /// Final: a success, or a failure that will not change on retry.
    Stop,
}

/// A user-supplied classification, consulted before the default one.
///
/// Return `Some` to decide, `None` to fall back to the default. Method safety is
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

/// RFC 9110 §9.2.2: repeating these has the effect of sending them once.
pub fn is_idempotent_method(method: &Method) -> bool {
    matches!(
        *method,
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE | Method::PUT | Method::DELETE
    )
}

/// The default classification of an attempt.
///
/// `retry_conflict` is true for a keyed request when 409 ("same key still in
/// progress") is to be waited out.
pub(crate) fn default_decision(
    view: &AttemptView<'_>,
    transient: &StatusSet,
    retry_conflict: bool,
) -> Decision {
    match view.result {
        AttemptResult::Response { status, .. } => {
            if transient.contains(status) || (retry_conflict && status == StatusCode::CONFLICT) {
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
pub(crate) fn retry_is_safe(method: &Method, keyed: bool, result: &AttemptResult<'_>) -> bool {
    if keyed || is_idempotent_method(method) {
        return true;
    }
    // Without a key, only a request that provably never left may go again.
    matches!(result, AttemptResult::Error { failure, .. } if failure.proves_not_sent())
}

/// Did the server say, in effect, "nothing was done"? 408: the request was not even
/// fully received; 429: refused by rate limiting, before any work. Anything else that
/// failed may have had an effect — including 503, which gateways (Envoy, nginx, cloud
/// load balancers) also send after forwarding the request upstream.
pub(crate) fn status_proves_no_effect(status: StatusCode) -> bool {
    matches!(status.as_u16(), 408 | 429)
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
    }
}
