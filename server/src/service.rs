//! The service: the order of the steps for one request. Each step's rule lives in
//! the module its name promises (key, principal, fingerprint, decision, capture).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

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
use crate::shared::Shared;
use crate::store::Claim;

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
    S: Service<Request<ReqB>, Response = Response<ResB>>,
    ReqB: Body + From<Bytes>,
    ReqB::Error: Into<BoxError>,
    ResB: Body<Data = Bytes> + Send + 'static,
    ResB::Error: Into<BoxError>,
{
    let settings = &shared.settings;
    let (parts, bytes, claim) = match admit(&shared, request).await {
        Admitted::Keyed { parts, body, claim } => (parts, body, claim),
        Admitted::Unkeyed(request) => return Ok(inner.call(request).await?.map(boxed)),
        Admitted::Refused(response) => return Ok(response),
    };
    let scope = claim.scope;
    let span = tracing::debug_span!("idempotency", key = %scope, method = %parts.method);
    async {
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
        let response = match inner
            .call(Request::from_parts(parts, ReqB::from(bytes)))
            .await
        {
            Ok(response) => response,
            Err(error) => {
                // No response to keep: the next request with the key executes again.
                shared.release(&token).await;
                return Err(error);
            }
        };
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
        shared.complete(&token, completion).await;
        Ok(response)
    }
    .instrument(span)
    .await
}
