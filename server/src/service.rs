//! The service: the order of the steps for one request. Each step's rule lives in
//! the module its name promises (key, principal, fingerprint, decision, capture).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response};
use http_body::Body;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use tower_service::Service;
use tracing::Instrument;

use crate::body::{boxed, BoxError, ResponseBody};
use crate::capture::{capture, Captured};
use crate::decision::{after_handler, answer_existing, AfterHandler, Answer};
use crate::key::{parse_key, IDEMPOTENCY_KEY};
use crate::record::Completion;
use crate::refusal::{Refusal, RefusalKind};
use crate::respond;
use crate::scope::ScopeId;
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
    S: Service<Request<ReqB>, Response = Response<ResB>>,
    ReqB: Body + From<Bytes>,
    ReqB::Error: Into<BoxError>,
    ResB: Body<Data = Bytes> + Send + 'static,
    ResB::Error: Into<BoxError>,
{
    let settings = &shared.settings;
    let (parts, body) = request.into_parts();
    let key = match parts.headers.get(IDEMPOTENCY_KEY) {
        None if !settings.key_required => {
            let response = inner.call(Request::from_parts(parts, body)).await?;
            return Ok(response.map(boxed));
        }
        None => return Ok(shared.refuse(RefusalKind::MissingKey, None)),
        Some(value) => match parse_key(value, settings.max_key_len) {
            Ok(key) => key,
            Err(_) => return Ok(shared.refuse(RefusalKind::InvalidKey, None)),
        },
    };
    let Some(principal) = shared.principal.principal(&parts) else {
        return Ok(shared.refuse(RefusalKind::NoPrincipal, None));
    };
    let bytes = match Limited::new(body, settings.max_request_body)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(error) if error.is::<LengthLimitError>() => {
            return Ok(shared.refuse(RefusalKind::BodyTooLarge, None))
        }
        Err(_) => return Ok(shared.refuse(RefusalKind::UnreadableBody, None)),
    };
    let scope = ScopeId::new(&principal, &parts.method, parts.uri.path(), &key);
    let claim = ClaimRequest {
        scope,
        fingerprint: shared.fingerprinter.fingerprint(&parts, &bytes),
        now: shared.clock.now(),
        lease: settings.lease,
    };
    let span = tracing::debug_span!("idempotency", key = %scope, method = %parts.method);
    async {
        let token = match shared.store.claim(&claim).await {
            Ok(Claim::Acquired { token, reclaimed }) => {
                shared.counters.claimed(reclaimed);
                tracing::debug!(reclaimed, "key claimed");
                token
            }
            Ok(Claim::Existing(existing)) => {
                return Ok(
                    match answer_existing(&existing, &claim.fingerprint, claim.now) {
                        Answer::Replay(stored) => {
                            shared.counters.replayed();
                            tracing::debug!(
                                status = stored.status.as_u16(),
                                "stored response replayed"
                            );
                            respond::replay(stored)
                        }
                        Answer::Refuse(refusal) => {
                            shared.refuse(refusal.kind(), refusal.retry_after())
                        }
                    },
                );
            }
            Err(error) => {
                shared.counters.store_error();
                tracing::warn!(%error, "idempotency store unavailable; nothing executed");
                return Ok(
                    shared.refuse(RefusalKind::StoreUnavailable, Some(Duration::from_secs(1)))
                );
            }
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
        shared.complete(&token, &completion).await;
        Ok(response)
    }
    .instrument(span)
    .await
}

impl Shared {
    fn refuse(&self, kind: RefusalKind, retry_after: Option<Duration>) -> Response<ResponseBody> {
        self.counters.refused(kind);
        tracing::debug!(refusal = kind.slug(), "request refused");
        respond::refusal(self.format.as_ref(), Refusal::new(kind, retry_after))
    }

    async fn release(&self, token: &ClaimToken) {
        match self.store.release(token).await {
            Ok(true) => self.counters.released(),
            Ok(false) => self.counters.lost_claim(),
            Err(error) => {
                self.counters.store_error();
                tracing::warn!(%error, "key not released; it frees itself when its lease lapses");
            }
        }
    }

    async fn complete(&self, token: &ClaimToken, completion: &Completion) {
        let expires_at = self.clock.now() + self.settings.retention;
        match self.store.complete(token, completion, expires_at).await {
            Ok(true) => {}
            Ok(false) => {
                self.counters.lost_claim();
                tracing::warn!(
                    "the claim lapsed before the handler finished; its result is not kept"
                );
            }
            Err(error) => {
                self.counters.store_error();
                tracing::warn!(%error, "result not kept; the key frees itself when its lease lapses");
            }
        }
    }
}
