//! [`ResilientClient`]: the async client, driven on a runtime thread of its own.

use std::fmt;
use std::sync::Arc;

use http::Method;
use reqwest::IntoUrl;

use super::request_builder::RequestBuilder;
use super::response::Response;
use super::runtime::Runtime;
use crate::error::Error;
use crate::policy::RetryPolicy;

/// A blocking [`crate::ResilientClient`]: the same policy, keys, deadline, budget,
/// gates and errors, for code without an async runtime. Cheap to clone; clones share
/// the runtime thread, the connection pool, the retry budget and the gates.
///
/// Every constructor starts the client's thread (see the [module](super) docs),
/// and may be called anywhere, inside an async runtime too; sending may not (see
/// [Inside an async runtime](super#inside-an-async-runtime)).
///
/// # Examples
/// ```no_run
/// use reqwest_resilience::{blocking, RetryPolicy};
///
/// # fn run() -> Result<(), reqwest_resilience::Error> {
/// let client = blocking::ResilientClient::with_policy(RetryPolicy::builder().max_attempts(4).build().unwrap());
/// let response = client.get("http://127.0.0.1:8080/orders/7").send()?;
/// println!("{}", response.status());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct ResilientClient {
    inner: crate::ResilientClient,
    runtime: Arc<Runtime>,
}

impl ResilientClient {
    /// A client with the default policy; as [`crate::ResilientClient::new`].
    ///
    /// # Panics
    /// As [`crate::ResilientClient::new`], and when the operating system cannot
    /// start the client's thread.
    pub fn new() -> Self {
        Self::with_policy(RetryPolicy::default())
    }

    /// A client with this policy; as [`crate::ResilientClient::with_policy`].
    ///
    /// # Panics
    /// As [`ResilientClient::new`].
    pub fn with_policy(policy: RetryPolicy) -> Self {
        Self::from_builder(crate::ResilientClient::reqwest_builder_for(&policy), policy)
            .expect("reqwest client could not be initialised (TLS backend or resolver)")
    }

    /// Builds the client from your `reqwest::ClientBuilder` (the async one:
    /// `reqwest::Client::builder()`), on the client's thread; as
    /// [`crate::ResilientClient::from_builder`], which says what it sets.
    ///
    /// # Errors
    /// reqwest's, when the TLS backend or resolver cannot be initialised.
    ///
    /// # Panics
    /// When the operating system cannot start the client's thread.
    pub fn from_builder(
        builder: reqwest::ClientBuilder,
        policy: RetryPolicy,
    ) -> Result<Self, reqwest::Error> {
        let (runtime, inner) =
            Runtime::start(move || crate::ResilientClient::from_builder(builder, policy));
        Ok(Self {
            inner: inner?,
            runtime: Arc::new(runtime),
        })
    }

    /// The async client this one drives. Its futures need a runtime of their own:
    /// the client's thread is not reachable from outside.
    pub fn inner(&self) -> &crate::ResilientClient {
        &self.inner
    }

    /// The retry policy.
    pub fn policy(&self) -> &RetryPolicy {
        self.inner.policy()
    }

    /// Starts a request with any method.
    pub fn request<U: IntoUrl>(&self, method: Method, url: U) -> RequestBuilder {
        RequestBuilder::new(self.inner.request(method, url), self.runtime.clone())
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
    ///
    /// # Panics
    /// As [`RequestBuilder::send`].
    pub fn execute(&self, request: reqwest::Request) -> Result<Response, Error> {
        let inner = self.inner.clone();
        self.runtime
            .run(async move { inner.execute(request).await })
            .map(|response| Response::new(response, self.runtime.clone()))
    }
}

impl Default for ResilientClient {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for ResilientClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("blocking::ResilientClient")
            .field("policy", self.inner.policy())
            .finish_non_exhaustive()
    }
}
