//! The wrapper: [`ResilientClient`] and its [`RequestBuilder`], shaped like reqwest's.
//!
//! `client.post(url).json(&body).send().await` sends one *intent*: one idempotency
//! key (generated before the first attempt, or the caller's), a fresh request id per
//! attempt, and as many attempts as the policy, the deadline and the shared budget
//! allow.
//!
//! Retrying at one layer only is explained on [`ResilientClient`]'s page.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures_util::TryFutureExt;
use http::header::{HeaderMap, HeaderName, HeaderValue};
use http::Method;
use reqwest::IntoUrl;

use crate::attempt_timeout::{WireTimeout, DEFAULT_ATTEMPT_TIMEOUT};
use crate::error::Error;
use crate::failure;
use crate::intent::{self, BodyFactory, Intent};
use crate::observer::IntentObserver;
use crate::options::IntentOptions;
use crate::policy::RetryPolicy;
use crate::prepared::PreparedIntent;
use crate::transport::{Transport, TransportError};
use crate::write_ahead::WriteAhead;

/// The longest connect timeout a client built by this crate gets: half the attempt
/// timeout, at most this. Why every client gets one (a connect that never completes
/// then proves nothing was sent, so it is retried for any method with the outcome
/// known), and what to do with your own client: [`ResilientClient`]'s
/// [Connect timeout](ResilientClient#connect-timeout) section.
pub const MAX_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Half the attempt timeout, at most [`MAX_CONNECT_TIMEOUT`]: below the attempt
/// timeout, so a connect that never completes is reported as a connect failure.
fn connect_timeout_for(attempt_timeout: Option<Duration>) -> Duration {
    attempt_timeout.map_or(MAX_CONNECT_TIMEOUT, |attempt| {
        (attempt / 2).min(MAX_CONNECT_TIMEOUT)
    })
}

/// A `reqwest::Client` plus a [`RetryPolicy`]. Cheap to clone; clones share the
/// connection pool, the retry budget and the seeded random source.
///
/// # Connect timeout
///
/// A connect that never completes proves that nothing was sent, so it may be retried
/// for any method and never leaves the outcome unknown — but only if it is reported
/// as a *connect* failure. reqwest reports its `connect_timeout` as a connect error
/// (and a timeout); a per-request timeout that fires while connecting is only a
/// timeout, indistinguishable from one after the request was written. So every
/// client this crate builds sets a connect timeout below the attempt timeout: half
/// of it, at most [`MAX_CONNECT_TIMEOUT`] (5 s for the default 10 s attempt timeout).
/// The TLS handshake counts as part of the connect.
///
/// If you build your own client for [`ResilientClient::from_parts`], set
/// `.connect_timeout(...)` below your policy's attempt timeout yourself (or start
/// from [`ResilientClient::reqwest_builder_for`]). When an attempt's own timeout is
/// shorter than the connect timeout — a per-request [`RequestBuilder::timeout`], or
/// the time left before a nearly spent deadline — a connect that never completed is
/// cut off by that timeout instead, cannot be told apart, and counts as "may have
/// been processed" (outcome unknown for an unkeyed POST).
///
/// # Retry at one layer only
///
/// Since 0.12.23 reqwest has a small retry layer of its own. A client built by this
/// crate ([`ResilientClient::new`], [`ResilientClient::with_policy`],
/// [`ResilientClient::from_builder`], [`ResilientClient::reqwest_builder`]) turns it
/// off with `reqwest::retry::never()`, so retries never stack. If you pass your own
/// `reqwest::Client` to [`ResilientClient::from_parts`], build it with
/// `.retry(reqwest::retry::never())` too, and do not put another retrying layer (a
/// proxy, a middleware, an outer retry loop) around this one: three layers of three
/// attempts make 27.
///
/// # Examples
/// ```no_run
/// use reqwest_resilience::{ResilientClient, RetryPolicy};
///
/// # async fn run() -> Result<(), reqwest_resilience::Error> {
/// let client = ResilientClient::with_policy(RetryPolicy::builder().max_attempts(4).build().unwrap());
/// let response = client
///     .post("http://127.0.0.1:8080/payments")
///     .header("content-type", "application/json")
///     .body(r#"{"amount": 500}"#)
///     .send()
///     .await?;
/// println!("{}", response.status());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct ResilientClient {
    http: reqwest::Client,
    policy: RetryPolicy,
    /// Whether `http` applies the attempt timeout itself (built by
    /// [`from_builder`](Self::from_builder)) or each request must carry it.
    wire_timeout: WireTimeout,
}

impl ResilientClient {
    /// A client with the default policy and reqwest's own retries turned off.
    ///
    /// # Panics
    /// As `reqwest::Client::new`, when the TLS backend or resolver cannot be
    /// initialised. Use [`ResilientClient::reqwest_builder`] and
    /// [`ResilientClient::from_parts`] to handle that error instead.
    pub fn new() -> Self {
        Self::with_policy(RetryPolicy::default())
    }

    /// A client with this policy, reqwest's own retries turned off, and a connect
    /// timeout below the policy's attempt timeout (see [Connect timeout](Self#connect-timeout));
    /// [`from_builder`](Self::from_builder) with reqwest's default builder.
    ///
    /// # Panics
    /// As [`ResilientClient::new`].
    pub fn with_policy(policy: RetryPolicy) -> Self {
        // The TLS backend whose errors the crate reads (see `TransportFailure`).
        Self::from_builder(
            failure::readable_backend(reqwest::Client::builder()),
            policy,
        )
        .expect("reqwest client could not be initialised (TLS backend or resolver)")
    }

    /// Builds the client from your `reqwest::ClientBuilder` (roots, proxies, pool
    /// settings…), setting three things for this policy, over whatever the builder
    /// had: reqwest's retry layer off, a connect timeout below the attempt timeout
    /// (see [Connect timeout](Self#connect-timeout)), and the attempt timeout as the
    /// client's total timeout (so requests made through [`inner`](Self::inner) are
    /// bounded too, and attempts need no per-request timer of their own).
    ///
    /// **The recommended way to bring your own client settings.** Any timeout the
    /// builder had is replaced; a per-request [`RequestBuilder::timeout`] replaces
    /// the attempt timeout for that request, and every attempt is still cut to the
    /// time left before the deadline.
    ///
    /// The builder's TLS backend is kept: replacing it would drop a
    /// `tls_backend_preconfigured` configuration (its roots, its client certificate).
    /// Start from [`ResilientClient::reqwest_builder`] rather than
    /// `reqwest::Client::builder()` to get the backend whose errors this crate reads
    /// by type (see [`TransportFailure`](crate::TransportFailure), "TLS backends").
    ///
    /// # Errors
    /// reqwest's, when the TLS backend or resolver cannot be initialised.
    pub fn from_builder(
        builder: reqwest::ClientBuilder,
        policy: RetryPolicy,
    ) -> Result<Self, reqwest::Error> {
        let attempt_timeout = policy.attempt_timeout();
        let builder = builder
            .retry(reqwest::retry::never())
            .connect_timeout(connect_timeout_for(attempt_timeout));
        let (builder, wire_timeout) = WireTimeout::build_into(builder, attempt_timeout);
        Ok(Self {
            wire_timeout,
            ..Self::from_parts(builder.build()?, policy)
        })
    }

    /// Wraps a client you built yourself. Prefer
    /// [`from_builder`](Self::from_builder), which builds it with the right
    /// settings; with this one, build it with `.retry(reqwest::retry::never())` so
    /// retries do not stack, and with a `.connect_timeout(...)` below the policy's
    /// attempt timeout so that connects that never complete are retried safely — or
    /// start from [`ResilientClient::reqwest_builder_for`], which does both.
    ///
    /// The deadline and attempt timeout still rule every attempt, whatever timeout
    /// the client has. What it costs: the crate cannot read a prebuilt client's
    /// timeout, so every attempt carries a per-request timeout, which reqwest keeps
    /// in an extension map — three more allocations per request than through
    /// `from_builder` (the benchmark's P8 has a row for each).
    pub fn from_parts(http: reqwest::Client, policy: RetryPolicy) -> Self {
        Self {
            http,
            policy,
            wire_timeout: WireTimeout::PerRequest,
        }
    }

    /// A `reqwest::ClientBuilder` with reqwest's retry layer already off, a
    /// connect timeout fitted to the *default* attempt timeout (5 s), and the TLS
    /// backend whose errors this crate reads by type (rustls when this crate's
    /// `rustls` feature is on, even if another crate enabled reqwest's native-tls; a
    /// later `tls_backend_*` call still wins). For a policy with a shorter attempt
    /// timeout use [`ResilientClient::reqwest_builder_for`].
    pub fn reqwest_builder() -> reqwest::ClientBuilder {
        failure::readable_backend(reqwest::Client::builder())
            .retry(reqwest::retry::never())
            .connect_timeout(connect_timeout_for(Some(DEFAULT_ATTEMPT_TIMEOUT)))
    }

    /// A `reqwest::ClientBuilder` for this policy: reqwest's retry layer off, and a
    /// connect timeout of half the policy's attempt timeout (at most
    /// [`MAX_CONNECT_TIMEOUT`]). Add your own settings (roots, proxies) and pass the
    /// client to [`ResilientClient::from_parts`].
    pub fn reqwest_builder_for(policy: &RetryPolicy) -> reqwest::ClientBuilder {
        Self::reqwest_builder().connect_timeout(connect_timeout_for(policy.attempt_timeout()))
    }

    /// The inner reqwest client.
    pub fn inner(&self) -> &reqwest::Client {
        &self.http
    }

    /// The retry policy.
    pub fn policy(&self) -> &RetryPolicy {
        &self.policy
    }

    /// Starts a request with any method.
    pub fn request<U: IntoUrl>(&self, method: Method, url: U) -> RequestBuilder {
        RequestBuilder {
            policy: self.policy.clone(),
            wire_timeout: self.wire_timeout,
            inner: self.http.request(method, url),
            options: IntentOptions::new(),
            body_factory: None,
            invalid_policy: None,
        }
    }

    /// Starts a GET.
    pub fn get<U: IntoUrl>(&self, url: U) -> RequestBuilder {
        self.request(Method::GET, url)
    }

    /// Starts a POST (gets an idempotency key by default).
    pub fn post<U: IntoUrl>(&self, url: U) -> RequestBuilder {
        self.request(Method::POST, url)
    }

    /// Starts a PUT.
    pub fn put<U: IntoUrl>(&self, url: U) -> RequestBuilder {
        self.request(Method::PUT, url)
    }

    /// Starts a PATCH (gets an idempotency key by default).
    pub fn patch<U: IntoUrl>(&self, url: U) -> RequestBuilder {
        self.request(Method::PATCH, url)
    }

    /// Starts a DELETE.
    pub fn delete<U: IntoUrl>(&self, url: U) -> RequestBuilder {
        self.request(Method::DELETE, url)
    }

    /// Starts a HEAD.
    pub fn head<U: IntoUrl>(&self, url: U) -> RequestBuilder {
        self.request(Method::HEAD, url)
    }

    /// Sends an already built request as one intent, with the policy's key rules.
    ///
    /// # Errors
    /// As [`RequestBuilder::send`].
    pub async fn execute(&self, request: reqwest::Request) -> Result<reqwest::Response, Error> {
        RequestBuilder {
            policy: self.policy.clone(),
            wire_timeout: self.wire_timeout,
            inner: reqwest::RequestBuilder::from_parts(self.http.clone(), request),
            options: IntentOptions::new(),
            body_factory: None,
            invalid_policy: None,
        }
        .send()
        .await
    }
}

impl Default for ResilientClient {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for ResilientClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResilientClient")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

/// Builds one intent. Mirrors `reqwest::RequestBuilder`; any reqwest setter not
/// mirrored here is reachable through [`RequestBuilder::map_request`].
#[must_use = "a RequestBuilder does nothing until you send() it"]
pub struct RequestBuilder {
    policy: RetryPolicy,
    /// As [`ResilientClient`]'s. The reqwest client itself travels in `inner`.
    wire_timeout: WireTimeout,
    inner: reqwest::RequestBuilder,
    options: IntentOptions,
    body_factory: Option<BodyFactory>,
    /// From [`adjust_policy`](Self::adjust_policy), reported by `send()`.
    invalid_policy: Option<crate::BuildError>,
}

impl RequestBuilder {
    /// Adds a header. The policy's request id header is set by the client on every
    /// attempt and replaces any value given here; a hand-set idempotency key header
    /// is taken as the caller's key (as with [`idempotency_key`](Self::idempotency_key)).
    pub fn header<K, V>(self, key: K, value: V) -> Self
    where
        HeaderName: TryFrom<K>,
        <HeaderName as TryFrom<K>>::Error: Into<http::Error>,
        HeaderValue: TryFrom<V>,
        <HeaderValue as TryFrom<V>>::Error: Into<http::Error>,
    {
        self.map_request(|inner| inner.header(key, value))
    }

    /// Adds headers.
    pub fn headers(self, headers: HeaderMap) -> Self {
        self.map_request(|inner| inner.headers(headers))
    }

    /// HTTP basic authentication (never logged).
    pub fn basic_auth<U: fmt::Display, P: fmt::Display>(
        self,
        username: U,
        password: Option<P>,
    ) -> Self {
        self.map_request(|inner| inner.basic_auth(username, password))
    }

    /// Bearer authentication (never logged).
    pub fn bearer_auth<T: fmt::Display>(self, token: T) -> Self {
        self.map_request(|inner| inner.bearer_auth(token))
    }

    /// Sets the body. Bytes and strings are replayed on every attempt; a stream
    /// (`reqwest::Body::wrap_stream`) is sent once and never retried.
    pub fn body<T: Into<reqwest::Body>>(self, body: T) -> Self {
        self.map_request(|inner| inner.body(body))
    }

    /// Makes a fresh body for every attempt, so a large upload (a file, a
    /// generated stream) can be retried without buffering it in memory. Each call
    /// must produce the same content: the server compares payloads under one key.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn run(client: reqwest_resilience::ResilientClient) -> Result<(), reqwest_resilience::Error> {
    /// let report = std::sync::Arc::new(vec![7u8; 64 * 1024 * 1024]);
    /// client
    ///     .put("http://127.0.0.1:8080/reports/7")
    ///     // Each attempt gets a cheap handle on the same bytes (or reopen a file here).
    ///     .body_fn(move || reqwest::Body::from(bytes_of(&report)))
    ///     .send()
    ///     .await?;
    /// # Ok(()) }
    /// # fn bytes_of(v: &std::sync::Arc<Vec<u8>>) -> Vec<u8> { v.to_vec() }
    /// ```
    pub fn body_fn<F>(mut self, factory: F) -> Self
    where
        F: Fn() -> reqwest::Body + Send + Sync + 'static,
    {
        self.body_factory = Some(Arc::new(factory));
        self
    }

    /// Timeout of each attempt of this request (replaces the policy's attempt
    /// timeout, whatever the client's own; still cut to the time left before the
    /// deadline, on every attempt).
    ///
    /// Like reqwest's own timeout it keeps running while you read the body of the
    /// response `send()` returned, so the deadline bounds a slow body too.
    pub fn timeout(self, timeout: Duration) -> Self {
        self.map_request(|inner| inner.timeout(timeout))
    }

    /// Sets the HTTP version.
    pub fn version(self, version: http::Version) -> Self {
        self.map_request(|inner| inner.version(version))
    }

    /// Sets a JSON body (feature `json`).
    #[cfg(feature = "json")]
    pub fn json<T: serde::Serialize + ?Sized>(self, json: &T) -> Self {
        self.map_request(|inner| inner.json(json))
    }

    /// Appends query parameters (feature `query`).
    #[cfg(feature = "query")]
    pub fn query<T: serde::Serialize + ?Sized>(self, query: &T) -> Self {
        self.map_request(|inner| inner.query(query))
    }

    /// Sets a form body (feature `form`).
    #[cfg(feature = "form")]
    pub fn form<T: serde::Serialize + ?Sized>(self, form: &T) -> Self {
        self.map_request(|inner| inner.form(form))
    }

    /// Applies any `reqwest::RequestBuilder` setter.
    pub fn map_request(
        mut self,
        f: impl FnOnce(reqwest::RequestBuilder) -> reqwest::RequestBuilder,
    ) -> Self {
        self.inner = f(self.inner);
        self
    }

    /// Uses the caller's own idempotency key, verbatim, on every attempt (e.g. one
    /// created when the form opened and persisted across restarts). Makes the
    /// request retryable whatever its method. An invalid key (control characters,
    /// over 255 bytes, …) fails [`send`](Self::send) before anything is sent.
    pub fn idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.options = self.options.idempotency_key(key);
        self
    }

    /// Sends without an idempotency key. A POST or PATCH is then retried only when
    /// the connection provably was never established.
    pub fn without_idempotency_key(mut self) -> Self {
        self.options = self.options.without_idempotency_key();
        self
    }

    /// Reads the response's whole body inside the intent, so that `send()` returns a
    /// response whose body is already in memory: `bytes()`, `text()` and `json()`
    /// then cannot fail. The deadline and the attempt timeout cover the body too.
    ///
    /// A body cut part-way (the connection reset while it streamed in) is a failure
    /// of that attempt, retried as any failure after the request may have been
    /// processed: under the same key (the server replays the result) or for an
    /// idempotent method; a keyless POST ends with the outcome unknown. A resend
    /// answered `410 Gone` (the server finished the key but did not keep its response)
    /// ends with [`Error::is_completed_not_kept`]: the effect happened.
    ///
    /// At most [`DEFAULT_WHOLE_BODY_LIMIT`](crate::DEFAULT_WHOLE_BODY_LIMIT) (1 MiB,
    /// the server layer's stored-body limit) unless
    /// [`whole_body_limit`](Self::whole_body_limit) says otherwise; a longer body ends
    /// the intent with an error whose failure is
    /// [`TransportFailure::ResponseTooLarge`](crate::TransportFailure::ResponseTooLarge)
    /// (not retried: the answer is final).
    ///
    /// # Examples
    /// ```no_run
    /// # async fn run() -> Result<(), reqwest_resilience::Error> {
    /// let client = reqwest_resilience::ResilientClient::new();
    /// let response = client
    ///     .post("https://api.example.com/payments")
    ///     .body(r#"{"amount":1500}"#)
    ///     .whole_body()
    ///     .send()
    ///     .await?;
    /// let receipt = response.text().await.expect("already in memory");
    /// # let _ = receipt;
    /// # Ok(())
    /// # }
    /// ```
    pub fn whole_body(self) -> Self {
        self.whole_body_limit(crate::whole_body::DEFAULT_WHOLE_BODY_LIMIT)
    }

    /// As [`whole_body`](Self::whole_body), reading at most `bytes` (a limit above
    /// 4 GiB is read as 4 GiB).
    pub fn whole_body_limit(mut self, bytes: usize) -> Self {
        self.options = self.options.whole_body(bytes);
        self
    }

    /// Overrides the policy's deadline for this intent.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.options = self.options.deadline(deadline);
        self
    }

    /// No deadline for this intent.
    pub fn no_deadline(mut self) -> Self {
        self.options = self.options.no_deadline();
        self
    }

    /// Runs this intent under another policy than the client's, keeping the
    /// client's connection pool: `adjust` gets the client's policy as a builder
    /// ([`RetryPolicy::to_builder`]: same budget, gates and observers) and
    /// returns it changed. A policy that does not build fails [`send`](Self::send)
    /// before anything is sent, with the [`crate::BuildError`] as its source.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn run(client: reqwest_resilience::ResilientClient) -> Result<(), reqwest_resilience::Error> {
    /// // One patient call, without a second client (pool) or a second budget.
    /// client
    ///     .post("http://127.0.0.1:8080/reports")
    ///     .adjust_policy(|policy| policy.max_attempts(6))
    ///     .send()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn adjust_policy(
        mut self,
        adjust: impl FnOnce(crate::RetryPolicyBuilder) -> crate::RetryPolicyBuilder,
    ) -> Self {
        match adjust(self.policy.to_builder()).build() {
            Ok(policy) => self.options = self.options.policy(policy),
            Err(error) => self.invalid_policy = Some(error),
        }
        self
    }

    /// Adds an [`IntentObserver`] for this intent only (after the policy's).
    pub fn observer(mut self, observer: Arc<dyn IntentObserver>) -> Self {
        self.options = self.options.observer(observer);
        self
    }

    /// This intent's [`WriteAhead`] instead of the policy's (at most one per
    /// intent: a second call replaces the first).
    pub fn write_ahead(mut self, write_ahead: Arc<dyn WriteAhead>) -> Self {
        self.options = self.options.write_ahead(write_ahead);
        self
    }

    /// Decides the intent as [`send`](Self::send) would — its idempotency key
    /// (the caller's, or generated now), the key header, the deadline, the body
    /// bytes (a [`body_fn`](Self::body_fn) body is made once) — and sends
    /// nothing. For writing an intent down to send later: an outbox row written
    /// in the caller's own database transaction.
    ///
    /// # Errors
    /// The errors `send()` returns before anything is sent: an invalid request,
    /// key or policy, or a zero deadline.
    pub fn prepare(self) -> Result<PreparedIntent, Error> {
        let RequestBuilder {
            policy,
            inner,
            mut options,
            mut body_factory,
            invalid_policy,
            ..
        } = self;
        let mut request = inner.build().map_err(Error::invalid_request)?;
        if let Some(error) = invalid_policy {
            return Err(Error::invalid_policy(Box::new(error)));
        }
        let policy = options.take_policy(&policy);
        let resolved = options.resolve(&policy, &request)?;
        intent::check_and_key(
            &mut request,
            &policy,
            resolved.key.as_ref(),
            resolved.deadline,
        )?;
        intent::body_into_bytes(&mut request, &mut body_factory);
        Ok(PreparedIntent::new(
            resolved.key,
            policy.key_header.clone(),
            request,
            resolved.deadline,
        ))
    }

    /// Sends the intent.
    ///
    /// Returns `Ok(response)` for any response that is final: a success, or a
    /// status that is not retried (400, 404, 422…), exactly as reqwest would. The
    /// response carries the [`crate::AttemptLog`] (see [`crate::ResponseExt`]).
    ///
    /// # Errors
    /// An [`Error`] when the intent gave up: attempts exhausted, deadline exceeded,
    /// Retry-After too long, budget exhausted, a streamed body that cannot be
    /// replayed, a failure that is not retryable, or an invalid request or key
    /// (then nothing was sent). Check [`Error::is_outcome_unknown`] before
    /// deciding what to do next.
    pub fn send(self) -> impl Future<Output = Result<reqwest::Response, Error>> + Send + 'static {
        let RequestBuilder {
            policy,
            wire_timeout,
            inner,
            mut options,
            body_factory,
            invalid_policy,
        } = self;
        // Everything that needs no waiting is decided here, so that the future holds
        // the intent once (not the builder as well).
        let (http, request) = inner.build_split();
        let intent = request.map_err(Error::invalid_request).and_then(|request| {
            if let Some(error) = invalid_policy {
                return Err(Error::invalid_policy(Box::new(error)));
            }
            let policy = options.take_policy(&policy);
            let resolved = options.resolve(&policy, &request)?;
            Ok(Intent {
                transport: ClientTransport { http, wire_timeout },
                policy,
                request,
                body_factory,
                key: resolved.key,
                deadline: resolved.deadline,
                observers: resolved.observers,
                write_ahead: resolved.write_ahead,
                whole_body: resolved.whole_body,
            })
        });
        intent::start(intent)
    }
}

/// The client an intent's attempts go through, and whether it applies their
/// timeout itself.
#[derive(Clone)]
struct ClientTransport {
    http: reqwest::Client,
    wire_timeout: WireTimeout,
}

impl Transport for ClientTransport {
    fn send(
        &mut self,
        mut request: reqwest::Request,
        timeout: Option<Duration>,
    ) -> impl Future<Output = Result<reqwest::Response, TransportError>> + Send {
        self.wire_timeout.write(&mut request, timeout);
        self.http.execute(request).map_err(TransportError::Reqwest)
    }

    /// reqwest's client is a shared handle: copies send concurrently.
    fn copy(&self) -> Option<Self> {
        Some(self.clone())
    }
}

impl fmt::Debug for RequestBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestBuilder").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_connect_timeout_stays_below_the_attempt_timeout() {
        let ms = Duration::from_millis;
        assert_eq!(connect_timeout_for(Some(ms(300))), ms(150));
        assert_eq!(connect_timeout_for(Some(DEFAULT_ATTEMPT_TIMEOUT)), ms(5000));
        assert_eq!(connect_timeout_for(Some(ms(60_000))), MAX_CONNECT_TIMEOUT);
        assert_eq!(connect_timeout_for(None), MAX_CONNECT_TIMEOUT);
        for attempt in [1, 2, 10, 999, 10_001] {
            assert!(connect_timeout_for(Some(ms(attempt))) < ms(attempt));
        }
    }

    /// The future a caller holds stays small: it is moved into the caller's own
    /// future (and often into a spawned task), and each move copies all of it. The
    /// bound is today's size (debug and release alike) plus a margin; it was 2640
    /// bytes while the future held the intent twice (see `intent::Ready::run`).
    /// Raise it only with a reason.
    #[tokio::test]
    async fn the_send_future_has_a_bounded_size() {
        let client = ResilientClient::new();
        let future = client.post("http://127.0.0.1:1/pay").body("{}").send();
        let size = std::mem::size_of_val(&future);
        assert!(size <= 1664, "the send future grew to {size} bytes");
    }
}
