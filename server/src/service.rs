//! The service: the order of the steps for one request. Each step's rule lives in
//! the module its name promises (key, principal, fingerprint, decision, capture).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Method, Request, Response};
use http_body::Body;
use tower_service::Service;
use tracing::Instrument;

use crate::admit::{admit, Admitted};
use crate::body::{boxed, BoxError, ResponseBody};
use crate::capture::{capture, Captured};
use crate::decision::{after_handler, AfterHandler};
use crate::record::Completion;
use crate::refusal::RefusalKind;
use crate::respond::{ClaimedByLayer, Refused};
use crate::shared::Shared;
use crate::store::{Claim, ClaimRequest, ClaimToken};

/// The service [`IdempotencyLayer`](crate::IdempotencyLayer) wraps a handler in.
#[derive(Clone)]
pub struct Idempotency<S> {
    inner: S,
    shared: Arc<Shared>,
}

impl<S> std::fmt::Debug for Idempotency<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Idempotency").finish_non_exhaustive()
    }
}

impl<S> Idempotency<S> {
    pub(crate) fn new(inner: S, shared: Arc<Shared>) -> Self {
        Self { inner, shared }
    }
}

/// The future an [`Idempotency`] service returns.
pub type ResponseFuture<E> =
    Pin<Box<dyn Future<Output = Result<Response<ResponseBody>, E>> + Send>>;

/// Methods that RFC 9110 defines as idempotent need no key: they pass through.
fn is_guarded(method: &Method) -> bool {
    !matches!(
        *method,
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE | Method::PUT | Method::DELETE
    )
}

impl<S, ReqB, ResB> Service<Request<ReqB>> for Idempotency<S>
where
    S: Service<Request<ReqB>, Response = Response<ResB>> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Send + 'static,
    ReqB: Body + From<Bytes> + Send + 'static,
    ReqB::Data: Send,
    ReqB::Error: Into<BoxError>,
    ResB: Body<Data = Bytes> + Send + 'static,
    ResB::Error: Into<BoxError>,
{
    type Response = Response<ResponseBody>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqB>) -> Self::Future {
        // The instance that was polled ready serves this call; the clone waits for the next.
        let clone = self.inner.clone();
        let mut ready = std::mem::replace(&mut self.inner, clone);
        if !is_guarded(request.method()) {
            let future = ready.call(request);
            return Box::pin(async move { future.await.map(|r| r.map(boxed)) });
        }
        Box::pin(handle(Arc::clone(&self.shared), ready, request))
    }
}

async fn handle<S, ReqB, ResB>(
    shared: Arc<Shared>,
    mut inner: S,
    request: Request<ReqB>,
) -> Result<Response<ResponseBody>, S::Error>
where
    S: Service<Request<ReqB>, Response = Response<ResB>> + Send + 'static,
    S::Future: Send,
    S::Error: Send + 'static,
    ReqB: Body + From<Bytes> + Send + 'static,
    ReqB::Error: Into<BoxError>,
    ResB: Body<Data = Bytes> + Send + 'static,
    ResB::Error: Into<BoxError>,
{
    let (parts, bytes, claim) = match admit(&shared, request).await {
        Admitted::Keyed { parts, body, claim } => (parts, body, claim),
        Admitted::Unkeyed(request) => return Ok(inner.call(request).await?.map(boxed)),
        Admitted::Refused(response) => return Ok(response),
    };
    let span = tracing::debug_span!("idempotency", key = %claim.scope, method = %parts.method);
    let keyed = claim_and_execute(Arc::clone(&shared), inner, parts, bytes, claim).instrument(span);
    // Detached from the connection: when the client's attempt timeout closes it, this
    // future is dropped, but the key may be claimed and the handler may already have
    // had its effect. Run to the end: the result is kept and the retry replays it; the
    // key is never left "in progress" with nothing running (nor freed early, which
    // could repeat the effect).
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return keyed.await;
    };
    match runtime.spawn(keyed).await {
        Ok(result) => result,
        Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
        // The runtime is shutting down: a claim lapses with its lease.
        Err(_) => Ok(shared.refuse(RefusalKind::StoreUnavailable, Some(Duration::from_secs(1)))),
    }
}

/// Claims the key: answers for a key someone else holds or finished, else runs the
/// handler.
async fn claim_and_execute<S, ReqB, ResB>(
    shared: Arc<Shared>,
    inner: S,
    mut parts: http::request::Parts,
    bytes: Bytes,
    claim: ClaimRequest,
) -> Result<Response<ResponseBody>, S::Error>
where
    S: Service<Request<ReqB>, Response = Response<ResB>>,
    ReqB: From<Bytes>,
    ResB: Body<Data = Bytes> + Send + 'static,
    ResB::Error: Into<BoxError>,
{
    let token = match shared.store.claim(&claim).await {
        Ok(Claim::Acquired { token, reclaimed }) => {
            shared.counters.claimed(reclaimed);
            tracing::debug!(reclaimed, "key claimed");
            token
        }
        Ok(Claim::Existing(existing)) => {
            return Ok(shared.answer(&existing, &claim.fingerprint, claim.now));
        }
        Err(error) => return Ok(shared.store_unavailable(&error)),
    };
    parts.extensions.insert(ClaimedByLayer(claim.scope));
    let request = Request::from_parts(parts, ReqB::from(bytes));
    execute(shared, inner, request, token).await
}

/// Runs the handler for a claimed key, then keeps its response or frees the key.
async fn execute<S, ReqB, ResB>(
    shared: Arc<Shared>,
    mut inner: S,
    request: Request<ReqB>,
    token: ClaimToken,
) -> Result<Response<ResponseBody>, S::Error>
where
    S: Service<Request<ReqB>, Response = Response<ResB>>,
    ResB: Body<Data = Bytes> + Send + 'static,
    ResB::Error: Into<BoxError>,
{
    let settings = &shared.settings;
    let started = Instant::now();
    let response = match inner.call(request).await {
        Ok(response) => response,
        Err(error) => {
            // No response to keep: the next request with the key executes again.
            shared.release(&token).await;
            return Err(error);
        }
    };
    if let Some(Refused(slug)) = response.extensions().get::<Refused>().copied() {
        // A route that answers for itself (the strong mode) refused: that is not the
        // key's result. Free the key; the retry asks the route again.
        tracing::debug!(refusal = slug, "the route refused; nothing kept");
        shared.release(&token).await;
        return Ok(response.map(boxed));
    }
    if after_handler(response.status(), settings.server_errors) == AfterHandler::Release {
        shared.release(&token).await;
        return Ok(response.map(boxed));
    }
    let (response, captured) = capture(
        response,
        settings.max_stored_body,
        &settings.replayed_headers,
    )
    .await;
    let completion = match captured {
        Captured::Stored(stored) => Completion::Stored(stored),
        Captured::NotStored(reason) => {
            shared.counters.not_stored();
            tracing::debug!(reason = reason.as_str(), "response not stored");
            Completion::NotStored {
                status: response.status(),
                reason,
            }
        }
    };
    shared.run_times.record(started.elapsed());
    shared.complete(&token, completion).await;
    Ok(response)
}
