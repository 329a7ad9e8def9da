//! The wrapper: [`ResilientClient`] and its [`RequestBuilder`], shaped like reqwest's.
//!
//! `client.post(url).json(&body).send().await` sends one *intent*: one idempotency
//! key (generated before the first attempt, or the caller's), a fresh request id per
//! attempt, and as many attempts as the policy, the deadline and the shared budget
//! allow.
//!
//! Retrying at one layer only is explained on [`ResilientClient`]'s page.

use std::fmt;
use std::time::Duration;

use http::Method;
use reqwest::IntoUrl;

use crate::attempt_timeout::WireTimeout;
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
use crate::attempt_timeout::DEFAULT_ATTEMPT_TIMEOUT;
use crate::error::Error;
use crate::failure;
use crate::policy::RetryPolicy;

mod request_builder;

pub use request_builder::RequestBuilder;

/// The longest connect timeout a client built by this crate gets: half the attempt
/// timeout, at most this. Why every client gets one (a connect that never completes
/// then proves nothing was sent, so it is retried for any method with the outcome
/// known), and what to do with your own client: [`ResilientClient`]'s
/// [Connect timeout](ResilientClient#connect-timeout) section.
pub const MAX_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Half the attempt timeout, at most [`MAX_CONNECT_TIMEOUT`]: below the attempt
/// timeout, so a connect that never completes is reported as a connect failure.
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
fn connect_timeout_for(attempt_timeout: Option<Duration>) -> Duration {
    attempt_timeout.map_or(MAX_CONNECT_TIMEOUT, |attempt| {
        (attempt / 2).min(MAX_CONNECT_TIMEOUT)
    })
}

/// Fits `builder` to a policy whose attempts time out after `attempt_timeout`:
/// reqwest's retry layer off, a connect timeout below the attempt timeout, and the
/// attempt timeout as the client's own.
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
fn fitted(
    builder: reqwest::ClientBuilder,
    attempt_timeout: Option<Duration>,
) -> (reqwest::ClientBuilder, WireTimeout) {
    let builder = builder
        .retry(reqwest::retry::never())
        .connect_timeout(connect_timeout_for(attempt_timeout));
    WireTimeout::build_into(builder, attempt_timeout)
}

/// In the browser and node, `fetch` has no retry layer, no connect phase of its own
/// and no client-wide timeout: each attempt carries its timeout, which reqwest turns
/// into an `AbortSignal`.
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
fn fitted(
    builder: reqwest::ClientBuilder,
    _attempt_timeout: Option<Duration>,
) -> (reqwest::ClientBuilder, WireTimeout) {
    (builder, WireTimeout::PerRequest)
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
        let (builder, wire_timeout) = fitted(builder, policy.attempt_timeout());
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
    ///
    /// In the browser and node (wasm32-unknown-unknown), `fetch` has neither a retry
    /// layer nor a connect timeout: this is reqwest's own builder there.
    pub fn reqwest_builder() -> reqwest::ClientBuilder {
        #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
        let builder = failure::readable_backend(reqwest::Client::builder())
            .retry(reqwest::retry::never())
            .connect_timeout(connect_timeout_for(Some(DEFAULT_ATTEMPT_TIMEOUT)));
        #[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
        let builder = reqwest::Client::builder();
        builder
    }

    /// A `reqwest::ClientBuilder` for this policy: reqwest's retry layer off, and a
    /// connect timeout of half the policy's attempt timeout (at most
    /// [`MAX_CONNECT_TIMEOUT`]). Add your own settings (roots, proxies) and pass the
    /// client to [`ResilientClient::from_parts`].
    pub fn reqwest_builder_for(policy: &RetryPolicy) -> reqwest::ClientBuilder {
        #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
        let builder =
            Self::reqwest_builder().connect_timeout(connect_timeout_for(policy.attempt_timeout()));
        #[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
        let builder = {
            let _ = policy;
            Self::reqwest_builder()
        };
        builder
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
        RequestBuilder::new(
            self.policy.clone(),
            self.wire_timeout,
            self.http.request(method, url),
        )
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
        RequestBuilder::new(
            self.policy.clone(),
            self.wire_timeout,
            reqwest::RequestBuilder::from_parts(self.http.clone(), request),
        )
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

#[cfg(all(test, not(all(target_arch = "wasm32", target_os = "unknown"))))]
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
}
