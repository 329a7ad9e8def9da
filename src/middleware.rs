//! The same intent semantics for `reqwest_middleware::ClientWithMiddleware` users
//! (feature `middleware`). Placement in the chain and how errors come back are
//! explained on the public [`ResilienceMiddleware`] page.

use std::future::Future;

use http::Extensions;
use reqwest_middleware::{Middleware, Next};

use crate::intent::{self, Intent};
use crate::options::IntentOptions;
use crate::policy::RetryPolicy;
use crate::transport::{Transport, TransportError};

/// Runs each request through a `reqwest_middleware` chain as one intent under a
/// [`RetryPolicy`]: key per intent, request id per attempt, classification, jitter,
/// Retry-After, deadline and budget, around the rest of the chain. Per-request
/// settings (your own key, a deadline, an observer) travel as an
/// [`IntentOptions`] extension (`.with_extension(IntentOptions::new()…)`).
///
/// # Versions, and which client to start from
///
/// This middleware implements reqwest-middleware **0.5**'s `Middleware` trait, for
/// **reqwest 0.13** (the versions this crate depends on; a chain built on another
/// reqwest-middleware version does not accept it). Build the chain's inner client from
/// [`ResilientClient::reqwest_builder`](crate::ResilientClient::reqwest_builder) (or
/// `reqwest_builder_for(&policy)`): that builder turns reqwest's own retry layer off, so
/// retries never stack under this one, and sets a connect timeout below the attempt
/// timeout, so a host that never answers the handshake costs one attempt, not the whole
/// deadline.
///
/// # Where to put it in the chain
///
/// Put it **first** (outermost) among middleware that should run once per intent
/// (logging of the intent, auth token refresh that must not be retried), and
/// **before** middleware that should run once per attempt (per-attempt tracing,
/// request signing with a timestamp, metrics per delivery): everything added after it
/// runs on every attempt and sees each attempt's own `X-Request-Id`. Do not combine it
/// with `reqwest_retry::RetryTransientMiddleware`: retries would stack. Two
/// `ResilienceMiddleware`s in one chain do not stack either: the inner one sees that
/// it runs inside an intent and passes the request through.
///
/// # Errors
///
/// Every intent that ends without a final response — including one whose last attempt
/// failed in the transport, and a refused [`IntentOptions`] key — comes back as
/// `reqwest_middleware::Error::Middleware` wrapping this crate's [`Error`](crate::Error),
/// never as `reqwest_middleware::Error::Reqwest` (that variant can only come from a
/// middleware placed *before* this one). Downcast it to read why the intent gave up,
/// the key, the attempt log, whether the outcome is unknown, and the transport failure
/// ([`Error::transport_failure`](crate::Error::transport_failure)):
///
/// ```no_run
/// # fn handle(error: reqwest_middleware::Error) {
/// match &error {
///     reqwest_middleware::Error::Middleware(inner) => {
///         match inner.downcast_ref::<reqwest_resilience::Error>() {
///             Some(gave_up) if gave_up.is_outcome_unknown() => {
///                 // Reconcile, or retry later with the same key.
///                 let key = gave_up.idempotency_key();
///                 eprintln!("outcome unknown: {gave_up}; key {key:?}");
///             }
///             Some(gave_up) => eprintln!("not done: {gave_up}"),
///             None => eprintln!("another middleware failed: {inner}"),
///         }
///     }
///     reqwest_middleware::Error::Reqwest(transport) => eprintln!("before the intent: {transport}"),
/// }
/// # }
/// ```
///
/// A final response — a success, or a status that is not retried — is `Ok`, as with
/// reqwest; its [`AttemptLog`](crate::AttemptLog) is in its extensions
/// ([`ResponseExt::attempt_log`](crate::ResponseExt::attempt_log)).
///
/// # Examples
/// ```no_run
/// use reqwest_middleware::ClientBuilder;
/// use reqwest_resilience::{IntentOptions, ResilienceMiddleware, ResilientClient, RetryPolicy};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let client = ClientBuilder::new(ResilientClient::reqwest_builder().build()?)
///     .with(ResilienceMiddleware::new(RetryPolicy::default()))
///     .build();
/// let response = client
///     .post("http://127.0.0.1:8080/payments")
///     .with_extension(IntentOptions::new().idempotency_key("order-1842"))
///     .body(r#"{"amount":500}"#)
///     .send()
///     .await;
/// match response {
///     Ok(response) => println!("{}", response.status()),
///     Err(reqwest_middleware::Error::Middleware(error)) => {
///         if let Some(error) = error.downcast_ref::<reqwest_resilience::Error>() {
///             println!("gave up: {error}; outcome unknown: {}", error.is_outcome_unknown());
///         }
///     }
///     Err(error) => println!("{error}"),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct ResilienceMiddleware {
    policy: RetryPolicy,
}

impl ResilienceMiddleware {
    /// A middleware applying `policy` (its budget is shared by every request that
    /// passes through, and with anyone holding a clone of the policy).
    pub fn new(policy: RetryPolicy) -> Self {
        Self { policy }
    }
}

/// Marks the extensions of a request already inside an intent, so that a second
/// `ResilienceMiddleware` further down does not retry again.
#[derive(Debug, Clone, Copy)]
struct InsideIntent;

#[async_trait::async_trait]
impl Middleware for ResilienceMiddleware {
    async fn handle(
        &self,
        request: reqwest::Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        if extensions.get::<InsideIntent>().is_some() {
            return next.run(request, extensions).await;
        }
        extensions.insert(InsideIntent);
        let mut options = extensions
            .get::<IntentOptions>()
            .cloned()
            .unwrap_or_default();
        let policy = options.take_policy(&self.policy);
        let resolved = options
            .resolve(&policy, &request)
            .map_err(reqwest_middleware::Error::middleware)?;
        intent::start(Ok(Intent {
            transport: Chain { next, extensions },
            policy,
            request,
            body_factory: None,
            key: resolved.key,
            deadline: resolved.deadline,
            observers: resolved.observers,
            write_ahead: resolved.write_ahead,
            whole_body: resolved.whole_body,
        }))
        .await
        .map_err(reqwest_middleware::Error::middleware)
    }
}

/// The rest of the chain, run once per attempt.
struct Chain<'a> {
    next: Next<'a>,
    extensions: &'a mut Extensions,
}

impl Transport for Chain<'_> {
    // `wire_timeout` is the default, per request: the chain's client is not ours,
    // its own timeout is unknown.
    fn send(
        &mut self,
        request: reqwest::Request,
    ) -> impl Future<Output = Result<reqwest::Response, TransportError>> + Send {
        let sending = self.next.clone().run(request, self.extensions);
        async move {
            sending.await.map_err(|error| match error {
                reqwest_middleware::Error::Reqwest(error) => TransportError::Reqwest(error),
                reqwest_middleware::Error::Middleware(error) => TransportError::Other(error.into()),
            })
        }
    }
}
