//! [`RequestBuilder`]: one intent, shaped like `reqwest::RequestBuilder`, and the
//! transport its attempts go through.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures_util::TryFutureExt;
use http::header::{HeaderMap, HeaderName, HeaderValue};

use crate::attempt_timeout::WireTimeout;
use crate::error::Error;
use crate::intent::{self, BodyFactory, Intent};
use crate::observer::IntentObserver;
use crate::options::IntentOptions;
use crate::policy::RetryPolicy;
use crate::prepared::PreparedIntent;
use crate::transport::{MaybeSend, Transport, TransportError};
use crate::write_ahead::WriteAhead;

/// Builds one intent. Mirrors `reqwest::RequestBuilder`; any reqwest setter not
/// mirrored here is reachable through [`RequestBuilder::map_request`].
#[must_use = "a RequestBuilder does nothing until you send() it"]
pub struct RequestBuilder {
    policy: RetryPolicy,
    /// As `ResilientClient`'s. The reqwest client itself travels in `inner`.
    wire_timeout: WireTimeout,
    inner: reqwest::RequestBuilder,
    options: IntentOptions,
    body_factory: Option<BodyFactory>,
    /// From [`adjust_policy`](Self::adjust_policy), reported by `send()`.
    invalid_policy: Option<crate::BuildError>,
}

impl RequestBuilder {
    /// A request for `inner`'s client, which applies the attempt timeout as
    /// `wire_timeout` says.
    pub(super) fn new(
        policy: RetryPolicy,
        wire_timeout: WireTimeout,
        inner: reqwest::RequestBuilder,
    ) -> Self {
        Self {
            policy,
            wire_timeout,
            inner,
            options: IntentOptions::new(),
            body_factory: None,
            invalid_policy: None,
        }
    }

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

    /// Sets the HTTP version. Not in the browser and node, where `fetch` chooses it.
    #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
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
    ///
    /// Not in the browser and node (wasm32-unknown-unknown): `fetch`'s response cannot
    /// be rebuilt around a body read in advance; read it after `send()` returns.
    #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
    pub fn whole_body(self) -> Self {
        self.whole_body_limit(crate::whole_body::DEFAULT_WHOLE_BODY_LIMIT)
    }

    /// As [`whole_body`](Self::whole_body), reading at most `bytes` (a limit above
    /// 4 GiB is read as 4 GiB).
    #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
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
    ///
    /// The future is `Send` (so `tokio::spawn` takes it) on every target but
    /// wasm32-unknown-unknown, where `fetch`'s futures are not.
    pub fn send(self) -> impl Future<Output = Result<reqwest::Response, Error>> + 'static {
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
        request: reqwest::Request,
    ) -> impl Future<Output = Result<reqwest::Response, TransportError>> + MaybeSend {
        self.http.execute(request).map_err(TransportError::Reqwest)
    }

    fn wire_timeout(&self) -> WireTimeout {
        self.wire_timeout
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
    use crate::ResilientClient;

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
