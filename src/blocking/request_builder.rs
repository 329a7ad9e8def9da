//! [`RequestBuilder`]: one intent, built as with the async client, sent by waiting.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::header::{HeaderMap, HeaderName, HeaderValue};

use super::response::Response;
use super::runtime::Runtime;
use crate::error::Error;
use crate::observer::IntentObserver;
use crate::prepared::PreparedIntent;
use crate::write_ahead::WriteAhead;

/// Builds one intent for a blocking [`ResilientClient`](super::ResilientClient).
/// Every setter is the async [`crate::RequestBuilder`]'s, which documents it; only
/// [`send`](Self::send) differs: it waits.
#[must_use = "a RequestBuilder does nothing until you send() it"]
pub struct RequestBuilder {
    inner: crate::RequestBuilder,
    runtime: Arc<Runtime>,
}

impl RequestBuilder {
    pub(super) fn new(inner: crate::RequestBuilder, runtime: Arc<Runtime>) -> Self {
        Self { inner, runtime }
    }

    fn map(self, f: impl FnOnce(crate::RequestBuilder) -> crate::RequestBuilder) -> Self {
        Self {
            inner: f(self.inner),
            runtime: self.runtime,
        }
    }

    /// Adds a header; see [`crate::RequestBuilder::header`].
    pub fn header<K, V>(self, key: K, value: V) -> Self
    where
        HeaderName: TryFrom<K>,
        <HeaderName as TryFrom<K>>::Error: Into<http::Error>,
        HeaderValue: TryFrom<V>,
        <HeaderValue as TryFrom<V>>::Error: Into<http::Error>,
    {
        self.map(|inner| inner.header(key, value))
    }

    /// Adds headers.
    pub fn headers(self, headers: HeaderMap) -> Self {
        self.map(|inner| inner.headers(headers))
    }

    /// HTTP basic authentication (never logged).
    pub fn basic_auth<U: fmt::Display, P: fmt::Display>(
        self,
        username: U,
        password: Option<P>,
    ) -> Self {
        self.map(|inner| inner.basic_auth(username, password))
    }

    /// Bearer authentication (never logged).
    pub fn bearer_auth<T: fmt::Display>(self, token: T) -> Self {
        self.map(|inner| inner.bearer_auth(token))
    }

    /// Sets the body (bytes and strings are replayed on every attempt); see
    /// [`crate::RequestBuilder::body`].
    pub fn body<T: Into<reqwest::Body>>(self, body: T) -> Self {
        self.map(|inner| inner.body(body))
    }

    /// A fresh body for every attempt; see [`crate::RequestBuilder::body_fn`].
    pub fn body_fn<F>(self, factory: F) -> Self
    where
        F: Fn() -> reqwest::Body + Send + Sync + 'static,
    {
        self.map(|inner| inner.body_fn(factory))
    }

    /// Timeout of each attempt; see [`crate::RequestBuilder::timeout`].
    pub fn timeout(self, timeout: Duration) -> Self {
        self.map(|inner| inner.timeout(timeout))
    }

    /// Sets the HTTP version.
    pub fn version(self, version: http::Version) -> Self {
        self.map(|inner| inner.version(version))
    }

    /// Sets a JSON body (feature `json`).
    #[cfg(feature = "json")]
    pub fn json<T: serde::Serialize + ?Sized>(self, json: &T) -> Self {
        self.map(|inner| inner.json(json))
    }

    /// Appends query parameters (feature `query`).
    #[cfg(feature = "query")]
    pub fn query<T: serde::Serialize + ?Sized>(self, query: &T) -> Self {
        self.map(|inner| inner.query(query))
    }

    /// Sets a form body (feature `form`).
    #[cfg(feature = "form")]
    pub fn form<T: serde::Serialize + ?Sized>(self, form: &T) -> Self {
        self.map(|inner| inner.form(form))
    }

    /// Applies any `reqwest::RequestBuilder` setter (the async one).
    pub fn map_request(
        self,
        f: impl FnOnce(reqwest::RequestBuilder) -> reqwest::RequestBuilder,
    ) -> Self {
        self.map(|inner| inner.map_request(f))
    }

    /// The caller's own idempotency key; see [`crate::RequestBuilder::idempotency_key`].
    pub fn idempotency_key(self, key: impl Into<String>) -> Self {
        self.map(|inner| inner.idempotency_key(key))
    }

    /// Sends without an idempotency key; see
    /// [`crate::RequestBuilder::without_idempotency_key`].
    pub fn without_idempotency_key(self) -> Self {
        self.map(|inner| inner.without_idempotency_key())
    }

    /// Reads the whole body inside the intent; see [`crate::RequestBuilder::whole_body`].
    pub fn whole_body(self) -> Self {
        self.map(|inner| inner.whole_body())
    }

    /// As [`whole_body`](Self::whole_body), reading at most `bytes`.
    pub fn whole_body_limit(self, bytes: usize) -> Self {
        self.map(|inner| inner.whole_body_limit(bytes))
    }

    /// Overrides the policy's deadline for this intent.
    pub fn deadline(self, deadline: Duration) -> Self {
        self.map(|inner| inner.deadline(deadline))
    }

    /// No deadline for this intent.
    pub fn no_deadline(self) -> Self {
        self.map(|inner| inner.no_deadline())
    }

    /// Runs this intent under an adjusted policy; see
    /// [`crate::RequestBuilder::adjust_policy`].
    pub fn adjust_policy(
        self,
        adjust: impl FnOnce(crate::RetryPolicyBuilder) -> crate::RetryPolicyBuilder,
    ) -> Self {
        self.map(|inner| inner.adjust_policy(adjust))
    }

    /// Adds an [`IntentObserver`] for this intent only.
    pub fn observer(self, observer: Arc<dyn IntentObserver>) -> Self {
        self.map(|inner| inner.observer(observer))
    }

    /// This intent's [`WriteAhead`] instead of the policy's.
    pub fn write_ahead(self, write_ahead: Arc<dyn WriteAhead>) -> Self {
        self.map(|inner| inner.write_ahead(write_ahead))
    }

    /// Decides the intent and sends nothing; see [`crate::RequestBuilder::prepare`].
    ///
    /// # Errors
    /// As [`crate::RequestBuilder::prepare`].
    pub fn prepare(self) -> Result<PreparedIntent, Error> {
        self.inner.prepare()
    }

    /// Sends the intent and waits for its end: the same attempts, pauses, deadline,
    /// budget and gates as [`crate::RequestBuilder::send`], run on the client's thread.
    ///
    /// # Errors
    /// As [`crate::RequestBuilder::send`]; check [`Error::is_outcome_unknown`]
    /// before deciding what to do next.
    ///
    /// # Panics
    /// On a thread that drives async tasks, before anything is sent (see
    /// [Inside an async runtime](super#inside-an-async-runtime)); and with a panic of
    /// the intent's own (an observer's, a classifier's), resumed on this thread.
    pub fn send(self) -> Result<Response, Error> {
        let Self { inner, runtime } = self;
        runtime
            .run(inner.send())
            .map(|response| Response::new(response, runtime.clone()))
    }
}

impl fmt::Debug for RequestBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("blocking::RequestBuilder")
            .finish_non_exhaustive()
    }
}
